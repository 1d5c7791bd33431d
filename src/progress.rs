//! Progress reporting as a capability the front ends provide.
//!
//! Domain code reports phases and counts through [`Progress`]; the CLI draws
//! them as bars on a terminal, every other front end passes [`NoProgress`].

/// Receives progress from long operations (fetching, indexing).
pub trait Progress: Send + Sync {
    /// A new phase starts; `total` is the number of steps when known.
    fn start(&self, phase: &str, total: Option<u64>);
    /// `n` more steps of the current phase are done.
    fn advance(&self, n: u64);
    /// The current phase is over.
    fn finish(&self);
}

/// Reports nothing.
pub struct NoProgress;

impl Progress for NoProgress {
    fn start(&self, _phase: &str, _total: Option<u64>) {}
    fn advance(&self, _n: u64) {}
    fn finish(&self) {}
}
