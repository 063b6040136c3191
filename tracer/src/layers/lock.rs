//! The `lock` layer: waits for contended kernel locks (mutexes, rwsems, spinlocks: lock's
//! contention_begin → contention_end) and for the mmap lock (mmap_lock's start_locking →
//! acquire_returned), inside a traced system call when the sys layer is on.

use super::layer::Layer;
use super::tracepoints::table::Table;

pub static TABLE: Table = Table {
    layer: Layer::Lock,
    sources: &[
        ("lock", &["contention_begin", "contention_end"]),
        (
            "mmap_lock",
            &["mmap_lock_start_locking", "mmap_lock_acquire_returned"],
        ),
    ],
    pairs: &[
        ("contention_begin", "contention_end", "lock_contention"),
        (
            "mmap_lock_start_locking",
            "mmap_lock_acquire_returned",
            "mmap_lock_wait",
        ),
    ],
    spans: &[],
    in_call: true,
    flags: &[],
};
