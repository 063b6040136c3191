//! Reads the settings that bound the traced processes' I/O ([`datasets::limits::Limits`]): their cgroups' (v1 and v2)
//! throttles with the counters that tell whether they were hit, the block queues, `vm.dirty_*` and the mounts. Every
//! path is taken under a root directory, so that tests read a fake tree instead of this machine's settings. The
//! cgroups are found once, from the processes at the start ([`LimitsReader::for_pids`]), and read again at the end
//! from the same directories: by then the processes are gone, but their cgroups' counters remain.

use std::fs;
use std::path::{Path, PathBuf};

use datasets::limits::{
    BlockQueue, Cgroup, CgroupVersion, CpuLimit, Dirty, DiskStat, IoCounters, IoLimit, Limits,
    MemoryLimit, Moment, Mount,
};

/// The v1 controllers whose hierarchies hold a limit on I/O or on the CPU and memory it needs.
const V1_CONTROLLERS: [&str; 3] = ["blkio", "cpu", "memory"];
/// A v1 limit within the largest page size (64 KiB) of `i64::MAX` is the kernel's "no limit": it prints its page
/// counter's maximum (`LONG_MAX / PAGE_SIZE`) times the page size.
const V1_UNLIMITED: u64 = i64::MAX as u64 - (64 << 10);

/// One cgroup directory to read.
#[derive(Clone, Debug, PartialEq)]
struct CgroupDir {
    version: CgroupVersion,
    controllers: String,
    path: String,
    /// Its directory as the machine names it (without the reader's root).
    dir: PathBuf,
    /// Whether it is the processes' own cgroup, read whether or not it sets a limit.
    own: bool,
}

/// Finds the cgroups once, then reads every limit whenever asked.
#[derive(Clone, Debug)]
pub struct LimitsReader {
    root: PathBuf,
    cgroups: Vec<CgroupDir>,
    /// What could not be read while finding the cgroups.
    errors: Vec<String>,
}

/// A line of `/proc/self/mountinfo`, split.
struct MountLine {
    device: String,
    root: String,
    mount_point: String,
    options: String,
    fs_type: String,
    source: String,
    super_options: String,
}

/// Undoes mountinfo's octal escapes (`\040` for a space).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && let Some(v) = std::str::from_utf8(&b[i + 1..i + 4])
                .ok()
                .and_then(|o| u8::from_str_radix(o, 8).ok())
        {
            out.push(v);
            i += 4;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn parse_mountinfo(path: &Path, text: &str, errors: &mut Vec<String>) -> Vec<MountLine> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let Some((left, right)) = line.split_once(" - ") else {
            errors.push(format!(
                "{}: line {}: no ` - ` separator",
                path.display(),
                n + 1
            ));
            continue;
        };
        let l: Vec<&str> = left.split(' ').collect();
        let r: Vec<&str> = right.splitn(3, ' ').collect();
        if l.len() < 6 || r.len() < 3 {
            errors.push(format!(
                "{}: line {}: {} fields before ` - ` and {} after, expected at least 6 and 3",
                path.display(),
                n + 1,
                l.len(),
                r.len()
            ));
            continue;
        }
        out.push(MountLine {
            device: l[2].to_owned(),
            root: unescape(l[3]),
            mount_point: unescape(l[4]),
            options: l[5].to_owned(),
            fs_type: r[0].to_owned(),
            source: unescape(r[1]),
            super_options: r[2].to_owned(),
        });
    }
    out
}

/// `path` under `root` (`path` is absolute).
fn under(root: &Path, path: &Path) -> PathBuf {
    root.join(path.strip_prefix("/").unwrap_or(path))
}

/// A file's text, `None` when it does not exist (that limit is not offered here); other failures are errors.
fn read_opt(root: &Path, path: &Path, errors: &mut Vec<String>) -> Option<String> {
    match fs::read_to_string(under(root, path)) {
        Ok(s) => Some(s),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            errors.push(format!("{}: {e}", path.display()));
            None
        }
    }
}

/// A number, or an error naming the file, line and field.
fn number(path: &Path, line: usize, field: &str, v: &str, errors: &mut Vec<String>) -> Option<u64> {
    let v = v.trim();
    match v.parse::<u64>() {
        Ok(n) => Some(n),
        Err(e) => {
            errors.push(format!(
                "{}: line {line}: field `{field}`: {e} in {v:?}",
                path.display()
            ));
            None
        }
    }
}

/// A file holding one number.
fn read_number(root: &Path, path: &Path, errors: &mut Vec<String>) -> Option<u64> {
    let text = read_opt(root, path, errors)?;
    let field = path.file_name().map(|f| f.to_string_lossy().into_owned());
    number(path, 1, field.as_deref().unwrap_or(""), &text, errors)
}

/// `key value` lines (`cpu.stat`, `memory.events`).
fn keyed(root: &Path, path: &Path, errors: &mut Vec<String>) -> Option<Vec<(String, u64)>> {
    let text = read_opt(root, path, errors)?;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let Some((k, v)) = line.split_once(' ') else {
            errors.push(format!(
                "{}: line {}: not `key value`",
                path.display(),
                n + 1
            ));
            continue;
        };
        if let Some(v) = number(path, n + 1, k, v, errors) {
            out.push((k.to_owned(), v));
        }
    }
    Some(out)
}

fn get(pairs: &[(String, u64)], key: &str) -> Option<u64> {
    pairs.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
}

fn io_limit<'a>(limits: &'a mut Vec<IoLimit>, device: &str) -> &'a mut IoLimit {
    match limits.iter().position(|l| l.device == device) {
        Some(i) => &mut limits[i],
        None => {
            limits.push(IoLimit {
                device: device.to_owned(),
                ..IoLimit::default()
            });
            limits.last_mut().expect("pushed")
        }
    }
}

fn io_counters<'a>(io: &'a mut Vec<IoCounters>, device: &str) -> &'a mut IoCounters {
    match io.iter().position(|l| l.device == device) {
        Some(i) => &mut io[i],
        None => {
            io.push(IoCounters {
                device: device.to_owned(),
                ..IoCounters::default()
            });
            io.last_mut().expect("pushed")
        }
    }
}

/// v1 blkio: the four throttle files (`MAJ:MIN value` lines; a device without a limit is not listed) and the two
/// counter files (`MAJ:MIN Read value` lines, and a `Total value` line).
fn read_blkio(root: &Path, dir: &Path, cg: &mut Cgroup, errors: &mut Vec<String>) {
    type Field = fn(&mut IoLimit) -> &mut Option<u64>;
    let files: [(&str, Field); 4] = [
        ("blkio.throttle.read_bps_device", |l| &mut l.read_bps),
        ("blkio.throttle.write_bps_device", |l| &mut l.write_bps),
        ("blkio.throttle.read_iops_device", |l| &mut l.read_iops),
        ("blkio.throttle.write_iops_device", |l| &mut l.write_iops),
    ];
    for (file, field) in files {
        let path = dir.join(file);
        let Some(text) = read_opt(root, &path, errors) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            let Some((dev, v)) = line.split_once(' ') else {
                errors.push(format!(
                    "{}: line {}: not `MAJ:MIN value`",
                    path.display(),
                    n + 1
                ));
                continue;
            };
            if let Some(v) = number(&path, n + 1, dev, v, errors) {
                *field(io_limit(&mut cg.io_limits, dev)) = Some(v);
            }
        }
    }
    type Counter = fn(&mut IoCounters) -> (&mut u64, &mut u64);
    let counters: [(&str, Counter); 2] = [
        ("blkio.throttle.io_service_bytes", |c| {
            (&mut c.read_bytes, &mut c.write_bytes)
        }),
        ("blkio.throttle.io_serviced", |c| {
            (&mut c.reads, &mut c.writes)
        }),
    ];
    for (file, field) in counters {
        let path = dir.join(file);
        let Some(text) = read_opt(root, &path, errors) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            let parts: Vec<&str> = line.split(' ').collect();
            match parts[..] {
                ["Total", _] => {}
                [dev, op @ ("Read" | "Write"), v] => {
                    if let Some(v) = number(&path, n + 1, &format!("{dev} {op}"), v, errors) {
                        let (r, w) = field(io_counters(&mut cg.io, dev));
                        *if op == "Read" { r } else { w } = v;
                    }
                }
                [_, "Sync" | "Async" | "Discard" | "Total", _] => {}
                _ => errors.push(format!(
                    "{}: line {}: not `MAJ:MIN OP value`",
                    path.display(),
                    n + 1
                )),
            }
        }
    }
}

/// v2 `io.max` (`MAJ:MIN rbps=N wbps=max riops=max wiops=max`) and `io.stat` (`MAJ:MIN rbytes=N wbytes=N rios=N
/// wios=N dbytes=N dios=N`).
fn read_io_v2(root: &Path, dir: &Path, cg: &mut Cgroup, errors: &mut Vec<String>) {
    for file in ["io.max", "io.stat"] {
        let path = dir.join(file);
        let Some(text) = read_opt(root, &path, errors) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            let mut parts = line.split(' ');
            let Some(dev) = parts.next() else { continue };
            for kv in parts.filter(|p| !p.is_empty()) {
                let Some((k, v)) = kv.split_once('=') else {
                    errors.push(format!(
                        "{}: line {}: `{kv}` is not key=value",
                        path.display(),
                        n + 1
                    ));
                    continue;
                };
                let value = if v == "max" {
                    None
                } else {
                    match number(&path, n + 1, k, v, errors) {
                        Some(v) => Some(v),
                        None => continue,
                    }
                };
                if file == "io.max" {
                    let l = io_limit(&mut cg.io_limits, dev);
                    match k {
                        "rbps" => l.read_bps = value,
                        "wbps" => l.write_bps = value,
                        "riops" => l.read_iops = value,
                        "wiops" => l.write_iops = value,
                        _ => {}
                    }
                } else {
                    let c = io_counters(&mut cg.io, dev);
                    let v = value.unwrap_or(0);
                    match k {
                        "rbytes" => c.read_bytes = v,
                        "wbytes" => c.write_bytes = v,
                        "rios" => c.reads = v,
                        "wios" => c.writes = v,
                        _ => {}
                    }
                }
            }
        }
    }
    // A device listed with every limit at max has none.
    cg.io_limits.retain(|l| {
        l.read_bps.is_some()
            || l.write_bps.is_some()
            || l.read_iops.is_some()
            || l.write_iops.is_some()
    });
}

/// `cpu.stat`'s throttling, into `cpu`.
fn read_cpu_stat(root: &Path, dir: &Path, cpu: &mut CpuLimit, errors: &mut Vec<String>) -> bool {
    let Some(stat) = keyed(root, &dir.join("cpu.stat"), errors) else {
        return false;
    };
    cpu.nr_periods = get(&stat, "nr_periods").unwrap_or(0);
    cpu.nr_throttled = get(&stat, "nr_throttled").unwrap_or(0);
    cpu.throttled_ns = get(&stat, "throttled_time")
        .or_else(|| get(&stat, "throttled_usec").map(|us| us * 1000))
        .unwrap_or(0);
    true
}

fn read_cpu_v1(root: &Path, dir: &Path, errors: &mut Vec<String>) -> Option<CpuLimit> {
    let quota_path = dir.join("cpu.cfs_quota_us");
    let quota = read_opt(root, &quota_path, errors)?;
    let mut cpu = CpuLimit::default();
    let q = quota.trim();
    if q != "-1" {
        cpu.quota_us = number(&quota_path, 1, "cpu.cfs_quota_us", q, errors);
    }
    cpu.period_us = read_number(root, &dir.join("cpu.cfs_period_us"), errors).unwrap_or(0);
    read_cpu_stat(root, dir, &mut cpu, errors);
    Some(cpu)
}

/// v2 `cpu.max` (`max 100000` or `50000 100000`) and `cpu.stat`; the root cgroup has only the latter.
fn read_cpu_v2(root: &Path, dir: &Path, errors: &mut Vec<String>) -> Option<CpuLimit> {
    let mut cpu = CpuLimit::default();
    let path = dir.join("cpu.max");
    let max = read_opt(root, &path, errors);
    if let Some(max) = &max {
        match max.split_whitespace().collect::<Vec<_>>()[..] {
            [q, p] => {
                if q != "max" {
                    cpu.quota_us = number(&path, 1, "quota", q, errors);
                }
                cpu.period_us = number(&path, 1, "period", p, errors).unwrap_or(0);
            }
            _ => errors.push(format!("{}: line 1: not `QUOTA PERIOD`", path.display())),
        }
    }
    let stat = read_cpu_stat(root, dir, &mut cpu, errors);
    (max.is_some() || stat).then_some(cpu)
}

fn read_memory_v1(root: &Path, dir: &Path, errors: &mut Vec<String>) -> Option<MemoryLimit> {
    let limit = read_number(root, &dir.join("memory.limit_in_bytes"), errors)?;
    Some(MemoryLimit {
        limit_bytes: (limit < V1_UNLIMITED).then_some(limit),
        usage_bytes: read_number(root, &dir.join("memory.usage_in_bytes"), errors),
        failcnt: read_number(root, &dir.join("memory.failcnt"), errors),
        ..MemoryLimit::default()
    })
}

fn read_memory_v2(root: &Path, dir: &Path, errors: &mut Vec<String>) -> Option<MemoryLimit> {
    let path = dir.join("memory.max");
    let max = read_opt(root, &path, errors)?;
    let events = keyed(root, &dir.join("memory.events"), errors).unwrap_or_default();
    Some(MemoryLimit {
        limit_bytes: match max.trim() {
            "max" => None,
            v => number(&path, 1, "memory.max", v, errors),
        },
        usage_bytes: read_number(root, &dir.join("memory.current"), errors),
        high_events: get(&events, "high"),
        max_events: get(&events, "max"),
        oom_events: get(&events, "oom"),
        oom_kill: get(&events, "oom_kill"),
        ..MemoryLimit::default()
    })
}

fn read_cgroup(root: &Path, d: &CgroupDir, errors: &mut Vec<String>) -> Cgroup {
    let mut cg = Cgroup {
        version: d.version,
        controllers: d.controllers.clone(),
        path: d.path.clone(),
        dir: d.dir.display().to_string(),
        io_limits: Vec::new(),
        io: Vec::new(),
        cpu: None,
        memory: None,
    };
    let has = |c: &str| d.controllers.split(',').any(|x| x == c);
    match d.version {
        CgroupVersion::V1 => {
            if has("blkio") {
                read_blkio(root, &d.dir, &mut cg, errors);
            }
            if has("cpu") {
                cg.cpu = read_cpu_v1(root, &d.dir, errors);
            }
            if has("memory") {
                cg.memory = read_memory_v1(root, &d.dir, errors);
            }
        }
        CgroupVersion::V2 => {
            read_io_v2(root, &d.dir, &mut cg, errors);
            cg.cpu = read_cpu_v2(root, &d.dir, errors);
            cg.memory = read_memory_v2(root, &d.dir, errors);
        }
    }
    cg
}

/// Whether a cgroup sets any limit.
fn limits_something(cg: &Cgroup) -> bool {
    !cg.io_limits.is_empty()
        || cg.cpu.as_ref().is_some_and(|c| c.quota_us.is_some())
        || cg.memory.as_ref().is_some_and(|m| m.limit_bytes.is_some())
}

impl LimitsReader {
    /// The cgroups of processes `pids` (`/proc/PID/cgroup`) in the v1 hierarchies of [`V1_CONTROLLERS`] and in the
    /// v2 hierarchy, with their ancestors, all under `root` (`/` on a live machine).
    pub fn for_pids(root: &Path, pids: &[u32]) -> LimitsReader {
        let mut errors = Vec::new();
        let mountinfo = Path::new("/proc/self/mountinfo");
        let mounts = read_opt(root, mountinfo, &mut errors)
            .map(|t| parse_mountinfo(mountinfo, &t, &mut errors))
            .unwrap_or_default();
        let mut cgroups: Vec<CgroupDir> = Vec::new();
        for &pid in pids {
            let path = PathBuf::from(format!("/proc/{pid}/cgroup"));
            let Some(text) = read_opt(root, &path, &mut errors) else {
                errors.push(format!("{}: no such file", path.display()));
                continue;
            };
            for (n, line) in text.lines().enumerate() {
                let mut parts = line.splitn(3, ':');
                let (Some(_), Some(controllers), Some(cg_path)) =
                    (parts.next(), parts.next(), parts.next())
                else {
                    errors.push(format!(
                        "{}: line {}: not `ID:CONTROLLERS:PATH`",
                        path.display(),
                        n + 1
                    ));
                    continue;
                };
                let (version, mount) = if controllers.is_empty() {
                    let m = mounts.iter().find(|m| m.fs_type == "cgroup2");
                    (CgroupVersion::V2, m)
                } else {
                    let wanted: Vec<&str> = controllers
                        .split(',')
                        .filter(|c| V1_CONTROLLERS.contains(c))
                        .collect();
                    if wanted.is_empty() {
                        continue;
                    }
                    let m = mounts.iter().find(|m| {
                        m.fs_type == "cgroup"
                            && controllers
                                .split(',')
                                .all(|c| m.super_options.split(',').any(|o| o == c))
                    });
                    (CgroupVersion::V1, m)
                };
                let Some(m) = mount else {
                    errors.push(format!(
                        "{}: line {}: the {controllers:?} hierarchy is not mounted",
                        path.display(),
                        n + 1
                    ));
                    continue;
                };
                let relative = cg_path
                    .strip_prefix(m.root.as_str())
                    .unwrap_or(cg_path)
                    .trim_start_matches('/');
                let top = PathBuf::from(&m.mount_point);
                let mut dir = if relative.is_empty() {
                    top.clone()
                } else {
                    top.join(relative)
                };
                let mut shown = PathBuf::from(cg_path);
                let mut own = true;
                loop {
                    if !cgroups.iter().any(|c| c.dir == dir) {
                        cgroups.push(CgroupDir {
                            version,
                            controllers: controllers.to_owned(),
                            path: shown.display().to_string(),
                            dir: dir.clone(),
                            own,
                        });
                    }
                    own = false;
                    if dir == top || !dir.pop() || !shown.pop() {
                        break;
                    }
                }
            }
        }
        LimitsReader {
            root: root.to_owned(),
            cgroups,
            errors,
        }
    }

    /// Cgroup v2 directory `dir` (dc-trace's `--cgroup`) and its ancestors, under `root`.
    pub fn for_cgroup(root: &Path, dir: &Path) -> LimitsReader {
        let mut errors = Vec::new();
        let mountinfo = Path::new("/proc/self/mountinfo");
        let mounts = read_opt(root, mountinfo, &mut errors)
            .map(|t| parse_mountinfo(mountinfo, &t, &mut errors))
            .unwrap_or_default();
        let top = mounts
            .iter()
            .filter(|m| m.fs_type == "cgroup2" && dir.starts_with(&m.mount_point))
            .map(|m| PathBuf::from(&m.mount_point))
            .max_by_key(|p| p.as_os_str().len());
        let mut cgroups = Vec::new();
        match top {
            None => errors.push(format!(
                "{}: not under a mounted cgroup v2 hierarchy",
                dir.display()
            )),
            Some(top) => {
                let mut d = dir.to_owned();
                let mut own = true;
                loop {
                    let rel = d.strip_prefix(&top).unwrap_or(&d);
                    cgroups.push(CgroupDir {
                        version: CgroupVersion::V2,
                        controllers: String::new(),
                        path: Path::new("/").join(rel).display().to_string(),
                        dir: d.clone(),
                        own,
                    });
                    own = false;
                    if d == top || !d.pop() {
                        break;
                    }
                }
            }
        }
        LimitsReader {
            root: root.to_owned(),
            cgroups,
            errors,
        }
    }

    /// No process's cgroups (tracing every process): the machine-wide settings only.
    pub fn machine(root: &Path) -> LimitsReader {
        LimitsReader {
            root: root.to_owned(),
            cgroups: Vec::new(),
            errors: Vec::new(),
        }
    }

    /// Every limit now; `ts_ns` is when, on the trace's clock.
    pub fn read(&self, at: Moment, ts_ns: u64) -> Limits {
        let root = &self.root;
        let mut errors = self.errors.clone();
        let mut cgroups = Vec::new();
        for d in &self.cgroups {
            let cg = read_cgroup(root, d, &mut errors);
            if d.own || limits_something(&cg) {
                cgroups.push(cg);
            }
        }
        let mountinfo = Path::new("/proc/self/mountinfo");
        let mounts = read_opt(root, mountinfo, &mut errors)
            .map(|t| parse_mountinfo(mountinfo, &t, &mut errors))
            .unwrap_or_default()
            .into_iter()
            .map(|m| Mount {
                device: m.device,
                mount_point: m.mount_point,
                fs_type: m.fs_type,
                source: m.source,
                options: m.options,
                super_options: m.super_options,
            })
            .collect();
        Limits {
            at,
            ts_ns,
            cgroups,
            devices: read_devices(root, &mut errors),
            dirty: read_dirty(root, &mut errors),
            mounts,
            errors,
            tracer: None,
            per_call: None,
        }
    }
}

/// Every whole block device with media (`size` above 0: an unbound loop device has none).
fn read_devices(root: &Path, errors: &mut Vec<String>) -> Vec<BlockQueue> {
    let block = Path::new("/sys/block");
    let mut names: Vec<String> = match fs::read_dir(under(root, block)) {
        Ok(d) => d
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect(),
        Err(e) => {
            errors.push(format!("{}: {e}", block.display()));
            return Vec::new();
        }
    };
    names.sort();
    let mut out = Vec::new();
    for name in names {
        let dir = block.join(&name);
        if read_number(root, &dir.join("size"), errors) == Some(0) {
            continue;
        }
        let Some(dev) = read_opt(root, &dir.join("dev"), errors) else {
            errors.push(format!("{}: no such file", dir.join("dev").display()));
            continue;
        };
        let q = dir.join("queue");
        let scheduler = read_opt(root, &q.join("scheduler"), errors).map(|s| {
            match (s.find('['), s.find(']')) {
                (Some(a), Some(b)) if a < b => s[a + 1..b].to_owned(),
                _ => s.trim().to_owned(),
            }
        });
        out.push(BlockQueue {
            name,
            device: dev.trim().to_owned(),
            read_ahead_kb: read_number(root, &q.join("read_ahead_kb"), errors),
            nr_requests: read_number(root, &q.join("nr_requests"), errors),
            scheduler,
            rotational: read_number(root, &q.join("rotational"), errors).map(|r| r != 0),
            stat: read_stat(root, &dir.join("stat"), errors),
            submitted_by_others: None,
        });
    }
    out
}

/// A device's `stat` line; an unreadable one is named in `errors`.
fn read_stat(root: &Path, path: &Path, errors: &mut Vec<String>) -> Option<DiskStat> {
    let text = read_opt(root, path, errors)?;
    DiskStat::parse(&text)
        .map_err(|e| errors.push(format!("{}: line 1: {e}", path.display())))
        .ok()
}

fn read_dirty(root: &Path, errors: &mut Vec<String>) -> Dirty {
    let vm = |f: &str, errors: &mut Vec<String>| {
        read_number(root, &Path::new("/proc/sys/vm").join(f), errors)
    };
    Dirty {
        dirty_bytes: vm("dirty_bytes", errors),
        dirty_ratio: vm("dirty_ratio", errors),
        dirty_background_bytes: vm("dirty_background_bytes", errors),
        dirty_background_ratio: vm("dirty_background_ratio", errors),
        dirty_expire_centisecs: vm("dirty_expire_centisecs", errors),
        dirty_writeback_centisecs: vm("dirty_writeback_centisecs", errors),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `files` (path under the root, content) into a fresh root.
    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let p = root.path().join(path);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, text).unwrap();
        }
        root
    }

    const MOUNTINFO: &str = "\
24 1 254:1 / / rw,relatime - ext4 /dev/vda1 rw,errors=remount-ro
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
38 31 0:35 / /sys/fs/cgroup/blkio rw,relatime - cgroup cgroup rw,blkio
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
50 24 7:0 / /mnt/with\\040space rw shared:5 - ext4 /dev/loop0 rw
";

    /// A v1 hybrid machine: process 7 is in blkio `/job` (a read throttle on 254:0 and a write IOPS one on 8:0, and
    /// bytes read), cpu `/job` (a quota, throttled), memory `/` (no limit) and the v2 root.
    fn v1_machine() -> tempfile::TempDir {
        tree(&[
            ("proc/self/mountinfo", MOUNTINFO),
            (
                "proc/7/cgroup",
                "8:pids:/job\n7:blkio:/job\n4:memory:/\n1:cpu:/job\n0::/\n",
            ),
            (
                "sys/fs/cgroup/blkio/job/blkio.throttle.read_bps_device",
                "254:0 8388608\n",
            ),
            (
                "sys/fs/cgroup/blkio/job/blkio.throttle.write_bps_device",
                "",
            ),
            (
                "sys/fs/cgroup/blkio/job/blkio.throttle.read_iops_device",
                "",
            ),
            (
                "sys/fs/cgroup/blkio/job/blkio.throttle.write_iops_device",
                "8:0 200\n",
            ),
            (
                "sys/fs/cgroup/blkio/job/blkio.throttle.io_service_bytes",
                "254:0 Read 16777216\n254:0 Write 4096\n254:0 Sync 4096\n254:0 Async 16777216\n\
                 254:0 Discard 0\n254:0 Total 16781312\nTotal 16781312\n",
            ),
            (
                "sys/fs/cgroup/blkio/job/blkio.throttle.io_serviced",
                "254:0 Read 128\n254:0 Write 1\n254:0 Sync 1\n254:0 Async 128\n254:0 Discard 0\n\
                 254:0 Total 129\nTotal 129\n",
            ),
            ("sys/fs/cgroup/blkio/blkio.throttle.read_bps_device", ""),
            (
                "sys/fs/cgroup/blkio/blkio.throttle.io_service_bytes",
                "Total 0\n",
            ),
            ("sys/fs/cgroup/cpu/job/cpu.cfs_quota_us", "10000\n"),
            ("sys/fs/cgroup/cpu/job/cpu.cfs_period_us", "100000\n"),
            (
                "sys/fs/cgroup/cpu/job/cpu.stat",
                "nr_periods 50\nnr_throttled 41\nthrottled_time 3100000000\n",
            ),
            ("sys/fs/cgroup/cpu/cpu.cfs_quota_us", "-1\n"),
            ("sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000\n"),
            (
                "sys/fs/cgroup/cpu/cpu.stat",
                "nr_periods 0\nnr_throttled 0\nthrottled_time 0\n",
            ),
            (
                "sys/fs/cgroup/memory/memory.limit_in_bytes",
                "9223372036854771712\n",
            ),
            ("sys/fs/cgroup/memory/memory.usage_in_bytes", "1000\n"),
            ("sys/fs/cgroup/memory/memory.failcnt", "0\n"),
            (
                "sys/fs/cgroup/unified/cpu.stat",
                "usage_usec 5\nuser_usec 3\nsystem_usec 2\n",
            ),
            ("sys/block/vda/dev", "254:0\n"),
            ("sys/block/vda/size", "41943040\n"),
            ("sys/block/vda/queue/read_ahead_kb", "128\n"),
            ("sys/block/vda/queue/nr_requests", "256\n"),
            (
                "sys/block/vda/queue/scheduler",
                "[mq-deadline] kyber bfq none\n",
            ),
            ("sys/block/vda/queue/rotational", "0\n"),
            (
                "sys/block/vda/stat",
                "     120        4     2048       30       60        1      960       20        0       44       50\n",
            ),
            ("sys/block/loop1/dev", "7:1\n"),
            ("sys/block/loop1/size", "0\n"),
            ("proc/sys/vm/dirty_bytes", "1048576\n"),
            ("proc/sys/vm/dirty_ratio", "20\n"),
            ("proc/sys/vm/dirty_background_bytes", "0\n"),
            ("proc/sys/vm/dirty_background_ratio", "10\n"),
            ("proc/sys/vm/dirty_expire_centisecs", "3000\n"),
            ("proc/sys/vm/dirty_writeback_centisecs", "500\n"),
        ])
    }

    #[test]
    fn a_v1_hybrid_machine_gives_each_controller_its_limits_and_counters() {
        let root = v1_machine();
        let l = LimitsReader::for_pids(root.path(), &[7]).read(Moment::End, 99);
        assert_eq!(l.errors, Vec::<String>::new());
        assert_eq!((l.at, l.ts_ns), (Moment::End, 99));
        let dirs: Vec<(&str, &str)> = l
            .cgroups
            .iter()
            .map(|c| (c.controllers.as_str(), c.path.as_str()))
            .collect();
        // The processes' own cgroups, none of whose ancestors (the roots) sets a limit; pids is not read.
        assert_eq!(
            dirs,
            [
                ("blkio", "/job"),
                ("memory", "/"),
                ("cpu", "/job"),
                ("", "/")
            ]
        );
        let blkio = &l.cgroups[0];
        assert_eq!(blkio.dir, "/sys/fs/cgroup/blkio/job");
        assert_eq!(
            blkio.io_limits,
            [
                IoLimit {
                    device: "254:0".into(),
                    read_bps: Some(8388608),
                    ..IoLimit::default()
                },
                IoLimit {
                    device: "8:0".into(),
                    write_iops: Some(200),
                    ..IoLimit::default()
                }
            ]
        );
        assert_eq!(
            blkio.io,
            [IoCounters {
                device: "254:0".into(),
                read_bytes: 16777216,
                write_bytes: 4096,
                reads: 128,
                writes: 1,
            }]
        );
        assert_eq!(
            blkio.setting("blkio.throttle.read_bps_device", "io.max"),
            "/sys/fs/cgroup/blkio/job/blkio.throttle.read_bps_device"
        );
        assert_eq!(
            l.cgroups[1].memory,
            Some(MemoryLimit {
                limit_bytes: None,
                usage_bytes: Some(1000),
                failcnt: Some(0),
                ..MemoryLimit::default()
            })
        );
        assert_eq!(
            l.cgroups[2].cpu,
            Some(CpuLimit {
                quota_us: Some(10000),
                period_us: 100000,
                nr_periods: 50,
                nr_throttled: 41,
                throttled_ns: 3_100_000_000,
            })
        );
        // The v2 root: no cpu.max, counters without throttling.
        assert_eq!(l.cgroups[3].cpu, Some(CpuLimit::default()));
        assert_eq!(
            l.devices,
            [BlockQueue {
                name: "vda".into(),
                device: "254:0".into(),
                read_ahead_kb: Some(128),
                nr_requests: Some(256),
                scheduler: Some("mq-deadline".into()),
                rotational: Some(false),
                stat: Some(DiskStat {
                    reads: 120,
                    read_bytes: 2048 * 512,
                    writes: 60,
                    write_bytes: 960 * 512,
                    io_ticks_ms: 44,
                }),
                submitted_by_others: None,
            }]
        );
        assert_eq!(
            l.dirty,
            Dirty {
                dirty_bytes: Some(1048576),
                dirty_ratio: Some(20),
                dirty_background_bytes: Some(0),
                dirty_background_ratio: Some(10),
                dirty_expire_centisecs: Some(3000),
                dirty_writeback_centisecs: Some(500),
            }
        );
        assert_eq!(l.mounts.len(), 7);
        assert_eq!(
            l.mounts[6],
            Mount {
                device: "7:0".into(),
                mount_point: "/mnt/with space".into(),
                fs_type: "ext4".into(),
                source: "/dev/loop0".into(),
                options: "rw".into(),
                super_options: "rw".into(),
            }
        );
    }

    /// An ancestor that sets a limit is read with the cgroup; one that sets none is not.
    #[test]
    fn a_v2_cgroup_and_its_limiting_ancestor() {
        let root = tree(&[
            (
                "proc/self/mountinfo",
                "30 1 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
            ),
            ("proc/3/cgroup", "0::/a/b\n"),
            (
                "sys/fs/cgroup/a/io.max",
                "254:0 rbps=max wbps=1048576 riops=max wiops=max\n",
            ),
            ("sys/fs/cgroup/a/memory.max", "max\n"),
            (
                "sys/fs/cgroup/a/b/io.max",
                "254:0 rbps=max wbps=max riops=max wiops=max\n",
            ),
            (
                "sys/fs/cgroup/a/b/io.stat",
                "254:0 rbytes=4096 wbytes=8192 rios=1 wios=2 dbytes=0 dios=0\n",
            ),
            ("sys/fs/cgroup/a/b/cpu.max", "50000 100000\n"),
            (
                "sys/fs/cgroup/a/b/cpu.stat",
                "usage_usec 9\nnr_periods 4\nnr_throttled 3\nthrottled_usec 2500\n",
            ),
            ("sys/fs/cgroup/a/b/memory.max", "268435456\n"),
            ("sys/fs/cgroup/a/b/memory.current", "4096\n"),
            (
                "sys/fs/cgroup/a/b/memory.events",
                "low 0\nhigh 0\nmax 17\noom 1\noom_kill 1\noom_group_kill 0\n",
            ),
            ("sys/fs/cgroup/memory.max", "max\n"),
            ("sys/block/vda/dev", "254:0\n"),
        ]);
        let reader = LimitsReader::for_pids(root.path(), &[3]);
        let l = reader.read(Moment::Start, 1);
        let paths: Vec<&str> = l.cgroups.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(paths, ["/a/b", "/a"]);
        let b = &l.cgroups[0];
        // Every limit at max: none.
        assert_eq!(b.io_limits, []);
        assert_eq!(
            b.io,
            [IoCounters {
                device: "254:0".into(),
                read_bytes: 4096,
                write_bytes: 8192,
                reads: 1,
                writes: 2,
            }]
        );
        assert_eq!(
            b.cpu,
            Some(CpuLimit {
                quota_us: Some(50000),
                period_us: 100000,
                nr_periods: 4,
                nr_throttled: 3,
                throttled_ns: 2_500_000,
            })
        );
        let m = b.memory.as_ref().unwrap();
        assert_eq!(
            (m.limit_bytes, m.usage_bytes, m.hits(), m.oom_kill),
            (Some(268435456), Some(4096), Some(17), Some(1))
        );
        assert_eq!(
            l.cgroups[1].io_limits,
            [IoLimit {
                device: "254:0".into(),
                write_bps: Some(1048576),
                ..IoLimit::default()
            }]
        );
        assert_eq!(
            b.setting("blkio.throttle.write_bps_device", "io.max"),
            "/sys/fs/cgroup/a/b/io.max"
        );
        // --cgroup finds the same directories.
        let by_dir = LimitsReader::for_cgroup(root.path(), Path::new("/sys/fs/cgroup/a/b"));
        assert_eq!(by_dir.read(Moment::Start, 1).cgroups, l.cgroups);
        // This tree has no sysctls and no queue files: absent is no setting, not an error.
        assert_eq!(l.dirty, Dirty::default());
        assert_eq!(l.errors, Vec::<String>::new());
    }

    /// A malformed file is an error naming the file, the line and the field; the rest is still read.
    #[test]
    fn bad_files_are_named_with_line_and_field() {
        let root = v1_machine();
        fs::write(
            root.path().join("sys/fs/cgroup/cpu/job/cpu.stat"),
            "nr_periods 5\nnr_throttled many\n",
        )
        .unwrap();
        fs::write(root.path().join("proc/sys/vm/dirty_ratio"), "twenty\n").unwrap();
        fs::write(root.path().join("sys/block/vda/stat"), "1 0 8 0\n").unwrap();
        let l = LimitsReader::for_pids(root.path(), &[7, 8]).read(Moment::Start, 0);
        assert_eq!(
            l.errors,
            [
                "/proc/8/cgroup: no such file",
                "/sys/fs/cgroup/cpu/job/cpu.stat: line 2: field `nr_throttled`: invalid digit found in string in \"many\"",
                "/sys/block/vda/stat: line 1: field 5 (writes completed): missing",
                "/proc/sys/vm/dirty_ratio: line 1: field `dirty_ratio`: invalid digit found in string in \"twenty\"",
            ]
        );
        assert_eq!(l.cgroups[2].cpu.as_ref().unwrap().nr_periods, 5);
        assert_eq!(l.dirty.dirty_ratio, None);
        assert_eq!(l.dirty.dirty_bytes, Some(1048576));
        assert_eq!(l.devices[0].stat, None);
    }
}
