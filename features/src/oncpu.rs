//! On-CPU time by kernel function, from samples. dc-trace's oncpu layer writes a point event
//! `oncpu`/`sample` each time the CPU clock ticks in a traced call, with the CPU time it stands for
//! (`period_ns`), its kernel stack innermost first (`stack`) and each frame's layer
//! (`stack_layers`, by dc-trace's kernel layer map). Before attribution, each sample becomes one
//! point event per distinct function on its stack, `{layer}::oncpu@{function}`, and one
//! `{layer}::oncpu` for the layer whose code the CPU was running: its innermost frame of a mapped
//! layer (a helper such as `copy_user_generic_string` belongs to its caller's layer), else `kernel`.
//! Those points are counted per row like any other. Then [`apply`] turns the counts into time:
//! `{layer}::oncpu@{function}` gets samples × period (inclusive time, an estimate whose sample
//! count stays beside it as `count::{layer}::oncpu@{function}`), and each row's `{layer}::oncpu`
//! samples × period move from `self_ns`, the time no traced interval explains, to `excl::{layer}`;
//! at most all of `self_ns`, shared in proportion when the samples claim more, so `self_ns + Σ
//! excl::* == dur` still holds exactly.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, Result};
use compact_str::format_compact;
use datasets::{ArgValue, Event, Phase};

use crate::frames::{self, UNMAPPED};
use crate::matrix::{FeatureColumn, FeatureKind, FeatureMatrix};
use crate::options::BuildOptions;

/// The cat and name of dc-trace's samples.
pub use datasets::vocab::layer::ONCPU as CAT;
pub const SAMPLE: &str = "sample";
/// The name of a layer's exclusive share, and the prefix of a function's inclusive time.
pub const SELF: &str = "oncpu";
const PREFIX: &str = "oncpu@";

/// The sample period of the inputs: one for all of them, since a column's time is its count times
/// it. Shared by the threads that read inputs in parallel.
#[derive(Debug, Default)]
pub struct Period(AtomicU64);

impl Period {
    fn check(&self, ns: u64, e: &Event) -> Result<()> {
        if ns == 0 {
            return Err(Error::NoPeriod {
                ts: e.ts_ns,
                pid: e.pid,
                tid: e.tid,
            });
        }
        match self
            .0
            .compare_exchange(0, ns, Ordering::Relaxed, Ordering::Relaxed)
        {
            Ok(_) => Ok(()),
            Err(seen) if seen == ns => Ok(()),
            Err(seen) => Err(Error::Periods {
                seen,
                ns,
                pid: e.pid,
                tid: e.tid,
                ts: e.ts_ns,
            }),
        }
    }

    /// The period, once a sample was seen.
    pub fn get(&self) -> Option<u64> {
        Some(self.0.load(Ordering::Relaxed)).filter(|&p| p > 0)
    }
}

pub fn is_sample(e: &Event) -> bool {
    e.cat == CAT && e.name == SAMPLE
}

/// The points of the sample `e` (see the module).
pub fn points(e: &Event, opts: &BuildOptions, period: &Period, out: &mut Vec<Event>) -> Result<()> {
    let ns = match e.args.get("period_ns") {
        Some(ArgValue::Int(n)) => u64::try_from(*n).unwrap_or(0),
        _ => 0,
    };
    period.check(ns, e)?;
    let point = |cat: &str, name| frames::frame_event(e, cat, name, Phase::Instant, 0);
    let stack = frames::frames(e, opts);
    let own = stack
        .iter()
        .map(|&(_, l)| l)
        .find(|&l| l != UNMAPPED)
        .unwrap_or(UNMAPPED);
    out.push(point(own, SELF.into()));
    for (f, l) in frames::distinct(&stack) {
        out.push(point(l, format_compact!("{PREFIX}{f}")));
    }
    Ok(())
}

/// Turns the sample counts of `m` into time (see the module); nothing without samples.
pub fn apply(m: &mut FeatureMatrix, period: &Period) {
    let Some(p) = period.get() else { return };
    let p = p as f64;
    let mut inclusive = Vec::new();
    let mut shares: Vec<(String, Vec<f64>)> = Vec::new();
    for c in &m.features {
        if c.kind != FeatureKind::Count {
            continue;
        }
        if c.name.starts_with(PREFIX) {
            let ns = c.values.iter().map(|n| n * p).collect();
            inclusive.push(FeatureColumn::new(
                &c.layer,
                &c.name,
                FeatureKind::TimeNs,
                ns,
            ));
        } else if c.name == SELF {
            shares.push((c.layer.clone(), c.values.iter().map(|n| n * p).collect()));
        }
    }
    let mut moved: Vec<Vec<u64>> = vec![vec![0; m.self_ns.len()]; shares.len()];
    for (row, own) in m.self_ns.iter_mut().enumerate() {
        let want: Vec<u64> = shares.iter().map(|(_, v)| v[row] as u64).collect();
        for (l, ns) in share(*own, &want).into_iter().enumerate() {
            moved[l][row] = ns;
            *own -= ns;
        }
    }
    for ((layer, _), ns) in shares.iter().zip(moved) {
        let values = ns.iter().map(|&n| n as f64);
        match m
            .features
            .iter_mut()
            .find(|c| c.kind == FeatureKind::ExclusiveNs && &c.layer == layer)
        {
            Some(c) => c.values.iter_mut().zip(values).for_each(|(v, n)| *v += n),
            None => m.features.push(FeatureColumn::new(
                layer,
                "",
                FeatureKind::ExclusiveNs,
                values.collect(),
            )),
        }
    }
    m.features.extend(inclusive);
    // The order assemble gives: time columns, then excl::, then counts, each by name.
    let rank = |k: FeatureKind| match k {
        FeatureKind::TimeNs => 0,
        FeatureKind::ExclusiveNs => 1,
        FeatureKind::Count => 2,
    };
    m.features
        .sort_by(|a, b| (rank(a.kind), &a.layer, &a.name).cmp(&(rank(b.kind), &b.layer, &b.name)));
}

/// What each of `want` gets of `own`: all it wants when that fits, else `own` shared in proportion
/// (rounded down, the remainder to the largest claims first), so the shares sum to at most `own`.
fn share(own: u64, want: &[u64]) -> Vec<u64> {
    let total: u64 = want.iter().sum();
    if total <= own {
        return want.to_vec();
    }
    let mut got: Vec<u64> = want
        .iter()
        .map(|&w| (w as u128 * own as u128 / total as u128) as u64)
        .collect();
    let mut left = own - got.iter().sum::<u64>();
    let mut by_claim: Vec<usize> = (0..want.len()).collect();
    by_claim.sort_by_key(|&i| std::cmp::Reverse(want[i]));
    for i in by_claim {
        if left == 0 {
            break;
        }
        got[i] += 1;
        left -= 1;
    }
    got
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::from_events;
    use datasets::Args;

    fn event(ph: Phase, cat: &str, name: &str, ts: u64, dur: u64) -> Event {
        Event {
            id: None,
            name: name.into(),
            cat: cat.into(),
            ph,
            pid: 1,
            tid: 1,
            ts_ns: ts,
            dur_ns: dur,
            args: Args::default(),
        }
    }

    fn sample(ts: u64, period: i64, stack: &str, layers: &str) -> Event {
        let mut e = event(Phase::Instant, CAT, SAMPLE, ts, 0);
        e.args.other = vec![
            ("period_ns".into(), ArgValue::Int(period)),
            ("stack".into(), ArgValue::Str(stack.into())),
            ("stack_layers".into(), ArgValue::Str(layers.into())),
        ];
        e
    }

    const READ: &str =
        "copy_user_generic_string;filemap_read;ext4_file_read_iter;vfs_read;ksys_read";
    const READ_LAYERS: &str = "kernel;page_cache;ext4;vfs;kernel";

    #[test]
    fn samples_give_each_function_on_the_stack_its_time_and_the_leaf_layer_the_call_self_time() {
        // A 10 µs read with a 2 µs block interval inside (self time 8 µs) and three 1 µs samples:
        // two in filemap_read under ext4 and vfs, one in vfs_read itself.
        let events = vec![
            sample(1_000, 1_000, READ, READ_LAYERS),
            event(Phase::Complete, "block", "block_device_read", 2_000, 2_000),
            sample(5_000, 1_000, READ, READ_LAYERS),
            sample(6_000, 1_000, "vfs_read;ksys_read", "vfs;kernel"),
            event(Phase::Complete, "sys", "read", 0, 10_000),
        ];
        let m = from_events(&events, &BuildOptions::default()).unwrap();
        assert_eq!(m.dur_ns, [10_000]);
        assert_eq!(m.values("vfs::oncpu@vfs_read"), [3_000.0]);
        assert_eq!(m.values("count::vfs::oncpu@vfs_read"), [3.0]);
        assert_eq!(m.values("ext4::oncpu@ext4_file_read_iter"), [2_000.0]);
        assert_eq!(m.values("page_cache::oncpu@filemap_read"), [2_000.0]);
        assert_eq!(
            m.values("kernel::oncpu@copy_user_generic_string"),
            [2_000.0]
        );
        assert_eq!(m.values("count::page_cache::oncpu"), [2.0]);
        assert_eq!(m.values("excl::page_cache"), [2_000.0]);
        assert_eq!(m.values("excl::vfs"), [1_000.0]);
        assert_eq!(m.values("excl::block"), [2_000.0]);
        assert_eq!(m.self_ns, [5_000]);
        let excl: f64 = m
            .features
            .iter()
            .filter(|c| c.kind == FeatureKind::ExclusiveNs)
            .map(|c| c.values[0])
            .sum();
        assert_eq!(m.self_ns[0] as f64 + excl, 10_000.0);
    }

    #[test]
    fn samples_claiming_more_than_the_self_time_share_it_in_proportion() {
        // A 2.5 µs call, no interval inside, three 1 µs samples: 2 in page_cache, 1 in vfs.
        let events = vec![
            sample(100, 1_000, READ, READ_LAYERS),
            sample(200, 1_000, READ, READ_LAYERS),
            sample(300, 1_000, "vfs_read", "vfs"),
            event(Phase::Complete, "sys", "read", 0, 2_500),
        ];
        let m = from_events(&events, &BuildOptions::default()).unwrap();
        assert_eq!(m.values("excl::page_cache"), [1_667.0]);
        assert_eq!(m.values("excl::vfs"), [833.0]);
        assert_eq!(m.self_ns, [0]);
        assert_eq!(share(10, &[3, 3, 3]), [3, 3, 3]);
        assert_eq!(share(7, &[5, 5]), [4, 3]);
    }

    #[test]
    fn samples_at_two_periods_are_refused() {
        let events = vec![
            sample(100, 1_000, READ, READ_LAYERS),
            sample(200, 2_000, READ, READ_LAYERS),
            event(Phase::Complete, "sys", "read", 0, 2_500),
        ];
        let err = from_events(&events, &BuildOptions::default()).unwrap_err();
        assert_eq!(
            format!("{err:#}"),
            "oncpu samples at two periods, 1000 ns and 2000 ns (pid 1, tid 1, ts 200)"
        );
    }
}
