//! The `irq` layer: hardirq and softirq handlers that ran on a traced thread's CPU while it was in
//! a traced system call, attributed to that thread (the task they interrupted). With the sys
//! layer off, while the thread is in scope at all.

use super::layer::Layer;
use super::tracepoints::table::Table;

pub static TABLE: Table = Table {
    layer: Layer::Irq,
    sources: &[(
        "irq",
        &[
            "irq_handler_entry",
            "irq_handler_exit",
            "softirq_entry",
            "softirq_exit",
        ],
    )],
    pairs: &[
        ("irq_handler_entry", "irq_handler_exit", "hardirq"),
        ("softirq_entry", "softirq_exit", "softirq"),
    ],
    spans: &[],
    in_call: true,
};
