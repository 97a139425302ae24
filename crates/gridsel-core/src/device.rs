//! What gridsel knows about one GPU.
//!
//! A [`DeviceDesc`] comes from the CUDA driver when a GPU is present (see
//! `gridsel-host`'s `ffi::cuda`), from a named preset, or from a TOML device description
//! (`GRIDSEL_DEVICE=<preset|path>`), so decisions can be inspected and tested on
//! machines without a GPU.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::Path;

/// Per-SM limits and the constants the policies tune on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceDesc {
    pub name: String,
    /// Compute capability as major*10+minor (90 for sm_90).
    pub sm_arch: u32,
    pub sm_count: u32,
    pub max_threads_per_sm: u32,
    pub max_registers_per_sm: u32,
    /// Shared memory per SM in bytes.
    pub max_shared_mem_per_sm: u32,
    pub max_blocks_per_sm: u32,
    pub max_threads_per_block: u32,
    pub warp_size: u32,
    /// The paper's experimental ThreadsPerBlock for this device (`lloyd`).
    pub threads_per_block: u32,
    /// Waves of resident blocks `auto` launches at most for long loops.
    #[serde(default = "default_waves")]
    pub waves: u32,
    /// Registers are allocated per warp in units of this many.
    pub register_alloc_unit: u32,
    /// Shared memory is allocated per block in units of this many bytes.
    pub shared_alloc_unit: u32,
    /// Shared memory the system reserves per block (1 KiB from sm_80 on).
    pub reserved_shared_per_block: u32,
}

/// CUDA's grid x-dimension limit.
pub const MAX_BLOCKS: u32 = i32::MAX as u32;

/// CUDA's limit on threads per block, on every GPU gridsel knows (a device
/// description allows no more: [`DeviceDesc::validate`]).
pub const MAX_THREADS_PER_BLOCK: u32 = 1024;

/// `auto`'s long-loop cap before calibration: one wave, the paper's
/// no-queuing insight.
fn default_waves() -> u32 {
    1
}

/// The calibrated device description shipped for a preset (`gridsel-research calibrate` output).
fn shipped_description(preset: &str) -> Option<&'static str> {
    match preset {
        "h100" => Some(include_str!("../data/h100.toml")),
        _ => None,
    }
}

/// `auto`'s calibrated `waves` from the shipped description. The preset keeps
/// the paper's ThreadsPerBlock (96) so `lloyd` stays as published; load the
/// description with `GRIDSEL_DEVICE` to use its calibrated value too.
fn shipped_waves(preset: &str) -> Option<u32> {
    let table: toml::Table = shipped_description(preset)?.parse().ok()?;
    table
        .get("waves")?
        .as_integer()
        .and_then(|w| u32::try_from(w).ok())
        .filter(|&w| w > 0)
}

/// The named devices shipped with gridsel.
pub const PRESETS: &[&str] = &["titanx-pascal", "v100", "a100", "h100"];

impl DeviceDesc {
    /// A shipped preset by name (`titanx-pascal`, `v100`, `a100`, `h100`).
    pub fn preset(name: &str) -> Option<Self> {
        // Limits from the CUDA occupancy tables for each compute capability;
        // 96 threads per block is the paper's value, the only published one.
        let key = name;
        let (name, sm_arch, sm_count, shared, reserved) = match key {
            "titanx-pascal" => ("NVIDIA TITAN X (Pascal)", 61, 28, 98_304, 0),
            "v100" => ("Tesla V100", 70, 80, 98_304, 0),
            "a100" => ("A100", 80, 108, 167_936, 1024),
            "h100" => ("H100", 90, 132, 233_472, 1024),
            _ => return None,
        };
        Some(Self {
            name: name.to_string(),
            sm_arch,
            sm_count,
            max_threads_per_sm: 2048,
            max_registers_per_sm: 65_536,
            max_shared_mem_per_sm: shared,
            max_blocks_per_sm: 32,
            max_threads_per_block: 1024,
            warp_size: 32,
            threads_per_block: 96,
            waves: shipped_waves(key).unwrap_or_else(default_waves),
            register_alloc_unit: 256,
            shared_alloc_unit: 128,
            reserved_shared_per_block: reserved,
        })
    }

    /// Parses a TOML device description. `base = "<preset>"` fills the fields not given.
    pub fn from_toml(text: &str) -> Result<Self, DeviceError> {
        let mut table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| DeviceError::Syntax(e.message().to_string()))?;
        let merged = match table.remove("base") {
            None => table,
            Some(toml::Value::String(base)) => {
                let preset = Self::preset(&base).ok_or(DeviceError::UnknownPreset(base))?;
                let mut merged = toml::Table::try_from(preset)
                    .map_err(|e| DeviceError::Syntax(e.to_string()))?;
                merged.extend(table);
                merged
            }
            Some(other) => {
                return Err(DeviceError::Syntax(format!(
                    "`base` must be a preset name, not {other:?}"
                )));
            }
        };
        let desc: Self = merged
            .try_into()
            .map_err(|e: toml::de::Error| DeviceError::Syntax(e.message().to_string()))?;
        desc.validate()?;
        Ok(desc)
    }

    /// Rejects descriptions outside what CUDA allows for NVIDIA GPUs, so no
    /// policy divides by zero and no candidate list grows with a field (the
    /// tune and sweep spaces step through thread counts by warps). Each
    /// field's range and why:
    ///
    /// - `sm_arch` 20..=200: sm_20 (Fermi) is the oldest CUDA target clang
    ///   knows; 200 leaves ten majors of room after Blackwell's 10.x and 12.x.
    /// - `sm_count` 1..=1024: nearly 8x the H100's 132, room for GPUs to
    ///   come; the sweep's SM-multiple block counts scale with it.
    /// - `max_threads_per_sm` 32..=4096 and at least `max_threads_per_block`:
    ///   1024 to 2048 on every CUDA GPU so far, and a block must fit on an SM.
    /// - `max_registers_per_sm` `register_alloc_unit`..=131072: 64 Ki on every
    ///   compute capability except 3.7 (K80: 128 Ki), which the driver path
    ///   may report; at least one warp's allocation.
    /// - `max_shared_mem_per_sm` 1..=262144 (256 KiB): 228 KiB on sm_90 and
    ///   sm_100, the most so far; 0 would hold no block.
    /// - `max_blocks_per_sm` 1..=64: 16 to 32 from sm_30 on.
    /// - `max_threads_per_block` a multiple of 32 in 32..=1024: CUDA's limit
    ///   since sm_20, and blocks are made of whole warps.
    /// - `warp_size` exactly 32: every NVIDIA GPU's; the policies step thread
    ///   counts by it, so a warp of 1 would multiply the candidate lists by 32.
    /// - `threads_per_block` 1..=`max_threads_per_block`: a block `lloyd` can launch.
    /// - `waves` 1..=64: `gridsel-research calibrate` picks 1, 2 or 4; more than 64
    ///   waves of resident blocks is a queue, not a cap.
    /// - `register_alloc_unit` a power of two in 32..=1024: 64 on sm_2x, 256
    ///   from sm_30 on.
    /// - `shared_alloc_unit` a power of two in 32..=1024: 128 or 256 bytes on
    ///   every CUDA GPU.
    /// - `reserved_shared_per_block` 0..=4096: 1 KiB from sm_80 on, 0 before.
    ///
    /// The error names the first field out of range, its value and the range.
    pub fn validate(&self) -> Result<(), DeviceError> {
        // Fields whose range depends on another come after that one, so the
        // bound they are checked against is itself valid.
        let limits = [
            Limit::new("sm_arch", self.sm_arch, 20, 200),
            Limit::new("sm_count", self.sm_count, 1, 1024),
            Limit::new("warp_size", self.warp_size, WARP_SIZE, WARP_SIZE),
            Limit::new(
                "max_threads_per_block",
                self.max_threads_per_block,
                WARP_SIZE,
                MAX_THREADS_PER_BLOCK,
            )
            .multiple_of(WARP_SIZE),
            Limit::new(
                "max_threads_per_sm",
                self.max_threads_per_sm,
                WARP_SIZE,
                4096,
            )
            .at_least("max_threads_per_block", self.max_threads_per_block),
            Limit::new("max_blocks_per_sm", self.max_blocks_per_sm, 1, 64),
            Limit::new("register_alloc_unit", self.register_alloc_unit, 32, 1024).power_of_two(),
            Limit::new(
                "max_registers_per_sm",
                self.max_registers_per_sm,
                1,
                131_072,
            )
            .at_least("register_alloc_unit", self.register_alloc_unit),
            Limit::new("shared_alloc_unit", self.shared_alloc_unit, 32, 1024).power_of_two(),
            Limit::new(
                "max_shared_mem_per_sm",
                self.max_shared_mem_per_sm,
                1,
                256 * 1024,
            ),
            Limit::new(
                "reserved_shared_per_block",
                self.reserved_shared_per_block,
                0,
                4096,
            ),
            Limit::new("threads_per_block", self.threads_per_block, 1, 1024)
                .at_most("max_threads_per_block", self.max_threads_per_block),
            Limit::new("waves", self.waves, 1, 64),
        ];
        limits.iter().try_for_each(Limit::check)
    }
}

/// Threads in a warp on every NVIDIA GPU.
const WARP_SIZE: u32 = 32;

/// One field's allowed values, for [`DeviceDesc::validate`].
struct Limit {
    field: &'static str,
    value: u32,
    min: u32,
    max: u32,
    /// Values must be multiples of this.
    step: u32,
    power_of_two: bool,
    /// The other field that raised `min` or lowered `max`, for the message.
    bound_by: Option<&'static str>,
}

impl Limit {
    fn new(field: &'static str, value: u32, min: u32, max: u32) -> Self {
        Self {
            field,
            value,
            min,
            max,
            step: 1,
            power_of_two: false,
            bound_by: None,
        }
    }

    fn multiple_of(self, step: u32) -> Self {
        Self { step, ..self }
    }

    fn power_of_two(self) -> Self {
        Self {
            power_of_two: true,
            ..self
        }
    }

    /// Raises the minimum to another field's value.
    fn at_least(self, other: &'static str, value: u32) -> Self {
        if value <= self.min {
            return self;
        }
        Self {
            min: value,
            bound_by: Some(other),
            ..self
        }
    }

    /// Lowers the maximum to another field's value.
    fn at_most(self, other: &'static str, value: u32) -> Self {
        if value >= self.max {
            return self;
        }
        Self {
            max: value,
            bound_by: Some(other),
            ..self
        }
    }

    fn check(&self) -> Result<(), DeviceError> {
        let v = self.value;
        if (self.min..=self.max).contains(&v)
            && v.is_multiple_of(self.step)
            && (!self.power_of_two || v.is_power_of_two())
        {
            return Ok(());
        }
        let kind = if self.power_of_two {
            "a power of two ".to_string()
        } else if self.step > 1 {
            format!("a multiple of {} ", self.step)
        } else {
            String::new()
        };
        let why = self
            .bound_by
            .map_or(String::new(), |other| format!(" (bounded by {other})"));
        Err(DeviceError::Invalid(format!(
            "{} = {v} is not {kind}in {}..={}{why}",
            self.field, self.min, self.max
        )))
    }
}

/// Why a device description could not be had.
#[derive(Clone, Debug, PartialEq)]
pub enum DeviceError {
    UnknownPreset(String),
    Io(String),
    Syntax(String),
    Invalid(String),
}

impl DeviceError {
    pub fn in_file(self, path: &Path) -> Self {
        match self {
            Self::Syntax(m) => Self::Syntax(format!("{}: {m}", path.display())),
            Self::Invalid(m) => Self::Invalid(format!("{}: {m}", path.display())),
            other => other,
        }
    }
}

impl fmt::Display for DeviceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownPreset(s) => write!(
                f,
                "`{}` is neither a preset ({}) nor a file",
                crate::text::shown(s),
                PRESETS.join(", ")
            ),
            Self::Io(m) => write!(f, "cannot read device description: {m}"),
            Self::Syntax(m) => write!(f, "bad device description: {m}"),
            Self::Invalid(m) => write!(f, "invalid device description: {m}"),
        }
    }
}

impl std::error::Error for DeviceError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_loads_and_validates() {
        for name in PRESETS {
            let d = DeviceDesc::preset(name).unwrap();
            d.validate().unwrap();
        }
        assert_eq!(DeviceDesc::preset("h100").unwrap().sm_count, 132);
        assert_eq!(DeviceDesc::preset("titanx-pascal").unwrap().sm_count, 28);
    }

    #[test]
    fn the_shipped_h100_description_loads_and_sets_waves() {
        let text = include_str!("../data/h100.toml");
        let description = DeviceDesc::from_toml(text).unwrap();
        let preset = DeviceDesc::preset("h100").unwrap();
        assert_eq!(preset.waves, description.waves);
        assert_eq!(
            preset.threads_per_block, 96,
            "lloyd keeps the paper's value"
        );
        assert_eq!(description.sm_count, 132);
    }

    #[test]
    fn toml_description_overrides_its_base() {
        let d = DeviceDesc::from_toml("base = \"h100\"\nthreads_per_block = 128\nname = \"lab\"")
            .unwrap();
        assert_eq!(d.threads_per_block, 128);
        assert_eq!(d.name, "lab");
        assert_eq!(d.sm_count, 132);
    }

    #[test]
    fn bad_descriptions_are_errors_not_panics() {
        assert!(matches!(
            DeviceDesc::from_toml("base = \"nope\""),
            Err(DeviceError::UnknownPreset(_))
        ));
        assert!(matches!(
            DeviceDesc::from_toml("base = 3"),
            Err(DeviceError::Syntax(_))
        ));
        assert!(matches!(
            DeviceDesc::from_toml("sm_count = ["),
            Err(DeviceError::Syntax(_))
        ));
        assert!(matches!(
            DeviceDesc::from_toml("base = \"h100\"\nbogus = 1"),
            Err(DeviceError::Syntax(_))
        ));
        assert!(matches!(
            DeviceDesc::from_toml("base = \"h100\"\nsm_count = 0"),
            Err(DeviceError::Invalid(_))
        ));
        assert!(matches!(
            DeviceDesc::from_toml("base = \"h100\"\nthreads_per_block = 4096"),
            Err(DeviceError::Invalid(_))
        ));
        assert!(matches!(
            DeviceDesc::from_toml("base = \"h100\"\nsm_count = -1"),
            Err(DeviceError::Syntax(_))
        ));
    }

    /// A field, how to set it (with whatever else its bound depends on), the
    /// values accepted at its edges, the values just past them and what the
    /// error says they are not.
    type FieldCase = (
        &'static str,
        fn(&mut DeviceDesc, u32),
        &'static [u32],
        &'static [u32],
        &'static str,
    );

    #[test]
    fn every_field_is_accepted_at_its_edges_and_rejected_past_them() {
        let cases: [FieldCase; 16] = [
            (
                "sm_arch",
                |d, v| d.sm_arch = v,
                &[20, 200],
                &[19, 201],
                "in 20..=200",
            ),
            (
                "sm_count",
                |d, v| d.sm_count = v,
                &[1, 1024],
                &[0, 1025],
                "in 1..=1024",
            ),
            (
                "warp_size",
                |d, v| d.warp_size = v,
                &[32],
                &[0, 1, 31, 33, 64],
                "in 32..=32",
            ),
            (
                "max_threads_per_block",
                |d, v| d.max_threads_per_block = v,
                &[32, 1024],
                &[0, 31, 33, 1000, 1025, 1056, i32::MAX as u32],
                "a multiple of 32 in 32..=1024",
            ),
            (
                "max_threads_per_sm",
                |d, v| d.max_threads_per_sm = v,
                &[1024, 4096],
                &[1023, 4097],
                "in 1024..=4096 (bounded by max_threads_per_block)",
            ),
            (
                "max_threads_per_sm",
                |d, v| {
                    d.max_threads_per_block = 32;
                    d.max_threads_per_sm = v;
                },
                &[32],
                &[0, 31],
                "in 32..=4096",
            ),
            (
                "max_blocks_per_sm",
                |d, v| d.max_blocks_per_sm = v,
                &[1, 64],
                &[0, 65],
                "in 1..=64",
            ),
            (
                "register_alloc_unit",
                |d, v| d.register_alloc_unit = v,
                &[32, 1024],
                &[0, 16, 31, 33, 96, 1025, 2048],
                "a power of two in 32..=1024",
            ),
            (
                "max_registers_per_sm",
                |d, v| d.max_registers_per_sm = v,
                &[256, 131_072],
                &[0, 255, 131_073],
                "in 256..=131072 (bounded by register_alloc_unit)",
            ),
            (
                "shared_alloc_unit",
                |d, v| d.shared_alloc_unit = v,
                &[32, 1024],
                &[0, 16, 31, 33, 96, 1025, 2048],
                "a power of two in 32..=1024",
            ),
            (
                "max_shared_mem_per_sm",
                |d, v| d.max_shared_mem_per_sm = v,
                &[1, 262_144],
                &[0, 262_145],
                "in 1..=262144",
            ),
            (
                "reserved_shared_per_block",
                |d, v| d.reserved_shared_per_block = v,
                &[0, 4096],
                &[4097, u32::MAX],
                "in 0..=4096",
            ),
            (
                "threads_per_block",
                |d, v| d.threads_per_block = v,
                &[1, 1024],
                &[0, 1025],
                "in 1..=1024",
            ),
            (
                "threads_per_block",
                |d, v| {
                    d.max_threads_per_block = 128;
                    d.threads_per_block = v;
                },
                &[128],
                &[129],
                "in 1..=128 (bounded by max_threads_per_block)",
            ),
            ("waves", |d, v| d.waves = v, &[1, 64], &[0, 65], "in 1..=64"),
            (
                "max_registers_per_sm",
                |d, v| {
                    d.register_alloc_unit = 1024;
                    d.max_registers_per_sm = v;
                },
                &[1024],
                &[1023],
                "in 1024..=131072 (bounded by register_alloc_unit)",
            ),
        ];
        // Slack in every cross-field bound, so each case moves one edge.
        let base = DeviceDesc {
            threads_per_block: 1,
            ..DeviceDesc::preset("h100").unwrap()
        };
        base.validate().unwrap();
        for (field, set, accepted, rejected, range) in cases {
            for &v in accepted {
                let mut d = base.clone();
                set(&mut d, v);
                assert_eq!(d.validate(), Ok(()), "{field} = {v}");
            }
            for &v in rejected {
                let mut d = base.clone();
                set(&mut d, v);
                let expected = format!("{field} = {v} is not {range}");
                assert_eq!(d.validate(), Err(DeviceError::Invalid(expected)));
            }
        }
    }

    #[test]
    fn oversized_descriptions_from_the_audit_are_refused_by_name() {
        for (text, field) in [
            (
                "max_threads_per_block = 2147483647",
                "max_threads_per_block = 2147483647",
            ),
            ("warp_size = 1", "warp_size = 1"),
        ] {
            match DeviceDesc::from_toml(&format!("base = \"h100\"\n{text}")) {
                Err(DeviceError::Invalid(m)) => assert!(m.starts_with(field), "{m}"),
                other => panic!("{text}: {other:?}"),
            }
        }
    }
}
