//! The tracer's test workload (`dc-trace-testload`) as the tests see it: the name the kernel gives it, a child killed
//! when the test ends, and waiting for a trace, partial or whole, to show what it did. Its path and the options that
//! trace it stay in the tracer's test binary, the only one that knows it (`CARGO_BIN_EXE_dc-trace-testload`).

use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

use datasets::read::{ReadOptions, read_all};

/// What the kernel keeps of the test workload's name (TASK_COMM_LEN - 1 bytes).
pub const COMM: &str = "dc-trace-testlo";

/// A child process that is killed when the test ends, also when it fails.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// How long the machine may take to do what a test waits for, however busy it is.
pub const PATIENCE: Duration = Duration::from_secs(120);

/// Waits for `done`, failing the test past [`PATIENCE`].
pub fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !done() {
        assert!(Instant::now() < deadline, "waited too long for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `openat` events, read from a trace (a partial one included), on the files whose path `keep`
/// accepts.
pub fn opens_where(trace: &Path, keep: impl Fn(&str) -> bool) -> usize {
    let opts = ReadOptions {
        salvage: true,
        ..ReadOptions::default()
    };
    let t = read_all(&[trace.to_path_buf()], opts).unwrap();
    t.events
        .iter()
        .filter(|e| e.cat == "sys" && e.name == "openat")
        .filter(|e| t.strings.file_of(e).is_some_and(&keep))
        .count()
}
