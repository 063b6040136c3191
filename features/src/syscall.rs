//! The operation name a call event has, whatever tool wrote it.

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
