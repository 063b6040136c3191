//! Trace size: a BGZF trace at the writer's default level is no larger than `gzip -6` (GNU gzip,
//! the oracle) of the same text, on real traces rewritten by the writer.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use datasets::read::{ReadOptions, read_all};
use datasets::write::Header;

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(rel)
}

fn gzip6(path: &Path) -> u64 {
    let out = Command::new("gzip")
        .args(["-6", "-c"])
        .arg(path)
        .output()
        .expect("gzip runs");
    assert!(out.status.success(), "gzip -6 {}", path.display());
    out.stdout.len() as u64
}

#[test]
fn default_level_is_no_larger_than_gzip_6_of_the_same_text() {
    for (name, events) in [
        ("datacrumbs/case-read-simple.trace.pfw.gz", 216_506),
        ("dftracer/dlio-unet3d.pfw.gz", 93_894),
    ] {
        let src = read_all(&[fixture(name)], ReadOptions::default()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let header = || Header::new("datasets-test", "0");
        let plain = dir.path().join("trace.pfw");
        let gz = dir.path().join("trace.pfw.gz");
        let text = datasets::synth::repeat_trace(&src, 1, &plain, header()).unwrap();
        let file = datasets::synth::repeat_trace(&src, 1, &gz, header()).unwrap();
        assert_eq!(file.events, events, "{name}");

        let mut unzipped = Vec::new();
        flate2::read::MultiGzDecoder::new(std::fs::File::open(&gz).unwrap())
            .read_to_end(&mut unzipped)
            .unwrap();
        assert_eq!(unzipped, std::fs::read(&plain).unwrap(), "{name}");
        assert_eq!(file.text_bytes, text.text_bytes);

        let oracle = gzip6(&plain);
        let per_event = |bytes: u64| bytes as f64 / events as f64;
        assert!(
            file.file_bytes <= oracle,
            "{name}: {} bytes ({:.2} B/event) against gzip -6's {oracle} ({:.2} B/event)",
            file.file_bytes,
            per_event(file.file_bytes),
            per_event(oracle)
        );
    }
}
