//! features → models → report on a real DataCrumbs trace (no tracing, no root): the charts and
//! report.md are drawn from the data files, and the data files agree with each other.

use std::fs;
use std::path::{Path, PathBuf};

use indicatif::ProgressBar;
use pipelines::pipeline::charts::{HeatmapChart, ImportanceChart, PcaChart, PredictionChart};
use pipelines::pipeline::config::Pipeline;
use pipelines::pipeline::records::Data;
use pipelines::pipeline::run::{rank_layers, write_rank};
use report::charts::Chart;

const TRACE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../datasets/fixtures/datacrumbs/case-read-simple.trace.pfw.gz"
);

#[test]
fn report_from_a_datacrumbs_trace() {
    let p = Pipeline::parse(
        "name = \"fixture\"\n[model]\nseed = 1\n[[workload]]\nname = \"x\"\ncommand = [\"true\"]\n",
        Path::new("fixture.toml"),
    )
    .unwrap();
    let matrix =
        features::build(&[PathBuf::from(TRACE)], &features::BuildOptions::default()).unwrap();
    let out = tempfile::tempdir().unwrap();
    let data = out.path().join("data");
    fs::create_dir_all(&data).unwrap();
    let layers = models::input::resolve_layers(&matrix, &[]).unwrap();
    let rank = rank_layers(&matrix, &p.model, &layers, &ProgressBar::hidden()).unwrap();
    assert_eq!(rank.layers.len() + rank.skipped_layers.len(), layers.len());
    write_rank(&data, &rank).unwrap();
    matrix
        .write(
            &data.join("features.parquet"),
            datasets::output::Existing::Refuse,
        )
        .unwrap();
    fs::write(data.join("runs.json"), "[]").unwrap();
    fs::write(data.join("bench-samples.json"), "[]").unwrap();

    let report = pipelines::pipeline::report::write(&p, out.path()).unwrap();
    let view = Data::read(out.path()).unwrap();
    assert_eq!(view.rank.rows_total, matrix.n_rows());
    for l in &view.rank.layers {
        let sum: f64 = l.importances.iter().map(|i| i.shap_share.unwrap()).sum();
        assert!((sum - 1.0).abs() < 1e-9, "{}: {sum}", l.layer);
        assert_eq!(l.correlation.names.len(), l.correlation.pearson.len());
    }
    // No benchmark ran, so there is no bandwidth chart; the four others are drawn at their sizes.
    assert!(!out.path().join("charts/bandwidth.png").exists());
    let sizes = [
        ("importance", ImportanceChart { rank: &view.rank }.size()),
        ("pca", PcaChart { rank: &view.rank }.size()),
        ("correlation", HeatmapChart { rank: &view.rank }.size()),
        ("predictions", PredictionChart { rank: &view.rank }.size()),
    ];
    for (chart, (w, h)) in sizes {
        let png = png::Decoder::new(std::io::BufReader::new(
            fs::File::open(out.path().join(format!("charts/{chart}.png"))).unwrap(),
        ));
        let reader = png.read_info().unwrap();
        assert_eq!(
            (reader.info().width, reader.info().height),
            (w, h),
            "{chart}"
        );
        assert!(
            fs::read_to_string(out.path().join(format!("charts/{chart}.svg")))
                .unwrap()
                .starts_with("<svg")
        );
    }
    // No run, so no workload point: the page and report.md still open with the section, and say why it is empty.
    let html = fs::read_to_string(out.path().join("report.html")).unwrap();
    for h in [
        "Where the time goes",
        "Bandwidth",
        "Model quality",
        "Rankings",
        "Job",
        "Per file",
    ] {
        assert!(html.contains(&format!(">{h}</h2>")), "{h}");
    }
    let md = fs::read_to_string(report).unwrap();
    assert!(md.contains("## Where the time goes\n"));
    // report.md opens with the verdict and findings that `run` prints and the page opens with, in the same order.
    let answer = pipelines::pipeline::report::answer(out.path()).unwrap();
    assert!(!answer.items.is_empty());
    assert!(
        md.starts_with(&format!(
            "# fixture: dc-pipeline report\n\n## Verdict\n\n{}\n",
            answer.verdict
        )),
        "{md}"
    );
    let (mut in_md, mut in_html) = (0, 0);
    for item in &answer.items {
        in_md += md[in_md..]
            .find(&item.sentence)
            .unwrap_or_else(|| panic!("{}", item.sentence));
        let escaped = report::html::escape(&item.sentence);
        in_html += html[in_html..]
            .find(&escaped)
            .unwrap_or_else(|| panic!("{escaped}"));
    }
    assert!(in_md < md.find("## Where the time goes").unwrap());
    assert!(in_html < html.find(">Where the time goes</h2>").unwrap());
    for l in &view.rank.layers {
        assert!(md.contains(&format!("### {}\n", l.layer)), "{}", l.layer);
    }
    // The pipeline ranks every layer in one call, which also fits the model over all of them.
    assert!(view.rank.stack.is_some());
    assert!(html.contains("One model over the context and every layer"));
    assert!(md.contains("## Which layers explain it\n"));

    // A ranking with a model over all layers: both reports show it, before the bandwidth.
    let rank_json = data.join("rank.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&rank_json).unwrap()).unwrap();
    v["stack"] = serde_json::json!({
        "quality": {"test_r2": 0.912, "test_mape": null, "cv_r2_mean": 0.9, "cv_r2_sd": 0.01},
        "context_r2": 0.5,
        "context_share": 0.25,
        "layers": [
            {"layer": "vfs", "share": 0.5, "delta_r2": 0.3},
            {"layer": "bio", "share": 0.25, "delta_r2": 0.125}
        ],
        "groups": [{
            "group": "read direct", "rows": 40, "test_rows": 8, "context_share": 0.25,
            "layers": [
                {"layer": "bio", "share": 0.5, "time_share": 0.7},
                {"layer": "vfs", "share": 0.25, "time_share": null}
            ]
        }]
    });
    fs::write(&rank_json, v.to_string()).unwrap();
    let report = pipelines::pipeline::report::write(&p, out.path()).unwrap();
    let html = fs::read_to_string(out.path().join("report.html")).unwrap();
    assert!(html.contains(
        "<tr><td>vfs</td><td class=\"n\" data-v=\"0.5\">0.500</td><td class=\"n\" data-v=\"0.3\">0.300</td></tr>"
    ));
    assert!(html.contains("held-out R² 0.912"));
    assert!(html.find(">Which layers explain it</h2>") < html.find(">Bandwidth</h2>"));
    let md = fs::read_to_string(report).unwrap();
    assert!(
        md.contains("| context | 0.250 | |\n| vfs | 0.500 | 0.300 |\n| bio | 0.250 | 0.125 |\n")
    );
    assert!(
        md.contains(
            "| read direct | bio | 0.500 | 0.700 |\n| read direct | vfs | 0.250 | none |\n"
        )
    );
    let verdict = "read direct (40 calls): bio carries the most time (70.0%) and explains the most of the bandwidth (50.0% of the model's |SHAP|).";
    assert!(md.contains(&format!("- {verdict}\n")));
    assert!(html.contains(&format!("<p>{}</p>", report::html::escape(verdict))));
}
