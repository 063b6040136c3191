//! Profile mode: the kernel adds each call to a per-CPU counter keyed by (interval, pid, tid,
//! probe, file); this module takes finished intervals out of that map.

use std::collections::BTreeMap;

use crate::error::Result;
use aya::maps::{MapData, PerCpuHashMap};
use tracer_ebpf::{ProfileKey, ProfileValue};

pub type Counters = PerCpuHashMap<MapData, ProfileKey, ProfileValue>;

/// Removes and returns, summed over CPUs and sorted, the counters of intervals before `before`
/// (every interval when `None`).
pub fn take(map: &mut Counters, before: Option<u64>) -> Result<Vec<(ProfileKey, ProfileValue)>> {
    let keys: Vec<ProfileKey> = map
        .keys()
        .filter_map(|k| k.ok())
        .filter(|k| before.is_none_or(|b| k.bucket < b))
        .collect();
    let mut out = BTreeMap::new();
    for k in keys {
        if let Ok(per_cpu) = map.get(&k, 0) {
            out.insert(k, sum(per_cpu.iter()));
        }
        map.remove(&k)?;
    }
    Ok(out.into_iter().collect())
}

pub fn sum<'a>(values: impl Iterator<Item = &'a ProfileValue>) -> ProfileValue {
    values.fold(ProfileValue::default(), |a, v| ProfileValue {
        count: a.count + v.count,
        time_ns: a.time_ns + v.time_ns,
        bytes: a.bytes + v.bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_cpus() {
        let v = [
            ProfileValue {
                count: 2,
                time_ns: 10,
                bytes: 4096,
            },
            ProfileValue {
                count: 1,
                time_ns: 5,
                bytes: 0,
            },
        ];
        assert_eq!(
            sum(v.iter()),
            ProfileValue {
                count: 3,
                time_ns: 15,
                bytes: 4096
            }
        );
    }
}
