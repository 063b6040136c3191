//! bpftrace as the tracer tests' independent oracle (a script's maps, counted by the kernel beside dc-trace), and
//! the BPF objects a process holds (what is left attached).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::workload::COMM;

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

    /// The runs of bpftrace's programs that the kernel skipped because a BPF program was already running on that CPU
    /// (each program's `recursion_misses`, which the kernel keeps for tracepoint programs too since 6.7): what the
    /// oracle's maps may miss, as dc-trace's summary says what its own may.
    pub fn skipped_runs(&self) -> u64 {
        let proc = format!("/proc/{}", self.child.id());
        let mut skipped = 0;
        for entry in std::fs::read_dir(format!("{proc}/fd")).expect("bpftrace's descriptors") {
            let entry = entry.unwrap();
            let Ok(target) = std::fs::read_link(entry.path()) else {
                continue;
            };
            if target.to_string_lossy() != "anon_inode:bpf-prog" {
                continue;
            }
            let fd = entry.file_name();
            let info = std::fs::read_to_string(format!("{proc}/fdinfo/{}", fd.to_string_lossy()))
                .expect("a BPF program's fdinfo");
            skipped += info
                .lines()
                .find_map(|l| l.strip_prefix("recursion_misses:"))
                .map(|n| n.trim().parse::<u64>().expect("a count"))
                .expect("fdinfo names recursion_misses (Linux 5.12 on)");
        }
        skipped
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
