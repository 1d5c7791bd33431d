//! One writer per project, and project writes that survive a crash.
//!
//! **The project lock.** Every command that changes a project (or the home
//! folder, for `-g`) holds an exclusive OS file lock on `.aam/lock` from before
//! it reads the lock file until after it wrote it, so two commands never plan
//! against the same old state; the second waits, or with `--no-wait` fails.
//!
//! **The journal.** Before the first file changes, `.aam/journal.json` records
//! the plan: every file to write or remove (by lock key, checked like every key
//! of a lock file), whether it existed, the blake3 of what will be written, the
//! folders that will be created, and the catalog mirror to apply. Then:
//! 1. folders are created and new contents staged next to their targets
//!    (`.<file>.aam-<id>.<n>.new`);
//! 2. each target that exists is renamed to `.<file>.aam-<id>.<n>.old` and
//!    the staged file renamed into place (renames within one folder never
//!    half-happen); the lock file is the last change;
//! 3. the journal is marked committed, the catalog mirror applied, the `.old`
//!    files deleted, folders a removal emptied pruned, and the journal deleted.
//!
//! Whatever instant the process dies at, the next aam command
//! ([`recover`]) finds the journal: before the commit mark it rolls back (puts
//! every `.old` back, deletes what it wrote only when its bytes are exactly what
//! it wrote, removes staged files and the folders it created); after it, it
//! rolls forward (deletes the `.old` files and replays the catalog mirror). So a
//! project is always exactly the old or exactly the new state, with the lock
//! file matching its files and no temporary file left.
//!
//! Tests make crashes deterministic with `AAM_FAULT_AFTER_FILE_OPS=N`, which
//! aborts the process right after its N-th file operation here.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::{Deserialize, Serialize};

use rustix::fs::AtFlags;

use super::keys::{self, LOCK_KEY};
use super::plan::{Bytes, Member};
use super::{Anchor, OpenFolders, Roots};
use crate::cancel::Cancel;
use crate::error::{Error, ErrorCode, Result};
use crate::packages::lock::Origin;
use crate::scan::Platform;

/// The journal's layout version.
const JOURNAL_VERSION: u32 = 1;

/// Largest journal read back.
const MAX_JOURNAL_BYTES: u64 = 256 * 1024 * 1024;

/// One file a command writes (`content`) or removes (`None`), by key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    /// Lock key, shared file or the lock file.
    pub key: String,
    /// New bytes (shared, never copied per target) and whether the file is
    /// executable; `None` removes it.
    pub content: Option<(Bytes, bool)>,
    /// blake3 digests of what the command may replace or remove there (bytes
    /// aam wrote there, or the file it read and carries over), when it knows:
    /// the file moved aside is deleted at the end only while it holds one of
    /// them, and is saved to `$AAM_HOME/backups/journal-<id>/` otherwise (an
    /// edit saved while the command ran). Empty: deleted as it is.
    pub expected: Vec<String>,
}

/// A change to the catalog's mirror of the project's installs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum MirrorOp {
    /// Record (or replace) one installed package.
    Record(Box<InstallMirror>),
    /// Forget one installed package.
    Remove {
        /// Project (or home) root.
        project_root: String,
        /// Package name.
        package: String,
    },
}

/// Everything the catalog keeps of one install.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstallMirror {
    /// Project (or home) root.
    pub project_root: String,
    /// Package name.
    pub name: String,
    /// Version.
    pub version: String,
    /// Description.
    pub description: String,
    /// The manifest as JSON.
    pub manifest_json: String,
    /// Where it came from, as the catalog tells it.
    pub origin: MirrorOrigin,
    /// Archive checksum.
    pub checksum: String,
    /// What it holds.
    pub members: Vec<Member>,
    /// Platforms deployed to.
    pub platforms: Vec<Platform>,
    /// Commit its files were read at.
    pub source_commit: Option<String>,
    /// The repository of a package taken from a source's artifacts (not a
    /// folder's or an archive's, whatever their manifest claims).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_url: Option<String>,
    /// (key, blake3) of every file written.
    pub files: Vec<(String, String)>,
    /// The keys of `files` found on disk as they are instead of written (the
    /// copies an adoption records): this install's files, but no proof that
    /// aam wrote those bytes there.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub found_in_place: Vec<String>,
    /// The package folder, archive or local repository outside the project it
    /// was read from (see [`super::mirror::place_of`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub place: Option<crate::catalog::InstallPlace>,
}

/// Where the catalog says an installed package came from: a registry, or a
/// source (folders and archives count as sources there). Written as
/// `registry` / `source` in the journal and the catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MirrorOrigin {
    /// A published version in a registry.
    Registry,
    /// A source's artifacts, a package folder or an archive.
    Source,
}

impl MirrorOrigin {
    /// The catalog's name for it.
    pub fn as_str(self) -> &'static str {
        match self {
            MirrorOrigin::Registry => "registry",
            MirrorOrigin::Source => "source",
        }
    }
}

impl From<Origin> for MirrorOrigin {
    fn from(origin: Origin) -> Self {
        match origin {
            Origin::Registry => MirrorOrigin::Registry,
            Origin::Source | Origin::Local | Origin::Archive => MirrorOrigin::Source,
        }
    }
}

impl MirrorOp {
    fn project_root(&self) -> &str {
        match self {
            MirrorOp::Record(record) => &record.project_root,
            MirrorOp::Remove { project_root, .. } => project_root,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Stage {
    /// Files may be half changed: roll back.
    Prepared,
    /// Every file is in place: roll forward.
    Committed,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Op {
    key: String,
    /// blake3 of the new bytes; `None` for a removal.
    write: Option<String>,
    executable: bool,
    existed: bool,
    /// See [`FileChange::expected`] (absent from journals of older versions).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    expected: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Journal {
    version: u32,
    id: String,
    stage: Stage,
    ops: Vec<Op>,
    /// Folders created on the way to targets, outermost first (as keys).
    created_dirs: Vec<String>,
    /// Folders to remove once the change is in place, when they are empty.
    prune_dirs: Vec<String>,
    mirror: Vec<MirrorOp>,
}

/// What [`recover`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recovered {
    /// The interrupted command had not finished: the old state is back.
    RolledBack,
    /// The interrupted command had put every file in place: it was finished.
    RolledForward,
}

fn journal_path(root: &Path) -> PathBuf {
    root.join(".aam").join("journal.json")
}

/// Where the journal is written before it is renamed into place.
fn staged_journal_path(root: &Path) -> PathBuf {
    root.join(".aam").join("journal.json.new")
}

/// Whether an interrupted command's journal (or a half-written one) is
/// waiting under `root`.
pub fn pending(root: &Path) -> bool {
    journal_path(root).exists() || staged_journal_path(root).exists()
}

// ---------------------------------------------------------------- project lock

/// An exclusive hold on a project's `.aam/lock`; released when dropped.
pub struct ProjectLock {
    _file: File,
}

/// Takes the project lock under `root`. When another command holds it, calls
/// `waiting` once and waits, or (`no_wait`) fails with `AAM_CONFLICT`.
pub fn lock_project(root: &Path, no_wait: bool, waiting: impl FnOnce()) -> Result<ProjectLock> {
    use std::os::unix::fs::OpenOptionsExt;
    // A repository can ship `.aam` or `.aam/lock` as a link (opening it would
    // create a file wherever it points) or `.aam/lock` as a FIFO (opening it
    // would block): neither is followed, opened for long, or used.
    let not_aams = |path: &Path, what: &str| {
        Error::new(
            ErrorCode::UnsafePath,
            format!("`{}` is {what}, not the folder or file aam keeps there", path.display()),
        )
        .with_hint("remove it (the repository may have shipped it); aam makes it again as a plain one")
    };
    let dir = root.join(".aam");
    if std::fs::symlink_metadata(&dir).is_ok_and(|m| !m.is_dir()) {
        return Err(not_aams(&dir, "a link or a file"));
    }
    std::fs::create_dir_all(&dir).map_err(|e| Error::io("create", &dir, e))?;
    let path = dir.join("lock");
    let first = std::fs::symlink_metadata(&path).is_err();
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .custom_flags((rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK).bits() as i32)
        .open(&path);
    let file = match file {
        Ok(file) if file.metadata().is_ok_and(|m| m.is_file()) => file,
        Ok(_) => return Err(not_aams(&path, "not a plain file")),
        Err(_) if std::fs::symlink_metadata(&path).is_ok_and(|m| !m.is_file()) => {
            return Err(not_aams(&path, "a link or not a plain file"));
        }
        Err(e) => return Err(Error::io("open", &path, e)),
    };
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) if no_wait => {
            return Err(Error::new(
                ErrorCode::Conflict,
                format!("another aam command is changing `{}`", root.display()),
            )
            .with_hint("wait for it to finish, or run again without `--no-wait` to wait for it"));
        }
        Err(std::fs::TryLockError::WouldBlock) => {
            waiting();
            file.lock().map_err(|e| Error::io("lock", &path, e))?;
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(Error::io("lock", &path, e)),
    }
    if first {
        ignore_runtime_files(&dir);
    }
    Ok(ProjectLock { _file: file })
}

/// What `.aam/.gitignore` holds: the files aam keeps only while it runs. The
/// lock file, `config.yaml` and `packages/` are the project's, to commit.
const RUNTIME_GITIGNORE: &str = "\
# Written by aam: files it keeps only while a command runs. Commit the rest
# of this folder (aam-lock.yaml, config.yaml, packages/).
/lock
/journal.json
/journal.json.new
";

/// Writes `.aam/.gitignore` the first time a project is locked, unless one
/// is there (a link or anything else is left alone). Best effort: a project
/// that cannot take it still installs.
fn ignore_runtime_files(dir: &Path) {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let path = dir.join(".gitignore");
    let written = std::fs::OpenOptions::new()
        .create_new(true)
        .write(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(&path)
        .and_then(|mut file| file.write_all(RUNTIME_GITIGNORE.as_bytes()));
    if let Err(e) = written {
        tracing::debug!(path = %path.display(), "no .gitignore written: {e}");
    }
}

// ---------------------------------------------------------------- fault injection

static FILE_OPS: AtomicUsize = AtomicUsize::new(0);

/// Counts one file operation; aborts the process at the N-th when
/// `AAM_FAULT_AFTER_FILE_OPS=N` (crash tests).
fn tick() {
    let n = FILE_OPS.fetch_add(1, Ordering::SeqCst) + 1;
    let limit = std::env::var("AAM_FAULT_AFTER_FILE_OPS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok());
    if limit == Some(n) {
        std::process::abort();
    }
    #[cfg(test)]
    tests::AT_TICK.with(|hook| {
        if let Some(hook) = hook.borrow_mut().as_mut() {
            hook();
        }
    });
}

// ---------------------------------------------------------------- applying

/// Makes `changes` (each key at most once) through the journal, removes the
/// `prune_dirs` that are then empty, and runs `apply_mirror(mirror)`. A
/// `cancel` raised before the commit mark undoes everything (`AAM_CANCELLED`). On any error everything is put back; if the
/// process dies, the next [`recover`] finishes or undoes it. The caller holds
/// the project lock.
pub fn apply(
    roots: &Roots,
    changes: Vec<FileChange>,
    prune_dirs: Vec<String>,
    mirror: Vec<MirrorOp>,
    cancel: &Cancel,
    apply_mirror: impl FnOnce(&[MirrorOp]) -> Result<()>,
) -> Result<()> {
    cancel.check()?;
    let mut ops = Vec::with_capacity(changes.len());
    let mut paths = Vec::with_capacity(changes.len());
    let mut contents = Vec::with_capacity(changes.len());
    let mut created: Vec<String> = Vec::new();
    for change in changes {
        let path = roots.file_path(&change.key)?;
        let meta = std::fs::symlink_metadata(&path).ok();
        if change.content.is_some() && meta.as_ref().is_some_and(|m| m.is_dir()) {
            return Err(Error::new(
                ErrorCode::Conflict,
                format!("a folder is in the way of `{}`", change.key),
            )
            .with_hint("move the folder away and run the command again"));
        }
        if change.content.is_none() && meta.as_ref().is_none_or(|m| m.is_dir()) {
            continue; // nothing to remove
        }
        if change.content.is_some() {
            for dir in roots.missing_dirs(&change.key) {
                if !created.contains(&dir) {
                    created.push(dir);
                }
            }
        }
        ops.push(Op {
            write: change
                .content
                .as_ref()
                .map(|(b, _)| blake3::hash(b).to_hex().to_string()),
            executable: change.content.as_ref().is_some_and(|(_, x)| *x),
            existed: meta.is_some(),
            expected: change.expected,
            key: change.key,
        });
        paths.push(path);
        contents.push(change.content.map(|(b, _)| b));
    }
    if ops.is_empty() {
        apply_mirror(&mirror)?;
        prune(roots, &prune_dirs, &mut OpenFolders::default());
        return Ok(());
    }
    created.sort_by_key(|d| d.matches('/').count());
    let mut journal = Journal {
        version: JOURNAL_VERSION,
        id: new_id()?,
        stage: Stage::Prepared,
        ops,
        created_dirs: created,
        prune_dirs,
        mirror,
    };
    write_journal(roots, &journal)?;
    if let Err(e) = make_changes(roots, &journal, &paths, &contents, cancel) {
        undo(roots, &journal);
        return Err(e);
    }
    journal.stage = Stage::Committed;
    if let Err(e) = write_journal(roots, &journal) {
        undo(roots, &journal);
        return Err(e);
    }
    tick();
    if let Err(e) = apply_mirror(&journal.mirror) {
        // Back to before the commit mark first, so a crash during the rollback
        // rolls back again instead of forward.
        journal.stage = Stage::Prepared;
        let _ = write_journal(roots, &journal);
        undo(roots, &journal);
        return Err(e);
    }
    if let Some(unreached) = finish(roots, &journal) {
        tracing::warn!("{}", warning(&unreached.why(&journal_path(&roots.root))));
    }
    Ok(())
}

fn new_id() -> Result<String> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).map_err(|e| Error::internal(format!("no randomness: {e}")))?;
    Ok(faster_hex::hex_string(&bytes))
}

/// The name of the file `name`'s sibling `.<name>.aam-<id>.<n>.<suffix>`, or
/// `.aam-<id>.<n>.<suffix>` when that would be longer than a file name may be
/// (a long name fits on disk, and its sibling must too): the journal's id and
/// the change's number alone tell siblings apart.
fn sibling_name(name: &std::ffi::OsStr, id: &str, n: usize, suffix: &str) -> String {
    let named = format!(".{}.aam-{id}.{n}.{suffix}", name.to_string_lossy());
    if named.len() <= crate::paths::MAX_NAME_BYTES {
        named
    } else {
        format!(".aam-{id}.{n}.{suffix}")
    }
}

fn make_changes(
    roots: &Roots,
    journal: &Journal,
    paths: &[PathBuf],
    contents: &[Option<Bytes>],
    cancel: &Cancel,
) -> Result<()> {
    let mut open = OpenFolders::default();
    for dir in &journal.created_dirs {
        let location = crate::deploy::Location::from_key(dir);
        let path = location.resolve(&roots.root, &roots.home);
        // The project root or home folder itself may be missing; it is not
        // ours to remove later. Every other folder on the way is made here, by
        // name in its parent: a missing one is an error, never made by path
        // (through whatever link is on the way now).
        let base = match location {
            crate::deploy::Location::Project(_) => &roots.root,
            crate::deploy::Location::Home(_) => &roots.home,
        };
        if path.parent() == Some(base.as_path()) && !base.exists() {
            std::fs::create_dir_all(base).map_err(|e| Error::io("create", base, e))?;
        }
        // Made by name in its parent as opened and checked, like the files.
        let anchor = roots.anchor_dir(dir, &mut open)?;
        match rustix::fs::mkdirat(&anchor.folder, &anchor.name, rustix::fs::Mode::from_raw_mode(0o777)) {
            Ok(()) | Err(rustix::io::Errno::EXIST) => {}
            Err(e) => return Err(Error::io("create", &path, e.into())),
        }
        tick();
    }
    // Every file is staged, replaced and renamed by name in its folder as
    // opened and checked once the folders exist, and checked again right
    // before each step: a folder swapped for a link, or moved, meanwhile is
    // neither written through nor written in. Every key is checked before the
    // first write.
    for op in &journal.ops {
        roots.anchor(&op.key, &mut open)?;
    }
    for (n, (op, path)) in journal.ops.iter().zip(paths).enumerate() {
        if let Some(bytes) = &contents[n] {
            let anchor = roots.anchor(&op.key, &mut open)?;
            let staged = sibling_name(&anchor.name, &journal.id, n, "new");
            stage(&anchor, &staged, path, bytes, op.executable)?;
            tick();
        }
    }
    let rename = |anchor: &Anchor, from: &std::ffi::OsStr, to: &std::ffi::OsStr| {
        rustix::fs::renameat(&*anchor.folder, from, &*anchor.folder, to).map_err(std::io::Error::from)
    };
    for (n, (op, path)) in journal.ops.iter().zip(paths).enumerate() {
        cancel.check()?;
        if op.existed {
            let anchor = roots.anchor(&op.key, &mut open)?;
            let old = sibling_name(&anchor.name, &journal.id, n, "old");
            rename(&anchor, &anchor.name, old.as_ref()).map_err(|e| Error::io("replace", path, e))?;
            tick();
        }
        if op.write.is_some() {
            let anchor = roots.anchor(&op.key, &mut open)?;
            let staged = sibling_name(&anchor.name, &journal.id, n, "new");
            rename(&anchor, staged.as_ref(), &anchor.name).map_err(|e| Error::io("write", path, e))?;
            tick();
        }
    }
    Ok(())
}

/// Writes `bytes` to a new file `name` in the anchored folder (never through
/// a link, never over a file); `path` names it in errors. It replaces the
/// anchored file, when one is there, never more open to others than that one
/// was: a `CLAUDE.md` kept private (600) stays so when a section is written
/// into it.
fn stage(anchor: &Anchor, name: &str, path: &Path, bytes: &[u8], executable: bool) -> Result<()> {
    use rustix::fs::{AtFlags, FileType, Mode, OFlags};
    use std::io::Write;
    let mut mode = if executable { 0o755 } else { 0o644 };
    if let Ok(existing) = rustix::fs::statat(&anchor.folder, &anchor.name, AtFlags::SYMLINK_NOFOLLOW)
        && FileType::from_raw_mode(existing.st_mode) == FileType::RegularFile
    {
        mode &= (existing.st_mode & 0o777) | 0o700;
    }
    let created = rustix::fs::openat(
        &anchor.folder,
        name,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(mode),
    )
    .map_err(|e| Error::io("write", path, e.into()))?;
    let mut file = File::from(created);
    file.write_all(bytes).map_err(|e| Error::io("write", path, e))?;
    // The umask may have narrowed the mode.
    use std::os::unix::fs::PermissionsExt;
    file.set_permissions(std::fs::Permissions::from_mode(mode))
        .map_err(|e| Error::io("write", path, e))
}

/// A journal as stored: its JSON text and a keyed blake3 of that text under
/// this machine's journal key.
#[derive(Serialize, Deserialize)]
struct Sealed {
    seal: String,
    body: String,
}

/// Writes the journal, sealed, under a fixed staging name (so a crash mid-write
/// leaves nothing recovery does not know), flushes it, and renames it into place.
fn write_journal(roots: &Roots, journal: &Journal) -> Result<()> {
    use std::io::Write;
    let root = &roots.root;
    let body = serde_json::to_string_pretty(journal).map_err(|e| Error::internal(format!("journal: {e}")))?;
    let seal = blake3::keyed_hash(&roots.journal_key()?, body.as_bytes())
        .to_hex()
        .to_string();
    let text =
        serde_json::to_vec_pretty(&Sealed { seal, body }).map_err(|e| Error::internal(format!("journal: {e}")))?;
    let staged = staged_journal_path(root);
    // Never through a link put in its place, never blocking on a FIFO there.
    let mut file = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&staged)
            .map_err(|e| Error::io("write", &staged, e))?
    };
    file.write_all(&text).map_err(|e| Error::io("write", &staged, e))?;
    file.sync_all().map_err(|e| Error::io("write", &staged, e))?;
    tick();
    let path = journal_path(root);
    std::fs::rename(&staged, &path).map_err(|e| Error::io("write", &path, e))?;
    crate::atomic::sync_parent(&path);
    tick();
    Ok(())
}

/// The journal in `text`, when its seal is this machine's.
fn unseal(roots: &Roots, text: &[u8]) -> std::result::Result<Journal, String> {
    let sealed: Sealed =
        serde_json::from_slice(text).map_err(|e| format!("it is not a journal (line {})", e.line()))?;
    let key = roots.journal_key().map_err(|e| e.message().to_string())?;
    let expected = blake3::keyed_hash(&key, sealed.body.as_bytes());
    let given = blake3::Hash::from_hex(&sealed.seal).map_err(|_| "its seal is not a digest".to_string())?;
    if given != expected {
        return Err("it was not written by aam with this AAM_HOME (it may have come with the repository)".to_string());
    }
    serde_json::from_str(&sealed.body).map_err(|e| format!("it is not a journal (line {})", e.line()))
}

fn remove_journal(root: &Path) {
    let _ = std::fs::remove_file(staged_journal_path(root));
    let _ = std::fs::remove_file(journal_path(root));
}

/// Puts the old state back (best effort, every step idempotent).
/// Rolls back, then deletes the journal; keeps it when a folder could not be
/// reached, so the next command undoes the rest (see [`rollback`]).
fn undo(roots: &Roots, journal: &Journal) {
    match rollback(roots, journal) {
        None => remove_journal(&roots.root),
        Some(unreached) => tracing::warn!("{}", warning(&unreached.why(&journal_path(&roots.root)))),
    }
}

/// What the rollback or the clean-up finds of a key's folder.
enum Reach {
    /// Open and checked.
    Open(Anchor),
    /// Not there: deleted, or moved away.
    Gone,
    /// It now leads through a link where aam does not write.
    Away,
    /// It cannot be opened now (too many open files, no permission): why.
    Failed(String),
}

/// The folder of `key` for the rollback or the clean-up.
fn anchor_again(roots: &Roots, key: &str, open: &mut OpenFolders) -> Reach {
    use std::io::ErrorKind;
    match roots.anchor(key, open) {
        Ok(anchor) => Reach::Open(anchor),
        Err(e) if e.code() == ErrorCode::UnsafePath => Reach::Away,
        Err(e) if matches!(e.io_kind(), Some(ErrorKind::NotFound | ErrorKind::NotADirectory)) => Reach::Gone,
        Err(e) => Reach::Failed(e.message().to_string()),
    }
}

/// A key whose folder a rollback or clean-up could not reach, so the journal
/// is kept for the next command.
struct Unreached {
    key: String,
    /// Why (never [`Reach::Open`]).
    reach: Reach,
}

impl Unreached {
    /// Why the interrupted command whose journal is at `journal` cannot be
    /// finished or undone now, and what to do.
    fn why(&self, journal: &Path) -> Error {
        let key = &self.key;
        let (code, what, hint) = match &self.reach {
            Reach::Gone => (
                ErrorCode::Conflict,
                format!("the folder of `{key}` is gone, and the file the command set aside there may have gone with it"),
                format!(
                    "put the folder back where it was; the next aam command then undoes the interrupted one. If you removed it on purpose, delete `{}`",
                    journal.display()
                ),
            ),
            Reach::Failed(error) => (
                ErrorCode::IoError,
                format!("the folder of `{key}` cannot be opened now ({error})"),
                "fix that (`ulimit -n 4096` for too many open files), then run any aam command: it finishes or undoes the interrupted one".to_string(),
            ),
            Reach::Away | Reach::Open(_) => (
                ErrorCode::UnsafePath,
                format!("the folder of `{key}` now leads through a link out of where aam installs"),
                "put the folder back in place of the link; the next aam command then finishes or undoes it".to_string(),
            ),
        };
        Error::new(
            code,
            format!(
                "an interrupted aam command (`{}`) cannot be finished or undone: {what}",
                journal.display()
            ),
        )
        .with_hint(hint)
    }
}

/// An error as one line for a warning: its message and what to do.
fn warning(e: &Error) -> String {
    match e.hint() {
        Some(hint) => format!("{} ({hint})", e.message()),
        None => e.message().to_string(),
    }
}

/// Puts the old state back (best effort, every step idempotent); the first
/// key whose folder could not be reached, if any. A folder that is gone
/// counts only for a file the command set aside there: the folder may have
/// been moved away with it, and forgetting the journal would leave it hidden
/// for good. Nothing of a new file is lost with its folder.
fn rollback(roots: &Roots, journal: &Journal) -> Option<Unreached> {
    let mut unreached = None;
    let mut open = OpenFolders::default();
    let unswapped = first_unswapped(roots, journal, &mut open);
    for (n, op) in journal.ops.iter().enumerate().rev() {
        // By name in the folder as opened and checked, like the changes.
        let anchor = match anchor_again(roots, &op.key, &mut open) {
            Reach::Open(anchor) => anchor,
            // Nothing was set aside there: a new file, or one the command
            // never reached (files are replaced in order).
            Reach::Gone if !op.existed || unswapped.is_some_and(|first| first < n) => continue,
            reach => {
                unreached.get_or_insert(Unreached {
                    key: op.key.clone(),
                    reach,
                });
                continue;
            }
        };
        let name = anchor.name.as_os_str();
        let new = sibling_name(name, &journal.id, n, "new");
        let old = sibling_name(name, &journal.id, n, "old");
        let _ = rustix::fs::unlinkat(&anchor.folder, new.as_str(), AtFlags::empty());
        let present =
            |name: &std::ffi::OsStr| rustix::fs::statat(&anchor.folder, name, AtFlags::SYMLINK_NOFOLLOW).is_ok();
        // What is there now is what this command wrote (or nothing): anything
        // else was changed by someone after the crash and is kept.
        let ours_now = !present(name)
            || op
                .write
                .as_ref()
                .is_some_and(|written| hash_at(&anchor.folder, name).is_some_and(|h| h == *written));
        if op.existed {
            if !present(old.as_ref()) {
                continue;
            }
            if ours_now {
                let _ = rustix::fs::renameat(&anchor.folder, old.as_str(), &anchor.folder, name);
            } else {
                set_aside(roots, journal, &op.key, &anchor, &old);
            }
        } else if op.write.is_some() && ours_now && present(name) {
            let _ = rustix::fs::unlinkat(&anchor.folder, name, AtFlags::empty());
        }
    }
    for dir in journal.created_dirs.iter().rev() {
        if created_dir_is_ours(journal, dir) {
            remove_empty_dir(roots, dir, &mut open);
        }
    }
    unreached
}

/// The first change the interrupted command provably had not made yet: its
/// staged file is still there, so its replacement (renaming the staged file
/// into place, the last step of a change) had not happened, and changes are
/// made in order. `None` when no staged file is found.
fn first_unswapped(roots: &Roots, journal: &Journal, open: &mut OpenFolders) -> Option<usize> {
    journal.ops.iter().enumerate().find_map(|(n, op)| {
        op.write.as_ref()?;
        let Reach::Open(anchor) = anchor_again(roots, &op.key, open) else {
            return None;
        };
        let staged = sibling_name(anchor.name.as_os_str(), &journal.id, n, "new");
        rustix::fs::statat(&anchor.folder, staged.as_str(), AtFlags::SYMLINK_NOFOLLOW)
            .is_ok()
            .then_some(n)
    })
}

/// blake3 of the plain file `name` in `folder` (never through a link, never
/// blocking on a FIFO); `None` when it is not one or cannot be read.
fn hash_at(folder: &rustix::fd::OwnedFd, name: &std::ffi::OsStr) -> Option<String> {
    super::state::hash_at(folder, name, Path::new(name)).ok().flatten()
}

/// Keeps the file an interrupted command had moved aside (`old`, in the
/// anchored folder) when the place it would go back to was changed since: it
/// goes to `$AAM_HOME/backups/journal-<id>/<key>`, never over the newer file.
fn set_aside(roots: &Roots, journal: &Journal, key: &str, anchor: &Anchor, old: &str) {
    let saved = save_aside(roots, journal, key, anchor, old);
    tracing::warn!(
        "`{key}` changed after an interrupted aam command; kept it, and the version from before the command {}",
        kept_where(saved, old)
    );
}

/// Where a file kept by [`save_aside`] is: saved, or still beside its target.
fn kept_where(saved: Option<PathBuf>, old: &str) -> String {
    match saved {
        Some(target) => format!("is saved to {}", target.display()),
        None => format!("is left beside it as `{old}`"),
    }
}

/// Moves (or, across file systems, copies) the file `old` in the anchored
/// folder to `$AAM_HOME/backups/journal-<id>/<key>`, returning where it went.
fn save_aside(roots: &Roots, journal: &Journal, key: &str, anchor: &Anchor, old: &str) -> Option<PathBuf> {
    let home = roots.aam_home()?;
    let target = home
        .join("backups")
        .join(format!("journal-{}", journal.id))
        .join(key.replace("~/", "home/").replace('#', "--"));
    let moved = || rustix::fs::renameat(&anchor.folder, old, rustix::fs::CWD, &target).is_ok();
    let copied = || {
        use rustix::fs::{Mode, OFlags};
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let Ok(from) = rustix::fs::openat(&anchor.folder, old, flags, Mode::empty()) else {
            return false;
        };
        std::fs::File::create(&target)
            .and_then(|mut to| std::io::copy(&mut File::from(from), &mut to))
            .is_ok()
    };
    if target
        .parent()
        .is_none_or(|parent| std::fs::create_dir_all(parent).is_err())
    {
        return None;
    }
    if moved() {
        return Some(target);
    }
    if copied() {
        let _ = rustix::fs::unlinkat(&anchor.folder, old, AtFlags::empty());
        return Some(target);
    }
    None
}

/// A created folder may only be one on the way to a target of the journal.
fn created_dir_is_ours(journal: &Journal, dir: &str) -> bool {
    !dir.split('/').any(|p| p.is_empty() || p == "." || p == "..")
        && journal.ops.iter().any(|op| op.key.starts_with(&format!("{dir}/")))
}

/// Finishes a committed change: deletes the `.old` files, prunes folders that
/// removals emptied (inside the folders aam installs into), deletes the
/// journal; keeps it when a folder now leads through a link, so the next
/// command finishes the rest (that key is returned). A folder that is gone
/// holds nothing to keep: what it set aside there was being replaced or removed.
fn finish(roots: &Roots, journal: &Journal) -> Option<Unreached> {
    let mut unreached = None;
    let mut open = OpenFolders::default();
    for (n, op) in journal.ops.iter().enumerate() {
        match anchor_again(roots, &op.key, &mut open) {
            Reach::Open(anchor) => {
                let staged = sibling_name(&anchor.name, &journal.id, n, "new");
                let _ = rustix::fs::unlinkat(&anchor.folder, staged.as_str(), AtFlags::empty());
                let old = sibling_name(&anchor.name, &journal.id, n, "old");
                // An edit saved after the command's check, before the file
                // was moved aside, is in the old file: kept, never deleted.
                let edited = !op.expected.is_empty()
                    && hash_at(&anchor.folder, old.as_ref()).is_some_and(|now| !op.expected.contains(&now));
                if edited {
                    let saved = save_aside(roots, journal, &op.key, &anchor, &old);
                    tracing::warn!(
                        "`{}` changed while aam replaced or removed it; the changed version {}",
                        op.key,
                        kept_where(saved, &old)
                    );
                } else {
                    let _ = rustix::fs::unlinkat(&anchor.folder, old.as_str(), AtFlags::empty());
                }
            }
            Reach::Gone => {}
            reach => {
                unreached.get_or_insert(Unreached {
                    key: op.key.clone(),
                    reach,
                });
            }
        }
        tick();
        if op.write.is_none() {
            prune_empty(roots, &op.key, &mut open);
        }
    }
    if unreached.is_none() {
        prune(roots, &journal.prune_dirs, &mut open);
        remove_journal(&roots.root);
    }
    unreached
}

/// Removes the folders (deepest first) that are empty; never others.
fn prune(roots: &Roots, dirs: &[String], open: &mut OpenFolders) {
    let mut dirs: Vec<&String> = dirs
        .iter()
        .filter(|d| keys::check_dir(d, roots.global).is_ok())
        .collect();
    dirs.sort_by_key(|d| std::cmp::Reverse(d.matches('/').count()));
    for dir in dirs {
        remove_empty_dir(roots, dir, open);
    }
}

/// Removes the folders above a removed key that are now empty, up to (not
/// including) the layout folder it lies in: `.claude/skills/x/` goes when
/// empty, `.claude/skills/` and `.claude/` never do.
fn prune_empty(roots: &Roots, key: &str, open: &mut OpenFolders) {
    let global = roots.global;
    let Some(folder) = keys::owned_folders(global)
        .iter()
        .map(|f| f.key())
        .find(|f| key.starts_with(&format!("{f}/")))
    else {
        return;
    };
    let mut dir = key;
    while let Some((parent, _)) = dir.rsplit_once('/') {
        if parent.len() <= folder.len() {
            break;
        }
        if !remove_empty_dir(roots, parent, open) {
            break;
        }
        dir = parent;
    }
}

/// Removes the folder `dir` if it is empty, by name in its parent as opened
/// and checked (see [`Roots::anchor_dir`]); whether it went.
fn remove_empty_dir(roots: &Roots, dir: &str, open: &mut OpenFolders) -> bool {
    roots
        .anchor_dir(dir, open)
        .is_ok_and(|anchor| rustix::fs::unlinkat(&anchor.folder, &anchor.name, AtFlags::REMOVEDIR).is_ok())
}

// ---------------------------------------------------------------- recovery

/// Finishes or undoes an interrupted command under `roots.root`, if its
/// journal is there: rolls back (before the commit mark) or forward (after
/// it, replaying the catalog mirror with `apply_mirror`), and deletes the
/// journal. The caller holds the project lock. A journal that does not parse
/// or names paths aam may not touch is reported, never acted on.
pub fn recover(
    roots: &Roots,
    _held: &ProjectLock,
    apply_mirror: impl FnOnce(&[MirrorOp]) -> Result<()>,
) -> Result<Option<Recovered>> {
    // A journal that never made it into place means nothing had changed yet.
    let _ = std::fs::remove_file(staged_journal_path(&roots.root));
    let path = journal_path(&roots.root);
    let text = match crate::paths::read_plain(&path, MAX_JOURNAL_BYTES) {
        Ok(Some(text)) => text,
        Ok(None) => return Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => return Err(invalid_journal(&path, &e.to_string())),
        Err(e) => return Err(Error::io("read", &path, e)),
    };
    let journal = unseal(roots, &text).map_err(|why| invalid_journal(&path, &why))?;
    check_journal(roots, &journal).map_err(|why| invalid_journal(&path, &why))?;
    let outcome = match journal.stage {
        Stage::Prepared => {
            if let Some(unreached) = rollback(roots, &journal) {
                return Err(unreached.why(&path));
            }
            remove_journal(&roots.root);
            Recovered::RolledBack
        }
        Stage::Committed => {
            let root = roots.root_text();
            let mirror: Vec<MirrorOp> = journal
                .mirror
                .iter()
                .filter(|op| op.project_root() == root)
                .cloned()
                .collect();
            if let Err(e) = apply_mirror(&mirror) {
                tracing::warn!(
                    "the catalog's record of installs was not brought up to date ({e}); `aam doctor` reports it"
                );
            }
            if let Some(unreached) = finish(roots, &journal) {
                return Err(unreached.why(&path));
            }
            Recovered::RolledForward
        }
    };
    tracing::info!(journal = %journal.id, ?outcome, "recovered an interrupted aam command");
    Ok(Some(outcome))
}

fn check_journal(roots: &Roots, journal: &Journal) -> std::result::Result<(), String> {
    if journal.version != JOURNAL_VERSION {
        return Err(format!("layout version {} is not {JOURNAL_VERSION}", journal.version));
    }
    if journal.id.len() != 16 || !journal.id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err("its id is not 16 hex digits".to_string());
    }
    for dir in journal.created_dirs.iter().chain(&journal.prune_dirs) {
        keys::check_dir(dir, roots.global).map_err(|why| format!("folder `{dir}`: {why}"))?;
    }
    for op in &journal.ops {
        keys::check_file(&op.key, roots.global).map_err(|why| format!("`{}`: {why}", op.key))?;
        if op.key != LOCK_KEY {
            roots.file_path(&op.key).map_err(|e| e.message().to_string())?;
        }
    }
    Ok(())
}

fn invalid_journal(path: &Path, why: &str) -> Error {
    Error::new(
        ErrorCode::LockInvalid,
        format!(
            "the journal `{}` of an interrupted aam command cannot be used: {why}",
            path.display()
        ),
    )
    .with_hint("check the project's files with `aam verify --all`, then delete the journal file")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::rc::Rc;

    fn project() -> (tempfile::TempDir, Roots) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("p");
        std::fs::create_dir_all(root.join(".claude/skills/old")).unwrap();
        std::fs::create_dir_all(root.join(".aam")).unwrap();
        std::fs::write(root.join(".claude/skills/old/SKILL.md"), "old").unwrap();
        std::fs::write(root.join("CLAUDE.md"), "Mine\n").unwrap();
        let roots = Roots::new(root, dir.path().join("home"), false).with_state(dir.path().join("aam-home"));
        (dir, roots)
    }

    fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
        let mut out = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let p = e.path();
                let rel = p.strip_prefix(dir).unwrap().display().to_string();
                if rel == ".aam/lock" || rel == ".aam/.gitignore" {
                    continue;
                }
                if p.is_dir() {
                    out.push((rel, b"<dir>".to_vec()));
                    stack.push(p);
                } else {
                    out.push((rel, std::fs::read(&p).unwrap()));
                }
            }
        }
        out.sort();
        out
    }

    fn changes() -> Vec<FileChange> {
        vec![
            FileChange {
                key: ".claude/skills/new/deep/SKILL.md".into(),
                content: Some((Bytes::from(&b"new"[..]), true)),
                expected: Vec::new(),
            },
            FileChange {
                key: ".claude/skills/old/SKILL.md".into(),
                content: None,
                expected: Vec::new(),
            },
            FileChange {
                key: "CLAUDE.md".into(),
                content: Some((Bytes::from(&b"Mine\nand more\n"[..]), false)),
                expected: Vec::new(),
            },
            FileChange {
                key: LOCK_KEY.into(),
                content: Some((Bytes::from(&b"lock"[..]), false)),
                expected: Vec::new(),
            },
        ]
    }

    #[test]
    fn a_failing_mirror_puts_everything_back() {
        let (_dir, roots) = project();
        let before = snapshot(&roots.root);
        let err = apply(&roots, changes(), Vec::new(), Vec::new(), &Cancel::new(), |_| {
            Err(Error::internal("mirror failed"))
        })
        .unwrap_err();
        assert_eq!(err.message(), "mirror failed");
        assert_eq!(snapshot(&roots.root)[..], before[..], "old state, no leftovers");
    }

    #[test]
    fn a_cancelled_apply_puts_everything_back() {
        let (_dir, roots) = project();
        let before = snapshot(&roots.root);
        let cancel = Cancel::new();
        cancel.raise();
        let err = apply(&roots, changes(), Vec::new(), Vec::new(), &cancel, |_| Ok(())).unwrap_err();
        assert_eq!(err.code(), ErrorCode::Cancelled);
        assert_eq!(snapshot(&roots.root)[..], before[..]);
    }

    thread_local! {
        /// Runs after each file operation of this thread (see [`tick`]).
        pub(super) static AT_TICK: std::cell::RefCell<Option<Box<dyn FnMut()>>> = const { std::cell::RefCell::new(None) };
    }

    #[test]
    fn a_folder_swapped_for_a_link_midway_is_never_written_or_removed_through() {
        // At every file operation in turn, another process swaps the skill
        // folder for a link to a folder outside holding files of the same names.
        let names: Vec<String> = (0..4).map(|i| format!("f{i}.md")).collect();
        for writing in [true, false] {
            for swap_at in 1..=20 {
                let (dir, roots) = project();
                let outside = dir.path().join("outside");
                std::fs::create_dir_all(&outside).unwrap();
                let skill = roots.root.join(".claude/skills/kit");
                std::fs::create_dir_all(&skill).unwrap();
                for name in &names {
                    std::fs::write(outside.join(name), "victim").unwrap();
                    std::fs::write(skill.join(name), "installed").unwrap();
                }
                let parked = roots.root.join(".claude/parked");
                let (swapped, link, target) = (parked.clone(), skill.clone(), outside.clone());
                // What the real folder held when it was moved aside: nothing
                // may change there after, though it is the folder aam opened.
                let at_swap = Rc::new(RefCell::new(None));
                let seen = Rc::clone(&at_swap);
                let mut ops = 0;
                AT_TICK.with(|hook| {
                    *hook.borrow_mut() = Some(Box::new(move || {
                        ops += 1;
                        if ops == swap_at {
                            std::fs::rename(&link, &swapped).unwrap();
                            std::os::unix::fs::symlink(&target, &link).unwrap();
                            *seen.borrow_mut() = Some(snapshot(&swapped));
                        }
                    }))
                });
                // Writing makes a folder too; removing prunes the folders it emptied.
                let mut changes: Vec<FileChange> = names
                    .iter()
                    .map(|name| FileChange {
                        key: format!(".claude/skills/kit/{name}"),
                        content: writing.then(|| (Bytes::from(&b"written"[..]), false)),
                        expected: Vec::new(),
                    })
                    .collect();
                if writing {
                    changes.push(FileChange {
                        key: ".claude/skills/kit/sub/new.md".into(),
                        content: Some((Bytes::from(&b"new"[..]), false)),
                        expected: Vec::new(),
                    });
                } else {
                    std::fs::create_dir_all(outside.join("sub")).unwrap();
                }
                let victims = snapshot(&outside);
                let pruned = vec![".claude/skills/kit/sub".to_string()];
                let _ = apply(&roots, changes, pruned, Vec::new(), &Cancel::new(), |_| Ok(()));
                AT_TICK.with(|hook| hook.borrow_mut().take());
                let case = format!("writing {writing}, swapped at operation {swap_at}");
                assert_eq!(snapshot(&outside), victims, "{case}");
                if let Some(held) = at_swap.borrow().as_ref() {
                    assert_eq!(&snapshot(&parked), held, "{case}: written in the folder after it moved");
                }
                // With the folder back, the next command finishes or undoes
                // whatever could not be reached: no temporary file is left.
                if parked.exists() {
                    std::fs::remove_file(&skill).unwrap();
                    std::fs::rename(&parked, &skill).unwrap();
                }
                let held = lock_project(&roots.root, false, || {}).unwrap();
                recover(&roots, &held, |_| Ok(())).unwrap();
                let leftovers: Vec<String> = std::fs::read_dir(&skill)
                    .map(|entries| {
                        entries
                            .flatten()
                            .map(|e| e.file_name().to_string_lossy().into_owned())
                            .collect()
                    })
                    .unwrap_or_default();
                assert!(leftovers.iter().all(|n| !n.contains(".aam-")), "{case}: {leftovers:?}");
                assert!(!pending(&roots.root), "{case}");
            }
        }
    }

    #[test]
    fn folders_are_never_made_through_a_link_swapped_in_on_the_way() {
        for swap_at in 1..=10 {
            let (dir, roots) = project();
            std::fs::remove_dir_all(roots.root.join(".claude")).unwrap();
            let outside = dir.path().join("outside");
            std::fs::create_dir_all(&outside).unwrap();
            let (agent, parked, target) = (roots.root.join(".claude"), roots.root.join("parked"), outside.clone());
            let mut ops = 0;
            AT_TICK.with(|hook| {
                *hook.borrow_mut() = Some(Box::new(move || {
                    ops += 1;
                    if ops == swap_at && agent.exists() {
                        std::fs::rename(&agent, &parked).unwrap();
                        std::os::unix::fs::symlink(&target, &agent).unwrap();
                    }
                }))
            });
            let change = FileChange {
                key: ".claude/skills/kit/sub/f.md".into(),
                content: Some((Bytes::from(&b"new"[..]), false)),
                expected: Vec::new(),
            };
            let _ = apply(&roots, vec![change], Vec::new(), Vec::new(), &Cancel::new(), |_| Ok(()));
            AT_TICK.with(|hook| hook.borrow_mut().take());
            assert_eq!(snapshot(&outside), Vec::new(), "swapped at operation {swap_at}");
        }
    }

    #[test]
    fn a_change_across_many_folders_keeps_few_of_them_open() {
        // 400 skill folders: one open folder each would near the usual limit
        // of 1,024 open files, and a rollback short of descriptors took
        // folders for gone.
        let (_dir, roots) = project();
        let open_now = || std::fs::read_dir("/proc/self/fd").unwrap().count();
        let before = open_now();
        let most = Rc::new(RefCell::new(0usize));
        let seen = Rc::clone(&most);
        AT_TICK.with(|hook| {
            *hook.borrow_mut() = Some(Box::new(move || {
                let now = open_now();
                let mut most = seen.borrow_mut();
                *most = (*most).max(now);
            }))
        });
        let changes: Vec<FileChange> = (0..400)
            .map(|i| FileChange {
                key: format!(".claude/skills/s{i:03}/SKILL.md"),
                content: Some((Bytes::from(&b"new"[..]), false)),
                expected: Vec::new(),
            })
            .collect();
        apply(&roots, changes, Vec::new(), Vec::new(), &Cancel::new(), |_| Ok(())).unwrap();
        AT_TICK.with(|hook| hook.borrow_mut().take());
        // Other tests of this process open files meanwhile: a wide margin.
        let most = *most.borrow();
        assert!(most < before + 150, "{most} open at once, {before} before");
    }

    #[test]
    fn a_folder_moved_away_midway_keeps_the_journal_until_it_is_back() {
        // At every file operation in turn, another process moves the skill
        // folder out of the project (no link in its place).
        let names: Vec<String> = (0..4).map(|i| format!("f{i}.md")).collect();
        for writing in [true, false] {
            for move_at in 1..=12 {
                let (dir, roots) = project();
                let skill = roots.root.join(".claude/skills/kit");
                let moved = dir.path().join("moved-kit");
                std::fs::create_dir_all(&skill).unwrap();
                for name in &names {
                    std::fs::write(skill.join(name), format!("mine {name}")).unwrap();
                }
                let before = snapshot(&skill);
                let (from, to) = (skill.clone(), moved.clone());
                let mut ops = 0;
                AT_TICK.with(|hook| {
                    *hook.borrow_mut() = Some(Box::new(move || {
                        ops += 1;
                        if ops == move_at {
                            std::fs::rename(&from, &to).unwrap();
                        }
                    }))
                });
                let changes: Vec<FileChange> = names
                    .iter()
                    .map(|name| FileChange {
                        key: format!(".claude/skills/kit/{name}"),
                        content: writing.then(|| (Bytes::from(&b"written"[..]), false)),
                        expected: Vec::new(),
                    })
                    .collect();
                let applied = apply(&roots, changes, Vec::new(), Vec::new(), &Cancel::new(), |_| Ok(()));
                AT_TICK.with(|hook| hook.borrow_mut().take());
                let case = format!("writing {writing}, moved at operation {move_at}");
                if !moved.exists() {
                    continue; // done before the move
                }
                let held = lock_project(&roots.root, false, || {}).unwrap();
                if applied.is_err() {
                    // Undone as far as it could; the files it set aside went with the folder.
                    assert!(pending(&roots.root), "{case}: the journal was dropped");
                    let refused = recover(&roots, &held, |_| Ok(())).unwrap_err();
                    assert_eq!(refused.code(), ErrorCode::Conflict, "{case}");
                    assert!(refused.message().contains("is gone"), "{case}: {}", refused.message());
                }
                // Put back, the next command undoes it all. A command that
                // had committed is done; the clean-up could not reach what it
                // set aside (replaced or removed bytes), which stays hidden.
                std::fs::rename(&moved, &skill).unwrap();
                recover(&roots, &held, |_| Ok(())).unwrap();
                assert!(!pending(&roots.root), "{case}");
                let after = snapshot(&skill);
                if applied.is_err() {
                    assert_eq!(after, before, "{case}: not undone");
                } else {
                    let shown: Vec<_> = after.into_iter().filter(|(n, _)| !n.starts_with('.')).collect();
                    let expected: Vec<_> = match writing {
                        true => names.iter().map(|n| (n.clone(), b"written".to_vec())).collect(),
                        false => Vec::new(),
                    };
                    assert_eq!(shown, expected, "{case}");
                }
            }
        }
    }

    /// A folder removed (by another project's uninstall, say) before the
    /// command reached its file held nothing the command set aside: the undo
    /// completes instead of keeping the journal until the folder is back
    /// (found by a kill -9 helper round).
    #[test]
    fn a_folder_removed_before_the_command_reached_it_does_not_block_the_undo() {
        let (_dir, roots) = project();
        let agents = roots.root.join(".claude/agents");
        let kit = roots.root.join(".claude/skills/kit");
        std::fs::create_dir_all(&kit).unwrap();
        std::fs::create_dir_all(&agents).unwrap();
        std::fs::write(kit.join("f.md"), "theirs").unwrap();
        let (watch, gone) = (agents.clone(), kit.clone());
        AT_TICK.with(|hook| {
            *hook.borrow_mut() = Some(Box::new(move || {
                let staged = std::fs::read_dir(&watch)
                    .unwrap()
                    .flatten()
                    .any(|e| e.file_name().to_string_lossy().ends_with(".new"));
                if staged && gone.exists() {
                    std::fs::remove_dir_all(&gone).unwrap();
                }
            }))
        });
        let changes = vec![
            FileChange {
                key: ".claude/agents/a.md".into(),
                content: Some((Bytes::from(&b"new"[..]), false)),
                expected: Vec::new(),
            },
            FileChange {
                key: ".claude/skills/kit/f.md".into(),
                content: Some((Bytes::from(&b"ours"[..]), false)),
                expected: Vec::new(),
            },
        ];
        let applied = apply(&roots, changes, Vec::new(), Vec::new(), &Cancel::new(), |_| Ok(()));
        AT_TICK.with(|hook| hook.borrow_mut().take());
        assert!(applied.is_err());
        assert!(!kit.exists());
        assert!(
            !pending(&roots.root),
            "nothing was set aside where the folder went: undone at once"
        );
        assert_eq!(
            std::fs::read_dir(&agents).unwrap().count(),
            0,
            "nothing of the command is left"
        );
    }

    #[test]
    fn a_successful_apply_leaves_only_the_new_files() {
        let (_dir, roots) = project();
        apply(&roots, changes(), Vec::new(), Vec::new(), &Cancel::new(), |_| Ok(())).unwrap();
        let after: Vec<String> = snapshot(&roots.root).into_iter().map(|(p, _)| p).collect();
        assert_eq!(
            after,
            [
                ".aam",
                ".aam/aam-lock.yaml",
                ".claude",
                ".claude/skills",
                ".claude/skills/new",
                ".claude/skills/new/deep",
                ".claude/skills/new/deep/SKILL.md",
                "CLAUDE.md"
            ],
            "the emptied skill folder is pruned, the layout folder kept"
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(roots.root.join(".claude/skills/new/deep/SKILL.md"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o755);
    }

    /// A file replaced is never more open to others than it was (writing a
    /// section into a private `CLAUDE.md` made it 644: found by an attacker
    /// helper); a new file gets the usual mode.
    #[test]
    fn a_replaced_file_keeps_its_privacy() {
        use std::os::unix::fs::PermissionsExt;
        let (_dir, roots) = project();
        let mode_of = |key: &str| std::fs::metadata(roots.root.join(key)).unwrap().permissions().mode() & 0o777;
        for (before, after) in [(0o600, 0o600), (0o640, 0o640), (0o750, 0o640), (0o666, 0o644)] {
            std::fs::set_permissions(roots.root.join("CLAUDE.md"), std::fs::Permissions::from_mode(before)).unwrap();
            let change = FileChange {
                key: "CLAUDE.md".into(),
                content: Some((Bytes::from(format!("Mine {before:o}\n").as_bytes()), false)),
                expected: Vec::new(),
            };
            apply(&roots, vec![change], Vec::new(), Vec::new(), &Cancel::new(), |_| Ok(())).unwrap();
            assert_eq!(mode_of("CLAUDE.md"), after, "from {before:o}");
        }
    }

    /// A file whose name fits on disk but leaves no room for `.<name>.aam-...`
    /// is replaced through shorter siblings (it failed with ENAMETOOLONG).
    #[test]
    fn a_file_with_the_longest_name_is_replaced() {
        let (_dir, roots) = project();
        let name = "n".repeat(crate::paths::MAX_NAME_BYTES);
        let key = format!(".claude/skills/old/{name}");
        std::fs::write(roots.root.join(&key), "before").unwrap();
        let change = FileChange {
            key: key.clone(),
            content: Some((Bytes::from(&b"after"[..]), false)),
            expected: vec![blake3::hash(b"before").to_hex().to_string()],
        };
        apply(&roots, vec![change], Vec::new(), Vec::new(), &Cancel::new(), |_| Ok(())).unwrap();
        assert_eq!(std::fs::read(roots.root.join(&key)).unwrap(), b"after");
        assert!(snapshot(&roots.root).iter().all(|(p, _)| !p.contains(".aam-")));
    }

    #[test]
    fn recovery_rolls_back_before_the_commit_mark_and_forward_after() {
        for stage in [Stage::Prepared, Stage::Committed] {
            let (_dir, roots) = project();
            let before = snapshot(&roots.root);
            // Make the changes by hand up to the renames, as a killed process leaves them.
            let mut paths = Vec::new();
            let mut contents = Vec::new();
            let mut ops = Vec::new();
            let mut created = Vec::new();
            for change in changes() {
                let path = roots.file_path(&change.key).unwrap();
                for d in roots.missing_dirs(&change.key) {
                    if !created.contains(&d) {
                        created.push(d);
                    }
                }
                ops.push(Op {
                    write: change
                        .content
                        .as_ref()
                        .map(|(b, _)| blake3::hash(b).to_hex().to_string()),
                    executable: false,
                    existed: path.exists(),
                    expected: Vec::new(),
                    key: change.key.clone(),
                });
                paths.push(path);
                contents.push(change.content.map(|(b, _)| b));
            }
            created.sort_by_key(|d| d.matches('/').count());
            let journal = Journal {
                version: JOURNAL_VERSION,
                id: "0123456789abcdef".into(),
                stage,
                ops,
                created_dirs: created,
                prune_dirs: Vec::new(),
                mirror: vec![MirrorOp::Remove {
                    project_root: roots.root_text(),
                    package: "kit".into(),
                }],
            };
            write_journal(&roots, &journal).unwrap();
            make_changes(&roots, &journal, &paths, &contents, &Cancel::new()).unwrap();
            let mut replayed = Vec::new();
            let held = lock_project(&roots.root, true, || {}).unwrap();
            let outcome = recover(&roots, &held, |ops| {
                replayed.extend_from_slice(ops);
                Ok(())
            })
            .unwrap();
            assert!(!pending(&roots.root));
            if stage == Stage::Prepared {
                assert_eq!(outcome, Some(Recovered::RolledBack));
                assert_eq!(snapshot(&roots.root)[..], before[..]);
                assert!(replayed.is_empty());
            } else {
                assert_eq!(outcome, Some(Recovered::RolledForward));
                assert_eq!(std::fs::read(roots.root.join(LOCK_KEY)).unwrap(), b"lock");
                assert!(!roots.root.join(".claude/skills/old").exists());
                assert!(
                    snapshot(&roots.root).iter().all(|(p, _)| !p.contains(".aam-")),
                    "no staged or old files left"
                );
                assert_eq!(replayed.len(), 1);
            }
        }
    }

    /// A file edited after the command checked it (what it expected there is
    /// not what it moved aside) is saved, not deleted with the old files: a
    /// save that landed between the check and the swap, or one written into
    /// the old file by an editor holding it open. Files that still hold what
    /// was expected go as before; so does a file with no expectation.
    #[test]
    fn an_edit_saved_while_the_command_ran_is_kept() {
        let (_dir, roots) = project();
        let digest = |bytes: &[u8]| blake3::hash(bytes).to_hex().to_string();
        std::fs::write(roots.root.join(".claude/skills/old/SKILL.md"), "edited meanwhile\n").unwrap();
        let changes = vec![
            FileChange {
                key: ".claude/skills/old/SKILL.md".into(),
                content: Some((Bytes::from(&b"new"[..]), false)),
                expected: vec![digest(b"old")],
            },
            FileChange {
                key: "CLAUDE.md".into(),
                content: None,
                expected: vec![digest(b"Mine\n")],
            },
        ];
        apply(&roots, changes, Vec::new(), Vec::new(), &Cancel::new(), |_| Ok(())).unwrap();
        let files = |dir: &Path| -> Vec<(String, Vec<u8>)> {
            snapshot(dir)
                .into_iter()
                .filter(|(_, bytes)| bytes != b"<dir>")
                .collect()
        };
        assert_eq!(
            files(&roots.root),
            [(".claude/skills/old/SKILL.md".to_string(), b"new".to_vec())],
            "the change is made, and no old file is left beside it"
        );
        let backups = roots.aam_home().unwrap().join("backups");
        let journals: Vec<PathBuf> = std::fs::read_dir(&backups)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        let [journal] = &journals[..] else {
            panic!("one journal's backup: {journals:?}")
        };
        assert_eq!(
            files(journal),
            [(
                ".claude/skills/old/SKILL.md".to_string(),
                b"edited meanwhile\n".to_vec()
            )],
            "only the edited file is saved"
        );
    }

    /// The journal `0123456789abcdef` of a command replacing `CLAUDE.md` with
    /// `new\n`, at `stage`, expecting `expected` there.
    fn replacing_claude_md(stage: Stage, expected: Vec<String>) -> Journal {
        Journal {
            version: JOURNAL_VERSION,
            id: "0123456789abcdef".into(),
            stage,
            ops: vec![Op {
                key: "CLAUDE.md".into(),
                write: Some(blake3::hash(b"new\n").to_hex().to_string()),
                executable: false,
                existed: true,
                expected,
            }],
            created_dirs: Vec::new(),
            prune_dirs: Vec::new(),
            mirror: Vec::new(),
        }
    }

    /// Rolled forward, a committed change keeps an old file that does not
    /// hold what was expected, as the command itself would have.
    #[test]
    fn rolling_forward_keeps_an_edit_saved_while_the_command_ran() {
        let (_dir, roots) = project();
        let path = roots.file_path("CLAUDE.md").unwrap();
        let expected = vec![blake3::hash(b"what aam read\n").to_hex().to_string()];
        let journal = replacing_claude_md(Stage::Committed, expected);
        write_journal(&roots, &journal).unwrap();
        let contents = vec![Some(Bytes::from(&b"new\n"[..]))];
        make_changes(&roots, &journal, std::slice::from_ref(&path), &contents, &Cancel::new()).unwrap();
        // The crash came after the commit mark, before the old files went.
        let held = lock_project(&roots.root, true, || {}).unwrap();
        assert_eq!(
            recover(&roots, &held, |_| Ok(())).unwrap(),
            Some(Recovered::RolledForward)
        );
        assert_eq!(std::fs::read(&path).unwrap(), b"new\n");
        let saved = roots
            .aam_home()
            .unwrap()
            .join("backups/journal-0123456789abcdef/CLAUDE.md");
        assert_eq!(std::fs::read(saved).unwrap(), b"Mine\n", "the edit is kept");
        assert!(snapshot(&roots.root).iter().all(|(p, _)| !p.contains(".aam-")));
    }

    #[test]
    fn recovery_keeps_a_file_changed_after_the_crash() {
        let (_dir, roots) = project();
        let path = roots.file_path("CLAUDE.md").unwrap();
        let journal = replacing_claude_md(Stage::Prepared, Vec::new());
        write_journal(&roots, &journal).unwrap();
        let contents = vec![Some(Bytes::from(&b"new\n"[..]))];
        make_changes(&roots, &journal, std::slice::from_ref(&path), &contents, &Cancel::new()).unwrap();
        // The crash came; then the user edited the file before any aam ran.
        std::fs::write(&path, "edited after the crash\n").unwrap();
        let held = lock_project(&roots.root, true, || {}).unwrap();
        recover(&roots, &held, |_| Ok(())).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"edited after the crash\n");
        let saved = roots
            .aam_home()
            .unwrap()
            .join("backups/journal-0123456789abcdef/CLAUDE.md");
        assert_eq!(
            std::fs::read(saved).unwrap(),
            b"Mine\n",
            "the version from before is kept"
        );
        assert!(snapshot(&roots.root).iter().all(|(p, _)| !p.contains(".aam-")));
    }

    #[test]
    fn a_hostile_journal_is_refused_untouched() {
        let (dir, roots) = project();
        let outside = dir.path().join("victim.txt");
        std::fs::write(&outside, "precious").unwrap();
        let journal = Journal {
            version: JOURNAL_VERSION,
            id: "0123456789abcdef".into(),
            stage: Stage::Prepared,
            ops: vec![Op {
                key: "../victim.txt".into(),
                write: Some(blake3::hash(b"precious").to_hex().to_string()),
                executable: false,
                existed: false,
                expected: Vec::new(),
            }],
            created_dirs: Vec::new(),
            prune_dirs: Vec::new(),
            mirror: Vec::new(),
        };
        write_journal(&roots, &journal).unwrap();
        let held = lock_project(&roots.root, true, || {}).unwrap();
        let err = recover(&roots, &held, |_| Ok(())).unwrap_err();
        assert_eq!(err.code(), ErrorCode::LockInvalid);
        assert_eq!(std::fs::read(&outside).unwrap(), b"precious");
        assert!(pending(&roots.root), "left for the user to look at");
    }

    #[test]
    fn a_journal_sealed_elsewhere_is_never_acted_on() {
        let (dir, roots) = project();
        std::fs::write(roots.root.join("CLAUDE.md"), "team notes\n").unwrap();
        // A well-formed journal that would delete CLAUDE.md on rollback, as a
        // repository could ship it (sealed with someone else's key).
        let journal = Journal {
            version: JOURNAL_VERSION,
            id: "0123456789abcdef".into(),
            stage: Stage::Prepared,
            ops: vec![Op {
                key: "CLAUDE.md".into(),
                write: Some(blake3::hash(b"team notes\n").to_hex().to_string()),
                executable: false,
                existed: false,
                expected: Vec::new(),
            }],
            created_dirs: Vec::new(),
            prune_dirs: Vec::new(),
            mirror: Vec::new(),
        };
        let elsewhere = roots.clone().with_state(dir.path().join("other-home"));
        write_journal(&elsewhere, &journal).unwrap();
        let held = lock_project(&roots.root, true, || {}).unwrap();
        let err = recover(&roots, &held, |_| Ok(())).unwrap_err();
        assert_eq!(err.code(), ErrorCode::LockInvalid);
        assert!(err.message().contains("not written by aam"), "{}", err.message());
        assert_eq!(std::fs::read(roots.root.join("CLAUDE.md")).unwrap(), b"team notes\n");
    }

    #[test]
    fn the_project_lock_is_exclusive() {
        let dir = tempfile::tempdir().unwrap();
        let held = lock_project(dir.path(), true, || {}).unwrap();
        let err = lock_project(dir.path(), true, || {}).err().unwrap();
        assert_eq!(err.code(), ErrorCode::Conflict);
        drop(held);
        assert!(lock_project(dir.path(), true, || {}).is_ok());
    }

    #[test]
    fn the_first_lock_ignores_the_runtime_files_and_never_replaces_a_gitignore() {
        let dir = tempfile::tempdir().unwrap();
        let fresh = dir.path().join("fresh");
        drop(lock_project(&fresh, true, || {}).unwrap());
        let written = std::fs::read_to_string(fresh.join(".aam/.gitignore")).unwrap();
        assert_eq!(written, RUNTIME_GITIGNORE);
        for runtime in ["/lock", "/journal.json", "/journal.json.new"] {
            assert!(written.lines().any(|line| line == runtime), "{runtime}");
        }
        // Deleted on purpose after the first command: not written again.
        std::fs::remove_file(fresh.join(".aam/.gitignore")).unwrap();
        drop(lock_project(&fresh, true, || {}).unwrap());
        assert!(!fresh.join(".aam/.gitignore").exists());
        // The user's own, or a link, is left as it is.
        let own = dir.path().join("own");
        std::fs::create_dir_all(own.join(".aam")).unwrap();
        std::fs::write(own.join(".aam/.gitignore"), "mine\n").unwrap();
        drop(lock_project(&own, true, || {}).unwrap());
        assert_eq!(std::fs::read(own.join(".aam/.gitignore")).unwrap(), b"mine\n");
        let linked = dir.path().join("linked");
        std::fs::create_dir_all(linked.join(".aam")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("elsewhere"), linked.join(".aam/.gitignore")).unwrap();
        drop(lock_project(&linked, true, || {}).unwrap());
        assert!(!dir.path().join("elsewhere").exists());
    }

    #[test]
    fn a_shipped_link_or_fifo_is_never_taken_for_the_project_lock() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        // `.aam/lock` as a link: nothing is made where it points.
        let linked = dir.path().join("linked");
        std::fs::create_dir_all(linked.join(".aam")).unwrap();
        std::os::unix::fs::symlink(outside.join("made-by-aam"), linked.join(".aam/lock")).unwrap();
        let err = lock_project(&linked, true, || {}).err().unwrap();
        assert_eq!(err.code(), ErrorCode::UnsafePath);
        assert!(!outside.join("made-by-aam").exists());
        // `.aam` itself as a link: no lock is made in the folder it points to.
        let folder = dir.path().join("folder");
        std::fs::create_dir_all(&folder).unwrap();
        std::os::unix::fs::symlink(&outside, folder.join(".aam")).unwrap();
        assert_eq!(
            lock_project(&folder, true, || {}).err().unwrap().code(),
            ErrorCode::UnsafePath
        );
        assert!(!outside.join("lock").exists());
        // A FIFO: refused at once instead of blocking the open.
        let fifo = dir.path().join("fifo");
        std::fs::create_dir_all(fifo.join(".aam")).unwrap();
        crate::paths::make_fifo(&fifo.join(".aam/lock"));
        assert_eq!(
            lock_project(&fifo, true, || {}).err().unwrap().code(),
            ErrorCode::UnsafePath
        );
    }
}
