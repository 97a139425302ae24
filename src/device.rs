//! What gridsel knows about one GPU.
//!
//! A [`DeviceDesc`] comes from the CUDA driver when a GPU is present (see
//! [`crate::ffi::cuda`]), from a named preset, or from a TOML profile file
//! (`GRIDSEL_DEVICE=<preset|path>`), so decisions can be inspected and tested on
//! machines without a GPU.

use crate::ffi::fs;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::io;
use std::path::Path;

/// The largest device profile read: a profile is a few hundred bytes.
pub const MAX_PROFILE_BYTES: u64 = 64 << 10;

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

/// `auto`'s long-loop cap before calibration: one wave, the paper's
/// no-queuing insight.
fn default_waves() -> u32 {
    1
}

/// The calibrated profile shipped for a preset (`gridsel calibrate` output).
fn shipped_profile(preset: &str) -> Option<&'static str> {
    match preset {
        "h100" => Some(include_str!("../profiles/h100.toml")),
        _ => None,
    }
}

/// `auto`'s calibrated `waves` from the shipped profile. The preset keeps
/// the paper's ThreadsPerBlock (96) so `lloyd` stays as published; load the
/// profile file with `GRIDSEL_DEVICE` to use its calibrated value too.
fn shipped_waves(preset: &str) -> Option<u32> {
    let table: toml::Table = shipped_profile(preset)?.parse().ok()?;
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

    /// Parses a TOML profile. `base = "<preset>"` fills the fields not given.
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

    /// A preset name or the path of a TOML profile (a regular file of at
    /// most [`MAX_PROFILE_BYTES`]; see [`fs`]).
    pub fn load(spec: &str) -> Result<Self, DeviceError> {
        if let Some(desc) = Self::preset(spec) {
            return Ok(desc);
        }
        let path = Path::new(spec);
        let text = fs::read_capped(path, MAX_PROFILE_BYTES).map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => DeviceError::UnknownPreset(spec.to_string()),
            _ => DeviceError::Io(format!("{}: {e}", path.display())),
        })?;
        Self::from_toml(&text).map_err(|e| e.in_file(path))
    }

    /// Rejects profiles a policy could divide by or launch with.
    pub fn validate(&self) -> Result<(), DeviceError> {
        let must_be_positive = [
            ("sm_count", self.sm_count),
            ("max_threads_per_sm", self.max_threads_per_sm),
            ("max_registers_per_sm", self.max_registers_per_sm),
            ("max_shared_mem_per_sm", self.max_shared_mem_per_sm),
            ("max_blocks_per_sm", self.max_blocks_per_sm),
            ("max_threads_per_block", self.max_threads_per_block),
            ("warp_size", self.warp_size),
            ("threads_per_block", self.threads_per_block),
            ("waves", self.waves),
            ("register_alloc_unit", self.register_alloc_unit),
            ("shared_alloc_unit", self.shared_alloc_unit),
        ];
        for (field, value) in must_be_positive {
            if value == 0 {
                return Err(DeviceError::Invalid(format!("{field} must be positive")));
            }
        }
        if self.threads_per_block > self.max_threads_per_block {
            return Err(DeviceError::Invalid(format!(
                "threads_per_block {} exceeds max_threads_per_block {}",
                self.threads_per_block, self.max_threads_per_block
            )));
        }
        Ok(())
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
    fn in_file(self, path: &Path) -> Self {
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
                "`{s}` is neither a preset ({}) nor a file",
                PRESETS.join(", ")
            ),
            Self::Io(m) => write!(f, "cannot read device profile: {m}"),
            Self::Syntax(m) => write!(f, "bad device profile: {m}"),
            Self::Invalid(m) => write!(f, "invalid device profile: {m}"),
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
            assert_eq!(DeviceDesc::load(name).unwrap(), d);
        }
        assert_eq!(DeviceDesc::preset("h100").unwrap().sm_count, 132);
        assert_eq!(DeviceDesc::preset("titanx-pascal").unwrap().sm_count, 28);
    }

    #[test]
    fn the_shipped_h100_profile_loads_and_sets_waves() {
        let text = include_str!("../profiles/h100.toml");
        let profile = DeviceDesc::from_toml(text).unwrap();
        let preset = DeviceDesc::preset("h100").unwrap();
        assert_eq!(preset.waves, profile.waves);
        assert_eq!(
            preset.threads_per_block, 96,
            "lloyd keeps the paper's value"
        );
        assert_eq!(profile.sm_count, 132);
    }

    #[test]
    fn toml_profile_overrides_its_base() {
        let d = DeviceDesc::from_toml("base = \"h100\"\nthreads_per_block = 128\nname = \"lab\"")
            .unwrap();
        assert_eq!(d.threads_per_block, 128);
        assert_eq!(d.name, "lab");
        assert_eq!(d.sm_count, 132);
    }

    #[test]
    fn bad_profiles_are_errors_not_panics() {
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
        assert!(matches!(
            DeviceDesc::load("/nonexistent/profile.toml"),
            Err(DeviceError::UnknownPreset(_))
        ));
    }
}
