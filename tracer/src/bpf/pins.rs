//! A private bpffs directory where the main object's maps are pinned, so that the fentry copies
//! of the object (one per kernel function) share them.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// A private bpffs directory where the main object's shared maps are pinned while fentry copies
/// load; removed once they have.
pub struct PinDir(PathBuf);

impl PinDir {
    pub fn create() -> Result<PinDir> {
        let root = Path::new("/sys/fs/bpf");
        if !is_bpffs(root) {
            std::fs::create_dir_all(root).ok();
            let status = std::process::Command::new("mount")
                .args(["-t", "bpf", "bpf", "/sys/fs/bpf"])
                .status()
                .context("running mount -t bpf")?;
            if !status.success() {
                bail!("mount -t bpf bpf /sys/fs/bpf failed ({status})");
            }
        }
        let dir = root.join(format!("dc-trace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(PinDir(dir))
    }

    pub fn path(&self, map: &str) -> PathBuf {
        self.0.join(map)
    }
}

impl Drop for PinDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn is_bpffs(p: &Path) -> bool {
    std::fs::read_to_string("/proc/mounts").is_ok_and(|m| {
        m.lines().any(|l| {
            let mut it = l.split_whitespace();
            it.nth(1) == Some(&*p.to_string_lossy()) && it.next() == Some("bpf")
        })
    })
}
