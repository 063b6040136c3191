//! What the tracer's integration tests share: the test workload, bpftrace as an independent
//! oracle, the BPF objects a process holds, and waiting for a trace, partial or whole, to show
//! what a workload did.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard, mpsc};
use std::time::{Duration, Instant};

use datasets::read::{ReadOptions, read_all};
use tracer::CollectOptions;

/// Held by every test that needs root, for its whole run. They share the machine (kptr_restrict, blkio throttles,
/// bpftrace oracles that count by command name) and this process (its BPF fds, its SIGINT handler, its cgroup), which
/// tests of other modules check or change: in one test binary they would otherwise overlap.
pub fn machine() -> MutexGuard<'static, ()> {
    static MACHINE: Mutex<()> = Mutex::new(());
    MACHINE.lock().unwrap_or_else(|e| e.into_inner())
}

pub const TESTLOAD: &str = env!("CARGO_BIN_EXE_dc-trace-testload");
/// What the kernel keeps of the test workload's name (TASK_COMM_LEN - 1 bytes).
pub const COMM: &str = "dc-trace-testlo";

/// Options that trace `dc-trace-testload DIR ARGS...` into `output`, with every layer.
pub fn trace_testload(
    output: &Path,
    dir: &Path,
    args: impl IntoIterator<Item = String>,
) -> CollectOptions {
    let mut command = vec![TESTLOAD.to_owned(), dir.to_str().unwrap().to_owned()];
    command.extend(args);
    CollectOptions::command(output, command)
}

/// How long bpftrace may take to attach and print "ready" before it is restarted.
const ORACLE_DEADLINE: Duration = Duration::from_secs(30);
/// How long bpftrace may take to print its maps and exit once asked (it detaches every probe,
/// which under load can take long), and how often it is asked again meanwhile.
const ORACLE_EXIT: Duration = Duration::from_secs(180);
const ORACLE_ASK: Duration = Duration::from_secs(15);
const ORACLE_ATTEMPTS: usize = 3;

/// A bpftrace script running; its BEGIN probe must print `ready`.
pub struct Oracle {
    child: Child,
    lines: mpsc::Receiver<String>,
}

/// bpftrace's maps: name → key (`a,b` for several, empty for none) → value.
pub type Maps = BTreeMap<String, BTreeMap<String, i64>>;

impl Oracle {
    /// Starts bpftrace and waits for its BEGIN probe. Rarely, under load, bpftrace 0.17 attaches
    /// but never prints from BEGIN; such an instance is killed and started again, and the test
    /// fails after ORACLE_ATTEMPTS of them rather than hanging.
    pub fn start(script: &str) -> Oracle {
        assert_eq!(COMM, &"dc-trace-testload"[..15]);
        for _ in 0..ORACLE_ATTEMPTS {
            let mut child = Command::new("bpftrace")
                .args(["-f", "json", "-e", script])
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .expect("bpftrace (setup.sh installs it)");
            let stdout = child.stdout.take().expect("piped stdout");
            let (tx, lines) = mpsc::channel();
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    if tx.send(line.expect("reading bpftrace's output")).is_err() {
                        break;
                    }
                }
            });
            let deadline = Instant::now() + ORACLE_DEADLINE;
            loop {
                match lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                    Ok(line) if line.contains("ready") => return Oracle { child, lines },
                    Ok(_) => {}
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        child.kill().unwrap();
                        child.wait().unwrap();
                        break;
                    }
                    Err(mpsc::RecvTimeoutError::Disconnected) => {
                        let status = child.wait();
                        panic!("bpftrace exited ({status:?}) before it was ready");
                    }
                }
            }
        }
        panic!(
            "bpftrace did not print from BEGIN within {ORACLE_DEADLINE:?}, {ORACLE_ATTEMPTS} times"
        );
    }

    /// Stops bpftrace and returns its maps.
    pub fn stop(mut self) -> Maps {
        let mut maps = Maps::new();
        let start = Instant::now();
        let mut asked = None;
        loop {
            if asked.is_none_or(|t: Instant| t.elapsed() >= ORACLE_ASK) {
                unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
                asked = Some(Instant::now());
            }
            let line = match self.lines.recv_timeout(ORACLE_ASK) {
                Ok(line) => line,
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) if start.elapsed() < ORACLE_EXIT => continue,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    panic!("bpftrace did not exit within {ORACLE_EXIT:?} of SIGINT");
                }
            };
            let v: serde_json::Value = serde_json::from_str(line.trim()).unwrap_or_default();
            if v["type"] == "map" {
                for (name, m) in v["data"].as_object().unwrap() {
                    let parsed = match m.as_object() {
                        Some(m) => m
                            .iter()
                            .map(|(k, n)| (k.clone(), n.as_i64().unwrap_or(i64::MAX)))
                            .collect(),
                        None => BTreeMap::from([(String::new(), m.as_i64().unwrap())]),
                    };
                    maps.insert(name.clone(), parsed);
                }
            }
        }
        assert!(self.child.wait().unwrap().success());
        maps
    }
}

/// A child process that is killed when the test ends, also when it fails.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Oracle {
    /// A test that fails before stopping its oracle leaves no bpftrace behind.
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The BPF objects (links, programs, maps) and perf events this process holds, by kind. Every
/// attachment dc-trace makes lives in one of them (it pins none), so when none is left, no link
/// is left attached. A system-wide listing of links would also see other users of BPF on the
/// machine.
pub fn bpf_fds() -> BTreeMap<String, usize> {
    let mut kinds = BTreeMap::new();
    for entry in std::fs::read_dir("/proc/self/fd").unwrap() {
        let Ok(target) = std::fs::read_link(entry.unwrap().path()) else {
            continue;
        };
        let target = target.to_string_lossy().into_owned();
        if target.starts_with("anon_inode:bpf") || target == "anon_inode:[perf_event]" {
            *kinds.entry(target).or_default() += 1;
        }
    }
    kinds
}

/// A fresh ext4 file system with a journal, in an image file of a temporary directory, on a loop
/// device and mounted: the root file system here has none, so jbd2 sees nothing there. Dropping
/// it (also when the test panics) unmounts it and detaches the loop device.
pub struct JournalledExt4 {
    dir: tempfile::TempDir,
    device: String,
}

impl JournalledExt4 {
    pub fn new(mib: u64, journal_mib: u64) -> JournalledExt4 {
        let dir = tempfile::tempdir().unwrap();
        let image = dir.path().join("ext4.img");
        std::fs::File::create(&image)
            .unwrap()
            .set_len(mib << 20)
            .unwrap();
        run(Command::new("mkfs.ext4")
            .args(["-q", "-F", "-J", &format!("size={journal_mib}")])
            .arg(&image));
        let out = Command::new("losetup")
            .args(["--find", "--show"])
            .arg(&image)
            .output()
            .expect("losetup (util-linux)");
        assert!(out.status.success(), "losetup: {out:?}");
        let device = String::from_utf8(out.stdout).unwrap().trim().to_owned();
        let fs = JournalledExt4 { dir, device };
        std::fs::create_dir(fs.mount_point()).unwrap();
        run(Command::new("mount").arg(&fs.device).arg(fs.mount_point()));
        fs
    }

    /// Where it is mounted.
    pub fn mount_point(&self) -> std::path::PathBuf {
        self.dir.path().join("mnt")
    }
}

impl Drop for JournalledExt4 {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.mount_point()).status();
        let _ = Command::new("losetup").args(["-d", &self.device]).status();
    }
}

fn run(cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(out.status.success(), "{cmd:?}: {out:?}");
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
