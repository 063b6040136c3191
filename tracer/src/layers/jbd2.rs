//! The `jbd2` layer: the journal as the calling thread sees it. A handle, from jbd2_handle_start
//! (after any wait for the running transaction to accept it) to jbd2_handle_stats (at
//! jbd2_journal_stop), is `jbd2_handle`; a wait for a buffer the journal holds is the point event
//! jbd2_lock_buffer_stall. The commit itself runs in the jbd2 thread, not the caller: an fsync's
//! wait for it is the caller's `offcpu_D`, whose waker is that thread (`waker_comm` `jbd2/...`).

use super::layer::Layer;
use super::tracepoints::table::Table;

pub static TABLE: Table = Table {
    layer: Layer::Jbd2,
    sources: &[(
        "jbd2",
        &[
            "jbd2_handle_start",
            "jbd2_handle_stats",
            "jbd2_lock_buffer_stall",
        ],
    )],
    pairs: &[("jbd2_handle_start", "jbd2_handle_stats", "jbd2_handle")],
    spans: &[],
    in_call: false,
    flags: &[],
};
