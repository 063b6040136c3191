//! The tracer's integration tests, in one binary (one link instead of one per file): a module per topic.
//! Most need root (eBPF, cgroups, mounts) and are ignored, with the reason, when run as another user.
//! One module runs alone with `cargo test --release -p tracer --test it MODULE::`. `cgroup` stays a binary of its
//! own: it ends its collection with a SIGINT to the whole process, after which every later collection in the process
//! reports that it was interrupted.

mod common;
#[path = "support/throttle.rs"]
mod throttle;

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
