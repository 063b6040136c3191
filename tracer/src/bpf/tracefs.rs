//! tracefs: mounting it (tracepoint attach needs it, and this project's machines do not mount it at
//! boot) and reading tracepoints' `format` files, so that field offsets are measured on the running
//! kernel rather than compiled in.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::{Context, Result, bail};

pub const TRACEFS: &str = "/sys/kernel/tracing";

/// Mounts tracefs at `/sys/kernel/tracing` unless it is already there.
pub fn ensure_mounted() -> Result<()> {
    if Path::new(TRACEFS).join("events").is_dir() {
        return Ok(());
    }
    let status = std::process::Command::new("mount")
        .args(["-t", "tracefs", "nodev", TRACEFS])
        .status()
        .context("running mount -t tracefs")?;
    if !status.success() {
        bail!("mount -t tracefs nodev {TRACEFS} failed ({status}); tracepoints cannot attach");
    }
    Ok(())
}

/// One field of a tracepoint record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    pub offset: u16,
    pub size: u8,
}

/// A tracepoint's id (its records' `common_type`) and fields, from its `format` file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Format {
    pub id: u16,
    pub fields: BTreeMap<String, Field>,
}

impl Format {
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.get(name)
    }

    /// The offset of `name`, or an error naming the tracepoint and the field.
    pub fn offset(&self, tracepoint: &str, name: &str) -> Result<u16> {
        self.field(name)
            .map(|f| f.offset)
            .with_context(|| format!("tracepoint {tracepoint} has no field `{name}` in its format"))
    }
}

/// Parses the text of a `format` file; `origin` names it in errors.
pub fn parse_format(text: &str, origin: &str) -> Result<Format> {
    let mut id = None;
    let mut fields = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if let Some(v) = line.strip_prefix("ID:") {
            id = Some(v.trim().parse::<u16>().with_context(|| {
                format!(
                    "{origin}:{}: field ID: `{}` is not a number",
                    n + 1,
                    v.trim()
                )
            })?);
        } else if let Some(rest) = line.strip_prefix("field:") {
            let parts: Vec<&str> = rest.split(';').map(str::trim).collect();
            let decl = parts[0];
            let num = |key: &str| -> Result<u64> {
                let v = parts
                    .iter()
                    .find_map(|p| p.strip_prefix(key))
                    .with_context(|| format!("{origin}:{}: field `{decl}` has no {key}", n + 1))?;
                v.parse()
                    .with_context(|| format!("{origin}:{}: field `{decl}`: {key}`{v}`", n + 1))
            };
            let name = decl
                .rsplit(|c: char| c.is_whitespace() || c == '*')
                .next()
                .unwrap_or(decl);
            let name = name.split('[').next().unwrap_or(name);
            fields.insert(
                name.to_owned(),
                Field {
                    offset: num("offset:")? as u16,
                    size: num("size:")?.min(255) as u8,
                },
            );
        }
    }
    let id = id.with_context(|| format!("{origin}: no ID line"))?;
    Ok(Format { id, fields })
}

pub fn event_dir(category: &str, name: &str) -> PathBuf {
    Path::new(TRACEFS).join("events").join(category).join(name)
}

/// Reads the format of `category/name` from tracefs.
pub fn format(category: &str, name: &str) -> Result<Format> {
    let path = event_dir(category, name).join("format");
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "tracepoint {category}/{name} is not on this kernel ({})",
            path.display()
        )
    })?;
    parse_format(&text, &path.display().to_string())
}

/// Tracepoint names in `category`, sorted; empty when the category is missing.
pub fn events(category: &str) -> Vec<String> {
    let dir = Path::new(TRACEFS).join("events").join(category);
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().join("format").is_file())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    const FORK_6_18: &str = "name: sched_process_fork
ID: 318
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:__data_loc char[] parent_comm;\toffset:8;\tsize:4;\tsigned:0;
\tfield:pid_t parent_pid;\toffset:12;\tsize:4;\tsigned:1;
\tfield:__data_loc char[] child_comm;\toffset:16;\tsize:4;\tsigned:0;
\tfield:pid_t child_pid;\toffset:20;\tsize:4;\tsigned:1;

print fmt: \"comm=%s\", __get_str(parent_comm)
";

    #[test]
    fn parses_ids_offsets_and_array_names() {
        let f = parse_format(FORK_6_18, "fork/format").unwrap();
        assert_eq!(f.id, 318);
        assert_eq!(
            f.field("child_pid"),
            Some(&Field {
                offset: 20,
                size: 4
            })
        );
        assert_eq!(f.field("parent_comm"), Some(&Field { offset: 8, size: 4 }));
        let args = parse_format(
            "ID: 7\n\tfield:unsigned long args[6];\toffset:16;\tsize:48;\tsigned:0;\n",
            "x",
        )
        .unwrap();
        assert_eq!(
            args.field("args"),
            Some(&Field {
                offset: 16,
                size: 48
            })
        );
    }

    #[test]
    fn errors_name_the_file_line_and_field() {
        let err = parse_format("ID: x\n", "a/format").unwrap_err().to_string();
        assert_eq!(err, "a/format:1: field ID: `x` is not a number");
        let f = parse_format(FORK_6_18, "fork/format").unwrap();
        let err = f
            .offset("sched/sched_process_fork", "nope")
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "tracepoint sched/sched_process_fork has no field `nope` in its format"
        );
    }
}
