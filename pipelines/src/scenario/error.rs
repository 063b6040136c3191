//! Why a scenario could not inject its bottleneck, run or put the machine back: each error names the file, the
//! command or the journal line it was at, with the system's reason as its source.

use std::ffi::NulError;
use std::io;
use std::path::PathBuf;
use std::process::ExitStatus;

use datasets::InputError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Io(#[from] crate::error::IoAt),
    #[error("writing {value} to {}", path.display())]
    Set {
        path: PathBuf,
        value: String,
        #[source]
        source: io::Error,
    },
    #[error("restoring {} to {value}", path.display())]
    Restore {
        path: PathBuf,
        value: String,
        #[source]
        source: io::Error,
    },
    #[error("{} is not on a block device ({})", dir.display(), sys.display())]
    NotBlockDevice {
        dir: PathBuf,
        sys: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{action} `{command}`")]
    Command {
        action: &'static str,
        command: String,
        #[source]
        source: io::Error,
    },
    #[error("{command} failed: {stderr}")]
    CommandFailed { command: String, stderr: String },
    /// The scenario's `setup` or `before` shell command.
    #[error("running the {what} command")]
    Shell {
        what: &'static str,
        #[source]
        source: io::Error,
    },
    #[error("the {what} command `{script}` failed ({status})")]
    ShellFailed {
        what: &'static str,
        script: String,
        status: ExitStatus,
    },
    #[error("starting the guardian {} restore", exe.display())]
    Guardian {
        exe: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("`{}` holds a NUL byte", path.display())]
    Nul {
        path: PathBuf,
        #[source]
        source: NulError,
    },
    #[error("running the workload untraced")]
    Untraced(#[source] io::Error),
    #[error("the workload `{script}`, run untraced, failed ({status})")]
    UntracedFailed { script: String, status: ExitStatus },
    #[error("a blkio injection needs a read_iops, write_iops, read_bps or write_bps")]
    NoBlkioLimit,
    #[error("the workload exited with {status:?} (trace in {})", trace.display())]
    Workload { status: Option<i32>, trace: PathBuf },
    #[error("encoding {what} as JSON")]
    Encode {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
    #[error("reading {}", path.display())]
    Decode {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// An undo action of a journal that failed: the journal's file and line.
    #[error("{}:{line}", journal.display())]
    Undo {
        journal: PathBuf,
        line: usize,
        #[source]
        source: Box<Error>,
    },
    #[error("replaying {}", journal.display())]
    Replay {
        journal: PathBuf,
        #[source]
        source: Box<Error>,
    },
    #[error(transparent)]
    Input(#[from] InputError),
    #[error("tracing")]
    Tracer(#[source] tracer::Error),
    #[error("writing the comparison's report")]
    Report(#[source] report::trace_report::Error),
}

pub use crate::error::io_at;

pub type Result<T, E = Error> = std::result::Result<T, E>;
