//! The `page_cache` layer: pages added to and deleted from the page cache, and readahead (a
//! tracepoint table).

use super::layer::Layer;
use super::tracepoints::table::Table;

pub static TABLE: Table = Table {
    layer: Layer::PageCache,
    sources: &[
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
    ],
    pairs: &[],
    spans: &[],
    in_call: false,
    flags: &[],
};
