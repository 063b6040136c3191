//! The trace format's integration tests, in one binary (one link instead of one per file): a module per topic.
//! One module runs alone with `cargo test --release -p datasets --test it MODULE::`. `full_disk` stays a
//! binary of its own: its tests lower the file size limit of the whole process.

mod common;

mod darshan;
mod dftracer_tools;
mod dialects;
mod errors;
mod foreign;
mod fuzz_corpus;
mod parquet;
mod salvage;
mod scoping;
mod size;
mod synth;
mod table;
mod write;
