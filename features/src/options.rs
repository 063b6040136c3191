//! What a build is asked for: which calls are rows, how events are attributed to them, what is read.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};
use compact_str::CompactString;
use datasets::read::ReadOptions;
use datasets::vocab::{layer, op};
use regex::Regex;
use serde::Deserialize;
use serde::de::{self, Deserializer};

use crate::syscall::op_name;

/// How events are attributed to system call rows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Same pid and tid, interval inside the row's.
    #[default]
    Exact,
    /// The seed notebook's rule: any overlap in time, any thread.
    Notebook,
}

/// The one option set of `dc-features build`, the pipeline's `[features]` table (deserialized as it
/// is; what is read and the runs come from the pipeline itself) and Python.
#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BuildOptions {
    /// Operations that become rows, compared with [`op_name`] of the event name; empty: every call of the row
    /// layers.
    pub ops: Vec<String>,
    /// Keep only rows whose resolved file name matches.
    #[serde(deserialize_with = "regex")]
    pub file_regex: Option<Regex>,
    /// Add a `count::{cat}::{name}` column per feature.
    pub counts: bool,
    pub mode: Mode,
    #[serde(skip)]
    pub read: ReadOptions,
    /// Layers whose calls are rows. A thread is in one call of these layers at a time.
    pub row_layers: Vec<String>,
    /// The run label of each input file (the `run` column); files not listed have none.
    #[serde(skip)]
    pub runs: HashMap<PathBuf, String>,
    /// Also build the no-call table: per thread, the events no row holds ([`crate::nocall`]; exact mode).
    pub no_call: bool,
}

fn regex<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Regex>, D::Error> {
    let s = String::deserialize(d)?;
    Regex::new(&s)
        .map(Some)
        .map_err(|e| de::Error::custom(format!("invalid regular expression: {e}")))
}

impl BuildOptions {
    /// Whether a build writes the no-call table: asked for, and in exact mode (notebook mode has none).
    pub fn writes_no_call(&self) -> bool {
        self.no_call && self.mode == Mode::Exact
    }

    /// Whether events of layer `cat` are calls of a row layer.
    pub fn is_row_layer(&self, cat: &str) -> bool {
        self.row_layers.iter().any(|l| l == cat)
    }

    /// Whether an event of a row layer named `name` is a row.
    pub fn is_row_op(&self, name: &str) -> bool {
        self.ops.is_empty() || self.ops.iter().any(|op| op == op_name(name))
    }

    /// Refuses row layers and operations that were asked for (not the defaults) when no event of the input has them,
    /// which would give an empty matrix. `keys` are the (layer, name) of the input's events.
    pub fn check_rows(&self, keys: &[(CompactString, CompactString)]) -> Result<()> {
        let list = |mut v: Vec<&str>| {
            v.sort_unstable();
            v.dedup();
            if v.is_empty() {
                "none".to_owned()
            } else {
                v.join(", ")
            }
        };
        let asked = |v: &[String]| {
            v.iter()
                .map(|s| format!("`{s}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        if self.row_layers != layer::SYSCALL_LAYERS
            && !keys.iter().any(|(cat, _)| self.is_row_layer(cat))
        {
            return Err(Error::RowLayer {
                asked: asked(&self.row_layers),
                has: list(keys.iter().map(|(cat, _)| cat.as_str()).collect()),
            });
        }
        let row_layer = |k: &&(CompactString, CompactString)| self.is_row_layer(&k.0);
        if !self.ops.is_empty()
            && !self.ops.iter().map(String::as_str).eq(op::default_rows())
            && !keys
                .iter()
                .filter(row_layer)
                .any(|(_, name)| self.is_row_op(name))
        {
            return Err(Error::RowOp {
                asked: asked(&self.ops),
                layers: self.row_layers.join(", "),
                has: list(
                    keys.iter()
                        .filter(row_layer)
                        .map(|(_, n)| op_name(n))
                        .collect(),
                ),
            });
        }
        Ok(())
    }

    /// The run label of an input file.
    pub fn run_of(&self, path: &Path) -> Option<Arc<str>> {
        self.runs.get(path).map(|r| Arc::from(r.as_str()))
    }
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions {
            ops: op::default_rows().map(str::to_owned).collect(),
            file_regex: None,
            counts: false,
            mode: Mode::Exact,
            read: ReadOptions::default(),
            row_layers: layer::SYSCALL_LAYERS.map(str::to_owned).to_vec(),
            runs: HashMap::new(),
            no_call: true,
        }
    }
}
