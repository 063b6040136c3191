//! The answer in Markdown: the verdict, then the findings in order, as `report.md` opens.

use std::fmt::Write as _;

use crate::answer::model::{Answer, MINOR_SHARE, Severity};
use crate::answer::units;

/// The verdict and the findings as two `##` sections.
pub fn render(a: &Answer) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "## Verdict\n\n{}\n", a.verdict);
    if let Some(c) = &a.comparison {
        let _ = writeln!(s, "{c}\n");
    }
    let _ = writeln!(s, "## Findings\n");
    if a.items.is_empty() {
        let _ = writeln!(s, "No finding: no rule's threshold is reached.\n");
    }
    let mut minor_said = false;
    for (i, it) in a.items.iter().enumerate() {
        let n = i + 1;
        if it.severity == Severity::Low {
            if !minor_said {
                let _ = writeln!(
                    s,
                    "\nMinor findings, each below {} of the job's time:\n",
                    units::percent(MINOR_SHARE)
                );
                minor_said = true;
            }
            let _ = writeln!(
                s,
                "{n}. **{}** {} ({})",
                it.severity.label(),
                it.sentence,
                it.numbers_line()
            );
            continue;
        }
        let _ = writeln!(
            s,
            "{n}. **{}** {}  \n   {}  \n   *What to do:* {}",
            it.severity.label(),
            it.sentence,
            it.numbers_line(),
            it.recommendation
        );
    }
    if let Some(note) = &a.note {
        let _ = writeln!(s, "\n{note}");
    }
    let _ = writeln!(
        s,
        "\nThe evidence behind each finding is in the JSON and on the HTML page.\n"
    );
    s
}
