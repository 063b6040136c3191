//! One boot of the kernel under `qemu-system-x86_64 -accel tcg`, serial console to a file.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Console lines quoted in an error.
const TAIL_LINES: usize = 60;

pub struct Boot<'a> {
    pub kernel: &'a Path,
    pub initramfs: &'a Path,
    /// Attached as virtio disks, in order: `/dev/vda`, `/dev/vdb`, ...
    pub disks: &'a [PathBuf],
    pub console: &'a Path,
    pub timeout: Duration,
    pub memory_mib: u64,
    /// `-icount shift=0`: a nanosecond of guest time per instruction.
    pub icount: bool,
}

impl Boot<'_> {
    /// Runs the VM until it powers off. Returns its wall time and its console text.
    pub fn run(&self) -> Result<(Duration, String), String> {
        let log = std::fs::File::create(self.console)
            .map_err(|e| format!("{}: {e}", self.console.display()))?;
        let mut cmd = Command::new("qemu-system-x86_64");
        cmd.args(["-accel", "tcg", "-cpu", "max", "-m"])
            .arg(self.memory_mib.to_string())
            .args(["-nographic", "-no-reboot", "-net", "none"])
            .arg("-kernel")
            .arg(self.kernel)
            .arg("-initrd")
            .arg(self.initramfs)
            .args(["-append", "console=ttyS0 quiet panic=-1"]);
        if self.icount {
            cmd.args(["-icount", "shift=0"]);
        }
        for disk in self.disks {
            cmd.arg("-drive")
                .arg(format!("file={},format=raw,if=virtio", disk.display()));
        }
        let shown = format!("{cmd:?}");
        let start = Instant::now();
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log)
            .spawn()
            .map_err(|e| {
                format!("cannot start {shown}: {e} (package qemu-system-x86, see scripts/setup.sh)")
            })?;
        let status = loop {
            if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
                break status;
            }
            if start.elapsed() > self.timeout {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "the VM did not power off within {} s and was killed.\ncommand: {shown}\n{}",
                    self.timeout.as_secs(),
                    tail(self.console)
                ));
            }
            std::thread::sleep(Duration::from_millis(200));
        };
        let wall = start.elapsed();
        let console = std::fs::read_to_string(self.console)
            .map(|s| s.replace('\r', ""))
            .unwrap_or_default();
        if !status.success() {
            return Err(format!(
                "QEMU exited with {status}.\ncommand: {shown}\n{}",
                tail(self.console)
            ));
        }
        Ok((wall, console))
    }
}

/// The last lines of the console log, framed for a panic message.
pub fn tail(console: &Path) -> String {
    let text = std::fs::read(console)
        .map(|b| String::from_utf8_lossy(&b).replace('\r', ""))
        .unwrap_or_else(|e| format!("(no console log at {}: {e})", console.display()));
    let lines: Vec<&str> = text.lines().collect();
    let from = lines.len().saturating_sub(TAIL_LINES);
    format!(
        "---- last {} console lines ({}) ----\n{}\n---- end of console ----",
        lines.len() - from,
        console.display(),
        lines[from..].join("\n")
    )
}
