//! Progress bars on stderr, used only when stderr is a terminal and `--json` is off.

use std::sync::Mutex;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

use crate::progress::Progress;

/// Draws each phase as a spinner (unknown length) or a bar (known length).
#[derive(Default)]
pub struct TerminalProgress {
    bar: Mutex<Option<ProgressBar>>,
}

impl Progress for TerminalProgress {
    fn start(&self, phase: &str, total: Option<u64>) {
        let bar = match total {
            Some(len) => ProgressBar::new(len).with_style(
                ProgressStyle::with_template("{msg:>12} [{bar:30}] {pos}/{len} ({elapsed})")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            ),
            None => {
                let spinner = ProgressBar::new_spinner();
                spinner.enable_steady_tick(Duration::from_millis(100));
                spinner
            }
        };
        bar.set_message(phase.to_string());
        if let Ok(mut current) = self.bar.lock()
            && let Some(previous) = current.replace(bar)
        {
            previous.finish_and_clear();
        }
    }

    fn advance(&self, n: u64) {
        if let Ok(current) = self.bar.lock()
            && let Some(bar) = current.as_ref()
        {
            bar.inc(n);
        }
    }

    fn finish(&self) {
        if let Ok(mut current) = self.bar.lock()
            && let Some(bar) = current.take()
        {
            bar.finish_and_clear();
        }
    }
}
