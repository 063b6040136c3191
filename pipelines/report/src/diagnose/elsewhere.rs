//! Work done for the job outside the trace. A call asleep until a task outside the job woke it (jbd2 committing the
//! journal, a kworker dispatching the bios blk-throttle held, an interrupt's completion) waited for work this trace
//! does not follow: the findings name the wait, not that work. The diagnosis says so once, when such sleeps are at
//! least [`ELSEWHERE_SHARE`] of the job's I/O time.

use crate::diagnose::scan::JobScan;
use crate::diagnose::thresholds::ELSEWHERE_SHARE;

/// The note, when the calls' sleeps that a task outside the job ended reach the threshold.
pub fn note(scan: Option<&JobScan>, io_ns: f64) -> Option<String> {
    let (_, outside) = scan?.sleeps_ended_outside();
    (io_ns > 0.0 && outside >= ELSEWHERE_SHARE * io_ns).then(|| {
        format!(
            "{:.0}% of the calls' time ({:.3} s) was spent asleep until a task outside the traced job woke it (a kernel \
             thread such as jbd2 or a kworker, or an interrupt's completion): what that task did for the job is not \
             in this trace, so the findings name the wait, not that work.",
            outside / io_ns * 100.0,
            outside / 1e9
        )
    })
}
