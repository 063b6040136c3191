//! The failure every page and JSON file of the report shares: writing one of its outputs. The jobs' own errors
//! (`diagnose::inputs::LoadError`, `diagnose::compare::CompareError`, `charts::draw::ChartError`,
//! `trace_report::Error`) are beside their jobs.

use datasets::Remedy;

/// Writing an output through [`datasets::output::Output`]: every variant names the output's path.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// Creating it (a path that may not be written, a file already there) or renaming it into place.
    #[error(transparent)]
    Output(#[from] datasets::Error),
    /// Writing into it: the error [`datasets::output::Output`] gives names the output's path.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error("encoding {what} as JSON")]
    Json {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
}

impl WriteError {
    /// What the caller could ask for to get past this error (to replace a file already there).
    pub fn remedy(&self) -> Option<Remedy> {
        match self {
            WriteError::Output(e) => e.remedy(),
            _ => None,
        }
    }
}
