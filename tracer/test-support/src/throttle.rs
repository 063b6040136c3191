//! A blkio read throttle and a cold file, for the tests that trace reads under a limit (as root, cgroup v1): the
//! tracer's `limits` and `offcpu`, dc-pipeline's `limits` and `scenarios`.

use std::fs;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The whole disk a path is on, as `MAJ:MIN` (a partition's throttle is its disk's).
pub fn disk_of(path: &Path) -> String {
    let dev = fs::metadata(path).unwrap().dev();
    let mut node = PathBuf::from(format!(
        "/sys/dev/block/{}:{}",
        libc::major(dev),
        libc::minor(dev)
    ))
    .canonicalize()
    .unwrap();
    if node.join("partition").exists() {
        node.pop();
    }
    fs::read_to_string(node.join("dev"))
        .unwrap()
        .trim()
        .to_owned()
}

/// A blkio group with a read throttle, holding this process until dropped; dropping moves the process back to
/// the group it came from, lifts the throttle and removes the group.
pub struct Throttled {
    pub dir: PathBuf,
    home: PathBuf,
    device: String,
}

impl Throttled {
    /// `name` is the group's name, to which this process's id is added.
    pub fn enter(name: &str, device: &str, bps: u64) -> Throttled {
        let root = Path::new("/sys/fs/cgroup/blkio");
        let own = fs::read_to_string("/proc/self/cgroup").unwrap();
        let path = own
            .lines()
            .find_map(|l| l.split_once(":blkio:").map(|(_, p)| p.to_owned()))
            .expect("a blkio (cgroup v1) hierarchy");
        let dir = root.join(format!("{name}-{}", std::process::id()));
        fs::create_dir(&dir).unwrap();
        let t = Throttled {
            home: root.join(path.trim_start_matches('/')),
            dir,
            device: device.to_owned(),
        };
        fs::write(
            t.dir.join("blkio.throttle.read_bps_device"),
            format!("{device} {bps}"),
        )
        .unwrap();
        fs::write(t.dir.join("cgroup.procs"), std::process::id().to_string()).unwrap();
        t
    }
}

impl Drop for Throttled {
    fn drop(&mut self) {
        let _ = fs::write(
            self.home.join("cgroup.procs"),
            std::process::id().to_string(),
        );
        let _ = fs::write(
            self.dir.join("blkio.throttle.read_bps_device"),
            format!("{} 0", self.device),
        );
        let _ = fs::remove_dir(&self.dir);
    }
}

/// A file of `bytes` on the disk and out of the page cache: its reads go to the device.
pub fn cold_file(dir: &Path, bytes: u64) -> PathBuf {
    let p = dir.join("cold.bin");
    let mut f = fs::File::create(&p).unwrap();
    f.write_all(&vec![5u8; bytes as usize]).unwrap();
    f.sync_all().unwrap();
    let r = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    assert_eq!(r, 0);
    p
}

/// dd reading `file` in 128 KiB requests (buffered, or with `flag` ` iflag=direct`), as the traced command: exec'd
/// by the shell, so that the process traced and throttled is dd itself.
pub fn dd_read(file: &Path, flag: &str) -> Vec<String> {
    vec![
        "sh".to_owned(),
        "-c".to_owned(),
        format!(
            "exec dd if={} of=/dev/null bs=128k status=none{flag}",
            file.display()
        ),
    ]
}
