//! What a collection was: its mode, what it traced, and the mechanisms its probes attached by. Each serializes as
//! the word the summary JSON, the trace's metadata and the report show.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// What a collection writes: an event per call (`trace`) or counters per interval (`profile`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum ModeKind {
    Trace,
    Profile,
}

/// What a collection followed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TraceScope {
    /// The command dc-trace ran, and its descendants.
    Command,
    /// The processes `--pid` named, and their descendants.
    Pids,
    /// A cgroup and its descendant cgroups.
    Cgroup,
    /// Every process.
    All,
}

impl ModeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ModeKind::Trace => "trace",
            ModeKind::Profile => "profile",
        }
    }
}

impl TraceScope {
    pub fn as_str(self) -> &'static str {
        match self {
            TraceScope::Command => "command",
            TraceScope::Pids => "pids",
            TraceScope::Cgroup => "cgroup",
            TraceScope::All => "all",
        }
    }
}

impl fmt::Display for ModeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for TraceScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a probe attaches, or, for a refusal, what it needed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mechanism {
    Tracepoint,
    /// A raw tracepoint: the tracepoint's arguments, not a record the kernel formats first.
    RawTracepoint,
    /// A BTF-typed raw tracepoint.
    TpBtf,
    Uprobe,
    /// One link for many uprobes (Linux 6.6+).
    UprobeMulti,
    PerfEvent,
    Fentry,
    Kprobe,
    /// One link for many kprobes (Linux 5.18+).
    KprobeMulti,
    /// Not a probe: kernel symbols, which stacks and kernel functions need.
    Kallsyms,
    /// Not a probe: the kernel probe set a function was asked for by.
    Probes,
    /// Nothing attached.
    None,
}

impl Mechanism {
    pub const ALL: [Mechanism; 12] = [
        Mechanism::Tracepoint,
        Mechanism::RawTracepoint,
        Mechanism::TpBtf,
        Mechanism::Uprobe,
        Mechanism::UprobeMulti,
        Mechanism::PerfEvent,
        Mechanism::Fentry,
        Mechanism::Kprobe,
        Mechanism::KprobeMulti,
        Mechanism::Kallsyms,
        Mechanism::Probes,
        Mechanism::None,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Mechanism::Tracepoint => "tracepoint",
            Mechanism::RawTracepoint => "raw_tracepoint",
            Mechanism::TpBtf => "tp_btf",
            Mechanism::Uprobe => "uprobe",
            Mechanism::UprobeMulti => "uprobe_multi",
            Mechanism::PerfEvent => "perf_event",
            Mechanism::Fentry => "fentry",
            Mechanism::Kprobe => "kprobe",
            Mechanism::KprobeMulti => "kprobe_multi",
            Mechanism::Kallsyms => "kallsyms",
            Mechanism::Probes => "probes",
            Mechanism::None => "none",
        }
    }
}

impl fmt::Display for Mechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The mechanisms a layer's probes attached by, in the order it tried them; written `a+b` (`kprobe_multi+fentry`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Mechanisms(pub Vec<Mechanism>);

impl From<Mechanism> for Mechanisms {
    fn from(m: Mechanism) -> Mechanisms {
        Mechanisms(vec![m])
    }
}

impl fmt::Display for Mechanisms {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, m) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("+")?;
            }
            f.write_str(m.as_str())?;
        }
        Ok(())
    }
}

impl FromStr for Mechanisms {
    type Err = String;

    fn from_str(s: &str) -> Result<Mechanisms, String> {
        let named = |m: &str| {
            Mechanism::ALL
                .into_iter()
                .find(|k| k.as_str() == m)
                .ok_or_else(|| format!("unknown mechanism `{m}`"))
        };
        match s {
            "" => Ok(Mechanisms::default()),
            _ => s
                .split('+')
                .map(named)
                .collect::<Result<_, _>>()
                .map(Mechanisms),
        }
    }
}

impl Serialize for Mechanisms {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Mechanisms {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Mechanisms, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_serializes_as_its_word() {
        for m in Mechanism::ALL {
            let json = serde_json::to_string(&m).unwrap();
            assert_eq!(json, format!("\"{}\"", m.as_str()));
            assert_eq!(serde_json::from_str::<Mechanism>(&json).unwrap(), m);
        }
        let both = Mechanisms(vec![Mechanism::KprobeMulti, Mechanism::Fentry]);
        assert_eq!(
            serde_json::to_string(&both).unwrap(),
            "\"kprobe_multi+fentry\""
        );
        assert_eq!("kprobe_multi+fentry".parse::<Mechanisms>().unwrap(), both);
        assert!("kprobe+fexit".parse::<Mechanisms>().is_err());
        assert_eq!(
            serde_json::to_string(&TraceScope::Pids).unwrap(),
            "\"pids\""
        );
        assert_eq!(
            serde_json::to_string(&ModeKind::Profile).unwrap(),
            "\"profile\""
        );
        for s in [
            TraceScope::Command,
            TraceScope::Pids,
            TraceScope::Cgroup,
            TraceScope::All,
        ] {
            assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{s}\""));
        }
    }
}
