//! The `fs` layer: ext4's tracepoints on the paths of reads, writes, syncs and allocation (a
//! tracepoint table).

use super::layer::Layer;
use super::tracepoints::table::Table;

pub static TABLE: Table = Table {
    layer: Layer::Fs,
    sources: &[(
        "ext4",
        &[
            "ext4_sync_file_enter",
            "ext4_sync_file_exit",
            "ext4_fallocate_enter",
            "ext4_fallocate_exit",
            "ext4_truncate_enter",
            "ext4_truncate_exit",
            "ext4_unlink_enter",
            "ext4_unlink_exit",
            "ext4_ext_map_blocks_enter",
            "ext4_ext_map_blocks_exit",
            "ext4_da_write_begin",
            "ext4_da_write_end",
            "ext4_write_begin",
            "ext4_write_end",
            "ext4_writepages",
            "ext4_writepages_result",
            "ext4_da_write_pages",
            "ext4_read_folio",
            "ext4_readpage",
            "ext4_mark_inode_dirty",
            "ext4_begin_ordered_truncate",
            "ext4_request_blocks",
            "ext4_allocate_blocks",
            "ext4_free_blocks",
        ],
    )],
    pairs: &[],
    spans: &[],
    in_call: false,
    flags: &[],
};
