//! A fresh journalled ext4 for the tests that need jbd2 to see their writes: the root file system here has no
//! journal.

use std::path::PathBuf;
use std::process::Command;

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
    pub fn mount_point(&self) -> PathBuf {
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
