//! Cooperative cancellation. A front end raises a call's flag when the client
//! cancels or the call's time limit passes; long operations check it at points
//! where stopping leaves nothing half-written (before a catalog transaction,
//! between the file changes of an install, which the journal then undoes) and
//! fail with `AAM_CANCELLED`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{Error, ErrorCode, Result};

/// One call's cancellation flag (clones share it).
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// A flag not raised.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks the call to stop.
    pub fn raise(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether the call was asked to stop.
    pub fn is_raised(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    /// The flag itself, for code that polls it (gix's fetch).
    pub fn flag(&self) -> &AtomicBool {
        &self.0
    }

    /// Sleeps for `duration`, waking early once the flag is raised.
    pub fn sleep(&self, duration: std::time::Duration) {
        let until = std::time::Instant::now() + duration;
        while !self.is_raised() {
            let left = until.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return;
            }
            std::thread::sleep(left.min(std::time::Duration::from_millis(20)));
        }
    }

    /// `AAM_CANCELLED` once the flag is raised.
    pub fn check(&self) -> Result<()> {
        if self.is_raised() {
            return Err(cancelled());
        }
        Ok(())
    }
}

/// The error of a cancelled call.
pub fn cancelled() -> Error {
    Error::new(
        ErrorCode::Cancelled,
        "the call was cancelled; nothing it started was kept",
    )
    .with_hint("run it again when you want it done")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_the_flag() {
        let cancel = Cancel::new();
        let seen = cancel.clone();
        assert!(seen.check().is_ok());
        cancel.raise();
        assert_eq!(seen.check().unwrap_err().code(), ErrorCode::Cancelled);
    }
}
