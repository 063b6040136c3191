//! The tracer's integration tests, in one binary (one link instead of one per file): a module per topic.
//! Most need root (eBPF, cgroups, mounts) and are ignored, with the reason, when run as another user.
//! One module runs alone with `cargo test --release -p tracer --test it MODULE::`. `cgroup` stays a binary of its
//! own: it ends its collection with a SIGINT to the whole process, after which every later collection in the process
//! reports that it was interrupted.
//!
//! What the tests share with other test binaries (bpftrace as an oracle, the test VM, the blkio throttle) is in the
//! `test-support` crate (`tracer/test-support`); what needs this binary's own compilation stays here.

mod calls;
mod caps;
mod collect;
mod decode;
mod ebpf_object;
mod kernel_layers;
mod kill;
mod limits;
mod memcg;
mod names;
mod no_call;
mod offcpu;
mod oncpu;
mod others;
mod output;
mod pids;
mod probe_loads;
mod probes;
mod profile;
mod session;
mod spool;
mod start;
mod teardown;
mod tracepoint_layers;
mod vm;

use std::path::Path;

use tracer::CollectOptions;

/// The test workload: only a test binary of the tracer's package knows its path.
const TESTLOAD: &str = env!("CARGO_BIN_EXE_dc-trace-testload");

/// Options that trace `dc-trace-testload DIR ARGS...` into `output`, with every layer.
fn trace_testload(
    output: &Path,
    dir: &Path,
    args: impl IntoIterator<Item = String>,
) -> CollectOptions {
    let mut command = vec![TESTLOAD.to_owned(), dir.to_str().unwrap().to_owned()];
    command.extend(args);
    CollectOptions::command(output, command)
}
