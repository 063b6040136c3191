//! Off-CPU time by its reason. dc-trace's sched layer names, for a wait inside a call, the kernel
//! function the thread waited in and that function's layer (args `wait_fn` and `wait_layer`, from
//! its kernel stack). Such an interval is filed under that layer, as the feature
//! `{wait_layer}::{name}@{wait_fn}` (`block::offcpu_D@__iomap_dio_rw`), so its exclusive time is
//! the layer's. A wait whose function has no layer stays `sched`'s, named by its function; a
//! preemption (R) and a wait without a stack stay as they are. Each function on a wait's stack also gets the
//! wait's time, inclusive and exact, as `{layer}::offcpu@{function}` ([`functions`]), beside its sampled CPU time
//! `{layer}::oncpu@{function}`. A wait for a CPU a kernel worker held while it ran a layer's work is that layer's.

use compact_str::{CompactString, format_compact};
use datasets::vocab::WokenIn;
use datasets::{ArgValue, Event, Phase};

use crate::frames;
use crate::options::BuildOptions;

pub use datasets::vocab::layer::SCHED;

/// The prefix of a kernel function's inclusive off-CPU time, `{layer}::offcpu@{function}`.
const PREFIX: &str = "offcpu@";

/// Whether `name` is a function's inclusive off-CPU time, which takes no part in exclusive time (its wait does).
pub fn is_inclusive(name: &str) -> bool {
    name.starts_with(PREFIX)
}

/// Whether `e` is a wait that carries its kernel stack.
pub fn has_stack(e: &Event) -> bool {
    e.cat == SCHED && e.args.get("stack").is_some()
}

/// One interval per distinct function on the wait `e`'s stack, its layer's `offcpu@{function}`, over the wait's
/// span: the exact time each function on the stack spent waiting, inclusive, as `oncpu@` is for CPU time.
pub fn functions(e: &Event, opts: &BuildOptions, out: &mut Vec<Event>) {
    let stack = frames::frames(e, opts);
    out.extend(frames::distinct(&stack).map(|(f, l)| {
        frames::frame_event(
            e,
            l,
            format_compact!("{PREFIX}{f}"),
            Phase::Complete,
            e.dur_ns,
        )
    }));
}

/// Whether a wait was woken by a device's completion: in the block softirq, or in a device's hardirq handler
/// (`woken_in`, which dc-trace's irq layer keeps; a timer's interrupt is `timer`).
fn woken_by_device(e: &Event) -> bool {
    matches!(e.args.get("woken_in"), Some(ArgValue::Str(c)) if WokenIn::parse(c).is_some_and(WokenIn::is_device_completion))
}

/// The wait's function when none is known: a wait for a device's completion (an io_uring or libaio submitter asleep
/// until its requests complete).
const COMPLETION: &str = "device_completion";

/// The (cat, name) `e`'s time is filed under, when it is not its own. A wait whose stack names no layer but that a
/// device's completion ended is the block layer's: the thread waited for the device, whatever it slept in.
pub fn feature(e: &Event) -> Option<(CompactString, CompactString)> {
    if e.cat != SCHED {
        return None;
    }
    if e.name == "offcpu_R" {
        return held_by_work(e);
    }
    let function = match e.args.get("wait_fn") {
        Some(ArgValue::Str(f)) => Some(f.as_str()),
        _ => None,
    };
    let cat = match e.args.get("wait_layer") {
        Some(ArgValue::Str(layer)) => CompactString::from(layer.as_str()),
        _ if woken_by_device(e) => CompactString::const_new(datasets::vocab::layer::BLOCK),
        _ => CompactString::const_new(SCHED),
    };
    let function = match function {
        Some(f) => f,
        None if cat != SCHED => COMPLETION,
        None => return None,
    };
    Some((cat, format_compact!("{}@{function}", e.name)))
}

/// A wait for a CPU that a kernel worker held while it ran work of a layer (`held_by_work`, `held_by_work_layer`:
/// a memory cgroup's reclaim queues its pressure events and cache drains to workers): that layer's time, done for
/// the job on its CPU, as `{layer}::offcpu_R@{work}`.
fn held_by_work(e: &Event) -> Option<(CompactString, CompactString)> {
    match (e.args.get("held_by_work"), e.args.get("held_by_work_layer")) {
        (Some(ArgValue::Str(work)), Some(ArgValue::Str(layer))) if layer.as_str() != SCHED => {
            Some((
                CompactString::from(layer.as_str()),
                format_compact!("{}@{work}", e.name),
            ))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::{stream_events, sweep_events};
    use crate::matrix::FeatureKind;
    use crate::oncpu::Period;
    use datasets::Args;

    fn offcpu(name: &str, args: &[(&str, &str)]) -> Event {
        let mut a = Args::default();
        for (k, v) in args {
            a.other.push(((*k).into(), ArgValue::Str((*v).into())));
        }
        Event {
            id: None,
            name: name.into(),
            cat: SCHED.into(),
            ph: Phase::Complete,
            pid: 1,
            tid: 1,
            ts_ns: 0,
            dur_ns: 10,
            args: a,
        }
    }

    #[test]
    fn a_wait_goes_to_the_layer_its_stack_names() {
        let named = |c: &str, n: &str| Some((CompactString::from(c), CompactString::from(n)));
        assert_eq!(
            feature(&offcpu(
                "offcpu_D",
                &[("wait_fn", "__iomap_dio_rw"), ("wait_layer", "block")]
            )),
            named("block", "offcpu_D@__iomap_dio_rw")
        );
        assert_eq!(
            feature(&offcpu("offcpu_S", &[("wait_fn", "do_sys_poll")])),
            named("sched", "offcpu_S@do_sys_poll")
        );
        assert_eq!(feature(&offcpu("offcpu_R", &[])), None);
        assert_eq!(
            feature(&offcpu(
                "offcpu_R",
                &[
                    ("held_by_work", "vmpressure_work_fn"),
                    ("held_by_work_layer", "mm")
                ]
            )),
            Some(("mm".into(), "offcpu_R@vmpressure_work_fn".into()))
        );
        assert_eq!(
            feature(&offcpu("offcpu_R", &[("held_by_work", "vmstat_shepherd")])),
            None
        );
        // No stack, or one whose function has no layer, but a device's completion woke it: the block layer's.
        assert_eq!(
            feature(&offcpu("offcpu_S", &[("woken_in", "softirq:block")])),
            named("block", "offcpu_S@device_completion")
        );
        assert_eq!(
            feature(&offcpu(
                "offcpu_S",
                &[("wait_fn", "io_cqring_wait"), ("woken_in", "hardirq")]
            )),
            named("block", "offcpu_S@io_cqring_wait")
        );
        // A timer's or a task's wakeup says nothing of the device; a layer the stack names stays.
        assert_eq!(feature(&offcpu("offcpu_S", &[("woken_in", "timer")])), None);
        assert_eq!(
            feature(&offcpu(
                "offcpu_D",
                &[
                    ("wait_fn", "folio_wait_bit"),
                    ("wait_layer", "page_cache"),
                    ("woken_in", "softirq:block")
                ]
            )),
            named("page_cache", "offcpu_D@folio_wait_bit")
        );
        let mut other = offcpu("vfs_read", &[("wait_fn", "x"), ("wait_layer", "block")]);
        other.cat = "vfs".into();
        assert_eq!(feature(&other), None);
    }

    fn wait(ts: u64, dur: u64, args: &[(&str, &str)]) -> Event {
        Event {
            ts_ns: ts,
            dur_ns: dur,
            ..offcpu("offcpu_D", args)
        }
    }

    #[test]
    fn each_function_on_a_wait_stack_gets_the_wait_exactly_and_exclusive_time_is_unchanged() {
        // A 10 µs read that waits 5 µs for its direct I/O and 1 µs in vfs_read, which calls itself.
        let events = vec![
            wait(
                2_000,
                5_000,
                &[
                    ("wait_fn", "__iomap_dio_rw"),
                    ("wait_layer", "block"),
                    (
                        "stack",
                        "__schedule;schedule;__iomap_dio_rw;ext4_file_read_iter;vfs_read;ksys_read",
                    ),
                    ("stack_layers", "kernel;kernel;iomap;ext4;vfs;vfs"),
                ],
            ),
            wait(
                8_000,
                1_000,
                &[
                    ("stack", "__schedule;vfs_read;vfs_read;ksys_read"),
                    ("stack_layers", "kernel;vfs;vfs;vfs"),
                ],
            ),
            Event {
                cat: "sys".into(),
                name: "read".into(),
                ..wait(0, 10_000, &[])
            },
        ];
        let events =
            crate::stacks::expand(&events, &BuildOptions::default(), &Period::default()).unwrap();
        let streamed = stream_events(&events, &BuildOptions::default())
            .unwrap()
            .unwrap();
        let swept = sweep_events(&events, &BuildOptions::default()).unwrap();
        for m in [&streamed, &swept] {
            assert_eq!(m.values("vfs::offcpu@vfs_read"), [6_000.0]);
            assert_eq!(m.values("vfs::offcpu@ksys_read"), [6_000.0]);
            assert_eq!(m.values("ext4::offcpu@ext4_file_read_iter"), [5_000.0]);
            assert_eq!(m.values("iomap::offcpu@__iomap_dio_rw"), [5_000.0]);
            assert_eq!(m.values("kernel::offcpu@__schedule"), [6_000.0]);
            assert_eq!(m.values("block::offcpu_D@__iomap_dio_rw"), [5_000.0]);
            assert_eq!(m.values("excl::block"), [5_000.0]);
            assert_eq!(m.values("excl::sched"), [1_000.0]);
            assert_eq!(m.self_ns, [4_000]);
            let excl: Vec<&str> = m
                .features
                .iter()
                .filter(|c| c.kind == FeatureKind::ExclusiveNs)
                .map(|c| c.column.as_str())
                .collect();
            assert_eq!(excl, ["excl::block", "excl::sched"]);
        }
    }
}
