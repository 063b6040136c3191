//! The error every bad-input path of every crate returns: which file, which line (or row), which field, and why;
//! and the line a parser's byte offset falls on.

use std::fmt;
use std::path::{Path, PathBuf};

/// Bad user input. `line` is 1-based: the text line for TOML, CSV, JSON lines and traces, the data row for Parquet.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct InputError {
    pub file: PathBuf,
    pub line: Option<u64>,
    pub field: Option<String>,
    pub message: String,
}

impl InputError {
    pub fn new(
        file: &Path,
        line: Option<u64>,
        field: Option<&str>,
        message: impl Into<String>,
    ) -> Self {
        InputError {
            file: file.to_path_buf(),
            line,
            field: field.map(str::to_owned),
            message: message.into(),
        }
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(field) = &self.field {
            write!(f, ": field `{field}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// The 1-based line of byte `offset` of `text` (a parser's span start); past the end, the line after the last
/// newline.
pub fn line_at(text: &str, offset: usize) -> u64 {
    let before = &text.as_bytes()[..offset.min(text.len())];
    memchr::memchr_iter(b'\n', before).count() as u64 + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_fall_on_their_lines() {
        let text = "a = 1\n\nname = \"é\"\n";
        assert_eq!(line_at(text, 0), 1);
        assert_eq!(line_at(text, 5), 1);
        assert_eq!(line_at(text, 6), 2);
        assert_eq!(line_at(text, 7), 3);
        assert_eq!(line_at(text, 15), 3);
        assert_eq!(line_at(text, text.len()), 4);
        assert_eq!(line_at(text, 1_000), 4);
        assert_eq!(line_at("", 0), 1);
    }

    #[test]
    fn the_message_names_file_line_and_field() {
        let e = InputError::new(
            Path::new("p.toml"),
            Some(3),
            Some("model.alpha"),
            "must be > 0",
        );
        assert_eq!(e.to_string(), "p.toml:3: field `model.alpha`: must be > 0");
        let e = InputError::new(Path::new("x.csv"), None, None, "empty");
        assert_eq!(e.to_string(), "x.csv: empty");
    }
}
