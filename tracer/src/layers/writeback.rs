//! The `writeback` layer: dirtying, writeback and waits on it, as a tracepoint table ([`super::tracepoints`]).

use super::{Attached, Layer, Probes, Setup, tracepoints};
use crate::bpf::Attacher;

pub struct Writeback;

impl Probes for Writeback {
    fn attach(&self, at: &mut Attacher, _: &mut Setup, out: &mut Attached) {
        tracepoints::attach_layer(Layer::Writeback, at, out);
    }

    fn tracepoints(&self) -> tracepoints::Sources {
        &[(
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
        )]
    }
}
