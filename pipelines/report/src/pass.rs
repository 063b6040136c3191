//! What the readers of one pass over traces share: one hash → name table, and each kind of event (layer, name,
//! phase) classified the first time it is met. The summary ([`crate::summary`]) and the job scan
//! (`crate::diagnose::scan`) read the same events; with this they neither intern every event's names twice nor
//! compare its strings again for what its kind already tells.

use std::collections::HashMap;

use compact_str::CompactString;
use datasets::limits::LIMITS_EVENT;
use datasets::strings::{StringKind, StringTable};
use datasets::vocab::Direction;
use datasets::vocab::layer::{BLOCK, CALL_LAYERS, SCHED};
use datasets::vocab::op::direction;
use datasets::{Event, Phase};
use features::row::SizeRule;
use features::syscall::op_name;

/// The prefix of the block layer's requests' time on the device (`block_device_read`, ...).
pub const DEVICE_PREFIX: &str = "block_device";
/// The `cat` of Darshan's counter records.
pub const DARSHAN: &str = "darshan";
/// The prefix of the sched layer's off-CPU intervals (`offcpu_S`, `offcpu_D@...`).
const OFFCPU_PREFIX: &str = "offcpu_";

/// What the job scan reads of an event, by its kind.
#[derive(Clone, Debug, PartialEq)]
pub enum Role {
    /// dc-trace's limits, a metadata event ([`LIMITS_EVENT`]).
    Limits,
    /// A Darshan counter record.
    Darshan,
    /// An off-CPU interval of the sched layer: its state's first letter (`o` when it has none), and
    /// `offcpu_{state}` without its `@...` detail.
    OffCpu { letter: char, state: CompactString },
    /// A block request's time on the device.
    Device,
    /// A read or write of a call layer, whose offset and length the scan reads.
    Data(Direction),
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
    pub role: Role,
}

impl Kind {
    fn of(e: &Event) -> Kind {
        let op = op_name(&e.name);
        let call = CALL_LAYERS.contains(&e.cat.as_str());
        let direction = direction(op);
        let role = match e.ph {
            Phase::Metadata if e.name == LIMITS_EVENT => Role::Limits,
            Phase::Counter if e.cat == DARSHAN => Role::Darshan,
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
            role,
        }
    }

    fn is(&self, e: &Event) -> bool {
        self.ph == e.ph && self.name == e.name && self.cat == e.cat
    }
}

/// Every kind met, each with its index, in the order first met.
#[derive(Default)]
pub struct Kinds {
    /// Event name → its kinds, as indices into `kinds`.
    by_name: HashMap<CompactString, Vec<u32>, foldhash::fast::RandomState>,
    kinds: Vec<Kind>,
    /// The kind of the event before: runs of one kind skip the lookup.
    last: Option<u32>,
}

impl Kinds {
    /// The index of `e`'s kind, added the first time.
    pub fn id(&mut self, e: &Event) -> u32 {
        if let Some(k) = self.last
            && self.kinds[k as usize].is(e)
        {
            return k;
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
        self.last = Some(k);
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
        assert_eq!(role_of("sys", "openat", Phase::Complete), Role::Span);
        let hh = kinds.id(&event("", "HH", Phase::Metadata));
        assert!(kinds.get(hh).names_host && !kinds.get(read).names_host);
    }
}
