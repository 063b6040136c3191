//! The floor under the `sys` layer's cost: programs on its two hooks, attached as it attaches them
//! (sys_enter as a BTF tracepoint, or a raw one where that is refused; sys_exit as a raw
//! tracepoint), that only return. dc-trace never attaches them; `dc-trace-bench dd` measures what
//! they add to each call, the part of the sys layer's cost that no program body can remove.

use aya_ebpf::{
    macros::{btf_tracepoint, raw_tracepoint},
    programs::{BtfTracePointContext, RawTracePointContext},
};

/// sys_enter as a BTF tracepoint, as the sys layer's `sys_enter_btf`.
#[btf_tracepoint(function = "sys_enter")]
pub fn floor_enter(_ctx: BtfTracePointContext) -> i32 {
    0
}

/// A raw tracepoint: sys_exit, and sys_enter where the BTF one is refused.
#[raw_tracepoint]
pub fn floor_return(_ctx: RawTracePointContext) -> i32 {
    0
}
