//! What the answer holds: the verdict and each finding said, with its severity and numbers. A leaf that the builder
//! ([`super`]), the words ([`super::words`]) and the renderers share.

/// A finding's weight by its share of the job's time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// At least [`HIGH_SHARE`].
    High,
    /// At least [`MINOR_SHARE`].
    Medium,
    /// Below [`MINOR_SHARE`]: listed as minor.
    Low,
}

/// The share of the job's time from which a finding is high.
pub const HIGH_SHARE: f64 = 0.25;
/// The share of the job's time below which a finding is minor.
pub const MINOR_SHARE: f64 = 0.05;

impl Severity {
    pub fn of(share: f64) -> Severity {
        if share >= HIGH_SHARE {
            Severity::High
        } else if share >= MINOR_SHARE {
            Severity::Medium
        } else {
            Severity::Low
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Severity::High => "HIGH",
            Severity::Medium => "MEDIUM",
            Severity::Low => "LOW",
        }
    }
}

/// A number named in words: `17.2 µs` `per call waiting for a queue slot`.
#[derive(Clone, Debug, PartialEq)]
pub struct Number {
    pub value: String,
    pub name: String,
}

impl Number {
    pub fn text(&self) -> String {
        format!("{} {}", self.value, self.name)
    }
}

/// One finding, said.
#[derive(Clone, Debug, PartialEq)]
pub struct Item {
    pub severity: Severity,
    /// What the finding says, in one sentence with units.
    pub sentence: String,
    pub recommendation: String,
    /// What removing its cause would save, in words; none when the diagnosis names no gain.
    pub gain: Option<String>,
    /// How the gain was computed.
    pub gain_how: String,
    /// Two to four numbers, the first its time and share of the I/O time.
    pub numbers: Vec<Number>,
    /// The finding's identity in the JSON: `layer / reason`, and its scope.
    pub key: String,
    /// Every number of the JSON's evidence, by its key, as the JSON has it.
    pub evidence: Vec<(String, f64)>,
    /// The files its calls touch, full paths, in one sentence; none when the JSON names none.
    pub files: Option<String>,
}

impl Item {
    /// The numbers and the gain on one line.
    pub fn numbers_line(&self) -> String {
        let mut parts: Vec<String> = self.numbers.iter().map(Number::text).collect();
        if let Some(g) = &self.gain {
            parts.push(g.clone());
        }
        parts.join(" · ")
    }
}

/// The report's answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Answer {
    /// One line: the job's time, its share in I/O and the main cause.
    pub verdict: String,
    /// Against a baseline: what changed, in one line.
    pub comparison: Option<String>,
    /// What would gain most first, the rest most costly first, as the diagnosis sorts them.
    pub items: Vec<Item>,
    /// Said once below the findings: the limits the inputs hold no record of, and the calls' sleeps that tasks
    /// outside the job ended.
    pub note: Option<String>,
}

impl Answer {
    /// How many findings at the end of the list are minor (listed together under one disclosure).
    pub fn minor(&self) -> usize {
        self.items
            .iter()
            .rev()
            .take_while(|i| i.severity == Severity::Low)
            .count()
    }
}
