//! dc-features' integration tests, in one binary (one link instead of one per file): a module per topic.
//! One module runs alone with `cargo test --release -p features --test it MODULE::`.

mod common;

mod calls;
mod case_read_simple;
mod cli;
mod dftracer;
mod errors;
mod integrity;
mod memory;
mod no_call;
mod output_files;
mod parallel;
mod properties;
mod scoping;
mod thread_names;
