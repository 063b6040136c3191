//! Types shared by the eBPF programs (`main.rs`, built for `bpfel-unknown-none`) and by `dc-trace`
//! in userspace. Each is `#[repr(C)]` and defined only here. Kernel-version dependent facts
//! (tracepoint field offsets, syscall numbers) are never compiled in: userspace measures them and
//! passes them through [`Config`], [`SyscallSpec`] and [`TpInfo`].
#![no_std]

/// Layers, as the kernel tags records and counts drops.
pub mod layer {
    pub const SYS: u8 = 0;
    pub const LIBC: u8 = 1;
    pub const APP: u8 = 2;
    pub const BLOCK: u8 = 3;
    pub const PAGE_CACHE: u8 = 4;
    pub const FS: u8 = 5;
    pub const WRITEBACK: u8 = 6;
    pub const SCHED: u8 = 7;
    pub const KFUNC: u8 = 8;
    pub const IRQ: u8 = 9;
    pub const LOCK: u8 = 10;
    pub const MM: u8 = 11;
    pub const IOMAP: u8 = 12;
    pub const JBD2: u8 = 13;
    pub const ONCPU: u8 = 14;
    /// Not a layer of the stack: the scope's own records (thread names), always attached.
    pub const SCOPE: u8 = 15;
    /// Number of layers: the size of per-layer arrays such as the drop counters.
    pub const COUNT: u32 = 16;
}

/// Record kinds in the ring buffer; every record starts with an [`EventHeader`].
pub mod kind {
    /// [`super::SysEvent`].
    pub const SYS: u8 = 1;
    /// [`super::SysPathEvent`]: a syscall that named a path (and, for opens, created a file id).
    pub const SYS_PATH: u8 = 2;
    /// [`super::ProbeEvent`]: a uprobe/uretprobe or kernel-function pair.
    pub const PROBE: u8 = 3;
    /// [`super::TpEvent`]: a tracepoint point event, or an enter/exit pair.
    pub const TP: u8 = 4;
    /// [`super::BlockEvent`].
    pub const BLOCK: u8 = 5;
    /// [`super::SchedEvent`].
    pub const SCHED: u8 = 6;
    /// [`super::StackEvent`].
    pub const STACK: u8 = 7;
    /// [`super::StackEvent`] of an on-CPU sample: `hdr.ts` is when it was taken and `hdr.dur`
    /// the sample period, the CPU time it stands for.
    pub const SAMPLE: u8 = 8;
    /// [`super::NameEvent`].
    pub const NAME: u8 = 9;
    /// [`super::UringEvent`].
    pub const URING: u8 = 10;
    /// [`super::AioEvent`].
    pub const AIO: u8 = 11;
}

/// Scope modes ([`Config::scope`]).
pub mod scope {
    /// Thread groups in the `TRACED` map, and their descendants.
    pub const PIDS: u32 = 0;
    /// Every task of one cgroup (v2 id) and of its descendants.
    pub const CGROUP: u32 = 1;
    /// Every task but the tracer.
    pub const ALL: u32 = 2;
}

/// Output modes ([`Config::mode`]).
pub mod mode {
    pub const TRACE: u32 = 0;
    pub const PROFILE: u32 = 1;
}

/// [`SyscallSpec`] and [`UprobeSpec`] argument selectors beyond the six registers.
pub const ARG_NONE: u8 = 0xff;
/// The value is the return value.
pub const ARG_RET: u8 = 0xfe;

/// [`SyscallSpec::flags`].
pub mod sysflag {
    /// Traced at all.
    pub const TRACED: u8 = 1;
    /// Returns a new fd naming the path in `path_arg`.
    pub const OPEN: u8 = 2;
    /// Returns a new fd for the same file as `fd_arg`.
    pub const DUP: u8 = 4;
    /// Closes `fd_arg`.
    pub const CLOSE: u8 = 8;
    /// Never returns (exit): the event is written at entry.
    pub const NO_RETURN: u8 = 16;
    /// The path argument must be read at entry, because the call replaces the address space.
    pub const EXEC: u8 = 32;
    /// fcntl: duplicates `fd_arg` when its command is F_DUPFD or F_DUPFD_CLOEXEC.
    pub const FCNTL: u8 = 64;
}

/// How a traced syscall's arguments map to the event, indexed by syscall number in `SYSCALLS`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SyscallSpec {
    pub flags: u8,
    pub fd_arg: u8,
    pub size_arg: u8,
    pub offset_arg: u8,
    pub path_arg: u8,
    /// The open flags (`O_*`).
    pub oflags_arg: u8,
    /// A copy's source fd (copy_file_range, sendfile, splice), recorded beside `fd_arg`, its
    /// destination.
    pub src_fd_arg: u8,
    /// What the call does to Linux AIO requests ([`aio_call`]), recorded whether or not the call
    /// itself is (`flags` without [`sysflag::TRACED`]).
    pub aio: u8,
}

/// The Linux AIO calls the `sys` layer's programs follow requests through, by number, so that no
/// `syscalls` perf tracepoint is attached: one enabled sends every system call of the machine
/// through the kernel's perf syscall path.
pub mod aio_call {
    /// Not an AIO call.
    pub const NONE: u8 = 0;
    /// `io_submit(ctx, nr, iocbpp)`: its iocbs are read at entry; its return says how many were
    /// submitted.
    pub const SUBMIT: u8 = 1;
    /// `io_getevents` and `io_pgetevents(ctx, min_nr, nr, events, ...)`: its return says how many
    /// io_events it filled.
    pub const REAP: u8 = 2;
}

/// Highest syscall number (exclusive) the `SYSCALLS` map covers.
pub const MAX_SYSCALLS: u32 = 512;
/// Bytes of a path carried in [`SysPathEvent`].
pub const PATH_LEN: usize = 256;

/// Field offsets (bytes into the tracepoint record) measured from tracefs `format` files.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Config {
    pub scope: u32,
    pub mode: u32,
    pub self_tgid: u32,
    /// The depth of `cgroup_id` below the cgroup v2 root (0 for the root).
    pub cgroup_level: u32,
    pub cgroup_id: u64,
    pub interval_ns: u64,
    /// sched_process_fork `child_pid`; sched_process_exit `pid`.
    pub fork_child_pid: u16,
    pub exit_pid: u16,
    /// sched_switch `prev_pid`, `prev_state`, `next_pid`.
    pub switch_prev_pid: u16,
    pub switch_prev_state: u16,
    pub switch_next_pid: u16,
    /// block_bio_queue `dev`, `sector`, `rwbs` (tracepoint record offsets).
    pub bio_dev: u16,
    pub bio_sector: u16,
    pub bio_rwbs: u16,
    /// Byte offsets in kernel structs, from the kernel's BTF, for the raw tracepoints
    /// block_rq_issue/block_rq_complete: `request.q`, `request.__sector`, `request_queue.disk`,
    /// `gendisk.major`, `gendisk.first_minor`.
    pub rq_q: u16,
    pub rq_sector: u16,
    pub q_disk: u16,
    pub disk_major: u16,
    pub disk_first_minor: u16,
    /// sched_waking `pid`.
    pub waking_pid: u16,
    /// block_split `dev`, `sector`, `new_sector`.
    pub split_dev: u16,
    pub split_sector: u16,
    pub split_new_sector: u16,
    /// Nonzero once the sched layer's sched_switch is attached: a traced thread then leaves the
    /// scope at its last switch, not at sched_process_exit, so that time it spends off the CPU
    /// while exiting (closing files, waking its parent) is still its own.
    pub scope_ends_at_switch: u16,
    /// task_rename `pid`, `newcomm`.
    pub rename_pid: u16,
    pub rename_newcomm: u16,
    /// block_bio_queue `nr_sector`; `task_struct.flags` (BTF), to tell a kernel thread's bio from a process's.
    pub bio_nr_sector: u16,
    pub task_flags: u16,
    /// workqueue_execute_start `function`.
    pub work_function: u16,
}

/// Bios that processes outside the scope submitted to one device (the `OTHERS` map's value, per CPU): the
/// neighbours' own reads and writes, whichever way the device's counters merge them. Kernel threads' bios (flusher
/// writeback, jbd2's commits, blk-throttle's dispatch) are not counted: they may be the traced job's.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OtherIo {
    pub reads: u64,
    pub read_bytes: u64,
    pub writes: u64,
    pub write_bytes: u64,
}

/// Key of the process filter map: a thread-group id the tracer follows.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TracedPid {
    pub tgid: u32,
}

/// Key of the fd table: a file descriptor of a process.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FdKey {
    pub tgid: u32,
    pub fd: i32,
}

/// File ids that userspace assigns (fds found in /proc at start) have this bit set.
pub const USER_FILE_ID: u64 = 1 << 63;

/// Start of every ring-buffer record.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventHeader {
    pub kind: u8,
    pub layer: u8,
    pub _pad: u16,
    pub tgid: u32,
    pub tid: u32,
    pub _pad2: u32,
    /// Start, `bpf_ktime_get_ns` (CLOCK_MONOTONIC).
    pub ts: u64,
    pub dur: u64,
}

/// One system call.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SysEvent {
    pub hdr: EventHeader,
    pub nr: u32,
    pub fd: i32,
    pub ret: i64,
    pub size: i64,
    pub offset: i64,
    /// File id from the kernel fd table; 0 when unknown.
    pub file: u64,
    /// Which of size/offset/fd/oflags/src_fd are meaningful: bit 0 size, bit 1 offset, bit 2 fd,
    /// bit 3 oflags, bit 4 src_fd, bit 5 the call duplicated `fd` into `ret` ([`HAS_DUP`]).
    pub has: u32,
    /// An open's flags (`O_*`).
    pub oflags: u32,
    /// A copy's source fd, and its file id (0 when unknown).
    pub src_fd: i32,
    pub _pad: u32,
    pub src_file: u64,
}

pub const HAS_SIZE: u32 = 1;
pub const HAS_OFFSET: u32 = 2;
pub const HAS_FD: u32 = 4;
pub const HAS_OFLAGS: u32 = 8;
pub const HAS_SRC_FD: u32 = 16;
/// dup, dup2, dup3 or fcntl's F_DUPFD[_CLOEXEC] made `ret` a second fd of `file`: the file stays open until both
/// are closed (GNU find keeps each directory by a dup of the fd it opened, and closes the first).
pub const HAS_DUP: u32 = 32;

/// A system call that named a path; for opens, `sys.file` is the id the new fd maps to.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SysPathEvent {
    pub sys: SysEvent,
    pub path: [u8; PATH_LEN],
}

/// A function interval: uprobe/uretprobe or kernel function entry/exit.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProbeEvent {
    pub hdr: EventHeader,
    pub probe: u32,
    pub _pad: u32,
    pub ret: i64,
    pub args: [u64; 4],
    pub file: u64,
    /// Bytes, computed in the kernel from the probe's [`UprobeSpec`].
    pub size: i64,
}

/// Per uprobe id: which arguments carry the fd, the `FILE *` and the size.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UprobeSpec {
    pub layer: u8,
    pub fd_arg: u8,
    /// Argument holding a `FILE *` (or [`ARG_RET`] when the function returns a new one).
    pub stream_arg: u8,
    pub size_rule: u8,
}

/// [`UprobeSpec::size_rule`].
pub mod size_rule {
    pub const NONE: u8 = 0;
    /// Positive return value.
    pub const RET: u8 = 1;
    /// Positive return value times argument 1 (fread/fwrite: items × item size).
    pub const RET_TIMES_ARG1: u8 = 2;
    /// Argument 2 (e.g. a count).
    pub const ARG2: u8 = 3;
}

/// Key of the stream table: a `FILE *` of a process.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamKey {
    pub tgid: u32,
    pub _pad: u32,
    pub ptr: u64,
}

/// Slots of `TPINFO`: how many tracepoints the tracepoint layers attach at most.
pub const TP_SLOTS: u32 = 80;

/// Per tracepoint slot: what it is and which fields to copy.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TpInfo {
    pub probe: u32,
    /// Enter/exit pairs share it (the enter's probe id); 0 for point events.
    pub pair: u32,
    pub layer: u8,
    pub role: u8,
    /// [`tpflag`] bits.
    pub flags: u8,
    pub _pad: u8,
    /// Up to four numeric fields, by offset and size (0 = unused).
    pub off: [u16; 4],
    pub size: [u8; 4],
}

/// [`TpInfo::role`].
pub mod role {
    pub const POINT: u8 = 0;
    pub const ENTER: u8 = 1;
    pub const EXIT: u8 = 2;
    /// An interval from when it fires, as long as its third field says in milliseconds (the pause
    /// writeback:balance_dirty_pages is about to sleep).
    pub const SPAN_MS: u8 = 3;
}

/// [`TpInfo::flags`].
pub mod tpflag {
    /// Only while the thread is inside a traced system call: for tracepoints that fire for the
    /// whole machine (interrupts, locks), so that the filter is one lookup by thread.
    pub const IN_CALL: u8 = 1;
    /// A hardirq handler's enter or exit: the program keeps each CPU's interrupt context by it.
    pub const HARDIRQ: u8 = 2;
    /// A softirq's enter or exit; the enter's third field is its vector.
    pub const SOFTIRQ: u8 = 4;
    /// With [`HARDIRQ`], the local timer's interrupt, which runs expired hrtimers (a sleep's end).
    pub const TIMER: u8 = 8;
}

/// [`SchedEvent::woken_in`]: the context sched_waking fired in.
pub mod woken_in {
    /// A task's: the waker fields name it.
    pub const TASK: u32 = 0;
    /// A device's hardirq handler (its completion): the waker fields name the task it interrupted.
    pub const HARDIRQ: u32 = 1;
    /// A softirq's, whose vector is in bits 8 and up: the waker fields name the task it ran in.
    pub const SOFTIRQ: u32 = 2;
    /// The local timer's interrupt (a sleep's hrtimer expired): the waker fields name the task it interrupted.
    pub const TIMER: u32 = 3;
}

/// A tracepoint event: a point (`dur` 0) or an enter/exit pair.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TpEvent {
    pub hdr: EventHeader,
    pub probe: u32,
    /// [`role::POINT`] or [`role::ENTER`] for a pair.
    pub role: u32,
    pub vals: [u64; 4],
}

/// An off-CPU interval of a traced thread, with who woke it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedEvent {
    pub hdr: EventHeader,
    /// sched_switch's `prev_state` when it left the CPU.
    pub state: u64,
    /// The clock when sched_waking fired for it, 0 when none was seen or when it then ran on a CPU that
    /// was idle or ran the tracer: from then until it ran again it was runnable, waiting for a CPU
    /// another task held.
    pub woken: u64,
    /// The task running when sched_waking fired for it; 0 when none was seen.
    pub waker_tgid: u32,
    pub waker_tid: u32,
    pub waker_comm: [u8; 16],
    /// [`woken_in`]: whether sched_waking fired in an interrupt; with the irq layer off, always a task's.
    pub woken_in: u32,
    pub _pad: u32,
    /// The task that left the CPU when it got it back, if it had to wait for a CPU (it was preempted, or woken
    /// onto a CPU another task held): the last of those that kept it waiting. 0 when the CPU was idle or ran the
    /// tracer.
    pub holder_tgid: u32,
    pub holder_tid: u32,
    pub holder_comm: [u8; 16],
    /// The work function a kernel worker ran when it woke the thread (`waker_work`) or left the CPU to it
    /// (`holder_work`): the kernel work done elsewhere that the thread waited on or for. 0 when none.
    pub waker_work: u64,
    pub holder_work: u64,
}

/// A traced thread's name (comm) from when it was forked, exec'd or renamed; `hdr.tid` is the
/// named thread and `hdr.tgid` the forking or renaming thread's process, which is the named
/// thread's only when [`NameEvent::by`] is [`named::SELF`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NameEvent {
    pub hdr: EventHeader,
    pub comm: [u8; 16],
    pub by: u32,
    pub _pad: u32,
}

/// [`NameEvent::by`]: how the thread got its name.
pub mod named {
    /// A new task, named as its parent.
    pub const FORK: u32 = 0;
    /// exec, or prctl(PR_SET_NAME): the thread named itself.
    pub const SELF: u32 = 1;
    /// Another thread wrote its /proc comm.
    pub const OTHER: u32 = 2;
}

/// Frames of kernel stack a [`StackEvent`] holds at most: a wait inside a system call is 10 to 25
/// deep (the scheduler's frames, the wait, the file system, VFS, the syscall entry).
pub const STACK_DEPTH: usize = 32;

/// The kernel stack of a traced thread that left the CPU to wait (state S or D) inside a call. It
/// is written when the thread leaves, so it comes before the [`SchedEvent`] of the same thread
/// and `hdr.ts` that its return writes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StackEvent {
    pub hdr: EventHeader,
    /// Bytes of `frames` filled, innermost frame first; the rest is zero.
    pub len: u32,
    pub _pad: u32,
    pub frames: [u64; STACK_DEPTH],
}

/// The value of the sched layer's `OFFCPU_STACKS` map and of the oncpu layer's `ONCPU_SAMPLES`:
/// when [`StackEvent`]s are taken.
pub mod stacks {
    pub const OFF: u32 = 0;
    /// Only inside a traced system call (for off-CPU stacks, or an AIO call that submits or reaps
    /// traced requests).
    pub const IN_CALL: u32 = 1;
    /// At every wait of a traced thread (no system call layer to say where calls are).
    pub const ALWAYS: u32 = 2;
    /// Indices of the `STACK_ERRORS` counters: stacks the kernel could not read, by who asked.
    pub const ERRORS_OFFCPU: u32 = 0;
    pub const ERRORS_ONCPU: u32 = 1;
}

/// Key of the enter/exit pair table.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PairKey {
    pub tid: u32,
    pub pair: u32,
}

/// A block request, from its first bio's queueing (in the submitter's context) to its completion.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockEvent {
    pub hdr: EventHeader,
    pub dev: u32,
    pub nr_sector: u32,
    pub sector: u64,
    /// When the request was issued to the device; 0 if not seen.
    pub issue_ts: u64,
    pub rwbs: [u8; 8],
}

/// Key of the in-flight block I/O table.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BioKey {
    pub dev: u32,
    pub _pad: u32,
    pub sector: u64,
}

/// Value of the in-flight block I/O table.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BioStart {
    pub tgid: u32,
    pub tid: u32,
    pub ts: u64,
    pub issue_ts: u64,
    /// From block_bio_queue, which runs in the submitter's context.
    pub rwbs: [u8; 8],
}

/// Where the io_uring programs read their fields: byte offsets into the records of
/// `io_uring_submit_req`, `io_uring_file_get` and `io_uring_complete`, from their `format` files.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UringInfo {
    pub submit_req: u16,
    pub submit_opcode: u16,
    pub file_req: u16,
    pub file_fd: u16,
    pub complete_req: u16,
    pub complete_res: u16,
    /// Nonzero once userspace filled it.
    pub ready: u16,
    /// Byte offset in `struct io_kiocb` of the file position a read or write request asked for
    /// (`io_rw.kiocb.ki_pos`, which its prep set from the SQE's `off`), from the kernel's BTF.
    pub req_pos: u16,
    /// Bit `op` is set when opcode `op` moves data, so that its `res` counts as bytes in profile
    /// mode.
    pub transfers: u64,
    /// Bit `op` is set when opcode `op` keeps a `struct io_rw` in the request, so that `req_pos`
    /// holds its position; 0 when the offsets are unknown.
    pub rw_ops: u64,
}

/// Profile counters of io_uring requests carry `URING_PROBE | opcode` as their probe, beside
/// the sys layer's syscall numbers (all below [`MAX_SYSCALLS`]).
pub const URING_PROBE: u32 = 1 << 16;

/// One io_uring request of a traced process, from its submission (`hdr.ts`, in the submitting
/// thread `hdr.tid`) to its completion (`hdr.ts + hdr.dur`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UringEvent {
    pub hdr: EventHeader,
    /// `enum io_uring_op`.
    pub opcode: u32,
    /// The fd `io_uring_file_get` looked up; [`HAS_FD`] in `has` when it fired.
    pub fd: i32,
    /// The completion's `res`: bytes moved, or a negative errno.
    pub res: i64,
    /// File id of `fd`; 0 when unknown.
    pub file: u64,
    /// [`HAS_FD`], [`HAS_OFFSET`].
    pub has: u32,
    pub _pad: u32,
    /// The file position a read or write asked for ([`HAS_OFFSET`]).
    pub offset: i64,
}

/// The iocbs of one `io_submit` call, and the io_events of one `io_getevents` return, that the
/// programs read at most; the rest are counted as dropped.
pub const AIO_BATCH: u32 = 64;

/// Profile counters of Linux AIO requests carry `AIO_PROBE | aio_lio_opcode` as their probe.
pub const AIO_PROBE: u32 = 1 << 17;

/// One Linux AIO request (an iocb) of a traced process, from the `io_submit` that submitted it
/// (`hdr.ts`, in the submitting thread `hdr.tid`) to the return of the `io_getevents` or
/// `io_pgetevents` that reaped it (`hdr.ts + hdr.dur`), whichever thread of the process reaped it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AioEvent {
    pub hdr: EventHeader,
    /// The iocb's `aio_lio_opcode` (`IOCB_CMD_*`).
    pub opcode: u32,
    /// The iocb's `aio_fildes`.
    pub fd: i32,
    /// The io_event's `res`: bytes moved, or a negative errno.
    pub res: i64,
    /// File id of `fd`; 0 when unknown.
    pub file: u64,
    /// The iocb's `aio_offset`.
    pub offset: i64,
}

/// Key of the profile-mode aggregation: one counter per interval, thread, probe and file.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProfileKey {
    pub bucket: u64,
    pub tgid: u32,
    pub tid: u32,
    pub layer: u32,
    pub probe: u32,
    pub file: u64,
}

/// Value of the profile-mode aggregation.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProfileValue {
    pub count: u64,
    pub time_ns: u64,
    pub bytes: u64,
}

#[cfg(feature = "user")]
mod pod {
    use super::*;
    // SAFETY: every field of these types is an integer or an array of integers, so any bytes are
    // a valid value.
    unsafe impl aya::Pod for TracedPid {}
    unsafe impl aya::Pod for OtherIo {}
    unsafe impl aya::Pod for Config {}
    unsafe impl aya::Pod for SyscallSpec {}
    unsafe impl aya::Pod for FdKey {}
    unsafe impl aya::Pod for UprobeSpec {}
    unsafe impl aya::Pod for TpInfo {}
    unsafe impl aya::Pod for ProfileKey {}
    unsafe impl aya::Pod for ProfileValue {}
    unsafe impl aya::Pod for EventHeader {}
    unsafe impl aya::Pod for SysEvent {}
    unsafe impl aya::Pod for SysPathEvent {}
    unsafe impl aya::Pod for ProbeEvent {}
    unsafe impl aya::Pod for TpEvent {}
    unsafe impl aya::Pod for SchedEvent {}
    unsafe impl aya::Pod for BlockEvent {}
    unsafe impl aya::Pod for StackEvent {}
    unsafe impl aya::Pod for NameEvent {}
    unsafe impl aya::Pod for UringInfo {}
    unsafe impl aya::Pod for UringEvent {}
    unsafe impl aya::Pod for AioEvent {}
}
