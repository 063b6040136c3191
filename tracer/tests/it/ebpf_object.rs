//! The eBPF object is committed (tracer/src/bpf/tracer-ebpf.bpfel.o), so that building dc-trace needs no eBPF
//! toolchain. This keeps it true to its source: the object rebuilt from tracer-ebpf, here and now, must be identical.

use std::path::Path;
use std::process::Command;

#[test]
fn committed_object_is_the_one_tracer_ebpf_builds() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let scratch = tempfile::tempdir().unwrap();
    let rebuilt = scratch.path().join("tracer-ebpf.bpfel.o");
    let status = Command::new(root.join("scripts/build-ebpf.sh"))
        .arg(&rebuilt)
        .env("DC_EBPF_TARGET_DIR", root.join("target/ebpf"))
        .status()
        .expect("running scripts/build-ebpf.sh");
    assert!(
        status.success(),
        "scripts/build-ebpf.sh failed ({status}): the eBPF toolchain comes from `scripts/setup.sh --test`"
    );
    let committed = std::fs::read(root.join("tracer/src/bpf/tracer-ebpf.bpfel.o"))
        .expect("the committed eBPF object tracer/src/bpf/tracer-ebpf.bpfel.o");
    let rebuilt = std::fs::read(&rebuilt).unwrap();
    assert!(
        committed == rebuilt,
        "tracer/src/bpf/tracer-ebpf.bpfel.o ({} bytes) is not what tracer-ebpf builds ({} bytes): \
         run scripts/build-ebpf.sh and commit the object with its source",
        committed.len(),
        rebuilt.len()
    );
}
