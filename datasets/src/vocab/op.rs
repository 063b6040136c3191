//! Operations: the names of the I/O calls events carry, each with its class. One table; every list of operations
//! the crates use is a question put to it.

/// Which way a call moves a file's data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Direction {
    Read,
    Write,
}

/// What a call does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// Moves data and returns the bytes it moved (`read`, `pwritev2`).
    Transfer(Direction),
    /// Moves `size`-byte items and returns how many it moved (`fread`, `fwrite`).
    Items(Direction),
    /// Moves data from one fd to another inside the kernel and returns the bytes it moved
    /// (`copy_file_range`, `sendfile`, `splice`). It reads its source and writes its destination in
    /// one call, so it is one event, whose file is the destination (the source rides beside it as
    /// `src_fhash`): two events would claim the call's time twice. Its direction is therefore
    /// [`Direction::Write`], the way the data moves through the file it is counted on.
    KernelCopy,
    /// Opens a file, with its open(2) flags in `args.flags`.
    Open,
    /// Flushes a file to its device.
    Sync,
    /// Any other call on a file.
    Metadata,
}

/// One operation.
#[derive(Clone, Copy, Debug)]
pub struct OpDef {
    pub name: &'static str,
    pub class: Class,
    /// Whether it becomes a row of the feature matrix when no operation is asked for.
    pub default_row: bool,
    /// Whether the job report's time breakdown covers it (every transfer does).
    pub breakdown: bool,
}

use Class::{Items, KernelCopy, Metadata, Open, Sync, Transfer};
use Direction::{Read, Write};

const fn op(name: &'static str, class: Class, default_row: bool, breakdown: bool) -> OpDef {
    OpDef {
        name,
        class,
        default_row,
        breakdown,
    }
}

/// Every operation with a class, under the names of both system call layers (DFTracer's POSIX layer says `pread`,
/// `open64`), and io_uring's requests under the names dc-trace gives them (`io_uring_` and the kernel's opcode name,
/// `IORING_OP_READ` → `io_uring_read`), and Linux AIO's under theirs (`aio_` and the iocb's opcode, `IOCB_CMD_PREAD`
/// → `aio_pread`). The default rows are the calls that move data or open a file.
pub const OPS: &[OpDef] = &[
    op("read", Transfer(Read), true, true),
    op("write", Transfer(Write), true, true),
    op("pread64", Transfer(Read), true, true),
    op("pwrite64", Transfer(Write), true, true),
    op("readv", Transfer(Read), true, true),
    op("writev", Transfer(Write), true, true),
    op("openat", Open, true, true),
    op("pread", Transfer(Read), true, true),
    op("pwrite", Transfer(Write), true, true),
    op("open", Open, true, true),
    op("open64", Open, true, true),
    op("preadv", Transfer(Read), true, true),
    op("pwritev", Transfer(Write), true, true),
    op("preadv2", Transfer(Read), true, true),
    op("pwritev2", Transfer(Write), true, true),
    op("fread", Items(Read), false, true),
    op("fwrite", Items(Write), false, true),
    op("openat2", Open, false, false),
    op("creat", Open, false, false),
    op("close", Metadata, false, true),
    op("lseek", Metadata, false, true),
    op("lseek64", Metadata, false, true),
    op("fstat", Metadata, false, true),
    op("newfstatat", Metadata, false, true),
    op("statx", Metadata, false, true),
    op("getdents64", Metadata, false, true),
    op("fsync", Sync, false, true),
    op("fdatasync", Sync, false, true),
    op("sync_file_range", Sync, false, false),
    op("copy_file_range", KernelCopy, true, true),
    op("sendfile", KernelCopy, true, true),
    op("sendfile64", KernelCopy, true, true),
    op("splice", KernelCopy, true, true),
    op("io_uring_read", Transfer(Read), true, true),
    op("io_uring_write", Transfer(Write), true, true),
    op("io_uring_readv", Transfer(Read), true, true),
    op("io_uring_writev", Transfer(Write), true, true),
    op("io_uring_read_fixed", Transfer(Read), true, true),
    op("io_uring_write_fixed", Transfer(Write), true, true),
    op("io_uring_fsync", Sync, false, true),
    op("io_uring_sync_file_range", Sync, false, false),
    op("aio_pread", Transfer(Read), true, true),
    op("aio_pwrite", Transfer(Write), true, true),
    op("aio_preadv", Transfer(Read), true, true),
    op("aio_pwritev", Transfer(Write), true, true),
    op("aio_fsync", Sync, false, true),
    op("aio_fdatasync", Sync, false, true),
];

/// The table's entry for `op`.
pub fn find(op: &str) -> Option<&'static OpDef> {
    OPS.iter().find(|o| o.name == op)
}

fn class(op: &str) -> Option<Class> {
    find(op).map(|o| o.class)
}

/// The operations that become rows when none is asked for, in table order.
pub fn default_rows() -> impl Iterator<Item = &'static str> {
    OPS.iter().filter(|o| o.default_row).map(|o| o.name)
}

/// The operations the job report's time breakdown covers, in table order.
pub fn breakdown() -> impl Iterator<Item = &'static str> {
    OPS.iter().filter(|o| o.breakdown).map(|o| o.name)
}

/// Whether `op` moves a file's data, and which way (a copy: into the file it is counted on).
pub fn direction(op: &str) -> Option<Direction> {
    match class(op)? {
        Transfer(d) | Items(d) => Some(d),
        KernelCopy => Some(Direction::Write),
        Open | Sync | Metadata => None,
    }
}

/// Whether `op` returns the bytes it moved.
pub fn transfers(op: &str) -> bool {
    matches!(class(op), Some(Transfer(_) | KernelCopy))
}

/// Whether `op` copies from one fd to another in the kernel.
pub fn copies(op: &str) -> bool {
    class(op) == Some(KernelCopy)
}

/// Whether `op` moves `size`-byte items and returns how many.
pub fn moves_items(op: &str) -> bool {
    matches!(class(op), Some(Items(_)))
}

/// Whether `op` opens a file.
pub fn opens(op: &str) -> bool {
    class(op) == Some(Open)
}

/// Whether `op` flushes a file to its device.
pub fn flushes(op: &str) -> bool {
    class(op) == Some(Sync)
}

/// Whether `op` names or describes files (an open, a stat, a directory read): uncached, it reads directories and
/// inodes from the device.
pub fn looks_up(op: &str) -> bool {
    matches!(class(op), Some(Open | Metadata))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_operation_is_listed_once() {
        let mut names: Vec<&str> = OPS.iter().map(|o| o.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), OPS.len());
    }

    #[test]
    fn default_rows_are_the_calls_that_move_data_or_open_a_file() {
        let rows: Vec<&str> = default_rows().collect();
        assert_eq!(
            rows,
            [
                "read",
                "write",
                "pread64",
                "pwrite64",
                "readv",
                "writev",
                "openat",
                "pread",
                "pwrite",
                "open",
                "open64",
                "preadv",
                "pwritev",
                "preadv2",
                "pwritev2",
                "copy_file_range",
                "sendfile",
                "sendfile64",
                "splice",
                "io_uring_read",
                "io_uring_write",
                "io_uring_readv",
                "io_uring_writev",
                "io_uring_read_fixed",
                "io_uring_write_fixed",
                "aio_pread",
                "aio_pwrite",
                "aio_preadv",
                "aio_pwritev"
            ]
        );
    }

    #[test]
    fn classes_answer_by_name() {
        assert_eq!(direction("preadv2"), Some(Direction::Read));
        assert_eq!(direction("fwrite"), Some(Direction::Write));
        assert_eq!(direction("fsync"), None);
        assert!(transfers("pwritev") && !transfers("fread") && !transfers("close"));
        assert!(moves_items("fread") && !moves_items("read"));
        assert!(opens("creat") && opens("openat2") && !opens("close"));
        assert!(flushes("sync_file_range") && !flushes("write"));
        assert!(flushes("io_uring_fsync"));
        assert_eq!(direction("io_uring_read"), Some(Direction::Read));
        assert!(transfers("copy_file_range") && copies("splice") && !copies("write"));
        assert_eq!(direction("sendfile"), Some(Direction::Write));
        assert_eq!(breakdown().count(), 43);
    }
}
