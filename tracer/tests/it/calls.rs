//! Every I/O a real program makes is a call: coreutils' `cp` (which copies with copy_file_range),
//! fio's io_uring and libaio engines, and Python's `os.sendfile` and `os.splice` give trace
//! events, and rows of the feature matrix, whose bytes are what the program moved, on the files it
//! moved them between. The oracles are independent of the tracer: the files' sizes, bpftrace
//! summing the same syscalls' returns in the same run, fio's own `io_bytes`, `total_ios` and I/O
//! log (each request's offset), and the byte counts Python's calls returned. Profile mode counts
//! io_uring and AIO requests and their bytes as trace mode does. Needs root and BPF; it fails
//! (never skips) where they are missing.

use std::collections::BTreeMap;
use std::path::Path;

use datasets::read::{ReadOptions, Trace, read_all};
use datasets::{ArgValue, Event, Hash};
use test_support::oracle::Oracle;
use tracer::{CollectOptions, Layer, LayerSelection, Summary, collect};

/// Traces `command` with the sys layer into `output`.
fn trace(output: &Path, command: &[&str]) -> (Summary, Trace) {
    trace_with_own_cost(output, command, false)
}

/// [`trace`], recording the tracer's own eBPF time when `own_cost`.
fn trace_with_own_cost(output: &Path, command: &[&str], own_cost: bool) -> (Summary, Trace) {
    let mut opts = CollectOptions::command(output, command.iter().map(|s| s.to_string()).collect());
    opts.layers = LayerSelection::only(&[Layer::Sys]);
    opts.own_cost = own_cost;
    let summary = collect(&opts).expect("BPF must work on this machine");
    assert_eq!(summary.exit_status, Some(0), "{summary}");
    assert_eq!(summary.drops, 0, "{summary}");
    let t = read_all(&[output.to_path_buf()], ReadOptions::default()).unwrap();
    (summary, t)
}

/// The hash the trace interns `path` as.
fn file_hash(t: &Trace, path: &Path) -> Hash {
    let name = path.to_str().unwrap();
    t.events
        .iter()
        .find(|e| e.name == "FH" && e.args.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("no FH names {name}"))
        .args
        .value
        .unwrap()
}

fn src_fhash(e: &Event) -> Option<Hash> {
    match e.args.get("src_fhash")? {
        ArgValue::Int(v) => Some(Hash(*v as u128)),
        ArgValue::BigInt(v) => Some(Hash(*v as u128)),
        other => panic!("src_fhash is {other:?}"),
    }
}

fn sys<'a>(t: &'a Trace, name: &'a str) -> impl Iterator<Item = &'a Event> + 'a {
    t.events
        .iter()
        .filter(move |e| e.cat == "sys" && e.name == name)
}

fn bytes<'a>(es: impl IntoIterator<Item = &'a Event>) -> i64 {
    es.into_iter().map(|e| e.args.size.unwrap()).sum()
}

/// (bytes, file) summed per file over the matrix's rows of `op`.
fn matrix_bytes(output: &Path, op: &str) -> BTreeMap<Option<String>, i64> {
    let m = features::build(&[output.to_path_buf()], &features::BuildOptions::default()).unwrap();
    let mut out = BTreeMap::new();
    for r in (0..m.n_rows()).filter(|&r| m.op[r] == op) {
        *out.entry(m.file[r].clone()).or_default() += m.size[r].expect("a copy's bytes");
    }
    out
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn cp_copies_with_copy_file_range_and_its_rows_carry_the_files_bytes_on_both_files() {
    let _machine = test_support::machine();
    let dir = tempfile::tempdir().unwrap();
    let (src, dst) = (dir.path().join("src"), dir.path().join("dst"));
    // Not a multiple of any buffer size, so a lost or doubled chunk shows.
    std::fs::write(&src, vec![7u8; 5 * 1024 * 1024 + 12345]).unwrap();
    let output = dir.path().join("trace.pfw");
    let oracle = Oracle::start(
        r#"BEGIN { printf("ready\n"); }
tracepoint:syscalls:sys_exit_copy_file_range /comm == "cp" && args->ret > 0/ { @b[pid] = sum(args->ret); }
"#,
    );
    let (_, t) = trace(
        &output,
        &["cp", src.to_str().unwrap(), dst.to_str().unwrap()],
    );
    let maps = oracle.stop();
    let size = std::fs::metadata(&src).unwrap().len() as i64;
    assert_eq!(std::fs::metadata(&dst).unwrap().len() as i64, size);

    let copies: Vec<&Event> = sys(&t, "copy_file_range").collect();
    let pid = copies.first().expect("cp's copy_file_range").pid;
    assert_eq!(maps["@b"][&pid.to_string()], size, "bpftrace's sum");
    assert_eq!(bytes(copies.iter().copied()), size);
    let (s, d) = (file_hash(&t, &src), file_hash(&t, &dst));
    for e in &copies {
        assert_eq!((e.args.fhash, src_fhash(e)), (Some(d), Some(s)), "{e:?}");
    }
    assert_eq!(
        matrix_bytes(&output, "copy_file_range"),
        BTreeMap::from([(Some(dst.to_str().unwrap().to_owned()), size)])
    );
}

/// fio's io_uring engine on `data`, random 16 KiB reads and writes, 8 in flight, its report in `json`
/// and each I/O it issued in `json` with `.iolog` for an extension.
fn fio(data: &Path, json: &Path) -> Vec<String> {
    [
        "fio",
        &format!("--write_iolog={}", json.with_extension("iolog").display()),
        "--name=uring",
        "--ioengine=io_uring",
        &format!("--filename={}", data.display()),
        "--size=8m",
        "--bs=16k",
        "--rw=randrw",
        "--iodepth=8",
        "--output-format=json",
        &format!("--output={}", json.display()),
    ]
    .map(String::from)
    .to_vec()
}

/// fio's `io_bytes` and `total_ios` in direction `dir` (`read`, `write`), over its jobs.
fn fio_moved(json: &Path, dir: &str) -> (i64, i64) {
    let fio: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    let sum = |key: &str| -> i64 {
        fio["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|j| j[dir][key].as_i64().unwrap())
            .sum()
    };
    (sum("io_bytes"), sum("total_ios"))
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn fio_io_uring_requests_are_rows_with_the_bytes_and_offsets_fio_logged() {
    let _machine = test_support::machine();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("fio.dat");
    let json = dir.path().join("fio.json");
    let output = dir.path().join("trace.pfw");
    let command = fio(&data, &json);
    let command: Vec<&str> = command.iter().map(String::as_str).collect();
    let (summary, t) = trace(&output, &command);
    let sys_layer = summary.layers.iter().find(|l| l.layer == "sys").unwrap();
    for tp in [
        "io_uring_submit_req",
        "io_uring_file_get",
        "io_uring_complete",
    ] {
        let tp = format!("io_uring/{tp}");
        assert!(sys_layer.attached.contains(&tp), "{tp}: {sys_layer:?}");
    }
    let ((read, reads), (written, writes)) = (fio_moved(&json, "read"), fio_moved(&json, "write"));
    assert!(read > 0 && written > 0, "fio moved nothing");
    assert_eq!(sys(&t, "io_uring_read").count() as i64, reads);
    assert_eq!(sys(&t, "io_uring_write").count() as i64, writes);

    let file = file_hash(&t, &data);
    for op in ["io_uring_read", "io_uring_write"] {
        assert!(sys(&t, op).all(|e| e.args.fhash == Some(file) && e.dur_ns > 0));
    }
    assert_eq!(bytes(sys(&t, "io_uring_read")), read);
    assert_eq!(bytes(sys(&t, "io_uring_write")), written);
    // Each I/O, as (read or write, offset, bytes), in fio's own log and in the trace.
    let mut traced: Vec<(String, i64, i64)> = ["read", "write"]
        .into_iter()
        .flat_map(|way| {
            sys(
                &t,
                if way == "read" {
                    "io_uring_read"
                } else {
                    "io_uring_write"
                },
            )
            .map(move |e| {
                (
                    way.to_owned(),
                    e.args.offset.expect("an offset"),
                    e.args.size.unwrap(),
                )
            })
        })
        .collect();
    traced.sort();
    assert_eq!(traced, fio_logged(&json.with_extension("iolog")));
    let name = Some(data.to_str().unwrap().to_owned());
    assert_eq!(
        matrix_bytes(&output, "io_uring_read"),
        BTreeMap::from([(name.clone(), read)])
    );
    assert_eq!(
        matrix_bytes(&output, "io_uring_write"),
        BTreeMap::from([(name, written)])
    );
}

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn fio_io_uring_requests_in_profile_mode_count_what_fio_moved() {
    let _machine = test_support::machine();
    let dir = tempfile::tempdir().unwrap();
    let (data, json) = (dir.path().join("fio.dat"), dir.path().join("fio.json"));
    let output = dir.path().join("profile.pfw");
    let mut opts = CollectOptions::command(&output, fio(&data, &json));
    opts.layers = LayerSelection::only(&[Layer::Sys]);
    opts.mode = tracer::Mode::Profile {
        interval: std::time::Duration::from_millis(10),
    };
    let summary = collect(&opts).expect("BPF must work on this machine");
    assert_eq!(summary.exit_status, Some(0), "{summary}");
    let t = read_all(std::slice::from_ref(&output), ReadOptions::default()).unwrap();
    for (op, dir) in [("io_uring_read", "read"), ("io_uring_write", "write")] {
        let int = |e: &Event, k: &str| match e.args.get(k) {
            Some(ArgValue::Int(v)) => *v,
            other => panic!("{k} is {other:?}"),
        };
        let counters: Vec<&Event> = t
            .events
            .iter()
            .filter(|e| e.ph == datasets::Phase::Counter && e.name == op)
            .collect();
        let calls = counters.iter().map(|e| int(e, "freq")).sum::<i64>();
        let bytes = counters.iter().map(|e| int(e, "size_sum")).sum::<i64>();
        assert_eq!((bytes, calls), fio_moved(&json, dir), "{op}");
    }
}

/// fio's libaio engine on `data` (`rw` as fio names it, O_DIRECT or buffered), 4 KiB blocks, 8 in
/// flight, stopping after `ios` I/Os; its report in `json` and each I/O it issued in `json` with
/// `.iolog` for an extension.
fn fio_libaio(data: &Path, json: &Path, rw: &str, direct: bool, ios: u32) -> Vec<String> {
    [
        "fio",
        &format!("--write_iolog={}", json.with_extension("iolog").display()),
        "--name=aio",
        "--ioengine=libaio",
        &format!("--direct={}", direct as u8),
        &format!("--filename={}", data.display()),
        "--size=8m",
        "--bs=4k",
        &format!("--rw={rw}"),
        "--iodepth=8",
        &format!("--number_ios={ios}"),
        "--output-format=json",
        &format!("--output={}", json.display()),
    ]
    .map(String::from)
    .to_vec()
}

/// (way, offset, bytes) of each read or write in fio's I/O log `iolog`, sorted.
fn fio_logged(iolog: &Path) -> Vec<(String, i64, i64)> {
    let log = std::fs::read_to_string(iolog).unwrap();
    let mut logged: Vec<(String, i64, i64)> = log
        .lines()
        .filter_map(|l| match l.split_whitespace().collect::<Vec<_>>()[..] {
            [_, _, way @ ("read" | "write"), off, len] => {
                Some((way.to_owned(), off.parse().unwrap(), len.parse().unwrap()))
            }
            _ => None,
        })
        .collect();
    logged.sort();
    logged
}

/// fio's libaio engine, direct and buffered, reading and writing: one `aio_pread` or
/// `aio_pwrite` row per I/O fio issued, with the offset and bytes fio logged for it, on the data
/// file, ending after it began; the matrix's rows say O_DIRECT as fio opened the file.
#[test]
fn fio_libaio_requests_are_rows_with_the_bytes_and_offsets_fio_logged() {
    const IOS: u32 = 1000;
    for (rw, direct, op, way) in [
        ("randread", true, "aio_pread", "read"),
        ("randread", false, "aio_pread", "read"),
        ("randwrite", true, "aio_pwrite", "write"),
    ] {
        let case = format!("{rw} direct={direct}");
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("fio.dat");
        let json = dir.path().join("fio.json");
        let output = dir.path().join("trace.pfw");
        let command = fio_libaio(&data, &json, rw, direct, IOS);
        let command: Vec<&str> = command.iter().map(String::as_str).collect();
        let (summary, t) = trace(&output, &command);
        // The requests are followed by the raw syscall programs, with no `syscalls` perf
        // tracepoint, which would slow every system call of the machine.
        let sys_layer = summary.layers.iter().find(|l| l.layer == "sys").unwrap();
        for tp in ["raw_syscalls/sys_enter", "raw_syscalls/sys_exit"] {
            assert!(
                sys_layer.attached.iter().any(|a| a == tp),
                "{tp}: {sys_layer:?}"
            );
        }
        assert!(
            !sys_layer
                .attached
                .iter()
                .any(|a| a.starts_with("syscalls/")),
            "{sys_layer:?}"
        );
        let (moved, ios) = fio_moved(&json, way);
        assert_eq!(ios, IOS as i64, "{case}: fio's own count");
        let rows: Vec<&Event> = sys(&t, op).collect();
        assert_eq!(rows.len() as i64, ios, "{case}");
        assert_eq!(bytes(rows.iter().copied()), moved, "{case}");
        let file = file_hash(&t, &data);
        assert!(
            rows.iter()
                .all(|e| e.args.fhash == Some(file) && e.dur_ns > 0 && e.args.ret == e.args.size),
            "{case}"
        );
        let mut traced: Vec<(String, i64, i64)> = rows
            .iter()
            .map(|e| {
                let off = e.args.offset.expect("an offset");
                (way.to_owned(), off, e.args.size.unwrap())
            })
            .collect();
        traced.sort();
        assert_eq!(traced, fio_logged(&json.with_extension("iolog")), "{case}");

        let m = features::build(
            std::slice::from_ref(&output),
            &features::BuildOptions::default(),
        )
        .unwrap();
        let name = Some(data.to_str().unwrap().to_owned());
        let mut seen = 0i64;
        for r in (0..m.n_rows()).filter(|&r| m.op[r] == op) {
            assert_eq!(
                (&m.file[r], m.direct[r]),
                (&name, Some(direct)),
                "{case}: row {r}"
            );
            seen += m.size[r].unwrap();
        }
        assert_eq!(seen, moved, "{case}: the matrix's bytes");
    }
}

/// An io_submit of more iocbs than the programs read (fio submitting its whole queue of 128 at
/// once) loses the rest, and says so: every I/O fio issued is a row or a drop.
#[test]
fn fio_libaio_requests_past_what_one_call_reads_are_counted_as_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let (data, json) = (dir.path().join("fio.dat"), dir.path().join("fio.json"));
    let output = dir.path().join("trace.pfw");
    let mut command = fio_libaio(&data, &json, "randread", true, 1000);
    command.extend(
        [
            "--iodepth=128",
            "--iodepth_batch_submit=128",
            "--iodepth_batch_complete_max=128",
        ]
        .map(String::from),
    );
    let mut opts = CollectOptions::command(&output, command);
    opts.layers = LayerSelection::only(&[Layer::Sys]);
    let summary = collect(&opts).expect("BPF must work on this machine");
    assert_eq!(summary.exit_status, Some(0), "{summary}");
    let t = read_all(std::slice::from_ref(&output), ReadOptions::default()).unwrap();
    let (_, ios) = fio_moved(&json, "read");
    let rows = sys(&t, "aio_pread").count() as i64;
    let drops = summary.drops as i64;
    assert!(drops > 0, "{summary}");
    assert!(
        rows < ios && rows + drops >= ios,
        "{rows} rows, {drops} drops, {ios} I/Os"
    );
}

#[test]
fn fio_libaio_requests_in_profile_mode_count_what_fio_moved() {
    let dir = tempfile::tempdir().unwrap();
    let (data, json) = (dir.path().join("fio.dat"), dir.path().join("fio.json"));
    let output = dir.path().join("profile.pfw");
    let mut opts = CollectOptions::command(&output, fio_libaio(&data, &json, "randrw", true, 600));
    opts.layers = LayerSelection::only(&[Layer::Sys]);
    opts.mode = tracer::Mode::Profile {
        interval: std::time::Duration::from_millis(10),
    };
    let summary = collect(&opts).expect("BPF must work on this machine");
    assert_eq!(summary.exit_status, Some(0), "{summary}");
    let t = read_all(std::slice::from_ref(&output), ReadOptions::default()).unwrap();
    for (op, dir) in [("aio_pread", "read"), ("aio_pwrite", "write")] {
        let int = |e: &Event, k: &str| match e.args.get(k) {
            Some(ArgValue::Int(v)) => *v,
            other => panic!("{k} is {other:?}"),
        };
        let counters: Vec<&Event> = t
            .events
            .iter()
            .filter(|e| e.ph == datasets::Phase::Counter && e.name == op)
            .collect();
        let calls = counters.iter().map(|e| int(e, "freq")).sum::<i64>();
        let bytes = counters.iter().map(|e| int(e, "size_sum")).sum::<i64>();
        assert_eq!((bytes, calls), fio_moved(&json, dir), "{op}");
    }
}

/// Copies `src` to `by_sendfile` with os.sendfile and to `by_splice` through a pipe with
/// os.splice, in chunks, and prints the bytes each call returned, summed per way.
const COPY: &str = r#"
import os, sys
src, by_sendfile, by_splice = sys.argv[1:4]
size = os.stat(src).st_size
sent = 0
with open(src, "rb") as i, open(by_sendfile, "wb") as o:
    while sent < size:
        sent += os.sendfile(o.fileno(), i.fileno(), sent, 100000)
into_pipe = out_of_pipe = 0
r, w = os.pipe()
with open(src, "rb") as i, open(by_splice, "wb") as o:
    while into_pipe < size:
        n = os.splice(i.fileno(), w, 50000)
        into_pipe += n
        while n:
            m = os.splice(r, o.fileno(), n)
            out_of_pipe += m
            n -= m
print(sent, into_pipe, out_of_pipe)
"#;

#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn sendfile_and_splice_rows_carry_the_bytes_python_moved() {
    let _machine = test_support::machine();
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    let (by_sendfile, by_splice) = (dir.path().join("sent"), dir.path().join("spliced"));
    std::fs::write(&src, vec![3u8; 3 * 1024 * 1024 + 777]).unwrap();
    let script = dir.path().join("copy.py");
    std::fs::write(&script, COPY).unwrap();
    let output = dir.path().join("trace.pfw");
    let printed = dir.path().join("printed");
    let redirect = format!(
        "python3 {} {} {} {} > {}",
        script.display(),
        src.display(),
        by_sendfile.display(),
        by_splice.display(),
        printed.display()
    );
    let (_, t) = trace(&output, &["sh", "-c", &redirect]);
    let said: Vec<i64> = std::fs::read_to_string(&printed)
        .unwrap()
        .split_whitespace()
        .map(|n| n.parse().unwrap())
        .collect();
    let size = std::fs::metadata(&src).unwrap().len() as i64;
    assert_eq!(said, [size, size, size], "python's own count");
    for f in [&by_sendfile, &by_splice] {
        assert_eq!(std::fs::metadata(f).unwrap().len() as i64, size);
    }

    let (s, sent, spliced) = (
        file_hash(&t, &src),
        file_hash(&t, &by_sendfile),
        file_hash(&t, &by_splice),
    );
    let sendfiles: Vec<&Event> = sys(&t, "sendfile").collect();
    assert!(
        sendfiles
            .iter()
            .all(|e| (e.args.fhash, src_fhash(e)) == (Some(sent), Some(s)))
    );
    assert_eq!(bytes(sendfiles), size);
    // Into the pipe: from the source file to no file; out of it: from no file to the copy.
    let (into, out): (Vec<&Event>, Vec<&Event>) =
        sys(&t, "splice").partition(|e| src_fhash(e) == Some(s));
    assert!(into.iter().all(|e| e.args.fhash.is_none()));
    assert!(
        out.iter()
            .all(|e| e.args.fhash == Some(spliced) && src_fhash(e).is_none())
    );
    assert_eq!((bytes(into), bytes(out)), (size, size));
    assert_eq!(
        matrix_bytes(&output, "sendfile"),
        BTreeMap::from([(Some(by_sendfile.to_str().unwrap().to_owned()), size)])
    );
}

/// GNU tar opens each file by its name relative to its directory's fd (`openat(dirfd, "f3")`):
/// every file of a tree whose directories hold the same names gets its own full path, which the
/// tree itself lists.
#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn tar_opening_names_relative_to_directory_fds_gets_each_files_full_path() {
    let _machine = test_support::machine();
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    let mut expected = std::collections::BTreeSet::new();
    for d in 0..5 {
        let sub = tree.join(format!("d{d}"));
        std::fs::create_dir_all(&sub).unwrap();
        for f in 0..4 {
            let path = sub.join(format!("f{f}"));
            std::fs::write(&path, vec![b'x'; 10_000 + f]).unwrap();
            expected.insert(path.to_str().unwrap().to_owned());
        }
    }
    let output = dir.path().join("trace.pfw");
    let archive = dir.path().join("a.tar");
    let (_, t) = trace(
        &output,
        &[
            "tar",
            "cf",
            archive.to_str().unwrap(),
            "-C",
            dir.path().to_str().unwrap(),
            "tree",
        ],
    );
    let names: BTreeMap<Hash, String> = t
        .events
        .iter()
        .filter(|e| e.name == "FH")
        .map(|e| (e.args.value.unwrap(), e.args.name.clone().unwrap()))
        .collect();
    // The files tar read: the opens whose bytes it then read, by the names the trace gives them.
    let read: std::collections::BTreeSet<String> = sys(&t, "read")
        .filter_map(|e| e.args.fhash)
        .filter_map(|h| names.get(&h).cloned())
        .filter(|n| n.starts_with(tree.to_str().unwrap()) && n.contains("/f"))
        .collect();
    assert_eq!(read, expected);
    let relative = sys(&t, "openat")
        .filter(|e| e.args.get("dirfd").is_some())
        .count();
    assert!(
        relative >= expected.len(),
        "{relative} opens relative to a directory fd"
    );
}

/// Asked for (`--own-cost`), the end's limits reading holds the tracer's own eBPF time, from the kernel's
/// statistics: each call the trace holds ran the `sys` layer's two programs, at its entry and at its exit, so the
/// programs ran at least twice as often as there are calls (more: every other system call of the machine meets them
/// too), and a run costs between a few nanoseconds and the length of a traced 512-byte read. Not asked for, the
/// reading holds none.
#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn the_tracers_own_ebpf_time_is_recorded_with_the_end_limits() {
    let _machine = test_support::machine();
    let dir = tempfile::tempdir().unwrap();
    let command = [
        "dd",
        "if=/dev/zero",
        "of=/dev/null",
        "bs=512",
        "count=20000",
    ];
    let (_, t) = trace_with_own_cost(&dir.path().join("trace.pfw"), &command, true);
    let end = end_limits(&t);
    let cost = end.tracer.expect("the end reading holds the tracer's cost");
    let calls = t.events.iter().filter(|e| e.cat == "sys").count() as u64;
    assert!(calls >= 40_000, "{calls} calls");
    assert!(cost.bpf_runs >= 2 * calls, "{cost:?} for {calls} calls");
    let per_run = cost.bpf_run_ns as f64 / cost.bpf_runs as f64;
    let mut read_ns: Vec<u64> = sys(&t, "read").map(|e| e.dur_ns).collect();
    read_ns.sort_unstable();
    let median_read = read_ns[read_ns.len() / 2] as f64;
    assert!(
        per_run > 1.0 && per_run < median_read,
        "{per_run} ns a run, a read {median_read} ns"
    );

    let (_, plain) = trace(&dir.path().join("plain.pfw"), &command);
    assert_eq!(end_limits(&plain).tracer, None);
}

/// The end's limits reading holds what the tracer adds to one cheap call: a helper of the tracer's timed 16 batches of
/// 256 one-byte reads of its own executable before the probes were attached, then again in the scope, where the sys
/// layer recorded each read. None of the helper's events reaches the trace: no one-byte read, no name, no event of
/// any process but the command's.
#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn the_tracers_cost_per_call_is_recorded_with_the_end_limits_and_none_of_its_calls_is_traced() {
    let _machine = test_support::machine();
    let dir = tempfile::tempdir().unwrap();
    let (_, t) = trace(&dir.path().join("trace.pfw"), &["true"]);
    let end = end_limits(&t);
    assert_eq!(end.errors, Vec::<String>::new());
    let cost = end
        .per_call
        .expect("the end reading holds the cost per call");
    assert_eq!(cost.call, "pread64(/proc/self/exe, 1 byte at 0)");
    assert_eq!((cost.batches, cost.calls_per_batch), (16, 256));
    assert!(cost.traced_ns > cost.untraced_ns, "{cost:?}");
    assert!(
        cost.events >= cost.batches * cost.calls_per_batch,
        "{cost:?}"
    );
    let start = t
        .events
        .iter()
        .filter_map(datasets::limits::Limits::from_event)
        .map(Result::unwrap)
        .next()
        .unwrap();
    assert_eq!(start.per_call, None);

    let command = t
        .events
        .iter()
        .find(|e| e.name == datasets::limits::LIMITS_EVENT)
        .unwrap()
        .pid;
    let read = sys(&t, "read").count();
    assert!(read > 0 && read < 256, "{read} reads");
    assert_eq!(
        sys(&t, "pread64")
            .filter(|e| e.args.size == Some(1))
            .count(),
        0
    );
    let others: Vec<&Event> = t
        .events
        .iter()
        .filter(|e| e.pid != 0 && e.pid != command)
        .collect();
    assert!(others.is_empty(), "{others:?}");
}

/// The limits reading a trace ends with.
fn end_limits(t: &Trace) -> datasets::limits::Limits {
    t.events
        .iter()
        .filter_map(datasets::limits::Limits::from_event)
        .map(Result::unwrap)
        .next_back()
        .unwrap()
}

/// GNU find stats each file by its name relative to its directory's fd, and that fd is a dup of the one it opened
/// the directory with (`fcntl(F_DUPFD_CLOEXEC)`, then `close` of the first): each file of a tree whose directories
/// hold the same names is stated once, under its own full path, as the tree itself lists them.
#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn find_stating_names_relative_to_duplicated_directory_fds_gets_each_files_full_path() {
    let _machine = test_support::machine();
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    let mut expected = BTreeMap::new();
    for d in 0..6 {
        let sub = tree.join(format!("d{d}"));
        std::fs::create_dir_all(&sub).unwrap();
        for f in 0..5 {
            let path = sub.join(format!("f{f}"));
            std::fs::write(&path, b"x").unwrap();
            expected.insert(path.to_str().unwrap().to_owned(), 1);
        }
    }
    let output = dir.path().join("trace.pfw");
    let (_, t) = trace(
        &output,
        &["find", tree.to_str().unwrap(), "-type", "f", "-size", "+0"],
    );
    let names: BTreeMap<Hash, String> = t
        .events
        .iter()
        .filter(|e| e.name == "FH")
        .map(|e| (e.args.value.unwrap(), e.args.name.clone().unwrap()))
        .collect();
    let stated: BTreeMap<String, usize> = sys(&t, "newfstatat")
        .filter(|e| e.args.get("dirfd").is_some())
        .filter_map(|e| names.get(&e.args.fhash?).cloned())
        .filter(|n| n.contains("/f"))
        .fold(BTreeMap::new(), |mut m, n| {
            *m.entry(n).or_default() += 1;
            m
        });
    assert_eq!(stated, expected);
}

/// A relative name is relative to the working directory its process had when it named it: a shell that `cd`s
/// between two directories holding the same names, a child forked in each (gone long before its name is
/// resolved), and a process that changes directory itself (`fchdir` to a directory it opened, and `chdir`, as a
/// server does into its data directory) each give the files their own full paths, as `stat` lists them.
#[test]
#[cfg_attr(not(dc_root), ignore = "needs root")]
fn relative_names_follow_each_processs_working_directory() {
    let _machine = test_support::machine();
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    for (d, n) in [(&a, 100), (&b, 200)] {
        std::fs::create_dir(d).unwrap();
        std::fs::write(d.join("f"), vec![b'x'; n]).unwrap();
        std::fs::write(d.join("g"), vec![b'y'; n + 1]).unwrap();
    }
    let py = "import os; fd = os.open('b', os.O_RDONLY); os.fchdir(fd); os.read(os.open('g', os.O_RDONLY), 1000); \
              os.chdir('../a'); os.read(os.open('g', os.O_RDONLY), 1000)";
    let script = format!(
        "cd {a} && cat f > /dev/null && cd ../b && cat f > /dev/null && cd .. && python3 -c \"{py}\"",
        a = a.display()
    );
    let output = dir.path().join("trace.pfw");
    let (_, t) = trace(&output, &["sh", "-c", &script]);
    let names: BTreeMap<Hash, String> = t
        .events
        .iter()
        .filter(|e| e.name == "FH")
        .map(|e| (e.args.value.unwrap(), e.args.name.clone().unwrap()))
        .collect();
    let read: BTreeMap<String, i64> = sys(&t, "read")
        .filter(|e| e.args.ret.is_some_and(|r| r > 0))
        .filter_map(|e| Some((names.get(&e.args.fhash?)?.clone(), e.args.ret?)))
        .filter(|(n, _)| n.starts_with(dir.path().to_str().unwrap()))
        .fold(BTreeMap::new(), |mut m, (n, r)| {
            *m.entry(n).or_default() += r;
            m
        });
    let size = |p: &Path| std::fs::metadata(p).unwrap().len() as i64;
    let expected: BTreeMap<String, i64> = [a.join("f"), b.join("f"), b.join("g"), a.join("g")]
        .iter()
        .map(|p| (p.to_str().unwrap().to_owned(), size(p)))
        .collect();
    assert_eq!(read, expected);
}
