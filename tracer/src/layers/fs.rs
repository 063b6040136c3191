//! The `fs` layer: ext4's tracepoints on the paths of reads, writes, syncs and allocation, as a tracepoint table ([`super::tracepoints`]).

use super::{Attached, Layer, Probes, Setup, tracepoints};
use crate::bpf::Attacher;

pub struct Fs;

impl Probes for Fs {
    fn attach(&self, at: &mut Attacher, _: &mut Setup, out: &mut Attached) {
        tracepoints::attach_layer(Layer::Fs, at, out);
    }

    fn tracepoints(&self) -> tracepoints::Sources {
        &[(
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
        )]
    }
}
