//! What to fix: findings per layer and application pattern, and run-against-run diagnosis.
//!
//! [`kinds`] groups a feature matrix's calls by kind (operation × buffered or direct × size class) and sums their
//! time per layer; [`layers`] names the reason of each layer's time; [`patterns`] finds the application's access
//! patterns in the calls and in one pass over the trace ([`scan`]), or in Darshan's counters ([`darshan`]);
//! each second is claimed once ([`ledger`]): a pattern first, then the layers of what it left, and each finding
//! says what removing its cause would gain; [`between`] names the job's wait for a CPU between its calls; [`elsewhere`] notes the calls' sleeps that tasks outside the job ended;
//! [`compare`] splits a candidate's change against a baseline into layers, with a [`bootstrap`] interval, per kind
//! of call and over the whole job ([`job`]); [`limits`] names the machine's limits the job ran into; [`json`]
//! is the file other tools read (`crate::answer` says it in words); [`wall`] turns each gain into the job's
//! wall-clock time. Every threshold is in [`thresholds`]. A finding itself, and the order findings are listed in,
//! is [`finding`]'s.

pub mod between;
pub mod bootstrap;
pub mod compare;
pub mod darshan;
pub mod elsewhere;
pub mod finding;
pub mod inputs;
pub mod job;
pub mod json;
pub mod kinds;
pub mod layers;
pub mod ledger;
pub mod limits;
pub mod patterns;
pub mod scan;
pub mod thresholds;
pub mod wall;

use features::FeatureMatrix;

use crate::diagnose::job::WallSplit;
use crate::diagnose::kinds::KindTable;
use crate::diagnose::ledger::Ledger;
use crate::diagnose::scan::JobScan;

pub use finding::{FileCalls, Files, Finding, Reason, SHARE_OF, Scope, evidence, sort};

/// Every finding the calls and the trace support, what would gain most first, the rest most costly first ([`sort`]). The application patterns claim their time
/// first; each share is of the job's time ([`SHARE_OF`]); the layer findings name what is left of each kind of call. Darshan's counters and DXT segments describe
/// the same calls: a pattern the counters state is not stated again from the segments, the counters' findings
/// claim only what the segments' findings left of each operation's time, and every share is of the larger of the
/// two I/O times.
pub fn findings(matrix: &FeatureMatrix, scan: Option<&JobScan>) -> Vec<Finding> {
    let table = KindTable::of(matrix);
    let records = scan.map_or(&[][..], |s| &s.darshan[..]);
    let stated = darshan::stated(records);
    let io_ns = table.io_ns().max(darshan::io_ns(records));
    let mut ledger = Ledger::new(matrix);
    let restated = |r: Reason, scope: &Scope| {
        stated
            .iter()
            .any(|c| c.reason == r && same_direction(&c.scope, scope))
    };
    let refault_waits = scan.map_or_else(
        || vec![0.0; matrix.n_rows()],
        |s| s.refault_waits(matrix, table.kinds.iter().map(|(_, k)| &k.rows[..])),
    );
    let mut out = patterns::findings(
        matrix,
        &table,
        scan,
        &refault_waits,
        io_ns,
        &mut ledger,
        &restated,
    );
    let left = KindTable::weighted(matrix, &ledger.weights());
    out.extend(layers::findings(matrix, &left, io_ns, scan));
    if !records.is_empty() {
        out.extend(darshan::findings(records, &ledger.taken(matrix)));
    }
    let mut job_ns = io_ns;
    if let Some(s) = scan {
        limits::apply(
            &mut out,
            &left,
            io_ns,
            s,
            limits::writes_back(matrix),
            &refault_waits,
            &s.waits_for_others_io(matrix),
        );
        wall::apply(&mut out, matrix, &table, s);
        let split = WallSplit::of(&table, s);
        if let Some(w) = between::cpu_wait(&split, s) {
            job_ns += w.cost_ns;
            out.push(between::finding(w));
            between::absorb(&mut out);
            limits::cite_quota(&mut out, s);
        }
        job_ns += limits::claim_waits_between_calls(&mut out, &split, s);
        job_ns += limits::readahead_between_calls(&mut out, &split, s);
    }
    for f in &mut out {
        f.share = if job_ns > 0.0 {
            f.cost_ns as f64 / job_ns
        } else {
            0.0
        };
    }
    sort(&mut out);
    out
}

/// Whether two findings' scopes are the same calls: a direction, a file, or the job.
fn same_direction(a: &Scope, b: &Scope) -> bool {
    match (a, b) {
        (Scope::Calls(x), Scope::Calls(y)) => x.direction() == y.direction(),
        (Scope::File { path: p }, Scope::File { path: q }) => p == q,
        (Scope::Job, Scope::Job) => true,
        _ => false,
    }
}
