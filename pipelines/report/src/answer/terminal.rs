//! The answer on a terminal: the verdict, then the findings in order, each in three lines (severity and sentence,
//! its numbers and gain, what to do), a minor one in one. The text always carries ANSI styles; the caller's stream
//! (`anstream::AutoStream`) strips them on a pipe or when asked to.

use std::fmt::Write as _;

use anstyle::{AnsiColor, Style};

use crate::answer::{Answer, Item, MINOR_SHARE, Severity, units};

/// How much to print.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Options {
    /// The most lines to write; none: every finding.
    pub max_lines: Option<usize>,
    /// Said after the count of the findings left out, to tell how to see them.
    pub more_hint: String,
}

const BOLD: Style = Style::new().bold();
const DIM: Style = Style::new().dimmed();
const ACTION: Style = AnsiColor::Cyan.on_default().bold();

fn severity_style(s: Severity) -> Style {
    match s {
        Severity::High => AnsiColor::Red.on_default().bold(),
        Severity::Medium => AnsiColor::Yellow.on_default().bold(),
        Severity::Low => DIM,
    }
}

/// The item's lines, without their final newline.
fn item_lines(n: usize, it: &Item) -> Vec<String> {
    let sev = severity_style(it.severity);
    let head = format!(
        "{sev}{:<6}{sev:#} {n:>2}. {}",
        it.severity.label(),
        it.sentence
    );
    if it.severity == Severity::Low {
        return vec![format!("{head} {DIM}({}){DIM:#}", it.numbers_line())];
    }
    vec![
        head,
        format!("           {}", it.numbers_line()),
        format!(
            "           {ACTION}What to do:{ACTION:#} {}",
            it.recommendation
        ),
    ]
}

/// The answer as lines for a terminal, at most `o.max_lines` of them.
pub fn render(a: &Answer, o: &Options) -> String {
    let mut lines = vec![format!("{BOLD}Verdict:{BOLD:#} {}", a.verdict)];
    lines.extend(a.comparison.clone());
    if !a.items.is_empty() {
        lines.push(String::new());
    }
    let max = o.max_lines.unwrap_or(usize::MAX);
    let mut shown = 0;
    for (i, it) in a.items.iter().enumerate() {
        let these = item_lines(i + 1, it);
        // A line is kept for saying what was left out, unless this is the last finding.
        let reserve = usize::from(i + 1 < a.items.len());
        if lines.len() + these.len() + reserve > max {
            break;
        }
        lines.extend(these);
        shown += 1;
    }
    let left = a.items.len() - shown;
    if left > 0 {
        let minor = a.items[shown..]
            .iter()
            .filter(|i| i.severity == Severity::Low)
            .count();
        lines.push(format!(
            "{DIM}… {left} more finding{}, {minor} of them minor (below {} of the I/O time); {}{DIM:#}",
            if left == 1 { "" } else { "s" },
            units::percent(MINOR_SHARE),
            o.more_hint
        ));
    } else if let Some(n) = a.note.as_ref().filter(|_| lines.len() < max) {
        lines.push(format!("{DIM}{n}{DIM:#}"));
    }
    let mut out = String::new();
    for l in lines {
        let _ = writeln!(out, "{l}");
    }
    out
}
