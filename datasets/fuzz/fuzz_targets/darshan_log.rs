//! `cargo +nightly fuzz run darshan_log`: the Darshan reader never panics, and an error points
//! inside the file.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = datasets::formats::darshan::read(data) {
        assert!(e.offset <= data.len() as u64, "{e:?}");
    }
});
