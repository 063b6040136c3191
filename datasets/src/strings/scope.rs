//! The scope a name is interned under, shared by the string table ([`super::StringTable`]) and the thread names
//! ([`super::thread_names`]) without either importing the other.

/// Where a name was interned: the input file (its index among the files read together) and the
/// process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Scope {
    pub input: u32,
    pub pid: u64,
}
