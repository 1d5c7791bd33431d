//! The record of the catalog's last passing integrity check, so that the default
//! check does not read again, on every run, pages nothing has written since.
//!
//! The record (`catalog-check.json` beside `catalog.db`) holds what the check saw:
//! the catalog file's and its WAL's identity, size, modification and change times
//! (to the nanosecond), and the catalog's write generation. Any write to either
//! file, by aam, SQLite or anything else (a damaged disk block rewritten, a
//! program writing at an offset), changes the change time the kernel keeps, which
//! no program can set back; so a record whose stamps all still match means no byte
//! of the catalog was written since the check passed. Damage that arrives without
//! a write (a failing disk returning other bytes) is not seen this way: a record
//! older than [`MAX_AGE`] is not trusted, and `--full` never uses it.
//!
//! A pass is recorded only when the stamps were the same before and after the
//! check (no write landed during it) and the newest change time is at least
//! [`SETTLED`] old, so that a write in the same tick of a coarse file-system clock
//! cannot leave the same stamps behind.
//!
//! The record is a cache: any file there is untrusted input, read with a size
//! bound and parsed strictly, and a missing, unreadable or mismatched one only
//! means "check now". Writing it may fail (a read-only home); nothing else depends
//! on it.

use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::config::AamHome;

/// How old the newest change to the catalog must be before a pass is recorded.
pub const SETTLED: Duration = Duration::from_secs(2);

/// How long a recorded pass stands in for the check while nothing changes.
pub const MAX_AGE: Duration = Duration::from_secs(24 * 60 * 60);

/// The record's format; another version is not read.
const VERSION: u32 = 1;

/// More than any record needs: a larger file is not parsed.
const MAX_BYTES: u64 = 4096;

/// Which integrity check passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckKind {
    /// SQLite's quick check, table by table (see `Catalog::integrity_problems`).
    Quick,
    /// `PRAGMA integrity_check`.
    Full,
}

/// One file's identity and the times the kernel last changed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileStamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
}

impl FileStamp {
    fn of(path: &Path) -> std::io::Result<Option<Self>> {
        match std::fs::metadata(path) {
            Ok(meta) => Ok(Some(Self {
                dev: meta.dev(),
                ino: meta.ino(),
                size: meta.size(),
                mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
                ctime_ns: i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
            })),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// What the catalog looked like: its file, its WAL when it holds anything (an
/// empty or absent WAL adds nothing to the database), and its write generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fingerprint {
    catalog: FileStamp,
    wal: Option<FileStamp>,
    generation: u64,
}

impl Fingerprint {
    /// The catalog at `path` now, at write generation `generation`; `None` when
    /// the file cannot be looked at. A linked catalog is stamped where it really
    /// is, beside the WAL SQLite keeps there.
    pub fn take(path: &Path, generation: u64) -> Option<Self> {
        let path = std::fs::canonicalize(path).ok()?;
        let catalog = FileStamp::of(&path).ok()??;
        let wal = FileStamp::of(&wal_path(&path)).ok()?.filter(|wal| wal.size > 0);
        Some(Self {
            catalog,
            wal,
            generation,
        })
    }

    /// Whether the newest change is at least [`SETTLED`] before `now`.
    fn settled(&self, now: SystemTime) -> bool {
        let newest = self
            .wal
            .iter()
            .chain([&self.catalog])
            .map(|stamp| stamp.ctime_ns.max(stamp.mtime_ns))
            .max()
            .unwrap_or(i128::MAX);
        unix_ns(now).is_some_and(|now| now - newest >= SETTLED.as_nanos() as i128)
    }
}

/// The record as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Stored {
    version: u32,
    check: CheckKind,
    /// When the check ran, in seconds since the Unix epoch.
    checked_at: i64,
    fingerprint: Fingerprint,
}

/// A passing check that still stands for the catalog as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Standing {
    /// Which check passed.
    pub check: CheckKind,
    /// When it ran.
    pub at: SystemTime,
}

impl Standing {
    /// When the check ran, as an RFC 3339 UTC timestamp.
    pub fn at_text(&self) -> String {
        time::OffsetDateTime::from(self.at)
            .replace_nanosecond(0)
            .ok()
            .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok())
            .unwrap_or_default()
    }
}

/// The record file of the catalog in `home`.
pub fn path(home: &AamHome) -> PathBuf {
    home.root().join("catalog-check.json")
}

fn wal_path(catalog: &Path) -> PathBuf {
    let mut name = catalog.as_os_str().to_owned();
    name.push("-wal");
    PathBuf::from(name)
}

fn unix_ns(time: SystemTime) -> Option<i128> {
    time.duration_since(UNIX_EPOCH).ok().map(|d| d.as_nanos() as i128)
}

/// The recorded pass, when the record is readable, made at `now` or up to
/// [`MAX_AGE`] before it, and of the catalog exactly as `current` finds it.
pub fn standing(record: &Path, current: &Fingerprint, now: SystemTime) -> Option<Standing> {
    // Neither a link nor anything that could block a read (a FIFO) is read.
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK).bits() as i32)
        .open(record)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(MAX_BYTES + 1).read_to_end(&mut bytes).ok()?;
    if bytes.len() as u64 > MAX_BYTES {
        return None;
    }
    let stored: Stored = serde_json::from_slice(&bytes).ok()?;
    if stored.version != VERSION || stored.fingerprint != *current {
        return None;
    }
    let at = UNIX_EPOCH.checked_add(Duration::from_secs(u64::try_from(stored.checked_at).ok()?))?;
    let age = now.duration_since(at).ok()?;
    (age <= MAX_AGE).then_some(Standing {
        check: stored.check,
        at,
    })
}

/// Records that `check` passed at `now` on the catalog `before` and `after` it
/// ran found, when they are the same and settled; otherwise removes any record.
/// Failing to write is logged and otherwise ignored.
pub fn remember(record: &Path, check: CheckKind, before: &Fingerprint, after: Option<&Fingerprint>, now: SystemTime) {
    if after != Some(before) || !before.settled(now) {
        forget(record);
        return;
    }
    let Some(checked_at) = now
        .duration_since(UNIX_EPOCH)
        .ok()
        .and_then(|d| i64::try_from(d.as_secs()).ok())
    else {
        return;
    };
    let stored = Stored {
        version: VERSION,
        check,
        checked_at,
        fingerprint: *before,
    };
    let written = serde_json::to_vec(&stored)
        .map_err(|e| e.to_string())
        .and_then(|bytes| crate::atomic::write_file(record, &bytes).map_err(|e| e.message().to_string()));
    if let Err(e) = written {
        tracing::debug!(error = %e, "could not record the catalog check");
    }
}

/// Removes the record, so that the next check runs.
pub fn forget(record: &Path) {
    match std::fs::remove_file(record) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => tracing::debug!(error = %e, "could not remove the catalog check record"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog(dir: &Path) -> PathBuf {
        let path = dir.join("catalog.db");
        std::fs::write(&path, vec![7u8; 8192]).unwrap();
        path
    }

    fn later() -> SystemTime {
        SystemTime::now() + Duration::from_secs(10)
    }

    #[test]
    fn a_pass_stands_until_the_catalog_or_its_wal_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let db = catalog(dir.path());
        let record = dir.path().join("catalog-check.json");
        let before = Fingerprint::take(&db, 4).unwrap();
        remember(&record, CheckKind::Quick, &before, Some(&before), later());
        let standing = standing(&record, &Fingerprint::take(&db, 4).unwrap(), later()).unwrap();
        assert_eq!(standing.check, CheckKind::Quick);
        assert!(standing.at_text().ends_with('Z'), "{}", standing.at_text());

        // Another generation, an empty WAL (nothing), a WAL with frames, a write
        // of the same size at an offset.
        assert_eq!(standing_now(&record, &db, 5), None);
        std::fs::write(wal_path(&db), b"").unwrap();
        assert!(standing_now(&record, &db, 4).is_some(), "an empty WAL adds nothing");
        std::fs::write(wal_path(&db), b"frames").unwrap();
        assert_eq!(standing_now(&record, &db, 4), None);
        std::fs::remove_file(wal_path(&db)).unwrap();
        assert!(standing_now(&record, &db, 4).is_some());
        std::thread::sleep(Duration::from_millis(20));
        use std::os::unix::fs::FileExt;
        std::fs::OpenOptions::new()
            .write(true)
            .open(&db)
            .unwrap()
            .write_at(&[7u8; 16], 4096)
            .unwrap();
        assert_eq!(
            standing_now(&record, &db, 4),
            None,
            "a write of the same bytes still counts"
        );
    }

    fn standing_now(record: &Path, db: &Path, generation: u64) -> Option<Standing> {
        standing(record, &Fingerprint::take(db, generation).unwrap(), later())
    }

    #[test]
    fn a_linked_catalog_is_stamped_where_it_is() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("real")).unwrap();
        let real = catalog(&dir.path().join("real"));
        let link = dir.path().join("catalog.db");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let before = Fingerprint::take(&link, 1).unwrap();
        assert_eq!(before, Fingerprint::take(&real, 1).unwrap());
        std::fs::write(wal_path(&real), b"frames").unwrap();
        assert_ne!(
            Fingerprint::take(&link, 1).unwrap(),
            before,
            "the WAL beside the real file"
        );
    }

    #[test]
    fn a_pass_is_recorded_only_when_nothing_moved_and_the_last_write_settled() {
        let dir = tempfile::tempdir().unwrap();
        let db = catalog(dir.path());
        let record = dir.path().join("catalog-check.json");
        let before = Fingerprint::take(&db, 1).unwrap();
        remember(&record, CheckKind::Quick, &before, Some(&before), SystemTime::now());
        assert!(!record.exists(), "a write in the last {SETTLED:?} may share its stamps");
        let moved = Fingerprint {
            generation: 2,
            ..before
        };
        remember(&record, CheckKind::Quick, &before, Some(&moved), later());
        assert!(!record.exists(), "a write during the check");
        remember(&record, CheckKind::Full, &before, None, later());
        assert!(!record.exists());
        remember(&record, CheckKind::Full, &before, Some(&before), later());
        assert!(record.exists());
        // A later run that cannot record removes the old record.
        remember(&record, CheckKind::Quick, &before, Some(&moved), later());
        assert!(!record.exists());
    }

    #[test]
    fn an_old_future_or_foreign_record_is_not_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let db = catalog(dir.path());
        let record = dir.path().join("catalog-check.json");
        let now = Fingerprint::take(&db, 1).unwrap();
        remember(&record, CheckKind::Quick, &now, Some(&now), later());
        assert!(standing(&record, &now, later() + MAX_AGE + Duration::from_secs(1)).is_none());
        assert!(
            standing(&record, &now, SystemTime::now()).is_none(),
            "made in the future"
        );

        let good = std::fs::read_to_string(&record).unwrap();
        for bad in [
            String::new(),
            "not json".to_string(),
            good.replace("\"version\":1", "\"version\":2"),
            good.replace("\"check\":\"quick\"", "\"check\":\"ok\""),
            good.replace('}', ",\"extra\":1}"),
            good.replace("\"checked_at\":", "\"checked_at\":-"),
            format!("{good}{}", " ".repeat(MAX_BYTES as usize)),
        ] {
            std::fs::write(&record, &bad).unwrap();
            assert!(standing(&record, &now, later()).is_none(), "{bad}");
        }
        std::fs::write(&record, &good).unwrap();
        assert!(standing(&record, &now, later()).is_some());
        std::fs::remove_file(&record).unwrap();
        assert!(standing(&record, &now, later()).is_none());
        // A link to a good record, and a FIFO (which would block a plain read).
        let elsewhere = dir.path().join("elsewhere.json");
        std::fs::write(&elsewhere, &good).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &record).unwrap();
        assert!(standing(&record, &now, later()).is_none());
        forget(&record);
        assert!(elsewhere.exists(), "forgetting removes the link, not what it names");
        let made = std::process::Command::new("mkfifo").arg(&record).status().unwrap();
        assert!(made.success());
        assert!(standing(&record, &now, later()).is_none());
        forget(&record);
        assert!(!record.exists());
    }
}
