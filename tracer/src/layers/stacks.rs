//! Off-CPU kernel stacks, the `sched` layer's answer to why a thread waited. The kernel side
//! (`tracer-ebpf/src/stacks.rs`) writes a [`StackEvent`] when a traced thread leaves the CPU to
//! wait inside a call; here it is symbolized with /proc/kallsyms (module functions included) and
//! its wait classified by a [`WaitTable`], and the [`SchedEvent`] that ends the wait carries the
//! result: `wait_fn`, `wait_layer`, the `stack` and each frame's layer by the kernel layer map
//! (`stack_layers`, as on-CPU samples have it), beside the waker.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use crate::error::{Context, Result, failed};
use aya::Ebpf;
use aya::maps::{Array, MapData, PerCpuArray};
use datasets::input::Toml;
use datasets::{ArgValue, Event};
use regex::Regex;
use serde::Deserialize;
use toml::Spanned;
use tracer_ebpf::{STACK_DEPTH, SchedEvent, StackEvent};

use super::kernel::map::{KernelLayerMap, UNMAPPED};
use super::kernel::symbols::KernelSymbols;
use super::tables;

/// The table dc-trace ships.
pub const SHIPPED: &str = include_str!("waits.toml");
const SHIPPED_NAME: &str = "tracer/src/layers/waits.toml";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    skip: Vec<Spanned<String>>,
    #[serde(default)]
    wait: Vec<Entry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    layer: Spanned<String>,
    functions: Vec<Spanned<String>>,
}

/// Which frames are the scheduler's, and which layer a wait function means.
#[derive(Clone, Debug)]
pub struct WaitTable {
    skip: Vec<Regex>,
    rules: Vec<(Regex, String)>,
}

/// What a stack says about its wait.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wait {
    /// The innermost frame past the scheduler's.
    pub function: String,
    /// Its layer, when the table or the kernel layer map names one.
    pub layer: Option<String>,
}

impl WaitTable {
    pub fn shipped() -> WaitTable {
        WaitTable::parse(SHIPPED, SHIPPED_NAME).expect("the shipped wait table is valid")
    }

    /// The user's table at `path`, else the shipped one.
    pub fn for_run(path: Option<&Path>) -> Result<WaitTable> {
        match path {
            Some(p) => {
                let text =
                    std::fs::read_to_string(p).map_err(|e| failed!("{}: {e}", p.display()))?;
                WaitTable::parse(&text, &p.display().to_string())
            }
            None => Ok(WaitTable::shipped()),
        }
    }

    /// Parses `text`, named `file` in errors (`file:line: what`).
    pub fn parse(text: &str, file: &str) -> Result<WaitTable> {
        let input = Toml::new(text, Path::new(file));
        let parsed: File = input.parse_unnamed()?;
        let skip = parsed
            .skip
            .iter()
            .map(|p| tables::regex(&input, Some("skip"), p))
            .collect::<Result<_, _>>()?;
        let mut rules = Vec::new();
        for entry in &parsed.wait {
            let layer = tables::layer(&input, "layer", &entry.layer, &[])?;
            for f in &entry.functions {
                rules.push((tables::regex(&input, Some("functions"), f)?, layer.clone()));
            }
        }
        Ok(WaitTable { skip, rules })
    }

    /// The wait of a stack of function names, innermost first: its first frame the table does
    /// not skip, filed by the table, else by `klayers`; `None` when every frame is skipped.
    pub fn classify(&self, frames: &[&str], klayers: &mut KernelLayerMap) -> Option<Wait> {
        let function = *frames
            .iter()
            .find(|f| !self.skip.iter().any(|re| re.is_match(f)))?;
        let layer = match self.rules.iter().find(|(re, _)| re.is_match(function)) {
            Some((_, l)) => Some(l.clone()),
            None => Some(klayers.layer(function).to_owned()).filter(|l| l != UNMAPPED),
        };
        Some(Wait {
            function: function.to_owned(),
            layer,
        })
    }
}

/// What the decoder needs to explain waits: symbols, the table, and the stacks whose wait has
/// not ended yet.
pub struct Waits {
    symbols: Arc<KernelSymbols>,
    table: WaitTable,
    /// tid → (when it left the CPU, frames).
    pending: HashMap<u32, (u64, Vec<u64>)>,
    /// Frames → what they say, so that each distinct stack is symbolized and classified once.
    explained: HashMap<Vec<u64>, Explained>,
}

#[derive(Clone, Debug)]
struct Explained {
    wait: Option<Wait>,
    stack: String,
    stack_layers: String,
}

impl Waits {
    pub fn new(symbols: Arc<KernelSymbols>, table: WaitTable) -> Waits {
        Waits {
            symbols,
            table,
            pending: HashMap::new(),
            explained: HashMap::new(),
        }
    }

    /// Keeps a stack until the wait it began ends.
    pub fn stack(&mut self, s: &StackEvent) {
        let n = (s.len as usize / 8).min(STACK_DEPTH);
        self.pending
            .insert(s.hdr.tid, (s.hdr.ts, s.frames[..n].to_vec()));
    }

    /// Adds to `e`, the event of `s`, what the stack taken when its thread left the CPU says.
    pub fn explain(&mut self, e: &mut Event, s: &SchedEvent, klayers: &mut KernelLayerMap) {
        let Some((ts, frames)) = self.pending.remove(&s.hdr.tid) else {
            return;
        };
        if ts != s.hdr.ts {
            return;
        }
        if !self.explained.contains_key(&frames) {
            let names: Vec<&str> = frames
                .iter()
                .map(|&a| self.symbols.name(a).unwrap_or("?"))
                .collect();
            let x = Explained {
                wait: self.table.classify(&names, klayers),
                stack: names.join(";"),
                stack_layers: klayers.stack_layers(&names),
            };
            self.explained.insert(frames.clone(), x);
        }
        let explained = &self.explained[&frames];
        let other = &mut e.args.other;
        if let Some(w) = &explained.wait {
            other.push(("wait_fn".into(), ArgValue::Str(w.function.clone())));
            if let Some(l) = &w.layer {
                other.push(("wait_layer".into(), ArgValue::Str(l.clone())));
            }
        }
        other.push(("stack".into(), ArgValue::Str(explained.stack.clone())));
        other.push((
            "stack_layers".into(),
            ArgValue::Str(explained.stack_layers.clone()),
        ));
    }
}

/// Turns stacks on in the kernel: inside traced calls when `in_calls`, else at every wait.
pub fn enable(ebpf: &mut Ebpf, in_calls: bool) -> Result<()> {
    let mut on: Array<_, u32> =
        Array::try_from(ebpf.map_mut("OFFCPU_STACKS").context("OFFCPU_STACKS map")?)?;
    let when = if in_calls {
        tracer_ebpf::stacks::IN_CALL
    } else {
        tracer_ebpf::stacks::ALWAYS
    };
    on.set(0, when, 0)?;
    Ok(())
}

/// The counter of stacks the kernel could not read, taken from `ebpf` before it is torn down.
pub fn error_counter(ebpf: &mut Ebpf) -> Result<PerCpuArray<MapData, u64>> {
    Ok(PerCpuArray::try_from(
        ebpf.take_map("STACK_ERRORS").context("STACK_ERRORS map")?,
    )?)
}

/// Stacks the kernel could not read.
pub fn errors(counter: &PerCpuArray<MapData, u64>) -> u64 {
    counter
        .get(&tracer_ebpf::stacks::ERRORS_OFFCPU, 0)
        .map_or(0, |v| v.iter().sum())
}

#[cfg(test)]
mod tests {
    use super::*;
    use datasets::vocab::layer::kernel_function_layers;

    fn wait(frames: &[&str]) -> Option<(String, Option<String>)> {
        WaitTable::shipped()
            .classify(frames, &mut KernelLayerMap::shipped())
            .map(|w| (w.function, w.layer))
    }

    fn named(f: &str, l: &str) -> Option<(String, Option<String>)> {
        Some((f.to_owned(), Some(l.to_owned())))
    }

    #[test]
    fn the_shipped_table_files_each_kind_of_wait_under_its_layer() {
        let sched = ["__schedule", "schedule"];
        let with = |rest: &[&'static str]| -> Vec<&'static str> {
            sched.iter().chain(rest).copied().collect()
        };
        assert_eq!(
            wait(&with(&[
                "schedule_timeout",
                "io_schedule_timeout",
                "__iomap_dio_rw",
                "iomap_dio_rw",
                "ext4_file_read_iter",
                "vfs_read",
            ])),
            named("__iomap_dio_rw", "block")
        );
        assert_eq!(
            wait(&with(&[
                "schedule_timeout",
                "io_schedule_timeout",
                "__wait_for_common",
                "wait_for_completion_io_timeout",
                "submit_bio_wait",
            ])),
            named("wait_for_completion_io_timeout", "block")
        );
        assert_eq!(
            wait(&with(&[
                "io_schedule",
                "blk_mq_get_tag",
                "__blk_mq_alloc_requests"
            ])),
            named("blk_mq_get_tag", "block")
        );
        assert_eq!(
            wait(&with(&[
                "io_schedule",
                "folio_wait_bit_common",
                "folio_wait_writeback",
                "__filemap_fdatawait_range",
            ])),
            named("folio_wait_bit_common", "page_cache")
        );
        assert_eq!(
            wait(&with(&[
                "jbd2_log_wait_commit",
                "jbd2_complete_transaction"
            ])),
            named("jbd2_log_wait_commit", "jbd2")
        );
        // A buffered write updating its inode while the committing transaction writes that buffer to the journal.
        assert_eq!(
            wait(&with(&[
                "io_schedule",
                "bit_wait_io",
                "__wait_on_bit",
                "out_of_line_wait_on_bit",
                "do_get_write_access",
                "jbd2_journal_get_write_access",
                "__ext4_journal_get_write_access",
                "ext4_reserve_inode_write",
            ])),
            named("do_get_write_access", "jbd2")
        );
        assert_eq!(
            wait(&with(&[
                "schedule_preempt_disabled",
                "rwsem_down_write_slowpath",
                "down_write",
                "ext4_buffered_write_iter",
            ])),
            named("rwsem_down_write_slowpath", "lock")
        );
        assert_eq!(
            wait(&with(&[
                "io_schedule_timeout",
                "balance_dirty_pages",
                "balance_dirty_pages_ratelimited_flags",
            ])),
            named("balance_dirty_pages", "writeback")
        );
        // The kernel layer map files what the table does not name; what neither names stays
        // sched's, with its function.
        assert_eq!(
            wait(&with(&["ext4_mb_load_buddy", "ext4_mb_regular_allocator"])),
            named("ext4_mb_load_buddy", "ext4")
        );
        assert_eq!(
            wait(&with(&["schedule_hrtimeout_range", "do_sys_poll"])),
            Some(("do_sys_poll".to_owned(), None))
        );
        assert_eq!(wait(&sched), None);
    }

    fn error(text: &str) -> String {
        datasets::error::chain(&WaitTable::parse(text, "waits.toml").unwrap_err())
    }

    #[test]
    fn bad_tables_are_reported_by_file_and_line() {
        assert_eq!(
            error("skip = [\"^schedule$\"]\n\n[[wait]]\nlayer = \"disk\"\nfunctions = [\"^x\"]\n"),
            format!(
                "waits.toml:4: layer: `disk` is not a layer (layers: {})",
                kernel_function_layers().join(", ")
            )
        );
        assert!(
            error("skip = [\"^schedule$\"]\n[[wait]]\nlayer = \"block\"\nfunctions = [\n  \"^a\",\n  \"^(b\",\n]\n")
                .starts_with("waits.toml:6: functions: `^(b` is not a valid regex: "),
        );
        assert!(
            error("skip = [\"^sched(\"]\n")
                .starts_with("waits.toml:1: skip: `^sched(` is not a valid regex: "),
        );
        assert!(
            error("skip = []\n[[wait]]\nlayer = \"block\"\npatterns = []\n")
                .starts_with("waits.toml:4: unknown field `patterns`"),
        );
    }
}
