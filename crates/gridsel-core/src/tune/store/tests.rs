use super::*;
use crate::Geometry;
use crate::tune::Clock;
use crate::tune::search::Step;
use crate::tune::search::{Candidate, Kind};

#[test]
fn classes_are_half_octaves() {
    assert_eq!(class(0), 0);
    assert_eq!(class(1), 1);
    assert_eq!((class(2), class(3), class(4)), (3, 4, 5));
    // Class 2, [1.41, 2), holds no integer.
    assert_eq!(class_floor(2), 2);
    for c in (1..=120).filter(|&c| c != 2) {
        let floor = class_floor(c);
        assert_eq!(class(floor), c, "class {c}");
        assert!(floor == 1 || class(floor - 1) < c, "class {c}");
    }
    // A solver's loop from 1000 down to 725 shares one class.
    assert_eq!(class(1000), class(725));
    assert_ne!(class(1000), class(700));
    assert_eq!(
        scale_to_class(2000, 1000),
        2000 * class_floor(class(1000)) / 1000
    );
    assert_eq!(scale_to_class(77, 0), 77);
    assert_eq!(class(u64::MAX), 128);
}

#[test]
fn regions_without_a_loop_have_a_class_of_their_own() {
    // Trip count 0 is a `target teams` region without a distribute
    // loop: no trip count shares its class, so its search never mixes
    // with a loop's, and its times are taken as they are.
    assert_eq!(class(0), 0);
    assert!((1..=1 << 12).chain([u64::MAX]).all(|t| class(t) >= 1));
    assert_eq!(class_floor(0), 0);
    assert_eq!(scale_to_class(1234, 0), 1234);
    // The store keeps class 0 apart from class 1.
    let mut table = Table::default();
    for (c, ns) in [(class(0), 1000), (class(1), 2000)] {
        let mut u = Update::new(key(c));
        u.tally.runs = 1;
        u.samples = vec![(Candidate::Auto, Kind::Cold, ns)];
        table.apply(&u);
    }
    let table = Table::parse(&table.render()).unwrap();
    assert_eq!(table.len(), 2);
    for (c, ns) in [(0, 1000), (1, 2000)] {
        let r = table.get(&key(c)).unwrap();
        assert_eq!(r.search.samples[0].cold, [ns], "class {c}");
    }
}

const BUILD: &str = "00000000000000b1";

fn key(class: u32) -> Key {
    Key {
        kernel: "k".into(),
        device: "H100".into(),
        sm_arch: 90,
        class,
        build: BUILD.into(),
    }
}

impl Key {
    fn with_kernel(self, kernel: &str) -> Self {
        Self {
            kernel: kernel.into(),
            ..self
        }
    }
}

#[test]
fn launches_of_one_class_share_a_key() {
    assert_eq!(
        Key::for_trip("k", "H100", 90, 1000, BUILD),
        key(class(1000))
    );
    assert_eq!(
        Key::for_trip("k", "H100", 90, 700, BUILD),
        Key::for_trip("k", "H100", 90, 720, BUILD)
    );
    assert_eq!(Key::for_trip("k", "H100", 90, 0, BUILD), key(0));
    // Another build of the program is another search.
    assert_ne!(
        Key::for_trip("k", "H100", 90, 1000, "00000000000000b2"),
        key(class(1000))
    );
}

#[test]
fn updates_merge_and_a_search_resumes_from_the_file() {
    let mut table = Table::default();
    let mut u = Update::new(key(21));
    u.tally.runs = 1;
    u.tally.launches_per_run = 1;
    u.tally.trips = (1000, 1000);
    u.tally.used = 7;
    u.explored = [1, 0];
    u.samples = vec![(Candidate::Auto, Kind::Cold, 5000)];
    table.apply(&u);
    u.samples = vec![(Candidate::Llvm, Kind::Cold, 4000)];
    u.tally.trips = (900, 900);
    table.apply(&u);
    let back = Table::parse(&table.render()).unwrap();
    assert_eq!(back, table);
    let r = back.get(&key(21)).unwrap();
    assert_eq!(
        (r.tally.runs, r.tally.trips, r.search.explored),
        (2, (900, 1000), [2, 0])
    );
    assert_eq!(r.kind(), Kind::Cold);
    // One faster launch does not displace auto; a second one does.
    assert_eq!(r.search.leader(Kind::Cold), 0);
    u.samples = vec![
        (Candidate::Llvm, Kind::Cold, 4000),
        (Candidate::Auto, Kind::Cold, 5000),
    ];
    table.apply(&u);
    let r = table.get(&key(21)).unwrap();
    assert_eq!(
        r.search.leader(Kind::Cold),
        r.search
            .candidates
            .iter()
            .position(|c| *c == Candidate::Llvm)
            .unwrap()
    );
    assert!(matches!(
        r.search.step(Kind::Cold, 0),
        Step::Settled(_) | Step::Explore(_)
    ));
}

/// A valid record of kernel `kernel` in class `class`, with `fields`
/// (`"name":value,` each) before its own.
fn line(kernel: &str, class: u32, fields: &str) -> String {
    format!(
        "{{{fields}\"kernel\":\"{kernel}\",\"device\":\"H100\",\"sm_arch\":90,\"class\":{class},\"build\":\"{BUILD}\",\"llvm\":19,\"trips\":[1,1],\"used\":7,\"runs\":1,\"launches_per_run\":1,\"explored\":[0,0],\"settled\":[false,false],\"pinned\":null,\"grids\":{{\"auto\":{{\"cold\":[5000],\"warm\":[]}}}}}}"
    )
}

fn store(lines: &[String]) -> String {
    format!(
        "{{\"version\": 3, \"records\": [\n{}\n]}}\n",
        lines.join(",\n")
    )
}

/// The libomptarget's release, `Record::llvm_release` in the code, is the
/// field `llvm` in every store and journal gridsel has written: a store of
/// such records reads unchanged, and what is written back still says `llvm`.
#[test]
fn the_llvm_release_is_the_stores_llvm_field() {
    let written_before = store(&[line("k", 21, "")]);
    assert!(written_before.contains("\"llvm\":19,"), "{written_before}");
    let table = Table::parse(&written_before).unwrap();
    let record = table.records().next().unwrap();
    assert_eq!(record.llvm_release, 19);
    let rendered = table.render();
    assert!(rendered.contains("\"llvm\":19,"), "{rendered}");
    assert!(!rendered.contains("llvm_release"), "{rendered}");
    assert_eq!(Table::parse(&rendered).unwrap(), table);
    // A journal line too: written as `llvm`, read back as the release.
    let mut u = busy_update("k");
    u.llvm_release = 22;
    let line = journal_line(&u);
    assert!(line.contains("\"llvm\":22,"), "{line}");
    let text = journal_header(JournalId(7)) + &line;
    let journal = parse_journal(text.as_bytes()).unwrap();
    assert_eq!(journal.updates[0].llvm_release, 22, "{:?}", journal.dropped);
}

#[test]
fn only_a_json_object_with_a_version_and_records_is_a_store() {
    for text in [
        "notes\n",
        "# ~/.bashrc\nexport PATH=$HOME/bin:$PATH\n",
        "[2, []]",
        "{\"name\": \"a package.json\"}",
        "{\"version\": \"3\", \"records\": []}",
        "{\"version\": 3}",
        "{\"version\": 3, \"records\": {}}",
        "{\"version\": 1, \"records\": []}",
        "{\"version\": 2, \"entries\": []}",
        "{\"version\": 3, \"records\": [], \"records\": []}",
    ] {
        assert!(
            matches!(parse(text), Err(StoreError::NotAStore(_))),
            "{text}: {:?}",
            parse(text)
        );
    }
    assert_eq!(
        parse("notes").unwrap_err().to_string(),
        "not a gridsel store (expected ident at line 1 column 2)"
    );
    // Empty: a new store.
    for text in ["", " \n"] {
        assert_eq!(parse(text).unwrap(), Contents::default());
    }
    // An older store: all of it left out; a newer one: not read.
    let old = parse("{\"version\": 1, \"entries\": []}").unwrap();
    assert_eq!(old.table, Table::default());
    assert_eq!(
        old.dropped,
        ["version 1, expected 3: its records are not read"]
    );
    // Version 2 knew no builds: its grids may be another build's.
    let v2 = store(&[line("k", 1, "")]).replacen("\"version\": 3", "\"version\": 2", 1);
    let old = parse(&v2).unwrap();
    assert_eq!(old.table, Table::default());
    assert_eq!(
        old.dropped,
        ["version 2, expected 3: its records are not read"]
    );
    assert!(matches!(
        parse("{\"version\": 4}"),
        Err(StoreError::Newer(_))
    ));
    assert_eq!(
        parse(&Table::default().render()).unwrap(),
        Contents::default()
    );
}

#[test]
fn a_record_that_does_not_validate_is_dropped_alone() {
    let nine = format!("[{}]", ["1"; 9].join(","));
    let text = store(&[
        line("a", 1, ""),
        line("b", 1, "").replace("[5000]", &nine),
        line("c", 1, "").replace("\"runs\":1", "\"runs\":-1"),
        line("d", 1, "").replace("\"pinned\":null", "\"pinned\":\"grid:fast\""),
        "{\"kernel\": 3}".to_string(),
        "7".to_string(),
        line("e", 1, ""),
    ]);
    let contents = parse(&text).unwrap();
    let kept: Vec<&str> = contents
        .table
        .records()
        .map(|r| r.key.kernel.as_str())
        .collect();
    assert_eq!(kept, ["a", "e"]);
    let dropped = &contents.dropped;
    assert_eq!(dropped.len(), 5, "{dropped:?}");
    assert!(dropped[0].starts_with("record 2 (kernel b): `auto`: more than 8 samples"));
    assert!(dropped[1].starts_with("record 3 (kernel c): invalid value: integer `-1`"));
    assert!(dropped[2].starts_with("record 4 (kernel d): `grid:fast` is not a candidate"));
    assert!(
        dropped[3].starts_with("record 5: invalid type"),
        "{}",
        dropped[3]
    );
    assert!(
        dropped[4].starts_with("record 6: invalid type"),
        "{}",
        dropped[4]
    );
    // The strict reading names them all.
    assert!(
        Table::parse(&text)
            .unwrap_err()
            .contains("record 4 (kernel d)")
    );
}

#[test]
fn unknown_fields_cost_no_record_and_are_written_back() {
    let text = store(&[line("a", 1, "\"p90\":[1,2],\"note\":\"x\",")
        .replace("\"warm\":[]", "\"warm\":[],\"p90\":5")]);
    let contents = parse(&text).unwrap();
    assert!(contents.dropped.is_empty(), "{:?}", contents.dropped);
    let r = contents.table.get(&key(1).with_kernel("a")).unwrap();
    assert_eq!(r.unknown.len(), 2);
    assert_eq!(r.search.samples[0].cold, [5000]);
    // Kept across an update and a rewrite (those of a candidate's
    // samples are not).
    let mut table = contents.table;
    let mut u = Update::new(key(1).with_kernel("a"));
    u.samples = vec![(Candidate::Auto, Kind::Cold, 6000)];
    table.apply(&u);
    let back = Table::parse(&table.render()).unwrap();
    assert_eq!(back, table);
    let r = back.get(&key(1).with_kernel("a")).unwrap();
    assert_eq!(r.unknown["p90"], serde_json::json!([1, 2]));
    assert_eq!(r.unknown["note"], "x");
}

#[test]
fn a_second_record_of_a_search_and_a_field_given_twice_are_left_out() {
    let text = store(&[
        line("a", 1, ""),
        line("a", 1, "").replace("[5000]", "[1]"),
        line("b", 1, "\"runs\":5,"),
        line("c", 1, "").replace("\"warm\":[]", "\"warm\":[],\"cold\":[1]"),
        line("d", 1, "").replace(
            "{\"auto\":",
            "{\"llvm\":{\"cold\":[1],\"warm\":[]},\"llvm\":{\"cold\":[2],\"warm\":[]},\"auto\":",
        ),
        line("e", 1, ""),
    ]);
    let contents = parse(&text).unwrap();
    assert_eq!(
        contents.dropped,
        [
            "record 2 (kernel a): a second record of an earlier one's search, which is kept",
            "record 3 (kernel b): `runs` given twice",
            "record 4 (kernel c): `grids.auto.cold` given twice",
            "record 5 (kernel d): `grids.llvm` given twice",
        ]
    );
    let a = contents.table.get(&key(1).with_kernel("a")).unwrap();
    assert_eq!(a.search.samples[0].cold, [5000], "the first is kept");
    assert_eq!(contents.table.len(), 2);
}

/// An update with more samples of a candidate than a record keeps, of
/// two candidates, both kinds.
fn busy_update(kernel: &str) -> Update {
    let mut u = Update::new(key(21).with_kernel(kernel));
    (u.tally.runs, u.tally.launches_per_run, u.tally.used) = (1, 30, 1_800_000_000);
    u.tally.trips = (1000, 1020);
    u.explored = [0, 9];
    u.settled = [false, true];
    for ns in 0..12 {
        u.samples.push((Candidate::Llvm, Kind::Warm, 4000 + ns));
        u.samples.push((Candidate::Auto, Kind::Warm, 5000 + ns));
    }
    u.samples.push((Candidate::Auto, Kind::Cold, 9000));
    u
}

#[test]
fn a_journal_line_adds_what_its_update_adds() {
    let mut base = Table::default();
    base.apply(&busy_update("k"));
    let id = JournalId(0x0123_4567_89ab_cdef);
    let mut text = journal_header(id);
    let (a, mut b) = (busy_update("k"), busy_update("other"));
    b.pinned = Some(Candidate::Grid(Geometry::new(64, 8)));
    for u in [&a, &b] {
        let line = journal_line(u);
        assert!(line.ends_with('\n') && line.matches('\n').count() == 1);
        text += &line;
    }
    let journal = parse_journal(text.as_bytes()).unwrap();
    assert_eq!(journal.store, Some(id));
    assert!(journal.dropped.is_empty(), "{:?}", journal.dropped);
    assert_eq!(journal.complete, text.len());
    let mut direct = base.clone();
    direct.apply(&a);
    direct.apply(&b);
    let mut contents = Contents {
        table: base.clone(),
        journal: Some(id),
        ..Contents::default()
    };
    assert!(contents.extend(journal.clone()));
    // The same records, read back the same from the store.
    assert_eq!(
        Table::parse(&contents.table.render()).unwrap(),
        Table::parse(&direct.render()).unwrap()
    );
    // Another store's journal, or any for an unpaired store: not applied.
    for other in [Some(JournalId(7)), None] {
        let mut contents = Contents {
            table: base.clone(),
            journal: other,
            ..Contents::default()
        };
        assert!(!contents.extend(journal.clone()));
        assert_eq!(contents.table, base);
    }
}

#[test]
fn a_store_names_its_journal_in_its_first_line() {
    let mut table = Table::default();
    table.apply(&busy_update("k"));
    let id = JournalId(u64::MAX - 5);
    let text = table.render_paired(id);
    let first = &text[..text.find('\n').unwrap() + 1];
    assert_eq!(first.len(), PAIRED_HEADER_BYTES);
    assert_eq!(journal_of(text.as_bytes()), Some(id));
    assert_eq!(
        journal_of(&text.as_bytes()[..PAIRED_HEADER_BYTES - 1]),
        None
    );
    let contents = parse(&text).unwrap();
    assert_eq!(contents.journal, Some(id));
    assert_eq!(contents.table, Table::parse(&table.render()).unwrap());
    // Not paired: an unpaired store, one written by hand, other files.
    for text in [
        table.render(),
        text.replacen("{\"version\": 3, ", "{\"version\":3, ", 1),
        text.replacen("\"journal\": \"", "\"journal\": \"x", 1),
        "notes\n".repeat(20),
    ] {
        assert_eq!(journal_of(text.as_bytes()), None, "{text}");
    }
}

#[test]
fn a_journal_line_that_does_not_validate_is_dropped_alone_and_a_torn_last_line_is_not_read() {
    let id = JournalId(42);
    let good = journal_line(&busy_update("a"));
    let bad = good.replace("\"runs\":1", "\"runs\":-1");
    let torn = &good[..good.len() / 2];
    let text = format!("{}{good}{bad}not json\n{good}{torn}", journal_header(id));
    let journal = parse_journal(text.as_bytes()).unwrap();
    assert_eq!(journal.updates.len(), 2);
    assert_eq!(journal.complete, text.len() - torn.len());
    assert_eq!(journal.dropped.len(), 2, "{:?}", journal.dropped);
    assert!(
        journal.dropped[0].starts_with("journal line 3 (kernel a): invalid value: integer `-1`"),
        "{:?}",
        journal.dropped
    );
    assert!(journal.dropped[1].starts_with("journal line 4: "));
    // A first line cut short: a journal of no store, read as empty.
    let header = journal_header(id);
    for cut in [5, header.len() - 1] {
        let journal = parse_journal(&header.as_bytes()[..cut]).unwrap();
        assert_eq!(journal, Journal::default());
    }
    // An older journal extends no store; a newer one, or a file that is
    // no journal, is refused.
    let older = format!("{{\"gridsel_journal\": 1, \"store\": \"{id}\"}}\n{good}");
    assert_eq!(parse_journal(older.as_bytes()).unwrap().store, None);
    let newer = format!("{{\"gridsel_journal\": 4, \"store\": \"{id}\"}}\n");
    assert!(matches!(
        parse_journal(newer.as_bytes()),
        Err(StoreError::Newer(_))
    ));
    for text in [
        "notes\n",
        "notes",
        "{\"gridsel_journal\": \"2\"}\n",
        "{\"version\": 3}\n",
    ] {
        assert!(
            matches!(
                parse_journal(text.as_bytes()),
                Err(StoreError::NotAJournal(_))
            ),
            "{text}"
        );
    }
}

/// What [`parse`] reads of `only`'s kernels, as a table and the
/// dropped entries that name them.
fn parsed_whole(text: &str, only: &Only) -> (Table, Vec<String>) {
    let mut contents = parse(text).unwrap();
    contents.table.retain(|r| only.wants_kernel(&r.key.kernel));
    let named = |d: &String| {
        only.kernels
            .iter()
            .any(|k| d.contains(&format!("(kernel {k})")))
    };
    (
        contents.table,
        contents.dropped.into_iter().filter(named).collect(),
    )
}

#[test]
fn a_reader_of_some_kernels_reads_what_a_whole_parse_reads_of_them() {
    let only = Only::kernels(["a", "c"]);
    let mut table = Table::default();
    for k in ["a", "b", "c", "d"] {
        table.apply(&busy_update(k));
    }
    let bad = line("c", 3, "").replace("\"runs\":1", "\"runs\":-1");
    let second_a = line("a", 21, "");
    for text in [
        table.render(),
        table.render_paired(JournalId(7)),
        // A bad record of a wanted kernel, a second record of a search,
        // one a line each: named as a whole parse names them.
        table
            .render()
            .replacen("\n]}", &format!(",\n{bad},\n{second_a}\n]}}"), 1),
        // Records written by another tool, one a line but not starting
        // as gridsel starts them (a field first, a space): parsed, and
        // kept only when of a wanted kernel.
        table.render().replace("{\"kernel\":", "{ \"kernel\":"),
        table
            .render()
            .replace("{\"kernel\":", "{\"note\":1,\"kernel\":"),
        // Records over several lines, and on one: parsed whole.
        table.render().replace(",\"device\"", ",\n\"device\""),
        table.render().replace(",\n{", ", {"),
    ] {
        let read = parse_only(&text, &only).unwrap();
        assert_eq!(
            (read.table, read.dropped),
            parsed_whole(&text, &only),
            "{text}"
        );
    }
    let read = parse_only(&table.render(), &only).unwrap();
    let kernels: Vec<&str> = read
        .table
        .records()
        .map(|r| r.key.kernel.as_str())
        .collect();
    assert_eq!(kernels, ["a", "c"]);
    assert_eq!(read.journal, None);
    let paired = parse_only(&table.render_paired(JournalId(7)), &only).unwrap();
    assert_eq!(paired.journal, Some(JournalId(7)));
    // Another kernel's broken line is not read, so costs nothing; a
    // store that is no store, or of another version, reads as `parse`.
    let broken = table
        .render()
        .replacen("{\"kernel\":\"b\"", "{\"kernel\":\"b\" oops", 1);
    assert_eq!(parse_only(&broken, &only).unwrap().table.len(), 2);
    assert!(matches!(
        parse_only("notes\n", &only),
        Err(StoreError::NotAStore(_))
    ));
    let v2 = table
        .render()
        .replacen("\"version\": 3", "\"version\": 2", 1);
    assert!(parse_only(&v2, &only).unwrap().table.is_empty());
    assert_eq!(parse_only("", &only).unwrap(), Contents::default());
}

#[test]
fn a_reader_of_some_kernels_reads_only_their_journal_lines_by_the_same_rules() {
    let only = Only::kernels(["a"]);
    let id = JournalId(42);
    let (a, b) = (
        journal_line(&busy_update("a")),
        journal_line(&busy_update("b")),
    );
    let bad = a.replace("\"runs\":1", "\"runs\":-1");
    let torn = &a[..a.len() / 2];
    let text = format!("{}{a}{b}{bad}{b}not json\n{torn}", journal_header(id));
    let journal = parse_journal_only(text.as_bytes(), &only).unwrap();
    assert_eq!(journal.store, Some(id));
    assert_eq!(journal.updates.len(), 1);
    assert_eq!(journal.updates[0].key.kernel, "a");
    assert_eq!(journal.complete, text.len() - torn.len());
    // Line numbers are the file's.
    assert!(
        journal.dropped[0].starts_with("journal line 4 (kernel a): "),
        "{:?}",
        journal.dropped
    );
    assert!(
        journal.dropped[1].starts_with("journal line 6: "),
        "{:?}",
        journal.dropped
    );
    assert_eq!(journal.dropped.len(), 2);
    // Lines of another tool's spacing: parsed, and kept only when of a
    // wanted kernel.
    let spaced = format!("{}{a}{b}", journal_header(id)).replace("{\"kernel\":", "{ \"kernel\":");
    let journal = parse_journal_only(spaced.as_bytes(), &only).unwrap();
    let kernels: Vec<&str> = journal
        .updates
        .iter()
        .map(|u| u.key.kernel.as_str())
        .collect();
    assert_eq!(kernels, ["a"]);
}

#[test]
fn a_pinned_record_without_a_build_pins_every_build() {
    let mut table = Table::default();
    let mut measured = busy_update("k");
    measured.settled = [true, true];
    table.apply(&measured);
    assert_eq!(table.for_launch(&key(21)).unwrap().key.build, BUILD);
    // Unpinned without a build: another build's search, not this one's.
    let mut any = Update::new(key(21).any_build());
    any.tally.runs = 1;
    table.apply(&any);
    assert_eq!(table.for_launch(&key(21)).unwrap().key.build, BUILD);
    any.pinned = Some(Candidate::Grid(Geometry::new(64, 8)));
    table.apply(&any);
    let pinned = table.for_launch(&key(21)).unwrap();
    assert_eq!((pinned.key.build.as_str(), pinned.pinned), ("", any.pinned));
}

#[test]
fn eviction_drops_the_least_recently_used() {
    let mut table = Table::default();
    for c in 1..=50 {
        let mut u = Update::new(key(c));
        u.tally.used = u64::from(c);
        u.tally.runs = 1;
        u.samples = vec![(Candidate::Auto, Kind::Warm, 1000)];
        table.apply(&u);
    }
    let size = table.render().len() as u64;
    let gone = table.evict_to(size / 2, 50);
    assert!((25..30).contains(&gone), "{gone}");
    assert!(table.render().len() as u64 <= size / 2);
    assert!(table.get(&key(50)).is_some() && table.get(&key(1)).is_none());
    assert_eq!(table.evict_to(u64::MAX, 50), 0);
}

/// A record stamped far in the future (`used` = 2^64-1) would outlive
/// every record in use: it goes first, and an update gives a record in
/// use its time back.
#[test]
fn a_record_used_in_the_far_future_goes_first_and_use_mends_it() {
    let now = 1_800_000_000;
    let mut table = Table::default();
    for c in 1..=10 {
        let mut u = Update::new(key(c));
        u.tally.used = now - 100 + u64::from(c);
        u.tally.runs = 1;
        u.samples = vec![(Candidate::Auto, Kind::Warm, 1000)];
        table.apply(&u);
    }
    let mut future = table.get(&key(1)).unwrap().clone();
    future.key = key(11);
    future.tally.used = u64::MAX;
    table.insert(future.clone());
    // Within the clocks' slack: a time of use like any other.
    future.key = key(12);
    future.tally.used = now + CLOCK_SLACK;
    table.insert(future);
    let size = table.render().len() as u64;
    assert_eq!(table.clone().evict_to(size - 1, now), 1);
    let mut evicted = table.clone();
    evicted.evict_to(size - 1, now);
    assert!(evicted.get(&key(11)).is_none() && evicted.get(&key(1)).is_some());
    let mut two = table.clone();
    two.evict_to(size - 100, now);
    assert!(two.get(&key(12)).is_some());
    // A process's update mends the time.
    let mut u = Update::new(key(11));
    u.tally.used = now;
    table.apply(&u);
    assert_eq!(table.get(&key(11)).unwrap().tally.used, now);
    let mut u = Update::new(key(12));
    u.tally.used = now;
    table.apply(&u);
    assert_eq!(table.get(&key(12)).unwrap().tally.used, now + CLOCK_SLACK);
}

#[test]
fn what_a_session_added_applies_over_what_others_added_meanwhile() {
    let k = key(21).with_kernel("k");
    let mut initial = Record::new(k.clone());
    initial.merge(&busy_update("k"));
    // The session's runs: two processes, new samples past the kept eight,
    // a candidate the store had no samples of, the cold plan finished.
    let mut session = Update::new(k.clone());
    session.tally = Tally {
        runs: 2,
        used: 1_900_000_000,
        ..initial.tally
    };
    session.explored = [3, 1];
    session.settled = [true, true];
    for ns in [7000, 7001, 7002] {
        session.samples.push((Candidate::Auto, Kind::Warm, ns));
    }
    session.samples.push((Candidate::Llvm, Kind::Cold, 6500));
    let mut after = initial.clone();
    after.merge(&session);
    let delta = Update::between(Some(&initial), &after);
    let mut again = initial.clone();
    again.merge(&delta);
    assert_eq!(again, after);
    assert_eq!(delta.tally.runs, 2);
    assert_eq!(delta.explored, [3, 1]);
    assert_eq!(delta.settled, [true, false]);
    assert_eq!(delta.samples.len(), 4, "{:?}", delta.samples);
    // Another process added to the store's record meanwhile: both count.
    let mut other = Update::new(k.clone());
    other.tally = Tally {
        runs: 1,
        ..initial.tally
    };
    other.samples.push((Candidate::Llvm, Kind::Warm, 3999));
    let mut now = initial.clone();
    now.merge(&other);
    now.merge(&delta);
    assert_eq!(now.tally.runs, initial.tally.runs + 3);
    let llvm = now
        .search
        .candidates
        .iter()
        .position(|&c| c == Candidate::Llvm);
    let llvm = &now.search.samples[llvm.unwrap()];
    assert!(llvm.warm.contains(&3999) && llvm.cold == [6500]);
    // The store was cleared meanwhile: only the session's samples come.
    let mut cleared = Record::new(k.clone());
    cleared.merge(&delta);
    let auto = cleared
        .search
        .candidates
        .iter()
        .position(|&c| c == Candidate::Auto);
    assert_eq!(
        cleared.search.samples[auto.unwrap()].warm,
        [7000, 7001, 7002]
    );
    assert_eq!(cleared.tally.runs, 2);
    // A search new to the store: all of it.
    let mut fresh = Record::new(k);
    fresh.merge(&Update::between(None, &after));
    assert_eq!(fresh.search, after.search);
}

/// The verified mark a tuning session sets or clears (`gridsel tune
/// --allow-teams-regions`) is part of the update it makes: applied to the
/// store's record as it is by then, it sets or clears the mark there, and
/// an update that did not change it leaves the store's as it is.
#[test]
fn an_update_carries_the_verified_mark_where_it_changed() {
    let k = key(21).with_kernel("region");
    let grid = Candidate::Grid(Geometry::new(64, 7));
    let mut initial = Record::new(k.clone());
    initial.merge(&busy_update("region"));
    let mut marked = initial.clone();
    marked.verified = Some(grid);
    let set = Update::between(Some(&initial), &marked);
    assert_eq!(set.verified, Some(Some(grid)));
    assert!(!set.is_empty());
    let mut store = initial.clone();
    store.merge(&set);
    assert_eq!(store, marked);
    // Unchanged: nothing to carry, and the store's mark stays.
    let same = Update::between(Some(&marked), &marked);
    assert!(same.verified.is_none() && same.is_empty());
    store.merge(&same);
    assert_eq!(store.verified, Some(grid));
    // Cleared by the session: cleared in the store.
    let cleared = Update::between(Some(&marked), &initial);
    assert_eq!(cleared.verified, Some(None));
    store.merge(&cleared);
    assert_eq!(store.verified, None);
    // A search new to the store comes with its mark.
    let mut fresh = Record::new(k);
    fresh.merge(&Update::between(None, &marked));
    assert_eq!(fresh, marked);
}

/// A search keeps the clock that timed it: written as `"clock": "gpu"`
/// (absent for the host, as every store before it), a clock this gridsel
/// does not know costs that record alone, and an update timed by another
/// clock replaces the record's samples when it brings some, and leaves
/// them when it brings none.
#[test]
fn samples_of_another_clock_replace_a_search_and_are_never_ranked_with_it() {
    let k = key(21);
    let mut host = Record::new(k.clone());
    host.merge(&busy_update("k"));
    assert_eq!(host.clock, Clock::Host);
    // A host process's follow-only update (no samples) leaves a GPU record.
    let mut gpu = Update::new(k.clone());
    gpu.clock = Clock::Gpu;
    gpu.tally.runs = 1;
    gpu.samples = vec![
        (Candidate::Auto, Kind::Warm, 90_000),
        (Candidate::Occupancy, Kind::Warm, 85_000),
    ];
    let mut record = host.clone();
    record.merge(&gpu);
    assert_eq!(record.clock, Clock::Gpu);
    let measured: Vec<(Candidate, Vec<u64>)> = record
        .search
        .candidates
        .iter()
        .zip(&record.search.samples)
        .filter(|(_, s)| !s.is_empty())
        .map(|(c, s)| (*c, [s.cold.clone(), s.warm.clone()].concat()))
        .collect();
    assert_eq!(
        measured,
        [
            (Candidate::Auto, vec![90_000]),
            (Candidate::Occupancy, vec![85_000])
        ]
    );
    assert_eq!(record.tally.runs, host.tally.runs + 1);
    let mut follower = Update::new(k.clone());
    follower.tally.runs = 1;
    let before = record.clone();
    record.merge(&follower);
    assert_eq!((record.clock, &record.search), (Clock::Gpu, &before.search));
    // Between records of two clocks: all of the later one's samples.
    let delta = Update::between(Some(&host), &before);
    assert_eq!(delta.clock, Clock::Gpu);
    assert_eq!(delta.samples.len(), 2);
    let mut again = host.clone();
    again.merge(&delta);
    assert_eq!(again.search, before.search);
    // The file: written and read back; a journal line too.
    let table = Table::parse(&store(&[line("k", 21, "\"clock\":\"gpu\",")])).unwrap();
    assert_eq!(table.records().next().unwrap().clock, Clock::Gpu);
    assert!(table.render().contains("\"clock\":\"gpu\""));
    assert!(
        !Table::parse(&store(&[line("k", 21, "")]))
            .unwrap()
            .render()
            .contains("clock")
    );
    let text = journal_header(JournalId(7)) + &journal_line(&gpu);
    let journal = parse_journal(text.as_bytes()).unwrap();
    assert_eq!(
        journal.updates[0].clock,
        Clock::Gpu,
        "{:?}",
        journal.dropped
    );
    let contents = parse(&store(&[
        line("a", 21, "\"clock\":\"sundial\","),
        line("b", 21, ""),
    ]))
    .unwrap();
    assert_eq!(contents.table.len(), 1);
    assert!(
        contents.dropped[0].starts_with("record 1 (kernel a): `sundial` is no clock"),
        "{:?}",
        contents.dropped
    );
}
