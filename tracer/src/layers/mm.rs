//! The `mm` layer: direct reclaim (vmscan's direct_reclaim_begin → end), the reclaim a memory cgroup at its limit
//! makes its own tasks do (memcg_reclaim_begin → end: no direct reclaim fires for it), page faults (exceptions,
//! point events), and dirty throttling: writeback:balance_dirty_pages fires just before the
//! thread sleeps `pause` milliseconds, so its interval is that pause.

use super::layer::Layer;
use super::tracepoints::table::Table;

pub static TABLE: Table = Table {
    layer: Layer::Mm,
    sources: &[
        (
            "vmscan",
            &[
                "mm_vmscan_direct_reclaim_begin",
                "mm_vmscan_direct_reclaim_end",
                "mm_vmscan_memcg_reclaim_begin",
                "mm_vmscan_memcg_reclaim_end",
            ],
        ),
        ("exceptions", &["page_fault_user", "page_fault_kernel"]),
        ("writeback", &["balance_dirty_pages"]),
    ],
    pairs: &[
        (
            "mm_vmscan_direct_reclaim_begin",
            "mm_vmscan_direct_reclaim_end",
            "direct_reclaim",
        ),
        (
            "mm_vmscan_memcg_reclaim_begin",
            "mm_vmscan_memcg_reclaim_end",
            "memcg_reclaim",
        ),
    ],
    spans: &["balance_dirty_pages"],
    in_call: false,
    flags: &[],
};
