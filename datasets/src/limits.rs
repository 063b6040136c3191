//! The machine's limits on the traced processes' I/O, as dc-trace records them with a trace: their cgroups' throttles
//! and counters, the block queues' settings, `vm.dirty_*` and the mounted file systems. The tracer reads them at the
//! start and at the end of a run and writes each reading as a metadata event ([`LIMITS_EVENT`]); the diagnosis reads
//! them back to tell which limit held the job. One type for both sides, so that they cannot drift apart.

use serde::{Deserialize, Serialize};

use crate::{ArgValue, Args, Event, Phase};

/// Name of the metadata event that holds one reading.
pub const LIMITS_EVENT: &str = "dc_limits";
/// The argument of [`LIMITS_EVENT`] that holds the reading as a JSON object.
pub const LIMITS_ARG: &str = "limits";

/// When a reading was taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Moment {
    /// Before the traced processes were let run.
    Start,
    /// After they ended, or tracing stopped.
    End,
}

/// One reading of every limit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    pub at: Moment,
    /// CLOCK_MONOTONIC, in nanoseconds, when it was read (the trace's clock).
    pub ts_ns: u64,
    /// The cgroups the traced processes ran in, and their ancestors that set a limit.
    pub cgroups: Vec<Cgroup>,
    pub devices: Vec<BlockQueue>,
    pub dirty: Dirty,
    pub mounts: Vec<Mount>,
    /// What could not be read, with why: a reading is never silently partial.
    pub errors: Vec<String>,
    /// At the end of a run, the CPU time the tracer's own eBPF programs took while it ran, as the kernel measured
    /// it: the part of the traced run's cost no untraced run pays. None at the start, in older traces, and where
    /// the kernel keeps no statistics (before Linux 5.8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tracer: Option<TracerCost>,
    /// At the end of a run, what the tracer added to one cheap system call ([`CallCost`]), measured while it ran.
    /// None at the start, in older traces, and from runs that did not measure it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_call: Option<CallCost>,
}

/// What the tracer adds to a traced process's system calls: a helper process of the tracer's times `batches`
/// batches of `calls_per_batch` identical cheap calls (`call`), first before any probe is attached, then in the
/// trace's scope with every probe attached, and keeps each phase's fastest batch, which no interrupt or preemption
/// lengthened. The trace holds none of the helper's events; `events` counts those its traced batches recorded.
/// Their difference over those events is what each event a traced process records costs it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallCost {
    /// The call timed, as `pread64(/proc/self/exe, 1 byte at 0)`.
    pub call: String,
    pub batches: u64,
    pub calls_per_batch: u64,
    /// The fastest batch before the probes were attached, in nanoseconds.
    pub untraced_ns: u64,
    /// The fastest batch traced.
    pub traced_ns: u64,
    /// The events every traced batch recorded, summed.
    pub events: u64,
}

impl CallCost {
    /// What one recorded event cost the traced process, in nanoseconds; none when nothing was recorded.
    pub fn ns_per_event(&self) -> Option<f64> {
        let per_batch = self.events as f64 / self.batches.max(1) as f64;
        (self.events > 0 && self.batches > 0)
            .then(|| self.traced_ns.saturating_sub(self.untraced_ns) as f64 / per_batch)
    }
}

/// The tracer's eBPF programs, summed: `run_time_ns` and `run_cnt` of each program's `bpf_prog_info`, counted
/// while the kernel's BPF statistics were on (`BPF_ENABLE_STATS`). Every program runs on every CPU, for every
/// process its hook sees: the processes outside the trace's scope take a cheap early return.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TracerCost {
    pub bpf_run_ns: u64,
    pub bpf_runs: u64,
}

/// Cgroup v1 (one hierarchy per controller) or v2 (one unified hierarchy).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CgroupVersion {
    V1,
    V2,
}

/// One cgroup directory: its limits and the counters that tell whether they were hit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cgroup {
    pub version: CgroupVersion,
    /// v1: the hierarchy's controllers as `/proc/PID/cgroup` lists them (`blkio`, `cpu,cpuacct`); v2: empty.
    pub controllers: String,
    /// The cgroup's path in its hierarchy (`/user.slice/job`).
    pub path: String,
    /// The directory it was read from.
    pub dir: String,
    /// Throttles per device: v1 `blkio.throttle.*_device`, v2 `io.max`.
    pub io_limits: Vec<IoLimit>,
    /// I/O done per device: v1 `blkio.throttle.io_service_bytes` and `io_serviced`, v2 `io.stat`.
    pub io: Vec<IoCounters>,
    pub cpu: Option<CpuLimit>,
    pub memory: Option<MemoryLimit>,
}

impl Cgroup {
    /// The file a limit of this cgroup is set in, named for a person to change it.
    pub fn setting(&self, v1_file: &str, v2_file: &str) -> String {
        let file = match self.version {
            CgroupVersion::V1 => v1_file,
            CgroupVersion::V2 => v2_file,
        };
        format!("{}/{file}", self.dir)
    }
}

/// A device's throttles; `None` is no limit.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IoLimit {
    /// `MAJ:MIN`.
    pub device: String,
    pub read_bps: Option<u64>,
    pub write_bps: Option<u64>,
    pub read_iops: Option<u64>,
    pub write_iops: Option<u64>,
}

/// A device's I/O done by the cgroup since it was made.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IoCounters {
    pub device: String,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub reads: u64,
    pub writes: u64,
}

/// The CPU bandwidth limit (v1 `cpu.cfs_quota_us`/`cpu.cfs_period_us`, v2 `cpu.max`) and `cpu.stat`'s throttling.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuLimit {
    /// `None`: no quota.
    pub quota_us: Option<u64>,
    pub period_us: u64,
    pub nr_periods: u64,
    pub nr_throttled: u64,
    pub throttled_ns: u64,
}

/// The memory limit (v1 `memory.limit_in_bytes`, v2 `memory.max`) and the counters of hitting it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryLimit {
    /// `None`: no limit.
    pub limit_bytes: Option<u64>,
    pub usage_bytes: Option<u64>,
    /// v1 `memory.failcnt`: charges that hit the limit.
    pub failcnt: Option<u64>,
    /// v2 `memory.events`: `high`, `max`, `oom`, `oom_kill`.
    pub high_events: Option<u64>,
    pub max_events: Option<u64>,
    pub oom_events: Option<u64>,
    pub oom_kill: Option<u64>,
}

impl MemoryLimit {
    /// Times the limit was hit: v1's failcnt, or v2's `max` events.
    pub fn hits(&self) -> Option<u64> {
        self.failcnt.or(self.max_events)
    }
}

/// A whole block device's queue (`/sys/block/NAME/queue`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlockQueue {
    pub name: String,
    /// `MAJ:MIN`.
    pub device: String,
    pub read_ahead_kb: Option<u64>,
    pub nr_requests: Option<u64>,
    /// The active scheduler (the bracketed one).
    pub scheduler: Option<String>,
    pub rotational: Option<bool>,
    /// The device's I/O counters since boot (`/sys/block/NAME/stat`): with the job's own requests, what other
    /// processes did on it over the run. Absent in traces by a dc-trace before them.
    #[serde(default)]
    pub stat: Option<DiskStat>,
    /// What processes outside the traced job submitted to the device over the run, kernel threads not counted (they
    /// may be doing the job's writeback): counted by dc-trace's block layer as bios, before the device merges them
    /// (`io_ticks_ms` 0). In the end record only; absent without the block layer, in a trace of the whole machine,
    /// and in traces by a dc-trace before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submitted_by_others: Option<DiskStat>,
}

/// A whole device's completed I/O since boot, every process's (`/sys/block/NAME/stat`, the kernel's
/// `Documentation/admin-guide/iostats.rst`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiskStat {
    /// Reads completed: requests, after merging.
    pub reads: u64,
    pub read_bytes: u64,
    pub writes: u64,
    pub write_bytes: u64,
    /// Milliseconds the device had requests in flight.
    pub io_ticks_ms: u64,
}

impl DiskStat {
    /// The fields of one `stat` file's line (sectors of 512 bytes, as the kernel counts them whatever the device's
    /// sector size); `Err` names the field that is missing or not a number.
    pub fn parse(line: &str) -> Result<DiskStat, String> {
        let f: Vec<&str> = line.split_whitespace().collect();
        let field = |i: usize, name: &str| -> Result<u64, String> {
            let v = f
                .get(i)
                .ok_or_else(|| format!("field {} ({name}): missing", i + 1))?;
            v.parse()
                .map_err(|e| format!("field {} ({name}): `{v}`: {e}", i + 1))
        };
        Ok(DiskStat {
            reads: field(0, "reads completed")?,
            read_bytes: field(2, "sectors read")? * 512,
            writes: field(4, "writes completed")?,
            write_bytes: field(6, "sectors written")? * 512,
            io_ticks_ms: field(9, "io_ticks")?,
        })
    }

    /// What was done between `self` (earlier) and `later`.
    pub fn since(&self, later: &DiskStat) -> DiskStat {
        DiskStat {
            reads: later.reads.saturating_sub(self.reads),
            read_bytes: later.read_bytes.saturating_sub(self.read_bytes),
            writes: later.writes.saturating_sub(self.writes),
            write_bytes: later.write_bytes.saturating_sub(self.write_bytes),
            io_ticks_ms: later.io_ticks_ms.saturating_sub(self.io_ticks_ms),
        }
    }
}

/// The dirty page cache's thresholds (`/proc/sys/vm/dirty_*`); a `_bytes` of 0 means its `_ratio` holds.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dirty {
    pub dirty_bytes: Option<u64>,
    pub dirty_ratio: Option<u64>,
    pub dirty_background_bytes: Option<u64>,
    pub dirty_background_ratio: Option<u64>,
    pub dirty_expire_centisecs: Option<u64>,
    pub dirty_writeback_centisecs: Option<u64>,
}

/// A mounted file system (one line of `/proc/self/mountinfo`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mount {
    /// `MAJ:MIN` of the device it is on.
    pub device: String,
    pub mount_point: String,
    pub fs_type: String,
    /// The mount source (`/dev/vda1`).
    pub source: String,
    /// Per-mount options (`rw,relatime`).
    pub options: String,
    /// The file system's own options (`rw,errors=remount-ro`).
    pub super_options: String,
}

/// A [`LIMITS_EVENT`] whose reading could not be read back.
#[derive(Debug, thiserror::Error)]
#[error("{LIMITS_EVENT} event at ts {ts_ns} ns: field `{field}`: {msg}")]
pub struct LimitsError {
    pub ts_ns: u64,
    pub field: String,
    pub msg: String,
}

impl Limits {
    /// The metadata event that records this reading, for process `pid`.
    pub fn to_event(&self, pid: u32) -> Event {
        let json = serde_json::to_string(self).expect("limits serialize to JSON");
        Event {
            id: None,
            name: LIMITS_EVENT.into(),
            cat: crate::write::META_CAT.into(),
            ph: Phase::Metadata,
            pid: pid as u64,
            tid: pid as u64,
            ts_ns: self.ts_ns,
            dur_ns: 0,
            args: Args {
                other: vec![(LIMITS_ARG.into(), ArgValue::Json(json))],
                ..Args::default()
            },
        }
    }

    /// The reading `e` records: `None` when it is not a [`LIMITS_EVENT`].
    pub fn from_event(e: &Event) -> Option<Result<Limits, LimitsError>> {
        if e.ph != Phase::Metadata || e.name != LIMITS_EVENT {
            return None;
        }
        let error = |field: &str, msg: String| LimitsError {
            ts_ns: e.ts_ns,
            field: field.to_owned(),
            msg,
        };
        let Some(ArgValue::Json(text)) = e.args.get(LIMITS_ARG) else {
            return Some(Err(error(
                &format!("args.{LIMITS_ARG}"),
                "missing, or not a JSON object".into(),
            )));
        };
        let de = &mut serde_json::Deserializer::from_str(text);
        Some(serde_path_to_error::deserialize(de).map_err(|err| {
            error(
                &format!("args.{LIMITS_ARG}.{}", err.path()),
                err.inner().to_string(),
            )
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::{parse_line, trim_line};

    fn reading() -> Limits {
        Limits {
            at: Moment::Start,
            ts_ns: 1_234_567,
            cgroups: vec![Cgroup {
                version: CgroupVersion::V1,
                controllers: "blkio".into(),
                path: "/job".into(),
                dir: "/sys/fs/cgroup/blkio/job".into(),
                io_limits: vec![IoLimit {
                    device: "254:0".into(),
                    read_bps: Some(8 << 20),
                    ..IoLimit::default()
                }],
                io: vec![IoCounters {
                    device: "254:0".into(),
                    read_bytes: 4096,
                    reads: 1,
                    ..IoCounters::default()
                }],
                cpu: None,
                memory: Some(MemoryLimit {
                    limit_bytes: None,
                    failcnt: Some(0),
                    ..MemoryLimit::default()
                }),
            }],
            devices: vec![BlockQueue {
                name: "vda".into(),
                device: "254:0".into(),
                read_ahead_kb: Some(128),
                nr_requests: Some(256),
                scheduler: Some("mq-deadline".into()),
                rotational: Some(false),
                stat: Some(DiskStat {
                    reads: 3,
                    read_bytes: 12288,
                    ..DiskStat::default()
                }),
                submitted_by_others: Some(DiskStat {
                    writes: 2,
                    write_bytes: 2 << 20,
                    ..DiskStat::default()
                }),
            }],
            dirty: Dirty {
                dirty_ratio: Some(20),
                ..Dirty::default()
            },
            mounts: vec![],
            errors: vec!["x: y".into()],
            per_call: None,
            tracer: Some(TracerCost {
                bpf_run_ns: 52_000_000,
                bpf_runs: 80_000,
            }),
        }
    }

    /// Written by the trace writer's formatter and parsed back by the reader, a reading comes back whole.
    #[test]
    fn a_reading_survives_the_trace_format() {
        let l = reading();
        let mut text = Vec::new();
        crate::write::format_event(&mut text, &l.to_event(42), Some(7), crate::TimeUnit::Us);
        let e = parse_line(trim_line(&text), crate::TimeUnit::Us)
            .unwrap()
            .unwrap();
        assert_eq!(e.pid, 42);
        assert_eq!(Limits::from_event(&e).unwrap().unwrap(), l);
    }

    #[test]
    fn a_bad_reading_names_its_field() {
        let mut e = reading().to_event(1);
        e.args.other[0].1 = ArgValue::Json(r#"{"at":"middle"}"#.into());
        let err = Limits::from_event(&e).unwrap().unwrap_err();
        assert_eq!(err.field, "args.limits.at");
        e.args.other.clear();
        let err = Limits::from_event(&e).unwrap().unwrap_err();
        assert_eq!(err.field, "args.limits");
    }

    /// The kernel's line (iostats.rst: 17 fields since 5.5, 11 before): sectors are 512 bytes.
    #[test]
    fn a_stat_line_gives_requests_bytes_and_busy_time() {
        let line = "15361176  1569199 1847979618 17011145  8631349  1331780 2071006616 13116568        0  2478280 30539103  1079357       95 1694276440   348355   815724    63034";
        let s = DiskStat::parse(line).unwrap();
        assert_eq!(
            s,
            DiskStat {
                reads: 15361176,
                read_bytes: 1847979618 * 512,
                writes: 8631349,
                write_bytes: 2071006616 * 512,
                io_ticks_ms: 2478280,
            }
        );
        let old = DiskStat::parse("1 0 8 0 2 0 16 0 0 5 9").unwrap();
        assert_eq!(
            (old.reads, old.write_bytes, old.io_ticks_ms),
            (1, 16 * 512, 5)
        );
        assert_eq!(
            DiskStat::parse("1 0 8 0 2").unwrap_err(),
            "field 7 (sectors written): missing"
        );
        assert_eq!(
            DiskStat::parse("1 0 x 0 2 0 16 0 0 5").unwrap_err(),
            "field 3 (sectors read): `x`: invalid digit found in string"
        );
        assert_eq!(
            old.since(&DiskStat::parse("4 0 8 0 2 0 48 0 0 5 9").unwrap()),
            DiskStat {
                reads: 3,
                write_bytes: 32 * 512,
                ..DiskStat::default()
            }
        );
    }

    /// A reading by a dc-trace before the devices' counters reads back, without them.
    #[test]
    fn a_reading_without_device_counters_reads_back() {
        let mut l = reading();
        let mut json: serde_json::Value = serde_json::to_value(&l).unwrap();
        json["devices"][0].as_object_mut().unwrap().remove("stat");
        let mut e = l.to_event(1);
        e.args.other[0].1 = ArgValue::Json(json.to_string());
        l.devices[0].stat = None;
        assert_eq!(Limits::from_event(&e).unwrap().unwrap(), l);
    }
}
