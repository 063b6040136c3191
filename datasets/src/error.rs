//! One error type for reading, writing and converting traces. Every variant about user input
//! names the file, and where it can, the line and the field.
//!
//! A variant's message already includes its cause, so no variant also returns it as its
//! `source()`: anyhow's `{:#}` would print the cause twice.

use std::io;
use std::path::{Path, PathBuf};

use crate::InputError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{}: {cause}", path.display())]
    Io {
        path: PathBuf,
        cause: std::io::Error,
    },
    /// A line that is not a valid event: always with its line and field, which is `-` when the
    /// line is not JSON at all.
    #[error(transparent)]
    Parse(InputError),
    /// Compressed data that ends early or does not inflate. Every complete line before it was read.
    #[error(
        "{}: damaged gzip data at compressed byte {offset}, after line {line}: {msg}",
        path.display()
    )]
    Damaged {
        path: PathBuf,
        offset: u64,
        line: u64,
        msg: String,
    },
    /// Binary input (a Darshan log) that is not valid at a byte offset.
    #[error("{}: byte {offset}: field `{field}`: {msg}", path.display())]
    Binary {
        path: PathBuf,
        offset: u64,
        field: String,
        msg: String,
    },
    /// A file that holds no trace at all (an empty gzip).
    #[error("{}: {msg}", path.display())]
    NotATrace { path: PathBuf, msg: String },
    #[error("{pattern}: {msg}")]
    Glob { pattern: String, msg: String },
    #[error("{}: {msg}", path.display())]
    Convert { path: PathBuf, msg: String },
    /// An output path that may not be written (see [`crate::output`]).
    #[error("{}: {msg}", path.display())]
    Output { path: PathBuf, msg: String },
    /// An output file that is there already, and the caller did not ask to replace it.
    #[error("{}: already exists", path.display())]
    Exists { path: PathBuf },
}

/// What a caller could ask for to get past an error: a binary names its own flag for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Remedy {
    /// Read every intact part of damaged compressed data ([`crate::read::ReadOptions::salvage`]).
    Salvage,
    /// Replace the output file that exists ([`crate::output::Existing::Replace`]).
    Replace,
}

impl Error {
    pub fn remedy(&self) -> Option<Remedy> {
        match self {
            Error::Damaged { .. } => Some(Remedy::Salvage),
            Error::Exists { .. } => Some(Remedy::Replace),
            _ => None,
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        match unname(source) {
            Ok((path, cause)) => Error::Io { path, cause },
            Err(cause) => Error::Io {
                path: path.into(),
                cause,
            },
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An I/O error of an [`Output`](crate::output::Output), with the path the user gave.
#[derive(Debug)]
pub(crate) struct Named {
    pub(crate) path: PathBuf,
    pub(crate) cause: io::Error,
}

impl std::fmt::Display for Named {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.cause)
    }
}

impl std::error::Error for Named {}

pub(crate) fn named(path: &Path, cause: io::Error) -> io::Error {
    io::Error::new(
        cause.kind(),
        Named {
            path: path.to_path_buf(),
            cause,
        },
    )
}

/// The path and cause inside an error of [`Output`](crate::output::Output)'s `Write`, so that a caller who names the file
/// itself does not name it twice; any other error comes back as it was.
fn unname(e: io::Error) -> std::result::Result<(PathBuf, io::Error), io::Error> {
    if !e.get_ref().is_some_and(|inner| inner.is::<Named>()) {
        return Err(e);
    }
    let named = e
        .into_inner()
        .and_then(|inner| inner.downcast::<Named>().ok())
        .expect("checked above");
    Ok((named.path, named.cause))
}

/// `err`'s message and each of its sources', joined by `: `, as anyhow's `{:#}` writes a chain: what a binary or a
/// warning prints for an error whose variants keep their causes as sources.
pub fn chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    for e in std::iter::successors(err.source(), |e| e.source()) {
        text.push_str(": ");
        text.push_str(&e.to_string());
    }
    text
}
