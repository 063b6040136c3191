//! The benchmark's bandwidth against buffer size.

use std::collections::BTreeMap;

use plotters::prelude::*;
use report::charts::draw::{Area, Chart, DrawResult, PALETTE, draw_legend, line_legend};
use report::size::format_size;

use crate::bench::iobench::Call;
use crate::pipeline::records::BenchRow;

/// Bandwidth against buffer size: median with quartile error bars per (operation, call family, mode), log2 x axis.
pub struct BandwidthChart {
    /// Series label → (buffer size, bandwidths of every iteration).
    pub series: BTreeMap<String, BTreeMap<u64, Vec<f64>>>,
}

impl BandwidthChart {
    pub fn from_samples(rows: &[BenchRow]) -> Self {
        let workloads: std::collections::BTreeSet<&str> =
            rows.iter().map(|r| r.workload.as_str()).collect();
        let mut series: BTreeMap<String, BTreeMap<u64, Vec<f64>>> = BTreeMap::new();
        for r in rows {
            let mut label = r.op.clone();
            if r.call != Call::Plain {
                label = format!("{label} {}", r.call.name());
            }
            label = format!("{label} {}", if r.direct { "direct" } else { "buffered" });
            if r.fsync {
                label.push_str(" fsync");
            }
            if workloads.len() > 1 {
                label = format!("{}: {label}", r.workload);
            }
            series
                .entry(label)
                .or_default()
                .entry(r.buffer_size)
                .or_default()
                .push(r.sample.bandwidth_mibs);
        }
        BandwidthChart { series }
    }
}

impl Chart for BandwidthChart {
    fn size(&self) -> (u32, u32) {
        (960, 600)
    }

    fn draw<DB: DrawingBackend>(&self, root: &Area<DB>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let sizes: Vec<u64> = self
            .series
            .values()
            .flat_map(|s| s.keys().copied())
            .collect();
        let (Some(&lo), Some(&hi)) = (sizes.iter().min(), sizes.iter().max()) else {
            return Ok(());
        };
        let (x0, x1) = ((lo as f64).log2() - 0.5, (hi as f64).log2() + 0.5);
        let ymax = self
            .series
            .values()
            .flat_map(|s| s.values())
            .map(|v| quartiles(v).2)
            .fold(0.0, f64::max)
            * 1.1;
        let mut chart = ChartBuilder::on(root)
            .caption(
                "Bandwidth against buffer size (median, quartiles over iterations)",
                ("sans-serif", 22),
            )
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(70)
            .build_cartesian_2d(x0..x1, 0.0..ymax.max(1.0))?;
        chart
            .configure_mesh()
            .max_light_lines(0)
            .x_desc("buffer size (log2 scale)")
            .y_desc("bandwidth (MiB/s)")
            .y_label_formatter(&|v| format!("{v:.0}"))
            .x_labels(((x1 - x0).ceil() as usize + 1).min(16))
            .x_label_formatter(&|x| {
                if (x - x.round()).abs() < 1e-6 {
                    format_size(2f64.powf(x.round()) as u64)
                } else {
                    String::new()
                }
            })
            .label_style(("sans-serif", 14))
            .draw()?;
        for (i, (label, points)) in self.series.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            let stats: Vec<(f64, (f64, f64, f64))> = points
                .iter()
                .map(|(&b, v)| ((b as f64).log2(), quartiles(v)))
                .collect();
            chart
                .draw_series(LineSeries::new(
                    stats.iter().map(|&(x, (_, m, _))| (x, m)),
                    color.stroke_width(2),
                ))?
                .label(label.clone())
                .legend(line_legend(color.stroke_width(2)));
            chart.draw_series(stats.iter().map(|&(x, (q1, m, q3))| {
                ErrorBar::new_vertical(x, q1, m, q3, color.stroke_width(2), 10)
            }))?;
            // Past the palette's colours, series that share a colour differ by their marker.
            let points = stats.iter().map(|&(x, (_, m, _))| (x, m));
            if i < PALETTE.len() {
                chart.draw_series(points.map(|p| Circle::new(p, 4, color.filled())))?;
            } else {
                chart.draw_series(points.map(|p| TriangleMarker::new(p, 6, color.filled())))?;
            }
        }
        draw_legend(&mut chart, SeriesLabelPosition::UpperLeft, 14)?;
        Ok(())
    }
}
/// Median and quartiles by linear interpolation between order statistics (NumPy's default).
pub fn quartiles(values: &[f64]) -> (f64, f64, f64) {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let q = |p: f64| {
        let x = p * (v.len() - 1) as f64;
        let (lo, hi) = (x.floor() as usize, x.ceil() as usize);
        v[lo] + (v[hi] - v[lo]) * (x - lo as f64)
    };
    (q(0.25), q(0.5), q(0.75))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quartiles_match_numpy() {
        // numpy.percentile([1, 2, 3, 4, 10], [25, 50, 75]) == [2, 3, 4]
        assert_eq!(quartiles(&[10.0, 2.0, 3.0, 1.0, 4.0]), (2.0, 3.0, 4.0));
        // numpy.percentile([1, 2, 3, 4], [25, 50, 75]) == [1.75, 2.5, 3.25]
        assert_eq!(quartiles(&[4.0, 3.0, 2.0, 1.0]), (1.75, 2.5, 3.25));
        assert_eq!(quartiles(&[7.0]), (7.0, 7.0, 7.0));
    }
}
