//! A logger that keeps every line, for tests that check what gridsel logs
//! in-process. One per test binary (the logger is process-wide): tests
//! running in parallel share it, so each test picks out its own lines.

use std::sync::Mutex;

pub struct Capture(Mutex<Vec<(log::Level, String)>>);

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata) -> bool {
        true
    }
    fn log(&self, record: &log::Record) {
        self.0
            .lock()
            .unwrap()
            .push((record.level(), record.args().to_string()));
    }
    fn flush(&self) {}
}

static CAPTURE: Capture = Capture(Mutex::new(Vec::new()));

/// Installs the capture (once per process) at debug level.
pub fn install() -> &'static Capture {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        log::set_logger(&CAPTURE).unwrap();
        log::set_max_level(log::LevelFilter::Debug);
    });
    &CAPTURE
}

impl Capture {
    /// Forgets the lines logged so far.
    #[allow(dead_code)]
    pub fn clear(&self) {
        self.0.lock().unwrap().clear();
    }

    /// The lines logged so far at `level` that contain `needle`.
    pub fn lines(&self, level: log::Level, needle: &str) -> Vec<String> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|(l, m)| *l == level && m.contains(needle))
            .map(|(_, m)| m.clone())
            .collect()
    }
}
