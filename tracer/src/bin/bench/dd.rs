//! `dc-trace-bench dd [MIB [RUNS]]`: what each layer adds to a cached read. dd reads a MIB MiB
//! file (default 256, cached before the runs) 512 bytes at a time, untraced, then under
//! `dc-trace collect` with the default layers but libc (whose uprobes cost about 10 µs a call),
//! then with each of those layers alone. Each case runs RUNS times (default 3) and keeps its
//! fastest, by dd's own clock; the untraced baseline is measured in the same run.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};
use tracer::{CollectOptions, Layer, LayerSelection, collect};

const BS: u64 = 512;

/// The seconds dd reports for its copy (`..., 0.41 s, ...` on its last line).
fn dd_seconds(stderr: &str) -> Result<f64> {
    let last = stderr.lines().last().context("dd printed nothing")?;
    last.split(", ")
        .find_map(|p| p.strip_suffix(" s").and_then(|n| n.parse().ok()))
        .with_context(|| format!("no time in dd's `{last}`"))
}

/// dd over `file` into /dev/null, its report into `report`.
fn dd_command(file: &Path, report: &Path) -> Vec<String> {
    vec![
        "sh".into(),
        "-c".into(),
        format!(
            "dd if={} of=/dev/null bs={BS} 2> {}",
            file.display(),
            report.display()
        ),
    ]
}

/// The fastest of `runs` dd runs, untraced (`layers` None) or traced with `layers`; with the
/// events the last traced run wrote.
fn best(dir: &Path, file: &Path, layers: Option<&[Layer]>, runs: u64) -> Result<(f64, u64, u64)> {
    let report = dir.join("dd.txt");
    let cmd = dd_command(file, &report);
    let (mut fastest, mut events, mut lost) = (f64::INFINITY, 0, 0);
    for _ in 0..runs {
        match layers {
            None => {
                let status = Command::new(&cmd[0]).args(&cmd[1..]).status()?;
                anyhow::ensure!(status.success(), "dd failed");
            }
            Some(l) => {
                let mut opts = CollectOptions::command(dir.join("dd.pfw.gz"), cmd.clone());
                opts.layers = LayerSelection::only(l);
                let s = collect(&opts)?;
                anyhow::ensure!(s.exit_status == Some(0), "dd failed under dc-trace");
                events = s.events;
                lost = s.drops + s.kernel_skipped;
            }
        }
        fastest = fastest.min(dd_seconds(&std::fs::read_to_string(&report)?)?);
    }
    Ok((fastest, events, lost))
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
    let (base, _, _) = best(dir.path(), &file, None, runs)?;

    let default: Vec<Layer> = LayerSelection::all()
        .0
        .into_iter()
        .filter(|l| !matches!(l, Layer::Libc | Layer::App))
        .collect();
    println!("dd bs={BS} over a cached {mib} MiB file: {reads} reads, fastest of {runs} runs each");
    println!(
        "{:<28} {:>9} {:>7} {:>14} {:>10} {:>6}",
        "layers", "time s", "ratio", "added ns/read", "events", "lost"
    );
    println!(
        "{:<28} {:>9.3} {:>7.2} {:>14} {:>10} {:>6}",
        "untraced", base, 1.0, "-", "-", "-"
    );
    let mut cases: Vec<(String, Vec<Layer>)> = vec![("default but libc".into(), default.clone())];
    cases.extend(default.iter().map(|l| (l.name().to_owned(), vec![*l])));
    for (name, layers) in cases {
        let (t, events, lost) = best(dir.path(), &file, Some(&layers), runs)?;
        println!(
            "{:<28} {:>9.3} {:>7.2} {:>14.0} {:>10} {:>6}",
            name,
            t,
            t / base,
            (t - base) / reads as f64 * 1e9,
            events,
            lost
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_dds_own_time() {
        let report = "524288+0 records in\n524288+0 records out\n\
                      268435456 bytes (268 MB, 256 MiB) copied, 0.41234 s, 651 MB/s\n";
        assert_eq!(dd_seconds(report).unwrap(), 0.41234);
    }
}
