//! The VM's two disks: an ext4 image the workload runs on, and a raw disk the guest writes its
//! results to as one tar archive.

use std::path::Path;
use std::process::Command;

/// A sparse file of `mib` MiB formatted as ext4, holding a copy of `content`.
pub fn ext4(image: &Path, mib: u64, content: &Path) -> Result<(), String> {
    raw(image, mib)?;
    run(Command::new("mkfs.ext4")
        .args(["-q", "-F", "-L", "dc-vm", "-d"])
        .arg(content)
        .arg(image))
}

/// A sparse file of `mib` MiB of zeros.
pub fn raw(image: &Path, mib: u64) -> Result<(), String> {
    let file = std::fs::File::create(image).map_err(|e| format!("{}: {e}", image.display()))?;
    file.set_len(mib << 20)
        .map_err(|e| format!("{}: {e}", image.display()))
}

/// Unpacks the tar archive the guest wrote at the start of `image`.
pub fn untar(image: &Path, into: &Path) -> Result<(), String> {
    std::fs::create_dir_all(into).map_err(|e| format!("{}: {e}", into.display()))?;
    run(Command::new("tar")
        .arg("-xf")
        .arg(image)
        .arg("-C")
        .arg(into))
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let shown = format!("{cmd:?}");
    let output = cmd
        .output()
        .map_err(|e| format!("running {shown} (see scripts/setup.sh): {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "{shown} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(())
}
