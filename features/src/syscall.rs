//! Which events are rows, and the operation name each one has.

/// Operations that become rows when neither `--rows LAYER:OPS` nor `--ops` gives them: the system calls that move
/// data or open a file, under the names of both row layers (DFTracer's POSIX layer says `pread`, `open64`).
pub const DEFAULT_OPS: [&str; 11] = [
    "read", "write", "pread64", "pwrite64", "readv", "writev", "openat", "pread", "pwrite", "open",
    "open64",
];

/// Layers (`cat`) whose calls are rows when `--rows` is not given: the system call layer of datacrumbs and
/// DataCrumbs traces (`sys`) and of DFTracer traces (`POSIX`); a trace has one or the other.
pub const DEFAULT_ROW_LAYERS: [&str; 2] = ["sys", "POSIX"];

/// Operations whose return value is the bytes they moved: a row's size when the event has no `size`.
const TRANSFER_OPS: [&str; 12] = [
    "read", "write", "pread", "pread64", "pwrite", "pwrite64", "readv", "writev", "preadv",
    "pwritev", "preadv2", "pwritev2",
];

/// Whether `op` returns the bytes it moved.
pub fn transfers(op: &str) -> bool {
    TRANSFER_OPS.contains(&op)
}

/// Kernel entry-point prefixes that name a system call by its handler rather than by the call.
const PREFIXES: [&str; 7] = [
    "__x64_sys_",
    "__ia32_sys_",
    "__arm64_sys_",
    "__se_sys_",
    "__do_sys_",
    "ksys_",
    "sys_",
];

/// The operation a system call event performs: its name without a trailing ` [module]` tag (DataCrumbs writes
/// `read [kernel]`) and without one kernel handler prefix (`__x64_sys_read`, `ksys_read`, `sys_read` → `read`).
pub fn op_name(name: &str) -> &str {
    let name = match name.rfind(" [") {
        Some(i) if name.ends_with(']') => &name[..i],
        _ => name,
    };
    PREFIXES
        .iter()
        .find_map(|p| name.strip_prefix(p))
        .filter(|rest| !rest.is_empty())
        .unwrap_or(name)
}

#[cfg(test)]
mod tests {
    use super::op_name;

    #[test]
    fn handler_names_map_to_the_call() {
        for (name, op) in [
            ("read", "read"),
            ("read [kernel]", "read"),
            ("__x64_sys_read", "read"),
            ("__arm64_sys_pwrite64", "pwrite64"),
            ("ksys_write [kernel]", "write"),
            ("sys_openat", "openat"),
            ("sys_", "sys_"),
            ("readahead", "readahead"),
        ] {
            assert_eq!(op_name(name), op, "{name}");
        }
    }
}
