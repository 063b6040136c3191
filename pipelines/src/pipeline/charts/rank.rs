//! The ranking's charts: one panel per layer for importance, correlation and predictions, and the PCA curves.

use models::report::{FeatureImportance, LayerRanking};
use models::{ImportanceKind, RankReport};
use plotters::prelude::*;
use report::charts::draw::{Area, Chart, DrawResult, PALETTE, draw_legend, line_legend};

/// Features shown per layer in the importance chart and the heatmap.
const TOP_IMPORTANCE: usize = 12;
const TOP_HEATMAP: usize = 8;
/// Held-out points drawn per prediction panel, at most: 300 keep the SVG of nine panels near 300 KB.
const PREDICTION_POINTS: usize = 300;

/// Panels of a per-layer figure: two columns.
fn panels<DB: DrawingBackend>(root: &Area<DB>, n: usize) -> Vec<Area<DB>> {
    let cols = n.clamp(1, 2);
    let rows = n.div_ceil(cols).max(1);
    root.split_evenly((rows, cols))
}

fn grid_size(n: usize, panel: (u32, u32)) -> (u32, u32) {
    let cols = n.clamp(1, 2) as u32;
    let rows = n.div_ceil(2).max(1) as u32;
    (panel.0 * cols, panel.1 * rows)
}

fn short(feature: &str) -> &str {
    feature.split_once("::").map(|(_, n)| n).unwrap_or(feature)
}

/// Declares `$chart { rank }`: a figure of one panel per layer of the ranking, two columns; each
/// panel is `$panel_size`, drawn by `$draw_panel` from the panel's area, its layer and the ranking.
macro_rules! per_layer_chart {
    (
        $(#[$doc:meta])*
        $chart:ident,
        $panel_size:expr,
        |$area:ident, $layer:ident, $rank:ident| $draw_panel:expr
    ) => {
        $(#[$doc])*
        pub struct $chart<'a> {
            pub rank: &'a RankReport,
        }

        impl Chart for $chart<'_> {
            fn size(&self) -> (u32, u32) {
                grid_size(self.rank.layers.len(), $panel_size)
            }

            fn draw<DB: DrawingBackend>(&self, root: &Area<DB>) -> DrawResult
            where
                DB::ErrorType: 'static,
            {
                let $rank = self.rank;
                let layers = &$rank.layers;
                for ($area, $layer) in panels(root, layers.len()).iter().zip(layers) {
                    $draw_panel?;
                }
                Ok(())
            }
        }
    };
}

/// The kind's name as the pipeline file and `dc-model --importance` spell it.
pub fn importance_name(kind: ImportanceKind) -> String {
    match serde_json::to_value(kind) {
        Ok(serde_json::Value::String(name)) => name,
        other => unreachable!("an importance kind serializes as its name, not {other:?}"),
    }
}

/// The feature's share of the layer's importance of the kind the ranking used (always computed).
fn share(i: &FeatureImportance, kind: ImportanceKind) -> f64 {
    match kind {
        ImportanceKind::Shap => i.shap_share,
        ImportanceKind::Gain => Some(i.gain_share),
        ImportanceKind::Permutation => i.permutation_share,
    }
    .unwrap_or(0.0)
}

per_layer_chart!(
    /// Per layer: the top features' importance shares, the cumulative share, and the cut.
    ImportanceChart,
    (760, 420),
    |area, layer, rank| importance_panel(area, layer, rank.importance, rank.cumulative)
);

fn importance_panel<DB: DrawingBackend>(
    area: &Area<DB>,
    l: &LayerRanking,
    kind: ImportanceKind,
    cut: f64,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let mut shares: Vec<(&str, f64)> = l
        .importances
        .iter()
        .map(|i| (i.feature.as_str(), share(i, kind)))
        .collect();
    shares.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
    shares.truncate(TOP_IMPORTANCE);
    let kept: std::collections::BTreeSet<&str> =
        l.ranking.iter().map(|r| r.feature.as_str()).collect();
    let n = shares.len();
    let names: Vec<String> = shares.iter().map(|(f, _)| short(f).to_string()).collect();
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!(
                "{}: {} importance share ({} rows)",
                l.layer,
                importance_name(kind),
                l.rows
            ),
            ("sans-serif", 18),
        )
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(210)
        .build_cartesian_2d(0.0..1.0, -0.5..(n as f64 - 0.5))?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .max_light_lines(0)
        .x_desc("share of the layer's importance")
        .y_labels(n.max(1))
        .y_label_formatter(&|y| {
            let i = y.round();
            if (y - i).abs() < 1e-6 && i >= 0.0 {
                names.get(n - 1 - i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .label_style(("sans-serif", 12))
        .draw()?;
    let y = |i: usize| (n - 1 - i) as f64;
    chart.draw_series(shares.iter().enumerate().map(|(i, (f, s))| {
        let color = if kept.contains(f) {
            PALETTE[0]
        } else {
            RGBColor(170, 170, 170)
        };
        Rectangle::new([(0.0, y(i) - 0.35), (*s, y(i) + 0.35)], color.filled())
    }))?;
    let mut acc = 0.0;
    let cumulative: Vec<(f64, f64)> = shares
        .iter()
        .enumerate()
        .map(|(i, (_, s))| {
            acc += s;
            (acc.min(1.0), y(i))
        })
        .collect();
    chart
        .draw_series(LineSeries::new(
            cumulative.iter().copied(),
            PALETTE[1].stroke_width(2),
        ))?
        .label("cumulative share")
        .legend(line_legend(PALETTE[1].stroke_width(2)));
    chart.draw_series(
        cumulative
            .iter()
            .map(|&p| Circle::new(p, 3, PALETTE[1].filled())),
    )?;
    chart
        .draw_series(LineSeries::new(
            [(cut, -0.5), (cut, n as f64 - 0.5)],
            PALETTE[3].stroke_width(2),
        ))?
        .label(format!(
            "{:.0}% cut ({} kept)",
            cut * 100.0,
            l.ranking.len()
        ))
        .legend(line_legend(PALETTE[3].stroke_width(2)));
    draw_legend(&mut chart, SeriesLabelPosition::LowerRight, 12)?;
    Ok(())
}

/// Cumulative explained variance of the principal components, one line per layer, with the 95% line.
pub struct PcaChart<'a> {
    pub rank: &'a RankReport,
}

impl Chart for PcaChart<'_> {
    fn size(&self) -> (u32, u32) {
        (960, 600)
    }

    fn draw<DB: DrawingBackend>(&self, root: &Area<DB>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let kmax = self
            .rank
            .layers
            .iter()
            .map(|l| l.pca.explained_variance_ratio.len())
            .max()
            .unwrap_or(1)
            .max(2);
        let mut chart = ChartBuilder::on(root)
            .caption(
                "PCA: cumulative explained variance per layer",
                ("sans-serif", 22),
            )
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(60)
            .build_cartesian_2d(0.5..(kmax as f64 + 0.5), 0.0..1.05)?;
        chart
            .configure_mesh()
            .max_light_lines(0)
            .x_desc("principal components")
            .y_desc("cumulative explained variance")
            .x_labels(kmax.min(20))
            .x_label_formatter(&|x| {
                if (x - x.round()).abs() < 1e-6 {
                    format!("{}", x.round() as i64)
                } else {
                    String::new()
                }
            })
            .label_style(("sans-serif", 14))
            .draw()?;
        chart
            .draw_series(LineSeries::new(
                [(0.5, 0.95), (kmax as f64 + 0.5, 0.95)],
                BLACK.stroke_width(1),
            ))?
            .label("95%")
            .legend(line_legend(BLACK.stroke_width(1)));
        for (i, l) in self.rank.layers.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            let mut acc = 0.0;
            let pts: Vec<(f64, f64)> = l
                .pca
                .explained_variance_ratio
                .iter()
                .enumerate()
                .map(|(k, r)| {
                    acc += r;
                    ((k + 1) as f64, acc)
                })
                .collect();
            chart
                .draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))?
                .label(format!("{} ({} for 95%)", l.layer, l.pca.components_95))
                .legend(line_legend(color.stroke_width(2)));
            chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
        }
        draw_legend(&mut chart, SeriesLabelPosition::LowerRight, 14)?;
        Ok(())
    }
}

per_layer_chart!(
    /// Per layer: Pearson correlations among the top-ranked features and the target.
    HeatmapChart,
    (640, 560),
    |area, layer, rank| heatmap_panel(area, layer, &rank.target)
);

/// Blue for -1, white for 0, red for +1.
fn diverging(r: f64) -> RGBColor {
    let t = r.clamp(-1.0, 1.0);
    let mix = |a: u8, b: u8, f: f64| (a as f64 + (b as f64 - a as f64) * f).round() as u8;
    if t < 0.0 {
        RGBColor(mix(255, 33, -t), mix(255, 102, -t), mix(255, 172, -t))
    } else {
        RGBColor(mix(255, 178, t), mix(255, 24, t), mix(255, 43, t))
    }
}

fn heatmap_panel<DB: DrawingBackend>(area: &Area<DB>, l: &LayerRanking, target: &str) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let index = |name: &str| l.correlation.names.iter().position(|n| n == name);
    let mut picked: Vec<(String, usize)> = l
        .ranking
        .iter()
        .filter_map(|r| index(&r.feature).map(|i| (short(&r.feature).to_string(), i)))
        .take(TOP_HEATMAP)
        .collect();
    if let Some(t) = l.correlation.names.len().checked_sub(1) {
        picked.push((target.to_string(), t));
    }
    let k = picked.len();
    // Columns carry numbers, rows carry the number and the name: long names do not fit under columns.
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!("{}: Pearson r, top features and {target}", l.layer),
            ("sans-serif", 18),
        )
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(230)
        .build_cartesian_2d(-0.5..(k as f64 - 0.5), -0.5..(k as f64 - 0.5))?;
    let index_of = |v: f64| {
        let i = v.round();
        ((v - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < k).then_some(i as usize)
    };
    chart
        .configure_mesh()
        .disable_mesh()
        .x_labels(k.max(1))
        .y_labels(k.max(1))
        .x_label_formatter(&|v| {
            index_of(*v)
                .map(|i| format!("{}", i + 1))
                .unwrap_or_default()
        })
        .y_label_formatter(&|v| {
            index_of(*v)
                .map(|i| {
                    let name: String = picked[k - 1 - i].0.chars().take(30).collect();
                    format!("{name} ({})", k - i)
                })
                .unwrap_or_default()
        })
        .label_style(("sans-serif", 12))
        .draw()?;
    for (a, (_, ia)) in picked.iter().enumerate() {
        for (b, (_, ib)) in picked.iter().enumerate() {
            let r = l
                .correlation
                .pearson
                .get(*ib)
                .and_then(|row| row.get(*ia))
                .copied()
                .unwrap_or(f64::NAN);
            let (x, y) = (a as f64, (k - 1 - b) as f64);
            let fill = if r.is_finite() {
                diverging(r)
            } else {
                RGBColor(220, 220, 220)
            };
            chart.draw_series(std::iter::once(Rectangle::new(
                [(x - 0.5, y - 0.5), (x + 0.5, y + 0.5)],
                fill.filled(),
            )))?;
            let text = if r.is_finite() {
                format!("{r:.2}")
            } else {
                "n/a".into()
            };
            let style = ("sans-serif", 12).into_font().color(&BLACK).pos(
                plotters::style::text_anchor::Pos::new(
                    plotters::style::text_anchor::HPos::Center,
                    plotters::style::text_anchor::VPos::Center,
                ),
            );
            chart.draw_series(std::iter::once(Text::new(text, (x, y), style)))?;
        }
    }
    Ok(())
}

per_layer_chart!(
    /// Per layer: the GBM's prediction against the measured target on the held-out rows.
    PredictionChart,
    (560, 480),
    |area, layer, rank| prediction_panel(area, layer, &rank.target)
);

fn prediction_panel<DB: DrawingBackend>(
    area: &Area<DB>,
    l: &LayerRanking,
    target: &str,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let hi = l
        .test_predictions
        .iter()
        .flat_map(|p| [p.measured, p.gbm])
        .fold(0.0, f64::max)
        * 1.05;
    let lo = l
        .test_predictions
        .iter()
        .flat_map(|p| [p.measured, p.gbm])
        .fold(0.0, f64::min);
    let hi = if hi > lo { hi } else { lo + 1.0 };
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!(
                "{}: held-out GBM, R² = {:.3} ({} rows{})",
                l.layer,
                l.gbm.quality.test_r2,
                l.test_predictions.len(),
                if l.test_predictions.len() > PREDICTION_POINTS {
                    ", a sample drawn"
                } else {
                    ""
                }
            ),
            ("sans-serif", 18),
        )
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(lo..hi, lo..hi)?;
    chart
        .configure_mesh()
        .max_light_lines(0)
        .x_desc(format!("measured {target}"))
        .y_desc("predicted")
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&|v| format!("{v:.0}"))
        .label_style(("sans-serif", 12))
        .draw()?;
    chart.draw_series(LineSeries::new([(lo, lo), (hi, hi)], BLACK.stroke_width(1)))?;
    // Thousands of points would make a multi-megabyte SVG; an even sample shows the same cloud.
    let step = l.test_predictions.len().div_ceil(PREDICTION_POINTS).max(1);
    chart.draw_series(
        l.test_predictions
            .iter()
            .step_by(step)
            .map(|p| Circle::new((p.measured, p.gbm), 2, PALETTE[0].mix(0.5).filled())),
    )?;
    Ok(())
}
