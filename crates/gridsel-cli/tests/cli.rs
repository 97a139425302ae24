//! The `gridsel` command-line tool, run as a user runs it: the built binary
//! on the committed real images of tests/fixtures/images/.

use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/images")
        .join(name)
}

/// Runs `gridsel ARGS`, asserts success, returns stdout.
fn gridsel(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_gridsel"))
        .args(args)
        .output()
        .expect("running gridsel");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "gridsel {args:?} failed: {stderr}");
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// The user's `gridsel --help` lists the user's commands, and no research
/// command over sweep results (those are `gridsel-research`'s).
#[test]
fn help_lists_the_user_commands_only() {
    let help = gridsel(&["--help"]);
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(
        commands,
        [
            "select", "devices", "inspect", "cache", "compare", "tune", "env", "help"
        ],
        "{help}"
    );
}

/// `gridsel inspect --json FILE`, parsed.
fn inspect_json(file: &str) -> Vec<Value> {
    let path = fixture(file);
    let text = gridsel(&["inspect", "--json", path.to_str().unwrap()]);
    match serde_json::from_str(&text) {
        Ok(Value::Array(images)) => images,
        other => panic!("not a JSON array: {other:?}\n{text}"),
    }
}

/// The kernel of `image` whose symbol ends in `suffix` (kernel names embed
/// the source file's device and inode, so only the function and line are
/// stable).
fn kernel<'a>(image: &'a Value, suffix: &str) -> &'a Value {
    let kernels = image["kernels"].as_array().expect("kernels array");
    let found: Vec<_> = kernels
        .iter()
        .filter(|k| k["name"].as_str().is_some_and(|n| n.ends_with(suffix)))
        .collect();
    assert_eq!(found.len(), 1, "one kernel ending in {suffix}: {kernels:?}");
    found[0]
}

#[test]
fn inspect_json_describes_the_cubin_of_an_sm90_executable() {
    // The `.llvm.offloading` section of the sm_90 build of kernels.c.
    let images = inspect_json("kernels.sm_90.offload");
    assert_eq!(images.len(), 1, "{images:?}");
    let image = &images[0];
    assert_eq!(
        image["image"],
        serde_json::json!({"format": "cubin", "sm_arch": 90})
    );
    assert_eq!(image["kernels"].as_array().unwrap().len(), 6);
    // (function and line, mode, compiled thread cap, raw mode byte)
    let expected = [
        ("_spmd_l12", "spmd", 128, 2),
        ("_generic_spmd_l18", "generic-spmd", 128, 3),
        ("_limit256_l27", "spmd", 256, 2),
        ("_bounds512_l33", "spmd", 512, 2),
        ("_heavy_l39", "spmd", 128, 2),
        ("_local_array_l57", "spmd", 128, 2),
    ];
    for (suffix, mode, cap, raw_mode) in expected {
        let k = kernel(image, suffix);
        assert_eq!(k["exec_mode"], mode, "{suffix}");
        assert_eq!(k["max_threads"], cap, "{suffix}");
        assert_eq!(k["sm_arch"], 90, "{suffix}");
        assert_eq!(k["environment"]["exec_mode"], raw_mode, "{suffix}");
        assert_eq!(k["environment"]["max_threads"], cap, "{suffix}");
        assert!(k["registers"].as_u64().is_some_and(|r| r > 0), "{suffix}");
        assert_eq!(k["unbounded_stack"], false, "{suffix}");
    }
    // `double t[64]` indexed at run time lives on the stack.
    assert_eq!(kernel(image, "_local_array_l57")["local_mem"], 512);
    assert_eq!(kernel(image, "_spmd_l12")["local_mem"], 0);
}

#[test]
fn inspect_json_describes_a_host_offload_executable() {
    let images = inspect_json("kernels.x86_64.exe");
    assert_eq!(images.len(), 1, "{images:?}");
    let image = &images[0];
    assert_eq!(
        image["image"],
        serde_json::json!({"format": "host-elf", "machine": 62})
    );
    assert_eq!(image["kernels"].as_array().unwrap().len(), 6);
    let k = kernel(image, "_spmd_l12");
    // A host image has no cubin facts: null, not invented.
    assert_eq!(k["registers"], Value::Null);
    assert_eq!(k["sm_arch"], Value::Null);
    assert!(k["code_size"].as_u64().is_some_and(|s| s > 0));
}

#[test]
fn inspect_json_of_bitcode_is_a_jit_image_without_kernels() {
    assert_eq!(
        inspect_json("tiny.bc"),
        [serde_json::json!({"image": {"format": "bitcode"}, "kernels": []})]
    );
}

#[test]
fn select_uses_the_library_default_policy_and_aligns_its_columns() {
    let json: Value =
        serde_json::from_str(&gridsel(&["select", "--trip-count", "1000", "--json"])).unwrap();
    assert_eq!(
        json["policy"],
        gridsel_core::policy::DEFAULT_POLICY.to_string()
    );

    // The text form prints LLVM's grid and the policy's in one column.
    let text = gridsel(&["select", "--trip-count", "1000", "--policy", "lloyd"]);
    let column = |label: &str| {
        let line = text
            .lines()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("no `{label}` line in\n{text}"));
        line.len() - line[label.len()..].trim_start().len()
    };
    assert_eq!(column("llvm"), column("lloyd"), "{text}");
}

#[test]
fn select_models_the_llvm_release_it_is_given() {
    let rule = |extra: &[&str]| {
        let mut args = vec![
            "select",
            "--trip-count",
            "1000",
            "--policy",
            "llvm",
            "--json",
        ];
        args.extend(extra);
        let json: Value = serde_json::from_str(&gridsel(&args)).unwrap();
        json["rule"].as_str().unwrap().to_owned()
    };
    assert_eq!(rule(&[]), "LLVM 19's rule");
    for release in ["19", "20", "21", "22", "23"] {
        assert_eq!(
            rule(&["--llvm-version", release]),
            format!("LLVM {release}'s rule")
        );
    }
    for (bad, why) in [
        ("17", "LLVM 17's grid rule is not modelled; 19-23 are"),
        ("main", "`main` is not an LLVM major version"),
    ] {
        let (ok, _, stderr) = gridsel_env(
            &["select", "--trip-count", "1000", "--llvm-version", bad],
            &[],
        );
        assert!(!ok && stderr.contains(why), "{stderr}");
    }
}

/// `gridsel select --device titanx-pascal --policy lloyd --trip-count 10
/// --registers 32 --shared-mem 0` and `extra`: the JSON answer and the text one.
fn fig7(extra: &[&str]) -> (Value, String) {
    let mut args = vec![
        "select",
        "--device",
        "titanx-pascal",
        "--policy",
        "lloyd",
        "--trip-count",
        "10",
        "--registers",
        "32",
        "--shared-mem",
        "0",
    ];
    args.extend(extra);
    let text = gridsel(&args);
    args.push("--json");
    (serde_json::from_str(&gridsel(&args)).unwrap(), text)
}

/// Lloyd et al.'s Fig. 7: a short loop of 10 iterations gets 10 one-thread
/// blocks. A kernel described by flags is taken as SPMD without nesting, so
/// the safe range does not cut it to LLVM's one block.
#[test]
fn select_reproduces_fig7_for_a_kernel_described_by_flags() {
    let (json, text) = fig7(&[]);
    assert_eq!(
        (&json["threads"], &json["blocks"], &json["clamped"]),
        (&Value::from(1), &Value::from(10), &Value::from(false)),
        "{json}"
    );
    assert_eq!(json["narrowed"], Value::Null, "{json}");
    assert!(text.contains("10 blocks x 1 thread"), "{text}");
    assert!(!text.contains("range"), "{text}");
    assert_eq!(fig7(&["--nested", "no", "--mode", "spmd"]).0, json);
}

/// A kernel stated to nest keeps at most LLVM's grid, and both outputs say
/// why the policy's grid was cut.
#[test]
fn select_nested_yes_cuts_to_llvms_grid_and_says_so() {
    let (json, text) = fig7(&["--nested", "yes"]);
    assert_eq!(
        (&json["blocks"], &json["llvm_blocks"], &json["clamped"]),
        (&Value::from(1), &Value::from(1), &Value::from(true)),
        "{json}"
    );
    assert_eq!(
        json["narrowed"], "the kernel may use nested parallelism",
        "{json}"
    );
    let range = text
        .lines()
        .find(|l| l.starts_with("range"))
        .unwrap_or_else(|| panic!("no range line in\n{text}"));
    assert!(
        range.ends_with(
            "cut to threads 1..32, blocks <= 1 (LLVM's grid at most: the kernel may use nested parallelism)"
        ),
        "{range}"
    );
    let (ok, _, stderr) = gridsel_env(&["select", "--trip-count", "10", "--nested", "maybe"], &[]);
    assert!(!ok && stderr.contains("expected yes or no"), "{stderr}");
}

/// A kernel read from a binary keeps its environment's nesting unless
/// --nested says otherwise.
#[test]
fn select_takes_nesting_from_the_binary_unless_stated() {
    let cubin = fixture("kernels.sm_90.cubin");
    let select = |extra: &[&str]| {
        let mut args = vec![
            "select",
            "--binary",
            cubin.to_str().unwrap(),
            "--kernel",
            "__omp_offloading_fe00_98e137_heavy_l39",
            "--trip-count",
            "1000000",
            "--policy",
            "fixed:128,8000",
            "--json",
        ];
        args.extend(extra);
        serde_json::from_str::<Value>(&gridsel(&args)).unwrap()
    };
    let json = select(&[]);
    assert_eq!(
        (&json["blocks"], &json["narrowed"]),
        (&Value::from(8000), &Value::Null),
        "{json}"
    );
    let json = select(&["--nested", "yes"]);
    assert_eq!(json["blocks"], json["llvm_blocks"], "{json}");
    assert_eq!(
        json["narrowed"], "the kernel may use nested parallelism",
        "{json}"
    );
}

/// Runs `gridsel ARGS` with `env`, returns (success, stdout, stderr).
fn gridsel_env(args: &[&str], env: &[(&str, &str)]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_gridsel"))
        .args(args)
        .env_remove("GRIDSEL_CACHE")
        .envs(env.iter().copied())
        .output()
        .expect("running gridsel");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn cache_lists_explains_and_clears_what_tune_saved() {
    use gridsel_core::Geometry;
    use gridsel_core::tune::Store;
    use gridsel_core::tune::search::{Candidate, Kind};
    use gridsel_core::tune::store::{Key, Table, Update};
    use gridsel_host::files;
    let dir = std::env::temp_dir().join(format!("gridsel-cli-cache-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("cache.json");
    let file = path.to_str().unwrap();
    // Two searches of main_l7 (one settled, one exploring) and one of other_l9.
    let mut table = Table::default();
    let update = |kernel: &str, trip: u64, samples: &[(Candidate, u64)]| {
        let mut u = Update::new(Key::for_trip(kernel, "H100", 90, trip, "0123456789abcdef"));
        u.llvm_release = 19;
        u.tally.runs = 1;
        u.tally.launches_per_run = 20;
        u.tally.trips = (trip, trip);
        u.samples = samples.iter().map(|&(c, ns)| (c, Kind::Warm, ns)).collect();
        u.explored = [0, samples.len() as u32];
        u
    };
    let fast = Candidate::Move {
        threads: 64,
        blocks_log2: 1,
    };
    let mut settled = vec![
        (Candidate::Auto, 9000),
        (Candidate::Llvm, 9100),
        (fast, 5120),
    ];
    settled.extend([(fast, 5100), (fast, 5140), (Candidate::Auto, 9050)]);
    let mut u = update("__omp_offloading_fe00_1_main_l7", 1000, &settled);
    u.settled = [false, true];
    table.apply(&u);
    // This one a tuning session timed on the GPU.
    let mut u = update(
        "__omp_offloading_fe00_1_main_l7",
        4096,
        &[(Candidate::Auto, 700)],
    );
    u.clock = gridsel_core::tune::Clock::Gpu;
    table.apply(&u);
    // Past the online plan's 40 exploring launches, but no process marked
    // it settled: production does not read it, so it is still exploring.
    let mut u = update(
        "__omp_offloading_fe00_1_main_l7",
        1 << 20,
        &[(Candidate::Auto, 800)],
    );
    u.explored = [0, 45];
    table.apply(&u);
    let pinned = Candidate::Grid(Geometry::new(32, 32));
    let mut u = update("__omp_offloading_fe00_1_other_l9", 1000, &[]);
    u.pinned = Some(pinned);
    // other_l9's in the store's journal, as a process that ran it leaves it.
    let _ = std::fs::remove_file(files::journal_path(&path));
    std::fs::write(&path, table.render()).unwrap();
    let patience = std::time::Duration::from_secs(5);
    // Paired with a journal, as gridsel writes a store, then appended to.
    files::edit_store(&path, patience, files::OnInvalid::Refuse, |_| {}).unwrap();
    files::StoreFile::new(path.clone(), false)
        .store(&[u], patience)
        .unwrap();
    assert!(files::journal_path(&path).exists());

    // GRIDSEL_CACHE is the default file.
    let (ok, out, err) = gridsel_env(&["cache", "list"], &[("GRIDSEL_CACHE", file)]);
    assert!(ok, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        "kernel,device,sm_arch,build,llvm,trip_min,trip_max,state,candidate,median_ns,samples,kind,runs,explored"
    );
    assert_eq!(lines.len(), 5, "{out}");
    // A candidate holds a comma, so it is quoted: every row has the
    // header's 14 fields.
    assert!(
        lines.contains(
            &"__omp_offloading_fe00_1_main_l7,H100,90,0123456789abcdef,19,1000,1000,settled,\"move:64,1\",5120,3,Warm,1,6"
        ),
        "{out}"
    );
    for line in &lines {
        let fields = gridsel_cli::csv::split(line).unwrap();
        assert_eq!(fields.len(), 14, "{line}");
    }
    assert!(
        lines
            .iter()
            .any(|l| l
                .contains("_main_l7,H100,90,0123456789abcdef,19,4096,4096,exploring,auto,700,1,")),
        "{out}"
    );
    assert!(
        lines.iter().any(|l| l
            .contains("_other_l9,H100,90,0123456789abcdef,19,1000,1000,pinned,\"grid:32,32\",")),
        "{out}"
    );
    assert!(
        lines.iter().any(|l| l.contains(
            "_main_l7,H100,90,0123456789abcdef,19,1048576,1048576,exploring,auto,800,1,Warm,1,45"
        )),
        "{out}"
    );

    let (ok, out, err) = gridsel_env(&["cache", "--path", file, "explain", "_main_l7"], &[]);
    assert!(ok, "{err}");
    assert!(
        out.contains("(sm_90), build 0123456789abcdef, LLVM 19, trip counts 1000-1000"),
        "{out}"
    );
    assert!(out.contains("settled on move:64,1"), "{out}");
    assert!(out.contains("the runner-up's median is +76.3 %"), "{out}");
    assert!(out.contains("    move:64,1: 5120 (3)"), "{out}");
    // What timed each search's samples: two on the host, one on the GPU.
    let host = "median ns (samples), timed on the host (the launch call's wall time)";
    let gpu = "median ns (samples), timed on the GPU (the kernel's own time, CUPTI)";
    assert_eq!(
        (out.matches(host).count(), out.matches(gpu).count()),
        (2, 1),
        "{out}"
    );
    // The store does not say which plan ran a search: both budgets are told.
    assert!(
        out.contains("still exploring (")
            && out.contains(
                "exploring launches spent, of 40 under online tune, up to 128 in a tuning session)"
            ),
        "{out}"
    );
    let (ok, out, _) = gridsel_env(&["cache", "--path", file, "explain", "_other_l9"], &[]);
    assert!(ok && out.contains("pinned to grid:32,32"), "{out}");
    let (ok, _, err) = gridsel_env(&["cache", "--path", file, "explain", "nothing"], &[]);
    assert!(!ok && err.contains("no kernel matches `nothing`"), "{err}");

    // Clearing one kernel keeps the others, then clearing all empties the file.
    let (ok, out, err) = gridsel_env(
        &["cache", "--path", file, "clear", "--kernel", "_main_l7"],
        &[],
    );
    assert!(ok && out.contains("3 searches cleared"), "{out}{err}");
    assert!(
        !files::journal_path(&path).exists(),
        "merged into the store"
    );
    let (_, out, _) = gridsel_env(&["cache", "--path", file, "list"], &[]);
    assert_eq!(out.lines().count(), 2, "{out}");
    assert!(out.contains("_other_l9"), "{out}");
    let (ok, out, _) = gridsel_env(&["cache", "--path", file, "clear"], &[]);
    assert!(ok && out.contains("1 search cleared"), "{out}");
    let (_, out, _) = gridsel_env(&["cache", "--path", file, "list"], &[]);
    assert_eq!(out.lines().count(), 1, "{out}");

    // The store switched off and no file named: one clear error.
    let (ok, _, err) = gridsel_env(&["cache", "list"], &[("GRIDSEL_CACHE", "off")]);
    assert!(
        !ok && err.contains("give --path, or set GRIDSEL_CACHE"),
        "{err}"
    );
    // A symbolic link is refused like everywhere else.
    let link = dir.join("link.json");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&path, &link).unwrap();
    let (ok, _, err) = gridsel_env(&["cache", "--path", link.to_str().unwrap(), "clear"], &[]);
    assert!(!ok && err.contains("symbolic link"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `cache clear` on a file it would have to drop records of, or that is no
/// store at all, refuses as `list` does and erases nothing; `list` shows
/// what validates and says what it left out.
#[test]
fn cache_clear_refuses_what_list_refuses_and_erases_nothing() {
    let dir = std::env::temp_dir().join(format!("gridsel-cli-refuse-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let record = |kernel: &str, runs: &str| {
        format!(
            "{{\"kernel\":\"{kernel}\",\"device\":\"H100\",\"sm_arch\":90,\"class\":1,\"build\":\"\",\"llvm\":0,\"trips\":[1,1],\"used\":7,\"runs\":{runs},\"launches_per_run\":1,\"explored\":[0,0],\"settled\":[false,false],\"pinned\":null,\"grids\":{{\"auto\":{{\"cold\":[5000],\"warm\":[]}}}}}}"
        )
    };
    let partly = format!(
        "{{\"version\": 3, \"records\": [\n{},\n{}\n]}}\n",
        record("k_l7", "1"),
        record("k_l9", "-1")
    );
    for (name, text, why) in [
        ("notes.txt", "notes\n".to_string(), "not a gridsel store"),
        (
            "partly.json",
            partly,
            "record 2 (kernel k_l9): invalid value",
        ),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, &text).unwrap();
        let file = path.to_str().unwrap();
        let (listed, out, list_err) = gridsel_env(&["cache", "--path", file, "list"], &[]);
        for args in [vec!["clear", "--kernel", "k_l7"], vec!["clear"]] {
            let mut all = vec!["cache", "--path", file];
            all.extend(&args);
            let (ok, _, err) = gridsel_env(&all, &[]);
            assert!(!ok, "{args:?} on {name}: {err}");
            assert!(
                err.contains(why) && err.contains("nothing cleared"),
                "{err}"
            );
            assert_eq!(err.lines().count(), 1, "{err}");
        }
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text, "{name}");
        assert!(!dir.join(format!("{name}.bad")).exists());
        if name == "notes.txt" {
            assert!(!listed && list_err.contains(why), "{list_err}");
        } else {
            assert!(listed, "{list_err}");
            assert_eq!(out.lines().count(), 2, "{out}");
            assert!(out.contains("k_l7,H100"), "{out}");
            assert!(
                list_err.contains("left out: record 2 (kernel k_l9)"),
                "{list_err}"
            );
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `gridsel env` describes every variable as the library defines it, in
/// the library's order; `--help` names them all and `help env` shows the
/// same description.
#[test]
fn env_describes_every_variable_as_the_library_defines_it() {
    use gridsel_host::config::SETTINGS;
    let words = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
    let described = words(&gridsel(&["env"]));
    let mut rest = described.as_str();
    for s in SETTINGS {
        let if_bad = s.if_bad.map(|i| format!("if bad: {i}"));
        let entry = words(&format!(
            "{} values: {} default: {} {} {}",
            s.name,
            s.values,
            s.default.text(),
            if_bad.unwrap_or_default(),
            s.help
        ));
        let at = rest.find(&entry).unwrap_or_else(|| {
            panic!("`gridsel env` lacks, or misorders, {entry:?}:\n{described}")
        });
        rest = &rest[at + entry.len()..];
    }
    assert!(words(&gridsel(&["help", "env"])).contains(&described));
    let help = words(&gridsel(&["--help"]));
    for s in SETTINGS {
        assert!(help.contains(s.name), "--help lacks {}:\n{help}", s.name);
    }
}
