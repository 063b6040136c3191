//! `dc-trace-bench dd [MIB [RUNS]]`: what each layer adds to a cached read. dd reads a MIB MiB
//! file (default 256, cached before the runs) 512 bytes at a time, untraced, then under
//! `dc-trace collect` with the default layers but libc (whose uprobes cost about 10 µs a call),
//! then the same without off-CPU stacks, then at other on-CPU sampling rates (`--sample-hz`, 0 is
//! off; each sample's cost is the added CPU time over the samples taken, against the rate 0 run),
//! then with each of those layers alone. Each case runs RUNS times (default 3) and keeps its
//! fastest, by dd's own clock and by the CPU time dd used (user and system, where the probes run:
//! on a machine shared with other work, wall time also counts the waits for a CPU). The untraced
//! baseline is measured in the same run.
//! Then come the floors (`floor.rs`): the same dd under programs that only return, on the sys
//! layer's hooks, and under bpftrace's emptiest program on them, each against an untraced dd run
//! the same way in the same run; dc-trace's added cost per read, for `sys` alone and for the
//! default layers, is printed as a ratio to each.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};
use datasets::output::Existing;
use tracer::{CollectOptions, Layer, LayerSelection, SAMPLE_HZ, collect};

use crate::floor;

const BS: u64 = 512;

/// The seconds dd reports for its copy (`..., 0.41 s, ...` on its last line).
fn dd_seconds(stderr: &str) -> Result<f64> {
    let last = stderr.lines().last().context("dd printed nothing")?;
    last.split(", ")
        .find_map(|p| p.strip_suffix(" s").and_then(|n| n.parse().ok()))
        .with_context(|| format!("no time in dd's `{last}`"))
}

/// The CPU seconds of the shell's children that `times` printed (its second line).
fn child_cpu_seconds(times: &str) -> Result<f64> {
    let line = times
        .lines()
        .nth(1)
        .context("`times` printed no children's line")?;
    line.split_whitespace()
        .map(|t| {
            let (m, s) = t
                .strip_suffix('s')
                .and_then(|t| t.split_once('m'))
                .with_context(|| format!("`{t}` is not `MmS.SSs`"))?;
            Ok(m.parse::<f64>()? * 60.0 + s.parse::<f64>()?)
        })
        .sum()
}

/// dd over `file` into /dev/null, its report into `report` and its CPU time into `cpu`.
fn dd_command(file: &Path, report: &Path, cpu: &Path) -> Vec<String> {
    vec![
        "sh".into(),
        "-c".into(),
        format!(
            "dd if={} of=/dev/null bs={BS} 2> {}; times > {}",
            file.display(),
            report.display(),
            cpu.display()
        ),
    ]
}

/// The fastest wall and CPU times of a case, and what its last traced run wrote and lost.
struct Best {
    wall: f64,
    cpu: f64,
    events: u64,
    samples: u64,
    lost: u64,
}

/// How a case traces: its layers, whether it takes off-CPU stacks, its sampling rate.
#[derive(Clone)]
struct Case {
    name: String,
    layers: Vec<Layer>,
    stacks: bool,
    hz: u32,
}

/// The fastest of `runs` dd runs, untraced (`case` None) or traced as `case` says.
fn best(dir: &Path, file: &Path, case: Option<&Case>, runs: u64) -> Result<Best> {
    let (report, cpu) = (dir.join("dd.txt"), dir.join("cpu.txt"));
    let cmd = dd_command(file, &report, &cpu);
    let mut b = Best {
        wall: f64::INFINITY,
        cpu: f64::INFINITY,
        events: 0,
        samples: 0,
        lost: 0,
    };
    for _ in 0..runs {
        match case {
            None => {
                let status = Command::new(&cmd[0]).args(&cmd[1..]).status()?;
                anyhow::ensure!(status.success(), "dd failed");
            }
            Some(c) => {
                let mut opts = CollectOptions::command(dir.join("dd.pfw.gz"), cmd.clone());
                opts.layers = LayerSelection::only(&c.layers);
                opts.existing = Existing::Replace;
                opts.offcpu_stacks = c.stacks;
                opts.sample_hz = c.hz;
                let s = collect(&opts)?;
                anyhow::ensure!(s.exit_status == Some(0), "dd failed under dc-trace");
                b.events = s.events;
                b.samples = s.events_per_layer.get("oncpu").copied().unwrap_or(0);
                b.lost = s.drops + s.kernel_skipped;
            }
        }
        b.wall = b.wall.min(dd_seconds(&std::fs::read_to_string(&report)?)?);
        b.cpu = b
            .cpu
            .min(child_cpu_seconds(&std::fs::read_to_string(&cpu)?)?);
    }
    Ok(b)
}

pub fn run(mib: u64, runs: u64) -> Result<()> {
    if mib == 0 || runs == 0 {
        bail!("MIB and RUNS must be positive");
    }
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("cached.dat");
    std::fs::write(&file, vec![7u8; (mib << 20) as usize])?;
    let reads = (mib << 20) / BS;
    // Read once so that every run finds it cached.
    best(dir.path(), &file, None, 1)?;
    let base = best(dir.path(), &file, None, runs)?;

    let default: Vec<Layer> = LayerSelection::all()
        .0
        .into_iter()
        .filter(|l| !matches!(l, Layer::Libc | Layer::App))
        .collect();
    println!("dd bs={BS} over a cached {mib} MiB file: {reads} reads, fastest of {runs} runs each");
    println!(
        "{:<20} {:>7} {:>10} {:>7} {:>10} {:>9} {:>7} {:>6} {:>9}",
        "layers",
        "wall s",
        "added ns",
        "CPU s",
        "added ns",
        "events",
        "samples",
        "lost",
        "ns/sample"
    );
    println!(
        "{:<20} {:>7.3} {:>10} {:>7.2} {:>10} {:>9} {:>7} {:>6} {:>9}",
        "untraced", base.wall, "-", base.cpu, "-", "-", "-", "-", "-"
    );
    let case = |name: &str, layers: Vec<Layer>, stacks: bool, hz: u32| Case {
        name: name.to_owned(),
        layers,
        stacks,
        hz,
    };
    let mut cases = vec![
        case("default but libc", default.clone(), true, SAMPLE_HZ),
        case("  without stacks", default.clone(), false, SAMPLE_HZ),
    ];
    cases.extend(
        [0, 99, 4999, 19999]
            .map(|hz| case(&format!("  sample-hz {hz}"), default.clone(), true, hz)),
    );
    cases.extend(
        default
            .iter()
            .map(|l| case(l.name(), vec![*l], true, SAMPLE_HZ)),
    );
    let per_read = |t: f64, base: f64| (t - base) / reads as f64 * 1e9;
    let floors = Floors::measure(dir.path(), &file, runs)?;
    let mut unsampled: Option<f64> = None;
    // (name, added wall ns, added CPU ns) a read of the cases set against the floors.
    let mut against = Vec::new();
    for c in cases {
        let b = best(dir.path(), &file, Some(&c), runs)?;
        if c.name == "default but libc" || c.layers == [Layer::Sys] {
            against.push((
                c.name.clone(),
                per_read(b.wall, base.wall),
                per_read(b.cpu, base.cpu),
            ));
        }
        if c.hz == 0 && c.layers == default {
            unsampled = Some(b.cpu);
        }
        // Cost per sample against the same layers unsampled, once that case has run.
        let per_sample = match unsampled {
            Some(cpu) if c.layers == default && b.samples > 0 => {
                format!("{:.0}", (b.cpu - cpu) / b.samples as f64 * 1e9)
            }
            _ => "-".to_owned(),
        };
        println!(
            "{:<20} {:>7.3} {:>10.0} {:>7.2} {:>10.0} {:>9} {:>7} {:>6} {:>9}",
            c.name,
            b.wall,
            per_read(b.wall, base.wall),
            b.cpu,
            per_read(b.cpu, base.cpu),
            b.events,
            b.samples,
            b.lost,
            per_sample
        );
    }
    floors.print(reads, &against);
    Ok(())
}

/// A dd's fastest wall and CPU seconds.
#[derive(Clone, Copy)]
struct Times {
    wall: f64,
    cpu: f64,
}

/// The floors' runs, and the untraced runs of the same held dd they are set against.
struct Floors {
    untraced: Times,
    returns: Times,
    mechanism: &'static str,
    bpftrace: std::result::Result<Times, String>,
}

impl Floors {
    fn measure(dir: &Path, file: &Path, runs: u64) -> Result<Floors> {
        let report = dir.join("dd.txt");
        let fastest = |once: &mut dyn FnMut() -> Result<f64>| -> Result<Times> {
            let mut t = Times {
                wall: f64::INFINITY,
                cpu: f64::INFINITY,
            };
            for _ in 0..runs {
                t.cpu = t.cpu.min(once()?);
                t.wall = t.wall.min(dd_seconds(&std::fs::read_to_string(&report)?)?);
            }
            Ok(t)
        };
        let mut held = || Ok(floor::run_held(file, BS, &report, |_| Ok(()))?.0);
        let untraced = fastest(&mut held)?;
        let returns = floor::attach_returns()?;
        let mechanism = returns.mechanism;
        let returns_times = fastest(&mut held)?;
        drop(returns);
        let mut bpftrace = || {
            let (cpu, bt) =
                floor::run_held(file, BS, &report, |pid| floor::start_bpftrace(pid, dir))?;
            bt.interrupt()?;
            Ok(cpu)
        };
        let bpftrace = fastest(&mut bpftrace).map_err(|e| format!("{e:#}"));
        Ok(Floors {
            untraced,
            returns: returns_times,
            mechanism,
            bpftrace,
        })
    }

    /// The floors' rows, then each case of `against` (name, added wall and CPU ns a read) as a
    /// ratio to each floor.
    fn print(&self, reads: u64, against: &[(String, f64, f64)]) {
        let added = |t: &Times| {
            (
                (t.wall - self.untraced.wall) / reads as f64 * 1e9,
                (t.cpu - self.untraced.cpu) / reads as f64 * 1e9,
            )
        };
        println!(
            "floors: dd started by pid once the tracer is ready, against the same dd untraced"
        );
        let row = |name: &str, t: &Times, what: &str| {
            let (wall, cpu) = added(t);
            println!(
                "{name:<20} {:>7.3} {wall:>10.0} {:>7.2} {cpu:>10.0}  {what}",
                t.wall, t.cpu
            );
        };
        println!(
            "{:<20} {:>7.3} {:>10} {:>7.2} {:>10}",
            "untraced", self.untraced.wall, "-", self.untraced.cpu, "-"
        );
        row(
            "only returns",
            &self.returns,
            &format!(
                "tracer-ebpf's floor_enter and floor_return ({})",
                self.mechanism
            ),
        );
        match &self.bpftrace {
            Ok(t) => row(
                "bpftrace empty",
                t,
                "{ } on tracepoint:raw_syscalls:sys_enter and sys_exit, /pid == dd/",
            ),
            Err(why) => println!("{:<20} could not run: {why}", "bpftrace empty"),
        }
        let (returns_wall, returns_cpu) = added(&self.returns);
        let bpftrace = self.bpftrace.as_ref().ok().map(added);
        println!(
            "dc-trace's added cost a read as a ratio to each floor's, by CPU time (by wall time):"
        );
        for (name, wall, cpu) in against {
            let mut line = format!(
                "{name:<20} {:.2}x only returns ({:.2}x)",
                cpu / returns_cpu,
                wall / returns_wall
            );
            if let Some((bt_wall, bt_cpu)) = bpftrace {
                line.push_str(&format!(
                    ", {:.2}x bpftrace empty ({:.2}x)",
                    cpu / bt_cpu,
                    wall / bt_wall
                ));
            }
            println!("{line}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_dds_own_time_and_its_cpu_time() {
        let report = "524288+0 records in\n524288+0 records out\n\
                      268435456 bytes (268 MB, 256 MiB) copied, 0.41234 s, 651 MB/s\n";
        assert_eq!(dd_seconds(report).unwrap(), 0.41234);
        let times = "0m0.000000s 0m0.001000s\n0m0.120000s 1m0.400000s\n";
        assert!((child_cpu_seconds(times).unwrap() - 60.52).abs() < 1e-9);
    }
}
