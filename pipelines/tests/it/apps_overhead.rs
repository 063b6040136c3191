//! `dc-pipeline overhead --per-layer` on fio's own random read/write job, scaled down to one round of 1 s per
//! attempt (root: it traces): one row per setup and figure, each value the one fio itself reported, each traced
//! attempt between two untraced ones and its ratio against them.

use std::fs;
use std::path::PathBuf;

use pipelines::overhead::report::OverheadReport;
use pipelines::overhead::{OverheadOptions, overhead};
use serde_json::Value;

const EXAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples");

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn per_layer_overhead_has_a_row_per_setup_and_figure_each_read_from_fios_own_report() {
    let _machine = test_support::machine();
    let mut text = fs::read_to_string(format!("{EXAMPLES}/fio-examples.toml")).unwrap();
    for (from, to) in [
        (
            r#"layers = ["sys", "page_cache", "block", "sched", "writeback", "jbd2", "mm"]"#,
            r#"layers = ["sys", "block", "sched"]"#,
        ),
        ("runtime=3", "runtime=1"),
        (
            r#"job = ["fio-rand-RW", "fio-seq-write"]"#,
            r#"job = ["fio-rand-RW"]"#,
        ),
    ] {
        assert!(text.contains(from), "fio-examples.toml has no `{from}`");
        text = text.replace(from, to);
    }
    let dir = tempfile::tempdir().unwrap();
    let pipeline = dir.path().join("fio-examples.toml");
    fs::write(&pipeline, text).unwrap();
    let out = dir.path().join("out");
    let table = overhead(&OverheadOptions {
        pipeline,
        out: out.clone(),
        rounds: 1,
        per_layer: true,
        exe: PathBuf::from(env!("CARGO_BIN_EXE_dc-pipeline")),
    })
    .unwrap();
    assert_eq!(table, fs::read_to_string(out.join("overhead.md")).unwrap());
    let report: OverheadReport =
        serde_json::from_str(&fs::read_to_string(out.join("overhead.json")).unwrap()).unwrap();
    assert_eq!(report.rounds, 1);
    assert!(report.load_average.0 >= 0.0 && report.load_average.0 <= report.load_average.1);

    let setups = [
        ("untraced", vec![]),
        ("dc-trace", vec!["sys", "block", "sched"]),
        ("dc-trace: sys", vec!["sys"]),
        ("dc-trace: sys + block", vec!["sys", "block"]),
        ("dc-trace: sys + sched", vec!["sys", "sched"]),
    ];
    let figures = [
        ("IOPS", "read", "iops"),
        ("IOPS", "write", "iops"),
        ("bandwidth (B/s)", "read", "bw_bytes"),
        ("bandwidth (B/s)", "write", "bw_bytes"),
    ];
    let got: Vec<(&str, &str, &str, Vec<&str>)> = report
        .rows
        .iter()
        .map(|r| {
            assert_eq!(r.run, "fio-jobfio-rand-RW");
            (
                r.name.as_str(),
                r.label.as_str(),
                r.setup.as_str(),
                r.layers.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    let want: Vec<(&str, &str, &str, Vec<&str>)> = figures
        .iter()
        .flat_map(|&(name, label, _)| {
            setups
                .iter()
                .map(move |(s, l)| (name, label, *s, l.clone()))
        })
        .collect();
    assert_eq!(got, want);

    // One round: untraced, then each other setup followed by untraced again; the directories say where.
    let position = |dir: &str| -> usize {
        let k = dir.strip_prefix("fio-jobfio-rand-RW-r0-").unwrap();
        k[..2].parse().unwrap()
    };
    for r in &report.rows {
        let key = figures.iter().find(|f| f.0 == r.name).unwrap().2;
        let untraced = report
            .rows
            .iter()
            .find(|u| u.setup == "untraced" && u.name == r.name && u.label == r.label)
            .unwrap();
        let mut values = Vec::new();
        for a in &r.values {
            // fio's own JSON report of this attempt, parsed as JSON rather than by the pipeline's regex.
            let fio: Value = serde_json::from_str(
                &fs::read_to_string(out.join(&a.dir).join("app.out")).unwrap(),
            )
            .unwrap();
            let own = fio["jobs"][0][&r.label][key].as_f64().unwrap();
            assert!(own > 0.0, "{}: fio reported {own}", a.dir);
            assert!(
                (a.value - own).abs() <= own * 1e-9,
                "{}: {} {} is {} in the table, {own} in fio's report",
                a.dir,
                r.name,
                r.label,
                a.value
            );
            assert_eq!(
                out.join(&a.dir).join("trace.pfw.gz").exists(),
                r.setup != "untraced",
                "{}",
                a.dir
            );
            values.push(a.value);
            if r.setup == "untraced" {
                assert_eq!(a.ratio, None);
                continue;
            }
            let k = position(&a.dir);
            let around: Vec<f64> = untraced
                .values
                .iter()
                .filter(|u| position(&u.dir) + 1 == k || position(&u.dir) == k + 1)
                .map(|u| u.value)
                .collect();
            assert_eq!(around.len(), 2, "{}", a.dir);
            assert_eq!(a.ratio, Some(a.value / ((around[0] + around[1]) / 2.0)));
            assert_eq!(r.ratio, a.ratio.unwrap());
        }
        let positions: Vec<usize> = r.values.iter().map(|a| position(&a.dir)).collect();
        if r.setup == "untraced" {
            assert_eq!(positions, [0, 2, 4, 6, 8]);
            assert_eq!(r.ratio, 1.0);
        } else {
            assert_eq!(positions.len(), 1);
            assert_eq!(positions[0] % 2, 1);
        }
        values.sort_by(f64::total_cmp);
        assert_eq!((r.min, r.max), (values[0], values[values.len() - 1]));
        assert_eq!(r.median, values[values.len() / 2]);
    }

    let header = "| setup | layers | IOPS read | × | IOPS write | × | bandwidth (B/s) read | × | bandwidth (B/s) write | × |";
    let lines: Vec<&str> = table.lines().collect();
    let at = lines.iter().position(|l| *l == header).unwrap();
    let names: Vec<&str> = lines[at + 2..]
        .iter()
        .map(|l| l.split(" | ").next().unwrap().trim_start_matches("| "))
        .collect();
    assert_eq!(names, setups.map(|s| s.0));
}
