//! Why `dc-pipeline overhead` could not measure: each error names the file, the run and the setup it was at, with
//! the cause as its source.

use std::io;
use std::path::PathBuf;

use datasets::InputError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Io(#[from] crate::error::IoAt),
    #[error("running {program}")]
    Command {
        program: String,
        #[source]
        source: io::Error,
    },
    #[error("run `{id}`, {setup}")]
    Attempt {
        id: String,
        setup: String,
        #[source]
        source: Box<Error>,
    },
    #[error("run `{id}`: the benchmark has no figures")]
    Benchmark { id: String },
    #[error("the command exited with status {status:?}; its output is in {}", dir.display())]
    Exited { status: Option<i32>, dir: PathBuf },
    #[error("/proc/loadavg: `{text}` is not a load average")]
    LoadAverage { text: String },
    #[error("{}: no workload has `metrics` to compare", pipeline.display())]
    NoMetrics { pipeline: PathBuf },
    #[error("encoding the overhead report as JSON")]
    Encode(#[source] serde_json::Error),
    #[error(transparent)]
    Input(#[from] InputError),
    #[error(transparent)]
    Output(#[from] datasets::Error),
    #[error(transparent)]
    App(#[from] crate::apps::error::Error),
    #[error("tracing")]
    Tracer(#[source] tracer::Error),
}

pub use crate::error::io_at;

pub type Result<T, E = Error> = std::result::Result<T, E>;
