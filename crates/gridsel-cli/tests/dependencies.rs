//! The command lines build on gridsel-core (the decisions) and gridsel-host
//! (settings, files, the CUDA driver), never on the preload library, the
//! `gridsel` crate: a change to the library's C-ABI layer does not rebuild
//! them, and what they need of the host side stays in the host crate.

use std::path::Path;
use std::process::Command;

/// The packages each workspace member depends on, of every kind and target,
/// by package name (a dependency renamed in a manifest still names its
/// package here), as `cargo metadata` reads the manifests.
fn dependencies() -> serde_json::Value {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--no-deps",
            "--offline",
            "--format-version",
            "1",
        ])
        .current_dir(root)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_command_lines_depend_on_core_and_host_not_on_the_preload_library() {
    let metadata = dependencies();
    let packages = metadata["packages"].as_array().unwrap();
    for command_line in ["gridsel-cli", "gridsel-research"] {
        let package = packages
            .iter()
            .find(|p| p["name"] == command_line)
            .unwrap_or_else(|| panic!("no {command_line} in the workspace"));
        let deps: Vec<&str> = package["dependencies"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["kind"].is_null()) // normal, not dev or build
            .map(|d| d["name"].as_str().unwrap())
            .collect();
        assert!(
            !deps.contains(&"gridsel"),
            "{command_line} depends on the preload library: {deps:?}"
        );
        for needed in ["gridsel-core", "gridsel-host"] {
            assert!(
                deps.contains(&needed),
                "{command_line} lacks {needed}: {deps:?}"
            );
        }
    }
}
