//! The project's vocabulary, defined once for every crate: the layers (canonical names, other tools' names, the
//! exclusive-time order, the system call and call layers), the operations and their classes, and what a collection
//! was (mode, scope, probe mechanisms), and the interrupt contexts a waking ran in. A new operation is one line in [`op::OPS`]; a new layer one line in
//! [`layer::LAYERS`] (beside its name's constant, when code names it).

pub mod collection;
pub mod layer;
pub mod op;
pub mod wake;

pub use collection::{Mechanism, Mechanisms, ModeKind, TraceScope};
pub use op::Direction;
pub use wake::WokenIn;
