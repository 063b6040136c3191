//! The answer on a terminal: the verdict, then the findings in order, each in three lines (severity and sentence,
//! its numbers and gain, what to do), a minor one in one. The text always carries ANSI styles; the caller's stream
//! (`anstream::AutoStream`) strips them on a pipe or when asked to.

use std::fmt::Write as _;

use anstyle::{AnsiColor, Style};

use crate::answer::model::{Answer, Item, MINOR_SHARE, Severity};
use crate::answer::units;

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
            "{DIM}… {left} more finding{}, {minor} of them minor (below {} of the job's time); {}{DIM:#}",
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::answer::model::Number;

    fn item(severity: Severity, n: usize) -> Item {
        Item {
            severity,
            sentence: format!("Finding {n}."),
            recommendation: "Do less.".into(),
            gain: None,
            gain_how: String::new(),
            numbers: vec![Number {
                value: "1 ms".into(),
                name: "of I/O time".into(),
            }],
            key: format!("k{n}"),
            evidence: Vec::new(),
            files: None,
        }
    }

    fn answer(high: usize, low: usize) -> Answer {
        Answer {
            verdict: "V.".into(),
            comparison: None,
            items: (0..high)
                .map(|n| item(Severity::High, n))
                .chain((high..high + low).map(|n| item(Severity::Low, n)))
                .collect(),
            note: Some("N.".into()),
        }
    }

    fn plain(a: &Answer, max_lines: Option<usize>) -> String {
        let o = Options {
            max_lines,
            more_hint: "HINT".into(),
        };
        anstream::adapter::strip_str(&render(a, &o)).to_string()
    }

    #[test]
    fn the_findings_that_fit_are_listed_and_the_rest_counted() {
        // 2 lines before the findings, 3 per full finding, 1 per minor one, 1 for the count of what is left.
        let a = answer(10, 5);
        let text = plain(&a, Some(24));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2 + 7 * 3 + 1, "{text}");
        assert_eq!(lines[0], "Verdict: V.");
        assert_eq!(lines[2], "HIGH    1. Finding 0.");
        assert_eq!(lines[3], "           1 ms of I/O time");
        assert_eq!(lines[4], "           What to do: Do less.");
        assert_eq!(
            lines[23],
            "… 8 more findings, 5 of them minor (below 5% of the job's time); HINT"
        );
        // Without a limit every finding is listed, a minor one on one line, and the note closes.
        let all = plain(&a, None);
        assert_eq!(all.lines().count(), 2 + 10 * 3 + 5 + 1, "{all}");
        assert!(
            all.contains("LOW    15. Finding 14. (1 ms of I/O time)\nN.\n"),
            "{all}"
        );
        // A last finding needs no line for the count of what is left.
        let one = answer(1, 0);
        assert_eq!(plain(&one, Some(5)).lines().count(), 5);
        assert_eq!(plain(&one, Some(4)).lines().count(), 3);
    }

    #[test]
    fn styles_are_only_escape_codes_around_the_text() {
        let a = answer(1, 1);
        let styled = render(&a, &Options::default());
        assert!(styled.contains("\x1b["));
        assert_eq!(
            anstream::adapter::strip_str(&styled).to_string(),
            plain(&a, None)
        );
    }
}
