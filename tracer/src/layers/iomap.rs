//! The `iomap` layer: a direct I/O from iomap_dio_rw_begin to iomap_dio_complete in the calling
//! thread (a synchronous O_DIRECT read or write on ext4 or xfs).

use super::layer::Layer;
use super::tracepoints::table::Table;

pub static TABLE: Table = Table {
    layer: Layer::Iomap,
    sources: &[("iomap", &["iomap_dio_rw_begin", "iomap_dio_complete"])],
    pairs: &[("iomap_dio_rw_begin", "iomap_dio_complete", "iomap_dio")],
    spans: &[],
    in_call: false,
    flags: &[],
};
