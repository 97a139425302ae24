//! The command lines build on gridsel-core (the decisions) and gridsel-host
//! (settings, files, the CUDA driver), never on the preload library, the
//! `gridsel` crate: a change to the library's C-ABI layer does not rebuild
//! them, and what they need of the host side stays in the host crate.

use gridsel_test_support::repo;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

/// The packages each workspace member depends on, of every kind and target,
/// by package name (a dependency renamed in a manifest still names its
/// package here), as `cargo metadata` reads the manifests.
fn dependencies() -> serde_json::Value {
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--no-deps",
            "--offline",
            "--format-version",
            "1",
        ])
        .current_dir(repo())
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

/// One crate's modules, read from its sources: each module's path (`[]` for
/// the crate root, `["policy", "llvm"]`) and the code it holds before its
/// tests, without comments.
struct Modules {
    code: BTreeMap<Vec<String>, String>,
}

impl Modules {
    /// The modules of the crate whose root file is `root` (`src/lib.rs`,
    /// `src/main.rs`), found through their `mod name;` declarations as the
    /// compiler finds them.
    fn of_crate(root: &Path) -> Self {
        let mut code = BTreeMap::new();
        let mut pending = vec![(Vec::new(), root.to_path_buf())];
        while let Some((path, file)) = pending.pop() {
            let text = code_of(&std::fs::read_to_string(&file).unwrap());
            // A module's children sit in the folder named after it; those
            // of a crate root or a mod.rs in the file's own folder.
            let stem = file.file_stem().unwrap().to_str().unwrap();
            let folder = file.parent().unwrap();
            let children = if path.is_empty() || stem == "mod" {
                folder.to_path_buf()
            } else {
                folder.join(stem)
            };
            for child in declared_modules(&text) {
                let flat = children.join(format!("{child}.rs"));
                let file = if flat.exists() {
                    flat
                } else {
                    children.join(&child).join("mod.rs")
                };
                let mut child_path = path.clone();
                child_path.push(child);
                pending.push((child_path, file));
            }
            code.insert(path, text);
        }
        Self { code }
    }

    /// The module (of this crate) each of `module`'s paths names, by the
    /// longest prefix that is one: `crate::`, `super::` and `self::` paths,
    /// and every path of its `use` declarations.
    fn uses(&self, module: &[String]) -> BTreeSet<Vec<String>> {
        let mut out = BTreeSet::new();
        for path in paths(&self.code[module]) {
            let mut segments = path.split("::").filter(|s| !s.is_empty());
            let mut target: Vec<String> = match segments.next() {
                Some("crate") => Vec::new(),
                Some("self") => module.to_vec(),
                Some("super") => module[..module.len().saturating_sub(1)].to_vec(),
                _ => continue,
            };
            for s in segments {
                match s {
                    "super" => {
                        target.pop();
                    }
                    "self" => {}
                    s => target.push(s.to_string()),
                }
            }
            while !target.is_empty() && !self.code.contains_key(&target) {
                target.pop();
            }
            out.insert(target);
        }
        out
    }

    /// The edges between modules that neither contains the other: a
    /// module may use its ancestors' items and organise its children, and
    /// any other use is a dependency.
    fn dependencies(&self) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
        self.code
            .keys()
            .map(|m| {
                let deps = self
                    .uses(m)
                    .into_iter()
                    .filter(|t| !t.starts_with(m) && !m.starts_with(t))
                    .collect();
                (m.clone(), deps)
            })
            .collect()
    }
}

/// `text` without comments (doc links are not imports) and without its
/// test module, which the repository keeps at the end of a file.
fn code_of(text: &str) -> String {
    let body = text
        .find("#[cfg(test)]\nmod tests {")
        .map_or(text, |at| &text[..at]);
    body.lines()
        .map(|l| match l.find("//") {
            // `//` inside a string (a URL) is rare enough in this code to
            // cut a line short harmlessly.
            Some(at) => &l[..at],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The `mod name;` declarations of a module's code.
fn declared_modules(code: &str) -> Vec<String> {
    code.lines()
        .filter_map(|l| {
            let l = l.trim();
            let l = l.strip_prefix("pub ").unwrap_or(l);
            let l = l.strip_prefix("pub(crate) ").unwrap_or(l);
            let name = l.strip_prefix("mod ")?.strip_suffix(';')?;
            Some(name.trim().to_string())
        })
        .collect()
}

/// Every path in `code` that starts at `crate`, `self` or `super`, with the
/// groups of `use` declarations spelt out (`use a::{b, c::d}`: `a::b`,
/// `a::c::d`).
fn paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("use ") {
        let starts_word = at == 0 || !rest.as_bytes()[at - 1].is_ascii_alphanumeric();
        let tail = &rest[at + 4..];
        let end = tail.find(';').unwrap_or(tail.len());
        if starts_word {
            let tree: String = tail[..end].chars().filter(|c| !c.is_whitespace()).collect();
            out.extend(spell_out(&tree));
        }
        rest = &tail[end.min(tail.len())..];
    }
    let bytes = code.as_bytes();
    for start in ["crate::", "self::", "super::"] {
        for (at, _) in code.match_indices(start) {
            if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_') {
                continue;
            }
            let len = code[at..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(code.len() - at);
            out.push(code[at..at + len].to_string());
        }
    }
    out
}

/// A `use` tree without blanks, spelt out into its paths.
fn spell_out(tree: &str) -> Vec<String> {
    let Some(open) = tree.find('{') else {
        return vec![tree.to_string()];
    };
    let (prefix, inner) = (&tree[..open], &tree[open + 1..tree.len() - 1]);
    let (mut parts, mut depth, mut from) = (Vec::new(), 0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[from..]);
    parts
        .into_iter()
        .filter(|p| !p.is_empty())
        .flat_map(|p| {
            spell_out(p)
                .into_iter()
                .map(move |s| format!("{prefix}{s}"))
        })
        .collect()
}

/// A cycle in `graph`, as the modules along it, if there is one.
fn cycle(graph: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Option<Vec<String>> {
    // Depth-first: a module met again while still on the stack closes a cycle.
    fn visit<'a>(
        m: &'a Vec<String>,
        graph: &'a BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        stack: &mut Vec<&'a Vec<String>>,
        done: &mut BTreeSet<&'a Vec<String>>,
    ) -> Option<Vec<String>> {
        if let Some(at) = stack.iter().position(|s| *s == m) {
            let mut names: Vec<String> = stack[at..].iter().map(|m| m.join("::")).collect();
            names.push(m.join("::"));
            return Some(names);
        }
        if !done.insert(m) {
            return None;
        }
        stack.push(m);
        for next in &graph[m] {
            if let Some(found) = visit(next, graph, stack, done) {
                return Some(found);
            }
        }
        stack.pop();
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|m| visit(m, graph, &mut Vec::new(), &mut done))
}

/// No module of a crate depends on itself through others: the modules of
/// each crate form layers (`device` below `policy`, `policy` below `tune`),
/// so that each can be read, and changed, knowing only what is below it.
#[test]
fn no_crate_has_an_import_cycle_between_its_modules() {
    let root = repo();
    let roots = [
        "src/lib.rs",
        "crates/gridsel-core/src/lib.rs",
        "crates/gridsel-host/src/lib.rs",
        "crates/gridsel-cli/src/lib.rs",
        "crates/gridsel-cli/src/main.rs",
        "crates/gridsel-research/src/main.rs",
    ];
    for crate_root in roots {
        let modules = Modules::of_crate(&root.join(crate_root));
        assert!(modules.code.len() > 1, "{crate_root}: no modules found");
        if let Some(cycle) = cycle(&modules.dependencies()) {
            panic!(
                "{crate_root}: an import cycle between modules: {}",
                cycle.join(" -> ")
            );
        }
    }
}

/// The check finds the cycle the device description once closed through
/// the policies, and none where modules only use their ancestors' items or
/// organise their children.
#[test]
fn the_cycle_check_finds_a_cycle_and_allows_ancestors() {
    let module = |path: &[&str], code: &str| {
        let path: Vec<String> = path.iter().map(|s| s.to_string()).collect();
        (path, code_of(code))
    };
    let mut modules = Modules {
        code: BTreeMap::from([
            module(&[], "pub mod device;\npub mod policy;"),
            module(
                &["device"],
                "use crate::policy::{self, llvm::LlvmRule};\nfn f() { policy::MAX }",
            ),
            module(
                &["policy"],
                "pub mod llvm;\npub use llvm::LlvmRule;\nuse crate::device::DeviceDesc;",
            ),
            module(
                &["policy", "llvm"],
                "use super::MAX;\nuse crate::device::{self};\n// crate::tune::Store",
            ),
        ]),
    };
    let found = cycle(&modules.dependencies()).expect("device -> policy -> device");
    assert_eq!(found, ["device", "policy", "device"], "{found:?}");
    // The device no longer reaching up to the policies: no cycle, although
    // the policies' module uses its child and the child its parent.
    modules
        .code
        .insert(vec!["device".into()], code_of("pub struct DeviceDesc;"));
    assert_eq!(cycle(&modules.dependencies()), None);
    assert_eq!(
        spell_out("crate::policy::{self,llvm::{self,LlvmRule},Decision}"),
        [
            "crate::policy::self",
            "crate::policy::llvm::self",
            "crate::policy::llvm::LlvmRule",
            "crate::policy::Decision"
        ]
    );
}
