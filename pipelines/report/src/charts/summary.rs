//! The job summary's charts: time split by layer as stacked bars, the access-size histogram, and bytes over
//! time per process as a heat map. Each draws binned data, so its size does not grow with the trace.

use plotters::prelude::*;

use crate::charts::{Area, Chart, DrawResult, PALETTE, draw_legend};
use crate::size::human_size;
use crate::trace_report::breakdown::Breakdown;
use crate::trace_report::summary::{SIZE_BINS, Timeline};

/// Processes shown in the timeline; the others are summed into one row.
pub const TIMELINE_PIDS: usize = 20;

/// The `i`th series colour: the palette, then evenly spaced hues.
pub fn color(i: usize) -> RGBColor {
    match PALETTE.get(i) {
        Some(c) => *c,
        None => {
            let (r, g, b) = HSLColor(((i - PALETTE.len()) as f64 * 0.137) % 1.0, 0.55, 0.5).rgb();
            RGBColor(r, g, b)
        }
    }
}

/// The label of the row drawn at `y`: rows run top to bottom, one per integer y, the first at the top.
fn row_label(labels: &[&str], y: f64) -> String {
    let (n, i) = (labels.len(), y.round());
    if (y - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < n {
        labels[n - 1 - i as usize].to_string()
    } else {
        String::new()
    }
}

fn rect_legend(c: RGBColor) -> impl Fn((i32, i32)) -> Rectangle<(i32, i32)> {
    move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], c.filled())
}

/// One horizontal bar per group, its mean call time stacked by layer.
pub struct StackedBars<'a> {
    pub title: String,
    pub breakdown: &'a Breakdown,
}

impl Chart for StackedBars<'_> {
    fn size(&self) -> (u32, u32) {
        (1000, 150 + 30 * self.breakdown.groups.len() as u32)
    }

    fn draw<DB: DrawingBackend>(&self, root: &Area<DB>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let groups = &self.breakdown.groups;
        let n = groups.len();
        let xmax = groups.iter().map(|g| g.mean_dur_ns).fold(0.0, f64::max) / 1e3;
        let labels: Vec<&str> = groups.iter().map(|g| g.label.as_str()).collect();
        let mut chart = ChartBuilder::on(root)
            .caption(&self.title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(250)
            .build_cartesian_2d(0.0..(xmax * 1.05).max(1e-3), -0.5..(n as f64 - 0.5))?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .max_light_lines(0)
            .x_desc("mean time per call (µs)")
            .y_labels(n.max(1))
            .y_label_formatter(&|y| row_label(&labels, *y))
            .label_style(("sans-serif", 12))
            .draw()?;
        for (k, layer) in self.breakdown.layers.iter().enumerate() {
            let c = color(k);
            chart
                .draw_series(groups.iter().enumerate().map(|(i, g)| {
                    let start: f64 = g.mean_ns[..k].iter().sum::<f64>() / 1e3;
                    let y = (n - 1 - i) as f64;
                    Rectangle::new(
                        [(start, y - 0.35), (start + g.mean_ns[k] / 1e3, y + 0.35)],
                        c.filled(),
                    )
                }))?
                .label(layer.clone())
                .legend(rect_legend(c));
        }
        draw_legend(&mut chart, SeriesLabelPosition::LowerRight, 12)?;
        Ok(())
    }
}

/// Reads and writes per access-size bin (Darshan's bins).
pub struct SizeHistogram {
    /// Per [`SIZE_BINS`] bin: (reads, writes).
    pub counts: Vec<(u64, u64)>,
}

impl Chart for SizeHistogram {
    fn size(&self) -> (u32, u32) {
        (900, 420)
    }

    fn draw<DB: DrawingBackend>(&self, root: &Area<DB>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let n = self.counts.len();
        let ymax = self
            .counts
            .iter()
            .map(|&(r, w)| r.max(w))
            .max()
            .unwrap_or(0) as f64;
        let mut chart = ChartBuilder::on(root)
            .caption(
                "Access sizes (requested bytes per call)",
                ("sans-serif", 20),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(-0.5..(n as f64 - 0.5), 0.0..(ymax * 1.1).max(1.0))?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .max_light_lines(0)
            .x_desc("bytes")
            .y_desc("calls")
            .x_labels(n)
            .x_label_formatter(&|x| {
                let i = x.round();
                if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < n {
                    SIZE_BINS[i as usize].1.to_string()
                } else {
                    String::new()
                }
            })
            .y_label_formatter(&|y| format!("{y:.0}"))
            .label_style(("sans-serif", 12))
            .draw()?;
        for (k, name) in ["read", "write"].into_iter().enumerate() {
            let c = color(k);
            let dx = if k == 0 { -0.4 } else { 0.0 };
            chart
                .draw_series(self.counts.iter().enumerate().map(|(i, &(r, w))| {
                    let v = if k == 0 { r } else { w } as f64;
                    let x = i as f64 + dx;
                    Rectangle::new([(x, 0.0), (x + 0.4, v)], c.filled())
                }))?
                .label(name)
                .legend(rect_legend(c));
        }
        draw_legend(&mut chart, SeriesLabelPosition::UpperRight, 12)?;
        Ok(())
    }
}

/// Bytes read and written per time bin and process, darker for more (log scale).
pub struct TimelineChart {
    /// Row labels, top row first, and bytes per bin.
    pub rows: Vec<(String, Vec<u64>)>,
    pub width_ns: u64,
}

impl TimelineChart {
    /// The [`TIMELINE_PIDS`] processes that moved the most bytes, then the rest summed.
    pub fn from_timeline(t: &Timeline) -> TimelineChart {
        let (Some(&lo), Some(&hi)) = (t.bins.keys().next(), t.bins.keys().next_back()) else {
            return TimelineChart {
                rows: Vec::new(),
                width_ns: t.width_ns,
            };
        };
        let mut per_pid: std::collections::HashMap<u64, u64> = Default::default();
        for pids in t.bins.values() {
            for (&pid, &b) in pids {
                *per_pid.entry(pid).or_default() += b;
            }
        }
        let mut pids: Vec<(u64, u64)> = per_pid.into_iter().collect();
        pids.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let shown: Vec<u64> = pids.iter().take(TIMELINE_PIDS).map(|p| p.0).collect();
        let bins = (hi - lo + 1) as usize;
        let mut rows: Vec<(String, Vec<u64>)> = shown
            .iter()
            .map(|p| (format!("pid {p}"), vec![0; bins]))
            .collect();
        let others = pids.len() > shown.len();
        if others {
            rows.push((
                format!("{} other pids", pids.len() - shown.len()),
                vec![0; bins],
            ));
        }
        for (&i, by_pid) in &t.bins {
            for (pid, &b) in by_pid {
                let row = shown.iter().position(|p| p == pid).unwrap_or(shown.len());
                rows[row].1[(i - lo) as usize] += b;
            }
        }
        TimelineChart {
            rows,
            width_ns: t.width_ns,
        }
    }
}

impl Chart for TimelineChart {
    fn size(&self) -> (u32, u32) {
        (1000, 130 + 22 * self.rows.len().max(1) as u32)
    }

    fn draw<DB: DrawingBackend>(&self, root: &Area<DB>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let n = self.rows.len();
        let bins = self.rows.first().map_or(1, |r| r.1.len());
        let bin_s = self.width_ns as f64 * 1e-9;
        let max = self
            .rows
            .iter()
            .flat_map(|r| &r.1)
            .copied()
            .max()
            .unwrap_or(0);
        let labels: Vec<&str> = self.rows.iter().map(|r| r.0.as_str()).collect();
        let mut chart = ChartBuilder::on(root)
            .caption(
                format!(
                    "Bytes read and written per {} bin (darkest: {})",
                    seconds(bin_s),
                    human_size(max)
                ),
                ("sans-serif", 18),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(140)
            .build_cartesian_2d(0.0..(bins as f64 * bin_s), -0.5..(n.max(1) as f64 - 0.5))?;
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc("seconds since the first I/O call")
            .y_labels(n.max(1))
            .y_label_formatter(&|y| row_label(&labels, *y))
            .label_style(("sans-serif", 12))
            .draw()?;
        let top = (max as f64).ln_1p().max(1e-9);
        for (r, (_, values)) in self.rows.iter().enumerate() {
            let y = (n - 1 - r) as f64;
            chart.draw_series(values.iter().enumerate().filter(|(_, b)| **b > 0).map(
                |(i, &b)| {
                    let t = (b as f64).ln_1p() / top;
                    let mix =
                        |hi: u8, lo: u8| (hi as f64 + (lo as f64 - hi as f64) * t).round() as u8;
                    Rectangle::new(
                        [
                            (i as f64 * bin_s, y - 0.45),
                            ((i + 1) as f64 * bin_s, y + 0.45),
                        ],
                        RGBColor(mix(222, 8), mix(235, 48), mix(247, 107)).filled(),
                    )
                },
            ))?;
        }
        Ok(())
    }
}

/// A duration in the unit that reads best.
pub fn seconds(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.3} s")
    } else if s >= 1e-3 {
        format!("{:.3} ms", s * 1e3)
    } else {
        format!("{:.3} µs", s * 1e6)
    }
}
