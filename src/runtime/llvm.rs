//! Which libomptarget the process forwards its launches to, told once at
//! start by its file name: the [`LlvmRelease`] every launch then carries.

use crate::ffi::dl;
use crate::libomptarget::{self, LlvmRelease, LlvmRule};

/// The libomptarget that gridsel forwards launches to, told by its file
/// name (`libomptarget.so.22.1`: LLVM 22); [`LlvmRelease::UNKNOWN`] where
/// there is none or its name has no version. Where the file names no release
/// gridsel models, LLVM 19's rule stands in ([`LlvmRelease::rule`]), and one
/// info line says so.
pub fn identify() -> LlvmRelease {
    let Some(path) = dl::library_defining(c"__tgt_target_kernel") else {
        // No libomptarget: the launches themselves report it.
        return LlvmRelease::UNKNOWN;
    };
    let fallback = LlvmRule::FALLBACK.release();
    let release = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(libomptarget::release_of_library);
    match release.map(|r| (r, LlvmRule::of_release(r))) {
        Some((_, Some(rule))) => {
            log::info!("libomptarget {}: LLVM {}", path.display(), rule.release());
        }
        Some((release, None)) => {
            log::info!(
                "libomptarget {}: LLVM {release}, whose grid rule gridsel does not model; LLVM {fallback}'s stands in for it",
                path.display()
            );
        }
        None => {
            log::info!(
                "libomptarget {}: no LLVM version in the file name; LLVM {fallback}'s grid rule stands in for its own",
                path.display()
            );
        }
    }
    LlvmRelease::new(release.unwrap_or(0))
}
