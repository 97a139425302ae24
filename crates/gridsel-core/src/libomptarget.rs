//! The libomptarget a launch goes to: its LLVM release, as one value that
//! travels with every launch ([`LlvmRelease`], in
//! [`crate::geometry::LaunchDesc`]), and the grid rule modelled for that
//! release ([`LlvmRule`]; the rule itself is `crate::policy::llvm::grid`).
//! A GPU's description ([`crate::device`]) says nothing of it: one GPU runs
//! launches of whichever libomptarget the program loaded.

use std::fmt;
use std::ops::RangeInclusive;

/// The libomptarget release whose grid rule is modelled, by major version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LlvmRule {
    release: u32,
}

impl LlvmRule {
    /// The releases whose rule is modelled. 20 was read in no release
    /// source; 19 and 21, before and after it, have the same rule.
    pub const MODELLED: RangeInclusive<u32> = 19..=23;
    /// The rule for a libomptarget gridsel cannot identify or does not model.
    pub const FALLBACK: Self = Self { release: 19 };

    /// The rule of LLVM `release`, when it is modelled.
    pub fn of_release(release: u32) -> Option<Self> {
        Self::MODELLED
            .contains(&release)
            .then_some(Self { release })
    }

    /// The LLVM major version.
    pub fn release(self) -> u32 {
        self.release
    }

    /// Whether SPMD-No-Loop kernels are launched with a thread per
    /// iteration (`isNoLoopMode` in `getNumBlocks`, LLVM 22 and later).
    pub fn has_no_loop_mode(self) -> bool {
        self.release >= 22
    }
}

/// The libomptarget a launch goes to, as one value that travels with the
/// launch ([`crate::geometry::LaunchDesc::llvm_release`]): its LLVM major
/// version as gridsel identified it, which the store's records keep
/// ([`crate::tune::store::Record::llvm_release`], the field `llvm` in the
/// file), and through it the grid rule modelled for it ([`Self::rule`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LlvmRelease {
    /// The major version; 0 when gridsel could not tell.
    major: u32,
}

impl LlvmRelease {
    /// A libomptarget whose release gridsel could not tell (none found, or
    /// no version in its file name).
    pub const UNKNOWN: Self = Self { major: 0 };

    /// LLVM `major`'s libomptarget (0: unknown).
    pub const fn new(major: u32) -> Self {
        Self { major }
    }

    /// The major version, 0 when unknown: what a store record keeps.
    pub fn major(self) -> u32 {
        self.major
    }

    /// The grid rule of this release: its own where it is modelled, else
    /// [`LlvmRule::FALLBACK`]'s.
    pub fn rule(self) -> LlvmRule {
        LlvmRule::of_release(self.major).unwrap_or(LlvmRule::FALLBACK)
    }
}

impl fmt::Display for LlvmRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LLVM {}'s rule", self.release)
    }
}

/// The LLVM major version in a libomptarget's file name: 19 for
/// `libomptarget.so.19.1`, 15 for `libomptarget.so.15`; `None` for a name
/// without one (`libomptarget.so`) or another library's.
pub fn release_of_library(file_name: &str) -> Option<u32> {
    let version = file_name.strip_prefix("libomptarget.so.")?;
    let major = version.split('.').next()?;
    major.parse().ok().filter(|&m| m > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::LaunchDesc;

    #[test]
    fn releases_19_to_23_are_modelled_and_19_stands_in_for_the_others() {
        for release in 19..=23 {
            assert_eq!(LlvmRule::of_release(release).unwrap().release(), release);
        }
        for release in [15, 16, 17, 18, 24] {
            assert_eq!(LlvmRule::of_release(release), None, "{release}");
        }
        assert_eq!(LlvmRule::FALLBACK, LlvmRule::of_release(19).unwrap());
        assert_eq!(LlvmRule::FALLBACK.to_string(), "LLVM 19's rule");
        // A release gridsel could not tell, or does not model, gets 19's.
        for release in [0, 15, 16, 24] {
            assert_eq!(LlvmRelease::new(release).rule(), LlvmRule::FALLBACK);
            assert_eq!(LlvmRelease::new(release).major(), release);
        }
        assert_eq!(
            LlvmRelease::new(22).rule(),
            LlvmRule::of_release(22).unwrap()
        );
        assert_eq!(LaunchDesc::open(1).llvm_release, LlvmRelease::UNKNOWN);
    }

    #[test]
    fn the_release_is_read_from_the_library_file_name() {
        // The names Debian's libomptarget packages install.
        assert_eq!(release_of_library("libomptarget.so.15"), Some(15));
        assert_eq!(release_of_library("libomptarget.so.16"), Some(16));
        assert_eq!(release_of_library("libomptarget.so.19.1"), Some(19));
        assert_eq!(release_of_library("libomptarget.so.23.1"), Some(23));
        for other in [
            "libomptarget.so",
            "libomptarget.so.",
            "libomptarget.so.x.1",
            "libomp.so.5",
            "libomptarget.so.0",
        ] {
            assert_eq!(release_of_library(other), None, "{other}");
        }
    }
}
