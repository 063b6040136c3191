//! The failure every job of the crate shares: an I/O operation on a path, said as what was being done to which
//! file. Each job's error enum holds it as its `Io` variant.

use std::io;
use std::path::{Path, PathBuf};

/// `action` on `path` failed.
#[derive(Debug, thiserror::Error)]
#[error("{action} {}", path.display())]
pub struct IoAt {
    pub action: &'static str,
    pub path: PathBuf,
    #[source]
    pub source: io::Error,
}

/// The [`IoAt`] of `action` on `path`, for `map_err`; `?` turns it into the job's error.
pub fn io_at(action: &'static str, path: &Path) -> impl FnOnce(io::Error) -> IoAt {
    let path = path.to_path_buf();
    move |source| IoAt {
        action,
        path,
        source,
    }
}
