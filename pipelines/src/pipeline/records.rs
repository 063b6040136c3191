//! The report directory's data files: what `run` writes under `runs/` and `data/`, and `report` reads back.
//!
//! Reading the files rather than the in-memory results keeps the report re-drawable from a finished
//! (or resumed) report directory, and makes the charts show exactly what the data files hold.

use std::fs;
use std::path::{Path, PathBuf};

use models::RankReport;
use models::report::SkippedLayer;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::bench::iobench::{Call, Sample};
use crate::pipeline::error::{Error, Result, io_at};
use crate::pipeline::plan::RunSpec;

/// One traced run, as `runs/<id>/run.json` and in `data/runs.json`; paths are relative to the report.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunRecord {
    pub spec: RunSpec,
    pub argv: Vec<String>,
    pub trace: PathBuf,
    pub summary: PathBuf,
    /// The benchmark's samples, for benchmark runs.
    pub bench: Option<PathBuf>,
    /// CLOCK_MONOTONIC nanoseconds around the traced run: the feature rows between them are its rows.
    pub start_ns: u64,
    pub end_ns: u64,
    pub events: u64,
    pub drops: u64,
    pub exit_status: Option<i32>,
    /// Rows of the feature matrix inside the run's window; set by the `features` step.
    pub rows: Option<usize>,
}

impl RunRecord {
    /// The command as run, with the report directory's prefix dropped and the program's folder left out.
    pub fn shown(&self, out: &Path) -> String {
        let prefix = format!("{}/", out.display());
        self.argv
            .iter()
            .enumerate()
            .map(|(i, a)| {
                let a = a.replace(&prefix, "");
                if i == 0 {
                    a.rsplit('/').next().unwrap_or(&a).to_string()
                } else {
                    a
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// `data/bench-samples.json`: every benchmark iteration of every run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BenchRow {
    pub run: String,
    pub workload: String,
    pub op: String,
    #[serde(default)]
    pub call: Call,
    pub direct: bool,
    pub fsync: bool,
    pub buffer_size: u64,
    pub total_size: u64,
    #[serde(flatten)]
    pub sample: Sample,
}

/// Everything under `data/`.
pub struct Data {
    pub runs: Vec<RunRecord>,
    pub bench: Vec<BenchRow>,
    /// `data/rank.json`: the models' report, as `models::rank` returned it.
    pub rank: RankReport,
    /// `data/rank-skipped.json`: layers the models could not rank, and why.
    pub skipped: Vec<SkippedLayer>,
}

fn read<T: DeserializeOwned>(path: &Path) -> Result<T> {
    let text = fs::read_to_string(path).map_err(io_at("reading", path))?;
    serde_json::from_str(&text).map_err(|source| Error::Decode {
        path: path.to_path_buf(),
        source,
    })
}

impl Data {
    pub fn read(out: &Path) -> Result<Data> {
        let d = out.join("data");
        Ok(Data {
            runs: read(&d.join("runs.json"))?,
            bench: read(&d.join("bench-samples.json"))?,
            rank: read(&d.join("rank.json"))?,
            skipped: read(&d.join("rank-skipped.json"))?,
        })
    }
}
