//! dc-model's integration tests, in one binary (one link instead of one per file): a module per topic.
//! One module runs alone with `cargo test --release -p models --test it MODULE::`.

mod common;

mod bad_input;
mod case_read_simple;
mod cli;
mod correlation;
mod forest_rules;
mod limits;
mod memory;
mod progress;
mod reference;
mod rewritten_matrix;
mod stack_and_stopping;
