//! `GRIDSEL_LOG`: env_logger on stderr, every line prefixed `gridsel:`.
//!
//! Lines go through [`ffi::stderr::Stderr`], which never raises SIGPIPE in
//! the host program when stderr is a pipe or socket nobody reads any more.
//! Whatever may happen again and again (a launch, a failed write) is said
//! once per process, or once per kernel or cause, through
//! [`gridsel_core::Reported`].

use crate::ffi;
use log::LevelFilter;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// Level when `GRIDSEL_LOG` is unset: errors and warnings only.
pub const DEFAULT_LEVEL: LevelFilter = LevelFilter::Warn;

/// Parses a `GRIDSEL_LOG` value, in any case.
pub fn parse_level(text: &str) -> Option<LevelFilter> {
    match text.trim().to_ascii_lowercase().as_str() {
        "off" => Some(LevelFilter::Off),
        "error" => Some(LevelFilter::Error),
        "warn" => Some(LevelFilter::Warn),
        "info" => Some(LevelFilter::Info),
        "debug" => Some(LevelFilter::Debug),
        "trace" => Some(LevelFilter::Trace),
        _ => None,
    }
}

/// Whether `GRIDSEL_LOG` switched gridsel's lines off, for
/// [`error_line`]; set by [`init`].
static OFF: AtomicBool = AtomicBool::new(false);

/// Installs gridsel's logger at `level` (`GRIDSEL_LOG`, read with the other
/// settings) unless the host program already has one (a Rust program may);
/// then gridsel's lines go through the program's logger.
pub fn init(level: LevelFilter) {
    OFF.store(level == LevelFilter::Off, Ordering::Relaxed);
    let _ = env_logger::Builder::new()
        .filter_level(level)
        .format(|buf, record| {
            // One line, whatever a path or value in it holds.
            writeln!(
                buf,
                "gridsel: {}: {}",
                record.level().as_str().to_ascii_lowercase(),
                gridsel_core::text::escaped(&record.args().to_string())
            )
        })
        .target(env_logger::Target::Pipe(Box::new(ffi::stderr::Stderr)))
        .try_init();
}

/// Writes `gridsel: error: <message>` to stderr itself, in one write and
/// without SIGPIPE, as gridsel's logger would, unless `GRIDSEL_LOG=off`:
/// for the panic hook, which may run inside the logger (a panic while it
/// held its lock) and must not call it again.
pub fn error_line(message: std::fmt::Arguments) {
    if !OFF.load(Ordering::Relaxed) {
        let line = format!(
            "gridsel: error: {}\n",
            gridsel_core::text::escaped(&message.to_string())
        );
        let _ = ffi::stderr::Stderr.write_all(line.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_parse_case_insensitively() {
        assert_eq!(parse_level("INFO"), Some(LevelFilter::Info));
        assert_eq!(parse_level(" off "), Some(LevelFilter::Off));
        assert_eq!(parse_level("loud"), None);
    }
}
