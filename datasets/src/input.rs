//! The error every bad-input path of every crate returns: which file, which line (or row), which field, and why;
//! the line a parser's byte offset falls on; and a TOML file read with its errors at their lines.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

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

/// A TOML file's text under its name: what it deserializes to, each error at its line.
#[derive(Clone, Copy, Debug)]
pub struct Toml<'a> {
    pub text: &'a str,
    pub file: &'a Path,
}

impl<'a> Toml<'a> {
    pub fn new(text: &'a str, file: &'a Path) -> Self {
        Toml { text, file }
    }

    /// `T` from the text. An error is at its line and, below the top, names the dotted field it is
    /// about (`workload[1].iobench.op[0]`): the line of toml's span, else of the field.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, InputError> {
        let de = toml::Deserializer::parse(self.text).map_err(|e| self.toml_error(None, &e))?;
        serde_path_to_error::deserialize(de).map_err(|e| {
            let field = e.path().to_string();
            self.toml_error((field != ".").then_some(field), e.inner())
        })
    }

    /// `T` from the text, an error at its line naming no field: for files whose messages say
    /// the field themselves.
    pub fn parse_unnamed<T: DeserializeOwned>(&self) -> Result<T, InputError> {
        toml::from_str(self.text).map_err(|e| self.toml_error(None, &e))
    }

    fn toml_error(&self, field: Option<String>, e: &toml::de::Error) -> InputError {
        let line = match e.span() {
            Some(span) => Some(self.line(span)),
            None => field.as_deref().and_then(|f| self.line_of_field(f)),
        };
        InputError {
            file: self.file.to_owned(),
            line,
            field,
            message: e.message().trim().to_owned(),
        }
    }

    /// The line `span` (a [`toml::Spanned`]'s) starts on.
    pub fn line(&self, span: Range<usize>) -> u64 {
        line_at(self.text, span.start)
    }

    /// `message` at the line `span` starts on, naming no field: `file:line: message`.
    pub fn error_at(&self, span: Range<usize>, message: impl Into<String>) -> InputError {
        InputError::new(self.file, Some(self.line(span)), None, message)
    }

    /// `message` about a dotted field, at the line that sets it ([`line_of_field`](Self::line_of_field)).
    pub fn field_error(&self, field: &str, message: impl Into<String>) -> InputError {
        InputError::new(self.file, self.line_of_field(field), Some(field), message)
    }

    /// The line that sets a dotted field (`model.gbm.n_estimators`, `workload[1].name`), else that
    /// of the nearest table above it that the file sets; `None` when the text is not TOML.
    pub fn line_of_field(&self, field: &str) -> Option<u64> {
        let root = toml::de::DeTable::parse(self.text).ok()?;
        let mut table = Some(root.get_ref());
        let mut span = None;
        'walk: for segment in field.split('.') {
            let mut parts = segment.split('[');
            let Some(mut value) = table.and_then(|t| t.get(parts.next().unwrap_or_default()))
            else {
                break;
            };
            span = Some(value.span());
            for index in parts {
                let item = (index
                    .strip_suffix(']')
                    .and_then(|i| i.parse::<usize>().ok()))
                .and_then(|i| value.get_ref().as_array()?.get(i));
                let Some(item) = item else { break 'walk };
                value = item;
                span = Some(value.span());
            }
            table = value.get_ref().as_table();
        }
        span.map(|s| self.line(s))
    }
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

    const PIPELINE: &str = "name = \"t\"\n\n[[workload]]\nname = \"a\"\n\n[[workload]]\nname = \"b\"\nsize = [1,\n  2]\n\n[model]\nfolds = 3\n[model.gbm]\ndepth = 2\n";

    #[test]
    fn a_dotted_field_is_found_at_the_line_that_sets_it() {
        let toml = Toml::new(PIPELINE, Path::new("p.toml"));
        let line = |f| toml.line_of_field(f);
        assert_eq!(line("name"), Some(1));
        assert_eq!(line("workload[0].name"), Some(4));
        assert_eq!(line("workload[1].name"), Some(7));
        assert_eq!(line("workload[1].size[1]"), Some(9));
        assert_eq!(line("model.folds"), Some(12));
        assert_eq!(line("model.gbm.depth"), Some(14));
        // Not set: the nearest table above it that the file sets.
        assert_eq!(line("model.seed"), Some(11));
        assert_eq!(line("workload[2].name"), Some(3));
        assert_eq!(line("nothing"), None);
        assert_eq!(
            Toml::new("[x", Path::new("p.toml")).line_of_field("x"),
            None
        );
    }

    #[derive(Debug, PartialEq, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Model {
        folds: u32,
    }

    #[derive(Debug, PartialEq, serde::Deserialize)]
    struct File {
        model: Model,
    }

    #[test]
    fn a_toml_error_names_the_file_line_and_field() {
        let toml = |text| Toml::new(text, Path::new("p.toml"));
        assert_eq!(
            toml("[model]\nfolds = 3\n").parse::<File>(),
            Ok(File {
                model: Model { folds: 3 }
            })
        );
        let error = |text, named: bool| {
            let toml = toml(text);
            let e = if named {
                toml.parse::<File>()
            } else {
                toml.parse_unnamed::<File>()
            };
            e.unwrap_err().to_string()
        };
        let bad = "\n[model]\nfolds = \"x\"\n";
        assert_eq!(
            error(bad, true),
            "p.toml:3: field `model.folds`: invalid type: string \"x\", expected u32"
        );
        assert_eq!(
            error(bad, false),
            "p.toml:3: invalid type: string \"x\", expected u32"
        );
        let e = error("[model]\nfolds = 1\nfold = 2\n", true);
        assert!(
            e.starts_with("p.toml:3: field `model.fold`: unknown field `fold`"),
            "{e}"
        );
        let e = error("a = 1\n[model\n", true);
        assert!(e.starts_with("p.toml:2: "), "{e}");
        assert_eq!(
            toml("a = 1\nb = 2\n").error_at(7..8, "b: bad").to_string(),
            "p.toml:2: b: bad"
        );
        assert_eq!(
            toml(PIPELINE)
                .field_error("workload[1].name", "used twice")
                .to_string(),
            "p.toml:7: field `workload[1].name`: used twice"
        );
    }
}
