//! Layers: the `cat` an event carries. One table holds every layer datacrumbs writes or reads, the names other tools
//! give the same layer, where each stands when exclusive time is shared, and whether a kernel function may be filed
//! under it.

/// Interrupt handlers that ran on a thread's CPU while it was inside a traced call.
pub const IRQ: &str = "irq";
pub const BLOCK: &str = "block";
pub const IOMAP: &str = "iomap";
pub const JBD2: &str = "jbd2";
pub const LOCK: &str = "lock";
/// Memory management: reclaim, page faults, dirty throttling.
pub const MM: &str = "mm";
pub const WRITEBACK: &str = "writeback";
/// DataCrumbs' readahead category.
pub const READAHEAD: &str = "readahead";
pub const PAGE_CACHE: &str = "page_cache";
pub const EXT4: &str = "ext4";
/// File systems: ext4's tracepoints, and kernel functions of other file systems.
pub const FS: &str = "fs";
pub const VFS: &str = "vfs";
/// The layer of a kernel function no pattern of the kernel layer map matches.
pub const KERNEL: &str = "kernel";
/// The system call layer of datacrumbs and DataCrumbs traces.
pub const SYS: &str = "sys";
/// DFTracer's system call layer (`read`, `pread`, `open64`, ...): [`SYS`] under another name.
pub const POSIX: &str = "POSIX";
/// The C library's I/O functions.
pub const LIBC: &str = "libc";
/// DFTracer's buffered-stream layer (`fread`, `fwrite`, ...).
pub const STDIO: &str = "STDIO";
/// The application's own functions; application patterns are filed under it too.
pub const APP: &str = "app";
pub const NET: &str = "net";
/// Sampled kernel stacks of on-CPU time.
pub const ONCPU: &str = "oncpu";
/// Off-CPU time: a thread that was not running.
pub const SCHED: &str = "sched";
/// Not a layer but dc-trace's label, among the layers it counts drops and skipped runs for, of the programs that
/// follow processes (fork, exit, exec, rename).
pub const SCOPE: &str = "scope";

/// Where a layer stands when innermost intervals of several layers share an instant (see [`exclusive_rank`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Excl {
    /// Its tier: smaller wins; layers of one tier are told apart by name.
    Tier(u8),
    /// After every tier, by name, as a layer not in the table is.
    Unranked,
    /// After every other layer.
    Last,
}

/// One layer.
#[derive(Clone, Copy, Debug)]
pub struct LayerDef {
    pub name: &'static str,
    /// Other tools' names for it, which share its tier.
    pub aliases: &'static [&'static str],
    pub excl: Excl,
    /// Whether the kernel layer map (`kernel_layers.toml`, `waits.toml`) may file a kernel function under it.
    pub kernel_functions: bool,
}

const fn layer(
    name: &'static str,
    aliases: &'static [&'static str],
    excl: Excl,
    kernel_functions: bool,
) -> LayerDef {
    LayerDef {
        name,
        aliases,
        excl,
        kernel_functions,
    }
}

use Excl::{Last, Tier, Unranked};

/// Every layer, in exclusive-time order. The deeper a layer sits in the stack, the earlier: an interrupt takes the
/// CPU from whatever runs; the block device is why a thread sleeps in D while its request is served, so block time
/// overlapping an off-CPU interval is block time; journal, lock and reclaim waits likewise explain the sleep they
/// overlap; the page cache and the file system sit below VFS, VFS below the system call, the system call below libc
/// and the application. `sched` (off-CPU time) comes last: it says the thread was not running, the others say why.
/// `filemap`, `os_cache`, `bio`, `readahead` and `c` are DataCrumbs' categories; `POSIX` and `STDIO` DFTracer's.
pub const LAYERS: &[LayerDef] = &[
    layer(IRQ, &[], Tier(0), true),
    layer(BLOCK, &["bio"], Tier(1), true),
    layer(IOMAP, &[], Tier(2), true),
    layer(JBD2, &[], Tier(3), true),
    layer(LOCK, &[], Tier(4), true),
    layer(MM, &[], Tier(5), true),
    layer(WRITEBACK, &[], Tier(6), true),
    layer(READAHEAD, &[], Tier(7), false),
    layer(PAGE_CACHE, &["filemap", "os_cache"], Tier(8), true),
    layer(EXT4, &[], Tier(9), true),
    layer(FS, &[], Tier(9), true),
    layer(VFS, &[], Tier(10), true),
    layer(KERNEL, &[], Tier(11), false),
    layer(SYS, &[POSIX], Tier(12), false),
    layer(LIBC, &["c", STDIO], Tier(13), false),
    layer(APP, &[], Tier(14), false),
    layer(NET, &[], Unranked, true),
    layer(ONCPU, &[], Unranked, false),
    layer(SCHED, &[], Last, true),
];

/// The layers whose events are system calls, and so by default the feature matrix's rows: datacrumbs' and
/// DataCrumbs' `sys`, DFTracer's `POSIX` (a trace has one or the other). Not STDIO: an `fread` is a library call
/// whose cost lies in the system calls it may or may not make.
pub const SYSCALL_LAYERS: [&str; 2] = [SYS, POSIX];

/// The layers whose events are the program's own I/O calls, each call once, for what a job did (bytes, calls,
/// sizes): the system call layers and DFTracer's `STDIO`, which intercepts `fread` at the program's boundary while
/// the `read` inside it reaches no interposer, so the two never count one request twice. Not datacrumbs' `libc`:
/// the system call inside an `fread` it records is in `sys` as well.
pub const CALL_LAYERS: [&str; 3] = [SYS, POSIX, STDIO];

/// The layer table's entry for `name`, by name or alias.
pub fn find(name: &str) -> Option<&'static LayerDef> {
    LAYERS
        .iter()
        .find(|l| l.name == name || l.aliases.contains(&name))
}

/// The layers a kernel function may be filed under, in table order.
pub fn kernel_function_layers() -> Vec<&'static str> {
    LAYERS
        .iter()
        .filter(|l| l.kernel_functions)
        .map(|l| l.name)
        .collect()
}

/// The tiers of exclusive time, first wins: each tier's names (with aliases), in table order.
pub fn exclusive_tiers() -> Vec<Vec<&'static str>> {
    let mut tiers: Vec<(u8, Vec<&str>)> = Vec::new();
    for l in LAYERS {
        let Tier(t) = l.excl else { continue };
        let names = l.aliases.iter().copied();
        match tiers.iter_mut().find(|(n, _)| *n == t) {
            Some((_, v)) => v.extend(std::iter::once(l.name).chain(names)),
            None => tiers.push((t, std::iter::once(l.name).chain(names).collect())),
        }
    }
    tiers.into_iter().map(|(_, v)| v).collect()
}

/// The layer that comes after every other in exclusive time.
pub fn last_layer() -> &'static str {
    LAYERS
        .iter()
        .find(|l| l.excl == Last)
        .map(|l| l.name)
        .expect("the layer table names a last layer")
}

/// Where `layer` stands in exclusive time: smaller wins, the name breaks ties.
pub fn exclusive_rank(layer: &str) -> (usize, &str) {
    let tiers = LAYERS.iter().filter_map(|l| match l.excl {
        Tier(t) => Some(t as usize),
        _ => None,
    });
    let unranked = tiers.max().map_or(0, |t| t + 1);
    let tier = match find(layer).map(|l| l.excl) {
        Some(Tier(t)) => t as usize,
        Some(Last) => unranked + 1,
        Some(Unranked) | None => unranked,
    };
    (tier, layer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_one_layer() {
        let mut names: Vec<&str> = LAYERS
            .iter()
            .flat_map(|l| std::iter::once(l.name).chain(l.aliases.iter().copied()))
            .collect();
        let n = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), n);
    }

    #[test]
    fn exclusive_order_runs_from_interrupts_to_the_application_then_unknown_then_sched() {
        let tiers = exclusive_tiers();
        assert_eq!(tiers.len(), 15);
        assert_eq!(tiers[0], ["irq"]);
        assert_eq!(tiers[8], ["page_cache", "filemap", "os_cache"]);
        assert_eq!(tiers[9], ["ext4", "fs"]);
        assert_eq!(tiers[12], ["sys", "POSIX"]);
        assert_eq!(tiers[14], ["app"]);
        assert_eq!(exclusive_rank("POSIX"), (12, "POSIX"));
        assert_eq!(exclusive_rank("net"), (15, "net"));
        assert_eq!(exclusive_rank("MPI"), (15, "MPI"));
        assert_eq!(exclusive_rank("sched"), (16, "sched"));
        assert_eq!(last_layer(), "sched");
    }

    #[test]
    fn kernel_functions_go_to_the_kernel_layers_only() {
        assert_eq!(
            kernel_function_layers(),
            [
                "irq",
                "block",
                "iomap",
                "jbd2",
                "lock",
                "mm",
                "writeback",
                "page_cache",
                "ext4",
                "fs",
                "vfs",
                "net",
                "sched"
            ]
        );
    }
}
