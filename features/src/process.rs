//! Which process an event is of. A pid of a DataCrumbs or DFTracer trace (or of bpftrace, KernMLOps) is one process
//! of the host, whose events may span several inputs. A Darshan log numbers its processes by MPI rank from 0, and
//! times them from its own job's start: rank 1 of one log is not rank 1 of another, so its pids are its own.

use std::path::PathBuf;

use datasets::formats::detect;

/// A process: its pid, and the input it belongs to when that input numbers its processes on its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Process {
    pub input: Option<u32>,
    pub pid: u64,
}

/// For each input (by index), whether it numbers its processes on its own.
#[derive(Clone, Debug, Default)]
pub struct Processes {
    own: Vec<bool>,
}

impl Processes {
    /// The inputs `paths`, each by its format.
    pub fn of(paths: &[PathBuf]) -> Self {
        Processes {
            own: paths
                .iter()
                .map(|p| detect(p).is_some_and(|f| f.numbers_processes_per_file()))
                .collect(),
        }
    }

    /// Whether a pid of input `input` is that input's own process.
    pub fn own(&self, input: u32) -> bool {
        self.own.get(input as usize).copied().unwrap_or(false)
    }

    pub fn process(&self, input: u32, pid: u64) -> Process {
        Process {
            input: self.own(input).then_some(input),
            pid,
        }
    }
}
