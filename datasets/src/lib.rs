//! The datacrumbs trace format: event model, reader, writer and foreign dialects.

pub mod event;

pub use event::{ArgValue, Args, Event, Hash, Phase};
