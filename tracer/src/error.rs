//! The tracer's error type. What the user asked to trace (a process, a cgroup, every process, a uprobe target) is a
//! [`Target`], named in words, never as a command-line flag: the binary names the flag that gave it and adds the
//! [`Remedy`]'s hint. Every other failure keeps its cause as its `source()`, so the chain reads as
//! ``what was being done: why``.

use std::error::Error as StdError;
use std::fmt;
use std::io;
use std::path::PathBuf;

/// A signal that arrived before tracing began (see `signals`).
#[derive(Debug, thiserror::Error)]
#[error("interrupted by {} before tracing began; nothing was written", name(*.signal))]
pub struct Interrupted {
    pub signal: i32,
}

impl Interrupted {
    /// What a shell reports for a process the signal ended.
    pub fn exit_code(&self) -> u8 {
        (128 + self.signal).clamp(0, 255) as u8
    }
}

fn name(signal: i32) -> &'static str {
    match signal {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        _ => "a signal",
    }
}

/// A spool's `push` after its writer stopped.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("the writer thread stopped")]
pub struct Abandoned;

/// What the user named for the trace to follow, as the error about it says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Pid(u32),
    Cgroup(PathBuf),
    /// Every process on the machine.
    All,
    /// A uprobe target, `PATH:REGEX`.
    Uprobe(String),
    /// A pattern of the probe discovery.
    Discover(String),
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Target::Pid(pid) => write!(f, "process {pid}"),
            Target::Cgroup(dir) => write!(f, "cgroup {}", dir.display()),
            Target::All => write!(f, "every process"),
            Target::Uprobe(t) => write!(f, "uprobe {t}"),
            Target::Discover(p) => write!(f, "discovery pattern `{p}`"),
        }
    }
}

/// What gets past an error, as a binary says it in its own terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Remedy {
    /// Trace on without the uprobe targets that cannot attach.
    SkipMissingUprobes,
    /// Trace the process that leads this thread's group instead.
    TraceProcess(u32),
    /// Without CAP_SYS_ADMIN: trace a command, or processes or a cgroup of one's own.
    TraceOwn,
    /// Name exactly one thing to trace.
    OneScope,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A failure about something the user named: the target, then why.
    #[error("{target}")]
    Target {
        target: Target,
        #[source]
        source: Box<Error>,
    },
    #[error("not a process (process ids start at 1)")]
    PidZero,
    #[error("no such process")]
    NoProcess,
    #[error("a thread of process {tgid}, not a process")]
    Thread { tgid: u32 },
    #[error("it belongs to uid {owner}, not to you (uid {uid}); {ONLY_OWN}")]
    NotYours { owner: u32, uid: u32 },
    #[error("{ONLY_OWN}")]
    OnlyOwn,
    #[error("not a cgroup v2 directory (no cgroup.procs)")]
    NotCgroup2,
    /// A uprobe target that cannot be read or has no function the regex matches.
    #[error("{why}")]
    UprobeMissing { why: String },
    #[error("nothing to trace")]
    NoScope,
    #[error(
        "a tracing session traces one command a run, and this run names processes, a cgroup or every process"
    )]
    SessionScope,
    #[error("a run of this tracing session failed, so it traces no more; start another")]
    SessionFailed,
    #[error(
        "dc-trace needs {} to trace (missing: {}); run it as root, or grant them to the binary once: {}",
        needed.join(", "),
        missing.join(", "),
        setcap
    )]
    MissingCaps {
        needed: Vec<&'static str>,
        missing: Vec<&'static str>,
        /// The command that grants them.
        setcap: &'static str,
    },
    /// The command to trace names no program this process can run.
    #[error("starting `{command}`: `{program}` is not an executable file or in PATH")]
    NotExecutable { command: String, program: String },
    #[error("more than one scope to trace: a command, processes, a cgroup or every process")]
    ManyScopes,
    #[error(transparent)]
    Interrupted(#[from] Interrupted),
    #[error(transparent)]
    Output(#[from] datasets::Error),
    #[error(transparent)]
    Input(#[from] datasets::InputError),
    /// What was being done when a lower error happened.
    #[error("{context}")]
    Context {
        context: String,
        #[source]
        source: Box<Error>,
    },
    /// The kernel, the eBPF object or the system refused something; the message says what.
    #[error("{0}")]
    Failed(String),
    #[error(transparent)]
    Io(#[from] io::Error),
    #[error(transparent)]
    Ebpf(#[from] aya::EbpfError),
    #[error(transparent)]
    Program(#[from] aya::programs::ProgramError),
    #[error(transparent)]
    Map(#[from] aya::maps::MapError),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error(transparent)]
    BtfObject(#[from] aya::BtfError),
    #[error(transparent)]
    Object(#[from] aya_obj::ParseError),
    #[error(transparent)]
    Elf(#[from] object::Error),
    #[error(transparent)]
    Regex(#[from] regex::Error),
    #[error(transparent)]
    Number(#[from] std::num::ParseIntError),
    #[error(transparent)]
    Range(#[from] std::num::TryFromIntError),
    #[error(transparent)]
    Nul(#[from] std::ffi::NulError),
    #[error(transparent)]
    Relocation(#[from] aya_obj::relocation::EbpfRelocationError),
    #[error(transparent)]
    CStr(#[from] std::ffi::FromBytesUntilNulError),
    #[error(transparent)]
    Format(#[from] std::fmt::Error),
    #[error(transparent)]
    Abandoned(#[from] Abandoned),
    /// btf-rs's errors: it returns anyhow's.
    #[error(transparent)]
    Btf(#[from] anyhow::Error),
}

const ONLY_OWN: &str = "without CAP_SYS_ADMIN, dc-trace traces only your own processes";

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// This error about `target`.
    pub fn about(self, target: Target) -> Error {
        Error::Target {
            target,
            source: Box::new(self),
        }
    }

    /// This error, with what was being done when it happened.
    pub fn context(self, context: impl fmt::Display) -> Error {
        Error::Context {
            context: context.to_string(),
            source: Box::new(self),
        }
    }

    /// This error and the tracer errors among its sources, outermost first.
    pub fn links<'a>(&'a self) -> impl Iterator<Item = &'a Error> + 'a {
        let mut next: Option<&'a (dyn StdError + 'static)> = Some(self);
        std::iter::from_fn(move || {
            let e = next?;
            next = e.source();
            Some(e)
        })
        .filter_map(|e| {
            e.downcast_ref::<Error>()
                .or_else(|| e.downcast_ref::<Box<Error>>().map(|b| &**b))
        })
    }

    /// The signal that ended the collection before tracing began, if that is what this is.
    pub fn interrupted(&self) -> Option<&Interrupted> {
        self.links().find_map(|e| match e {
            Error::Interrupted(i) => Some(i),
            _ => None,
        })
    }

    /// What gets past this error, if anything does.
    pub fn remedy(&self) -> Option<Remedy> {
        self.links().find_map(|e| match e {
            Error::UprobeMissing { .. } => Some(Remedy::SkipMissingUprobes),
            Error::Thread { tgid } => Some(Remedy::TraceProcess(*tgid)),
            Error::OnlyOwn => Some(Remedy::TraceOwn),
            Error::NoScope | Error::ManyScopes => Some(Remedy::OneScope),
            _ => None,
        })
    }

    /// The datasets error this one holds, for its own remedy.
    pub fn output(&self) -> Option<&datasets::Error> {
        self.links().find_map(|e| match e {
            Error::Output(o) => Some(o),
            _ => None,
        })
    }
}

/// What was being done, added to an error (or to a missing value) as anyhow's `Context` adds it.
pub trait Context<T> {
    fn context(self, context: impl fmt::Display) -> Result<T>;
    fn with_context<C: fmt::Display>(self, context: impl FnOnce() -> C) -> Result<T>;
}

impl<T, E: Into<Error>> Context<T> for std::result::Result<T, E> {
    fn context(self, context: impl fmt::Display) -> Result<T> {
        self.map_err(|e| Error::Context {
            context: context.to_string(),
            source: Box::new(e.into()),
        })
    }

    fn with_context<C: fmt::Display>(self, context: impl FnOnce() -> C) -> Result<T> {
        self.map_err(|e| Error::Context {
            context: context().to_string(),
            source: Box::new(e.into()),
        })
    }
}

impl<T> Context<T> for Option<T> {
    fn context(self, context: impl fmt::Display) -> Result<T> {
        self.ok_or_else(|| Error::Failed(context.to_string()))
    }

    fn with_context<C: fmt::Display>(self, context: impl FnOnce() -> C) -> Result<T> {
        self.ok_or_else(|| Error::Failed(context().to_string()))
    }
}

/// An [`Error::Failed`] with a formatted message.
macro_rules! failed {
    ($($arg:tt)*) => {
        $crate::error::Error::Failed(format!($($arg)*))
    };
}

/// Returns an [`Error::Failed`] with a formatted message.
macro_rules! bail {
    ($($arg:tt)*) => {
        return Err($crate::error::failed!($($arg)*))
    };
}

/// Returns an [`Error::Failed`] with a formatted message unless `cond` holds.
macro_rules! ensure {
    ($cond:expr, $($arg:tt)*) => {
        if !$cond {
            $crate::error::bail!($($arg)*);
        }
    };
}

pub(crate) use {bail, ensure, failed};
