//! Files that land atomically: written to a temporary file in the same folder,
//! flushed to disk, then renamed over the target, so a reader sees the old file
//! or the new one and never half of either.

use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};

/// Writes `bytes` to `path` atomically (mode 0644), creating parent folders.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    write_file_with_mode(path, bytes, 0o644)
}

/// Writes `bytes` to `path` atomically with permissions `mode`, creating parent
/// folders. The file never exists with other permissions.
pub fn write_file_with_mode(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    replacing(path, Some(mode), |temp| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(temp)
            .map_err(|e| Error::io("write", path, e))?;
        file.write_all(bytes).map_err(|e| Error::io("write", path, e))
    })
}

/// Lands `path` atomically (mode 0644) with what `fill` writes into the
/// temporary file at the given path; nothing is left behind when `fill` fails.
pub fn write_with<T>(path: &Path, fill: impl FnOnce(&Path) -> Result<T>) -> Result<T> {
    replacing(path, Some(0o644), fill)
}

/// [`land`], replacing what is at `path`.
fn replacing<T>(path: &Path, mode: Option<u32>, fill: impl FnOnce(&Path) -> Result<T>) -> Result<T> {
    land(path, mode, Replace::Always, fill)?.ok_or_else(|| Error::internal("a landing that replaces kept the old file"))
}

/// Lands `path` as [`write_with`] does, only where nothing is there: a file that
/// appeared meanwhile is kept and `None` returned (the temporary file goes).
/// The file keeps the temporary file's mode, 0600.
pub fn create_private_with<T>(path: &Path, fill: impl FnOnce(&Path) -> Result<T>) -> Result<Option<T>> {
    land(path, None, Replace::Never, fill)
}

/// Removes every temporary file a landing of `path` left beside it, whatever
/// its age: only where no other landing of `path` can be under way (its
/// writers take a lock).
pub fn remove_temporaries_of(path: &Path) {
    let (parent, prefix) = temporary_prefix(path);
    crate::paths::remove_untouched(parent, std::time::Duration::ZERO, |name| name.starts_with(&prefix));
}

/// Whether a landing may replace what is at its path.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Replace {
    Always,
    Never,
}

/// The folder of `path` and the name prefix of its temporary files:
/// `.<name>.aam-`, or `.aam-` for a name too long to take 16 more bytes.
fn temporary_prefix(path: &Path) -> (&Path, String) {
    let named = format!(".{}.aam-", path.file_name().unwrap_or_default().to_string_lossy());
    let prefix = match named.len() + TEMPORARY_SUFFIX_BYTES <= crate::paths::MAX_NAME_BYTES {
        true => named,
        false => ".aam-".to_string(),
    };
    (folder_of(path), prefix)
}

/// What a temporary file's name adds after its prefix: six random characters
/// and `.tmp` (and SQLite's `-journal` beside it, for an export).
const TEMPORARY_SUFFIX_BYTES: usize = 6 + ".tmp-journal".len();

/// The folder `path` is in (`.` for a bare name).
fn folder_of(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Lands `path` with permissions `mode` (`None`: the temporary file's 0600)
/// from a temporary file `fill` writes; `None` when `replace` is `Never` and a
/// file is there. The temporary file is `.<name>.aam-<random>.tmp` beside
/// `path`, made with mode 0600: one that a killed process left (with SQLite's
/// `-journal` beside it) is removed by the next write of the same file once it
/// is [`STALE`] old.
fn land<T>(
    path: &Path,
    mode: Option<u32>,
    replace: Replace,
    fill: impl FnOnce(&Path) -> Result<T>,
) -> Result<Option<T>> {
    let (parent, prefix) = temporary_prefix(path);
    std::fs::create_dir_all(parent).map_err(|e| Error::io("create", parent, e))?;
    remove_stale_temporaries(parent, &prefix);
    let file = tempfile::Builder::new()
        .prefix(&prefix)
        .suffix(".tmp")
        .tempfile_in(parent)
        .map_err(|e| Error::io("write", path, e))?;
    let value = fill(file.path())?;
    use std::os::unix::fs::PermissionsExt;
    let done = std::fs::File::open(file.path()).map_err(|e| Error::io("write", path, e))?;
    if let Some(mode) = mode {
        done.set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(|e| Error::io("write", path, e))?;
    }
    done.sync_all().map_err(|e| Error::io("write", path, e))?;
    match replace {
        Replace::Always => file.persist(path).map(drop),
        Replace::Never => match file.persist_noclobber(path) {
            Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => return Ok(None),
            landed => landed.map(drop),
        },
    }
    .map_err(|e| Error::io("write", path, e.error))?;
    Ok(Some(value))
}

/// Makes the renaming of `path` into its folder durable: syncs the folder, so
/// that a power failure cannot forget the name once this returns. Best effort:
/// a folder that cannot be opened or synced (some file systems refuse) leaves
/// the file as durable as the file system makes renames on its own.
pub fn sync_parent(path: &Path) {
    if let Ok(dir) = std::fs::File::open(folder_of(path)) {
        let _ = dir.sync_all();
    }
}

/// Asks the kernel to start writing `file`'s changed pages to disk, without
/// waiting for them: a later sync then finds them written, or on their way.
/// Linux only; elsewhere the later sync does it all.
pub fn start_writeback(file: &std::fs::File) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: a plain system call on an open descriptor; it touches no memory.
        unsafe {
            libc::sync_file_range(file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = file;
}

/// Age after which a temporary file of [`land`] is a dead process's leftover.
const STALE: std::time::Duration = std::time::Duration::from_secs(10 * 60);

/// Removes the files in `dir` named `<prefix>*.tmp` (or `<prefix>*.tmp-journal`) that
/// have not changed for [`STALE`]: a live writer keeps its file fresh.
fn remove_stale_temporaries(dir: &Path, prefix: &str) {
    crate::paths::remove_untouched(dir, STALE, |name| {
        name.starts_with(prefix) && (name.ends_with(".tmp") || name.ends_with(".tmp-journal"))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A name too long to take `.<name>.aam-<random>.tmp` lands through a
    /// shorter temporary name.
    #[test]
    fn the_longest_file_name_lands() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x".repeat(crate::paths::MAX_NAME_BYTES));
        write_file(&path, b"one").unwrap();
        write_file(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_dead_writers_temporary_files_go_with_the_next_write() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.csv");
        let old = std::time::SystemTime::now() - STALE - std::time::Duration::from_secs(60);
        let left = [".out.csv.aam-AbC123.tmp", ".out.csv.aam-AbC123.tmp-journal"];
        for name in left
            .iter()
            .chain(&[".out.csv.aam-live.tmp", ".other.aam-x.tmp", "mine.tmp"])
        {
            std::fs::write(dir.path().join(name), "x").unwrap();
        }
        for name in left.iter().chain(&[".other.aam-x.tmp", "mine.tmp"]) {
            std::fs::File::options()
                .write(true)
                .open(dir.path().join(name))
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
        write_with(&target, |temp| {
            std::fs::write(temp, "new").map_err(|e| Error::io("write", temp, e))
        })
        .unwrap();
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        // Old leftovers of this file go; a fresh one (a live writer) and other files stay.
        assert_eq!(
            names,
            [".other.aam-x.tmp", ".out.csv.aam-live.tmp", "mine.tmp", "out.csv"]
        );
    }

    #[test]
    fn replaces_whole_files_and_creates_folders() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/file.txt");
        write_file(&path, b"one").unwrap();
        write_file(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        assert_eq!(
            std::fs::read_dir(path.parent().unwrap()).unwrap().count(),
            1,
            "no temporary files left"
        );
    }
}
