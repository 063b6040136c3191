//! Where a waking ran, when it ran in an interrupt: the `woken_in` argument of dc-trace's off-CPU events. A waking in
//! an interrupt names, as its waker, the task the interrupt happened to run over, so readers ask this module what the
//! context means instead of matching its words.

use std::fmt;

/// The kernel's names of the softirq vectors, by number (`softirq_to_name`).
pub const SOFTIRQS: [&str; 10] = [
    "hi", "timer", "net_tx", "net_rx", "block", "irq_poll", "tasklet", "sched", "hrtimer", "rcu",
];

const SOFTIRQ_PREFIX: &str = "softirq:";

/// The interrupt context of a waking.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WokenIn<'a> {
    /// A device's interrupt handler.
    Hardirq,
    /// The local timer's interrupt, where a sleep's hrtimer expires.
    Timer,
    /// A softirq, by its vector's name (or number, for a vector the kernel added later).
    Softirq(&'a str),
}

impl<'a> WokenIn<'a> {
    /// Reads the argument's value; None for a word that names no interrupt context.
    pub fn parse(s: &'a str) -> Option<Self> {
        match s {
            "hardirq" => Some(Self::Hardirq),
            "timer" => Some(Self::Timer),
            _ => s
                .strip_prefix(SOFTIRQ_PREFIX)
                .filter(|v| !v.is_empty())
                .map(Self::Softirq),
        }
    }

    /// Whether the waking was a device's completion: the block softirq, or a device's handler.
    pub fn is_device_completion(self) -> bool {
        matches!(self, Self::Hardirq | Self::Softirq("block"))
    }

    /// Whether the work belongs to the task the interrupt ran in: a network softirq runs where a task sends (over
    /// loopback, the sender's own packet wakes the receiver).
    pub fn is_the_interrupted_tasks(self) -> bool {
        matches!(self, Self::Softirq(v) if v.starts_with("net_"))
    }
}

impl fmt::Display for WokenIn<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Hardirq => f.write_str("hardirq"),
            Self::Timer => f.write_str("timer"),
            Self::Softirq(v) => write!(f, "{SOFTIRQ_PREFIX}{v}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_context_reads_back_as_written() {
        let all = [WokenIn::Hardirq, WokenIn::Timer]
            .into_iter()
            .chain(SOFTIRQS.iter().map(|v| WokenIn::Softirq(v)));
        for w in all {
            assert_eq!(WokenIn::parse(&w.to_string()), Some(w));
        }
        assert_eq!(WokenIn::parse("softirq:12"), Some(WokenIn::Softirq("12")));
        assert_eq!(WokenIn::parse("softirq:"), None);
        assert_eq!(WokenIn::parse("task"), None);
    }

    #[test]
    fn a_device_completes_in_its_handler_or_the_block_softirq_only() {
        fn which(test: impl Fn(WokenIn<'_>) -> bool) -> Vec<&'static str> {
            [
                "hardirq",
                "timer",
                "softirq:block",
                "softirq:timer",
                "softirq:net_rx",
                "softirq:net_tx",
            ]
            .into_iter()
            .filter(|s| test(WokenIn::parse(s).unwrap()))
            .collect()
        }
        assert_eq!(
            which(|w| w.is_device_completion()),
            ["hardirq", "softirq:block"]
        );
        assert_eq!(
            which(|w| w.is_the_interrupted_tasks()),
            ["softirq:net_rx", "softirq:net_tx"]
        );
    }
}
