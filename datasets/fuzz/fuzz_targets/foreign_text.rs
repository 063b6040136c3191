//! `cargo +nightly fuzz run foreign_text`: the bpftrace, bcc and L41 readers never panic.

#![no_main]

use datasets::formats::{bpftrace, iobench};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for skip in [false, true] {
        bpftrace::read_text(&text, skip);
        bpftrace::read_json(&text, skip);
    }
    let _ = iobench::read(data);
});
