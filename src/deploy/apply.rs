//! Applying file changes as one unit: every change is made so it can be undone,
//! and a failure half-way puts back exactly what was there before.
//!
//! A file being replaced or removed is first renamed to a backup next to it (a
//! rename within one folder never half-happens); new content is written to a
//! temporary file in the same folder and renamed into place. On success the
//! backups are deleted; on failure, or when the caller decides to undo, the new
//! files are removed, the backups renamed back and the folders that were created
//! removed again.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// One change to the file system.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Write `bytes` to `path` (replacing it).
    Write {
        /// Target file.
        path: PathBuf,
        /// New content.
        bytes: Vec<u8>,
        /// Make it executable.
        executable: bool,
    },
    /// Remove the file at `path` (nothing when absent).
    Remove {
        /// Target file.
        path: PathBuf,
    },
}

impl Change {
    /// The file it concerns.
    pub fn path(&self) -> &Path {
        match self {
            Change::Write { path, .. } | Change::Remove { path } => path,
        }
    }
}

enum Undo {
    /// Delete a file that did not exist.
    Delete(PathBuf),
    /// Put a backup back in place.
    Restore { backup: PathBuf, path: PathBuf },
}

/// Changes made and not yet committed.
pub struct Applied {
    undo: Vec<Undo>,
    created_dirs: Vec<PathBuf>,
    emptied_dirs: Vec<PathBuf>,
}

/// Makes `changes` in order. When one fails, the ones before are undone and the
/// error is returned.
pub fn apply(changes: &[Change]) -> Result<Applied> {
    let mut applied = Applied {
        undo: Vec::new(),
        created_dirs: Vec::new(),
        emptied_dirs: Vec::new(),
    };
    for (n, change) in changes.iter().enumerate() {
        if let Err(e) = applied.make(change, n) {
            applied.rollback();
            return Err(e);
        }
    }
    Ok(applied)
}

impl Applied {
    fn make(&mut self, change: &Change, n: usize) -> Result<()> {
        let path = change.path();
        let backup = || {
            let name = path
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default();
            path.with_file_name(format!(".{name}.aam-backup-{}-{n}", std::process::id()))
        };
        match change {
            Change::Write { bytes, executable, .. } => {
                let parent = path.parent().unwrap_or(Path::new("/"));
                self.create_dirs(parent)?;
                if path.is_dir() {
                    return Err(Error::io(
                        "write",
                        path,
                        std::io::Error::new(std::io::ErrorKind::IsADirectory, "a folder is in the way"),
                    ));
                }
                let mut file = tempfile::NamedTempFile::new_in(parent).map_err(|e| Error::io("write", path, e))?;
                std::io::Write::write_all(&mut file, bytes).map_err(|e| Error::io("write", path, e))?;
                use std::os::unix::fs::PermissionsExt;
                let mode = if *executable { 0o755 } else { 0o644 };
                file.as_file()
                    .set_permissions(std::fs::Permissions::from_mode(mode))
                    .map_err(|e| Error::io("write", path, e))?;
                if path.exists() {
                    let backup = backup();
                    std::fs::rename(path, &backup).map_err(|e| Error::io("replace", path, e))?;
                    self.undo.push(Undo::Restore {
                        backup,
                        path: path.to_path_buf(),
                    });
                } else {
                    self.undo.push(Undo::Delete(path.to_path_buf()));
                }
                file.persist(path).map_err(|e| Error::io("write", path, e.error))?;
            }
            Change::Remove { .. } => {
                if path.is_file() || path.is_symlink() {
                    let backup = backup();
                    std::fs::rename(path, &backup).map_err(|e| Error::io("remove", path, e))?;
                    self.undo.push(Undo::Restore {
                        backup,
                        path: path.to_path_buf(),
                    });
                    if let Some(parent) = path.parent() {
                        self.emptied_dirs.push(parent.to_path_buf());
                    }
                }
            }
        }
        Ok(())
    }

    fn create_dirs(&mut self, dir: &Path) -> Result<()> {
        let mut missing = Vec::new();
        let mut current = Some(dir);
        while let Some(d) = current.filter(|d| !d.exists()) {
            missing.push(d.to_path_buf());
            current = d.parent();
        }
        for d in missing.into_iter().rev() {
            std::fs::create_dir(&d).map_err(|e| Error::io("create", &d, e))?;
            self.created_dirs.push(d);
        }
        Ok(())
    }

    /// Keeps the changes: deletes backups, and folders that removals left empty
    /// (walking up while they are empty).
    pub fn commit(self) {
        for undo in self.undo {
            if let Undo::Restore { backup, .. } = undo {
                let _ = std::fs::remove_file(backup);
            }
        }
        let mut dirs = self.emptied_dirs;
        dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
        for dir in dirs {
            let mut current = Some(dir.as_path());
            while let Some(d) = current.filter(|d| std::fs::remove_dir(d).is_ok()) {
                current = d.parent();
            }
        }
    }

    /// Undoes every change, in reverse order.
    pub fn rollback(self) {
        for undo in self.undo.into_iter().rev() {
            match undo {
                Undo::Delete(path) => {
                    let _ = std::fs::remove_file(path);
                }
                Undo::Restore { backup, path } => {
                    let _ = std::fs::remove_file(&path);
                    let _ = std::fs::rename(backup, path);
                }
            }
        }
        for dir in self.created_dirs.into_iter().rev() {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
        let mut out = Vec::new();
        for entry in walk(dir) {
            let rel = entry.strip_prefix(dir).unwrap().display().to_string();
            let bytes = if entry.is_file() {
                std::fs::read(&entry).unwrap()
            } else {
                b"<dir>".to_vec()
            };
            out.push((rel, bytes));
        }
        out.sort();
        out
    }

    fn walk(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            out.push(p.clone());
            if p.is_dir() {
                out.extend(walk(&p));
            }
        }
        out
    }

    #[test]
    fn a_failure_half_way_puts_everything_back() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("keep.md"), "original").unwrap();
        std::fs::write(root.join("gone.md"), "to remove").unwrap();
        std::fs::create_dir_all(root.join("blocked.md")).unwrap();
        let before = snapshot(root);
        let changes = [
            Change::Write {
                path: root.join("keep.md"),
                bytes: b"new".to_vec(),
                executable: false,
            },
            Change::Write {
                path: root.join("deep/new/file.md"),
                bytes: b"fresh".to_vec(),
                executable: true,
            },
            Change::Remove {
                path: root.join("gone.md"),
            },
            Change::Write {
                path: root.join("blocked.md"),
                bytes: b"cannot".to_vec(),
                executable: false,
            },
        ];
        assert!(apply(&changes).is_err());
        assert_eq!(snapshot(root), before, "previous state intact, no stray files");

        let ok = apply(&changes[..3]).unwrap();
        ok.commit();
        assert_eq!(std::fs::read(root.join("keep.md")).unwrap(), b"new");
        assert!(!root.join("gone.md").exists());
        let names: Vec<String> = snapshot(root).into_iter().map(|(p, _)| p).collect();
        assert!(names.iter().all(|n| !n.contains("aam-backup")), "{names:?}");

        // Removing the only file of a nested folder removes the folders it emptied.
        apply(&[Change::Remove {
            path: root.join("deep/new/file.md"),
        }])
        .unwrap()
        .commit();
        assert!(!root.join("deep").exists());
        assert!(root.join("keep.md").exists(), "non-empty folders stay");
    }

    #[test]
    fn rollback_after_success_restores_too() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.md"), "one").unwrap();
        let before = snapshot(dir.path());
        let applied = apply(&[Change::Write {
            path: dir.path().join("a.md"),
            bytes: b"two".to_vec(),
            executable: false,
        }])
        .unwrap();
        assert_eq!(std::fs::read(dir.path().join("a.md")).unwrap(), b"two");
        applied.rollback();
        assert_eq!(snapshot(dir.path()), before);
    }
}
