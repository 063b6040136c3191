//! Expands a pipeline's workloads into runs: one per sweep point (and per repeat of a command).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use report::size::format_size;
use serde::{Deserialize, Serialize};

use crate::apps::App;
use crate::bench::iobench::{Call, IoBenchOptions};
use crate::pipeline::config::{IoBenchSweep, Pipeline, WorkloadKind};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSpec {
    /// Unique in the pipeline; the run's directory name.
    pub id: String,
    pub workload: String,
    /// The sweep values of this point, by name.
    pub params: BTreeMap<String, String>,
    pub kind: RunKind,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunKind {
    /// The built-in benchmark; `json` is set to the run's own samples file.
    IoBench(IoBenchOptions),
    Command(Vec<String>),
    /// A real application's command (run by `dc-pipeline serve`), with its commands' placeholders filled but
    /// `{app_dir}`, which exists only while the run does.
    App {
        command: Vec<String>,
        app: App,
    },
}

/// Where a run keeps its files inside the report directory.
pub struct Layout {
    pub out: PathBuf,
    pub pipeline_dir: PathBuf,
}

impl Layout {
    pub fn run_dir(&self, id: &str) -> PathBuf {
        self.out.join("runs").join(id)
    }
    /// Scratch space for the workloads' files (the benchmark's file lives here).
    pub fn work_dir(&self) -> PathBuf {
        self.out.join("work")
    }
    pub fn data_dir(&self) -> PathBuf {
        self.out.join("data")
    }
}

/// Every run of the pipeline, in the order they execute.
pub fn runs(p: &Pipeline, layout: &Layout) -> Vec<RunSpec> {
    let mut out = Vec::new();
    for w in &p.workloads {
        match &w.kind {
            WorkloadKind::IoBench(b) => bench_runs(&w.name, b, layout, &mut out),
            WorkloadKind::Command { command, sweep } => {
                for point in cartesian(sweep) {
                    for r in 0..w.repeat {
                        let mut id = std::iter::once(w.name.clone())
                            .chain(point.iter().map(|(k, v)| format!("{k}{v}")))
                            .collect::<Vec<_>>()
                            .join("-");
                        if w.repeat > 1 {
                            id.push_str(&format!("-r{r}"));
                        }
                        let id = sanitize(&id);
                        let mut vars = point.clone();
                        vars.insert(
                            "pipeline_dir".into(),
                            layout.pipeline_dir.display().to_string(),
                        );
                        vars.insert("work_dir".into(), layout.work_dir().display().to_string());
                        vars.insert("run_dir".into(), layout.run_dir(&id).display().to_string());
                        let fill_all = |c: &Vec<String>| -> Vec<String> {
                            c.iter().map(|a| fill(a, &vars)).collect()
                        };
                        let argv = fill_all(command);
                        let kind = if w.app.is_app() {
                            let app = App {
                                setup: w.app.setup.iter().map(fill_all).collect(),
                                start: w.app.start.as_ref().map(fill_all),
                                stop: w.app.stop.as_ref().map(fill_all),
                                ..w.app.clone()
                            };
                            RunKind::App { command: argv, app }
                        } else {
                            RunKind::Command(argv)
                        };
                        let mut params = point.clone();
                        if w.repeat > 1 {
                            params.insert("repeat".into(), r.to_string());
                        }
                        out.push(RunSpec {
                            id: sanitize(&id),
                            workload: w.name.clone(),
                            params,
                            kind,
                        });
                    }
                }
            }
        }
    }
    out
}

fn bench_runs(name: &str, b: &IoBenchSweep, layout: &Layout, out: &mut Vec<RunSpec>) {
    let file = layout.work_dir().join(format!("{name}.dat"));
    for (&op, &call) in b.op.iter().flat_map(|o| b.call.iter().map(move |c| (o, c))) {
        for &direct in &b.direct {
            for &fsync in &b.fsync {
                for &buffer in &b.buffer_size {
                    let mode = if direct { "direct" } else { "buffered" };
                    let mut id = format!("{name}-{}", op.name());
                    if call != Call::Plain {
                        id.push_str(&format!("-{}", call.name()));
                    }
                    id.push_str(&format!("-{mode}"));
                    if fsync {
                        id.push_str("-fsync");
                    }
                    id.push_str(&format!("-{}", format_size(buffer.0)));
                    let params = BTreeMap::from([
                        ("op".to_string(), op.name().to_string()),
                        ("call".to_string(), call.name().to_string()),
                        ("mode".to_string(), mode.to_string()),
                        ("fsync".to_string(), fsync.to_string()),
                        ("buffer_size".to_string(), buffer.0.to_string()),
                    ]);
                    let opts = IoBenchOptions {
                        file: file.clone(),
                        op,
                        call,
                        total_size: b.total_size.0,
                        buffer_size: buffer.0,
                        direct,
                        fsync,
                        iterations: b.iterations,
                        drop_caches: b.drop_caches,
                        json: Some(layout.run_dir(&id).join("bench.json")),
                        // --resume runs a failed point again over its own earlier report.
                        force: true,
                    };
                    out.push(RunSpec {
                        id,
                        workload: name.to_string(),
                        params,
                        kind: RunKind::IoBench(opts),
                    });
                }
            }
        }
    }
}

/// Every combination of the sweep's values; one empty point when there is no sweep.
fn cartesian(sweep: &BTreeMap<String, Vec<String>>) -> Vec<BTreeMap<String, String>> {
    let mut points = vec![BTreeMap::new()];
    for (k, values) in sweep {
        points = points
            .into_iter()
            .flat_map(|p| {
                values.iter().map(move |v| {
                    let mut q = p.clone();
                    q.insert(k.clone(), v.clone());
                    q
                })
            })
            .collect();
    }
    points
}

fn fill(arg: &str, vars: &BTreeMap<String, String>) -> String {
    vars.iter().fold(arg.to_string(), |a, (k, v)| {
        a.replace(&format!("{{{k}}}"), v)
    })
}

fn sanitize(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The command line that runs `spec` under the tracer; the benchmark runs as `exe iobench ...`.
pub fn argv(spec: &RunSpec, exe: &Path) -> Vec<String> {
    match &spec.kind {
        RunKind::Command(argv) | RunKind::App { command: argv, .. } => argv.clone(),
        RunKind::IoBench(o) => {
            let mut a = vec![
                exe.display().to_string(),
                "iobench".into(),
                "--file".into(),
                o.file.display().to_string(),
                "--op".into(),
                o.op.name().into(),
                "--total-size".into(),
                o.total_size.to_string(),
                "--buffer-size".into(),
                o.buffer_size.to_string(),
                "--iterations".into(),
                o.iterations.to_string(),
            ];
            for (flag, on) in [
                ("--direct", o.direct),
                ("--fsync", o.fsync),
                ("--drop-caches", o.drop_caches),
                ("--force", o.force),
            ] {
                if on {
                    a.push(flag.into());
                }
            }
            if o.call != Call::Plain {
                a.extend(["--call".into(), o.call.name().into()]);
            }
            if let Some(j) = &o.json {
                a.extend(["--json".into(), j.display().to_string()]);
            }
            a
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> Layout {
        Layout {
            out: PathBuf::from("/r"),
            pipeline_dir: PathBuf::from("/p"),
        }
    }

    #[test]
    fn benchmark_sweep_is_the_full_product() {
        let text = "name = \"t\"\n[[workload]]\nname = \"b\"\n[workload.iobench]\nop = [\"read\", \"write\"]\nbuffer_size = [\"4KiB\", \"1MiB\"]\ntotal_size = \"4MiB\"\ndirect = [false, true]\niterations = 3\n";
        let p = Pipeline::parse(text, Path::new("p.toml")).unwrap();
        let runs = runs(&p, &layout());
        let ids: Vec<&str> = runs.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "b-read-buffered-4KiB",
                "b-read-buffered-1MiB",
                "b-read-direct-4KiB",
                "b-read-direct-1MiB",
                "b-write-buffered-4KiB",
                "b-write-buffered-1MiB",
                "b-write-direct-4KiB",
                "b-write-direct-1MiB"
            ]
        );
        let a = argv(&runs[3], Path::new("/bin/dc-pipeline"));
        assert_eq!(
            a.join(" "),
            "/bin/dc-pipeline iobench --file /r/work/b.dat --op read --total-size 4194304 --buffer-size 1048576 --iterations 3 --direct --force --json /r/runs/b-read-direct-1MiB/bench.json"
        );

        let calls = text
            .replace(
                "iterations = 3\n",
                "iterations = 3\ncall = [\"plain\", \"positional-vectored\"]\ndirect = false\n",
            )
            .replace("direct = [false, true]\n", "");
        let p = Pipeline::parse(&calls, Path::new("p.toml")).unwrap();
        let swept = super::runs(&p, &layout());
        let ids: Vec<&str> = swept.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "b-read-buffered-4KiB",
                "b-read-buffered-1MiB",
                "b-read-positional-vectored-buffered-4KiB",
                "b-read-positional-vectored-buffered-1MiB",
                "b-write-buffered-4KiB",
                "b-write-buffered-1MiB",
                "b-write-positional-vectored-buffered-4KiB",
                "b-write-positional-vectored-buffered-1MiB"
            ]
        );
        assert_eq!(swept[2].params["call"], "positional-vectored");
        let a = argv(&swept[2], Path::new("/bin/dc-pipeline"));
        assert_eq!(
            a.join(" "),
            "/bin/dc-pipeline iobench --file /r/work/b.dat --op read --total-size 4194304 --buffer-size 4096 --iterations 3 --force --call positional-vectored --json /r/runs/b-read-positional-vectored-buffered-4KiB/bench.json"
        );
    }

    #[test]
    fn command_sweep_fills_placeholders_and_repeats() {
        let text = "name = \"t\"\n[[workload]]\nname = \"dd\"\nrepeat = 2\ncommand = [\"dd\", \"bs={bs}\", \"of={work_dir}/x\", \"if={pipeline_dir}/y\", \"{run_dir}\"]\n[workload.sweep]\nbs = [\"4k\", \"1M\"]\n";
        let p = Pipeline::parse(text, Path::new("p.toml")).unwrap();
        let runs = runs(&p, &layout());
        let ids: Vec<&str> = runs.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(
            ids,
            ["dd-bs4k-r0", "dd-bs4k-r1", "dd-bs1M-r0", "dd-bs1M-r1"]
        );
        assert_eq!(
            argv(&runs[2], Path::new("x")).join(" "),
            "dd bs=1M of=/r/work/x if=/p/y /r/runs/dd-bs1M-r0"
        );
        assert_eq!(runs[3].params["repeat"], "1");
    }
}
