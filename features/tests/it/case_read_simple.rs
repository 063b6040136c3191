//! The matrix of a real DataCrumbs trace, checked by hand against its raw lines.
//! (`"hhash": 314828689199209182275661060106169083757` is left out of the quoted lines.)

use std::path::PathBuf;
use std::sync::OnceLock;

use datasets::output::Existing;
use features::{BuildOptions, FeatureKind, FeatureMatrix, build};
use regex::Regex;

fn trace() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../datasets/fixtures/datacrumbs/case-read-simple.trace.pfw.gz"
    ))
}

fn options() -> BuildOptions {
    BuildOptions {
        ops: ["read", "write", "openat"].map(String::from).to_vec(),
        counts: true,
        ..BuildOptions::default()
    }
}

fn matrix() -> &'static FeatureMatrix {
    static MATRIX: OnceLock<FeatureMatrix> = OnceLock::new();
    MATRIX.get_or_init(|| build(&[trace()], &options()).unwrap())
}

fn row(m: &FeatureMatrix, op: &str, ts_ns: u64) -> usize {
    let rows: Vec<usize> = (0..m.n_rows())
        .filter(|&i| m.op[i] == op && m.ts_ns[i] == ts_ns)
        .collect();
    assert_eq!(rows.len(), 1, "{op} at {ts_ns}");
    rows[0]
}

fn value(m: &FeatureMatrix, column: &str, row: usize) -> f64 {
    m.column(column)
        .unwrap_or_else(|| panic!("no column {column}"))
        .values[row]
}

/// Sum of one row over all time columns and over all count columns.
fn totals(m: &FeatureMatrix, row: usize) -> (f64, f64) {
    let sum = |kind| {
        m.features
            .iter()
            .filter(|f| f.kind == kind)
            .map(|f| f.values[row])
            .sum()
    };
    (sum(FeatureKind::TimeNs), sum(FeatureKind::Count))
}

/// The row's nonzero `excl::` columns.
fn exclusive(m: &FeatureMatrix, row: usize) -> Vec<(&str, f64)> {
    m.features
        .iter()
        .filter(|f| f.kind == FeatureKind::ExclusiveNs && f.values[row] > 0.0)
        .map(|f| (f.column.as_str(), f.values[row]))
        .collect()
}

#[test]
fn rows_are_the_sys_reads_and_openats() {
    let m = matrix();
    // `zcat | grep -c '"name": "read", "cat": "sys"'` is 192, openat 135; the trace has no `sys` write.
    assert_eq!(m.n_rows(), 327);
    assert_eq!(m.op.iter().filter(|o| *o == "read").count(), 192);
    assert_eq!(m.op.iter().filter(|o| *o == "openat").count(), 135);
    assert!(m.pid.iter().chain(&m.tid).all(|&id| id == 40998));
    assert!(m.ts_ns.windows(2).all(|w| w[0] <= w[1]));
    // Time columns first (ext4, vfs), then exclusive, then counts: every os_cache event inside a row is a point.
    assert_eq!(m.layers(), ["ext4", "vfs", "os_cache"]);
}

#[test]
fn openat_row_counts_a_point_event() {
    // line 3340 {"pid": 40998, "tid": 40998, "name": "file_ra_state_init [kernel]", "cat": "vfs", "ph": "X", "ts": 6598}
    // line 3342 {"pid": 40998, "tid": 40998, "name": "ima_file_check [kernel]", "cat": "vfs", "ph": "X", "ts": 6600}
    // line 3343 {"pid": 40998, "tid": 40998, "name": "FH", "cat": "dftracer", "ph": "M", "args": {"name": "/etc/openmpi/openmpi-mca-params.conf", "value": 133892054826312681618397557253802428535}}
    // line 3344 {"pid": 40998, "tid": 40998, "name": "openat", "cat": "sys", "ph": "X", "ts": 6600, "dur": 1, "args": {"fhash": 133892054826312681618397557253802428535}}
    // line 3345 {"pid": 40998, "tid": 40998, "name": "open64", "cat": "c", "ph": "X", "ts": 6600, "dur": 4}
    // Row [6600, 6601] us: only line 3342 (dur 0) lies inside; 3340 starts before, 3345 ends after.
    let m = matrix();
    let r = row(m, "openat", 6_600_000);
    assert_eq!(r, 0);
    assert_eq!(m.dur_ns[r], 1_000);
    assert_eq!(
        m.file[r].as_deref(),
        Some("/etc/openmpi/openmpi-mca-params.conf")
    );
    assert_eq!(m.size[r], None);
    assert_eq!(m.bandwidth_mibs[r], None);
    assert_eq!(value(m, "count::vfs::ima_file_check [kernel]", r), 1.0);
    // A name that takes no time in any row is a count only.
    assert!(m.column("vfs::ima_file_check [kernel]").is_none());
    assert_eq!(totals(m, r), (0.0, 1.0));
    assert_eq!(exclusive(m, r), []);
    assert_eq!(m.self_ns[r], 1_000);
}

#[test]
fn read_row_sums_nested_kernel_time() {
    // line 3532 {"pid": 40998, "tid": 40998, "name": "make_vfsuid [kernel]", "cat": "vfs", "ph": "X", "ts": 6984}
    // line 3533 {"pid": 40998, "tid": 40998, "name": "make_vfsgid [kernel]", "cat": "vfs", "ph": "X", "ts": 6985}
    // line 3534 {"pid": 40998, "tid": 40998, "name": "make_vfsgid [kernel]", "cat": "vfs", "ph": "X", "ts": 6985}
    // line 3535 {"pid": 40998, "tid": 40998, "name": "make_vfsgid [kernel]", "cat": "vfs", "ph": "X", "ts": 6985, "dur": 1}
    // line 3536 {"pid": 40998, "tid": 40998, "name": "make_vfsgid [kernel]", "cat": "vfs", "ph": "X", "ts": 6985, "dur": 1}
    // line 3537 {"pid": 40998, "tid": 40998, "name": "make_vfsgid [kernel]", "cat": "ext4", "ph": "X", "ts": 6985, "dur": 2}
    // line 3538 {"pid": 40998, "tid": 40998, "name": "make_vfsgid [kernel]", "cat": "vfs", "ph": "X", "ts": 6985, "dur": 2}
    // line 3539 {"pid": 40998, "tid": 40998, "name": "make_vfsgid [kernel]", "cat": "vfs", "ph": "X", "ts": 6985, "dur": 2}
    // line 3540 {"pid": 40998, "tid": 40998, "name": "vfs_read", "cat": "vfs", "ph": "X", "ts": 6985, "dur": 3}
    // line 3541 {"pid": 40998, "tid": 40998, "name": "read", "cat": "sys", "ph": "X", "ts": 6985, "dur": 4, "args": {"size_sum": 3357, "fhash": 133892054826312681618397557253802428535}}
    // line 3542 {"pid": 40998, "tid": 40998, "name": "read", "cat": "c", "ph": "X", "ts": 6985, "dur": 5}
    // Row [6985, 6989] us. vfs make_vfsgid: 0+0+1+1+2+2 = 6 us in 6 events; ext4 make_vfsgid 2 us; vfs_read 3 us.
    // Exclusive: [6985, 6986) the 1 us vfs make_vfsgid inside all the others; [6986, 6987) ext4 make_vfsgid and two
    // equal vfs ones, innermost together, ext4 first in the layer order; [6987, 6988) vfs_read; [6988, 6989) own.
    let m = matrix();
    let r = row(m, "read", 6_985_000);
    assert_eq!(m.dur_ns[r], 4_000);
    assert_eq!(m.size[r], Some(3357));
    assert_eq!(
        m.bandwidth_mibs[r],
        Some(3357.0 / 1048576.0 / (4_000.0 / 1e9))
    );
    assert_eq!(value(m, "vfs::make_vfsgid [kernel]", r), 6_000.0);
    assert_eq!(value(m, "count::vfs::make_vfsgid [kernel]", r), 6.0);
    assert_eq!(value(m, "ext4::make_vfsgid [kernel]", r), 2_000.0);
    assert_eq!(value(m, "count::ext4::make_vfsgid [kernel]", r), 1.0);
    assert_eq!(value(m, "vfs::vfs_read", r), 3_000.0);
    assert!(m.column("vfs::make_vfsuid [kernel]").is_none());
    assert_eq!(value(m, "count::vfs::make_vfsuid [kernel]", r), 0.0);
    assert_eq!(totals(m, r), (11_000.0, 8.0));
    assert_eq!(
        exclusive(m, r),
        [("excl::ext4", 1_000.0), ("excl::vfs", 2_000.0)]
    );
    assert_eq!(m.self_ns[r], 1_000);
}

#[test]
fn read_of_proc_cpuinfo() {
    // line 19189 {"pid": 40998, "tid": 40998, "name": "FH", "cat": "dftracer", "ph": "M", "args": {"name": "/proc/cpuinfo", "value": 317021242183948553742174207433544612501}}
    // line 19224 {"pid": 40998, "tid": 40998, "name": "copy_to_page [kernel]", "cat": "os_cache", "ph": "X", "ts": 41634}
    // line 19225 {"pid": 40998, "tid": 40998, "name": "aa_file_perm [kernel]", "cat": "vfs", "ph": "X", "ts": 41640}
    // line 19226 {"pid": 40998, "tid": 40998, "name": "aa_file_perm [kernel]", "cat": "vfs", "ph": "X", "ts": 41640}
    // line 19227 {"pid": 40998, "tid": 40998, "name": "aa_file_perm [kernel]", "cat": "vfs", "ph": "X", "ts": 41640, "dur": 1}
    // line 19228 {"pid": 40998, "tid": 40998, "name": "rw_verify_area", "cat": "vfs", "ph": "X", "ts": 41640, "dur": 1}
    // line 19229 {"pid": 40998, "tid": 40998, "name": "aa_file_perm [kernel]", "cat": "vfs", "ph": "X", "ts": 41640, "dur": 17}
    // line 19230 {"pid": 40998, "tid": 40998, "name": "vfs_read", "cat": "vfs", "ph": "X", "ts": 41640, "dur": 17}
    // line 19231 {"pid": 40998, "tid": 40998, "name": "read", "cat": "sys", "ph": "X", "ts": 41640, "dur": 18, "args": {"size_sum": 1024, "fhash": 317021242183948553742174207433544612501}}
    // line 19232 {"pid": 40998, "tid": 40998, "name": "read", "cat": "c", "ph": "X", "ts": 41640, "dur": 19}
    // line 19233 {"pid": 40998, "tid": 40998, "name": "copy_to_page [kernel]", "cat": "os_cache", "ph": "X", "ts": 41664}
    // Row [41640, 41658] us: aa_file_perm 0+0+1+17 = 18 us in 4 events, rw_verify_area 1 us, vfs_read 17 us;
    // all vfs, which covers [41640, 41657): 17 us exclusive, 1 us own.
    let m = matrix();
    let r = row(m, "read", 41_640_000);
    assert_eq!(m.file[r].as_deref(), Some("/proc/cpuinfo"));
    assert_eq!(m.size[r], Some(1024));
    assert_eq!(
        m.bandwidth_mibs[r],
        Some(1024.0 / 1048576.0 / (18_000.0 / 1e9))
    );
    assert_eq!(value(m, "vfs::aa_file_perm [kernel]", r), 18_000.0);
    assert_eq!(value(m, "count::vfs::aa_file_perm [kernel]", r), 4.0);
    assert_eq!(value(m, "vfs::rw_verify_area", r), 1_000.0);
    assert_eq!(value(m, "vfs::vfs_read", r), 17_000.0);
    assert_eq!(value(m, "vfs::make_vfsgid [kernel]", r), 0.0);
    assert_eq!(totals(m, r), (36_000.0, 6.0));
    assert_eq!(exclusive(m, r), [("excl::vfs", 17_000.0)]);
    assert_eq!(m.self_ns[r], 1_000);
}

#[test]
fn file_regex_keeps_rows_of_matching_files() {
    // `zcat | grep -E '"name": "(read|openat)", "cat": "sys"' | grep -c 317021242183948553742174207433544612501` is 71.
    let opts = BuildOptions {
        file_regex: Some(Regex::new("^/proc/cpuinfo$").unwrap()),
        ..options()
    };
    let m = build(&[trace()], &opts).unwrap();
    assert_eq!(m.n_rows(), 71);
    assert!(m.file.iter().all(|f| f.as_deref() == Some("/proc/cpuinfo")));
    let all = matrix();
    let r = row(&m, "read", 41_640_000);
    assert_eq!(
        value(&m, "vfs::aa_file_perm [kernel]", r),
        value(
            all,
            "vfs::aa_file_perm [kernel]",
            row(all, "read", 41_640_000)
        )
    );
}

#[test]
fn written_matrices_read_back_exactly() {
    let m = matrix();
    let dir = tempfile::tempdir().unwrap();
    for name in ["m.parquet", "m.csv", "m.jsonl"] {
        let path = dir.path().join(name);
        m.write(&path, Existing::Refuse).unwrap();
        assert_eq!(&FeatureMatrix::read(&path).unwrap(), m, "{name}");
    }
}
