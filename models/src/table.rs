//! The human-readable report: per layer, model quality and the ranked features.
use crate::lasso::MAX_SWEEPS;
use crate::report::{LassoReport, LayerRanking, Quality, RankReport, StackReport};
use std::fmt::Write;

/// What the Lasso line says when coordinate descent stopped at the sweep limit somewhere.
fn unconverged(l: &LassoReport) -> String {
    let mut notes = Vec::new();
    if !l.converged {
        notes.push(format!(
            "the fit stopped at {MAX_SWEEPS} sweeps short of its duality gap"
        ));
    }
    if l.unconverged > 0 {
        notes.push(format!(
            "{} cross-validation fit(s) stopped at that limit",
            l.unconverged
        ));
    }
    if notes.is_empty() {
        String::new()
    } else {
        format!(" ({}: nearly collinear features)", notes.join("; "))
    }
}

fn quality(q: &Quality) -> String {
    let mape = q
        .test_mape
        .map_or("n/a".to_string(), |m| format!("{:.1}%", 100.0 * m));
    format!(
        "test R² {:.3}, MAPE {mape}, CV R² {:.3} ± {:.3}",
        q.test_r2, q.cv_r2_mean, q.cv_r2_sd
    )
}

fn layer(out: &mut String, l: &LayerRanking, cumulative: f64) {
    let _ = writeln!(
        out,
        "\nlayer {}: {} rows ({} train, {} test), {} features modelled",
        l.layer,
        l.rows,
        l.train_rows,
        l.test_rows,
        l.model_features.len()
    );
    let _ = writeln!(
        out,
        "  GBM   ({} trees): {}",
        l.gbm.n_trees,
        quality(&l.gbm.quality)
    );
    let _ = writeln!(
        out,
        "  context alone: {}; the layer adds ΔR² {:+.3}",
        context_r2(l.context_r2),
        l.delta_r2
    );
    let _ = writeln!(
        out,
        "  Lasso (alpha {:.3e}, {} non-zero): {}{}",
        l.lasso.alpha,
        l.lasso.nonzero.len(),
        quality(&l.lasso.quality),
        unconverged(&l.lasso)
    );
    let _ = writeln!(
        out,
        "  PCA: {} of {} components reach 95% of the variance",
        l.pca.components_95,
        l.pca.explained_variance_ratio.len()
    );
    if !l.dropped_constant.is_empty() {
        let _ = writeln!(
            out,
            "  left out {} column(s) constant over these rows: {}",
            l.dropped_constant.len(),
            l.dropped_constant.join(", ")
        );
    }
    if !l.correlation.near_duplicate_groups.is_empty() {
        let _ = writeln!(
            out,
            "  near-duplicate groups (|r| > {}): {}",
            l.correlation.duplicate_threshold,
            l.correlation.near_duplicate_groups.len()
        );
    }
    let _ = writeln!(
        out,
        "  {:>4}  {:<48} {:>12} {:>7} {:>7} {:>5} {:>6}",
        "rank", "feature", "importance", "share", "cumul", "lasso", "stable"
    );
    for r in &l.ranking {
        let feature = if r.context {
            format!("{} (context)", r.feature)
        } else {
            r.feature.clone()
        };
        let sign = match r.lasso_sign {
            1 => "+",
            -1 => "-",
            _ => "0",
        };
        let _ = writeln!(
            out,
            "  {:>4}  {:<48} {:>12.4e} {:>6.1}% {:>6.1}% {:>5} {:>5.0}%",
            r.rank,
            feature,
            r.importance,
            100.0 * r.share,
            100.0 * r.cumulative_share,
            sign,
            100.0 * r.fold_stability
        );
    }
    let _ = writeln!(
        out,
        "  ({} of {} features reach {:.0}% of the importance)",
        l.ranking.len(),
        l.model_features.len(),
        100.0 * cumulative
    );
}

fn context_r2(r2: Option<f64>) -> String {
    r2.map_or("no context column varies".to_string(), |v| {
        format!("test R² {v:.3}")
    })
}

fn stack(out: &mut String, s: &StackReport) {
    let _ = writeln!(
        out,
        "\nstack model (context + every layer): {}\n  context alone: {}; context share {:.1}%",
        quality(&s.quality),
        context_r2(s.context_r2),
        100.0 * s.context_share
    );
    for l in &s.layers {
        let _ = writeln!(
            out,
            "  {:<12} share {:>5.1}%  ΔR² over context {:+.3}",
            l.layer,
            100.0 * l.share,
            l.delta_r2
        );
    }
    for g in &s.groups {
        let _ = writeln!(
            out,
            "  {} ({} calls, {} test): context {:.1}%",
            g.group,
            g.rows,
            g.test_rows,
            100.0 * g.context_share
        );
        for l in g
            .layers
            .iter()
            .filter(|l| l.share > 0.0 || l.time_share > Some(0.0))
        {
            let time = l.time_share.map_or("no exclusive time".to_string(), |t| {
                format!("{:.1}% of the time", 100.0 * t)
            });
            let _ = writeln!(
                out,
                "    {:<12} share {:>5.1}%  {time}",
                l.layer,
                100.0 * l.share
            );
        }
    }
}

pub fn render(r: &RankReport) -> String {
    let mut out = format!(
        "target {} · importance {:?} · {:?} split, {:.0}% held out · {} folds · seed {} · {} rows in the matrix\n",
        r.target,
        r.importance,
        r.split,
        100.0 * r.test_fraction,
        r.folds,
        r.seed,
        r.rows_total
    );
    let ar = &r.autoregression;
    match (&ar.skipped, ar.test_r2) {
        (None, Some(r2)) => {
            let _ = writeln!(
                out,
                "history alone (auto-regression on {} previous calls to the same file, {} test calls): test R² {:.3}",
                ar.lags, ar.test_rows, r2
            );
        }
        (reason, _) => {
            let _ = writeln!(
                out,
                "auto-regression skipped: {}",
                reason.as_deref().unwrap_or("no fit")
            );
        }
    }
    if let Some(s) = &r.sample {
        sample(&mut out, s);
    }
    if let Some(s) = &r.stack {
        stack(&mut out, s);
    }
    for l in &r.layers {
        layer(&mut out, l, r.cumulative);
    }
    for s in &r.skipped_layers {
        let _ = writeln!(out, "\nlayer {} skipped: {}", s.layer, s.reason);
    }
    out
}

/// The sample: its rows and kinds, and each layer's share with its bootstrap interval.
fn sample(out: &mut String, s: &crate::report::SampleReport) {
    let _ = writeln!(
        out,
        "\nsample: {} fitted rows (at most {}) in {} kinds of call, {} held out from all {} rows with a target; \
         sized on {} rows for ±{:.3} per layer share",
        s.fitted_rows,
        s.max_rows,
        s.strata.len(),
        s.held_out_rows,
        s.rows_with_target,
        s.pilot_rows,
        s.share_error
    );
    let _ = writeln!(
        out,
        "layer shares with 95% bootstrap intervals ({} refits): widest ±{:.3}{}",
        s.bootstrap,
        s.half_width,
        if s.error_reached {
            ""
        } else {
            ", wider than asked: the sample reached max_rows"
        }
    );
    for l in &s.layers {
        let _ = writeln!(
            out,
            "  {:<12} {:>6.1}%  [{:.1}%, {:.1}%]",
            l.name,
            100.0 * l.share,
            100.0 * l.low,
            100.0 * l.high
        );
    }
}

fn share(v: Option<f64>) -> String {
    v.map_or("n/a".to_string(), |v| format!("{:.0}%", 100.0 * v))
}

/// `dc-model forest`: the forest's R² on the rows it was fitted on and on the held-out rows, then its
/// ranked features.
pub fn forest(r: &crate::forest::ForestReport) -> String {
    let mut out = format!(
        "[{}] random forest ({} trees), {} training / {} held-out rows: training R² {:.3} (what DataCrumbs' analysis reports), held-out R² {:.3}\n",
        r.layer, r.trees, r.n_train, r.n_test, r.train_r2, r.test_r2
    );
    let _ = writeln!(
        out,
        "  {:>4}  {:<48} {:>10} {:>7}",
        "rank", "feature", "importance", "cum"
    );
    for f in &r.ranking {
        let name = if f.context {
            format!("{} (context)", f.feature)
        } else {
            f.feature.clone()
        };
        let _ = writeln!(
            out,
            "  {:>4}  {:<48} {:>10.4} {:>6.1}%",
            f.rank,
            name,
            f.importance,
            100.0 * f.cumulative_share
        );
    }
    out
}

/// `dc-model rules`: each rule for the slow calls with its held-out precision and recall.
pub fn rules(r: &crate::rules::RulesReport) -> String {
    let mut out = format!(
        "[{}] slow calls (at or below the {:.0}th percentile of their op and size, ties included): {} training, {} held-out; depth-{} tree on held-out rows: precision {}, recall {}\n",
        r.layer,
        100.0 * r.slow_share,
        r.slow_train,
        r.slow_test,
        r.depth,
        share(r.precision),
        share(r.recall)
    );
    if r.unjudged_train + r.unjudged_test > 0 {
        let _ = writeln!(
            out,
            "  {} training and {} held-out calls are of an op and size with fewer than 10 training calls or one target, so none is slow: left out",
            r.unjudged_train, r.unjudged_test
        );
    }
    if r.rules.is_empty() {
        out.push_str("  no leaf of the tree predicts slow\n");
    }
    for rule in &r.rules {
        let _ = writeln!(
            out,
            "  slow when {}: {} held-out calls, precision {}, recall {}",
            rule.text(),
            rule.matched,
            share(rule.precision),
            share(rule.recall)
        );
    }
    out
}
