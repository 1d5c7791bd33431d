//! `notifications/progress` for a tool call whose request carries a
//! `progressToken`: the call's [`Progress`] (what long operations report,
//! see [`crate::progress`]) becomes notifications to that client.
//!
//! `progress` counts every step, phase start and phase end so far, so it
//! grows with every notification; `total`
//! is set while the current phase knows its size; `message` names the phase.
//! Steps are sent at most every 100 ms; phase starts and ends always.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::{Peer, RoleServer};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::progress::Progress;

/// Least time between two step notifications.
const EVERY: Duration = Duration::from_millis(100);

#[derive(Debug)]
struct State {
    done: u64,
    phase: Option<String>,
    /// `done` when the phase started, and its size, when known.
    phase_total: Option<(u64, u64)>,
    last_sent: Option<Instant>,
}

/// Reports a tool call's progress to the client that asked for it.
pub(super) struct McpProgress {
    state: Mutex<State>,
    sender: mpsc::UnboundedSender<ProgressNotificationParam>,
    token: ProgressToken,
}

impl McpProgress {
    /// Starts the task that sends notifications to `peer`; it ends (the
    /// handle completes) once every copy of the returned value is dropped and
    /// everything reported was sent.
    pub(super) fn start(peer: Peer<RoleServer>, token: ProgressToken) -> (Arc<Self>, JoinHandle<()>) {
        let (sender, mut params) = mpsc::unbounded_channel::<ProgressNotificationParam>();
        let sending = tokio::spawn(async move {
            while let Some(param) = params.recv().await {
                if peer.notify_progress(param).await.is_err() {
                    break;
                }
            }
        });
        let progress = Self {
            state: Mutex::new(State {
                done: 0,
                phase: None,
                phase_total: None,
                last_sent: None,
            }),
            sender,
            token,
        };
        (Arc::new(progress), sending)
    }

    fn send(&self, state: &mut State, force: bool) {
        let now = Instant::now();
        if !force && state.last_sent.is_some_and(|at| now.duration_since(at) < EVERY) {
            return;
        }
        state.last_sent = Some(now);
        let mut param = ProgressNotificationParam::new(self.token.clone(), state.done as f64);
        if let Some((start, total)) = state.phase_total {
            param = param.with_total((start + total).max(state.done) as f64);
        }
        if let Some(phase) = &state.phase {
            param = param.with_message(phase.clone());
        }
        let _ = self.sender.send(param);
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Progress for McpProgress {
    fn start(&self, phase: &str, total: Option<u64>) {
        let mut state = self.state();
        // Entering and leaving a phase are steps too, so every notification
        // has a larger `progress` than the last.
        state.done += 1;
        state.phase = Some(phase.to_string());
        state.phase_total = total.map(|t| (state.done, t));
        self.send(&mut state, true);
    }

    fn advance(&self, n: u64) {
        if n == 0 {
            return;
        }
        let mut state = self.state();
        state.done += n;
        self.send(&mut state, false);
    }

    fn finish(&self) {
        let mut state = self.state();
        state.done += 1;
        if let Some((start, total)) = state.phase_total.take() {
            state.done = state.done.max(start + total);
        }
        self.send(&mut state, true);
        state.phase = None;
    }
}
