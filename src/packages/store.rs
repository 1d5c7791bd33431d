//! Content-addressed copies of every file aam deploys, under `$AAM_HOME/objects/`,
//! so `aam diff` can show what a user changed against what was installed.

use std::path::PathBuf;

use crate::error::{Error, Result};

/// The object store of one `AAM_HOME`.
pub struct ObjectStore {
    root: PathBuf,
}

impl ObjectStore {
    /// The store under `root` (created on first write).
    pub fn new(root: PathBuf) -> Self {
        Self { root }
    }

    fn path(&self, digest: &str) -> PathBuf {
        let (fan, rest) = digest.split_at(digest.len().min(2));
        self.root.join(fan).join(rest)
    }

    /// Stores `bytes` (once) and returns their blake3.
    pub fn put(&self, bytes: &[u8]) -> Result<String> {
        let digest = blake3::hash(bytes).to_hex().to_string();
        let path = self.path(&digest);
        if !path.exists() {
            crate::atomic::write_file(&path, bytes)?;
        }
        Ok(digest)
    }

    /// Whether bytes of `digest` are stored (written by aam on this machine).
    pub fn has(&self, digest: &str) -> bool {
        digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_hexdigit()) && self.path(digest).is_file()
    }

    /// The digests of every stored file.
    pub fn digests(&self) -> std::collections::BTreeSet<String> {
        let mut out = std::collections::BTreeSet::new();
        for fan in std::fs::read_dir(&self.root).into_iter().flatten().flatten() {
            let prefix = fan.file_name().to_string_lossy().into_owned();
            for entry in std::fs::read_dir(fan.path()).into_iter().flatten().flatten() {
                let digest = format!("{prefix}{}", entry.file_name().to_string_lossy());
                // Temporary files of writes in progress are not objects.
                if digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_hexdigit()) {
                    out.insert(digest);
                }
            }
        }
        out
    }

    /// The temporary files of writes a killed command left (`.<name>.aam-*`
    /// beside the objects), older than ten minutes: no write in progress
    /// takes that long.
    pub fn stale_temporaries(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for fan in std::fs::read_dir(&self.root).into_iter().flatten().flatten() {
            for entry in std::fs::read_dir(fan.path()).into_iter().flatten().flatten() {
                let name = entry.file_name();
                let temporary = name.to_str().is_some_and(|n| n.starts_with('.') && n.contains(".aam-"));
                if temporary && entry.file_type().is_ok_and(|t| t.is_file()) && !fresh(&entry.path()) {
                    out.push(entry.path());
                }
            }
        }
        out
    }

    /// Deletes every stored file whose digest is not in `keep`, except those
    /// stored in the last ten minutes (an install in progress records its files
    /// after storing them), and the temporary files killed writes left
    /// ([`Self::stale_temporaries`]); returns how many it deleted and how many
    /// such recent ones it kept.
    pub fn retain(&self, keep: &std::collections::BTreeSet<String>) -> Result<(usize, usize)> {
        let (mut deleted, mut kept) = (0, 0);
        for path in self.stale_temporaries() {
            std::fs::remove_file(&path).map_err(|e| Error::io("delete", &path, e))?;
            deleted += 1;
        }
        for digest in self.digests().difference(keep) {
            let path = self.path(digest);
            if fresh(&path) {
                kept += 1;
                continue;
            }
            std::fs::remove_file(&path).map_err(|e| Error::io("delete", &path, e))?;
            deleted += 1;
        }
        Ok((deleted, kept))
    }

    /// Whether the file of `digest` was stored in the last ten minutes: one no
    /// install uses yet may be an install's still recording it, and
    /// [`Self::retain`] keeps it.
    pub fn is_recent(&self, digest: &str) -> bool {
        fresh(&self.path(digest))
    }

    /// The bytes stored under `digest`, if any (checked against it).
    pub fn get(&self, digest: &str) -> Result<Option<Vec<u8>>> {
        let path = self.path(digest);
        match std::fs::read(&path) {
            Ok(bytes) if blake3::hash(&bytes).to_hex().as_str() == digest => Ok(Some(bytes)),
            Ok(_) => Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io("read", &path, e)),
        }
    }
}

/// Whether `path` was written in the last ten minutes.
fn fresh(path: &std::path::Path) -> bool {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .is_ok_and(|t| t.elapsed().unwrap_or_default() < std::time::Duration::from_secs(600))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_killed_writes_temporary_file_is_deleted_once_stale() {
        let dir = tempfile::tempdir().unwrap();
        let store = ObjectStore::new(dir.path().join("objects"));
        let digest = store.put(b"kept").unwrap();
        let fan = store.path(&digest).parent().unwrap().to_path_buf();
        let (stale, live) = (fan.join(".abc.aam-Xy12.tmp"), fan.join(".def.aam-Zz34.tmp"));
        std::fs::write(&stale, b"half").unwrap();
        std::fs::write(&live, b"writing").unwrap();
        let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        std::fs::File::options()
            .write(true)
            .open(&stale)
            .unwrap()
            .set_modified(hour_ago)
            .unwrap();
        assert_eq!(store.stale_temporaries(), std::slice::from_ref(&stale));
        assert_eq!(store.retain(&[digest.clone()].into()).unwrap(), (1, 0));
        assert!(!stale.exists() && live.exists() && store.has(&digest));
    }

    #[test]
    fn stores_by_content() {
        let dir = tempfile::tempdir().unwrap();
        let store = ObjectStore::new(dir.path().join("objects"));
        let digest = store.put(b"hello").unwrap();
        assert_eq!(store.put(b"hello").unwrap(), digest);
        assert_eq!(store.get(&digest).unwrap().unwrap(), b"hello");
        assert_eq!(store.get(&"0".repeat(64)).unwrap(), None);
        std::fs::write(store.path(&digest), b"tampered").unwrap();
        assert_eq!(store.get(&digest).unwrap(), None, "a damaged copy is not returned");
    }
}
