//! The one place a policy is registered: the [`GridPolicy`] a process's
//! settings name, built with the host services it needs (the store files,
//! their writer, the forest model).

use crate::config::{Config, ENV_POLICY};
use crate::files;
use crate::policy::forest::ForestPolicy;
use crate::policy::{DEFAULT_POLICY, FixedBeyondSafeRange, GridPolicy, Policy, Stateless};
use crate::tune::{Clock, LearnedPolicy, Saver, Store, TunePolicy};
use crate::writer::StoreWriter;

/// The policy `config` names, built with its settings (`tune`'s searches
/// timed with `clock`). A `forest` model that cannot be loaded is one error
/// line and the default policy (which `config` then names).
pub(super) fn build(config: &mut Config, clock: Clock) -> Box<dyn GridPolicy> {
    match &config.policy {
        Policy::Tune => Box::new(
            TunePolicy::new(
                config.store.clone().map(|store| {
                    let file = files::StoreFile::new(store.path, store.default);
                    Box::new(StoreWriter::new(Box::new(file))) as Box<dyn Saver>
                }),
                config.tune_overhead,
            )
            .with_bound(config.tune_bound)
            .with_session_runs(config.tune_session_runs)
            .with_clock(clock),
        ),
        // `auto` reads the grids tuning learned: the user's store, then the
        // site's, each only read (a `StoreFile` is written only through its
        // writer, which this policy has none of). `GRIDSEL_CACHE=off` reads
        // neither.
        Policy::Auto if config.store.is_some() => {
            let user = config.store.iter().map(|store| store.path.clone());
            let stores = user
                .chain(config.site_store.clone())
                .map(|path| Box::new(files::StoreFile::new(path, false)) as Box<dyn Store>)
                .collect();
            Box::new(LearnedPolicy::new(stores).alternating(config.learned_alternate))
        }
        #[cfg(feature = "sweep")]
        Policy::Sweep => Box::<crate::policy::sweep::SweepPolicy>::default(),
        Policy::Forest => match files::model_or_embedded(config.model.as_deref()) {
            Ok(model) => Box::new(ForestPolicy::new(model)),
            Err(e) => {
                log::error!("{ENV_POLICY}=forest: {e}; using the default policy {DEFAULT_POLICY}");
                config.policy = DEFAULT_POLICY;
                Box::new(Stateless(DEFAULT_POLICY))
            }
        },
        Policy::Fixed(g) if !config.safe_range => Box::new(FixedBeyondSafeRange(*g)),
        other => Box::new(Stateless(other.clone())),
    }
}
