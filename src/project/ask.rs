//! Asking the process that watches a project whether the catalog's record of
//! it is current, so a short-lived command (the CLI) skips the check of every
//! recorded file when a long-running one (`aam mcp serve`, `aam project watch`)
//! already watches the project, as git asks its fsmonitor daemon.
//!
//! The watching process listens on a Unix socket in `AAM_HOME/run/`, named
//! after the project's key. A command connects and sends the key; the watcher
//! brings the record up to date through its watches (it drains its event queue
//! after the request arrived, so every change made before the command started
//! is in it) and answers with the record's version. The command answers from
//! the catalog when the catalog still holds that version, and checks the files
//! itself when nothing answers, the answer is an error, or the version moved.
//!
//! The socket is the only thing read from the other side, and it is hostile
//! input like any other: one line, bounded, parsed as JSON; any surprise means
//! "check the files yourself". Only the home's owner can create files in
//! `run/` (made `0700`).

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::config::AamHome;
use crate::error::{Error, ErrorCode, Result};

/// How long a command waits for the watcher's answer once the watcher took
/// the question: long enough for the refresh it would otherwise run itself at
/// 100,000 skills.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(20);

/// How long a command waits for the watcher to take its question: a watcher
/// that is stopped, stuck or busy answering another command is not waited for.
const TAKEN_TIMEOUT: Duration = Duration::from_secs(1);

/// The line a watcher sends as soon as it takes a connection, before it reads
/// the question and brings the record up to date.
const TAKEN: &[u8] = b"{\"taken\":true}";

/// How long the watcher waits for a connected command to send its request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// Longest request or answer line, in bytes (a key is a path).
const MAX_LINE: u64 = 64 * 1024;

/// What a command sends: the key of the project it asks about.
#[derive(Debug, Serialize, Deserialize)]
struct Request {
    project: String,
}

/// What the watcher answers: the record's version, or why it cannot vouch.
#[derive(Debug, Serialize, Deserialize)]
struct Answer {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    version: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// Where the process watching the project keyed `key` listens.
pub fn socket_path(home: &AamHome, key: &str) -> PathBuf {
    run_file(home, key, "sock")
}

/// The file of `run/` with the extension `ext` that belongs to the project
/// keyed `key` (named after a digest of the key).
pub fn run_file(home: &AamHome, key: &str, ext: &str) -> PathBuf {
    let digest = blake3::hash(key.as_bytes()).to_hex();
    home.run_dir().join(format!("project-{}.{ext}", &digest[..16]))
}

/// What the process watching a project said when asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vouch {
    /// It vouches for the record at this version (it holds every change made
    /// before the question).
    Version(i64),
    /// No process listens: no socket, or one a dead process left.
    NoProcess,
    /// A process listens but could not vouch (an error, a malformed answer,
    /// no answer in time).
    NoAnswer,
}

impl Vouch {
    /// The version vouched for, if any.
    pub fn version(self) -> Option<i64> {
        match self {
            Vouch::Version(version) => Some(version),
            _ => None,
        }
    }
}

/// Asks the process watching the project keyed `key` for the version of its
/// record it vouches for (the caller checks the files itself otherwise).
pub fn vouch(home: &AamHome, key: &str) -> Vouch {
    let path = socket_path(home, key);
    match ask(&path, key) {
        Ok(Some(version)) => {
            tracing::debug!("the process watching the project vouches for its record at version {version}");
            Vouch::Version(version)
        }
        Ok(None) => Vouch::NoProcess,
        Err(reason) => {
            tracing::debug!("no answer from the project's watcher at `{}`: {reason}", path.display());
            Vouch::NoAnswer
        }
    }
}

#[cfg(unix)]
fn ask(path: &Path, key: &str) -> std::result::Result<Option<i64>, String> {
    let mut stream = match connect_now(path) {
        Ok(stream) => stream,
        // Nobody watches (no socket, or a stale one): the usual case, not worth a word.
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused
            ) =>
        {
            return Ok(None);
        }
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
            return Err("its queue of questions is full (the process is stopped or stuck)".to_string());
        }
        Err(e) => return Err(e.to_string()),
    };
    stream
        .set_write_timeout(Some(REQUEST_TIMEOUT))
        .map_err(|e| e.to_string())?;
    let request = Request {
        project: key.to_string(),
    };
    let mut line = serde_json::to_vec(&request).map_err(|e| e.to_string())?;
    line.push(b'\n');
    stream.write_all(&line).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(TAKEN_TIMEOUT))
        .map_err(|e| e.to_string())?;
    // One reader for both lines: the answer may arrive with the first.
    let mut replies = BufReader::new(&stream);
    if read_line(&mut replies).map_err(|e| format!("it did not take the question: {e}"))? != TAKEN {
        return Err("it did not take the question".to_string());
    }
    stream
        .set_read_timeout(Some(ANSWER_TIMEOUT))
        .map_err(|e| e.to_string())?;
    let answer: Answer = serde_json::from_slice(&read_line(&mut replies)?).map_err(|e| e.to_string())?;
    match (answer.version, answer.error) {
        (Some(version), None) => Ok(Some(version)),
        (_, Some(error)) => Err(format!("the watcher could not bring the record up to date: {error}")),
        (None, None) => Err("an answer without a version".to_string()),
    }
}

#[cfg(not(unix))]
fn ask(_path: &Path, _key: &str) -> std::result::Result<Option<i64>, String> {
    Ok(None)
}

/// Connects to the socket at `path` without waiting: a listener whose queue is
/// full (a stopped process no longer takes connections) fails at once with
/// `WouldBlock` instead of blocking the connect for good.
#[cfg(unix)]
fn connect_now(path: &Path) -> std::io::Result<std::os::unix::net::UnixStream> {
    use rustix::net::{AddressFamily, SocketAddrUnix, SocketFlags, SocketType};
    let socket = rustix::net::socket_with(
        AddressFamily::UNIX,
        SocketType::STREAM,
        SocketFlags::NONBLOCK | SocketFlags::CLOEXEC,
        None,
    )?;
    rustix::net::connect(&socket, &SocketAddrUnix::new(path)?)?;
    let stream = std::os::unix::net::UnixStream::from(socket);
    stream.set_nonblocking(false)?;
    Ok(stream)
}

/// One line of at most [`MAX_LINE`] bytes, without its newline.
#[cfg(unix)]
fn read_line(reader: &mut impl BufRead) -> std::result::Result<Vec<u8>, String> {
    let mut line = Vec::new();
    reader
        .take(MAX_LINE)
        .read_until(b'\n', &mut line)
        .map_err(|e| e.to_string())?;
    if line.pop() != Some(b'\n') {
        return Err("a line cut short or too long".to_string());
    }
    Ok(line)
}

/// A socket answering for one project; removed when dropped (the process
/// ending) unless another process has taken its path since.
pub struct Listening {
    path: PathBuf,
    #[cfg(unix)]
    identity: (u64, u64),
    /// When a command last connected (or the socket was set up).
    last_asked: Arc<Mutex<Instant>>,
}

impl Listening {
    /// Whether the socket at its path is still this one: not removed, and not
    /// replaced by another process's (commands cannot reach this one then).
    pub fn is_reachable(&self) -> bool {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            std::fs::symlink_metadata(&self.path).is_ok_and(|m| (m.dev(), m.ino()) == self.identity)
        }
        #[cfg(not(unix))]
        false
    }

    /// How long no command has connected.
    pub fn idle_for(&self) -> Duration {
        self.last_asked.lock().unwrap_or_else(|e| e.into_inner()).elapsed()
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        if self.is_reachable() {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Makes the process answering for the project keyed `key` unreachable by
/// removing its socket (`aam watch` then exits within a few seconds); whether a
/// process was listening there (a socket left by one that died is removed
/// too). Anything else found at that path is left alone.
pub fn stop_answering(home: &AamHome, key: &str) -> Result<bool> {
    let path = socket_path(home, key);
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_socket() => {
                // Connected and let go at once: the listener reads an empty
                // request and goes on; a dead one refuses the connection.
                let listening = connect_now(&path).is_ok();
                std::fs::remove_file(&path).map_err(|e| Error::io("remove", &path, e))?;
                Ok(listening)
            }
            Ok(_) => Err(Error::new(
                ErrorCode::Conflict,
                format!("`{}` is in the way and not a socket", path.display()),
            )
            .with_hint("move that file away; aam keeps only sockets in that folder")),
            Err(_) => Ok(false),
        }
    }
    #[cfg(not(unix))]
    Ok(false)
}

/// Answers, on a thread of its own for the life of the process, every command
/// that asks about the project keyed `key`: `current` brings the record up to
/// date (through the process's watches) and returns its version; it runs once
/// at the start too, so the watches are set before the first question.
/// `Ok(None)` when another live process already answers for the project.
#[cfg(unix)]
pub fn listen(
    home: &AamHome,
    key: &str,
    current: impl Fn() -> Result<i64> + Send + 'static,
) -> Result<Option<Listening>> {
    use std::os::unix::fs::MetadataExt;
    use std::os::unix::net::UnixListener;
    let path = socket_path(home, key);
    // `sun_path` holds 108 bytes, its terminating NUL included.
    const MAX_SOCKET_PATH: usize = 107;
    if path.as_os_str().len() > MAX_SOCKET_PATH {
        return Err(Error::new(
            ErrorCode::IoError,
            format!(
                "the watcher's socket `{}` is {} bytes long, more than the {MAX_SOCKET_PATH} a Unix socket's path may be",
                path.display(),
                path.as_os_str().len()
            ),
        )
        .with_hint("point `AAM_HOME` at a folder with a shorter path to use `aam watch`; every other command works as it is"));
    }
    make_run_dir(&home.run_dir())?;
    let listener = match UnixListener::bind(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
            if connect_now(&path).is_ok() {
                return Ok(None);
            }
            // A socket left by a process that died: take its place.
            let stale = std::fs::symlink_metadata(&path).is_ok_and(|m| {
                use std::os::unix::fs::FileTypeExt;
                m.file_type().is_socket()
            });
            if !stale {
                return Err(Error::new(
                    ErrorCode::Conflict,
                    format!("`{}` is in the way and not a socket", path.display()),
                )
                .with_hint("move that file away; aam keeps only sockets in that folder"));
            }
            std::fs::remove_file(&path).map_err(|e| Error::io("remove", &path, e))?;
            UnixListener::bind(&path).map_err(|e| Error::io("listen on", &path, e))?
        }
        other => other.map_err(|e| Error::io("listen on", &path, e))?,
    };
    let meta = std::fs::symlink_metadata(&path).map_err(|e| Error::io("read", &path, e))?;
    let last_asked = Arc::new(Mutex::new(Instant::now()));
    let listening = Listening {
        path: path.clone(),
        identity: (meta.dev(), meta.ino()),
        last_asked: last_asked.clone(),
    };
    let key = key.to_string();
    std::thread::Builder::new()
        .name("aam-project-answers".to_string())
        .spawn(move || {
            // Watch from the start, so the first command asking is answered at once.
            if let Err(e) = current() {
                tracing::info!("the project's record could not be brought up to date: {}", e.message());
            }
            for stream in listener.incoming() {
                *last_asked.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
                match stream {
                    Ok(stream) => answer(stream, &key, &current),
                    Err(e) => tracing::debug!("a command's connection failed: {e}"),
                }
            }
        })
        .map_err(|e| Error::internal(format!("cannot start the thread answering commands: {e}")))?;
    tracing::debug!("answering commands about the project at `{}`", path.display());
    Ok(Some(listening))
}

#[cfg(not(unix))]
pub fn listen(
    _home: &AamHome,
    _key: &str,
    _current: impl Fn() -> Result<i64> + Send + 'static,
) -> Result<Option<Listening>> {
    Err(Error::invalid_argument(
        "answering other aam processes needs Unix sockets",
    ))
}

/// Answers one connected command.
#[cfg(unix)]
fn answer(mut stream: std::os::unix::net::UnixStream, key: &str, current: &impl Fn() -> Result<i64>) {
    let _ = stream.set_read_timeout(Some(REQUEST_TIMEOUT));
    let _ = stream.set_write_timeout(Some(REQUEST_TIMEOUT));
    let mut taken = TAKEN.to_vec();
    taken.push(b'\n');
    if stream.write_all(&taken).is_err() {
        return;
    }
    let request = read_line(&mut BufReader::new(&stream))
        .and_then(|line| serde_json::from_slice::<Request>(&line).map_err(|e| e.to_string()));
    let answer = match request {
        Ok(request) if request.project == key => match current() {
            Ok(version) => Answer {
                version: Some(version),
                error: None,
            },
            Err(e) => Answer {
                version: None,
                error: Some(e.message().to_string()),
            },
        },
        Ok(_) => Answer {
            version: None,
            error: Some("this process watches another project".to_string()),
        },
        Err(reason) => {
            tracing::debug!("a command's request was unreadable: {reason}");
            return;
        }
    };
    if let Ok(mut line) = serde_json::to_vec(&answer) {
        line.push(b'\n');
        let _ = stream.write_all(&line);
    }
}

/// Makes `run/` readable by its owner only, and refuses one that is there
/// already but is another user's or writable by others (anyone who can write
/// there could plant a socket or a link at a name aam uses).
pub(super) fn make_run_dir(dir: &Path) -> Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| Error::io("create", dir, e))?;
    // A link to such a folder is fine: only who can write in `AAM_HOME` can make one.
    let meta = std::fs::metadata(dir).map_err(|e| Error::io("read", dir, e))?;
    if !meta.is_dir() || meta.uid() != rustix::process::geteuid().as_raw() || meta.mode() & 0o022 != 0 {
        return Err(Error::new(
            ErrorCode::Forbidden,
            format!(
                "`{}` is not a folder that only its owner, this user, can write to",
                dir.display()
            ),
        )
        .with_hint("remove it (aam makes it again, mode 0700), or check who made it"));
    }
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicI64, Ordering};

    fn home() -> (tempfile::TempDir, AamHome) {
        let dir = tempfile::tempdir().unwrap();
        let home = AamHome::at(dir.path().to_path_buf());
        (dir, home)
    }

    #[test]
    fn a_home_too_deep_for_a_socket_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let home = AamHome::at(dir.path().join("a".repeat(100)));
        let refused = listen(&home, "/p", || Ok(1)).err().expect("refused");
        assert!(
            refused.message().contains("a Unix socket's path may be"),
            "{}",
            refused.message()
        );
        assert!(refused.hint().unwrap().contains("AAM_HOME"), "{refused:?}");
        assert_eq!(vouch(&home, "/p").version(), None);
    }

    #[test]
    fn a_command_gets_the_version_the_watcher_brought_the_record_to() {
        let (_dir, home) = home();
        let asked = Arc::new(AtomicI64::new(0));
        let counter = asked.clone();
        let _listening = listen(&home, "/p", move || Ok(41 + counter.fetch_add(1, Ordering::SeqCst)))
            .unwrap()
            .unwrap();
        // 41 went to the refresh at the start, which sets the watches.
        assert_eq!(vouch(&home, "/p").version(), Some(42));
        assert_eq!(
            vouch(&home, "/p").version(),
            Some(43),
            "each question brings the record up to date again"
        );
        assert_eq!(asked.load(Ordering::SeqCst), 3);
        assert_eq!(vouch(&home, "/other").version(), None, "another project has no watcher");
    }

    #[test]
    fn an_error_or_another_project_is_no_answer() {
        let (_dir, home) = home();
        let _failing = listen(&home, "/p", || Err(Error::invalid_argument("the project is gone")))
            .unwrap()
            .unwrap();
        assert_eq!(vouch(&home, "/p"), Vouch::NoAnswer, "a live process that cannot vouch");
        // A socket found at another project's path answers for its own project only.
        let _other = listen(&home, "/q", || Ok(7)).unwrap().unwrap();
        std::fs::rename(socket_path(&home, "/q"), socket_path(&home, "/r")).unwrap();
        assert_eq!(vouch(&home, "/r").version(), None);
    }

    #[test]
    fn an_unreadable_request_gets_no_answer_and_the_next_one_does() {
        let (_dir, home) = home();
        let _listening = listen(&home, "/p", || Ok(9)).unwrap().unwrap();
        for request in [&b"not json\n"[..], &vec![b'{'; MAX_LINE as usize + 1]] {
            let mut stream = std::os::unix::net::UnixStream::connect(socket_path(&home, "/p")).unwrap();
            let _ = stream.write_all(request);
            let _ = stream.shutdown(std::net::Shutdown::Write);
            let mut reply = Vec::new();
            let _ = stream.read_to_end(&mut reply);
            assert_eq!(reply, [TAKEN, b"\n"].concat(), "{}", String::from_utf8_lossy(&reply));
        }
        assert_eq!(vouch(&home, "/p").version(), Some(9));
    }

    #[test]
    fn a_stale_socket_is_replaced_and_a_live_one_kept() {
        let (_dir, home) = home();
        let first = listen(&home, "/p", || Ok(1)).unwrap().unwrap();
        assert!(
            listen(&home, "/p", || Ok(2)).unwrap().is_none(),
            "a live watcher keeps its socket"
        );
        assert_eq!(vouch(&home, "/p").version(), Some(1));
        // A watcher killed without cleaning up leaves its socket file behind.
        let path = socket_path(&home, "/p");
        std::mem::forget(first);
        let dead = tempfile::tempdir().unwrap();
        let moved = dead.path().join("moved.sock");
        std::fs::rename(&path, &moved).unwrap();
        let stale = std::os::unix::net::UnixListener::bind(&path).unwrap();
        drop(stale); // the file stays, nobody listens
        assert_eq!(vouch(&home, "/p"), Vouch::NoProcess, "a stale socket is no answer");
        let second = listen(&home, "/p", || Ok(3)).unwrap().unwrap();
        assert_eq!(vouch(&home, "/p").version(), Some(3));
        drop(second);
        assert!(!path.exists(), "the socket goes when its process stops answering");
    }

    #[test]
    fn stopping_removes_the_socket_and_tells_whether_a_process_listened() {
        let (_dir, home) = home();
        let listening = listen(&home, "/p", || Ok(3)).unwrap().unwrap();
        assert_eq!(vouch(&home, "/p").version(), Some(3));
        assert!(stop_answering(&home, "/p").unwrap(), "a live process listened");
        assert!(!listening.is_reachable());
        assert_eq!(vouch(&home, "/p"), Vouch::NoProcess);
        assert!(!stop_answering(&home, "/p").unwrap(), "nothing left to stop");
        // A socket left by a process that died is removed too.
        let path = socket_path(&home, "/p");
        drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
        assert!(!stop_answering(&home, "/p").unwrap(), "nobody listened there");
        assert!(!path.exists());
    }

    #[test]
    fn a_file_that_is_not_a_socket_is_left_alone() {
        let (_dir, home) = home();
        let path = socket_path(&home, "/p");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, b"mine").unwrap();
        let refused = listen(&home, "/p", || Ok(1)).err().unwrap();
        assert_eq!(refused.code(), ErrorCode::Conflict);
        assert_eq!(std::fs::read(&path).unwrap(), b"mine");
        assert_eq!(vouch(&home, "/p").version(), None);
    }

    #[test]
    fn a_hostile_answer_is_no_answer() {
        let (_dir, home) = home();
        let path = socket_path(&home, "/p");
        make_run_dir(&home.run_dir()).unwrap();
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let server = std::thread::spawn(move || {
            for reply in [
                &b"{\"version\": 5"[..],
                b"not json\n",
                b"{\"error\":\"no\",\"version\":3}\n",
                b"{}\n",
            ] {
                let (mut stream, _) = listener.accept().unwrap();
                let _ = read_line(&mut BufReader::new(&stream));
                let _ = stream.write_all(&[TAKEN, b"\n", reply].concat());
            }
            let (mut stream, _) = listener.accept().unwrap();
            let _ = read_line(&mut BufReader::new(&stream));
            let _ = stream.write_all(&vec![b' '; MAX_LINE as usize + 10]);
        });
        for _ in 0..5 {
            assert_eq!(vouch(&home, "/p").version(), None);
        }
        server.join().unwrap();
    }

    #[test]
    fn a_process_that_takes_no_question_is_not_waited_for() {
        let (_dir, home) = home();
        let path = socket_path(&home, "/p");
        make_run_dir(&home.run_dir()).unwrap();
        // A stopped watcher: its socket listens, nothing accepts.
        let _stopped = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let started = Instant::now();
        assert_eq!(vouch(&home, "/p"), Vouch::NoAnswer);
        assert!(started.elapsed() < ANSWER_TIMEOUT / 4, "{:?}", started.elapsed());
        // Once its queue is full, a connect would wait for good: it fails at once.
        let mut queued = 0;
        while connect_now(&path).is_ok() {
            queued += 1;
            assert!(queued < 100_000, "the queue never filled");
        }
        let started = Instant::now();
        assert_eq!(vouch(&home, "/p"), Vouch::NoAnswer);
        assert!(started.elapsed() < TAKEN_TIMEOUT, "{:?}", started.elapsed());
    }
}
