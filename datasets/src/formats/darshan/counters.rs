//! Counter names of the Darshan modules read as profiles, in the order the current record format
//! stores them (`include/darshan-{posix,mpiio,stdio}-log-format.h`, POSIX 4, MPI-IO 3, STDIO 2).

pub const POSIX_COUNTERS: [&str; 69] = [
    "POSIX_OPENS",
    "POSIX_FILENOS",
    "POSIX_DUPS",
    "POSIX_READS",
    "POSIX_WRITES",
    "POSIX_SEEKS",
    "POSIX_STATS",
    "POSIX_MMAPS",
    "POSIX_FSYNCS",
    "POSIX_FDSYNCS",
    "POSIX_RENAME_SOURCES",
    "POSIX_RENAME_TARGETS",
    "POSIX_RENAMED_FROM",
    "POSIX_MODE",
    "POSIX_BYTES_READ",
    "POSIX_BYTES_WRITTEN",
    "POSIX_MAX_BYTE_READ",
    "POSIX_MAX_BYTE_WRITTEN",
    "POSIX_CONSEC_READS",
    "POSIX_CONSEC_WRITES",
    "POSIX_SEQ_READS",
    "POSIX_SEQ_WRITES",
    "POSIX_RW_SWITCHES",
    "POSIX_MEM_NOT_ALIGNED",
    "POSIX_MEM_ALIGNMENT",
    "POSIX_FILE_NOT_ALIGNED",
    "POSIX_FILE_ALIGNMENT",
    "POSIX_MAX_READ_TIME_SIZE",
    "POSIX_MAX_WRITE_TIME_SIZE",
    "POSIX_SIZE_READ_0_100",
    "POSIX_SIZE_READ_100_1K",
    "POSIX_SIZE_READ_1K_10K",
    "POSIX_SIZE_READ_10K_100K",
    "POSIX_SIZE_READ_100K_1M",
    "POSIX_SIZE_READ_1M_4M",
    "POSIX_SIZE_READ_4M_10M",
    "POSIX_SIZE_READ_10M_100M",
    "POSIX_SIZE_READ_100M_1G",
    "POSIX_SIZE_READ_1G_PLUS",
    "POSIX_SIZE_WRITE_0_100",
    "POSIX_SIZE_WRITE_100_1K",
    "POSIX_SIZE_WRITE_1K_10K",
    "POSIX_SIZE_WRITE_10K_100K",
    "POSIX_SIZE_WRITE_100K_1M",
    "POSIX_SIZE_WRITE_1M_4M",
    "POSIX_SIZE_WRITE_4M_10M",
    "POSIX_SIZE_WRITE_10M_100M",
    "POSIX_SIZE_WRITE_100M_1G",
    "POSIX_SIZE_WRITE_1G_PLUS",
    "POSIX_STRIDE1_STRIDE",
    "POSIX_STRIDE2_STRIDE",
    "POSIX_STRIDE3_STRIDE",
    "POSIX_STRIDE4_STRIDE",
    "POSIX_STRIDE1_COUNT",
    "POSIX_STRIDE2_COUNT",
    "POSIX_STRIDE3_COUNT",
    "POSIX_STRIDE4_COUNT",
    "POSIX_ACCESS1_ACCESS",
    "POSIX_ACCESS2_ACCESS",
    "POSIX_ACCESS3_ACCESS",
    "POSIX_ACCESS4_ACCESS",
    "POSIX_ACCESS1_COUNT",
    "POSIX_ACCESS2_COUNT",
    "POSIX_ACCESS3_COUNT",
    "POSIX_ACCESS4_COUNT",
    "POSIX_FASTEST_RANK",
    "POSIX_FASTEST_RANK_BYTES",
    "POSIX_SLOWEST_RANK",
    "POSIX_SLOWEST_RANK_BYTES",
];

pub const POSIX_FCOUNTERS: [&str; 17] = [
    "POSIX_F_OPEN_START_TIMESTAMP",
    "POSIX_F_READ_START_TIMESTAMP",
    "POSIX_F_WRITE_START_TIMESTAMP",
    "POSIX_F_CLOSE_START_TIMESTAMP",
    "POSIX_F_OPEN_END_TIMESTAMP",
    "POSIX_F_READ_END_TIMESTAMP",
    "POSIX_F_WRITE_END_TIMESTAMP",
    "POSIX_F_CLOSE_END_TIMESTAMP",
    "POSIX_F_READ_TIME",
    "POSIX_F_WRITE_TIME",
    "POSIX_F_META_TIME",
    "POSIX_F_MAX_READ_TIME",
    "POSIX_F_MAX_WRITE_TIME",
    "POSIX_F_FASTEST_RANK_TIME",
    "POSIX_F_SLOWEST_RANK_TIME",
    "POSIX_F_VARIANCE_RANK_TIME",
    "POSIX_F_VARIANCE_RANK_BYTES",
];

pub const MPIIO_COUNTERS: [&str; 51] = [
    "MPIIO_INDEP_OPENS",
    "MPIIO_COLL_OPENS",
    "MPIIO_INDEP_READS",
    "MPIIO_INDEP_WRITES",
    "MPIIO_COLL_READS",
    "MPIIO_COLL_WRITES",
    "MPIIO_SPLIT_READS",
    "MPIIO_SPLIT_WRITES",
    "MPIIO_NB_READS",
    "MPIIO_NB_WRITES",
    "MPIIO_SYNCS",
    "MPIIO_HINTS",
    "MPIIO_VIEWS",
    "MPIIO_MODE",
    "MPIIO_BYTES_READ",
    "MPIIO_BYTES_WRITTEN",
    "MPIIO_RW_SWITCHES",
    "MPIIO_MAX_READ_TIME_SIZE",
    "MPIIO_MAX_WRITE_TIME_SIZE",
    "MPIIO_SIZE_READ_AGG_0_100",
    "MPIIO_SIZE_READ_AGG_100_1K",
    "MPIIO_SIZE_READ_AGG_1K_10K",
    "MPIIO_SIZE_READ_AGG_10K_100K",
    "MPIIO_SIZE_READ_AGG_100K_1M",
    "MPIIO_SIZE_READ_AGG_1M_4M",
    "MPIIO_SIZE_READ_AGG_4M_10M",
    "MPIIO_SIZE_READ_AGG_10M_100M",
    "MPIIO_SIZE_READ_AGG_100M_1G",
    "MPIIO_SIZE_READ_AGG_1G_PLUS",
    "MPIIO_SIZE_WRITE_AGG_0_100",
    "MPIIO_SIZE_WRITE_AGG_100_1K",
    "MPIIO_SIZE_WRITE_AGG_1K_10K",
    "MPIIO_SIZE_WRITE_AGG_10K_100K",
    "MPIIO_SIZE_WRITE_AGG_100K_1M",
    "MPIIO_SIZE_WRITE_AGG_1M_4M",
    "MPIIO_SIZE_WRITE_AGG_4M_10M",
    "MPIIO_SIZE_WRITE_AGG_10M_100M",
    "MPIIO_SIZE_WRITE_AGG_100M_1G",
    "MPIIO_SIZE_WRITE_AGG_1G_PLUS",
    "MPIIO_ACCESS1_ACCESS",
    "MPIIO_ACCESS2_ACCESS",
    "MPIIO_ACCESS3_ACCESS",
    "MPIIO_ACCESS4_ACCESS",
    "MPIIO_ACCESS1_COUNT",
    "MPIIO_ACCESS2_COUNT",
    "MPIIO_ACCESS3_COUNT",
    "MPIIO_ACCESS4_COUNT",
    "MPIIO_FASTEST_RANK",
    "MPIIO_FASTEST_RANK_BYTES",
    "MPIIO_SLOWEST_RANK",
    "MPIIO_SLOWEST_RANK_BYTES",
];

pub const MPIIO_FCOUNTERS: [&str; 17] = [
    "MPIIO_F_OPEN_START_TIMESTAMP",
    "MPIIO_F_READ_START_TIMESTAMP",
    "MPIIO_F_WRITE_START_TIMESTAMP",
    "MPIIO_F_CLOSE_START_TIMESTAMP",
    "MPIIO_F_OPEN_END_TIMESTAMP",
    "MPIIO_F_READ_END_TIMESTAMP",
    "MPIIO_F_WRITE_END_TIMESTAMP",
    "MPIIO_F_CLOSE_END_TIMESTAMP",
    "MPIIO_F_READ_TIME",
    "MPIIO_F_WRITE_TIME",
    "MPIIO_F_META_TIME",
    "MPIIO_F_MAX_READ_TIME",
    "MPIIO_F_MAX_WRITE_TIME",
    "MPIIO_F_FASTEST_RANK_TIME",
    "MPIIO_F_SLOWEST_RANK_TIME",
    "MPIIO_F_VARIANCE_RANK_TIME",
    "MPIIO_F_VARIANCE_RANK_BYTES",
];

pub const STDIO_COUNTERS: [&str; 14] = [
    "STDIO_OPENS",
    "STDIO_FDOPENS",
    "STDIO_READS",
    "STDIO_WRITES",
    "STDIO_SEEKS",
    "STDIO_FLUSHES",
    "STDIO_BYTES_WRITTEN",
    "STDIO_BYTES_READ",
    "STDIO_MAX_BYTE_READ",
    "STDIO_MAX_BYTE_WRITTEN",
    "STDIO_FASTEST_RANK",
    "STDIO_FASTEST_RANK_BYTES",
    "STDIO_SLOWEST_RANK",
    "STDIO_SLOWEST_RANK_BYTES",
];

pub const STDIO_FCOUNTERS: [&str; 15] = [
    "STDIO_F_META_TIME",
    "STDIO_F_WRITE_TIME",
    "STDIO_F_READ_TIME",
    "STDIO_F_OPEN_START_TIMESTAMP",
    "STDIO_F_CLOSE_START_TIMESTAMP",
    "STDIO_F_WRITE_START_TIMESTAMP",
    "STDIO_F_READ_START_TIMESTAMP",
    "STDIO_F_OPEN_END_TIMESTAMP",
    "STDIO_F_CLOSE_END_TIMESTAMP",
    "STDIO_F_WRITE_END_TIMESTAMP",
    "STDIO_F_READ_END_TIMESTAMP",
    "STDIO_F_FASTEST_RANK_TIME",
    "STDIO_F_SLOWEST_RANK_TIME",
    "STDIO_F_VARIANCE_RANK_TIME",
    "STDIO_F_VARIANCE_RANK_BYTES",
];

/// A module whose records are counters.
pub struct CounterModule {
    /// The name PyDarshan and darshan-parser use.
    pub name: &'static str,
    /// Index in the header's module map (after the index shifts of older logs).
    pub index: usize,
    pub counters: &'static [&'static str],
    pub fcounters: &'static [&'static str],
}

pub const POSIX: CounterModule = CounterModule {
    name: "POSIX",
    index: 1,
    counters: &POSIX_COUNTERS,
    fcounters: &POSIX_FCOUNTERS,
};
pub const MPIIO: CounterModule = CounterModule {
    name: "MPI-IO",
    index: 2,
    counters: &MPIIO_COUNTERS,
    fcounters: &MPIIO_FCOUNTERS,
};
pub const STDIO: CounterModule = CounterModule {
    name: "STDIO",
    index: 9,
    counters: &STDIO_COUNTERS,
    fcounters: &STDIO_FCOUNTERS,
};

/// How one record version is stored, against the current counter order. libdarshan-util
/// up-converts old records in place (`darshan-*-logutils.c`); this is the same mapping by name.
pub struct Layout {
    /// Stored integer counters: the current index each goes to, or `None` for one the current
    /// format no longer has.
    pub ints: Vec<Option<usize>>,
    /// Stored float counters, by current index.
    pub floats: Vec<usize>,
    /// Values libdarshan gives the counters this version does not store.
    pub int_defaults: Vec<(usize, i64)>,
    pub float_defaults: Vec<(usize, f64)>,
    /// POSIX 1 mixed STDIO counters in; libdarshan drops a record whose stored counter at this
    /// index (`POSIX_FOPENS`) is nonzero, because it cannot be converted.
    pub drop_if_nonzero: Option<usize>,
    /// Float counters libdarshan leaves at 0 although the record stores them: up-converting
    /// POSIX 2 and 3, its last `memmove` copies the old record length and so loses the last
    /// two floats (four from POSIX 2). PyDarshan and darshan-parser show 0; so does this reader.
    pub zeroed: Vec<usize>,
}

impl Layout {
    /// Bytes of one record: id and rank, then the counters.
    pub fn record_size(&self) -> usize {
        16 + 8 * (self.ints.len() + self.floats.len())
    }
}

/// The layout of `version` of module `m`, or `None` for a version libdarshan does not read.
pub fn layout(m: &CounterModule, version: u32) -> Option<Layout> {
    let (int_missing, float_missing): (Missing<i64>, Missing<f64>) = match (m.index, version) {
        (1, 4) | (2, 3) | (9, 2) => (&[], &[]),
        (1, 3) => (POSIX_3_MISSING, &[]),
        (1, 1 | 2) => (POSIX_3_MISSING, TIMESTAMPS_MISSING),
        (2, 1 | 2) => (&[], TIMESTAMPS_MISSING),
        (9, 1) => (&[("STDIO_FDOPENS", -1)], &[]),
        _ => return None,
    };
    let index = |names: &[&str], short: &str| {
        names
            .iter()
            .position(|n| n.ends_with(short))
            .expect("a counter of this module")
    };
    let int_defaults: Vec<(usize, i64)> = int_missing
        .iter()
        .map(|&(n, v)| (index(m.counters, n), v))
        .collect();
    let float_defaults: Vec<(usize, f64)> = float_missing
        .iter()
        .map(|&(n, v)| (index(m.fcounters, n), v))
        .collect();
    let mut ints: Vec<Option<usize>> = (0..m.counters.len())
        .filter(|i| int_defaults.iter().all(|&(d, _)| d != *i))
        .map(Some)
        .collect();
    let floats = (0..m.fcounters.len())
        .filter(|i| float_defaults.iter().all(|&(d, _)| d != *i))
        .collect();
    let zeroed = match (m.index, version) {
        (1, 2) => (m.fcounters.len() - 4..m.fcounters.len()).collect(),
        (1, 3) => (m.fcounters.len() - 2..m.fcounters.len()).collect(),
        _ => Vec::new(),
    };
    let mut drop_if_nonzero = None;
    if m.index == 1 && version == 1 {
        // FOPENS, FREADS, FWRITES, FSEEKS followed the first six POSIX counters.
        ints.splice(6..6, [None; 4]);
        drop_if_nonzero = Some(6);
    }
    Some(Layout {
        ints,
        floats,
        int_defaults,
        float_defaults,
        drop_if_nonzero,
        zeroed,
    })
}

/// Counters a version does not store, with the value libdarshan gives them.
type Missing<T> = &'static [(&'static str, T)];

/// Counters POSIX 4 added: libdarshan sets the counts to -1 and the record id to 0.
const POSIX_3_MISSING: Missing<i64> = &[
    ("POSIX_FILENOS", -1),
    ("POSIX_DUPS", -1),
    ("POSIX_RENAME_SOURCES", -1),
    ("POSIX_RENAME_TARGETS", -1),
    ("POSIX_RENAMED_FROM", 0),
];

/// Timestamps POSIX 3 and MPI-IO 3 added.
const TIMESTAMPS_MISSING: Missing<f64> = &[
    ("_F_CLOSE_START_TIMESTAMP", -1.0),
    ("_F_OPEN_END_TIMESTAMP", -1.0),
];
