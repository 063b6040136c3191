//! Off-CPU time by its reason. dc-trace's sched layer names, for a wait inside a call, the kernel
//! function the thread waited in and that function's layer (args `wait_fn` and `wait_layer`, from
//! its kernel stack). Such an interval is filed under that layer, as the feature
//! `{wait_layer}::{name}@{wait_fn}` (`block::offcpu_D@__iomap_dio_rw`), so its exclusive time is
//! the layer's. A wait whose function has no layer stays `sched`'s, named by its function; a
//! preemption (R) and a wait without a stack stay as they are.

use compact_str::{CompactString, format_compact};
use datasets::{ArgValue, Event};

pub use datasets::vocab::layer::SCHED;

/// The (cat, name) `e`'s time is filed under, when it is not its own.
pub fn feature(e: &Event) -> Option<(CompactString, CompactString)> {
    if e.cat != SCHED {
        return None;
    }
    let Some(ArgValue::Str(function)) = e.args.get("wait_fn") else {
        return None;
    };
    let cat = match e.args.get("wait_layer") {
        Some(ArgValue::Str(layer)) => CompactString::from(layer.as_str()),
        _ => CompactString::const_new(SCHED),
    };
    Some((cat, format_compact!("{}@{function}", e.name)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datasets::{Args, Phase};

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
        let mut other = offcpu("vfs_read", &[("wait_fn", "x"), ("wait_layer", "block")]);
        other.cat = "vfs".into();
        assert_eq!(feature(&other), None);
    }
}
