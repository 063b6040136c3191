//! The kernel side of dc-trace: one module per layer (mirroring `tracer/src/layers`), sharing the
//! maps in `common`. The tracepoint-table layers (page_cache, fs, writeback) share `tracepoints`.
#![no_std]
#![no_main]

mod aio;
mod block;
mod common;
mod floor;
mod irq;
mod kernel;
mod oncpu;
mod sched;
mod scope;
mod stacks;
mod sys;
mod tracepoints;
mod uprobe;
mod uring;

// With `user` on (feature unification in a workspace-wide host check), aya links std, which has its own.
#[cfg(not(any(test, feature = "user")))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    loop {}
}

#[unsafe(link_section = "license")]
#[unsafe(no_mangle)]
static LICENSE: [u8; 4] = *b"GPL\0";
