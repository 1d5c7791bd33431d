//! How the files and sections a lock entry records compare with the disk.
//!
//! Every key passes [`super::Roots`]'s checks before it is opened. Files are
//! hashed as streams (memory does not grow with their size) and never read
//! through a link: a link, a folder or a damaged section where aam wrote a file
//! or section counts as modified, so nothing follows it and nothing deletes it
//! unless forced. Walks of package folders never follow links, so a link cycle
//! cannot trap them.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use super::Roots;
use super::keys::{CheckedKey, copy_dir};
use crate::deploy::sections::{self, Section};
use crate::error::{Error, ErrorCode, Result};
use crate::packages::lock::LockedPackage;
use crate::packages::store::ObjectStore;
use crate::paths::Inside;

/// How a recorded file compares with what is on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileState {
    /// As installed.
    Ok,
    /// Changed, or replaced by something aam did not write.
    Modified,
    /// Gone.
    Missing,
}

/// The largest file `aam diff` shows; bigger ones are summarized.
const DIFF_LIMIT: u64 = 4 * 1024 * 1024;

/// The most entries a walk of a package's folders visits.
const WALK_LIMIT: usize = 100_000;

/// What is on disk for a key.
enum Current {
    Missing,
    /// A link in the file's place, and what it points to (never followed).
    Link(PathBuf),
    /// A shared file whose section is damaged: the whole file as read.
    Damaged(Vec<u8>),
    /// Something else aam did not write: a folder, a FIFO, a device, a file
    /// beyond a link leading out, a shared file larger than aam keeps
    /// sections in.
    Foreign,
    /// A regular file (whole-file keys), open to read, and its path.
    File(std::fs::File, PathBuf),
    /// A section's content.
    Section(String),
}

/// Opens what a key names, only ever through [`Roots::open_to_read`], so
/// nothing is read through a link, even one swapped in after the key's check.
fn current(roots: &Roots, key: &str) -> Result<Current> {
    let checked = roots.check_key(key)?;
    let (path, found) = roots.open_to_read(checked.file(), key)?;
    let file = match found {
        Inside::File(file) => file,
        Inside::Missing => return Ok(Current::Missing),
        Inside::Link(target) => return Ok(Current::Link(target)),
        Inside::NotPlain | Inside::Outside => return Ok(Current::Foreign),
    };
    match checked {
        CheckedKey::File(_) => Ok(Current::File(file, path)),
        CheckedKey::Section { name, kind, .. } => {
            let mut bytes = Vec::new();
            (&file)
                .take(super::plan::MAX_SHARED_FILE + 1)
                .read_to_end(&mut bytes)
                .map_err(|e| Error::io("read", &path, e))?;
            // Larger than aam ever keeps sections in: nothing of it is read.
            if bytes.len() as u64 > super::plan::MAX_SHARED_FILE {
                return Ok(Current::Foreign);
            }
            let text = String::from_utf8_lossy(&bytes);
            Ok(match sections::read(&text, &name, kind.as_str()) {
                Section::Absent => Current::Missing,
                Section::Present(content) => Current::Section(content.to_string()),
                Section::Damaged => Current::Damaged(bytes.clone()),
            })
        }
    }
}

/// blake3 of the plain file `name` in the open `folder`, read as a stream;
/// never through a link, never blocking on a FIFO. `None` when nothing, or not
/// a plain file, is there now; `path` names it in errors.
pub fn hash_at(folder: &rustix::fd::OwnedFd, name: &std::ffi::OsStr, path: &Path) -> Result<Option<String>> {
    use rustix::fs::{FileType, Mode, OFlags};
    use rustix::io::Errno;
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let opened = match rustix::fs::openat(folder, name, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::NOENT | Errno::LOOP | Errno::NXIO | Errno::ISDIR) => return Ok(None),
        Err(e) => return Err(Error::io("read", path, e.into())),
    };
    let stat = rustix::fs::fstat(&opened).map_err(|e| Error::io("read", path, e.into()))?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Ok(None);
    }
    hash_open(&std::fs::File::from(opened), path).map(Some)
}

/// blake3 of an open file, read as a stream.
fn hash_open(file: &std::fs::File, path: &Path) -> Result<String> {
    let mut hasher = blake3::Hasher::new();
    hasher.update_reader(file).map_err(|e| Error::io("read", path, e))?;
    Ok(hasher.finalize().to_hex().to_string())
}

/// The state of one recorded key against its recorded digest.
pub fn key_state(roots: &Roots, key: &str, digest: &str) -> Result<FileState> {
    Ok(match current(roots, key)? {
        Current::Missing => FileState::Missing,
        Current::Link(_) | Current::Damaged(_) | Current::Foreign => FileState::Modified,
        Current::File(ref file, ref path) if hash_open(file, path)? == digest => FileState::Ok,
        Current::Section(content) if blake3::hash(content.as_bytes()).to_hex().as_str() == digest => FileState::Ok,
        Current::File(..) | Current::Section(_) => FileState::Modified,
    })
}

/// The blake3 of what is at `key`: a plain file's bytes or a section's text;
/// `None` when it is gone, or is anything aam never writes (a link, a
/// folder, a damaged section).
pub fn current_digest(roots: &Roots, key: &str) -> Result<Option<String>> {
    Ok(match current(roots, key)? {
        Current::File(ref file, ref path) => Some(hash_open(file, path)?),
        Current::Section(content) => Some(blake3::hash(content.as_bytes()).to_hex().to_string()),
        Current::Missing | Current::Link(_) | Current::Damaged(_) | Current::Foreign => None,
    })
}

/// Those of `keys` (edited files and sections) that still hold the conflict
/// markers of an `upgrade --merge=markers` (see
/// [`super::merge::has_conflict_markers`]): merges left to resolve by hand.
/// A file is read up to the largest one `aam diff` shows.
pub fn conflicted_keys(roots: &Roots, keys: &[String]) -> Result<Vec<String>> {
    let mut conflicted = Vec::new();
    for key in keys {
        let marked = match current(roots, key)? {
            Current::File(file, path) => {
                let mut bytes = Vec::new();
                (&file)
                    .take(DIFF_LIMIT)
                    .read_to_end(&mut bytes)
                    .map_err(|e| Error::io("read", &path, e))?;
                super::merge::has_conflict_markers(&bytes)
            }
            Current::Section(content) => super::merge::has_conflict_markers(content.as_bytes()),
            Current::Missing | Current::Link(_) | Current::Damaged(_) | Current::Foreign => false,
        };
        if marked {
            conflicted.push(key.clone());
        }
    }
    Ok(conflicted)
}

/// Whether what is at `key` is a plain file or an intact section: what a
/// write can leave as it is (a link, a folder or a damaged section cannot be).
pub fn is_plain(roots: &Roots, key: &str) -> Result<bool> {
    Ok(matches!(current(roots, key)?, Current::File(..) | Current::Section(_)))
}

/// Whether anything is at `key`: a file, a section, a link, a folder.
pub fn key_exists(roots: &Roots, key: &str) -> Result<bool> {
    Ok(!matches!(current(roots, key)?, Current::Missing))
}

/// The state of every file and section a lock entry records.
pub fn file_status(roots: &Roots, entry: &LockedPackage) -> Result<BTreeMap<String, FileState>> {
    let mut out = BTreeMap::new();
    for (key, digest) in &entry.file_checksums {
        out.insert(key.clone(), key_state(roots, key, digest)?);
    }
    Ok(out)
}

/// The keys of `status` edited since install: modified, unless what is there
/// holds bytes aam wrote at that key on this machine (`written_here(key,
/// digest)`), which were written for another lock (a teammate's upgrade
/// pulled since): out of date, with nobody's edit in them. A key beyond a
/// link (see [`Roots::beyond_link`]) is `AAM_UNSAFE_PATH` saying where the
/// link leads: an install can neither check nor write it, and calling what
/// was never read an edit would send the user looking for one.
pub fn edited_keys(
    roots: &Roots,
    status: &BTreeMap<String, FileState>,
    written_here: impl Fn(&str, &str) -> bool,
) -> Result<Vec<String>> {
    let mut edited = Vec::new();
    for key in keys_in(status, FileState::Modified) {
        if roots.key_beyond_link(&key) {
            roots.key_path(&key)?;
        }
        if !current_digest(roots, &key)?.is_some_and(|digest| written_here(&key, &digest)) {
            edited.push(key);
        }
    }
    Ok(edited)
}

/// The keys of `status` in `state`.
pub fn keys_in(status: &BTreeMap<String, FileState>, state: FileState) -> Vec<String> {
    status
        .iter()
        .filter(|(_, s)| **s == state)
        .map(|(k, _)| k.clone())
        .collect()
}

/// Copies the files of `keys` as they are now (edits a command is about to
/// replace) to a new folder `<home>/backups/<package>--<timestamp>[-n]/`,
/// returning that folder. Files of any size are copied whole, as streams, and
/// land before the command replaces anything; two commands backing up the same
/// package in the same second get folders of their own. Keys that hold nothing
/// now are skipped; a link put in a file's place is saved as that link (never
/// followed), and a shared file whose section is damaged is saved whole.
/// Anything else (a folder, a FIFO) cannot be saved: that fails with
/// `AAM_CONFLICT` before anything is replaced, rather than report a backup it
/// did not make. The files land in a hidden `.<name>.partial` folder, held
/// locked while it fills and renamed once complete: a backup killed halfway
/// is never taken for one, and the next backup deletes it.
pub fn backup(home: &Path, roots: &Roots, package: &str, keys: &[String]) -> Result<String> {
    let backups = home.join("backups");
    remove_abandoned_backups(&backups);
    let (partial, _held) = new_partial_backup(&backups)?;
    let saved = save_into(&partial, roots, keys).and_then(|()| finish_backup(&backups, &partial, package));
    if saved.is_err() {
        // A backup that failed holds nothing anyone should restore from.
        let _ = std::fs::remove_dir_all(&partial);
    }
    saved.map(|dir| dir.display().to_string())
}

/// A new hidden folder for a backup being made, and the lock held on it
/// while it fills.
fn new_partial_backup(backups: &Path) -> Result<(PathBuf, std::fs::File)> {
    std::fs::create_dir_all(backups).map_err(|e| Error::io("create", backups, e))?;
    let mut random = [0u8; 8];
    getrandom::fill(&mut random).map_err(|e| Error::internal(format!("no randomness for a folder name: {e}")))?;
    let random = faster_hex::hex_string(&random);
    // Made under a name the sweep does not take, and named `.partial` only
    // once locked: another command's sweep never sees it unlocked.
    let (new, partial) = (
        backups.join(format!(".{random}.new")),
        backups.join(format!(".{random}.partial")),
    );
    std::fs::create_dir(&new).map_err(|e| Error::io("create", &new, e))?;
    let held = std::fs::File::open(&new).map_err(|e| Error::io("open", &new, e))?;
    held.lock().map_err(|e| Error::io("lock", &new, e))?;
    std::fs::rename(&new, &partial).map_err(|e| Error::io("rename", &new, e))?;
    Ok((partial, held))
}

/// Deletes the partial backups no live command holds (one killed halfway).
fn remove_abandoned_backups(backups: &Path) {
    // A `backups` that is a link leads to someone else's folder: nothing there is swept.
    if !std::fs::symlink_metadata(backups).is_ok_and(|m| m.is_dir()) {
        return;
    }
    let Ok(entries) = std::fs::read_dir(backups) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !(name.starts_with('.') && name.ends_with(".partial")) {
            continue;
        }
        let abandoned = std::fs::File::open(entry.path()).is_ok_and(|dir| dir.try_lock().is_ok());
        if abandoned && std::fs::remove_dir_all(entry.path()).is_ok() {
            tracing::debug!("deleted the partial backup {}", entry.path().display());
        }
    }
}

/// Gives a complete backup its name, `<package>--<timestamp>[-n]`: never
/// over another's, two commands in the same second get one each.
fn finish_backup(backups: &Path, partial: &Path, package: &str) -> Result<PathBuf> {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    let name = format!(
        "{}--{}",
        package.replace('/', "-"),
        crate::catalog::now_timestamp().replace(':', "-")
    );
    for n in 1..=1000 {
        let dir = match n {
            1 => backups.join(&name),
            _ => backups.join(format!("{name}-{n}")),
        };
        match renameat_with(CWD, partial, CWD, &dir, RenameFlags::NOREPLACE) {
            Ok(()) => return Ok(dir),
            Err(rustix::io::Errno::EXIST) => continue,
            Err(e) => return Err(Error::io("rename", partial, e.into())),
        }
    }
    Err(Error::io(
        "create",
        &backups.join(&name),
        std::io::Error::new(std::io::ErrorKind::AlreadyExists, "a thousand backups made this second"),
    ))
}

/// What [`backup`] would refuse, found without saving anything (a dry run).
pub fn check_backup(roots: &Roots, keys: &[String]) -> Result<()> {
    for key in keys {
        if matches!(current(roots, key)?, Current::Foreign) {
            return Err(cannot_back_up(key));
        }
    }
    Ok(())
}

fn cannot_back_up(key: &str) -> Error {
    Error::new(
        ErrorCode::Conflict,
        format!("`{key}` is not a file aam can back up (a folder, a special file or a link out of the project is in its place)"),
    )
    .with_hint(format!("move `{key}` aside, then run the command again"))
}

fn save_into(dir: &Path, roots: &Roots, keys: &[String]) -> Result<()> {
    for key in keys {
        let saved = dir.join(key.replace("~/", "home/").replace('#', "--").replace(' ', "-"));
        match current(roots, key)? {
            Current::Missing => {}
            Current::Link(target) => {
                if let Some(parent) = saved.parent() {
                    std::fs::create_dir_all(parent).map_err(|e| Error::io("create", parent, e))?;
                }
                std::os::unix::fs::symlink(&target, &saved).map_err(|e| Error::io("write", &saved, e))?;
            }
            Current::Damaged(bytes) => crate::atomic::write_file(&saved, &bytes)?,
            Current::Foreign => return Err(cannot_back_up(key)),
            Current::Section(content) => crate::atomic::write_file(&saved, content.as_bytes())?,
            Current::File(mut from, path) => crate::atomic::write_with(&saved, |temp| {
                let mut to = std::fs::OpenOptions::new()
                    .write(true)
                    .truncate(true)
                    .open(temp)
                    .map_err(|e| Error::io("write", &saved, e))?;
                std::io::copy(&mut from, &mut to).map_err(|e| Error::io("copy", &path, e))?;
                Ok(())
            })?,
        }
    }
    Ok(())
}

/// The current bytes of a key for showing or saving (`None` when gone or too
/// big to show); never read through a link.
pub fn current_bytes(roots: &Roots, key: &str) -> Result<Option<Vec<u8>>> {
    Ok(current_contents(roots, key)?.map(|(bytes, _)| bytes))
}

/// [`current_bytes`], with whether the file is executable, as the file read
/// says (a section never is).
pub fn current_contents(roots: &Roots, key: &str) -> Result<Option<(Vec<u8>, bool)>> {
    Ok(match current(roots, key)? {
        Current::Missing | Current::Link(_) | Current::Damaged(_) | Current::Foreign => None,
        Current::Section(content) => Some((content.into_bytes(), false)),
        Current::File(file, path) => {
            use std::os::unix::fs::PermissionsExt;
            let mode = file
                .metadata()
                .map_err(|e| Error::io("read", &path, e))?
                .permissions()
                .mode();
            let mut bytes = Vec::new();
            file.take(DIFF_LIMIT + 1)
                .read_to_end(&mut bytes)
                .map_err(|e| Error::io("read", &path, e))?;
            (bytes.len() as u64 <= DIFF_LIMIT).then_some((bytes, mode & 0o111 != 0))
        }
    })
}

/// Files in folders a package owns (its copy, its deployed folders) that it
/// did not write. Links are listed, never followed.
pub fn untracked(roots: &Roots, name: &str, entry: &LockedPackage) -> Result<Vec<String>> {
    Ok(untracked_walk(roots, name, entry)?.0)
}

/// [`untracked`], and whether every folder was walked whole (a folder of
/// more than [`WALK_LIMIT`] entries is cut short).
pub fn untracked_walk(roots: &Roots, name: &str, entry: &LockedPackage) -> Result<(Vec<String>, bool)> {
    // Every deployed folder, whatever type the lock gives it (a file target
    // walks nothing; a section is no folder).
    let mut dirs = vec![copy_dir(name)];
    dirs.extend(
        entry
            .deployed
            .iter()
            .filter(|d| !d.target.contains('#'))
            .map(|d| d.target.clone()),
    );
    let mut out = BTreeSet::new();
    let mut complete = true;
    for dir in dirs {
        let CheckedKey::File(location) = roots.check_key(&format!("{dir}/x"))? else {
            continue;
        };
        // A folder beyond a link (leading out, or to where installs do not
        // write) is not walked: nothing is read there, and its recorded files
        // count as changed.
        if roots.beyond_link(&location) {
            continue;
        }
        let base = roots
            .resolve_to_read(&location, &dir)?
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let (files, whole) = walk_files(&base);
        complete &= whole;
        for rel in files {
            let key = format!("{dir}/{rel}");
            if !entry.file_checksums.contains_key(&key) {
                out.insert(key);
            }
        }
    }
    Ok((out.into_iter().collect(), complete))
}

/// Every non-folder entry below `dir`, relative and `/`-separated; links are
/// entries, never followed. `false` when the walk stopped at [`WALK_LIMIT`].
fn walk_files(dir: &Path) -> (Vec<String>, bool) {
    let mut out = Vec::new();
    let mut stack = vec![(dir.to_path_buf(), String::new())];
    let mut seen = 0;
    while let Some((path, rel)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&path) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > WALK_LIMIT {
                return (out, false);
            }
            let name = entry.file_name().to_string_lossy().into_owned();
            let child = if rel.is_empty() { name } else { format!("{rel}/{name}") };
            match entry.file_type() {
                Ok(t) if t.is_dir() => stack.push((entry.path(), child)),
                _ => out.push(child),
            }
        }
    }
    (out, true)
}

/// A unified diff of each of `keys` (edited keys of the installed `entry`)
/// from the installed original in `store` to what is on disk now, or a line
/// saying why there is none.
pub fn diffs(
    roots: &Roots,
    store: &ObjectStore,
    entry: &LockedPackage,
    keys: &[String],
    written_here: impl Fn(&str, &str) -> bool,
) -> Result<Vec<(String, String)>> {
    let mut out = Vec::with_capacity(keys.len());
    for key in keys {
        // A project's lock may name files in the home folder (Codex prompts):
        // their text is shown only when an install here wrote them, so a
        // forged entry cannot print a private file into a terminal or CI log.
        let digest = entry.file_checksums.get(key).map_or("", String::as_str);
        if !roots.global && key.starts_with("~/") && !written_here(key, digest) {
            out.push((
                key.clone(),
                format!("(`{key}` is in your home folder and no install in this project wrote it: not shown)\n"),
            ));
            continue;
        }
        let original = installed_original(roots, store, entry, key)?;
        let current = current_bytes(roots, key)?;
        let diff = match (original, current) {
            (Some(original), Some(current)) => unified_diff(key, &original, &current),
            (None, _) => format!(
                "(the installed original of `{key}` is not stored on this machine, nor in the package's copy)\n"
            ),
            (_, None) => format!("(`{key}` is now a link, a folder, a damaged section or too big to show)\n"),
        };
        out.push((key.clone(), diff));
    }
    Ok(out)
}

/// The bytes `entry` installed at `key`: from the object store (kept by the
/// install that wrote them on this machine), else from the package's copy
/// under `.aam/packages/` when a file there holds exactly those bytes (a
/// teammate's committed install: skills and files deployed as written).
pub fn installed_original(
    roots: &Roots,
    store: &ObjectStore,
    entry: &LockedPackage,
    key: &str,
) -> Result<Option<Vec<u8>>> {
    let Some(digest) = entry.file_checksums.get(key) else {
        return Ok(None);
    };
    if let Some(bytes) = store.get(digest)? {
        return Ok(Some(bytes));
    }
    let copy = format!("{}/", crate::install::keys::PACKAGES_DIR);
    for (copy_key, _) in entry
        .file_checksums
        .iter()
        .filter(|(k, d)| k.starts_with(&copy) && *d == digest)
    {
        if let Some(bytes) = current_bytes(roots, copy_key)?
            && blake3::hash(&bytes).to_hex().as_str() == digest
        {
            return Ok(Some(bytes));
        }
    }
    Ok(None)
}

/// A unified diff from `old` to `new`.
pub fn unified_diff(path: &str, old: &[u8], new: &[u8]) -> String {
    let old = String::from_utf8_lossy(old);
    let new = String::from_utf8_lossy(new);
    similar::TextDiff::from_lines(old.as_ref(), new.as_ref())
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packages::lock::{Deployment, Origin};
    use crate::scan::ArtifactKind;
    use crate::scan::Platform;

    fn entry(files: &[(&str, &[u8])]) -> LockedPackage {
        LockedPackage {
            version: "1.0.0".into(),
            source: Origin::Local,
            source_name: "here".into(),
            source_commit: None,
            source_url: None,
            checksum: "c".into(),
            dependencies: Default::default(),
            platforms: vec![Platform::Claude],
            requested: None,
            artifacts: Vec::new(),
            deployed: vec![Deployment {
                platform: Platform::Claude,
                kind: ArtifactKind::Skill,
                name: "s".into(),
                target: ".claude/skills/s".into(),
            }],
            file_checksums: files
                .iter()
                .map(|(k, b)| (k.to_string(), blake3::hash(b).to_hex().to_string()))
                .collect(),
            created_dirs: Vec::new(),
            allowed_findings: Vec::new(),
        }
    }

    #[test]
    fn links_and_cycles_are_never_followed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("p");
        let secret = dir.path().join("secret.txt");
        std::fs::write(&secret, "secret").unwrap();
        std::fs::create_dir_all(root.join(".claude/skills/s/loop")).unwrap();
        std::os::unix::fs::symlink(&secret, root.join(".claude/skills/s/SKILL.md")).unwrap();
        std::os::unix::fs::symlink(root.join(".claude/skills/s"), root.join(".claude/skills/s/loop/again")).unwrap();
        let roots = Roots::new(root.clone(), dir.path().join("home"), false);
        let recorded = entry(&[(".claude/skills/s/SKILL.md", b"secret")]);
        let status = file_status(&roots, &recorded).unwrap();
        assert_eq!(
            status[".claude/skills/s/SKILL.md"],
            FileState::Modified,
            "a link is not what aam wrote, even with the same bytes behind it"
        );
        assert_eq!(current_bytes(&roots, ".claude/skills/s/SKILL.md").unwrap(), None);
        assert_eq!(
            untracked(&roots, "kit", &recorded).unwrap(),
            [".claude/skills/s/loop/again"],
            "the cycle is listed once, not walked"
        );
    }

    #[test]
    fn a_folder_swapped_for_a_link_while_reading_is_never_read_through() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("p");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(root.join(".claude/skills/s")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(root.join(".claude/skills/s/notes.md"), "mine").unwrap();
        std::fs::write(outside.join("notes.md"), "secret").unwrap();
        // Another process flips the skill folder between itself and a link out.
        let flipper = crate::paths::Flipper::start(&root.join(".claude/skills/s"), &outside);
        let roots = Roots::new(root.clone(), dir.path().join("home"), false);
        let mut read = 0;
        for _ in 0..20_000 {
            if let Ok(Some(bytes)) = current_bytes(&roots, ".claude/skills/s/notes.md") {
                assert_eq!(bytes, b"mine", "read through a link swapped in after the check");
                read += 1;
            }
        }
        drop(flipper);
        assert!(read > 0, "the file was never there to read");
    }

    #[test]
    fn backups_keep_every_edit_whole_and_never_share_a_folder() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("p");
        let home = dir.path().join("aam-home");
        std::fs::create_dir_all(root.join(".claude/skills/s")).unwrap();
        // Larger than what `aam diff` shows: a backup still keeps all of it.
        let big = vec![b'u'; DIFF_LIMIT as usize + 1_000_000];
        std::fs::write(root.join(".claude/skills/s/data.txt"), &big).unwrap();
        std::fs::write(root.join(".claude/skills/s/SKILL.md"), "my edit\n").unwrap();
        let roots = Roots::new(root.clone(), dir.path().join("home"), false);
        let keys = [
            ".claude/skills/s/data.txt".to_string(),
            ".claude/skills/s/SKILL.md".to_string(),
        ];
        // Two commands in the same second (two projects, one AAM_HOME).
        let first = PathBuf::from(backup(&home, &roots, "kit", &keys).unwrap());
        std::fs::write(root.join(".claude/skills/s/SKILL.md"), "another edit\n").unwrap();
        let second = PathBuf::from(backup(&home, &roots, "kit", &keys).unwrap());
        assert_ne!(first, second);
        assert_eq!(std::fs::read(first.join(".claude/skills/s/data.txt")).unwrap(), big);
        assert_eq!(
            std::fs::read(first.join(".claude/skills/s/SKILL.md")).unwrap(),
            b"my edit\n"
        );
        assert_eq!(
            std::fs::read(second.join(".claude/skills/s/SKILL.md")).unwrap(),
            b"another edit\n"
        );
    }

    /// A backup killed halfway leaves a hidden partial folder, never one
    /// named like a backup; the next backup deletes it unless its command
    /// still holds it.
    #[test]
    fn partial_backups_are_hidden_and_swept_once_abandoned() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("p");
        std::fs::create_dir_all(root.join(".claude/skills/s")).unwrap();
        std::fs::write(root.join(".claude/skills/s/SKILL.md"), "my edit\n").unwrap();
        let roots = Roots::new(root.clone(), dir.path().join("home"), false);
        let backups = dir.path().join("aam-home/backups");
        let (abandoned, lock) = new_partial_backup(&backups).unwrap();
        std::fs::write(abandoned.join("half.tmp"), "half").unwrap();
        drop(lock); // its command died
        let (live, _held) = new_partial_backup(&backups).unwrap();
        let keys = [".claude/skills/s/SKILL.md".to_string()];
        let saved = PathBuf::from(backup(&dir.path().join("aam-home"), &roots, "kit", &keys).unwrap());
        assert!(!abandoned.exists(), "an abandoned partial backup is deleted");
        assert!(live.exists(), "one a live command holds is kept");
        assert!(saved.file_name().unwrap().to_str().unwrap().starts_with("kit--"));
        let names: Vec<String> = std::fs::read_dir(&backups)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.iter().filter(|n| n.ends_with(".partial")).count(), 1, "{names:?}");
        // A `backups` that is a link to someone else's folder is never swept.
        let theirs = dir.path().join("theirs");
        std::fs::create_dir_all(theirs.join(".mine.partial")).unwrap();
        let linked_home = dir.path().join("linked-home");
        std::fs::create_dir_all(&linked_home).unwrap();
        std::os::unix::fs::symlink(&theirs, linked_home.join("backups")).unwrap();
        backup(&linked_home, &roots, "kit", &keys).unwrap();
        assert!(theirs.join(".mine.partial").exists());
    }

    /// A link put in an installed file's place is saved as that link (its
    /// target never read); a FIFO cannot be saved, which stops the command
    /// instead of reporting a backup that holds nothing.
    #[test]
    fn a_backup_keeps_a_link_as_a_link_and_refuses_what_it_cannot_save() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("p");
        let home = dir.path().join("aam-home");
        std::fs::create_dir_all(root.join(".claude/skills/s")).unwrap();
        std::os::unix::fs::symlink("../../../notes.md", root.join(".claude/skills/s/SKILL.md")).unwrap();
        let roots = Roots::new(root.clone(), dir.path().join("home"), false);
        let keys = [".claude/skills/s/SKILL.md".to_string()];
        let saved = PathBuf::from(backup(&home, &roots, "kit", &keys).unwrap());
        assert_eq!(
            std::fs::read_link(saved.join(".claude/skills/s/SKILL.md")).unwrap(),
            Path::new("../../../notes.md")
        );
        std::fs::remove_file(root.join(".claude/skills/s/SKILL.md")).unwrap();
        crate::paths::make_fifo(&root.join(".claude/skills/s/SKILL.md"));
        // A dry run finds what the backup would refuse, saving nothing.
        let checked = check_backup(&roots, &keys).unwrap_err();
        assert_eq!(checked.code(), ErrorCode::Conflict);
        let err = backup(&home, &roots, "kit", &keys).unwrap_err();
        assert_eq!(err.code(), ErrorCode::Conflict);
        assert_eq!(err.message(), checked.message());
        assert_eq!(
            std::fs::read_dir(home.join("backups")).unwrap().count(),
            1,
            "the failed one is gone"
        );
        // A file beyond a folder link leading out is neither read nor saved.
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("SKILL.md"), "secret").unwrap();
        std::os::unix::fs::symlink(&outside, root.join(".claude/skills/out")).unwrap();
        let err = backup(&home, &roots, "kit", &[".claude/skills/out/SKILL.md".to_string()]).unwrap_err();
        assert_eq!(err.code(), ErrorCode::Conflict);
        assert!(!err.message().contains("secret"), "{}", err.message());
        assert_eq!(std::fs::read_dir(home.join("backups")).unwrap().count(), 1);
        // A shared file whose section is damaged is saved whole, as read.
        let damaged = "Mine\n<!-- END AAM: a instruction -->\n<!-- BEGIN AAM: a instruction -->\n";
        std::fs::write(root.join("CLAUDE.md"), damaged).unwrap();
        let key = "CLAUDE.md#a instruction".to_string();
        let saved = PathBuf::from(backup(&home, &roots, "kit", &[key]).unwrap());
        assert_eq!(
            std::fs::read_to_string(saved.join("CLAUDE.md--a-instruction")).unwrap(),
            damaged
        );
    }

    #[test]
    fn states_of_files_and_sections() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        std::fs::create_dir_all(root.join(".claude/skills/s")).unwrap();
        std::fs::write(root.join(".claude/skills/s/SKILL.md"), "one").unwrap();
        std::fs::write(
            root.join("CLAUDE.md"),
            sections::upsert("Mine\n", "r", "instruction", "rule"),
        )
        .unwrap();
        let roots = Roots::new(root.clone(), dir.path().join("home"), false);
        let recorded = entry(&[
            (".claude/skills/s/SKILL.md", b"one"),
            (".claude/skills/s/gone.md", b"x"),
            ("CLAUDE.md#r instruction", b"rule\n"),
        ]);
        let status = file_status(&roots, &recorded).unwrap();
        assert_eq!(keys_in(&status, FileState::Ok).len(), 2);
        assert_eq!(keys_in(&status, FileState::Missing), [".claude/skills/s/gone.md"]);
        std::fs::write(root.join(".claude/skills/s/SKILL.md"), "two").unwrap();
        assert_eq!(
            key_state(
                &roots,
                ".claude/skills/s/SKILL.md",
                &recorded.file_checksums[".claude/skills/s/SKILL.md"]
            )
            .unwrap(),
            FileState::Modified
        );
    }
}
