//! The info line for one decision, in the user's terms, from what the
//! pipeline worked out for the launch: nothing is decided or cut again.

use crate::device::DeviceDesc;
use crate::geometry::{Geometry, Iterations, LaunchDesc};
use crate::kernel::KernelDesc;
use crate::policy::{Limits, Policy, Rule};
use std::fmt::Write;

/// One decision as the pipeline made it.
pub struct Decided<'a> {
    pub name: &'a str,
    pub kernel: &'a KernelDesc,
    pub device: &'a DeviceDesc,
    pub launch: &'a LaunchDesc,
    pub policy: &'a Policy,
    /// The rule the policy's proposal came from.
    pub rule: Rule,
    /// The grid launched: the proposal cut to the launch's limits.
    pub grid: Geometry,
    /// The proposal had to be cut.
    pub cut: bool,
    /// LLVM's own grid for the launch.
    pub llvm: Geometry,
    /// The launch's safe range ([`Limits::of`]).
    pub safe: &'a Limits,
}

/// The grid the policy launches instead of LLVM's, or that it keeps
/// LLVM's, and why; the launch's limits where they are narrower than the
/// kernel's own; and what the cubin says of the kernel (a kernel without
/// one has nothing to show, and one line per process says so).
pub fn describe(d: &Decided<'_>) -> String {
    let mut line = format!(
        "{} on {}, {}",
        d.name,
        d.device.name,
        Iterations(d.launch.trip_count)
    );
    let (policy, llvm, rule) = (d.policy, d.llvm, d.rule);
    let _ = if d.grid == llvm {
        write!(line, ": {policy} keeps LLVM's grid, {llvm}: {rule}")
    } else {
        write!(
            line,
            ": {policy} launches {} instead of LLVM's {llvm}: {rule}",
            d.grid
        )
    };
    if d.cut {
        line.push_str(", cut to what the launch allows");
    }
    if d.safe.narrowed.is_some() {
        let _ = write!(line, "; the launch allows {}", d.safe);
    }
    if d.kernel.sm_arch.is_some() {
        let _ = write!(line, "; kernel: {}", d.kernel);
    }
    line
}
