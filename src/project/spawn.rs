//! Starting a project's watcher in the background, as git starts its fsmonitor
//! daemon: a command that had to check a large project's files itself (no
//! process answered for it, see [`super::ask`]) leaves `aam watch` running
//! behind it, so the next commands ask that process instead of checking
//! every recorded file again.
//!
//! "Large" is a number of recorded folders and files checked per call (the
//! `project.auto_watch` setting, overridden by `AAM_PROJECT_AUTO_WATCH`; `0`
//! turns it off). The watcher is started at most once per
//! [`RETRY_AFTER`] for a project (a marker file in `run/` holds its process id
//! and the time it was started), so a watcher that cannot watch (the inotify
//! limit, a network file system) is not started again on every call. It runs
//! detached from the command (its own process group, no standard input or
//! output, its log in `run/`) and stops by itself after [`IDLE_TIMEOUT`] with
//! no command asking, or as soon as its socket is removed.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::ask;
use crate::config::AamHome;
use crate::error::{Error, Result};

/// The environment variable that overrides `project.auto_watch`.
pub const AUTO_WATCH_ENV: &str = "AAM_PROJECT_AUTO_WATCH";

/// Recorded folders and files per check from which a command starts a watcher
/// when `project.auto_watch` is unset (a check of this many costs tens of
/// milliseconds; a watched project answers in a few).
pub const DEFAULT_AUTO_WATCH: u64 = 20_000;

/// How long a watcher started by a command waits for a question before it stops.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// The shortest time between two starts of a watcher for one project.
pub const RETRY_AFTER: Duration = Duration::from_secs(10 * 60);

/// From how many checked folders and files a command starts a watcher: the
/// environment's value, else the `setting`, else [`DEFAULT_AUTO_WATCH`];
/// `None` when that is `0` (off). An environment value that is no whole
/// number is reported and ignored.
pub fn threshold(setting: Option<u64>) -> Option<u64> {
    let from_env = std::env::var(AUTO_WATCH_ENV)
        .ok()
        .and_then(|v| match v.trim().parse::<u64>() {
            Ok(n) => Some(n),
            Err(_) => {
                tracing::warn!("`{AUTO_WATCH_ENV}={v}` is not a whole number of entries; ignoring it");
                None
            }
        });
    Some(from_env.or(setting).unwrap_or(DEFAULT_AUTO_WATCH)).filter(|&n| n > 0)
}

/// Why a command did not start a watcher, or the process it started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Started {
    /// A watcher was started: its process id.
    Watcher(u32),
    /// One was started for this project less than [`RETRY_AFTER`] ago.
    Recently,
}

/// Starts `exe watch --root ROOT` for the project keyed `key` in the
/// background, unless one was started for it within [`RETRY_AFTER`].
pub fn start(home: &AamHome, exe: &Path, root: &Path, key: &str) -> Result<Started> {
    let marker = ask::run_file(home, key, "started");
    let recent = std::fs::metadata(&marker)
        .and_then(|m| m.modified())
        .is_ok_and(|at| SystemTime::now().duration_since(at).is_ok_and(|age| age < RETRY_AFTER));
    if recent {
        return Ok(Started::Recently);
    }
    ask::make_run_dir(&home.run_dir())?;
    let log_path = ask::run_file(home, key, "log");
    let log = create_owned(&log_path)?;
    let mut command = std::process::Command::new(exe);
    command
        .arg("watch")
        .arg("--root")
        .arg(root)
        .arg("--idle-timeout")
        .arg(IDLE_TIMEOUT.as_secs().to_string())
        .env(crate::config::HOME_ENV, home.root())
        .current_dir(root)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(log);
    detach(&mut command);
    let spawned = command.spawn();
    // Written whether or not the start worked, so a failing one is not
    // retried on every call; a plain write (it only holds starts back).
    let pid = spawned
        .as_ref()
        .map_or(String::new(), |child| format!("{}\n", child.id()));
    create_owned(&marker)?
        .write_all(pid.as_bytes())
        .map_err(|e| Error::io("write", &marker, e))?;
    let pid = spawned.map_err(|e| Error::io("start", &PathBuf::from(exe), e))?.id();
    tracing::debug!("started a watcher (process {pid}) for the project `{key}`");
    Ok(Started::Watcher(pid))
}

/// Creates (or empties) the file at `path` for its owner only, refusing to
/// follow a link planted at its place.
fn create_owned(path: &Path) -> Result<std::fs::File> {
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    rustix::fs::open(path, flags, Mode::from_raw_mode(0o600))
        .map(std::fs::File::from)
        .map_err(|e| Error::io("write", path, e.into()))
}

/// Puts the watcher in a process group of its own, so the signals a terminal
/// sends the command (Ctrl-C) do not reach it.
#[cfg(unix)]
fn detach(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    command.process_group(0);
}

#[cfg(not(unix))]
fn detach(_command: &mut std::process::Command) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_marker_holds_back_a_second_start_and_names_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let home = AamHome::at(dir.path().join("home"));
        // `true` stands in for aam: it accepts the arguments and exits.
        let exe = Path::new("/bin/true");
        let Started::Watcher(pid) = start(&home, exe, dir.path(), "/p").unwrap() else {
            panic!("the first start runs the watcher");
        };
        let marker = ask::run_file(&home, "/p", "started");
        assert_eq!(std::fs::read_to_string(&marker).unwrap(), format!("{pid}\n"));
        assert_eq!(start(&home, exe, dir.path(), "/p").unwrap(), Started::Recently);
        assert!(
            matches!(start(&home, exe, dir.path(), "/q").unwrap(), Started::Watcher(_)),
            "another project has its own marker"
        );
        let old = SystemTime::now() - RETRY_AFTER - Duration::from_secs(1);
        std::fs::File::options()
            .write(true)
            .open(&marker)
            .unwrap()
            .set_modified(old)
            .unwrap();
        assert!(
            matches!(start(&home, exe, dir.path(), "/p").unwrap(), Started::Watcher(_)),
            "an old marker lets a new watcher start"
        );
    }

    #[test]
    fn a_link_planted_at_the_log_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let home = AamHome::at(dir.path().join("home"));
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        ask::make_run_dir(&home.run_dir()).unwrap();
        std::os::unix::fs::symlink(&victim, ask::run_file(&home, "/p", "log")).unwrap();
        assert!(start(&home, Path::new("/bin/true"), dir.path(), "/p").is_err());
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
    }
}
