//! An argument added to an event a foreign format gave, for every format's reader: it imports none of them.

use compact_str::CompactString;

use crate::{ArgValue, Event};

/// Appends an argument the typed fields do not hold.
pub(super) fn put(e: &mut Event, key: &str, v: ArgValue) {
    e.args.other.push((CompactString::from(key), v));
}
