//! The `irq` layer: hardirq and softirq handlers that ran on a traced thread's CPU while it was in
//! a traced system call, attributed to that thread (the task they interrupted). With the sys
//! layer off, while the thread is in scope at all. The local APIC timer's interrupt (x86's `irq_vectors`), which
//! runs expired hrtimers such as a sleep's, is a hardirq too, though no `irq_handler_entry` fires for it.

use super::layer::Layer;
use super::tracepoints::table::Table;
use tracer_ebpf::tpflag;

pub static TABLE: Table = Table {
    layer: Layer::Irq,
    sources: &[
        (
            "irq",
            &[
                "irq_handler_entry",
                "irq_handler_exit",
                "softirq_entry",
                "softirq_exit",
            ],
        ),
        ("irq_vectors", &["local_timer_entry", "local_timer_exit"]),
    ],
    pairs: &[
        ("irq_handler_entry", "irq_handler_exit", "hardirq"),
        ("local_timer_entry", "local_timer_exit", "hardirq"),
        ("softirq_entry", "softirq_exit", "softirq"),
    ],
    spans: &[],
    in_call: true,
    // The program keeps each CPU's interrupt context by these, so that a wakeup from an interrupt is not filed as
    // one by the task it interrupted.
    flags: &[
        ("irq_handler_entry", tpflag::HARDIRQ),
        ("irq_handler_exit", tpflag::HARDIRQ),
        ("local_timer_entry", tpflag::HARDIRQ | tpflag::TIMER),
        ("local_timer_exit", tpflag::HARDIRQ | tpflag::TIMER),
        ("softirq_entry", tpflag::SOFTIRQ),
        ("softirq_exit", tpflag::SOFTIRQ),
    ],
};
