//! dc-model: which layers and functions explain I/O bandwidth.
