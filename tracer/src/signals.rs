//! SIGINT and SIGTERM end a collection cleanly. Their handlers are installed before the first file
//! is created: one that arrives before tracing begins removes what was created and says so
//! ([`Interrupted`]); one that arrives later ends the trace, which is then complete.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crate::error::{Context, Result};

/// The signals that end a collection.
const STOPPING: [i32; 2] = [libc::SIGINT, libc::SIGTERM];

/// The flag the handlers set to the signal's number, once per process: the pipelines collect many
/// times in one process, and a signal asks all of them to stop.
static RECEIVED: Mutex<Option<Arc<AtomicUsize>>> = Mutex::new(None);

pub use crate::error::Interrupted;

/// Installs the handlers, once per process, and returns the flag they set.
pub fn install() -> Result<Arc<AtomicUsize>> {
    let mut received = RECEIVED.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(flag) = received.as_ref() {
        return Ok(flag.clone());
    }
    let flag = Arc::new(AtomicUsize::new(0));
    for sig in STOPPING {
        signal_hook::flag::register_usize(sig, flag.clone(), sig as usize)
            .context("installing signal handlers")?;
    }
    unblock()?;
    *received = Some(flag.clone());
    Ok(flag)
}

/// A dc-trace started with the signals blocked (a mask is inherited across exec) could never be
/// stopped by them; one already pending is taken here, by the handler.
fn unblock() -> Result<()> {
    // SAFETY: the set is initialized by sigemptyset before use, and every pointer is to a local
    // that lives across the calls.
    let rc = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in STOPPING {
            libc::sigaddset(&mut set, sig);
        }
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut())
    };
    if rc != 0 {
        return Err(std::io::Error::from_raw_os_error(rc)).context("unblocking SIGINT and SIGTERM");
    }
    Ok(())
}

/// Fails with [`Interrupted`] once a signal has arrived.
pub fn check(flag: &AtomicUsize) -> Result<(), Interrupted> {
    match flag.load(Ordering::SeqCst) {
        0 => Ok(()),
        sig => Err(Interrupted { signal: sig as i32 }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interruption_names_its_signal_and_exits_as_a_shell_reports_it() {
        let flag = AtomicUsize::new(0);
        assert!(check(&flag).is_ok());
        flag.store(libc::SIGINT as usize, Ordering::SeqCst);
        let e = check(&flag).unwrap_err();
        assert_eq!(
            e.to_string(),
            "interrupted by SIGINT before tracing began; nothing was written"
        );
        assert_eq!(e.exit_code(), 130);
    }
}
