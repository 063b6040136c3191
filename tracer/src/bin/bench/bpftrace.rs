//! bpftrace as the benchmarks' baseline: a script run with `-f json`, whose `printf` lines are
//! counted as events and whose `lost_events` are summed, from a thread that reads its output.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// A running bpftrace whose script printed `ready` in its `BEGIN` probe: its probes are attached.
pub struct Bpftrace {
    child: Child,
    /// Counts (printf lines, lost events) until bpftrace's output ends.
    counter: JoinHandle<(u64, u64)>,
}

impl Bpftrace {
    /// Starts `bpftrace -f json -e script` with the environment `env`, its stderr in
    /// `dir/bpftrace.err`, and waits until it is ready.
    pub fn start(script: &str, env: &[(&str, &str)], dir: &Path) -> Result<Bpftrace> {
        let err: PathBuf = dir.join("bpftrace.err");
        let mut child = Command::new("bpftrace")
            .args(["-f", "json", "-e", script])
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&err)?)
            .spawn()
            .context("running bpftrace")?;
        let stdout = child.stdout.take().context("bpftrace stdout")?;
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let counter = std::thread::spawn(move || {
            let (mut events, mut lost) = (0u64, 0u64);
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if line.contains("\"lost_events\"") {
                    let v: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
                    lost += v["data"]["events"].as_u64().unwrap_or(0);
                } else if line.contains("\"ready\\n\"") {
                    let _ = ready_tx.send(());
                } else if line.starts_with("{\"type\": \"printf\"") {
                    events += 1;
                }
            }
            (events, lost)
        });
        if ready_rx.recv().is_err() {
            let status = child.wait()?;
            let said = std::fs::read_to_string(&err).unwrap_or_default();
            bail!(
                "bpftrace exited ({status}) before it was ready: {}",
                said.trim()
            );
        }
        Ok(Bpftrace { child, counter })
    }

    /// Stops bpftrace with SIGINT; returns the events it printed and those it lost.
    pub fn interrupt(mut self) -> Result<(u64, u64)> {
        // SAFETY: kill takes no pointers.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
        self.child.wait()?;
        Ok(self.counter.join().expect("bpftrace's reader thread"))
    }

    /// Waits up to `limit` for the script to exit by itself (`exit()`), then counts as
    /// [`Bpftrace::interrupt`] does.
    pub fn wait_exit(mut self, limit: Duration) -> Result<(u64, u64)> {
        let deadline = Instant::now() + limit;
        while self.child.try_wait()?.is_none() {
            if Instant::now() > deadline {
                let _ = self.child.kill();
                self.child.wait()?;
                bail!("bpftrace did not exit within {} s", limit.as_secs());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(self.counter.join().expect("bpftrace's reader thread"))
    }
}
