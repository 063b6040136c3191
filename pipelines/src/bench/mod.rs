//! The built-in I/O benchmark ([`iobench`]) that the default pipeline sweeps, and the Cambridge L41 lab's command
//! line over it ([`l41`], behind the `cli` feature).

pub mod iobench;
#[cfg(feature = "cli")]
pub mod l41;
