//! What the readers of one pass over traces share: one hash → name table, and each kind of event (layer, name,
//! phase) classified the first time it is met. The summary ([`crate::summary`]) and the job scan
//! (`crate::diagnose::scan`) read the same events; with this they neither intern every event's names twice nor
//! compare its strings again for what its kind already tells.

use std::collections::HashMap;

use compact_str::CompactString;
use datasets::limits::LIMITS_EVENT;
use datasets::strings::{StringKind, StringTable};
use datasets::vocab::Direction;
use datasets::vocab::layer::{BLOCK, CALL_LAYERS, MM, PAGE_CACHE, SCHED};
use datasets::vocab::op::direction;
use datasets::write::{CLOSING_EVENT, HEADER_EVENT};
use datasets::{Event, Phase};
use features::row::SizeRule;
use features::syscall::op_name;

/// The prefix of the block layer's requests' time on the device (`block_device_read`, ...).
pub const DEVICE_PREFIX: &str = "block_device";
/// The `cat` of Darshan's counter records.
pub const DARSHAN: &str = "darshan";
/// The page cache layer's page added to a file's cache (read in, or written), and page let go (evicted, truncated).
pub const PAGE_ADDED: &str = "mm_filemap_add_to_page_cache";
const PAGE_DELETED: &str = "mm_filemap_delete_from_page_cache";
/// The `mm` layer's point at a page fault in user code (`exceptions:page_fault_user`).
const PAGE_FAULT_USER: &str = "page_fault_user";
/// The prefix of the sched layer's off-CPU intervals (`offcpu_S`, `offcpu_D@...`).
const OFFCPU_PREFIX: &str = "offcpu_";

/// What the job scan reads of an event, by its kind.
#[derive(Clone, Debug, PartialEq)]
pub enum Role {
    /// dc-trace's limits, a metadata event ([`LIMITS_EVENT`]).
    Limits,
    /// dc-trace's closing record ([`CLOSING_EVENT`]): what the run recorded and lost.
    Closing,
    /// A Darshan counter record.
    Darshan,
    /// An off-CPU interval of the sched layer: its state's first letter (`o` when it has none), and
    /// `offcpu_{state}` without its `@...` detail.
    OffCpu { letter: char, state: CompactString },
    /// A block request's time on the device.
    Device,
    /// A read or write of a call layer, whose offset and length the scan reads.
    Data(Direction),
    /// A page of a file added to the page cache (`true`) or deleted from it: `args.s_dev`, `i_ino` and `index`.
    Page { added: bool },
    /// A page fault in the thread's user code, a point.
    Fault,
    /// Any other complete event: its interval, for its thread's life.
    Span,
    /// Nothing.
    Other,
}

/// One kind of event and what its layer, name and phase tell.
#[derive(Clone, Debug)]
pub struct Kind {
    pub cat: CompactString,
    pub name: CompactString,
    pub ph: Phase,
    /// The operation its name is ([`op_name`]).
    pub op: CompactString,
    /// Whether its layer is a call layer ([`CALL_LAYERS`]).
    pub call: bool,
    pub direction: Option<Direction>,
    pub size: SizeRule,
    /// Whether it is the metadata that interns a host's name (`HH`).
    pub names_host: bool,
    /// Whether it is dc-trace's header ([`HEADER_EVENT`]), whose `layers` the job scan reads.
    pub header: bool,
    pub role: Role,
}

impl Kind {
    fn of(e: &Event) -> Kind {
        let op = op_name(&e.name);
        let call = CALL_LAYERS.contains(&e.cat.as_str());
        let direction = direction(op);
        let role = match e.ph {
            Phase::Metadata if e.name == LIMITS_EVENT => Role::Limits,
            Phase::Metadata if e.name == CLOSING_EVENT => Role::Closing,
            Phase::Counter if e.cat == DARSHAN => Role::Darshan,
            _ if e.cat == PAGE_CACHE && (e.name == PAGE_ADDED || e.name == PAGE_DELETED) => {
                Role::Page {
                    added: e.name == PAGE_ADDED,
                }
            }
            _ if e.cat == MM && e.name == PAGE_FAULT_USER => Role::Fault,
            Phase::Complete => match e.name.strip_prefix(OFFCPU_PREFIX) {
                Some(state) if e.cat == SCHED => Role::OffCpu {
                    letter: state.chars().next().unwrap_or('o'),
                    state: state.split('@').next().unwrap_or(state).into(),
                },
                _ if e.cat == BLOCK && e.name.starts_with(DEVICE_PREFIX) => Role::Device,
                _ => match direction {
                    Some(d) if call => Role::Data(d),
                    _ => Role::Span,
                },
            },
            _ => Role::Other,
        };
        Kind {
            cat: e.cat.clone(),
            name: e.name.clone(),
            ph: e.ph,
            op: op.into(),
            call,
            direction,
            size: SizeRule::of(op),
            names_host: e.ph == Phase::Metadata
                && StringKind::from_event_name(&e.name) == Some(StringKind::Host),
            header: e.name == HEADER_EVENT,
            role,
        }
    }

    fn is(&self, e: &Event) -> bool {
        self.ph == e.ph && self.name == e.name && self.cat == e.cat
    }
}

/// Slots of [`Kinds`]' cache: a trace has a few hundred kinds at most.
const CACHE_SLOTS: usize = 1 << 10;
/// A cache slot that holds no kind.
const EMPTY: u32 = u32::MAX;

/// Every kind met, each with its index, in the order first met.
pub struct Kinds {
    /// Event name → its kinds, as indices into `kinds`.
    by_name: HashMap<CompactString, Vec<u32>, foldhash::fast::RandomState>,
    kinds: Vec<Kind>,
    /// A kind per slot of [`slot`]: most events find theirs there with one comparison, without hashing their name.
    cache: Box<[u32]>,
}

impl Default for Kinds {
    fn default() -> Self {
        Kinds {
            by_name: HashMap::default(),
            kinds: Vec::new(),
            cache: vec![EMPTY; CACHE_SLOTS].into_boxed_slice(),
        }
    }
}

/// The first and the last 8 bytes of `b` (all of it, zero-padded, when it is shorter), as numbers.
fn ends(b: &[u8]) -> (u64, u64) {
    if let (Some(head), Some(tail)) = (b.first_chunk::<8>(), b.last_chunk::<8>()) {
        return (u64::from_le_bytes(*head), u64::from_le_bytes(*tail));
    }
    let w = b.iter().rev().fold(0u64, |w, &c| (w << 8) | u64::from(c));
    (w, w)
}

/// `e`'s slot in [`Kinds`]' cache, from its phase, the lengths and ends of its layer and name: a few instructions
/// where hashing a name reads all of it. Two kinds may share a slot; the later one met then takes it.
fn slot(e: &Event) -> usize {
    let (name, cat) = (e.name.as_bytes(), e.cat.as_bytes());
    let (head, tail) = ends(name);
    let (cat_head, _) = ends(cat);
    let x = head
        ^ tail.rotate_left(21)
        ^ cat_head.rotate_left(42)
        ^ ((name.len() as u64) << 48)
        ^ ((cat.len() as u64) << 40)
        ^ u64::from(e.ph.as_byte());
    (x.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - CACHE_SLOTS.trailing_zeros())) as usize
}

impl Kinds {
    /// The index of `e`'s kind, added the first time.
    pub fn id(&mut self, e: &Event) -> u32 {
        let at = slot(e);
        let cached = self.cache[at];
        if cached != EMPTY && self.kinds[cached as usize].is(e) {
            return cached;
        }
        let kinds = &self.kinds;
        let found = self.by_name.get(e.name.as_str()).and_then(|ks| {
            ks.iter().copied().find(|&k| {
                let kind = &kinds[k as usize];
                kind.ph == e.ph && kind.cat == e.cat
            })
        });
        let k = found.unwrap_or_else(|| {
            self.kinds.push(Kind::of(e));
            let k = (self.kinds.len() - 1) as u32;
            self.by_name.entry(e.name.clone()).or_default().push(k);
            k
        });
        self.cache[at] = k;
        k
    }

    pub fn get(&self, id: u32) -> &Kind {
        &self.kinds[id as usize]
    }
}

/// The state of one pass that its readers share: the names interned so far and the kinds met.
#[derive(Default)]
pub struct Pass {
    pub strings: StringTable,
    pub kinds: Kinds,
}

/// One event of a pass, as its readers take it: with its input's index (the scope its hashes resolve in), its kind,
/// and the names interned up to it, its own included.
pub struct Seen<'a> {
    pub input: u32,
    pub e: &'a Event,
    pub id: u32,
    pub kind: &'a Kind,
    pub strings: &'a StringTable,
}

impl Pass {
    /// Takes the names `e` interns and its kind, for the readers to take it.
    pub fn see<'a>(&'a mut self, input: u32, e: &'a Event) -> Seen<'a> {
        self.strings.insert_event_in(input, e);
        let id = self.kinds.id(e);
        Seen {
            input,
            e,
            id,
            kind: self.kinds.get(id),
            strings: &self.strings,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(cat: &str, name: &str, ph: Phase) -> Event {
        Event::new(name, cat, ph)
    }

    /// More kinds than the cache has slots, so that some share one: each event still gets its own kind, the one
    /// whose layer, name and phase are its, and the same index every time.
    #[test]
    fn kinds_that_share_a_cache_slot_keep_their_own_index() {
        let events: Vec<Event> = (0..3 * CACHE_SLOTS)
            .map(|i| {
                let ph = [Phase::Complete, Phase::Instant][i % 2];
                event(
                    ["sys", "vfs", "os_cache"][i % 3],
                    &format!("f{}", i / 6),
                    ph,
                )
            })
            .collect();
        let mut kinds = Kinds::default();
        let first: Vec<u32> = events.iter().map(|e| kinds.id(e)).collect();
        for (e, &k) in events.iter().zip(&first).rev() {
            assert_eq!(kinds.id(e), k);
            let kind = kinds.get(k);
            assert_eq!((&kind.cat, &kind.name, kind.ph), (&e.cat, &e.name, e.ph));
        }
        let distinct: std::collections::HashSet<_> = first.iter().collect();
        assert_eq!(distinct.len(), events.len());
    }

    #[test]
    fn a_kind_is_its_layer_name_and_phase_and_tells_the_scan_its_role() {
        let mut kinds = Kinds::default();
        let read = kinds.id(&event("sys", "read", Phase::Complete));
        let vfs_read = kinds.id(&event("vfs", "read", Phase::Complete));
        let read_instant = kinds.id(&event("sys", "read", Phase::Instant));
        let offcpu = kinds.id(&event(SCHED, "offcpu_D@io_schedule", Phase::Complete));
        assert_eq!(kinds.id(&event("sys", "read", Phase::Complete)), read);
        assert_eq!(
            [read, vfs_read, read_instant, offcpu]
                .iter()
                .collect::<std::collections::HashSet<_>>()
                .len(),
            4
        );
        let role = |id| kinds.get(id).role.clone();
        assert_eq!(role(read), Role::Data(Direction::Read));
        assert_eq!(kinds.get(vfs_read).call, CALL_LAYERS.contains(&"vfs"));
        assert_eq!(role(read_instant), Role::Other);
        assert_eq!(
            role(offcpu),
            Role::OffCpu {
                letter: 'D',
                state: "D".into()
            }
        );
        let mut role_of = |cat: &str, name: &str, ph| {
            let id = kinds.id(&event(cat, name, ph));
            kinds.get(id).role.clone()
        };
        assert_eq!(
            role_of(SCHED, "offcpu_", Phase::Complete),
            Role::OffCpu {
                letter: 'o',
                state: "".into()
            }
        );
        assert_eq!(
            role_of(BLOCK, "block_device_read", Phase::Complete),
            Role::Device
        );
        assert_eq!(
            role_of(BLOCK, "block_rq_issue", Phase::Complete),
            Role::Span
        );
        assert_eq!(role_of(DARSHAN, "POSIX", Phase::Counter), Role::Darshan);
        assert_eq!(role_of("dc", LIMITS_EVENT, Phase::Metadata), Role::Limits);
        assert_eq!(
            role_of("datacrumbs", CLOSING_EVENT, Phase::Metadata),
            Role::Closing
        );
        assert_eq!(role_of("sys", "openat", Phase::Complete), Role::Span);
        let hh = kinds.id(&event("", "HH", Phase::Metadata));
        assert!(kinds.get(hh).names_host && !kinds.get(read).names_host);
        let header = kinds.id(&event("", HEADER_EVENT, Phase::Metadata));
        assert!(kinds.get(header).header && !kinds.get(hh).header);
        assert_eq!(kinds.get(header).role, Role::Other);
    }
}
