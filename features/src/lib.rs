//! dc-features: per-syscall kernel-time feature matrix.
