//! CPU seconds from /proc for the benchmarks: on a shared machine they show the work done,
//! whatever the wall time.

#![allow(dead_code)]

use std::process::Command;

/// Clock ticks per second, the unit of /proc's CPU times.
pub fn clock_tick() -> f64 {
    let out = Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .expect("getconf runs");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("CLK_TCK")
}

/// CPU seconds (user + system) used so far by this process and by its waited-for children.
pub fn process(tick: f64) -> (f64, f64) {
    let f = stat("/proc/self/stat");
    ((f[0] + f[1]) / tick, (f[2] + f[3]) / tick)
}

/// CPU seconds used so far by the calling thread: what a tracer's writer thread would pay.
pub fn thread(tick: f64) -> f64 {
    let f = stat("/proc/thread-self/stat");
    (f[0] + f[1]) / tick
}

/// utime, stime, cutime and cstime in clock ticks.
fn stat(path: &str) -> Vec<f64> {
    let st = std::fs::read_to_string(path).expect(path);
    st[st.rfind(')').expect("comm") + 2..]
        .split(' ')
        .skip(11)
        .take(4)
        .map(|v| v.parse().expect("a number"))
        .collect()
}
