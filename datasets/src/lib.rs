//! The datacrumbs trace format: event model, reader, writer and foreign dialects.
//!
//! Data flows one way: [`read`] turns `.pfw`/`.pfw.gz` files of any known dialect into [`Event`]s,
//! [`strings`] resolves their hashes to names, and [`write`] produces the format datacrumbs
//! itself writes. Times inside [`Event`] are always nanoseconds; [`TimeUnit`] says what a file used.

#[cfg(feature = "cli")]
pub mod cli;
pub mod error;
pub mod event;
pub mod formats;
pub mod gz;
pub mod hash;
pub mod input;
pub mod limits;
pub mod output;
#[cfg(feature = "parquet")]
pub mod parquet;
pub mod parse;
pub mod read;
pub mod salvage;
pub mod strings;
pub mod summary;
#[cfg(feature = "synth")]
pub mod synth;
#[cfg(feature = "parquet")]
pub mod table;
pub mod vocab;
pub mod write;

pub use error::{Error, Remedy};
pub use event::{ArgValue, Args, Event, Hash, Phase};
pub use input::InputError;

/// The unit a file writes `ts` and `dur` in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum TimeUnit {
    /// Nanoseconds (later DataCrumbs versions).
    Ns,
    /// Microseconds, possibly with a fraction (`12.345`): Chrome trace format, DFTracer,
    /// DataCrumbs (Python era), and datacrumbs itself.
    Us,
}

impl TimeUnit {
    pub fn as_str(self) -> &'static str {
        match self {
            TimeUnit::Ns => "ns",
            TimeUnit::Us => "us",
        }
    }

    pub fn parse(s: &str) -> Option<TimeUnit> {
        match s {
            "ns" => Some(TimeUnit::Ns),
            "us" => Some(TimeUnit::Us),
            _ => None,
        }
    }
}

impl std::fmt::Display for TimeUnit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
