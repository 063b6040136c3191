//! Stopping a long fit on Ctrl-C. The fits check one process-wide flag between boosting rounds and
//! folds and return [`ModelError::Interrupted`], so that nothing is written; [`stop_on_ctrl_c`] lets
//! SIGINT raise it.
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock};

use crate::error::{ModelError, Result};

static STOP: LazyLock<Arc<AtomicBool>> = LazyLock::new(|| Arc::new(AtomicBool::new(false)));

/// The exit status of a process stopped by SIGINT (128 + 2), as a shell reports it.
pub const EXIT_CODE: u8 = 130;

/// The flag whose raising stops every fit of this process.
pub fn flag() -> Arc<AtomicBool> {
    Arc::clone(&STOP)
}

pub fn requested() -> bool {
    STOP.load(Ordering::Relaxed)
}

pub(crate) fn check() -> Result<()> {
    if requested() {
        Err(ModelError::Interrupted)
    } else {
        Ok(())
    }
}

/// The first SIGINT raises the flag; a second one exits at once with [`EXIT_CODE`], for a step
/// that does not look at it (a random forest or a decision tree being fitted).
pub fn stop_on_ctrl_c() -> std::io::Result<()> {
    use signal_hook::consts::SIGINT;
    signal_hook::flag::register_conditional_shutdown(SIGINT, EXIT_CODE.into(), flag())?;
    signal_hook::flag::register(SIGINT, flag())?;
    Ok(())
}
