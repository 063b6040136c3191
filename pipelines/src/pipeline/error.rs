//! Why a step of `dc-pipeline run` or `report` failed: each error names the file, the run or the field it was at,
//! with the cause (the system's, a library's) as its source.

use std::path::PathBuf;

use datasets::InputError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Io(#[from] crate::error::IoAt),
    #[error("parsing {}", path.display())]
    Decode {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("{}: not a diagnosis", path.display())]
    NotDiagnosis {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("encoding {what} as JSON")]
    Encode {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
    #[error("reading {}", path.display())]
    Matrix {
        path: PathBuf,
        #[source]
        source: features::Error,
    },
    /// A resumed report directory was started with another pipeline file.
    #[error("{} differs from the pipeline {} was started with ({})", pipeline.display(), out.display(), saved.display())]
    Changed {
        pipeline: PathBuf,
        out: PathBuf,
        saved: PathBuf,
    },
    #[error("run `{id}`")]
    Run {
        id: String,
        #[source]
        source: Box<Error>,
    },
    #[error("`{command}` exited with status {status}; its trace is in {}", dir.display())]
    Exited {
        command: String,
        status: String,
        dir: PathBuf,
    },
    #[error("the traces hold {events} events but no system call row{}; runs/*/summary.json says which probes attached", file_regex.as_ref().map(|r| format!(" on a file matching `{r}`")).unwrap_or_default())]
    NoRows {
        events: u64,
        file_regex: Option<String>,
    },
    #[error(transparent)]
    Input(#[from] InputError),
    #[error(transparent)]
    Output(#[from] datasets::Error),
    #[error(transparent)]
    Features(#[from] features::Error),
    #[error(transparent)]
    Model(#[from] models::ModelError),
    #[error(transparent)]
    Bench(#[from] crate::bench::iobench::Error),
    #[error(transparent)]
    App(#[from] crate::apps::error::Error),
    #[error("tracing")]
    Tracer(#[source] tracer::Error),
    /// Comparing two runs (dc-report's library).
    #[error(transparent)]
    Compare(#[from] report::diagnose::compare::CompareError),
    /// Drawing a chart, on a page or into its files.
    #[error(transparent)]
    Chart(#[from] report::charts::ChartError),
    /// Writing a page, its CSV or a diagnosis.
    #[error(transparent)]
    ReportWrite(#[from] report::error::WriteError),
}

pub use crate::error::io_at;

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// `value` as pretty JSON and a newline, as every data file of a report directory is written.
pub fn pretty<T: serde::Serialize + ?Sized>(what: &'static str, value: &T) -> Result<String> {
    serde_json::to_string_pretty(value)
        .map(|text| text + "\n")
        .map_err(|source| Error::Encode { what, source })
}
