//! The CPU time a benchmark spends, for the sys-layer benchmark (bench.rs) and the kernel-function one
//! (functions.rs) alike; it imports neither.

/// CPU time (user and system) in seconds of this process (`libc::RUSAGE_SELF`), or of its
/// children that have been waited for (`libc::RUSAGE_CHILDREN`).
pub fn cpu_seconds(who: libc::c_int) -> f64 {
    // SAFETY: getrusage writes the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(who, &mut u) };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(u.ru_utime) + secs(u.ru_stime)
}
