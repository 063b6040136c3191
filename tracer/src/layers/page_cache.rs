//! The `page_cache` layer: pages added to and deleted from the page cache, and readahead, as a tracepoint table ([`super::tracepoints`]).

use super::{Attached, Layer, Probes, Setup, tracepoints};
use crate::bpf::Attacher;

pub struct PageCache;

impl Probes for PageCache {
    fn attach(&self, at: &mut Attacher, _: &mut Setup, out: &mut Attached) {
        tracepoints::attach_layer(Layer::PageCache, at, out);
    }

    fn tracepoints(&self) -> tracepoints::Sources {
        &[
            (
                "filemap",
                &[
                    "mm_filemap_add_to_page_cache",
                    "mm_filemap_delete_from_page_cache",
                ],
            ),
            (
                "readahead",
                &[
                    "page_cache_sync_ra",
                    "page_cache_async_ra",
                    "page_cache_ra_unbounded",
                    "page_cache_ra_order",
                ],
            ),
        ]
    }
}
