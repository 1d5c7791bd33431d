//! The search index's folder: tantivy's `MmapDirectory`, with the files it
//! writes made durable together instead of one after the other.
//!
//! Tantivy syncs each file of a segment as it finishes it, so writing a segment
//! ended with half a dozen waits for the disk in a row (half of the 100 ms a
//! 10,000-artifact segment took). Here a finished file is handed to the disk
//! (its writing starts, nothing waits) and its name remembered;
//! [`Directory::sync_directory`], which tantivy calls before every `meta.json`
//! that could name such a file, opens and syncs each of them (a file deleted
//! meanwhile needs none) and then syncs the folder. So what held before still
//! holds: an index that was committed names only files that are on disk. Names,
//! not open files, wait: a large add writes dozens of segments before its one
//! commit. `.managed.json`, which tantivy rewrites before each file it creates,
//! waits too (its last version, by its open file) instead of being synced each
//! time. Everything else (reads, deletes, locks, `meta.json`) is tantivy's own.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tantivy::directory::error::{DeleteError, LockError, OpenReadError, OpenWriteError};
use tantivy::directory::{
    AntiCallToken, Directory, DirectoryLock, FileHandle, FileSlice, Lock, MmapDirectory, TerminatingWrite,
    WatchCallback, WatchHandle, WritePtr,
};

/// Tantivy's list of the files it manages.
const MANAGED_FILES: &str = ".managed.json";

/// What was written and handed to the disk, not yet known to be on it.
#[derive(Debug, Default)]
struct Pending {
    /// Segment files, by name.
    files: Vec<PathBuf>,
    /// The last list of managed files, by its open file: a path could meanwhile
    /// name a list someone else wrote, which aam may not be able to open.
    list: Option<File>,
}

type Unsynced = Arc<Mutex<Pending>>;

/// A folder of the index, opened with [`IndexDirectory::open`].
#[derive(Clone, Debug)]
pub(super) struct IndexDirectory {
    inner: MmapDirectory,
    root: PathBuf,
    unsynced: Unsynced,
}

impl IndexDirectory {
    /// Opens the folder `root`, which must exist.
    pub(super) fn open(root: &Path) -> tantivy::Result<Self> {
        Ok(Self {
            inner: MmapDirectory::open(root)?,
            root: root.to_path_buf(),
            unsynced: Arc::default(),
        })
    }
}

impl Directory for IndexDirectory {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        self.inner.get_file_handle(path)
    }

    fn open_read(&self, path: &Path) -> Result<FileSlice, OpenReadError> {
        self.inner.open_read(path)
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        self.inner.delete(path)
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        self.inner.exists(path)
    }

    /// A new file (never one that exists, as tantivy's), which is handed to the
    /// disk when tantivy terminates it and synced at the next `sync_directory`.
    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(self.root.join(path))
            .map_err(|e| match e.kind() {
                io::ErrorKind::AlreadyExists => OpenWriteError::FileAlreadyExists(path.to_path_buf()),
                _ => OpenWriteError::wrap_io_error(e, path.to_path_buf()),
            })?;
        Ok(BufWriter::new(Box::new(HandedOver {
            file: Some(file),
            path: self.root.join(path),
            unsynced: self.unsynced.clone(),
        })))
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        self.inner.atomic_read(path)
    }

    /// `meta.json` as tantivy writes it: synced before it replaces the last one.
    /// `.managed.json`, the list of files tantivy may delete, which it rewrites
    /// before every file it creates (six times per segment), replaces the last one
    /// at once and is synced at the next `sync_directory`, before any `meta.json`
    /// that names a file it lists. Tantivy deletes only listed files that no
    /// segment in use holds, so a list the power took back (naming fewer or
    /// more files) can leave files behind, never take one in use; a damaged one
    /// leaves the index unreadable, and the next search rebuilds it from the
    /// catalog.
    fn atomic_write(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        if path != Path::new(MANAGED_FILES) {
            return self.inner.atomic_write(path, data);
        }
        let mut file = tempfile::NamedTempFile::new_in(&self.root)?;
        file.write_all(data)?;
        let list = file.persist(self.root.join(path)).map_err(|e| e.error)?;
        self.unsynced.lock().unwrap_or_else(|e| e.into_inner()).list = Some(list);
        Ok(())
    }

    /// Waits until every file handed to the disk is on it, then syncs the folder.
    /// On a failure the files not yet synced stay for the next call. A list of
    /// managed files written meanwhile waits until the folder is synced, so the
    /// folder's sync never makes a list lasting before its bytes are.
    fn sync_directory(&self) -> io::Result<()> {
        let mut unsynced = self.unsynced.lock().unwrap_or_else(|e| e.into_inner());
        while let Some(path) = unsynced.files.last() {
            match File::open(path).and_then(|file| file.sync_data()) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {
                    unsynced.files.pop();
                }
            }
        }
        if let Some(list) = &unsynced.list {
            list.sync_data()?;
            unsynced.list = None;
        }
        self.inner.sync_directory()
    }

    fn acquire_lock(&self, lock: &Lock) -> Result<DirectoryLock, LockError> {
        self.inner.acquire_lock(lock)
    }

    fn watch(&self, watch_callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        self.inner.watch(watch_callback)
    }
}

/// A file being written; terminating it hands it to the disk.
struct HandedOver {
    /// `None` once terminated.
    file: Option<File>,
    path: PathBuf,
    unsynced: Unsynced,
}

impl HandedOver {
    fn file(&mut self) -> io::Result<&mut File> {
        self.file
            .as_mut()
            .ok_or_else(|| io::Error::other("the index file was already terminated"))
    }
}

impl Write for HandedOver {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file()?.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file()?.flush()
    }
}

impl TerminatingWrite for HandedOver {
    fn terminate_ref(&mut self, _: AntiCallToken) -> io::Result<()> {
        let file = self
            .file
            .take()
            .ok_or_else(|| io::Error::other("the index file was already terminated"))?;
        crate::atomic::start_writeback(&file);
        self.unsynced
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .files
            .push(std::mem::take(&mut self.path));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A terminated file waits for the next `sync_directory`, which takes it
    /// (and every other) and leaves nothing waiting; files stay readable.
    #[test]
    fn terminated_files_wait_for_the_next_directory_sync() {
        let dir = tempfile::tempdir().unwrap();
        let directory = IndexDirectory::open(dir.path()).unwrap();
        for name in ["a.idx", "b.store"] {
            let mut writer = directory.open_write(Path::new(name)).unwrap();
            writer.write_all(name.as_bytes()).unwrap();
            writer.terminate().unwrap();
        }
        assert_eq!(directory.unsynced.lock().unwrap().files.len(), 2);
        // One deleted before the sync (tantivy's garbage collection) needs none.
        directory.delete(Path::new("a.idx")).unwrap();
        directory.sync_directory().unwrap();
        assert!(directory.unsynced.lock().unwrap().files.is_empty());
        let read = directory.open_read(Path::new("b.store")).unwrap();
        assert_eq!(read.read_bytes().unwrap().as_slice(), b"b.store");
        // Tantivy never writes a file twice: an existing name is refused.
        assert!(matches!(
            directory.open_write(Path::new("b.store")),
            Err(OpenWriteError::FileAlreadyExists(_))
        ));
    }

    /// Tantivy's list of managed files replaces the last one at once and waits
    /// for the next `sync_directory`, once however often it was rewritten;
    /// `meta.json` is tantivy's own write, synced before it lands.
    #[cfg(unix)]
    #[test]
    fn the_list_of_managed_files_waits_for_the_next_directory_sync() {
        let dir = tempfile::tempdir().unwrap();
        let directory = IndexDirectory::open(dir.path()).unwrap();
        let list = Path::new(MANAGED_FILES);
        directory.atomic_write(list, b"[\"a\"]").unwrap();
        directory.atomic_write(list, b"[\"a\",\"b\"]").unwrap();
        directory.atomic_write(Path::new("meta.json"), b"{}").unwrap();
        assert!(directory.unsynced.lock().unwrap().list.is_some());
        assert!(
            directory.unsynced.lock().unwrap().files.is_empty(),
            "meta.json is not queued"
        );
        assert_eq!(directory.atomic_read(list).unwrap(), b"[\"a\",\"b\"]");
        assert_eq!(directory.atomic_read(Path::new("meta.json")).unwrap(), b"{}");
        // Something else took the list's place, which cannot be opened (a link
        // to itself): the sync is of the list written, by its open file.
        std::fs::remove_file(dir.path().join(MANAGED_FILES)).unwrap();
        std::os::unix::fs::symlink(MANAGED_FILES, dir.path().join(MANAGED_FILES)).unwrap();
        directory.sync_directory().unwrap();
        assert!(directory.unsynced.lock().unwrap().list.is_none());
        std::fs::remove_file(dir.path().join(MANAGED_FILES)).unwrap();
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|name| name.starts_with(".tmp"))
            .collect();
        assert!(left.is_empty(), "no temporary file is left: {left:?}");
    }
}
