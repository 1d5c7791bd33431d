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
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| Error::io("create", parent, e))?;
    let mut file = tempfile::NamedTempFile::new_in(parent).map_err(|e| Error::io("write", path, e))?;
    file.write_all(bytes).map_err(|e| Error::io("write", path, e))?;
    use std::os::unix::fs::PermissionsExt;
    file.as_file()
        .set_permissions(std::fs::Permissions::from_mode(mode))
        .map_err(|e| Error::io("write", path, e))?;
    file.as_file().sync_all().map_err(|e| Error::io("write", path, e))?;
    file.persist(path).map_err(|e| Error::io("write", path, e.error))?;
    Ok(())
}

/// Lands `path` atomically (mode 0644) with what `fill` writes into the
/// temporary file at the given path; nothing is left behind when `fill` fails.
pub fn write_with<T>(path: &Path, fill: impl FnOnce(&Path) -> Result<T>) -> Result<T> {
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| Error::io("create", parent, e))?;
    let file = tempfile::NamedTempFile::new_in(parent).map_err(|e| Error::io("write", path, e))?;
    let value = fill(file.path())?;
    use std::os::unix::fs::PermissionsExt;
    let done = std::fs::File::open(file.path()).map_err(|e| Error::io("write", path, e))?;
    done.set_permissions(std::fs::Permissions::from_mode(0o644))
        .map_err(|e| Error::io("write", path, e))?;
    done.sync_all().map_err(|e| Error::io("write", path, e))?;
    file.persist(path).map_err(|e| Error::io("write", path, e.error))?;
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

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
