//! End to end, as root: the small pipeline traced with eBPF, featurized, ranked and reported; then the
//! report's data files checked against each other and against the benchmark's own call counts.

use std::fs;
use std::path::{Path, PathBuf};

use features::FeatureMatrix;
use pipelines::bench::iobench::BenchReport;
use pipelines::pipeline::charts::{
    BandwidthChart, HeatmapChart, ImportanceChart, PcaChart, PredictionChart,
};
use pipelines::pipeline::records::{BenchRow, Data, RunRecord};
use pipelines::pipeline::run::{RunOptions, run};
use report::charts::Chart;
use report::trace_report::breakdown::Breakdown;
use serde_json::Value;

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> T {
    serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn small_pipeline_end_to_end() {
    let _machine = test_support::machine();
    let out = tempfile::tempdir().unwrap();
    let opts = RunOptions {
        pipeline: PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/small.toml"
        )),
        out: out.path().to_owned(),
        resume: false,
        exe: PathBuf::from(env!("CARGO_BIN_EXE_dc-pipeline")),
        progress: false,
    };
    let report = run(&opts).unwrap();
    assert_eq!(report, out.path().canonicalize().unwrap().join("report.md"));
    let out = report.parent().unwrap();

    let runs: Vec<RunRecord> = read_json(&out.join("data/runs.json"));
    assert_eq!(runs.len(), 8);
    let matrix = FeatureMatrix::read(&out.join("data/features.parquet")).unwrap();
    let mut rows_in_runs = 0;
    for r in &runs {
        // Every run has a trace, a summary, and rows.
        assert!(
            out.join(&r.trace).metadata().unwrap().len() > 0,
            "{}",
            r.spec.id
        );
        let summary: Value = read_json(&out.join(&r.summary));
        assert_eq!(summary["events"].as_u64(), Some(r.events));
        assert_eq!(r.exit_status, Some(0));
        let window: Vec<usize> = (0..matrix.n_rows())
            .filter(|&i| matrix.ts_ns[i] >= r.start_ns && matrix.ts_ns[i] <= r.end_ns)
            .collect();
        assert_eq!(r.rows, Some(window.len()));
        // The features step labelled each trace's rows with its run.
        for &i in &window {
            assert_eq!(matrix.run[i].as_deref(), Some(r.spec.id.as_str()));
        }
        assert!(!window.is_empty(), "{} has no rows", r.spec.id);
        rows_in_runs += window.len();

        // The trace saw exactly the calls the benchmark made on its file.
        let bench: BenchReport = read_json(&out.join(r.bench.as_ref().unwrap()));
        let o = &bench.options;
        assert_eq!(bench.samples.len(), o.iterations as usize);
        let calls = o.total_size.div_ceil(o.buffer_size);
        for s in &bench.samples {
            assert_eq!((s.bytes, s.calls), (o.total_size, calls));
        }
        let op_rows = window
            .iter()
            .filter(|&&i| matrix.op[i] == o.op.name())
            .count() as u64;
        assert_eq!(op_rows, calls * u64::from(o.iterations), "{}", r.spec.id);
        let bytes: i64 = window
            .iter()
            .filter(|&&i| matrix.op[i] == o.op.name())
            .filter_map(|&i| matrix.size[i])
            .sum();
        assert_eq!(
            bytes as u64,
            o.total_size * u64::from(o.iterations),
            "{}",
            r.spec.id
        );
    }
    assert_eq!(rows_in_runs, matrix.n_rows());

    // Where the time goes: one group per run, in run order, each adding up to its mean call time.
    let time = Breakdown::by_run(&matrix);
    let labels: Vec<&str> = time.groups.iter().map(|g| g.label.as_str()).collect();
    let ids: Vec<&str> = runs.iter().map(|r| r.spec.id.as_str()).collect();
    assert_eq!(labels, ids);
    for g in &time.groups {
        let sum: f64 = g.mean_ns.iter().sum();
        assert!(
            (sum - g.mean_dur_ns).abs() <= 1e-9 * g.mean_dur_ns,
            "{}",
            g.label
        );
    }
    let html = fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.find(">Where the time goes</h2>") < html.find(">Bandwidth</h2>"));
    for id in ids {
        assert!(html.contains(&format!("<tr><td>{id}</td>")), "{id}");
    }

    let samples: Vec<BenchRow> = read_json(&out.join("data/bench-samples.json"));
    assert_eq!(samples.len(), 8 * 3);

    // Importances sum to 1 per layer, for every kind; the ranking reaches the cut.
    let rank: Value = read_json(&out.join("data/rank.json"));
    let layers = rank["layers"].as_array().unwrap();
    assert!(!layers.is_empty());
    for l in layers {
        for kind in ["shap_share", "gain_share", "permutation_share"] {
            let sum: f64 = l["importances"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i[kind].as_f64().unwrap())
                .sum();
            assert!(
                (sum - 1.0).abs() < 1e-9,
                "{} {kind} sums to {sum}",
                l["layer"]
            );
        }
        let last = l["ranking"].as_array().unwrap().last().unwrap();
        assert!(last["cumulative_share"].as_f64().unwrap() >= 0.95 - 1e-9);
    }

    let data = Data::read(out).unwrap();
    let sizes = [
        (
            "bandwidth",
            BandwidthChart::from_samples(&data.bench).size(),
        ),
        ("importance", ImportanceChart { rank: &data.rank }.size()),
        ("pca", PcaChart { rank: &data.rank }.size()),
        ("correlation", HeatmapChart { rank: &data.rank }.size()),
        ("predictions", PredictionChart { rank: &data.rank }.size()),
    ];
    for (chart, (w, h)) in sizes {
        let png = png::Decoder::new(std::io::BufReader::new(
            fs::File::open(out.join(format!("charts/{chart}.png"))).unwrap(),
        ));
        let mut reader = png.read_info().unwrap();
        assert_eq!(
            (reader.info().width, reader.info().height),
            (w, h),
            "{chart}"
        );
        let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
        reader.next_frame(&mut pixels).unwrap();
        // Drawn on, not blank: some pixels are neither white nor black.
        assert!(
            pixels.chunks(3).any(|p| p[0] != p[1] || p[1] != p[2]),
            "{chart}"
        );
        let svg = fs::read_to_string(out.join(format!("charts/{chart}.svg"))).unwrap();
        assert!(svg.starts_with("<svg"), "{chart}");
    }
    let md = fs::read_to_string(&report).unwrap();
    assert!(md.contains("![bandwidth](charts/bandwidth.png)"));

    // The files a run or a redraw checks before it starts are the files it writes.
    let mut written = Vec::new();
    for dir in ["", "data", "charts"] {
        for e in fs::read_dir(out.join(dir)).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_file() {
                written.push(Path::new(dir).join(e.file_name()));
            }
        }
    }
    written.sort();
    let mut checked = pipelines::pipeline::report::files();
    checked.sort();
    assert_eq!(written, checked);

    // --resume keeps every finished step: the same data comes back without tracing again.
    let before = fs::read(out.join("data/rank.json")).unwrap();
    let traced = fs::metadata(out.join(&runs[0].trace))
        .unwrap()
        .modified()
        .unwrap();
    run(&RunOptions {
        resume: true,
        ..opts
    })
    .unwrap();
    assert_eq!(fs::read(out.join("data/rank.json")).unwrap(), before);
    assert_eq!(
        fs::metadata(out.join(&runs[0].trace))
            .unwrap()
            .modified()
            .unwrap(),
        traced
    );
}
