//! Rows from DFTracer traces: POSIX calls by default, any layer with `--rows`, counted and summed against the raw
//! lines by `zcat | grep | awk`, which never goes through the datasets reader.

use std::io::Write;
use std::path::PathBuf;
use std::process::Command;

use features::{BuildOptions, FeatureKind, FeatureMatrix, build};

fn trace(name: &str) -> PathBuf {
    PathBuf::from(format!(
        "{}/../datasets/fixtures/dftracer/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
}

/// (lines, sum of `args.ret`) of the POSIX events named `name`, by `zcat | grep | awk`.
fn grep_ret(name: &str, op: &str) -> (u64, i64) {
    let script = format!(
        "zcat -f {} | grep -F '\"name\":\"{op}\",\"cat\":\"POSIX\"' | grep -o '\"ret\":\"*[0-9-]*' \
         | tr -d '\"ret:' | awk '{{s += $1}} END {{printf \"%d %.0f\", NR, s}}'",
        trace(name).display()
    );
    let out = Command::new("sh").args(["-c", &script]).output().unwrap();
    assert!(out.status.success(), "{script}");
    let text = String::from_utf8(out.stdout).unwrap();
    let mut fields = text.split_whitespace().map(|f| f.parse::<i64>().unwrap());
    (fields.next().unwrap() as u64, fields.next().unwrap())
}

/// Lines of cat `cat`, by `zcat | grep -c`.
fn grep_cat(name: &str, cat: &str) -> usize {
    let script = format!(
        "zcat -f {} | grep -c -F '\"cat\":\"{cat}\"'",
        trace(name).display()
    );
    let out = Command::new("sh").args(["-c", &script]).output().unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

fn rows_of(m: &FeatureMatrix, op: &str) -> Vec<usize> {
    (0..m.n_rows()).filter(|&i| m.op[i] == op).collect()
}

fn size_sum(m: &FeatureMatrix, rows: &[usize]) -> i64 {
    rows.iter().map(|&i| m.size[i].unwrap()).sum()
}

fn assert_time_accounted(m: &FeatureMatrix) {
    for i in 0..m.n_rows() {
        let excl: f64 = m
            .features
            .iter()
            .filter(|f| f.kind == FeatureKind::ExclusiveNs)
            .map(|f| f.values[i])
            .sum();
        assert_eq!(m.self_ns[i] + excl as u64, m.dur_ns[i], "row {i}");
    }
}

#[test]
fn unet3d_posix_reads_are_rows_with_their_sizes() {
    let m = build(&[trace("dlio-unet3d.pfw.gz")], &BuildOptions::default()).unwrap();
    let reads = rows_of(&m, "read");
    let (lines, bytes) = grep_ret("dlio-unet3d.pfw.gz", "read");
    assert_eq!(reads.len() as u64, lines);
    assert_eq!(size_sum(&m, &reads), bytes);
    assert_eq!(
        rows_of(&m, "open64").len() as u64,
        grep_ret("dlio-unet3d.pfw.gz", "open64").0
    );
    assert_eq!(m.n_rows(), reads.len() + rows_of(&m, "open64").len());
    for &i in &reads {
        let bw = m.size[i].unwrap() as f64 / 1048576.0 / (m.dur_ns[i] as f64 / 1e9);
        assert_eq!(m.bandwidth_mibs[i], Some(bw).filter(|_| m.dur_ns[i] > 0));
    }
    // open64 returns a descriptor, not bytes.
    assert!(rows_of(&m, "open64").iter().all(|&i| m.size[i].is_none()));
    // DFTracer's flags of these opens are 524288 (O_CLOEXEC): never O_DIRECT.
    assert!(reads.iter().all(|&i| m.direct[i] == Some(false)));
}

#[test]
fn posix_old_rows_chosen_by_layer_and_ops() {
    let opts = BuildOptions {
        row_layers: vec!["POSIX".into()],
        ops: vec!["read".into(), "write".into()],
        ..BuildOptions::default()
    };
    let m = build(&[trace("posix-old.pfw")], &opts).unwrap();
    let (reads, read_bytes) = grep_ret("posix-old.pfw", "read");
    let (writes, write_bytes) = grep_ret("posix-old.pfw", "write");
    assert_eq!((reads, writes), (1000, 1));
    assert_eq!(rows_of(&m, "read").len() as u64, reads);
    assert_eq!(rows_of(&m, "write").len() as u64, writes);
    assert_eq!(size_sum(&m, &rows_of(&m, "read")), read_bytes);
    assert_eq!(size_sum(&m, &rows_of(&m, "write")), write_bytes);
    assert_time_accounted(&m);
}

#[test]
fn an_application_layer_gives_rows_with_posix_inside() {
    let opts = BuildOptions {
        row_layers: vec!["reader".into()],
        ops: Vec::new(),
        ..BuildOptions::default()
    };
    let m = build(&[trace("dlio-unet3d.pfw.gz")], &opts).unwrap();
    assert_eq!(m.n_rows(), grep_cat("dlio-unet3d.pfw.gz", "reader"));
    assert!(m.column("excl::POSIX").is_some());
    assert_time_accounted(&m);
}

#[test]
fn stdio_calls_get_the_posix_calls_they_contain() {
    // DFTracer's shape: every field a string; an fread [100, 200) us holding two reads and an lseek.
    let lines = [
        r#"["#,
        r#"{"id":"0","name":"fread","cat":"STDIO","pid":"7","tid":"7","ts":"100","dur":"100","ph":"X","args":{"fname":"/d/a"}}"#,
        r#"{"id":"1","name":"read","cat":"POSIX","pid":"7","tid":"7","ts":"110","dur":"30","ph":"X","args":{"ret":"4096","count":"4096","fname":"/d/a"}}"#,
        r#"{"id":"2","name":"lseek64","cat":"POSIX","pid":"7","tid":"7","ts":"150","dur":"5","ph":"X","args":{"fname":"/d/a"}}"#,
        r#"{"id":"3","name":"read","cat":"POSIX","pid":"7","tid":"7","ts":"160","dur":"20","ph":"X","args":{"ret":"4096","count":"4096","fname":"/d/a"}}"#,
    ];
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stdio.pfw");
    let mut f = std::fs::File::create(&path).unwrap();
    for l in lines {
        writeln!(f, "{l}").unwrap();
    }
    let opts = BuildOptions {
        row_layers: vec!["STDIO".into()],
        ops: Vec::new(),
        ..BuildOptions::default()
    };
    let m = build(&[path], &opts).unwrap();
    assert_eq!(m.op, ["fread"]);
    assert_eq!(m.column("POSIX::read").unwrap().values, [50_000.0]);
    assert_eq!(m.column("POSIX::lseek64").unwrap().values, [5_000.0]);
    assert_eq!(m.column("excl::POSIX").unwrap().values, [55_000.0]);
    assert_eq!(m.self_ns, [45_000]);
}
