//! Early stopping, the stack model's layer shares and skipped layers, on synthetic data whose answer is known.
use features::{FeatureColumn, FeatureKind, FeatureMatrix};
use models::gbm::{Gbm, GbmParams};
use models::stats::mse;
use models::{RankOptions, SplitKind};
use ndarray::{Array1, Array2, Axis, s};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

#[test]
fn early_stopping_keeps_the_tree_count_with_the_lowest_validation_loss() {
    let mut rng = StdRng::seed_from_u64(11);
    let n = 1500;
    let x: Array2<f64> = Array2::from_shape_fn((n, 4), |_| rng.gen_range(0.0..1.0));
    let y = Array1::from_iter(
        x.rows()
            .into_iter()
            .map(|r| 3.0 * r[0] + (5.0 * r[1]).sin() + rng.gen_range(-1.0..1.0)),
    );
    let params = GbmParams {
        n_estimators: 400,
        max_depth: 6,
        learning_rate: 0.5,
        n_iter_no_change: 15,
        ..GbmParams::default()
    };
    let validation: Vec<usize> = (1200..n).collect();
    let stopped = Gbm::fit_stopping_on(x.view(), y.view(), &validation, &params).unwrap();
    // The same fitting rows without early stopping grow the same trees; replay the rule on them.
    let full = Gbm::fit(x.slice(s![..1200, ..]), y.slice(s![..1200]), &params).unwrap();
    let (xv, yv) = (x.select(Axis(0), &validation), y.slice(s![1200..]).to_vec());
    let mut pred = vec![full.base; yv.len()];
    let (mut best, mut best_len) = (f64::INFINITY, 0);
    for (k, tree) in full.trees.iter().enumerate() {
        for (i, p) in pred.iter_mut().enumerate() {
            *p += tree.predict_row(&xv.row(i).to_vec());
        }
        let loss = mse(&yv, &pred);
        if loss < best {
            (best, best_len) = (loss, k + 1);
        } else if k + 1 - best_len >= params.n_iter_no_change {
            break;
        }
    }
    assert!(
        best_len < 100,
        "noise this large stops the boosting early, not after {best_len} trees"
    );
    assert_eq!(stopped.trees.len(), best_len);
    let truncated = Gbm {
        trees: full.trees[..best_len].to_vec(),
        ..full.clone()
    };
    assert_eq!(stopped.predict(xv.view()), truncated.predict(xv.view()));
}

/// Three layers of five columns each; the target depends on layer `b` only. `size` and `sequential`
/// vary but are unrelated; `op` and `direct` are constant, so they are no context columns.
fn three_layers(n: usize) -> FeatureMatrix {
    let mut rng = StdRng::seed_from_u64(5);
    let mut features = Vec::new();
    let mut b = Vec::new();
    for layer in ["a", "b", "c"] {
        for j in 0..5 {
            let v: Vec<f64> = (0..n)
                .map(|_| rng.gen_range(0.0..1000.0f64).round())
                .collect();
            if layer == "b" {
                b.push(v.clone());
            }
            features.push(FeatureColumn::new(
                layer,
                &format!("f{j}"),
                FeatureKind::TimeNs,
                v,
            ));
        }
    }
    let bandwidth = (0..n)
        .map(|i| Some(100.0 + b[0][i] + 0.5 * b[1][i] * (b[2][i] > 500.0) as u8 as f64))
        .collect();
    FeatureMatrix {
        op: vec!["read".to_string(); n],
        pid: vec![1; n],
        tid: vec![1; n],
        ts_ns: (0..n as u64).collect(),
        dur_ns: vec![1000; n],
        file: (0..n).map(|i| Some(format!("/f{}", i % 3))).collect(),
        size: (0..n).map(|_| Some(4096 * rng.gen_range(1..4))).collect(),
        bandwidth_mibs: bandwidth,
        direct: vec![Some(false); n],
        sequential: (0..n).map(|i| Some(i % 5 != 0)).collect(),
        run: vec![None; n],
        thread: vec![None; n],
        process: vec![None; n],
        self_ns: vec![0; n],
        features,
    }
}

#[test]
fn the_stack_model_gives_the_signal_carrying_layer_nearly_all_the_share() {
    let report = models::rank(&three_layers(1000), &RankOptions::default()).unwrap();
    assert_eq!(report.split, SplitKind::Time);
    let stack = report.stack.expect("--layer all fits the stack model");
    assert!(stack.quality.test_r2 > 0.95, "{:?}", stack.quality);
    assert_eq!(stack.layers[0].layer, "b");
    assert!(stack.layers[0].share > 0.95, "{:?}", stack.layers);
    assert!(stack.context_share < 0.02, "{}", stack.context_share);
    let context = stack.context_r2.expect("size varies");
    assert!(
        context < 0.05,
        "size is unrelated, yet explains R² {context}"
    );
    for l in &report.layers {
        let delta = l.delta_r2;
        assert_eq!(delta, l.gbm.quality.test_r2 - context);
        if l.layer == "b" {
            assert!(delta > 0.9, "b adds ΔR² {delta}");
        } else {
            assert!(delta < 0.05, "{} adds ΔR² {delta}", l.layer);
        }
        let context = ["size", "sequential"];
        assert!(
            l.ranking
                .iter()
                .all(|r| r.context == context.contains(&r.feature.as_str()))
        );
    }
}

#[test]
fn a_layer_that_cannot_be_ranked_is_skipped_and_the_others_go_on() {
    let mut m = three_layers(300);
    m.size = vec![Some(4096); 300];
    m.sequential = vec![Some(true); 300];
    // Layer c varies only on the latest call, a test row: the models see it constant.
    for f in m.features.iter_mut().filter(|f| f.layer == "c") {
        f.values = (0..300).map(|i| f64::from(i == 299)).collect();
    }
    let report = models::rank(&m, &RankOptions::default()).unwrap();
    let ranked: Vec<&str> = report.layers.iter().map(|l| l.layer.as_str()).collect();
    assert_eq!(ranked, ["a", "b"]);
    assert_eq!(
        report.skipped_layers.len(),
        1,
        "{:?}",
        report.skipped_layers
    );
    assert_eq!(report.skipped_layers[0].layer, "c");
    assert_eq!(
        report.skipped_layers[0].reason,
        "layer c: no feature has a positive shap importance"
    );
    assert!(report.stack.is_some());
}

/// Reads, half direct and half buffered; the time of a direct read is mostly layer `a`'s, of a buffered
/// one mostly `b`'s, and each kind's bandwidth follows its own layer.
fn two_kinds(n: usize) -> FeatureMatrix {
    let mut rng = StdRng::seed_from_u64(9);
    let direct: Vec<bool> = (0..n).map(|i| i % 2 == 0).collect();
    let mut a = Vec::new();
    let mut b = Vec::new();
    let mut own = Vec::new();
    for &d in &direct {
        let (big, small) = (rng.gen_range(1000..9000u64), rng.gen_range(0..300u64));
        let (x, y) = if d { (big, small) } else { (small, big) };
        a.push(x);
        b.push(y);
        own.push(rng.gen_range(50..150u64));
    }
    let dur: Vec<u64> = (0..n).map(|i| a[i] + b[i] + own[i]).collect();
    let column = |layer: &str, v: &[u64]| {
        FeatureColumn::new(
            layer,
            "",
            FeatureKind::ExclusiveNs,
            v.iter().map(|&ns| ns as f64).collect(),
        )
    };
    FeatureMatrix {
        op: vec!["read".to_string(); n],
        pid: vec![1; n],
        tid: vec![1; n],
        ts_ns: (0..n as u64).collect(),
        dur_ns: dur.clone(),
        file: vec![Some("/f".to_string()); n],
        size: vec![Some(4096); n],
        bandwidth_mibs: dur.iter().map(|&d| Some(4096.0 / d as f64)).collect(),
        direct: direct.iter().map(|&d| Some(d)).collect(),
        sequential: vec![Some(true); n],
        run: vec![None; n],
        thread: vec![None; n],
        process: vec![None; n],
        self_ns: own,
        features: vec![column("a", &a), column("b", &b)],
    }
}

#[test]
fn each_kind_of_call_is_explained_by_the_layer_that_carries_its_time() {
    let m = two_kinds(1200);
    let report = models::rank(&m, &RankOptions::default()).unwrap();
    let ranked: Vec<&str> = report.layers.iter().map(|l| l.layer.as_str()).collect();
    assert_eq!(ranked, ["a", "b", models::input::SELF]);
    let stack = report.stack.expect("--layer all fits the stack model");
    assert!(stack.quality.test_r2 > 0.9, "{:?}", stack.quality);
    let names: Vec<&str> = stack.groups.iter().map(|g| g.group.as_str()).collect();
    assert_eq!(names, ["read buffered", "read direct"]);
    for (g, leader, direct) in [
        (&stack.groups[0], "b", false),
        (&stack.groups[1], "a", true),
    ] {
        assert_eq!(g.rows, 600);
        assert_eq!(g.test_rows, 120);
        assert_eq!(g.layers[0].layer, leader, "{g:?}");
        assert!(g.layers[0].share > 0.5, "{g:?}");
        let rows: Vec<usize> = (0..m.n_rows())
            .filter(|&r| m.direct[r] == Some(direct))
            .collect();
        let dur: u64 = rows.iter().map(|&r| m.dur_ns[r]).sum();
        for l in &g.layers {
            let ns: f64 = if l.layer == models::input::SELF {
                rows.iter().map(|&r| m.self_ns[r] as f64).sum()
            } else {
                let c = m.column(&format!("excl::{}", l.layer)).unwrap();
                rows.iter().map(|&r| c.values[r]).sum()
            };
            assert_eq!(l.time_share, Some(ns / dur as f64), "{}", l.layer);
        }
        let shares = g.context_share + g.layers.iter().map(|l| l.share).sum::<f64>();
        assert!((shares - 1.0).abs() < 1e-9, "{shares}");
    }
}
