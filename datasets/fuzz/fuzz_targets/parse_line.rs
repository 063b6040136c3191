//! `cargo +nightly fuzz run parse_line`: the line parser never panics, and whatever it accepts
//! writes back to the same event.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = datasets::parse::check_roundtrip(data) {
        panic!("{e}");
    }
});
