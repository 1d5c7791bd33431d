//! Starting a project's watcher in the background, as git starts its fsmonitor
//! daemon: a command that had to check a large project's files itself (no
//! process listened for it, see [`super::ask`]) leaves `aam watch` running
//! behind it, so the next commands ask that process instead of checking
//! every recorded file again.
//!
//! "Large" is a number of recorded folders and main files checked per call
//! (the `project.auto_watch` setting, overridden by `AAM_PROJECT_AUTO_WATCH`;
//! `0` turns it off); a project whose folders would take more than half of
//! the user's inotify watches and, where fanotify is open to the user, more
//! than half of its marks gets none ([`super::watch::backend_for`]). The watcher is started at most once
//! per [`RETRY_AFTER`] for a project: the command that claims the marker
//! file `run/project-<hash>.started` (its mtime the time, its text the
//! process id), under a lock on it, starts it, so a watcher that cannot watch
//! (a network file system) or start is not started again on every call, and
//! two commands racing start one. It runs detached from the command: a
//! session of its own (no terminal signal reaches it), no standard input or
//! output, no other descriptor of the command kept open, `/` as its working
//! folder, its log in `run/`. It stops by itself after [`IDLE_TIMEOUT`] with
//! no command asking, or within a few seconds of its socket being removed, its
//! catalog file replaced, aam's executable replaced or its project folder
//! deleted. Markers and logs of watchers of any project left untouched for
//! [`KEEP_RUN_FILES`] are deleted when the next watcher starts.

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::ask;
use crate::config::AamHome;
use crate::error::{Error, ErrorCode, Result};

/// The environment variable that overrides `project.auto_watch`.
pub const AUTO_WATCH_ENV: &str = "AAM_PROJECT_AUTO_WATCH";

/// Recorded folders and main files per check from which a command starts a
/// watcher when `project.auto_watch` is unset (a check of this many costs
/// tens of milliseconds; a watched project answers in a few).
pub const DEFAULT_AUTO_WATCH: u64 = 20_000;

/// The environment variable that sets aam's log level.
const LOG_ENV: &str = "AAM_LOG";

/// How long a watcher started by a command waits for a question before it stops.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// The shortest time between two starts of a watcher for one project.
pub const RETRY_AFTER: Duration = Duration::from_secs(10 * 60);

/// How long a watcher's marker and log stay in `run/` untouched (a project
/// deleted, or no longer large, starts no watcher to touch them again).
const KEEP_RUN_FILES: Duration = Duration::from_secs(7 * 24 * 60 * 60);

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
    /// One was started for this project less than [`RETRY_AFTER`] ago, or
    /// another command is starting one.
    Recently,
}

/// Starts `exe watch --root ROOT` for the project keyed `key` in the
/// background, unless one was started for it within [`RETRY_AFTER`].
pub fn start(home: &AamHome, exe: &Path, root: &Path, key: &str) -> Result<Started> {
    ask::make_run_dir(&home.run_dir())?;
    sweep_run_files(&home.run_dir(), KEEP_RUN_FILES);
    let marker_path = ask::run_file(home, key, "started");
    let Some(marker) = claim(&marker_path)? else {
        return Ok(Started::Recently);
    };
    let log_path = ask::run_file(home, key, "log");
    let log = open_owned(&log_path, rustix::fs::OFlags::TRUNC)?;
    let mut command = std::process::Command::new(exe);
    command
        .arg("watch")
        .arg("--root")
        .arg(root)
        .arg("--idle-timeout")
        .arg(IDLE_TIMEOUT.as_secs().to_string())
        .env(crate::config::HOME_ENV, home.root())
        // Its log says why it stopped, unless the command asked for another level.
        .env(LOG_ENV, std::env::var(LOG_ENV).unwrap_or_else(|_| "info".to_string()))
        .current_dir("/")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(log);
    detach(&mut command);
    let pid = command
        .spawn()
        .map_err(|e| Error::io("start", &PathBuf::from(exe), e))?
        .id();
    marker
        .set_len(0)
        .and_then(|()| marker.write_all_at(format!("{pid}\n").as_bytes(), 0))
        .map_err(|e| Error::io("write", &marker_path, e))?;
    tracing::debug!("started a watcher (process {pid}) for the project `{key}`");
    Ok(Started::Watcher(pid))
}

/// Deletes the markers and logs (`project-*.started`, `project-*.log`, plain
/// files) in `dir` whose mtime is older than `keep`; best effort. A marker a
/// command claims or a log a watcher writes is touched, so neither is taken.
fn sweep_run_files(dir: &Path, keep: Duration) {
    crate::paths::remove_untouched(dir, keep, |name| {
        name.starts_with("project-") && (name.ends_with(".started") || name.ends_with(".log"))
    });
}

/// The marker at `path`, claimed for this command (it then says `starting`),
/// or `None` when another command claimed it less than [`RETRY_AFTER`] ago or
/// is claiming it now. Commands take turns under a lock on the marker, so two
/// racing past an old marker start one watcher. Anything but a plain file at
/// its place (a planted link) is taken away first.
fn claim(path: &Path) -> Result<Option<std::fs::File>> {
    if let Ok(meta) = std::fs::symlink_metadata(path)
        && !meta.is_file()
    {
        match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(Error::io("remove", path, e)),
            _ => {}
        }
    }
    let marker = open_owned(path, rustix::fs::OFlags::empty())?;
    match rustix::fs::flock(&marker, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => {}
        Err(rustix::io::Errno::WOULDBLOCK) => return Ok(None),
        // A file system without locks (some NFS setups): claimed unlocked, as
        // racing commands may then each start a watcher (the second stops at once).
        Err(e) => tracing::debug!("cannot lock `{}` ({e}); claiming it without a lock", path.display()),
    }
    let meta = marker.metadata().map_err(|e| Error::io("read", path, e))?;
    let age = meta
        .modified()
        .ok()
        .and_then(|at| SystemTime::now().duration_since(at).ok());
    // Empty: just created, so never claimed.
    if meta.len() > 0 && age.is_some_and(|age| age < RETRY_AFTER) {
        return Ok(None);
    }
    marker
        .set_len(0)
        .and_then(|()| marker.write_all_at(b"starting\n", 0))
        .map_err(|e| Error::io("write", path, e))?;
    Ok(Some(marker))
}

/// Opens the file at `path` for writing, created for its owner only (with
/// `extra`: `TRUNC` to empty it, none to keep what it holds), refusing to follow a
/// link planted at its place, to block on a FIFO, or to write to anything
/// but a plain file.
fn open_owned(path: &Path, extra: rustix::fs::OFlags) -> Result<std::fs::File> {
    use rustix::fs::{FileType, Mode, OFlags};
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | extra;
    let fd =
        rustix::fs::open(path, flags, Mode::from_raw_mode(0o600)).map_err(|e| Error::io("write", path, e.into()))?;
    let stat = rustix::fs::fstat(&fd).map_err(|e| Error::io("write", path, e.into()))?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Err(Error::new(
            ErrorCode::Conflict,
            format!("`{}` is in the way and not a plain file", path.display()),
        )
        .with_hint("move that file away; aam keeps only its own files in that folder"));
    }
    Ok(std::fs::File::from(fd))
}

/// How many descriptors are marked one by one where `close_range` is missing.
const FIRST_DESCRIPTORS: libc::c_int = 1024;

/// Detaches the watcher from the command: a session of its own (no terminal
/// signal reaches it), and every descriptor the command holds beyond the
/// standard three closed at its start (a pipe of whoever ran the command is
/// not held open for the watcher's life).
fn detach(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: runs in the forked child before exec, and only makes system
    // calls that are async-signal-safe (setsid, close_range, fcntl); it
    // allocates nothing and touches no memory of the parent.
    unsafe {
        command.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            // Marked close-on-exec rather than closed: the standard library's
            // own error pipe stays usable until the exec. Where close_range
            // cannot (a kernel before 5.11, a filter that refuses it), the
            // first descriptors are marked one by one.
            #[cfg(target_os = "linux")]
            let marked = libc::syscall(
                libc::SYS_close_range,
                3u32,
                u32::MAX,
                libc::CLOSE_RANGE_CLOEXEC as libc::c_uint,
            ) == 0;
            #[cfg(not(target_os = "linux"))]
            let marked = false;
            if !marked {
                for fd in 3..FIRST_DESCRIPTORS {
                    libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
                }
            }
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Dates the marker at `path` from before [`RETRY_AFTER`].
    fn make_old(path: &Path) {
        let old = SystemTime::now() - RETRY_AFTER - Duration::from_secs(1);
        std::fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(old)
            .unwrap();
    }

    #[test]
    fn markers_and_logs_untouched_for_long_are_swept() {
        let dir = tempfile::tempdir().unwrap();
        let old = std::time::SystemTime::now() - Duration::from_secs(3600);
        for name in [
            "project-a.log",
            "project-a.started",
            "project-b.log",
            "project-c.sock",
            "other.log",
        ] {
            std::fs::write(dir.path().join(name), "").unwrap();
        }
        for name in ["project-a.log", "project-a.started", "project-c.sock", "other.log"] {
            std::fs::File::options()
                .write(true)
                .open(dir.path().join(name))
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
        sweep_run_files(dir.path(), Duration::from_secs(60));
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["other.log", "project-b.log", "project-c.sock"]);
    }

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
        make_old(&marker);
        assert!(
            matches!(start(&home, exe, dir.path(), "/p").unwrap(), Started::Watcher(_)),
            "an old marker lets a new watcher start"
        );
    }

    #[test]
    fn commands_racing_past_an_old_marker_claim_it_once() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("project.started");
        std::fs::write(&marker, "41\n").unwrap();
        make_old(&marker);
        // Another command between its look at the marker and its claim holds the lock.
        let other = std::fs::File::open(&marker).unwrap();
        rustix::fs::flock(&other, rustix::fs::FlockOperation::NonBlockingLockExclusive).unwrap();
        assert!(
            claim(&marker).unwrap().is_none(),
            "a claim in progress holds back a second one"
        );
        drop(other);
        let first = claim(&marker).unwrap().expect("an old marker is claimed");
        assert_eq!(std::fs::read_to_string(&marker).unwrap(), "starting\n");
        drop(first);
        assert!(
            claim(&marker).unwrap().is_none(),
            "a claim that wrote nothing more (its start failed) still holds back the next"
        );
        std::fs::write(&marker, "").unwrap();
        assert!(claim(&marker).unwrap().is_some(), "an empty marker was never claimed");
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
        // A link at the marker's place is taken away, not written through.
        std::os::unix::fs::symlink(&victim, ask::run_file(&home, "/q", "started")).unwrap();
        assert!(matches!(
            start(&home, Path::new("/bin/true"), dir.path(), "/q").unwrap(),
            Started::Watcher(_)
        ));
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
    }

    /// A FIFO planted at the log's place would block whoever opens it to
    /// write: the start fails at once instead.
    #[test]
    fn a_fifo_at_the_log_fails_the_start_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let home = AamHome::at(dir.path().join("home"));
        ask::make_run_dir(&home.run_dir()).unwrap();
        let fifo = ask::run_file(&home, "/p", "log");
        rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, rustix::fs::Mode::from_raw_mode(0o600)).unwrap();
        let (done, finished) = std::sync::mpsc::channel();
        let root = dir.path().to_path_buf();
        std::thread::spawn(move || {
            let _ = done.send(start(&home, Path::new("/bin/true"), &root, "/p").is_err());
        });
        let failed = finished
            .recv_timeout(Duration::from_secs(20))
            .expect("the start blocked on the FIFO");
        assert!(failed);
    }

    /// A `run/` folder others can write to is refused, not used.
    #[test]
    fn a_run_folder_others_can_write_to_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let home = AamHome::at(dir.path().join("home"));
        std::fs::create_dir_all(home.run_dir()).unwrap();
        std::fs::set_permissions(home.run_dir(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let refused = start(&home, Path::new("/bin/true"), dir.path(), "/p").unwrap_err();
        assert_eq!(refused.code(), ErrorCode::Forbidden);
        assert_eq!(std::fs::read_dir(home.run_dir()).unwrap().count(), 0);
    }
}
