//! The tantivy full-text index: one document per live artifact, derived from the
//! catalog and never from git.
//!
//! The index lives in `$AAM_HOME/index-v6/` (bump the version when the schema, the
//! tokenizers or what a field is fed change; the new folder is built from the
//! catalog, and an older one is left alone for an older aam). Name words,
//! descriptions and bodies (the main file, its frontmatter without keys) are
//! indexed once, lowercase and as written: a query meets their other English forms
//! through stems worked out on the query side ([`stem`]), and "did you mean" draws
//! from the same words. Every commit records, as its payload, the catalog
//! generation it reflects. Writers hold tantivy's writer lock across their catalog
//! write and the index update, so a reader that finds the index behind the catalog
//! and cannot take the lock knows a writer is mid-way and searches what is there;
//! one that can take the lock rebuilds. Readers never block writers. A writer that
//! finds the index at the catalog's generation may add documents while its catalog
//! transaction runs (`source add` does, so tantivy indexes beside SQLite); it
//! commits the index only after the catalog committed and rolls the index back if
//! the catalog write fails.
//!
//! A writer killed mid-way (kill -9, power loss) leaves the index one generation
//! behind, which the next search or write repairs, and may leave tantivy's
//! `.tmp*` files behind; whoever next takes the writer lock deletes those that are
//! older than a few minutes, so a live writer's temporaries are never touched.

mod directory;
mod query;
mod resolve;
mod stem;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tantivy::directory::error::LockError;
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing, TextOptions,
};
use tantivy::tokenizer::{LowerCaser, NgramTokenizer, RemoveLongFilter, SimpleTokenizer, TextAnalyzer};
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, TantivyError, Term};

use crate::catalog::{ArtifactId, Catalog, PackageFilter, PackageSearchRow, RowFilter, SearchRow, SourceId};
use crate::config::AamHome;
use crate::error::{Error, ErrorCode, Result};
use crate::progress::Progress;

pub use query::{Hit, SearchRequest, SearchResults, SortOrder};
pub use resolve::{artifact_not_found, close_artifacts, resolve_artifact};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::scan::{ArtifactKind, Platform};

/// What a search result is: an artifact of some kind, or a registry package.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ResultKind {
    /// A skill.
    Skill,
    /// An agent.
    Agent,
    /// A prompt.
    Prompt,
    /// An instruction.
    Instruction,
    /// A package published to a registry.
    Package,
}

impl ResultKind {
    /// Lowercase singular name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Skill => "skill",
            Self::Agent => "agent",
            Self::Prompt => "prompt",
            Self::Instruction => "instruction",
            Self::Package => "package",
        }
    }

    /// Parses a singular or plural name (`rule` too, for instructions).
    pub fn parse(text: &str) -> Option<Self> {
        match text.to_ascii_lowercase().as_str() {
            "package" | "packages" => Some(Self::Package),
            other => ArtifactKind::parse_typed(other).map(Self::from),
        }
    }
}

impl From<ArtifactKind> for ResultKind {
    fn from(kind: ArtifactKind) -> Self {
        match kind {
            ArtifactKind::Skill => Self::Skill,
            ArtifactKind::Agent => Self::Agent,
            ArtifactKind::Prompt => Self::Prompt,
            ArtifactKind::Instruction => Self::Instruction,
        }
    }
}

/// Folder name of the current index layout.
pub const INDEX_DIR: &str = "index-v6";

/// Tokenizer of the searched text fields: words, lowercase, as written.
const WORDS: &str = "aam_words";

/// What the name n-gram field indexes of a lowercase name: the name and an end
/// marker, so that its last two letters make a 3-gram too. A name holds a
/// two-letter query exactly when a 3-gram of it begins with those letters, and
/// 2-grams need not be indexed.
fn ngram_text(name_lc: &str) -> String {
    format!("{name_lc}\0")
}

/// Longest query a search takes, in characters. The typo matching builds an
/// automaton per query word and one for the whole query, whose size grows with
/// their length: a name of 300,000 characters took 3.5 GB.
pub const MAX_QUERY_CHARS: usize = 1024;

/// Refuses a query longer than [`MAX_QUERY_CHARS`], before any work is done for it.
pub fn check_query(query: &str) -> crate::error::Result<()> {
    if query.chars().count() > MAX_QUERY_CHARS {
        return Err(crate::error::Error::invalid_argument(format!(
            "the query is longer than {MAX_QUERY_CHARS} characters"
        ))
        .with_hint("search for a shorter phrase"));
    }
    Ok(())
}

/// Longer tokens (hashes, base64) are not words anyone types; they are not indexed.
const MAX_WORD: usize = 40;

/// Memory budget of the tantivy indexing thread (allocated as documents arrive,
/// not up front; tantivy needs at least 15 MB per thread). More bought no time
/// indexing 125,000 artifacts and cost peak memory.
const WRITER_HEAP: usize = 24 * 1024 * 1024;

/// Tantivy indexes on one thread: a `source add` keeps two cores busy itself
/// (reading git, writing SQLite) and one indexing thread keeps up with them (a
/// second one on 2 cores bought no time and cost 24 MB at 100,000 artifacts).
/// One thread on every machine also keeps the segments, and so the scores,
/// the same everywhere.
const WRITER_THREADS: usize = 1;

/// How long a writer waits for another process's writer to finish.
const LOCK_WAIT: Duration = Duration::from_secs(60);

/// Age after which a `.tmp*` file in the index folder is a dead writer's leftover.
const STALE_TEMPORARY: Duration = Duration::from_secs(5 * 60);

/// The schema's fields.
#[derive(Clone, Copy)]
struct Fields {
    id: Field,
    source_id: Field,
    source: Field,
    kind: Field,
    platform: Field,
    path: Field,
    name: Field,
    name_lc: Field,
    name_ngram: Field,
    name_words: Field,
    description: Field,
    body: Field,
    changed_seq: Field,
    package_id: Field,
    registry: Field,
    artifact_types: Field,
}

impl Fields {
    /// The fields holding words: names, descriptions, bodies.
    fn words(self) -> [Field; 3] {
        [self.name_words, self.description, self.body]
    }
}

fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let tokenized = |tokenizer: &str, record: IndexRecordOption| {
        TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer(tokenizer)
                .set_index_option(record),
        )
    };
    let fields = Fields {
        id: b.add_u64_field("id", INDEXED | STORED | FAST),
        source_id: b.add_u64_field("source_id", INDEXED),
        source: b.add_text_field("source", STRING | STORED),
        kind: b.add_text_field("kind", STRING | STORED),
        platform: b.add_text_field("platform", STRING | STORED),
        path: b.add_text_field("path", STORED),
        name: b.add_text_field("name", STORED),
        name_lc: b.add_text_field("name_lc", STRING | FAST),
        name_ngram: b.add_text_field("name_ngram", tokenized("aam_ngram", IndexRecordOption::Basic)),
        name_words: b.add_text_field("name_words", tokenized(WORDS, IndexRecordOption::WithFreqs)),
        description: b.add_text_field(
            "description",
            tokenized(WORDS, IndexRecordOption::WithFreqs).set_stored(),
        ),
        body: b.add_text_field("body", tokenized(WORDS, IndexRecordOption::WithFreqs)),
        changed_seq: b.add_i64_field("changed_seq", FAST),
        package_id: b.add_u64_field("package_id", INDEXED | STORED),
        registry: b.add_text_field("registry", STRING),
        artifact_types: b.add_text_field("artifact_types", STORED),
    };
    (b.build(), fields)
}

/// The search index of one `AAM_HOME`.
pub struct SearchIndex {
    index: Index,
    fields: Fields,
    dir: PathBuf,
    reader: IndexReader,
}

impl SearchIndex {
    /// Opens the index, creating it when missing and recreating it (empty, so
    /// that it gets rebuilt) when it cannot be read.
    pub fn open(home: &AamHome) -> Result<Self> {
        let dir = home.root().join(INDEX_DIR);
        make_index_dir(&dir)?;
        let (schema, fields) = schema();
        let (index, reader) = match open_or_create(&dir, schema.clone()) {
            Ok(opened) => opened,
            Err(e) => {
                tracing::warn!(
                    "the search index is unreadable ({}); it will be rebuilt from the catalog",
                    brief(&e)
                );
                clear_dir(&dir)?;
                open_or_create(&dir, schema).map_err(|e| index_error(&dir, e))?
            }
        };
        register_tokenizers(&index)?;
        Ok(Self {
            index,
            fields,
            dir,
            reader,
        })
    }

    /// The catalog generation the last commit recorded, `None` for a new index.
    pub fn generation(&self) -> Option<u64> {
        self.index.load_metas().ok()?.payload?.parse().ok()
    }

    /// Takes the writer lock, waiting up to a minute for another process's writer.
    pub fn writer(&self) -> Result<IndexUpdater<'_>> {
        let started = Instant::now();
        loop {
            if let Some(updater) = self.try_writer()? {
                return Ok(updater);
            }
            if started.elapsed() > LOCK_WAIT {
                return Err(Error::new(
                    ErrorCode::Conflict,
                    "another aam process has held the search index for a minute",
                )
                .with_hint("wait for it to finish and try again"));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Takes the writer lock if no other process holds it.
    pub fn try_writer(&self) -> Result<Option<IndexUpdater<'_>>> {
        match self
            .index
            .writer_with_num_threads::<TantivyDocument>(WRITER_THREADS, WRITER_HEAP)
        {
            Ok(writer) => {
                remove_stale_temporaries(&self.dir);
                Ok(Some(IndexUpdater { index: self, writer }))
            }
            Err(TantivyError::LockFailure(LockError::LockBusy, _)) => Ok(None),
            Err(e) => Err(index_error(&self.dir, e)),
        }
    }

    /// Brings the index up to the catalog's generation: a no-op when current; a
    /// rebuild when stale and no other process is writing. Returns whether it rebuilt.
    pub fn ensure_current(&self, catalog: &Catalog, progress: &dyn Progress) -> Result<bool> {
        let generation = catalog.generation()?;
        if self.generation() == Some(generation) {
            return Ok(false);
        }
        // A new index is being built by someone else: wait for it. A stale one is
        // being brought along by a writer right now: search it as it is.
        let updater = if self.generation().is_none() {
            self.writer()?
        } else {
            match self.try_writer()? {
                Some(updater) => updater,
                None => {
                    tracing::debug!("search index behind the catalog while another process writes; searching it as is");
                    return Ok(false);
                }
            }
        };
        // Another process may have caught up while we waited for the lock.
        if self.generation() == Some(catalog.generation()?) {
            return Ok(false);
        }
        updater.rebuild(catalog, progress)?;
        Ok(true)
    }

    /// The reader made at opening, brought to the last commit (of any process) on each use.
    fn reader(&self) -> Result<&IndexReader> {
        self.reader.reload().map_err(|e| index_error(&self.dir, e))?;
        Ok(&self.reader)
    }
}

/// What a look at the index on disk found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IndexState {
    /// Never built (searches build it).
    Missing,
    /// Present but unreadable, with why.
    Unreadable(String),
    /// Readable.
    Readable {
        /// Catalog generation it reflects (`None` before the first commit).
        generation: Option<u64>,
        /// Documents it holds.
        documents: u64,
    },
}

impl SearchIndex {
    /// Looks at the index without opening it for use, so nothing is repaired or
    /// created: every segment is opened and its documents counted.
    pub fn inspect(home: &AamHome) -> IndexState {
        let dir = home.root().join(INDEX_DIR);
        if !dir.join("meta.json").exists() {
            return IndexState::Missing;
        }
        let probe = || -> tantivy::Result<IndexState> {
            let index = Index::open_in_dir(&dir)?;
            let generation = index.load_metas()?.payload.and_then(|p| p.parse().ok());
            let reader = manual_reader(&index)?;
            Ok(IndexState::Readable {
                generation,
                documents: reader.searcher().num_docs(),
            })
        };
        probe().unwrap_or_else(|e| IndexState::Unreadable(brief(&e)))
    }

    /// Deletes the index's files so that the next open starts empty.
    pub fn discard(home: &AamHome) -> Result<()> {
        let dir = home.root().join(INDEX_DIR);
        if dir.exists() { clear_dir(&dir) } else { Ok(()) }
    }
}

/// What a catalog write changed, for the index to follow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IndexChange {
    /// These artifacts were added or modified, those removed.
    Artifacts {
        /// Added or modified artifact ids.
        written: Vec<ArtifactId>,
        /// Removed artifact ids.
        removed: Vec<ArtifactId>,
    },
    /// A source (by id) was indexed for the first time: all of its artifacts are new.
    SourceAdded(SourceId),
    /// A whole source (by id) is gone.
    SourceRemoved(SourceId),
    /// A registry's packages were mirrored again.
    RegistrySynced(String),
    /// A registry is gone.
    RegistryRemoved(String),
}

/// Holds the index writer lock; applies one catalog write, or rebuilds.
pub struct IndexUpdater<'i> {
    index: &'i SearchIndex,
    writer: IndexWriter,
}

/// What a rebuild did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RebuildStats {
    /// Documents written.
    pub documents: u64,
    /// Catalog generation the index now reflects.
    pub generation: u64,
}

impl IndexUpdater<'_> {
    /// Applies `change`, made by a catalog write that moved the generation from
    /// `before` to `after`. When the index did not reflect `before` it is rebuilt
    /// instead, so it can never drift from the catalog.
    pub fn apply(self, catalog: &Catalog, change: &IndexChange, before: u64, after: u64) -> Result<()> {
        if self.index.generation() != Some(before) {
            tracing::debug!("search index was not at generation {before}; rebuilding");
            self.rebuild(catalog, &crate::progress::NoProgress)?;
            return Ok(());
        }
        let f = self.index.fields;
        match change {
            IndexChange::Artifacts { written, removed } => {
                for &id in written.iter().chain(removed) {
                    self.writer.delete_term(Term::from_field_u64(f.id, id.0 as u64));
                }
                let writer = &self.writer;
                catalog.for_each_search_row(RowFilter::Ids(written), |row| add_row(writer, f, row, &self.index.dir))?;
            }
            IndexChange::SourceAdded(source_id) => {
                self.writer
                    .delete_term(Term::from_field_u64(f.source_id, source_id.0 as u64));
                let writer = &self.writer;
                let dir = &self.index.dir;
                catalog.for_each_search_row(RowFilter::Source(*source_id), |row| add_row(writer, f, row, dir))?;
            }
            IndexChange::SourceRemoved(source_id) => {
                self.writer
                    .delete_term(Term::from_field_u64(f.source_id, source_id.0 as u64));
            }
            IndexChange::RegistrySynced(registry) => {
                self.writer.delete_term(Term::from_field_text(f.registry, registry));
                let writer = &self.writer;
                let dir = &self.index.dir;
                catalog.for_each_package_search_row(PackageFilter::Registry(registry), |row| {
                    add_package_row(writer, f, row, dir)
                })?;
            }
            IndexChange::RegistryRemoved(registry) => {
                self.writer.delete_term(Term::from_field_text(f.registry, registry));
            }
        }
        self.commit(after)
    }

    /// Whether the index is what a rebuild at catalog generation `generation` would
    /// make, so that a write from it can be followed document by document
    /// ([`Self::add`]): it recorded that generation, or it is new and empty and the
    /// catalog holds nothing to index (a first `source add`).
    pub fn follows(&self, catalog: &Catalog, generation: u64) -> Result<bool> {
        let recorded = self.index.generation();
        if recorded == Some(generation) {
            return Ok(true);
        }
        let segments = self
            .index
            .index
            .searchable_segment_metas()
            .map_err(|e| index_error(&self.index.dir, e))?;
        Ok(recorded.is_none()
            && segments.is_empty()
            && catalog.count_listed(&Default::default())? == 0
            && catalog.package_count()? == 0)
    }

    /// Adds the documents of artifacts a catalog write in progress has just
    /// written (the documents a rebuild makes from the same rows). Nothing is
    /// visible before [`Self::finish_when`] publishes them. Tantivy takes them one
    /// by one: its queue then holds at most 10,000 documents, where batches would
    /// let it hold 10,000 batches while its indexing thread lags.
    pub fn add(&self, rows: Vec<SearchRow>) -> Result<()> {
        rows.into_iter()
            .try_for_each(|row| add_row(&self.writer, self.index.fields, row, &self.index.dir))
    }

    /// Deletes the documents of `ids`, ahead of the documents a catalog write
    /// in progress adds for the new content of some of them (tantivy deletes
    /// only what was added before the delete).
    pub fn remove(&self, ids: &[ArtifactId]) {
        for id in ids {
            self.writer
                .delete_term(Term::from_field_u64(self.index.fields.id, id.0 as u64));
        }
    }

    /// Writes the documents added since the lock was taken into a segment (the
    /// slow half of a commit, which can run while the catalog commits), then asks
    /// `decide` whether the catalog write committed: `Some(generation)` publishes
    /// the segment as the index of that catalog generation, `None` drops it and
    /// the index stays at the generation it was.
    pub fn finish_when(mut self, decide: impl FnOnce() -> Option<u64>) -> Result<()> {
        let dir = &self.index.dir;
        let mut prepared = self.writer.prepare_commit().map_err(|e| index_error(dir, e))?;
        let Some(generation) = decide() else {
            prepared.abort().map_err(|e| index_error(dir, e))?;
            return Ok(());
        };
        prepared.set_payload(&generation.to_string());
        prepared.commit().map_err(|e| index_error(dir, e))?;
        self.writer.wait_merging_threads().map_err(|e| index_error(dir, e))?;
        Ok(())
    }

    /// Drops the documents added since the lock was taken, for a catalog write
    /// that failed; the index stays at the generation it was.
    pub fn rollback(mut self) -> Result<()> {
        self.writer.rollback().map_err(|e| index_error(&self.index.dir, e))?;
        Ok(())
    }

    /// Replaces every document with the catalog's live artifacts.
    pub fn rebuild(self, catalog: &Catalog, progress: &dyn Progress) -> Result<RebuildStats> {
        self.rebuild_unless_cancelled(catalog, progress, &crate::cancel::Cancel::new())
    }

    /// [`Self::rebuild`], stopping with `AAM_CANCELLED` (every 1024 documents)
    /// once `cancel` is raised; nothing is committed then, so the index stays as it was.
    pub fn rebuild_unless_cancelled(
        self,
        catalog: &Catalog,
        progress: &dyn Progress,
        cancel: &crate::cancel::Cancel,
    ) -> Result<RebuildStats> {
        let dir = self.index.dir.clone();
        let generation = catalog.generation()?;
        self.writer.delete_all_documents().map_err(|e| index_error(&dir, e))?;
        let total = catalog.count_listed(&Default::default())? + catalog.package_count()?;
        progress.start("indexing", Some(total));
        let mut documents = 0u64;
        let f = self.index.fields;
        let writer = &self.writer;
        catalog.for_each_search_row(RowFilter::All, |row| {
            add_row(writer, f, row, &dir)?;
            documents += 1;
            if documents.is_multiple_of(1024) {
                progress.advance(1024);
                cancel.check()?;
            }
            Ok(())
        })?;
        catalog.for_each_package_search_row(PackageFilter::All, |row| {
            add_package_row(writer, f, row, &dir)?;
            documents += 1;
            Ok(())
        })?;
        cancel.check()?;
        self.commit(generation)?;
        progress.finish();
        Ok(RebuildStats { documents, generation })
    }

    fn commit(self, generation: u64) -> Result<()> {
        self.finish_when(|| Some(generation))
    }
}

fn add_row(writer: &IndexWriter, f: Fields, row: SearchRow, dir: &Path) -> Result<()> {
    let name_lc = row.name.to_lowercase();
    let mut doc = TantivyDocument::default();
    doc.add_u64(f.id, row.id.0 as u64);
    doc.add_u64(f.source_id, row.source_id.0 as u64);
    doc.add_text(f.source, &row.source);
    doc.add_text(f.kind, row.kind.as_str());
    doc.add_text(f.platform, row.platform.map_or("", Platform::as_str));
    doc.add_text(f.path, &row.path);
    doc.add_text(f.name, &row.name);
    doc.add_text(f.name_ngram, ngram_text(&name_lc));
    doc.add_text(f.name_lc, name_lc);
    doc.add_text(f.name_words, &row.name);
    if let Some(description) = &row.description {
        doc.add_text(f.description, description);
    }
    // A frontmatter's keys (`tools:`, `applyTo:`, `mode:`) would make every
    // artifact of a kind match them; its values are what it says.
    doc.add_text(f.body, crate::scan::frontmatter::without_keys(&row.body));
    doc.add_i64(f.changed_seq, row.changed_seq);
    writer.add_document(doc).map_err(|e| index_error(dir, e))?;
    Ok(())
}

fn add_package_row(writer: &IndexWriter, f: Fields, row: PackageSearchRow, dir: &Path) -> Result<()> {
    let name_lc = row.name.to_lowercase();
    let mut doc = TantivyDocument::default();
    doc.add_u64(f.package_id, row.id as u64);
    doc.add_text(f.registry, &row.registry);
    doc.add_text(f.source, &row.registry);
    doc.add_text(f.kind, ResultKind::Package.as_str());
    doc.add_text(f.platform, "");
    doc.add_text(f.path, format!("{}@{}", row.name, row.version));
    doc.add_text(f.name, &row.name);
    doc.add_text(f.name_ngram, ngram_text(&name_lc));
    doc.add_text(f.name_lc, name_lc);
    doc.add_text(f.name_words, &row.name);
    if let Some(description) = &row.description {
        doc.add_text(f.description, description);
    }
    doc.add_text(f.body, &row.summary);
    let types: Vec<&str> = row.artifact_types.iter().map(|k| k.as_str()).collect();
    doc.add_text(f.artifact_types, types.join(","));
    doc.add_i64(f.changed_seq, row.id);
    writer.add_document(doc).map_err(|e| index_error(dir, e))?;
    Ok(())
}

/// Opens the index in `dir` (creating an empty one there) with a reader: making the
/// reader opens every file of every segment, so a damaged or missing one shows here.
fn open_or_create(dir: &Path, schema: Schema) -> tantivy::Result<(Index, IndexReader)> {
    let directory = directory::IndexDirectory::open(dir)?;
    let index = Index::open_or_create(directory, schema)?;
    let reader = manual_reader(&index)?;
    Ok((index, reader))
}

/// A reader that moves to a newer commit only when told to.
fn manual_reader(index: &Index) -> tantivy::Result<IndexReader> {
    index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into()
}

/// Makes the index folder. The index is aam's and derived from the catalog, so
/// whatever else holds the folder's name (a file, a link to a file or to nothing)
/// is deleted first; a link is deleted, never what it points to. A link to a folder
/// is kept: it is how a user puts the index on another disk.
fn make_index_dir(dir: &Path) -> Result<()> {
    match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => return Ok(()),
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(Error::io("read", dir, e)),
        _ => {}
    }
    if std::fs::symlink_metadata(dir).is_ok() {
        tracing::warn!(
            "`{}` was not a folder; it is replaced by the search index",
            dir.display()
        );
        std::fs::remove_file(dir).map_err(|e| Error::io("delete", dir, e))?;
    }
    std::fs::create_dir_all(dir).map_err(|e| Error::io("create", dir, e))
}

/// Why tantivy failed, cut short: its errors can quote a whole damaged file.
fn brief(e: &TantivyError) -> String {
    const MAX_CHARS: usize = 300;
    let text = e.to_string();
    match text.char_indices().nth(MAX_CHARS) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text,
    }
}

fn register_tokenizers(index: &Index) -> Result<()> {
    let build = |tokenizer: tantivy::Result<NgramTokenizer>| -> Result<TextAnalyzer> {
        let tokenizer = tokenizer.map_err(|e| Error::internal(format!("invalid tokenizer: {e}")))?;
        Ok(TextAnalyzer::builder(tokenizer).filter(LowerCaser).build())
    };
    index
        .tokenizers()
        .register("aam_ngram", build(NgramTokenizer::all_ngrams(3, 3))?);
    index.tokenizers().register(
        WORDS,
        TextAnalyzer::builder(SimpleTokenizer::default())
            .filter(RemoveLongFilter::limit(MAX_WORD))
            .filter(LowerCaser)
            .build(),
    );
    Ok(())
}

/// Deletes the `.tmp*` files tantivy writes and renames into place (`meta.json`,
/// `.managed.json`) that a killed writer left behind. Called with the writer lock
/// held, and only files older than [`STALE_TEMPORARY`] go, so no live write loses
/// its file. Best effort: what cannot be deleted now is tried again next time.
fn remove_stale_temporaries(dir: &Path) {
    crate::paths::remove_untouched(dir, STALE_TEMPORARY, |name| name.starts_with(".tmp"));
}

/// Empties a folder without removing it.
fn clear_dir(dir: &Path) -> Result<()> {
    for entry in std::fs::read_dir(dir).map_err(|e| Error::io("read", dir, e))? {
        let path = entry.map_err(|e| Error::io("read", dir, e))?.path();
        let removed = if path.is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        removed.map_err(|e| Error::io("delete", &path, e))?;
    }
    Ok(())
}

fn index_error(dir: &Path, e: impl std::error::Error + Send + Sync + 'static) -> Error {
    Error::new(
        ErrorCode::IndexError,
        format!("the search index `{}` failed", dir.display()),
    )
    .with_hint("run `aam catalog reindex` to rebuild it from the catalog")
    .with_source(e)
}
