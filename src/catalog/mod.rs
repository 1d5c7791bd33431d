//! The SQLite catalog: the single source of truth every read is answered from.
//!
//! This module owns all SQL; nothing else in the crate imports rusqlite. The
//! schema lives in `migrations/` and is applied by refinery on open; a new
//! catalog is made at once from `baseline.sql`, what those migrations build. Connections
//! run in WAL mode with foreign keys on and a busy timeout, so a CLI command and a
//! server can share one catalog. Every write is one explicit transaction that
//! also bumps the catalog generation, which derived data (the search index)
//! compares against to know whether it is current.
//!
//! The query planner needs table statistics (`sqlite_stat1`) to pick the right
//! index: without them it plans a lookup by path on the `(source_id, kind, path)`
//! index and walks every artifact of the source. Every bulk write therefore ends
//! with `refresh_statistics`, migration V11 analyzes catalogs written before, and
//! a test (`plans`) explains every statement a real workflow runs.

mod artifacts;
mod audit;
mod browse;
mod findings;
mod ids;
mod packages;
#[cfg(test)]
mod plans;
mod projects;
mod registries;
mod restores;
mod skills;
mod sources;
mod versions;

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior};

use crate::error::{Error, ErrorCode, Result};

pub use artifacts::{
    ArtifactFiles, ArtifactSummary, CommitInfo, FileRecord, IndexedArtifact, KnownBlob, LiveArtifact, SourceChanges,
    WriteOutcome,
};
pub use audit::{
    CatalogStats, ExportArtifact, ExportCommit, ExportCounts, ExportFile, ExportInstall, ExportPackage, ExportRecord,
    ExportSource, InstalledFile, Orphan, SourceStats,
};
pub use browse::{ArtifactDetail, Keyset, ListFilter, ListedArtifact, RowFilter, SEARCH_BODY_CHARS, SearchRow};
pub use findings::{FindingCounts, FindingFilter, FindingRow};
pub use ids::{ArtifactId, PackageId, ProjectId, SourceId};
pub use packages::{InstallPlace, InstallRecord, NewPackage, PackageMember, PlaceKind};
pub use projects::{ProjectArtifactRow, ProjectChanges, ProjectFilter};
pub use registries::{PackageFilter, PackageSearchRow, RegistryPackageRecord};
pub use restores::RestoredCommit;
pub use skills::{SkillFile, SkillRow};
pub use sources::{NewSource, SourceRecord};
pub use versions::{ArtifactVersion, DigestRowMismatches};

mod embedded {
    refinery::embed_migrations!("migrations");
}

/// An open, migrated catalog.
pub struct Catalog {
    conn: Connection,
}

impl Catalog {
    /// Opens (creating when missing) and migrates the catalog at `path`.
    pub fn open(path: &Path) -> Result<Self> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| Error::io("create", parent, e))?;
        }
        if std::fs::symlink_metadata(path).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound) {
            create_new(path)?;
        }
        let mut conn = Connection::open(path).map_err(|e| open_error(path, e))?;
        conn.busy_timeout(Duration::from_secs(10))
            .map_err(|e| open_error(path, e))?;
        // Statement journals and sorts stay in memory. A new catalog gets 8 KiB
        // pages (an existing one keeps its size): fewer pages to split, log and
        // copy back made `source add` about 8% faster at 10,000 and 100,000
        // artifacts. 16 KiB pages bought 3% more there but made `source scan`,
        // which reads rows in path order all over the table, 20% slower at
        // 100,000 (every page it misses costs twice the bytes). The page cache is 16 MiB,
        // allocated as pages are used: a new source's artifacts come in pack order,
        // so the `artifacts` indexes take inserts all over, and at 100,000
        // artifacts an 8 MiB cache evicted their pages to the WAL and read them
        // back again and again (1.6 GB written to the WAL for a 240 MB catalog;
        // 300 MB with 16 MiB, and the add 9% faster). 32 MiB bought no more.
        conn.execute_batch(
            "PRAGMA page_size = 8192; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;
             PRAGMA temp_store = MEMORY; PRAGMA cache_size = -16384;",
        )
        .map_err(|e| open_error(path, e))?;
        // One plan per statement, whatever its bound values: otherwise SQLite
        // marks a statement whose plan weighed a parameter (an `= ?` filter
        // beside the index it uses) to be planned again when that parameter
        // changes, and the statement cache clears every binding when a
        // statement comes back to it, so such a statement was parsed and planned
        // anew at each use: a seventh of an update changing 10,000 artifacts.
        // The plans checked in `plans` do not depend on values.
        conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
            .map_err(|e| open_error(path, e))?;
        // WAL is a property of the file, set once; processes opening a new catalog
        // at the same moment switch it one at a time (SQLite answers a concurrent
        // switch with BUSY at once, without waiting). A catalog found out of WAL
        // while another process holds it is in the middle of a bulk write
        // ([`Catalog::appending`]), which switches it back when done: this
        // connection works in rollback-journal mode meanwhile, its transactions
        // waiting for that write as long as the busy timeout allows.
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .map_err(|e| open_error(path, e))?;
        if !mode.eq_ignore_ascii_case("wal") {
            let _lock = migrate_lock(path)?;
            match conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0)) {
                Ok(_) => {}
                Err(e) if is_busy(&e) => {
                    tracing::debug!("the catalog is in a bulk write; it is opened in rollback-journal mode")
                }
                Err(e) => return Err(open_error(path, e)),
            }
        }
        #[cfg(test)]
        plans::record_statements(&mut conn);
        migrate(&mut conn, path)?;
        Ok(Self { conn })
    }

    /// Brings the planner's statistics up to date after a bulk write; see
    /// [`refresh_statistics`]. The write it follows is already committed.
    pub fn refresh_statistics(&self) {
        refresh_statistics(&self.conn);
    }

    /// The generation counter, bumped by every write.
    pub fn generation(&self) -> Result<u64> {
        let value: String = self
            .conn
            .query_row("SELECT value FROM meta WHERE key = 'generation'", [], |r| r.get(0))
            .map_err(db_error)?;
        value
            .parse()
            .map_err(|_| Error::new(ErrorCode::CatalogError, "the catalog generation is unreadable"))
    }

    /// What the catalog holds, in numbers, with its schema version.
    pub fn counts(&self) -> Result<CatalogCounts> {
        self.conn
            .query_row(
                "SELECT (SELECT MAX(version) FROM refinery_schema_history),
                        (SELECT COUNT(*) FROM sources),
                        (SELECT COUNT(*) FROM artifacts WHERE removed_commit_id IS NULL),
                        (SELECT COUNT(*) FROM registry_packages),
                        (SELECT COUNT(*) FROM (SELECT DISTINCT project_root, package_id FROM installs))",
                [],
                |r| {
                    Ok(CatalogCounts {
                        schema_version: r.get(0)?,
                        sources: r.get(1)?,
                        artifacts: r.get(2)?,
                        registry_packages: r.get(3)?,
                        installs: r.get(4)?,
                    })
                },
            )
            .map_err(db_error)
    }

    /// Starts a write transaction that takes the write lock at once.
    /// Runs a bulk write with foreign-key and CHECK constraints off, for a write
    /// whose rows refer only to rows it makes itself or checked under its write
    /// lock, and hold only typed values
    /// (kinds, modes and changes from enums): there the checks can refuse nothing,
    /// yet cost a parent lookup per reference, a statement journal per insert and,
    /// for each `IN (...)` CHECK, a temporary table per row. SQLite changes both
    /// settings only between transactions and re-prepares statements when they
    /// change; they are back on for whatever the connection does next.
    fn unchecked<T>(&mut self, write: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        self.conn
            .execute_batch("PRAGMA foreign_keys = OFF; PRAGMA ignore_check_constraints = ON;")
            .map_err(db_error)?;
        let written = write(self);
        let restored = self
            .conn
            .execute_batch("PRAGMA foreign_keys = ON; PRAGMA ignore_check_constraints = OFF;")
            .map_err(db_error);
        let written = written?;
        restored?;
        Ok(written)
    }

    /// Runs a bulk write that mostly appends new pages (a new source's rows)
    /// with the catalog in rollback-journal mode when this connection is the
    /// only one open: the journal then keeps only the original content of the
    /// pages the write changes, and the pages added past the end of the file are
    /// written once. WAL writes every page twice, into the log and back into the
    /// file at the checkpoint: writing once made `source add` at 10,000 artifacts
    /// 23% faster (598 to 460 ms). Crash safety is SQLite's own: a write killed
    /// halfway leaves a hot journal that the next open rolls back before reading,
    /// and `synchronous = FULL` meanwhile makes the journal durable before the
    /// file changes. Another open connection keeps the catalog in WAL (SQLite
    /// refuses the switch), and the write then runs in WAL as any other. The
    /// catalog goes back to WAL afterwards; when another process holds it at that
    /// moment, the next open switches it instead ([`Catalog::open`]).
    fn appending<T>(&mut self, write: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        let direct = self
            .conn
            .query_row("PRAGMA journal_mode = DELETE", [], |r| r.get::<_, String>(0))
            .is_ok_and(|mode| mode.eq_ignore_ascii_case("delete"));
        if !direct {
            return write(self);
        }
        let written = self
            .conn
            .execute_batch("PRAGMA synchronous = FULL")
            .map_err(db_error)
            .and_then(|()| write(self));
        let restored = self.conn.execute_batch("PRAGMA synchronous = NORMAL").and_then(|()| {
            self.conn
                .query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0))
        });
        if let Err(e) = restored {
            tracing::debug!(error = %e, "the catalog stays in rollback-journal mode until the next open");
        }
        written
    }

    fn write(&mut self) -> Result<Transaction<'_>> {
        self.conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(db_error)
    }

    /// Runs `read` in one read transaction (unless one is open already): its
    /// queries see one state of the catalog, and a run of many small queries
    /// takes SQLite's locks once instead of once per query (a third of the
    /// catalog reads of an update changing 10,000 artifacts).
    pub fn reading<T>(&self, read: impl FnOnce(&Self) -> Result<T>) -> Result<T> {
        if !self.conn.is_autocommit() {
            return read(self);
        }
        let tx = self.conn.unchecked_transaction().map_err(db_error)?;
        let result = read(self);
        // A read transaction has nothing to commit: ending it either way releases it.
        drop(tx);
        result
    }
}

/// Sizes of the catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct CatalogCounts {
    /// Applied migration version.
    pub schema_version: i64,
    /// Registered sources.
    pub sources: i64,
    /// Live artifacts.
    pub artifacts: i64,
    /// Packages of configured registries.
    pub registry_packages: i64,
    /// Installed packages, over every project.
    pub installs: i64,
}

/// Brings the planner's statistics up to date after a bulk write: analyzes the
/// tables that have none or whose size changed tenfold since (SQLite's `PRAGMA
/// optimize` with every table looked at and a bounded analysis, a few
/// milliseconds even on a large catalog). A failure is logged and otherwise
/// ignored: queries stay right, only slower.
fn refresh_statistics(conn: &Connection) {
    if let Err(e) = conn.execute_batch(OPTIMIZE) {
        tracing::warn!(error = %e, "could not refresh the catalog's statistics");
    }
}

/// [`refresh_statistics`] inside a write's own transaction, which spares it a
/// commit of its own (three syncs of a new source's write). A failure is logged
/// and the write goes on, unless SQLite rolled the transaction back with it
/// (an I/O error, a full disk): the write then fails with that error.
fn refresh_statistics_in(tx: &Transaction<'_>) -> Result<()> {
    match tx.execute_batch(OPTIMIZE) {
        Err(e) if tx.is_autocommit() => Err(db_error(e)),
        Err(e) => {
            tracing::warn!(error = %e, "could not refresh the catalog's statistics");
            Ok(())
        }
        Ok(()) => Ok(()),
    }
}

/// SQLite's `PRAGMA optimize` looking at every table, with a bounded analysis.
const OPTIMIZE: &str = "PRAGMA optimize = 0x10012";

/// Starts writing the catalog's pages to disk while a bulk write goes on. A
/// write larger than the page cache hands pages to the file as it goes (a new
/// source of 100,000 artifacts writes 230 MB), and the commit's sync then waited
/// for all of them at once: 400 ms at the end of a 5 s write, the other threads
/// idle meanwhile. Started every few megabytes, the disk writes them while the
/// write goes on and the commit waits for the last few. Starting them is asked
/// of a thread of its own: the kernel blocks the asker while the disk's queue is
/// full (100 ms over such a write). Linux only (elsewhere the commit syncs
/// everything, as before); a file that cannot be opened leaves it to the commit too.
struct Writeback {
    path: Option<std::path::PathBuf>,
    /// Set at the first [`Writeback::start`]: small writes never open the file.
    ask: Option<std::sync::mpsc::SyncSender<()>>,
    /// The thread, joined when the writeback is dropped.
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Writeback {
    fn of(conn: &Connection) -> Self {
        let path = conn
            .path()
            .filter(|path| !path.is_empty())
            .map(std::path::PathBuf::from);
        Self {
            path,
            ask: None,
            thread: None,
        }
    }

    /// Asks for the file's dirty pages to be written, without waiting.
    fn start(&mut self) {
        if !cfg!(target_os = "linux") {
            return;
        }
        if self.ask.is_none()
            && let Some(file) = self.path.as_deref().and_then(kept_open)
        {
            // One request waits at most: more, asked meanwhile, are the same request.
            let (ask, asked) = std::sync::mpsc::sync_channel::<()>(1);
            let started = std::thread::Builder::new()
                .name("catalog-writeback".into())
                .spawn(move || {
                    for () in asked {
                        crate::atomic::start_writeback(&file);
                    }
                });
            if let Ok(thread) = started {
                self.ask = Some(ask);
                self.thread = Some(thread);
            }
        }
        if let Some(ask) = &self.ask {
            let _ = ask.try_send(());
        }
    }

    /// Once a started write's last rows are in: hands the pages SQLite still
    /// holds (its whole cache, 16 MiB) to the file and starts writing them, so
    /// the disk writes them while the write's last statements run, instead of
    /// the commit writing them and then waiting for all of them. A flush that
    /// cannot take place (another connection's lock) leaves them to the commit.
    fn flush(&mut self, conn: &Connection) {
        if self.ask.is_none() {
            return;
        }
        if let Err(e) = conn.cache_flush() {
            tracing::debug!(error = %e, "the catalog's pages are left to the commit");
        }
        self.start();
    }
}

impl Drop for Writeback {
    /// Ends the thread (its last request done) before the write goes on.
    fn drop(&mut self) {
        self.ask = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A descriptor of the file at `path` that stays open until the process ends.
/// Closing any descriptor of a file drops every POSIX lock the process holds on
/// it, SQLite's included (a connection's write lock, the shared lock of WAL
/// mode), and another process could then write beside it: so a descriptor
/// opened on the catalog is never closed. One is kept per file (device and
/// inode), so a process opens each catalog at most once here.
fn kept_open(path: &Path) -> Option<std::sync::Arc<std::fs::File>> {
    use std::os::unix::fs::MetadataExt;
    type Kept = std::sync::Mutex<Vec<((u64, u64), std::sync::Arc<std::fs::File>)>>;
    static KEPT: std::sync::LazyLock<Kept> = std::sync::LazyLock::new(Default::default);
    let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
    let meta = std::fs::metadata(path).ok()?;
    if let Some((_, file)) = kept.iter().find(|(id, _)| *id == (meta.dev(), meta.ino())) {
        return Some(file.clone());
    }
    let file = std::sync::Arc::new(std::fs::File::open(path).ok()?);
    // Kept whatever it turns out to be (the path may name another file by now):
    // dropping it would close it.
    let id = file
        .metadata()
        .map(|m| (m.dev(), m.ino()))
        .unwrap_or((meta.dev(), meta.ino()));
    kept.push((id, file.clone()));
    Some(file)
}

/// Every artifact kind, as SQL: the identity index `(source_id, kind, path)` finds
/// the artifacts of a source at a path (or in a range of paths) with one lookup per
/// kind when a query names them all (`AND kind IN` this).
const EVERY_KIND: &str = "('skill', 'agent', 'prompt', 'instruction')";

/// Bumps the generation inside a write transaction, returning the new value.
fn bump_generation(tx: &Transaction<'_>) -> Result<u64> {
    let value: i64 = tx
        .query_row(
            "UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation' RETURNING CAST(value AS INTEGER)",
            [],
            |r| r.get(0),
        )
        .map_err(db_error)?;
    Ok(value as u64)
}

/// The newest migration version this build carries: the `V15__` of the last file
/// in `migrations/` (a test holds it to refinery's own reading of the files).
/// Every process opening the catalog compares it with the catalog's version, and
/// building refinery's runner to read it compiles a regex (half a millisecond of
/// a 10 ms lookup).
const LATEST_MIGRATION: i64 = 24;

fn migrate(conn: &mut Connection, path: &Path) -> Result<()> {
    let latest = LATEST_MIGRATION;
    if check_version(conn, path, latest)? {
        return Ok(());
    }
    // Processes that find the catalog new or old migrate one at a time: the
    // first does the work, the others find it done.
    let _lock = migrate_lock(path)?;
    if check_version(conn, path, latest)? {
        return Ok(());
    }
    if is_empty(conn)? {
        create_from_baseline(conn).map_err(|e| migrate_error(path, e))?;
    } else {
        migrate_step_by_step(conn).map_err(|e| migrate_error(path, e))?;
    }
    skills::tally_uncounted(conn)
}

/// What the migrations build from nothing, in the order they build it: every
/// table and index of the latest schema and the rows they insert. Generated from
/// the migrations by a test (`the_baseline_is_what_the_migrations_build`), which
/// also holds a catalog made from it to one migrated step by step.
const BASELINE: &str = include_str!("baseline.sql");

/// Makes the catalog at `path`, where there is none yet: built from
/// [`BASELINE`] in a file of its own beside it, with no journal and no sync while
/// it is built, synced once and renamed into place. `path` appears complete or
/// not at all, and the two syncs replace the seven of building it in place in
/// rollback mode and then switching it to WAL. Processes creating it at the
/// same moment take [`migrate_lock`] in turn; the later ones find it made (and
/// one that made it without the lock, an older aam, is never replaced). The
/// catalog is readable by its owner only (0600; SQLite gives its `-wal` and
/// `-shm` the same mode).
///
/// Under the lock, with no catalog there, whatever a catalog that is gone left
/// beside it goes first: the new file says WAL, and SQLite would replay a stale
/// `catalog.db-wal` (of a catalog deleted while a process had it open) into it,
/// or roll a stale hot journal back over it. So do the temporary files of a
/// creation killed halfway.
fn create_new(path: &Path) -> Result<()> {
    let _lock = migrate_lock(path)?;
    if std::fs::symlink_metadata(path).is_ok() {
        return Ok(());
    }
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut leftover = path.as_os_str().to_owned();
        leftover.push(suffix);
        match std::fs::remove_file(&leftover) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(Error::io("delete", Path::new(&leftover), e));
            }
            _ => {}
        }
    }
    crate::atomic::remove_temporaries_of(path);
    let created = crate::atomic::create_private_with(path, |draft| {
        let mut conn = Connection::open(draft).map_err(|e| open_error(path, e))?;
        conn.execute_batch("PRAGMA page_size = 8192; PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;")
            .map_err(|e| open_error(path, e))?;
        create_from_baseline(&mut conn).map_err(|e| migrate_error(path, e))?;
        conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0))
            .map_err(|e| open_error(path, e))?;
        conn.close().map_err(|(_, e)| open_error(path, e))
    })?;
    if created.is_some() {
        crate::atomic::sync_parent(path);
    }
    Ok(())
}

/// Whether the file holds no schema at all: a catalog being created.
fn is_empty(conn: &Connection) -> Result<bool> {
    conn.query_row("SELECT NOT EXISTS (SELECT 1 FROM sqlite_master)", [], |r| r.get(0))
        .map_err(db_error)
}

/// Makes a new catalog from [`BASELINE`] and records every migration as applied,
/// in one transaction, with the rows refinery itself would write (so later
/// versions migrate it as any other). Running the migrations one after another
/// re-parses and reloads the schema at each change: the first command on a new
/// machine took 31 ms that way, 22 ms from the baseline.
fn create_from_baseline(conn: &mut Connection) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    tx.execute_batch(BASELINE)?;
    let applied_on = now_timestamp();
    let mut record = tx
        .prepare("INSERT INTO refinery_schema_history (version, name, applied_on, checksum) VALUES (?1, ?2, ?3, ?4)")?;
    for migration in embedded::migrations::runner().get_migrations() {
        record.execute(rusqlite::params![
            migration.version(),
            migration.name(),
            applied_on,
            migration.checksum().to_string()
        ])?;
    }
    drop(record);
    tx.commit()?;
    Ok(())
}

/// Applies the pending migrations of an existing catalog. All of them and their
/// history rows go in one transaction: refinery's default applies a migration
/// and records it in two, and a process killed between them left a catalog no
/// later run could migrate ("table already exists").
fn migrate_step_by_step(conn: &mut Connection) -> std::result::Result<(), refinery::Error> {
    embedded::migrations::runner().set_grouped(true).run(conn).map(drop)
}

fn migrate_error(path: &Path, e: impl std::error::Error + Send + Sync + 'static) -> Error {
    Error::new(
        ErrorCode::CatalogError,
        format!("failed to migrate the catalog `{}`", path.display()),
    )
    .with_hint("check that the file is writable and not damaged; `aam doctor` can tell more")
    .with_source(e)
}

/// The lock (on `catalog.migrate-lock`) that processes setting the catalog up
/// take in turn; released when dropped.
fn migrate_lock(path: &Path) -> Result<std::fs::File> {
    let lock_path = path.with_extension("migrate-lock");
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| Error::io("open", &lock_path, e))?;
    lock.lock().map_err(|e| Error::io("lock", &lock_path, e))?;
    Ok(lock)
}

/// Whether the catalog is at the `latest` schema version; an error when it is newer.
fn check_version(conn: &Connection, path: &Path, latest: i64) -> Result<bool> {
    let applied: Option<i64> = conn
        .query_row("SELECT MAX(version) FROM refinery_schema_history", [], |r| r.get(0))
        .optional()
        .unwrap_or(None)
        .flatten();
    match applied {
        Some(v) if latest == v => Ok(true),
        Some(v) if v > latest => Err(Error::new(
            ErrorCode::CatalogTooNew,
            format!(
                "the catalog `{}` has schema version {v}, newer than this aam understands ({latest})",
                path.display()
            ),
        )
        .with_hint("upgrade aam, or point `AAM_HOME` at another folder")),
        _ => Ok(false),
    }
}

/// Why the catalog could not be opened: a damaged file says so, and how to
/// start over, instead of pointing at permissions.
fn open_error(path: &Path, e: rusqlite::Error) -> Error {
    // Held past the busy timeout by another process, not unopenable.
    if is_busy(&e) {
        return db_error(e);
    }
    let damaged = matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase)
    );
    let (message, hint) = if damaged {
        (
            format!("the catalog `{}` is damaged: SQLite cannot read it", path.display()),
            "move catalog.db aside together with its catalog.db-wal and catalog.db-shm, and add the sources again",
        )
    } else {
        (
            format!("failed to open the catalog `{}`", path.display()),
            "check that `AAM_HOME` is writable and the file is a SQLite database",
        )
    };
    Error::new(ErrorCode::CatalogError, message)
        .with_hint(hint)
        .with_source(e)
}

/// Whether SQLite refused because another connection holds the catalog.
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// Wraps a SQLite failure without showing SQL to the user.
/// Whether `e` is a foreign key a write could not satisfy.
fn removed_meanwhile(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(failure, _)
        if failure.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_FOREIGNKEY)
}

fn db_error(e: rusqlite::Error) -> Error {
    if is_busy(&e) {
        return Error::new(ErrorCode::CatalogBusy, "the catalog is locked by another aam process")
            .with_hint("wait for the other command to finish and try again")
            .with_source(e);
    }
    if removed_meanwhile(&e) {
        // Every row a write refers to was read first: one gone by the time of
        // the write was removed by another process (an install racing `source remove`).
        return Error::new(
            ErrorCode::Conflict,
            "another aam process removed what this command refers to (a source, an artifact or a package) while it ran",
        )
        .with_hint("run the command again; `aam source list` shows the sources there are now")
        .with_source(e);
    }
    let damaged = matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase)
    );
    let (message, hint) = if damaged {
        (
            "the catalog file is damaged: SQLite cannot read some of its pages",
            "run `aam doctor`; export what can be read with `aam catalog export --format jsonl`",
        )
    } else {
        (
            "a catalog query failed",
            "run `aam -v` for details; `aam doctor` checks the catalog",
        )
    };
    Error::new(ErrorCode::CatalogError, message)
        .with_hint(hint)
        .with_source(e)
}

/// Now, as an RFC 3339 UTC timestamp with second precision.
pub fn now_timestamp() -> String {
    let now = time::OffsetDateTime::now_utc()
        .replace_nanosecond(0)
        .unwrap_or_else(|_| time::OffsetDateTime::now_utc());
    now.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// Sources and commits for the catalog's unit tests.
#[cfg(test)]
pub(crate) mod test_data {
    use super::{CommitInfo, NewSource};

    /// A git source called `name`, following the default branch.
    pub fn source(name: &str) -> NewSource<'_> {
        NewSource {
            name,
            kind: crate::sources::spec::SourceKind::Git,
            url: "https://example.invalid/o/r.git",
            cache_key: "example.invalid/o/r",
            ref_name: None,
            scope_path: "",
            is_default: false,
        }
    }

    /// A commit whose id is `c` forty times.
    pub fn commit(c: char) -> CommitInfo {
        CommitInfo {
            sha: c.to_string().repeat(40),
            tree_sha: "t".repeat(40),
            committed_at: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_damaged_catalog_is_called_damaged_with_the_way_to_start_over() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("catalog.db");
        std::fs::write(&path, vec![0x5a; 8192]).unwrap();
        let err = Catalog::open(&path).err().expect("a file of noise is no catalog");
        assert_eq!(err.code(), ErrorCode::CatalogError);
        assert!(err.message().contains("is damaged"), "{}", err.message());
        assert!(err.hint().unwrap().contains("catalog.db-wal"), "{:?}", err.hint());
        // A catalog path SQLite cannot open at all still points at `AAM_HOME`.
        let folder = dir.path().join("folder.db");
        std::fs::create_dir(&folder).unwrap();
        let err = Catalog::open(&folder).err().unwrap();
        assert!(
            err.message().starts_with("failed to open the catalog"),
            "{}",
            err.message()
        );
        assert!(err.hint().unwrap().contains("AAM_HOME"), "{:?}", err.hint());
    }

    #[test]
    fn a_catalog_held_by_another_process_past_the_timeout_is_called_locked() {
        let busy = rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY), None);
        let err = open_error(Path::new("catalog.db"), busy);
        assert_eq!(err.code(), ErrorCode::CatalogBusy);
        assert!(
            err.message().contains("locked by another aam process"),
            "{}",
            err.message()
        );
        assert!(
            err.hint().unwrap().contains("wait for the other command"),
            "{:?}",
            err.hint()
        );
    }

    #[test]
    fn every_kind_names_each_kind_once() {
        let named: Vec<&str> = EVERY_KIND
            .trim_matches(['(', ')'])
            .split(", ")
            .map(|k| k.trim_matches('\''))
            .collect();
        let kinds: Vec<&str> = crate::scan::ArtifactKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(named, kinds);
        // A kind added to the type stops this from compiling: add it to `ALL`
        // and to `EVERY_KIND` too (or lookups by path miss its artifacts).
        use crate::scan::ArtifactKind::*;
        for kind in crate::scan::ArtifactKind::ALL {
            match kind {
                Skill | Agent | Prompt | Instruction => {}
            }
        }
    }

    #[test]
    fn opens_migrates_and_reopens() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/catalog.db");
        let catalog = Catalog::open(&path).unwrap();
        assert_eq!(catalog.generation().unwrap(), 0);
        let mode: String = catalog.conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
        assert_eq!(mode, "wal");
        let fk: i64 = catalog.conn.query_row("PRAGMA foreign_keys", [], |r| r.get(0)).unwrap();
        assert_eq!(fk, 1);
        drop(catalog);
        Catalog::open(&path).unwrap();
    }

    /// A cached statement is planned once however its parameters change: a
    /// plan weighing a value (here an `= ?` filter beside the rowid order) was
    /// planned anew at each use, since the cache clears bindings on return.
    #[test]
    fn a_cached_statement_is_not_planned_again_for_new_values() {
        let dir = tempfile::tempdir().unwrap();
        let catalog = Catalog::open(&dir.path().join("catalog.db")).unwrap();
        let sql = "SELECT path FROM artifact_findings WHERE artifact_id = ?1 ORDER BY rowid";
        for id in 2..6 {
            let mut statement = catalog.conn.prepare_cached(sql).unwrap();
            statement
                .query_map([id], |r| r.get::<_, String>(0))
                .unwrap()
                .for_each(drop);
        }
        let statement = catalog.conn.prepare_cached(sql).unwrap();
        assert_eq!(statement.get_status(rusqlite::StatementStatus::RePrepare), 0);
    }

    /// A new catalog is built beside its place and renamed in: it is complete
    /// (in WAL, 8 KiB pages, every migration recorded) from the moment it has its
    /// name, nothing of the build is left beside it, and openers racing to make
    /// it all end up with the one catalog, none replacing another's.
    #[test]
    fn a_new_catalog_lands_whole_and_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("catalog.db");
        // What a creation killed halfway left: gone once a catalog is made.
        for leftover in [".catalog.db.aam-Ab12Cd.tmp", ".catalog.db.aam-Ab12Cd.tmp-journal"] {
            std::fs::write(dir.path().join(leftover), "x").unwrap();
        }
        let openers: Vec<_> = (0..4)
            .map(|i| {
                let path = path.clone();
                std::thread::spawn(move || {
                    let mut catalog = Catalog::open(&path).unwrap();
                    let source = crate::catalog::test_data::source(["a", "b", "c", "d"][i]);
                    let commit = crate::catalog::test_data::commit('a');
                    catalog
                        .add_indexed_source(&source, None, &commit, std::iter::empty(), |_| {})
                        .unwrap();
                })
            })
            .collect();
        for opener in openers {
            opener.join().unwrap();
        }
        let catalog = Catalog::open(&path).unwrap();
        let ask = |pragma: &str| -> String {
            catalog
                .conn
                .query_row(pragma, [], |r| r.get::<_, rusqlite::types::Value>(0))
                .map(|v| format!("{v:?}"))
                .unwrap()
        };
        assert_eq!(ask("PRAGMA journal_mode"), "Text(\"wal\")");
        assert_eq!(ask("PRAGMA page_size"), "Integer(8192)");
        assert_eq!(catalog.schema_versions().unwrap(), (LATEST_MIGRATION, LATEST_MIGRATION));
        assert_eq!(
            catalog.counts().unwrap().sources,
            4,
            "every opener wrote to the same catalog"
        );
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| !name.starts_with("catalog.db-"))
            .collect();
        names.sort();
        assert_eq!(names, ["catalog.db", "catalog.migrate-lock"]);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "readable by its owner only");
    }

    /// A catalog deleted while a process had it open leaves its `-wal` (and
    /// `-shm`) behind; the new catalog made in its place never replays them.
    #[test]
    fn a_new_catalog_ignores_what_a_deleted_one_left_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("catalog.db");
        let other = dir.path().join("other.db");
        let conn = Connection::open(&other).unwrap();
        conn.execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE stale (x); INSERT INTO stale VALUES (1);")
            .unwrap();
        // Copied while `other` is open: its WAL still holds every change.
        for suffix in ["-wal", "-shm"] {
            std::fs::copy(
                format!("{}{suffix}", other.display()),
                format!("{}{suffix}", path.display()),
            )
            .unwrap();
        }
        drop(conn);
        let catalog = Catalog::open(&path).unwrap();
        let stale: i64 = catalog
            .conn
            .query_row("SELECT count(*) FROM sqlite_master WHERE name = 'stale'", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(stale, 0, "the old WAL was not replayed");
        assert_eq!(catalog.generation().unwrap(), 0);
        assert_eq!(catalog.schema_versions().unwrap(), (LATEST_MIGRATION, LATEST_MIGRATION));
    }

    #[test]
    fn the_latest_migration_is_the_newest_file_refinery_reads() {
        let newest = embedded::migrations::runner()
            .get_migrations()
            .iter()
            .map(|m| i64::from(m.version()))
            .max();
        assert_eq!(
            newest,
            Some(LATEST_MIGRATION),
            "set LATEST_MIGRATION to the new migration's version"
        );
        // A catalog just made records it, so the next open takes the fast path.
        let dir = tempfile::tempdir().unwrap();
        let catalog = Catalog::open(&dir.path().join("c.db")).unwrap();
        assert_eq!(catalog.schema_versions().unwrap(), (LATEST_MIGRATION, LATEST_MIGRATION));
    }

    #[test]
    fn schema_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        let catalog = Catalog::open(&dir.path().join("c.db")).unwrap();
        let mut stmt = catalog
            .conn
            .prepare("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'refinery%' ORDER BY type DESC, name")
            .unwrap();
        let schema: Vec<String> = stmt.query_map([], |r| r.get(0)).unwrap().map(|r| r.unwrap()).collect();
        insta::assert_snapshot!(schema.join(";\n\n"));
    }

    /// The SQL that remakes `conn`'s schema and rows from nothing, in the order
    /// they were made, as `baseline.sql` holds it. The statistics tables are made
    /// by `ANALYZE` (SQLite refuses to create them by name) and their rows, like
    /// the migration history's, are left out.
    fn baseline_of(conn: &Connection) -> String {
        let mut sql = String::from(
            "-- Generated from migrations/ by `the_baseline_is_what_the_migrations_build`:\n\
             -- AAM_UPDATE_GENERATED=1 cargo test --lib baseline\n\
             -- What the migrations build from nothing, run once to make a new catalog.\n\n",
        );
        let mut objects = conn
            .prepare("SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY rowid")
            .unwrap();
        let objects: Vec<(String, String)> = objects
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        let mut analyzed = false;
        for (name, statement) in &objects {
            if name.starts_with("sqlite_stat") {
                analyzed = true;
            } else {
                sql.push_str(&format!("{statement};\n\n"));
            }
        }
        let tables = objects
            .iter()
            .filter(|(name, statement)| {
                statement.starts_with("CREATE TABLE") && !name.starts_with("sqlite_") && !name.starts_with("refinery_")
            })
            .map(|(name, _)| name);
        for table in tables {
            let mut rows = conn.prepare(&format!("SELECT * FROM \"{table}\"")).unwrap();
            let width = rows.column_count();
            let mut rows = rows.query([]).unwrap();
            while let Some(row) = rows.next().unwrap() {
                let values: Vec<String> = (0..width)
                    .map(|i| match row.get_ref(i).unwrap() {
                        rusqlite::types::ValueRef::Null => "NULL".to_string(),
                        rusqlite::types::ValueRef::Integer(n) => n.to_string(),
                        rusqlite::types::ValueRef::Text(t) => {
                            format!("'{}'", String::from_utf8_lossy(t).replace('\'', "''"))
                        }
                        other => panic!("a migration inserts a {other:?}, which baseline_of cannot write"),
                    })
                    .collect();
                sql.push_str(&format!("INSERT INTO {table} VALUES ({});\n", values.join(", ")));
            }
        }
        if analyzed {
            sql.push_str("\nPRAGMA analysis_limit = 2000;\nANALYZE;\n");
        }
        sql
    }

    /// A catalog migrated from nothing by refinery, one migration after another.
    fn migrated_step_by_step(dir: &Path) -> Connection {
        let mut conn = Connection::open(dir.join("stepwise.db")).unwrap();
        migrate_step_by_step(&mut conn).unwrap();
        conn
    }

    #[test]
    fn the_baseline_is_what_the_migrations_build() {
        let dir = tempfile::tempdir().unwrap();
        let built = baseline_of(&migrated_step_by_step(dir.path()));
        if std::env::var("AAM_UPDATE_GENERATED").is_ok_and(|v| v == "1") {
            std::fs::write(concat!(env!("CARGO_MANIFEST_DIR"), "/src/catalog/baseline.sql"), &built).unwrap();
        } else {
            assert!(
                BASELINE == built,
                "src/catalog/baseline.sql is not what the migrations build; regenerate it with \
                 `AAM_UPDATE_GENERATED=1 cargo test --lib baseline`"
            );
        }
    }

    #[test]
    fn a_catalog_made_from_the_baseline_is_one_migrated_step_by_step() {
        let dir = tempfile::tempdir().unwrap();
        let stepwise = migrated_step_by_step(dir.path());
        let made = Catalog::open(&dir.path().join("c.db")).unwrap();
        let read = |conn: &Connection, sql: &str| -> Vec<Vec<String>> {
            let mut stmt = conn.prepare(sql).unwrap();
            let width = stmt.column_count();
            stmt.query_map([], |r| {
                (0..width)
                    .map(|i| r.get::<_, Option<String>>(i).map(Option::unwrap_or_default))
                    .collect::<rusqlite::Result<Vec<String>>>()
            })
            .unwrap()
            .map(|r| r.unwrap())
            .collect()
        };
        for sql in [
            "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name",
            "SELECT CAST(version AS TEXT), name, checksum FROM refinery_schema_history ORDER BY version",
            "SELECT key, value FROM meta ORDER BY key",
        ] {
            assert_eq!(read(&made.conn, sql), read(&stepwise, sql), "{sql}");
        }
        // Refinery, reading the history the baseline wrote, has nothing left to apply
        // and finds no migration changed since (it checks every checksum).
        let mut conn = made.conn;
        let report = embedded::migrations::runner().run(&mut conn).unwrap();
        assert!(report.applied_migrations().is_empty());
    }

    #[test]
    fn newer_catalog_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.db");
        let catalog = Catalog::open(&path).unwrap();
        catalog
            .conn
            .execute(
                "INSERT INTO refinery_schema_history (version, name, applied_on, checksum) VALUES (999, 'future', '', '0')",
                [],
            )
            .unwrap();
        drop(catalog);
        let err = Catalog::open(&path).err().unwrap();
        assert_eq!(err.code(), ErrorCode::CatalogTooNew);
    }

    #[test]
    fn a_row_removed_before_a_write_refers_to_it_is_a_conflict() {
        let dir = tempfile::tempdir().unwrap();
        let catalog = Catalog::open(&dir.path().join("c.db")).unwrap();
        let e = catalog
            .conn
            .execute(
                "INSERT INTO commits (source_id, sha, tree_sha, committed_at, indexed_at) VALUES (999, 'a', 'b', 0, '')",
                [],
            )
            .unwrap_err();
        let error = db_error(e);
        assert_eq!(error.code(), ErrorCode::Conflict);
        assert!(error.message().contains("removed"), "{}", error.message());
    }

    #[test]
    fn stale_updates_and_duplicate_names_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut catalog = Catalog::open(&dir.path().join("c.db")).unwrap();
        let source = test_data::source("x");
        let commit = test_data::commit;
        let (id, _) = catalog
            .add_indexed_source(&source, Some("main"), &commit('a'), std::iter::empty(), |_| {})
            .unwrap();
        let generation = catalog.generation().unwrap();
        let stale = catalog
            .record_update(
                id,
                Some(&commit('c').sha),
                Some("main"),
                &commit('b'),
                &SourceChanges::default(),
                |_| {},
            )
            .unwrap_err();
        assert_eq!(stale.code(), ErrorCode::Conflict);
        assert_eq!(
            catalog.find_source("x").unwrap().unwrap().head_commit,
            Some(commit('a').sha)
        );
        assert_eq!(catalog.generation().unwrap(), generation, "nothing was written");
        catalog
            .record_update(
                id,
                Some(&commit('a').sha),
                Some("main"),
                &commit('b'),
                &SourceChanges::default(),
                |_| {},
            )
            .unwrap();
        assert_eq!(catalog.generation().unwrap(), generation + 1);
        let duplicate = catalog
            .add_indexed_source(&source, None, &commit('a'), std::iter::empty(), |_| {})
            .unwrap_err();
        assert_eq!(duplicate.code(), ErrorCode::SourceAlreadyExists);
        // Removed by another process between the fetch and the write.
        catalog.remove_source(id).unwrap();
        let gone = catalog
            .record_update(
                id,
                Some(&commit('b').sha),
                Some("main"),
                &commit('c'),
                &SourceChanges::default(),
                |_| {},
            )
            .unwrap_err();
        assert_eq!(gone.code(), ErrorCode::SourceNotFound);
    }

    #[test]
    fn catalogs_from_before_v11_are_analyzed_and_tallied_on_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.db");
        let mut catalog = Catalog::open(&path).unwrap();
        let source = test_data::source("x");
        let commit = test_data::commit('a');
        catalog
            .add_indexed_source(&source, Some("main"), &commit, std::iter::empty(), |_| {})
            .unwrap();
        let analyzed = |catalog: &Catalog| -> i64 {
            catalog
                .conn
                .query_row("SELECT COUNT(*) FROM sqlite_stat1 WHERE tbl = 'commits'", [], |r| {
                    r.get(0)
                })
                .unwrap()
        };
        assert!(analyzed(&catalog) > 0, "a write refreshes the statistics");
        // What a catalog written by an aam before V11 looks like (later versions undone too).
        catalog
            .conn
            .execute_batch(
                "DELETE FROM sqlite_stat1; ALTER TABLE sources DROP COLUMN skill_census;
                 ALTER TABLE sources DROP COLUMN artifact_rows;
                 ALTER TABLE projects DROP COLUMN artifact_count;
                 DROP TABLE artifact_version_files; DROP TABLE artifact_versions;
                 DROP INDEX project_artifacts_main_file; ALTER TABLE project_files DROP COLUMN ctime_ns;
                 DROP TABLE written_files; DROP INDEX package_artifacts_awaiting_source; ALTER TABLE package_artifacts DROP COLUMN source_url;
                 DROP TABLE restored_commits; DROP TABLE install_places; DELETE FROM refinery_schema_history WHERE version >= 11",
            )
            .unwrap();
        assert_eq!(analyzed(&catalog), 0);
        drop(catalog);
        let catalog = Catalog::open(&path).unwrap();
        assert!(analyzed(&catalog) > 0, "migrating to V11 analyzes the catalog");
        let tallied: Option<String> = catalog
            .conn
            .query_row("SELECT skill_census FROM sources", [], |r| r.get(0))
            .unwrap();
        assert_eq!(tallied.as_deref(), Some("{}"), "and counts the skills of its sources");
    }

    #[test]
    fn projects_recorded_before_v15_have_their_artifacts_counted_on_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.db");
        let mut catalog = Catalog::open(&path).unwrap();
        let artifact = |path: &str| ProjectArtifactRow {
            kind: crate::scan::ArtifactKind::Skill,
            path: path.to_string(),
            name: path.to_string(),
            description: None,
            main_file: format!("{path}/SKILL.md"),
            has_vendor_agent: false,
        };
        let changes = ProjectChanges {
            artifacts_set: vec![artifact("skills/a"), artifact("skills/b")],
            ..ProjectChanges::default()
        };
        let (id, _) = catalog.record_project("/p", None, &changes).unwrap();
        assert_eq!(catalog.project_artifact_count(id).unwrap(), 2);
        catalog
            .conn
            .execute_batch(
                "ALTER TABLE projects DROP COLUMN artifact_count; ALTER TABLE project_files DROP COLUMN ctime_ns;
                 DROP TABLE written_files; ALTER TABLE artifact_versions DROP COLUMN digests;
                 DROP INDEX package_artifacts_awaiting_source; ALTER TABLE package_artifacts DROP COLUMN source_url; DROP TABLE restored_commits; DROP TABLE install_places; DELETE FROM refinery_schema_history WHERE version >= 15",
            )
            .unwrap();
        drop(catalog);
        let catalog = Catalog::open(&path).unwrap();
        assert_eq!(catalog.project_artifact_count(id).unwrap(), 2);
    }

    #[test]
    fn not_a_database() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.db");
        std::fs::write(&path, b"this is not sqlite, just text padding it out to a page or so").unwrap();
        let err = Catalog::open(&path).err().unwrap();
        assert_eq!(err.code(), ErrorCode::CatalogError);
        assert!(!err.message().contains("SELECT"));
    }
}
