//! Catalog writes that keep the search index in step: the catalog is the truth,
//! the index follows it under its writer lock (see docs/architecture.md, "Search").

use super::{Context, PooledCatalog};
use crate::catalog::{ArtifactId, Catalog, SearchRow};
use crate::config::Settings;
use crate::error::{Error, Result};
use crate::packages::registry::Registry;
use crate::search::IndexChange;

/// Reports an index that could not follow a catalog write (the write stands).
fn warn(e: Error) {
    tracing::warn!("search index not updated ({e}); the next search rebuilds it");
}

/// Runs a catalog write while holding the search index's writer lock, then
/// brings the index along. `write` returns its value, what changed, and the
/// generation after the write. The catalog is the truth: when the index cannot be
/// opened or updated the write still stands, and the next search rebuilds the index.
pub(crate) fn indexed_write<T>(
    ctx: &Context,
    catalog: &mut Catalog,
    write: impl FnOnce(&mut Catalog) -> Result<(T, IndexChange, u64)>,
) -> Result<T> {
    // The last point a cancelled call can stop with nothing written.
    ctx.cancel.check()?;
    let index = ctx.search_index().map_err(warn).ok();
    let updater = index.as_ref().and_then(|i| i.writer().map_err(warn).ok());
    let before = catalog.generation()?;
    let (value, change, after) = write(catalog)?;
    if let Some(updater) = updater
        && let Err(e) = updater.apply(catalog, &change, before, after)
    {
        warn(e);
    }
    Ok(value)
}

/// Where a streamed write hands each written artifact's search row. Dropping it
/// says every row was handed over: the index then finishes its new segment while
/// the catalog write finishes and commits.
pub(crate) type RowSink<'s> = Box<dyn FnMut(SearchRow) + 's>;

/// [`indexed_write`] for a write that hands over each artifact's search row as it
/// writes it (a new source, an update): the documents of `replacing` (the
/// artifacts it modifies or removes) are deleted first, then the rows go to the index writer while the catalog
/// transaction runs, so tantivy indexes beside SQLite instead of after it, and
/// writes its segment (the slow half of its commit) while SQLite commits. The index
/// commits only after the catalog did, and is rolled back when the catalog write
/// fails. When the index is not at the catalog's generation beforehand, the rows
/// are dropped and the index is brought along afterwards (a rebuild).
pub(crate) fn streamed_write<T>(
    ctx: &Context,
    catalog: &mut Catalog,
    replacing: &[ArtifactId],
    write: impl FnOnce(&mut Catalog, RowSink<'_>) -> Result<(T, IndexChange, u64)>,
) -> Result<T> {
    ctx.cancel.check()?;
    let index = ctx.search_index().map_err(warn).ok();
    let updater = index.as_ref().and_then(|i| i.writer().map_err(warn).ok());
    let before = catalog.generation()?;
    let Some(updater) = updater else {
        return write(catalog, Box::new(|_| {})).map(|(value, _, _)| value);
    };
    if !updater.follows(catalog, before).map_err(warn).unwrap_or(false) {
        let (value, change, after) = write(catalog, Box::new(|_| {}))?;
        updater.apply(catalog, &change, before, after).map_err(warn).ok();
        return Ok(value);
    }
    let (rows, received) = std::sync::mpsc::sync_channel::<Vec<SearchRow>>(crate::sources::index::BATCHES_AHEAD);
    let (verdict, decided) = std::sync::mpsc::channel::<Option<u64>>();
    // `verdict` is moved into the scope: a panicking write drops it while
    // unwinding, so the index side learns there is no verdict and drops its
    // segment, instead of waiting for one (which kept the scope from ending).
    std::thread::scope(move |scope| {
        // The index's side: add the rows as they come, finish the segment once the
        // sink is dropped, then commit it at the generation the catalog reached, or
        // drop it when the catalog write failed (no verdict). An index error stops
        // the feeding but not the catalog write, which stands alone.
        let indexing = scope.spawn(move || {
            updater.remove(replacing);
            let mut failed = None;
            for batch in received {
                if failed.is_none()
                    && let Err(e) = updater.add(batch)
                {
                    failed = Some(e);
                }
            }
            match failed {
                Some(e) => {
                    updater.rollback().map_err(warn).ok();
                    Err(e)
                }
                None => updater.finish_when(|| decided.recv().ok().flatten()),
            }
        });
        let mut batch = RowBatch::new(rows);
        let written = write(catalog, Box::new(move |row| batch.push(row)));
        let _ = verdict.send(written.as_ref().ok().map(|(_, _, after)| *after));
        match indexing.join() {
            Ok(Err(e)) => warn(e),
            Ok(Ok(())) => {}
            Err(panic) => std::panic::resume_unwind(panic),
        }
        written.map(|(value, _, _)| value)
    })
}

/// Rows on their way to the index's side of a [`streamed_write`], handed over
/// [`ROWS_PER_BATCH`] at a time: one by one, each woke the receiving thread. The
/// rest goes when the batch is dropped (the sink dropped: every row handed over).
struct RowBatch {
    sender: std::sync::mpsc::SyncSender<Vec<SearchRow>>,
    rows: Vec<SearchRow>,
}

/// Rows per hand-over.
const ROWS_PER_BATCH: usize = 64;

impl RowBatch {
    fn new(sender: std::sync::mpsc::SyncSender<Vec<SearchRow>>) -> Self {
        Self {
            sender,
            rows: Vec::with_capacity(ROWS_PER_BATCH),
        }
    }

    fn push(&mut self, row: SearchRow) {
        self.rows.push(row);
        if self.rows.len() >= ROWS_PER_BATCH {
            self.send();
        }
    }

    fn send(&mut self) {
        let rows = std::mem::replace(&mut self.rows, Vec::with_capacity(ROWS_PER_BATCH));
        // A closed channel means the index side failed; it reports why.
        let _ = self.sender.send(rows);
    }
}

impl Drop for RowBatch {
    fn drop(&mut self) {
        if !self.rows.is_empty() {
            self.send();
        }
    }
}

/// Mirrors every package of `registry` (configured as `name`) into the catalog
/// and the search index.
/// A version whose archive changed since it was mirrored keeps the entry
/// mirrored first (see [`crate::packages::registry::keep_published`]), with a warning.
///
/// The registry's index may change while it is mirrored (another process
/// publishes), and a slower mirror of an older index may land after the
/// mirror of a newer one: each mirror checks, after its write, that the index
/// is still the one it read, and mirrors again when not. The last write is
/// then always of the index as it stands (twelve publishes at once left the
/// catalog with two to twelve versions, and search missed the others).
pub(crate) fn mirror_registry(ctx: &Context, catalog: &mut Catalog, name: &str, registry: &Registry) -> Result<()> {
    const ATTEMPTS: usize = 8;
    for _ in 0..ATTEMPTS {
        let stamp = registry.index_stamp();
        mirror_once(ctx, catalog, name, registry, stamp.as_deref())?;
        if registry.index_stamp() == stamp {
            return Ok(());
        }
    }
    tracing::warn!(
        "registry `{name}` kept changing while it was mirrored; the next command that reads it mirrors it again"
    );
    Ok(())
}

/// One mirror of `registry`'s index, recorded as read at `stamp`.
fn mirror_once(
    ctx: &Context,
    catalog: &mut Catalog,
    name: &str,
    registry: &Registry,
    stamp: Option<&str>,
) -> Result<()> {
    let mut records = registry.catalog_records()?;
    let changed = crate::packages::registry::keep_published(&mut records, &catalog.registry_entries(name)?);
    if !changed.is_empty() {
        tracing::warn!(
            "registry `{name}`: {} no longer match the checksums they were published with; \
             the catalog keeps the first ones, so installing them fails until the registry is restored",
            changed.join(", ")
        );
    }
    indexed_write(ctx, catalog, |catalog| {
        let generation = catalog.sync_registry(name, &records, stamp)?;
        Ok(((), IndexChange::RegistrySynced(name.to_string()), generation))
    })
}

/// The catalog, with every configured registry whose index changed since it
/// was mirrored mirrored again: versions published from another machine or
/// AAM_HOME, or whose mirror a concurrent publish raced, are then seen. A
/// registry that cannot be read now keeps its mirror (with a warning), and
/// what needs it fails on its own terms.
pub(crate) fn with_fresh_registries(ctx: &Context, settings: &Settings) -> Result<PooledCatalog> {
    let mut catalog = ctx.catalog()?;
    for setting in &settings.registries {
        let Ok(registry) = Registry::configured(setting) else {
            continue;
        };
        let stamp = registry.index_stamp();
        if stamp.is_none() || catalog.registry_stamp(&setting.name)? == stamp {
            continue;
        }
        if let Err(e) = mirror_registry(ctx, &mut catalog, &setting.name, &registry) {
            tracing::warn!(
                "registry `{}` changed but could not be read again: {}",
                setting.name,
                e.message()
            );
        }
    }
    Ok(catalog)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{ArtifactId, SourceId};
    use crate::config::AamHome;
    use crate::scan::ArtifactKind;
    use crate::search::{IndexState, SearchIndex};

    fn row(id: i64) -> SearchRow {
        SearchRow {
            id: ArtifactId(id),
            source_id: SourceId(1),
            source: "team".to_string(),
            kind: ArtifactKind::Skill,
            name: format!("skill-{id}"),
            platform: None,
            path: format!("skills/skill-{id}"),
            description: None,
            body: "Review the code.".to_string(),
            changed_seq: 1,
        }
    }

    /// A write that panics after handing over rows ends (the index side learns
    /// there is no verdict, instead of waiting for one forever) and publishes
    /// none of its rows.
    #[test]
    fn a_panicking_streamed_write_ends_and_publishes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let home = AamHome::at(dir.path().join("home"));
        let ctx = Context::new(home.clone(), dir.path().to_path_buf());
        let (done, ended) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut catalog = ctx.catalog().unwrap();
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                streamed_write(
                    &ctx,
                    &mut catalog,
                    &[],
                    |_, mut on_row| -> Result<((), IndexChange, u64)> {
                        for id in 1..=100 {
                            on_row(row(id));
                        }
                        panic!("a bug halfway through the write");
                    },
                )
            }));
            let _ = done.send(outcome.is_err());
        });
        let panicked = ended
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("the write ended; the index side waited for a verdict forever");
        assert!(panicked, "the panic reaches the caller");
        match SearchIndex::inspect(&home) {
            IndexState::Missing => {}
            IndexState::Readable { documents, .. } => assert_eq!(documents, 0, "no row was published"),
            other => panic!("{other:?}"),
        }
    }
}
