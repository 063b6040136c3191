//! The JSON of the L41 io-benchmark (`io-benchmark -j`, and `dc-pipeline iobench -j`), the shape
//! the L41 lab notebook reads: `host_configuration`, `benchmark_configuration`, and
//! `benchmark_samples` with `bandwidth` in KiB/s, `time` in seconds and, with `-g`, the getrusage
//! differences `utime`, `stime` (seconds), `inblock` and `oublock` (blocks).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::args::put;
use crate::parse::LineError;
use crate::{ArgValue, Event, Phase};

/// The `cat` of the events made from this format.
pub const CAT: &str = "iobench";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct L41Report {
    /// Facts about the machine (`hw.machine`, `hw.ncpu`, `kern.osrelease`, ...).
    pub host_configuration: Map<String, Value>,
    /// The run's flags (`operation`, `path`, `buffersize`, `totalsize`, `iterations`, ...).
    pub benchmark_configuration: Map<String, Value>,
    pub benchmark_samples: Vec<L41Sample>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct L41Sample {
    /// KiB per second over the work loop.
    pub bandwidth: f64,
    /// Wall-clock seconds of the work loop.
    pub time: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub utime: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stime: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inblock: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oublock: Option<i64>,
}

/// Whether the first bytes of a file look like this format's JSON document.
pub fn sniff(head: &[u8]) -> bool {
    head.trim_ascii_start().starts_with(b"{")
        && memchr::memmem::find(head, b"\"benchmark_configuration\"").is_some()
}

fn scalar(v: &Value) -> ArgValue {
    match v {
        Value::Null => ArgValue::Null,
        Value::Bool(b) => ArgValue::Bool(*b),
        Value::Number(n) => n
            .as_i64()
            .map(ArgValue::Int)
            .unwrap_or_else(|| ArgValue::Float(n.as_f64().unwrap_or(f64::NAN))),
        Value::String(s) => ArgValue::Str(s.clone()),
        other => ArgValue::Json(other.to_string()),
    }
}

/// The report's events: one metadata event with both configurations, then one counter event per
/// sample (a profile: `ts` 0; `iteration` says which).
pub fn read(text: &[u8]) -> Result<(Vec<Event>, u64), (u64, LineError)> {
    let lines = memchr::memchr_iter(b'\n', text).count() as u64
        + u64::from(!text.is_empty() && !text.ends_with(b"\n"));
    let mut de = serde_json::Deserializer::from_slice(text);
    let r: L41Report = match serde_path_to_error::deserialize(&mut de) {
        Ok(r) => r,
        Err(e) => {
            let field = e.path().to_string();
            let inner = e.into_inner();
            let line = inner.line().saturating_sub(1) as u64;
            let msg = inner.to_string();
            return Err((
                line,
                LineError {
                    field: field.into(),
                    msg,
                },
            ));
        }
    };
    let config = &r.benchmark_configuration;
    let pid = config.get("pid").and_then(Value::as_u64).unwrap_or(0);
    let op = config
        .get("operation")
        .and_then(Value::as_str)
        .unwrap_or("sample");
    let size = config.get("totalsize").and_then(Value::as_i64);
    let on_pid = |e: Event| Event { pid, tid: pid, ..e };
    let mut meta = on_pid(Event::new("iobench_configuration", CAT, Phase::Metadata));
    for (section, map) in [("host", &r.host_configuration), ("benchmark", config)] {
        for (k, v) in map {
            put(&mut meta, &format!("{section}.{k}"), scalar(v));
        }
    }
    let mut out = vec![meta];
    for (i, s) in r.benchmark_samples.iter().enumerate() {
        let mut e = on_pid(Event::new(op, CAT, Phase::Counter));
        e.dur_ns = (s.time * 1e9).round().max(0.0) as u64;
        e.args.size = size;
        put(&mut e, "iteration", ArgValue::Int(i as i64));
        put(&mut e, "bandwidth_kibs", ArgValue::Float(s.bandwidth));
        put(&mut e, "time_s", ArgValue::Float(s.time));
        for (k, v) in [("utime_s", s.utime), ("stime_s", s.stime)] {
            if let Some(v) = v {
                put(&mut e, k, ArgValue::Float(v));
            }
        }
        for (k, v) in [("inblock", s.inblock), ("oublock", s.oublock)] {
            if let Some(v) = v {
                put(&mut e, k, ArgValue::Int(v));
            }
        }
        out.push(e);
    }
    Ok((out, lines))
}
