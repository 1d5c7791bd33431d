//! The rules every relative path from untrusted input follows (lock file keys,
//! archive entries, journal entries): no `..`, `.` or `.git` part, no empty part, not
//! absolute, no `~`, no drive letter or `:`, no backslash, no NUL or control
//! character, no part over 255 bytes, at most 4096 bytes. Where a path may lead is the caller's check
//! (see `install::keys`). [`resolve_links`] is the one way a path is followed to
//! where it really leads before a containment check.

use std::path::{Component, Path, PathBuf};

/// Checks a `/`-separated relative path part by part; the refusal says why in
/// words (the caller names the path).
pub fn check_relative(rest: &str) -> Result<(), String> {
    if rest.is_empty() {
        return Err("it is empty".to_string());
    }
    if rest.len() > 4096 {
        return Err("it is longer than 4096 bytes".to_string());
    }
    if rest.starts_with('/') {
        return Err("it is an absolute path".to_string());
    }
    if rest.starts_with('~') {
        return Err("it starts with `~`".to_string());
    }
    if rest.contains('\\') {
        return Err("it contains a backslash".to_string());
    }
    for part in rest.split('/') {
        match part {
            "" => return Err("it has an empty path part".to_string()),
            "." | ".." => return Err(format!("it has a `{part}` part")),
            // A `.git` folder anywhere makes the folder holding it a repository
            // whose config and hooks git runs; git refuses it in trees too.
            _ if part.eq_ignore_ascii_case(".git") => return Err("it has a `.git` part".to_string()),
            _ if part.contains(':') => return Err("it contains `:` (a drive letter or stream)".to_string()),
            _ if part.chars().any(char::is_control) => {
                return Err("it contains a NUL or control character".to_string());
            }
            // No file system here takes it: refused before anything is written.
            _ if part.len() > MAX_NAME_BYTES => {
                return Err(format!("it has a part longer than {MAX_NAME_BYTES} bytes"));
            }
            _ => {}
        }
    }
    Ok(())
}

/// The longest file name (one path part) Linux file systems take, in bytes.
pub const MAX_NAME_BYTES: usize = 255;

/// `path` with every link followed: its longest existing ancestor (a dangling
/// link counts as existing, so it cannot hide where it points) canonicalized and
/// the rest appended. `None` when that fails or the rest climbs with `..`.
pub fn resolve_links(path: &Path) -> Option<PathBuf> {
    let mut existing = path;
    let mut rest = Vec::new();
    while std::fs::symlink_metadata(existing).is_err() {
        rest.push(existing.file_name()?);
        existing = existing.parent()?;
    }
    let mut real = existing.canonicalize().ok()?;
    for part in rest.into_iter().rev() {
        if Path::new(part).components().any(|c| !matches!(c, Component::Normal(_))) {
            return None;
        }
        real.push(part);
    }
    Some(real)
}

/// Reads a metadata file aam keeps in a folder another party may have written
/// (a project's `.aam/`): `None` when absent; refused when it, or the folder
/// holding it, is a link or not a plain file, or when it is over `max` bytes,
/// so nothing is read from outside through it and memory stays bounded.
pub fn read_plain(path: &Path, max: u64) -> std::io::Result<Option<Vec<u8>>> {
    let refused = |why: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, why.to_string());
    if let Some(parent) = path.parent()
        && std::fs::symlink_metadata(parent).is_ok_and(|m| m.file_type().is_symlink())
    {
        return Err(refused("its folder is a link"));
    }
    match std::fs::symlink_metadata(path) {
        Ok(meta) if !meta.file_type().is_file() => return Err(refused("it is a link or not a plain file")),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    }
    read_regular(path, max, libc::O_NOFOLLOW)
}

/// Reads a file the user may have linked to where aam looks for it (the home
/// settings, kept with dotfiles): links are followed, but anything other than a
/// plain file (a FIFO, a device) is refused without blocking, and so is a file
/// over `max` bytes. `None` when absent.
pub fn read_bounded(path: &Path, max: u64) -> std::io::Result<Option<Vec<u8>>> {
    match read_regular(path, max, 0) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        read => read,
    }
}

/// Opens `path` without blocking (a FIFO opens at once, and is then refused),
/// with `flags` added, and reads it when it is a plain file of at most `max` bytes.
fn read_regular(path: &Path, max: u64, flags: i32) -> std::io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let refused = |why: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, why.to_string());
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | flags)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => refused("it is a link"),
            _ => e,
        })?;
    if !file.metadata()?.is_file() {
        return Err(refused("it is not a plain file"));
    }
    let mut bytes = Vec::new();
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(refused(&format!("it is larger than {max} bytes")));
    }
    Ok(Some(bytes))
}

/// Deletes the plain files in `dir` whose name `ours` accepts and that have
/// not changed for `keep` (best effort): the stale-file sweep of temporaries,
/// markers and logs a dead process left. A live writer keeps its file fresh.
pub fn remove_untouched(dir: &Path, keep: std::time::Duration, ours: impl Fn(&str) -> bool) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        if !ours(&entry.file_name().to_string_lossy()) {
            continue;
        }
        let untouched = entry
            .metadata()
            .ok()
            .filter(std::fs::Metadata::is_file)
            .and_then(|meta| meta.modified().ok())
            .and_then(|modified| modified.elapsed().ok())
            .is_some_and(|age| age > keep);
        if untouched {
            match std::fs::remove_file(entry.path()) {
                Ok(()) => tracing::debug!("deleted the stale file {}", entry.path().display()),
                Err(e) => tracing::debug!("cannot delete {}: {e}", entry.path().display()),
            }
        }
    }
}

/// What [`open_inside`] found at a path.
#[derive(Debug)]
pub enum Inside {
    /// A plain file, open to read.
    File(std::fs::File),
    /// Nothing is there, or a folder on the way is missing.
    Missing,
    /// A link, and what it points to (read, never followed).
    Link(PathBuf),
    /// Something other than a plain file or a link: a folder, a FIFO, a
    /// device, or a file where a folder on the way should be.
    NotPlain,
    /// Its folder, as opened, lies outside the root: reached through a link,
    /// or swapped for one.
    Outside,
}

/// Where the open `folder` really is: the kernel's path of the descriptor
/// (`/proc/self/fd`), `None` where the kernel does not tell (no `/proc`, or
/// a folder deleted since it was opened).
pub fn where_open(folder: &rustix::fd::OwnedFd) -> Option<PathBuf> {
    use std::os::fd::AsRawFd;
    let path = std::fs::read_link(format!("/proc/self/fd/{}", folder.as_raw_fd())).ok()?;
    (path.is_absolute() && !path.to_string_lossy().ends_with(" (deleted)")).then_some(path)
}

/// The most folders [`open_inside`] climbs from a file's folder to the root.
const MAX_CLIMB: usize = 4096;

/// Opens the plain file at `path` to read only where it really lies inside
/// `root`. Its folder is opened first (links on the way are followed) and
/// proven to lie in `root` by climbing `..` from the opened folder; the file is
/// then opened from that opened folder, never following a link in its last
/// part and never blocking. The check and the read work on the opened folder,
/// not on its path, so a folder swapped for a link in between is not followed.
pub fn open_inside(path: &Path, root: &Path) -> std::io::Result<Inside> {
    use rustix::fs::{CWD, FileType, Mode, OFlags};
    use rustix::io::Errno;
    let (Some(folder), Some(name)) = (path.parent(), path.file_name()) else {
        return Ok(Inside::NotPlain);
    };
    let root = match rustix::fs::stat(root) {
        Ok(stat) => (stat.st_dev, stat.st_ino),
        Err(Errno::NOENT) => return Ok(Inside::Missing),
        Err(e) => return Err(e.into()),
    };
    let folder_flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let folder = match rustix::fs::openat(CWD, folder, folder_flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Ok(Inside::Missing),
        Err(Errno::NOTDIR) => return Ok(Inside::NotPlain),
        Err(e) => return Err(e.into()),
    };
    if !lies_in(&folder, root)? {
        return Ok(Inside::Outside);
    }
    let file_flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let file = match rustix::fs::openat(&folder, name, file_flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Ok(Inside::Missing),
        // A link: what it points to, read in the folder as opened.
        Err(Errno::LOOP) => {
            use std::os::unix::ffi::OsStringExt;
            return Ok(match rustix::fs::readlinkat(&folder, name, Vec::new()) {
                Ok(target) => Inside::Link(PathBuf::from(std::ffi::OsString::from_vec(target.into_bytes()))),
                Err(_) => Inside::NotPlain,
            });
        }
        // A socket (ENXIO), a folder opened to read (EISDIR).
        Err(Errno::NXIO | Errno::ISDIR) => return Ok(Inside::NotPlain),
        Err(e) => return Err(e.into()),
    };
    if FileType::from_raw_mode(rustix::fs::fstat(&file)?.st_mode) != FileType::RegularFile {
        return Ok(Inside::NotPlain);
    }
    Ok(Inside::File(std::fs::File::from(file)))
}

/// Whether the opened `folder` is, or lies below, the folder at `root` (as
/// it is now): proven on the opened folder, by climbing `..` from it.
pub fn opened_lies_in(folder: &rustix::fd::OwnedFd, root: &Path) -> std::io::Result<bool> {
    let stat = rustix::fs::stat(root)?;
    lies_in(folder, (stat.st_dev, stat.st_ino))
}

/// Whether the opened `folder` is, or lies below, the folder whose (device,
/// inode) is `root`: climbs `..` until it meets it or the top of the file system.
/// A folder on the way it may not open counts as outside.
fn lies_in(folder: &rustix::fd::OwnedFd, root: (u64, u64)) -> std::io::Result<bool> {
    use rustix::fs::{Mode, OFlags};
    let id = |stat: &rustix::fs::Stat| (stat.st_dev, stat.st_ino);
    let mut here = id(&rustix::fs::fstat(folder)?);
    let mut climbed: Option<rustix::fd::OwnedFd> = None;
    for _ in 0..MAX_CLIMB {
        if here == root {
            return Ok(true);
        }
        let from = climbed.as_ref().unwrap_or(folder);
        let Ok(up) = rustix::fs::openat(
            from,
            "..",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        ) else {
            return Ok(false);
        };
        let above = id(&rustix::fs::fstat(&up)?);
        if above == here {
            return Ok(false);
        }
        here = above;
        climbed = Some(up);
    }
    Ok(false)
}

/// Makes a FIFO at `path`: what a hostile tree puts where aam expects a file.
/// Quotes a word (a path, a name) for a shell when it needs it, so a command
/// shown in a hint can be pasted as it is.
pub fn shell_word(text: &str) -> String {
    let plain = text.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:@+".contains(c));
    if plain {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
pub(crate) fn make_fifo(path: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .expect("make a FIFO");
}

/// Another process at work, for tests: flips the folder `real` between
/// itself and a link to `outside`, over and over, until dropped.
#[cfg(test)]
pub(crate) struct Flipper {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

#[cfg(test)]
impl Flipper {
    pub(crate) fn start(real: &Path, outside: &Path) -> Self {
        let name = real.file_name().expect("a folder name").to_string_lossy();
        let (link, parked) = (
            real.with_file_name(format!("{name}-link")),
            real.with_file_name(format!("{name}-real")),
        );
        std::os::unix::fs::symlink(outside, &link).expect("make the link");
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (real, flag) = (real.to_path_buf(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = std::fs::rename(&real, &parked);
                let _ = std::fs::rename(&link, &real);
                let _ = std::fs::rename(&real, &link);
                let _ = std::fs::rename(&parked, &real);
            }
        });
        Self {
            stop,
            thread: Some(thread),
        }
    }
}

#[cfg(test)]
impl Drop for Flipper {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_opened_only_where_its_opened_folder_lies_in_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("project");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(root.join(".claude/skills/s")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(root.join(".claude/skills/s/SKILL.md"), "mine").unwrap();
        std::fs::write(outside.join("secret"), "secret").unwrap();
        let open = |rel: &str| open_inside(&root.join(rel), &root).unwrap();
        let Inside::File(mut file) = open(".claude/skills/s/SKILL.md") else {
            panic!("a plain file inside is opened");
        };
        let mut text = String::new();
        std::io::Read::read_to_string(&mut file, &mut text).unwrap();
        assert_eq!(text, "mine");
        // A folder link that stays inside is followed.
        std::os::unix::fs::symlink(root.join(".claude/skills"), root.join("linked")).unwrap();
        assert!(matches!(open("linked/s/SKILL.md"), Inside::File(_)));
        // A folder link that leads out is not, whatever the path looked like before.
        std::os::unix::fs::symlink(&outside, root.join(".claude/skills/out")).unwrap();
        assert!(matches!(open(".claude/skills/out/secret"), Inside::Outside));
        // The last part is never followed, and nothing but a plain file is read.
        std::os::unix::fs::symlink(outside.join("secret"), root.join("to-secret")).unwrap();
        assert!(matches!(open("to-secret"), Inside::Link(target) if target == outside.join("secret")));
        make_fifo(&root.join("fifo"));
        assert!(matches!(open("fifo"), Inside::NotPlain));
        assert!(matches!(open(".claude/skills/s"), Inside::NotPlain));
        assert!(matches!(open(".claude/skills/s/SKILL.md/x"), Inside::NotPlain));
        assert!(matches!(open("none/SKILL.md"), Inside::Missing));
        assert!(matches!(open("none.md"), Inside::Missing));
    }

    #[test]
    fn plain_reads_refuse_links_and_big_files() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("secret");
        std::fs::write(&outside, "secret").unwrap();
        std::os::unix::fs::symlink(&outside, dir.path().join("link")).unwrap();
        assert!(read_plain(&dir.path().join("link"), 100).is_err());
        assert_eq!(read_plain(&dir.path().join("none"), 100).unwrap(), None);
        assert_eq!(read_plain(&outside, 100).unwrap().unwrap(), b"secret");
        assert!(read_plain(&outside, 3).is_err());
        std::os::unix::fs::symlink(dir.path(), dir.path().join("folder")).unwrap();
        assert!(read_plain(&dir.path().join("folder/secret"), 100).is_err());
    }

    #[test]
    fn dangling_links_do_not_hide_where_they_point() {
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/nonexistent/outside", dir.path().join("dangling")).unwrap();
        assert_eq!(resolve_links(&dir.path().join("dangling/x")), None);
        let real = dir.path().canonicalize().unwrap();
        assert_eq!(resolve_links(&dir.path().join("new/file")), Some(real.join("new/file")));
    }

    #[test]
    fn plain_paths_pass_and_tricks_do_not() {
        assert!(check_relative("skills/a/SKILL.md").is_ok());
        for bad in [
            "", "/etc", "~/x", "a/../b", "./a", "a//b", "C:/x", "a\\b", "a\0b", "a\nb",
        ] {
            assert!(check_relative(bad).is_err(), "{bad:?}");
        }
        let longest = "n".repeat(MAX_NAME_BYTES);
        assert!(check_relative(&format!("skills/{longest}/SKILL.md")).is_ok());
        assert!(check_relative(&format!("skills/{longest}n/SKILL.md")).is_err());
    }
}
