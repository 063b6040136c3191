//! A VM that cannot boot, or does not power off, fails with QEMU's words and its console.

use std::path::PathBuf;
use std::time::Duration;

use test_support::vm::{SERIES_6_1, Vm, work};

use super::TMP;
use super::debian61::TIMEOUT;

#[test]
fn a_vm_that_cannot_boot_fails_with_qemus_words() {
    let _machine = test_support::machine();
    let mut vm = Vm::new(SERIES_6_1, "", TIMEOUT).unwrap_or_else(|e| panic!("{e}"));
    vm.kernel.image = PathBuf::from("/nonexistent/vmlinuz");
    let Err(e) = vm.run(&work(TMP, "initramfs-bare"), &work(TMP, "noboot")) else {
        panic!("a VM without a kernel booted");
    };
    assert!(e.contains("QEMU exited with exit status: 1"), "{e}");
    assert!(e.contains("/nonexistent/vmlinuz"), "{e}");
}

#[test]
fn a_vm_that_does_not_power_off_is_killed_at_the_timeout_with_its_console() {
    let _machine = test_support::machine();
    let vm = Vm::new(SERIES_6_1, "step hang sleep 600\n", Duration::from_secs(3))
        .unwrap_or_else(|e| panic!("{e}"));
    let Err(e) = vm.run(&work(TMP, "initramfs-bare"), &work(TMP, "timeout")) else {
        panic!("a VM stuck in sleep 600 powered off within 3 s");
    };
    assert!(
        e.contains("the VM did not power off within 3 s and was killed"),
        "{e}"
    );
    assert!(e.contains("console lines"), "{e}");
}
