//! Tells the tests whether they are built by root: `cfg(dc_root)` is set when the effective user is root, and the
//! tests that need root (eBPF, cgroups, mounts) carry `#[cfg_attr(not(dc_root), ignore = "needs root")]`, so that
//! `cargo test` run by another user runs the rest and counts these as ignored instead of failing them. Run as root,
//! they run and fail when BPF does not work: nothing is skipped quietly. pipelines' build script is this one.

pub fn main() {
    println!("cargo::rustc-check-cfg=cfg(dc_root)");
    // A user's build and root's (sudo) differ in these; the uid itself is no input cargo can watch.
    println!("cargo::rerun-if-env-changed=USER");
    println!("cargo::rerun-if-env-changed=SUDO_UID");
    let status = std::fs::read_to_string("/proc/self/status")
        .unwrap_or_else(|e| panic!("/proc/self/status: {e} (the tests need Linux)"));
    let euid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1))
        .unwrap_or_else(|| panic!("/proc/self/status: no effective uid on its `Uid:` line"));
    if euid == "0" {
        println!("cargo::rustc-cfg=dc_root");
    }
}
