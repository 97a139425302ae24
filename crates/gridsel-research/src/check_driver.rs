//! `check-driver`: the cubin parser and the occupancy model checked against
//! the CUDA driver, on a machine with a GPU.

use gridsel_cli::csv;
use gridsel_core::image::{self, ImageKind};
use gridsel_core::policy;
use gridsel_host::ffi::cuda;
use std::path::PathBuf;

/// Compares gridsel's descriptors and occupancy with the driver's for every
/// kernel of the cubins in `binaries` (CSV: the disagreements and a line
/// per kernel checked); returns the number of disagreements.
pub fn check(binaries: &[PathBuf], ordinal: i32) -> Result<usize, String> {
    let device = cuda::devices_on_machine()?
        .into_iter()
        .nth(ordinal as usize)
        .ok_or("no such GPU")?;
    let mut mismatches = 0;
    println!("kernel,field,gridsel,driver");
    for path in binaries {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        for raw in image::raw_images_in_file(&bytes).map_err(|e| e.to_string())? {
            let Ok(info) = image::parse_image(&raw) else {
                continue;
            };
            if !matches!(info.kind, ImageKind::Cubin { .. }) {
                continue;
            }
            let names: Vec<String> = info.kernels.iter().map(|k| k.name.clone()).collect();
            let sizes: Vec<u32> = (1..=32).map(|w| w * device.warp_size).collect();
            for (k, d) in info
                .kernels
                .iter()
                .zip(cuda::driver_kernels(ordinal, &raw, &names, &sizes)?)
            {
                let mut compare = |field: &str, ours: Option<u32>, theirs: u32| {
                    if ours != Some(theirs) {
                        mismatches += 1;
                        println!(
                            "{},{field},{},{theirs}",
                            csv::field(&k.name),
                            ours.map_or("?".into(), |v| v.to_string())
                        );
                    }
                };
                compare("registers", k.registers, d.registers);
                compare("shared_mem", k.shared_mem, d.shared_mem);
                compare("local_mem", k.local_mem, d.local_mem);
                compare("max_threads", k.max_threads, d.max_threads);
                for &(t, n) in d.active_blocks.iter().filter(|(t, _)| *t <= d.max_threads) {
                    compare(
                        &format!("resident_blocks@{t}"),
                        Some(gridsel_core::residency::resident_blocks_per_sm(
                            &device, k, t,
                        )),
                        n,
                    );
                }
                let (ours, _) = policy::occupancy::occupancy(&device, k, u64::MAX);
                compare("occupancy_block_size", Some(ours.threads), d.potential.0);
                println!(
                    "{},checked,{} regs {} B shared,potential {}x{}",
                    csv::field(&k.name),
                    d.registers,
                    d.shared_mem,
                    d.potential.0,
                    d.potential.1
                );
            }
        }
    }
    Ok(mismatches)
}
