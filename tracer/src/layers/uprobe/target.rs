//! What the uprobe layers share with the rest of the tracer: the targets `--uprobe` names, and the links they hold
//! for the run. The layers' contract ([`crate::layers::attach`]) names them; this module imports nothing of the
//! layers.

use std::os::fd::OwnedFd;
use std::path::PathBuf;

use regex::Regex;

/// A user binary or library and a regex over its function names (`PATH:REGEX`).
#[derive(Clone, Debug)]
pub struct UprobeTarget {
    pub binary: PathBuf,
    pub pattern: Regex,
}

impl UprobeTarget {
    pub fn parse(s: &str) -> Result<UprobeTarget, String> {
        let (path, re) = s
            .split_once(':')
            .ok_or_else(|| format!("`{s}`: expected PATH:REGEX"))?;
        if path.is_empty() {
            return Err(format!("`{s}`: the PATH before `:` is empty"));
        }
        let pattern = Regex::new(re).map_err(|e| format!("`{s}`: REGEX `{re}` is invalid: {e}"))?;
        Ok(UprobeTarget {
            binary: PathBuf::from(path),
            pattern,
        })
    }
}

/// What the uprobe layers hold in the kernel apart from aya's links: the uprobe_multi programs
/// and links. Dropping it detaches them.
#[derive(Default)]
pub struct UprobeLinks {
    pub programs: Vec<(&'static str, OwnedFd)>,
    pub(super) links: Vec<OwnedFd>,
}

impl UprobeLinks {
    /// Its links and programs: closing each detaches it, which waits for grace periods, so that
    /// [`crate::bpf::teardown`] closes them in parallel.
    pub fn into_fds(self) -> Vec<OwnedFd> {
        let mut fds = self.links;
        fds.extend(self.programs.into_iter().map(|(_, fd)| fd));
        fds
    }
}
