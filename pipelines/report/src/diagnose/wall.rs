//! A finding's gain in the job's wall-clock time. Its cost is thread time: four processes that each wait a second on
//! one lock cost four seconds, yet removing the lock saves the job at most the second they waited side by side. Each
//! instant of the job is shared among the threads working then, as the run-against-run split shares it
//! ([`crate::diagnose::job::WallSplit`]): a call gets the instant over the number of threads in a call, on a CPU or
//! waiting for one or for I/O, while threads asleep outside the job's work take no share. A finding's gain is scaled
//! by the wall-clock share of the calls it covers over their own time.

use features::FeatureMatrix;

use crate::diagnose::finding::{Finding, Scope};
use crate::diagnose::kinds::KindTable;
use crate::diagnose::scan::{self, Activity, JobScan};

/// Per row of the matrix: the time it was a thread's innermost call, and that time's share of the wall clock.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RowTime {
    pub own_ns: Vec<f64>,
    pub wall_ns: Vec<f64>,
}

impl RowTime {
    pub fn of(scan: &JobScan, n_rows: usize) -> RowTime {
        let mut t = RowTime {
            own_ns: vec![0.0; n_rows],
            wall_ns: vec![0.0; n_rows],
        };
        scan::sweep(&scan.activities(), |dt, open| {
            let working = open.iter().filter(|a| a.works()).count();
            for a in open {
                if let Activity::Call(r) = *a
                    && r < n_rows
                {
                    t.own_ns[r] += dt;
                    t.wall_ns[r] += dt / working as f64;
                }
            }
        });
        t
    }

    /// The wall-clock share of the time of `rows`; none when they have no time.
    pub fn factor(&self, rows: impl IntoIterator<Item = usize>) -> Option<f64> {
        let (mut own, mut wall) = (0.0, 0.0);
        for r in rows {
            own += self.own_ns[r];
            wall += self.wall_ns[r];
        }
        (own > 0.0).then(|| (wall / own).min(1.0))
    }
}

/// The rows of `m` among the calls `scope` names.
fn rows(m: &FeatureMatrix, table: &KindTable, scope: &Scope) -> Vec<usize> {
    let all = 0..m.n_rows();
    match scope {
        Scope::Job => all.collect(),
        Scope::Calls(k) => table.get(k).map_or_else(Vec::new, |s| s.rows.clone()),
        Scope::File { path } => all
            .filter(|&r| m.file[r].as_deref() == Some(path.as_str()))
            .collect(),
        Scope::Process { pid } => all.filter(|&r| m.pid[r] == *pid).collect(),
        Scope::Thread { pid, tid } => all
            .filter(|&r| m.pid[r] == *pid && m.tid[r] == *tid)
            .collect(),
    }
}

/// Scales each finding's gain to the job's wall-clock time, and says so in its method, when the calls it covers
/// shared the clock with other working threads.
pub fn apply(findings: &mut [Finding], m: &FeatureMatrix, table: &KindTable, scan: &JobScan) {
    let t = RowTime::of(scan, m.n_rows());
    for f in findings.iter_mut() {
        let Some(x) = t.factor(rows(m, table, &f.scope)) else {
            continue;
        };
        if x >= 1.0 - 1e-9 || f.gain_ns == 0 {
            continue;
        }
        let thread_ns = f.gain_ns;
        f.gain_ns = (thread_ns as f64 * x).round() as u64;
        f.gain_method.how = format!(
            "{} That is {:.3} ms of the threads' time; the calls shared the job's clock with other working threads, \
             so {:.0}% of their time was the job's wall-clock time.",
            f.gain_method.how,
            thread_ns as f64 / 1e6,
            x * 100.0
        );
    }
}
