//! Tracepoint attach needs tracefs; on this project's machines it is not mounted at boot.

use std::path::Path;

use anyhow::{Context, Result, bail};

const TRACEFS: &str = "/sys/kernel/tracing";

/// Mounts tracefs at `/sys/kernel/tracing` unless it is already there.
pub fn ensure_mounted() -> Result<()> {
    if Path::new(TRACEFS).join("events").is_dir() {
        return Ok(());
    }
    let status = std::process::Command::new("mount")
        .args(["-t", "tracefs", "nodev", TRACEFS])
        .status()
        .context("running mount -t tracefs")?;
    if !status.success() {
        bail!("mount -t tracefs nodev {TRACEFS} failed ({status}); tracepoints cannot attach");
    }
    Ok(())
}
