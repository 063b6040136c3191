//! Why a real application's run could not be prepared, served or cleaned up: each error names the workload, the
//! command or the file it was at, with the system's reason as its source.

use std::ffi::NulError;
use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Io(#[from] crate::error::IoAt),
    #[error("{action} `{command}`")]
    Command {
        action: &'static str,
        command: String,
        #[source]
        source: io::Error,
    },
    #[error("workload `{workload}`")]
    Workload {
        workload: String,
        #[source]
        source: Box<Error>,
    },
    #[error("`{text}` holds a NUL byte")]
    Nul {
        text: String,
        #[source]
        source: NulError,
    },
    #[error("reading the serve spec")]
    Spec(#[source] serde_json::Error),
    #[error("encoding the serve spec")]
    EncodeSpec(#[source] serde_json::Error),
    #[error("the service did not start: `{command}` failed ({status}); its output is in {}", log.display())]
    NotStarted {
        command: String,
        status: ExitStatus,
        log: PathBuf,
    },
    /// `setup` or `stop` exited with a failure.
    #[error("workload `{workload}`: {step} `{command}` failed ({status}); its output is in {}", log.display())]
    Failed {
        workload: String,
        step: &'static str,
        command: String,
        status: ExitStatus,
        log: PathBuf,
    },
    #[error("workload `{workload}`: interrupted by signal {signal} during setup")]
    Interrupted { workload: String, signal: usize },
    #[error("workload `{workload}`: `{command}` did not end within {seconds} s ({status})")]
    Timeout {
        workload: String,
        command: String,
        seconds: u64,
        status: ExitStatus,
    },
    #[error("workload `{workload}` needs `{program}`, which is not installed{}", package.as_ref().map(|p| format!("; it comes with the Debian package `{p}`, which `scripts/setup.sh --test` installs")).unwrap_or_default())]
    NotInstalled {
        workload: String,
        program: String,
        package: Option<String>,
    },
    #[error(
        "workload `{workload}` runs as user `{user}`, which does not exist (its package creates it)"
    )]
    NoUser { workload: String, user: String },
    #[error("giving {} to uid {uid}", path.display())]
    Chown {
        path: PathBuf,
        uid: u32,
        #[source]
        source: io::Error,
    },
    #[error(
        "no cgroup v2 hierarchy is mounted: an application's processes are kept together in one"
    )]
    NoCgroup2,
    #[error(transparent)]
    Tracer(#[from] tracer::Error),
}

pub use crate::error::io_at;

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The [`Error::Command`] of `action` on the command line `argv`, for `map_err`.
pub fn command(action: &'static str, argv: &[String]) -> impl FnOnce(io::Error) -> Error {
    let command = argv.join(" ");
    move |source| Error::Command {
        action,
        command,
        source,
    }
}

/// `path` as a C string, or the error that names it.
pub fn c_path(path: &Path) -> Result<std::ffi::CString> {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(|source| Error::Nul {
        text: path.display().to_string(),
        source,
    })
}
