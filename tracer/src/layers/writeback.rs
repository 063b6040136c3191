//! The `writeback` layer: dirtying, writeback and waits on it (a tracepoint table).

use super::layer::Layer;
use super::tracepoints::table::Table;

pub static TABLE: Table = Table {
    layer: Layer::Writeback,
    sources: &[(
        "writeback",
        &[
            "writeback_dirty_folio",
            "writeback_dirty_page",
            "writeback_mark_inode_dirty",
            "writeback_dirty_inode_start",
            "writeback_dirty_inode",
            "writeback_write_inode_start",
            "writeback_write_inode",
            "writeback_single_inode_start",
            "writeback_single_inode",
            "writeback_start",
            "writeback_written",
            "folio_wait_writeback",
            "wait_on_page_writeback",
            "balance_dirty_pages",
        ],
    )],
    pairs: &[],
    spans: &[],
    in_call: false,
    flags: &[],
};
