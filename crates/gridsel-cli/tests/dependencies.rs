//! The command lines build on gridsel-core (the decisions) and gridsel-host
//! (settings, files, the CUDA driver), never on the preload library, the
//! `gridsel` crate: a change to the library's C-ABI layer does not rebuild
//! them, and what they need of the host side stays in the host crate.

use std::path::Path;

/// The names of the `[dependencies]` of the manifest at `path`.
fn dependencies(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let manifest: toml::Table = toml::from_str(&text).unwrap();
    manifest["dependencies"]
        .as_table()
        .unwrap()
        .keys()
        .cloned()
        .collect()
}

#[test]
fn the_command_lines_depend_on_core_and_host_not_on_the_preload_library() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    for command_line in ["gridsel-cli", "gridsel-research"] {
        let deps = dependencies(&crates.join(command_line).join("Cargo.toml"));
        assert!(
            !deps.iter().any(|d| d == "gridsel"),
            "{command_line} depends on the preload library: {deps:?}"
        );
        for needed in ["gridsel-core", "gridsel-host"] {
            assert!(
                deps.iter().any(|d| d == needed),
                "{command_line} lacks {needed}: {deps:?}"
            );
        }
    }
}
