//! `dc-pipeline iobench` as a drop-in for the L41 io-benchmark: its flags (`-c`, `-r`/`-w`, `-b`,
//! `-t`, `-n`, `-d`, `-s`, `-g`, `-j`, `-v`, then the file) and, with `-j`, its JSON, so the lab
//! notebook's `json.loads(...)["benchmark_samples"]` runs unchanged on our output. The long forms
//! the pipeline passes (`--file`, `--op`, `--json PATH`, ...) are the same options.

use std::path::PathBuf;

use clap::ArgGroup;
use datasets::formats::iobench::{L41Report, L41Sample};
use datasets::output::{Existing, Output};
use report::size::parse_size;
use serde_json::{Map, Value, json};

use crate::bench::iobench::{self, BenchReport, Call, IoBenchOptions, Op, Sample};

#[derive(Clone, Debug, clap::Args)]
#[command(group(ArgGroup::new("mode").required(true).args(["create", "read", "write", "op"])))]
pub struct IoBenchArgs {
    /// The benchmark file (io-benchmark's `path`).
    #[arg(required_unless_present = "file", conflicts_with = "file")]
    pub path: Option<PathBuf>,
    /// The benchmark file, as a pipeline passes it.
    #[arg(long)]
    pub file: Option<PathBuf>,
    /// Create the file with --total-size bytes, then exit.
    #[arg(short = 'c')]
    pub create: bool,
    /// Benchmark read(2).
    #[arg(short = 'r')]
    pub read: bool,
    /// Benchmark write(2) (the file is overwritten in place).
    #[arg(short = 'w')]
    pub write: bool,
    #[arg(long, value_enum)]
    pub op: Option<Op>,
    /// Which system calls move the data.
    #[arg(long, value_enum, default_value_t = Call::Plain)]
    pub call: Call,
    /// Bytes per read(2) or write(2) call.
    #[arg(short = 'b', long, value_parser = parse_size, default_value = "64KiB")]
    pub buffer_size: u64,
    /// Bytes per iteration: the file's size.
    #[arg(short = 't', long, value_parser = parse_size, default_value = "16MiB")]
    pub total_size: u64,
    #[arg(short = 'n', long, default_value_t = 1)]
    pub iterations: u32,
    /// Open with O_DIRECT (buffer and total size multiples of 4 KiB).
    #[arg(short = 'd', long)]
    pub direct: bool,
    /// fsync(2) before closing, inside the measured time.
    #[arg(short = 's', long)]
    pub fsync: bool,
    /// sync(2) and drop the page cache before every iteration (needs root).
    #[arg(long)]
    pub drop_caches: bool,
    /// Add getrusage's utime, stime, inblock and oublock to every sample.
    #[arg(short = 'g')]
    pub getrusage: bool,
    /// Print io-benchmark's JSON on standard output.
    #[arg(short = 'j')]
    pub json_stdout: bool,
    /// Print the configuration (on standard error with -j, so standard output stays JSON).
    #[arg(short = 'v')]
    pub verbose: bool,
    /// Write datacrumbs' own report (options, pid, every measurement) to this file; without -j,
    /// nothing is printed then (a pipeline's traced runs stay quiet).
    #[arg(long = "json", value_name = "PATH")]
    pub report: Option<PathBuf>,
    /// Replace the --json file if it exists (a regular file only: never a symbolic link).
    #[arg(long)]
    pub force: bool,
}

impl IoBenchArgs {
    pub fn options(&self) -> IoBenchOptions {
        let op = if self.write {
            Op::Write
        } else if self.read {
            Op::Read
        } else {
            self.op.unwrap_or(Op::Read)
        };
        let file = self.path.clone().or_else(|| self.file.clone());
        IoBenchOptions {
            iterations: self.iterations,
            call: self.call,
            direct: self.direct,
            fsync: self.fsync,
            drop_caches: self.drop_caches,
            json: self.report.clone(),
            force: self.force,
            ..IoBenchOptions::new(
                file.expect("clap requires a path"),
                op,
                self.total_size,
                self.buffer_size,
            )
        }
    }
}

/// io-benchmark's figures for one iteration: bandwidth in KiB/s.
pub fn l41_sample(s: &Sample, getrusage: bool) -> L41Sample {
    let g = |v| getrusage.then_some(v);
    L41Sample {
        bandwidth: s.bytes as f64 / 1024.0 / s.time_s,
        time: s.time_s,
        utime: g(s.utime_s),
        stime: g(s.stime_s),
        inblock: getrusage.then_some(s.inblock),
        oublock: getrusage.then_some(s.oublock),
    }
}

fn host_configuration() -> Map<String, Value> {
    let mut m = Map::new();
    // SAFETY: uname fills the struct it is given; a zeroed utsname is a valid start.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid, writable utsname.
    if unsafe { libc::uname(&mut u) } == 0 {
        let field = |f: &[libc::c_char]| {
            let bytes: Vec<u8> = f
                .iter()
                .take_while(|&&c| c != 0)
                .map(|&c| c as u8)
                .collect();
            Value::from(String::from_utf8_lossy(&bytes).into_owned())
        };
        m.insert("hw.machine".into(), field(&u.machine));
        m.insert("kern.ostype".into(), field(&u.sysname));
        m.insert("kern.osrelease".into(), field(&u.release));
        m.insert("kern.version".into(), field(&u.version));
        m.insert("kern.hostname".into(), field(&u.nodename));
    }
    // SAFETY: sysconf only reads configuration values.
    let (pages, page) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    m.insert("hw.ncpu".into(), json!(cpus));
    m.insert("hw.pagesize".into(), json!(page));
    m.insert("hw.physmem".into(), json!(pages.saturating_mul(page)));
    m
}

/// The report in io-benchmark's JSON shape.
pub fn l41_report(r: &BenchReport, getrusage: bool) -> L41Report {
    let o = &r.options;
    let config = json!({
        "operation": o.op.name(),
        "path": o.file.display().to_string(),
        "buffersize": o.buffer_size,
        "totalsize": o.total_size,
        "blockcount": o.total_size.div_ceil(o.buffer_size),
        "iterations": o.iterations,
        "o_direct": o.direct,
        "fsync": o.fsync,
        "getrusage": getrusage,
        "pid": r.pid,
    });
    L41Report {
        host_configuration: host_configuration(),
        benchmark_configuration: match config {
            Value::Object(m) => m,
            _ => unreachable!("json! of an object"),
        },
        benchmark_samples: r.samples.iter().map(|s| l41_sample(s, getrusage)).collect(),
    }
}

/// Runs `dc-pipeline iobench` as its flags say.
pub fn run(args: &IoBenchArgs) -> iobench::Result<()> {
    let opts = args.options();
    opts.check().map_err(iobench::Error::Options)?;
    if args.verbose {
        eprintln!(
            "{} {}: buffer {} B, total {} B, {} iteration(s){}{}",
            if args.create {
                "create"
            } else {
                opts.op.name()
            },
            opts.file.display(),
            opts.buffer_size,
            opts.total_size,
            opts.iterations,
            if opts.direct { ", O_DIRECT" } else { "" },
            if opts.fsync { ", fsync" } else { "" },
        );
    }
    if args.create {
        iobench::prepare(&opts.file, opts.total_size)?;
        return Ok(());
    }
    let json = opts
        .json
        .as_ref()
        .map(|path| Output::create(path, Existing::forced(opts.force)))
        .transpose()?;
    let report = iobench::run(&opts)?;
    if let Some(out) = json {
        iobench::write_report(&report, out)?;
    }
    if args.json_stdout {
        let text = serde_json::to_string_pretty(&l41_report(&report, args.getrusage))?;
        println!("{text}");
    } else if opts.json.is_none() {
        for s in &report.samples {
            let l = l41_sample(s, args.getrusage);
            let mut line = format!("{:.2} KiB/s {:.6} s", l.bandwidth, l.time);
            if args.getrusage {
                line += &format!(
                    " utime {:.6} s stime {:.6} s inblock {} oublock {}",
                    s.utime_s, s.stime_s, s.inblock, s.oublock
                );
            }
            println!("{line}");
        }
    }
    Ok(())
}
