//! Work done for the job outside the trace. A call asleep until a task outside the job woke it (jbd2 committing the
//! journal, a kworker, another program holding a lock) waited for work this trace does not follow: the findings name
//! the wait, not that work. The diagnosis says so once, naming those tasks, when such sleeps are at least
//! [`ELSEWHERE_SHARE`] of the job's I/O time. A wakeup in an interrupt (a device's completion, a timer) names the
//! task it interrupted, so only a trace that marks those (`woken_in`, dc-trace's irq layer) is read for this.

use crate::diagnose::scan::JobScan;
use crate::diagnose::thresholds::ELSEWHERE_SHARE;

/// Tasks named in the note, the longest sleeps first.
const NAMED: usize = 3;

/// The note, when the calls' sleeps that a task outside the job ended reach the threshold.
pub fn note(scan: Option<&JobScan>, io_ns: f64) -> Option<String> {
    let scan = scan?;
    if !scan.marks_interrupts || io_ns <= 0.0 {
        return None;
    }
    let mut by_task: Vec<(String, f64)> = scan.sleeps_ended_outside().into_iter().collect();
    let outside: f64 = by_task.iter().map(|(_, ns)| ns).sum();
    if outside < ELSEWHERE_SHARE * io_ns {
        return None;
    }
    by_task.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let mut named: Vec<String> = by_task
        .iter()
        .take(NAMED)
        .map(|(task, ns)| format!("{task} {:.0}%", ns / io_ns * 100.0))
        .collect();
    if by_task.len() > NAMED {
        named.push(format!("{} more", by_task.len() - NAMED));
    }
    Some(format!(
        "{:.0}% of the calls' time ({:.3} s) was spent asleep until a task outside the traced job woke them ({}): \
         what those tasks did for the job is not in this trace, so the findings name the wait, not that work.",
        outside / io_ns * 100.0,
        outside / 1e9,
        named.join(", ")
    ))
}
