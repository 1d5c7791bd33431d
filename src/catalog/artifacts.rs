//! Artifact rows: writing an index or an update in one transaction, and the
//! queries that answer `source scan` and drive incremental updates.

use rusqlite::{OptionalExtension, Statement, Transaction, params};

use super::browse::{SEARCH_BODY_CHARS, SearchRow};
use super::packages::{adjust_packaged, is_packaged, link_orphaned_members};
use super::skills::{frontmatter_of, full_tally, has_skills_under, problem_now, store_tally, stored_tally};
use super::sources::{NewSource, insert_source};
use super::versions::{delete_version_files, digests_text};
use super::{ArtifactId, SourceId};
use super::{Catalog, EVERY_KIND, Writeback, bump_generation, db_error, now_timestamp, refresh_statistics_in};
use crate::audit::{Finding, Severity, rule_id};
use crate::error::{Error, ErrorCode, Result};
use crate::scan::{ArtifactKind, Platform};
use crate::skills::{RecordedFrontmatter, Tally, TallyBuilder};
use crate::sources::git::FileMode;

/// One file of an artifact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRecord {
    /// Repository path.
    pub path: String,
    /// How it is stored in the tree.
    pub mode: FileMode,
    /// Git blob id (hex).
    pub git_blob: String,
    /// blake3 of the blob's bytes (hex).
    pub blake3: String,
    /// sha256 of the blob's bytes (hex), for Skills over MCP; `None` for rows
    /// indexed before it was recorded.
    pub sha256: Option<String>,
    /// Size in bytes.
    pub size: u64,
    /// What the content audit found in it (empty when read back for packaging).
    pub findings: Vec<Finding>,
}

/// The files of one artifact as the catalog records them.
#[derive(Debug, Clone)]
pub struct ArtifactFiles {
    /// Every file, by path.
    pub files: Vec<FileRecord>,
    /// Repository path of the main file (`SKILL.md`, the agent's file...).
    pub main_file: String,
    /// Where the main file's content lives: the main file itself, or the
    /// target of a main file that is a symlink.
    pub content_path: String,
}

/// A blob an artifact already had, so an update need not read or scan it again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownBlob {
    /// blake3 of its bytes (hex).
    pub blake3: String,
    /// sha256 of its bytes (hex), `None` when indexed before it was recorded.
    pub sha256: Option<String>,
    /// Size in bytes.
    pub size: u64,
    /// The path it had (its findings hold for that path).
    pub path: String,
    /// Its findings there.
    pub findings: Vec<Finding>,
}

/// An artifact as read from a commit, ready to be written.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexedArtifact {
    /// Kind.
    pub kind: ArtifactKind,
    /// Repository path: the folder of a skill, the file otherwise.
    pub path: String,
    /// Display name.
    pub name: String,
    /// One-line description.
    pub description: Option<String>,
    /// Platform its location implies.
    pub platform: Option<Platform>,
    /// Repository path of the main file.
    pub main_file: String,
    /// Repository path its bytes were read from (a symlink's target).
    pub content_path: String,
    /// Every path a symlinked main file passes through (targets, missing ones too).
    pub link_paths: Vec<String>,
    /// Frontmatter as a JSON object.
    pub frontmatter_json: Option<String>,
    /// A skill with vendor agent metadata.
    pub has_vendor_agent: bool,
    /// Problems met while reading it.
    pub warnings: Vec<String>,
    /// blake3 over its (path, mode, blob id) list; changes when any file changes.
    pub content_digest: String,
    /// Size of the main file's content in bytes.
    pub main_size: u64,
    /// sha256 of the main file's content (hex), `None` when it has none.
    pub main_sha256: Option<String>,
    /// Main file text, capped.
    pub text: String,
    /// Whether `text` was cut.
    pub truncated: bool,
    /// Every file that makes up the artifact.
    pub files: Vec<FileRecord>,
}

impl IndexedArtifact {
    /// Its frontmatter as the catalog records it.
    pub fn frontmatter(&self) -> RecordedFrontmatter<'_> {
        RecordedFrontmatter::of(self.frontmatter_json.as_deref(), &self.warnings)
    }
}

/// A commit being recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitInfo {
    /// Commit id (hex).
    pub sha: String,
    /// Tree id of the scanned folder (hex).
    pub tree_sha: String,
    /// Commit time, RFC 3339.
    pub committed_at: Option<String>,
}

/// A live artifact, as much as an update needs to compare it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveArtifact {
    /// Row id.
    pub id: ArtifactId,
    /// Kind.
    pub kind: ArtifactKind,
    /// Repository path.
    pub path: String,
    /// Display name.
    pub name: String,
    /// Digest to compare against a fresh read.
    pub content_digest: String,
}

/// What an update changes.
#[derive(Debug, Default)]
pub struct SourceChanges {
    /// New artifacts (or ones back at a path they had left).
    pub added: Vec<IndexedArtifact>,
    /// Changed artifacts with their row ids.
    pub modified: Vec<(ArtifactId, IndexedArtifact)>,
    /// Artifacts that are gone.
    pub removed: Vec<LiveArtifact>,
}

/// One row of `source scan`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArtifactSummary {
    /// Kind.
    pub kind: ArtifactKind,
    /// Display name.
    pub name: String,
    /// Repository path.
    pub path: String,
    /// One-line description.
    pub description: Option<String>,
    /// A skill with vendor agent metadata.
    pub has_vendor_agent: bool,
}

impl Catalog {
    /// Registers a source together with its first index, atomically. Artifacts
    /// stream in from `artifacts` (an error from it aborts the whole write), so
    /// memory stays flat however large the source is. `on_row` gets each written
    /// artifact's search row as it is written, inside the transaction: the row
    /// [`Catalog::for_each_search_row`] reads once the write commits, so the search
    /// index can follow the write instead of reading it back afterwards. `on_row`
    /// is dropped once the last row is handed over, before the commit.
    pub fn add_indexed_source(
        &mut self,
        source: &NewSource<'_>,
        resolved_ref: Option<&str>,
        commit: &CommitInfo,
        artifacts: impl Iterator<Item = Result<IndexedArtifact>>,
        on_row: impl FnMut(SearchRow),
    ) -> Result<(SourceId, WriteOutcome)> {
        // Every row this write makes refers to rows the same transaction makes (the
        // new source, its commit, each new artifact) and holds typed values.
        self.appending(|catalog| {
            catalog.unchecked(|catalog| catalog.write_new_source(source, resolved_ref, commit, artifacts, on_row))
        })
    }

    fn write_new_source(
        &mut self,
        source: &NewSource<'_>,
        resolved_ref: Option<&str>,
        commit: &CommitInfo,
        artifacts: impl Iterator<Item = Result<IndexedArtifact>>,
        mut on_row: impl FnMut(SearchRow),
    ) -> Result<(SourceId, WriteOutcome)> {
        let tx = self.write()?;
        let source_id = insert_source(&tx, source)?;
        let mut writer = ChangeWriter::new(&tx, source_id, commit, true)?;
        let mut tally = TallyBuilder::new(source.scope_path);
        let mut writeback = Writeback::of(&tx);
        for (written, artifact) in artifacts.enumerate() {
            let artifact = artifact?;
            if artifact.kind == ArtifactKind::Skill {
                tally.add(&artifact.path, artifact.frontmatter());
            }
            let id = writer.write(&artifact, Change::Added)?;
            on_row(search_row(id, source_id, source.name, writer.commit_id, &artifact));
            if written % WRITEBACK_EVERY == WRITEBACK_EVERY - 1 {
                writeback.start();
            }
        }
        // Every row is handed over: whoever receives them may finish meanwhile.
        drop(on_row);
        writeback.flush(&tx);
        let mut outcome = writer.finish(resolved_ref)?;
        link_orphaned_members(&tx, source_id)?;
        store_tally(&tx, source_id, &tally.finish())?;
        outcome.generation = bump_generation(&tx)?;
        refresh_statistics_in(&tx)?;
        tx.commit().map_err(db_error)?;
        Ok((source_id, outcome))
    }

    /// Records a fetch that moved the source from `expected_head` to `commit` with
    /// `changes`. Fails with `AAM_CONFLICT`, writing nothing, when another process
    /// moved the source first: the changes were computed against a stale state;
    /// with `AAM_SOURCE_NOT_FOUND` when another process removed it meanwhile.
    /// Each new or modified artifact's search row goes to `on_row` as it is
    /// written (see [`Catalog::add_indexed_source`]); `on_row` is dropped once
    /// the last one is handed over, before the commit.
    pub fn record_update(
        &mut self,
        source_id: SourceId,
        expected_head: Option<&str>,
        resolved_ref: Option<&str>,
        commit: &CommitInfo,
        changes: &SourceChanges,
        on_row: impl FnMut(SearchRow),
    ) -> Result<WriteOutcome> {
        // Every row this write makes refers to the source (checked first, under
        // the write lock), the commit it makes, or an artifact row it writes
        // (a modified row that is not there fails the write), and holds typed values.
        self.unchecked(|catalog| catalog.write_update(source_id, expected_head, resolved_ref, commit, changes, on_row))
    }

    fn write_update(
        &mut self,
        source_id: SourceId,
        expected_head: Option<&str>,
        resolved_ref: Option<&str>,
        commit: &CommitInfo,
        changes: &SourceChanges,
        mut on_row: impl FnMut(SearchRow),
    ) -> Result<WriteOutcome> {
        let tx = self.write()?;
        let (name, head, scope): (String, Option<String>, String) = tx
            .query_row(
                "SELECT s.name, c.sha, s.scope_path FROM sources s LEFT JOIN commits c ON c.id = s.head_commit_id
                 WHERE s.id = ?1",
                [source_id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()
            .map_err(db_error)?
            .ok_or_else(|| {
                Error::new(
                    ErrorCode::SourceNotFound,
                    "the source was removed by another aam process while it was being updated",
                )
                .with_hint("run `aam source list` to see the sources there are now")
            })?;
        if head.as_deref() != expected_head {
            return Err(Error::new(
                ErrorCode::Conflict,
                format!("source `{name}` was updated by another aam process meanwhile"),
            )
            .with_hint("run the command again"));
        }
        let untallied = untally_changes(&tx, source_id, &scope, changes)?;
        let mut writer = ChangeWriter::new(&tx, source_id, commit, false)?;
        for artifact in &changes.added {
            let id = writer.write(artifact, Change::Added)?;
            on_row(search_row(id, source_id, &name, writer.commit_id, artifact));
        }
        // In id order, the rows of every table keyed by artifact come in the
        // order they lie (path order took 13.6 s instead of 10.8 s at 100,000).
        let mut modified: Vec<&(ArtifactId, IndexedArtifact)> = changes.modified.iter().collect();
        modified.sort_by_key(|(id, _)| *id);
        for (id, artifact) in modified {
            writer.write(artifact, Change::Modified(*id))?;
            on_row(search_row(*id, source_id, &name, writer.commit_id, artifact));
        }
        // Every row is handed over: whoever receives them may finish meanwhile.
        drop(on_row);
        for artifact in &changes.removed {
            writer.remove(artifact)?;
        }
        let mut outcome = writer.finish(resolved_ref)?;
        retally_changes(&tx, source_id, &scope, changes, untallied)?;
        outcome.generation = bump_generation(&tx)?;
        refresh_statistics_in(&tx)?;
        tx.commit().map_err(db_error)?;
        Ok(outcome)
    }

    /// Makes the source track `git_ref` (a branch, tag or commit) from now on.
    pub fn set_tracked_ref(&mut self, source_id: SourceId, git_ref: &str) -> Result<()> {
        self.conn
            .execute(
                "UPDATE sources SET ref_name = ?2 WHERE id = ?1",
                params![source_id, git_ref],
            )
            .map_err(db_error)?;
        Ok(())
    }

    /// Records a fetch that found nothing new.
    pub fn touch_fetched(&mut self, source_id: SourceId, resolved_ref: Option<&str>) -> Result<()> {
        self.conn
            .execute(
                "UPDATE sources SET fetched_at = ?2, resolved_ref = COALESCE(?3, resolved_ref) WHERE id = ?1",
                params![source_id, now_timestamp(), resolved_ref],
            )
            .map_err(db_error)?;
        Ok(())
    }

    /// Live artifacts of a source at or below any of `roots` (repository paths;
    /// `""` means every artifact), and those whose symlinked main file passes
    /// through any of `content_paths`.
    pub fn live_artifacts_in(
        &self,
        source_id: SourceId,
        roots: &[String],
        content_paths: &[String],
    ) -> Result<Vec<LiveArtifact>> {
        let mut found = Vec::new();
        let live: i64 = self
            .conn
            .prepare_cached(
                "SELECT skill_count + agent_count + prompt_count + instruction_count FROM sources WHERE id = ?1",
            )
            .map_err(db_error)?
            .query_row([source_id], |r| r.get(0))
            .optional()
            .map_err(db_error)?
            .unwrap_or(0);
        // Roots by the dozen per live artifact (an update that changes a wide
        // folder): one pass over the source's artifacts costs less than a range
        // query per root (0.25 s of a 10,000-skill update).
        if roots.len() as i64 * ROOTS_PER_PASS > live {
            let wanted: std::collections::HashSet<&str> = roots.iter().map(String::as_str).collect();
            let under_a_root = |path: &str| {
                wanted.contains("")
                    || std::iter::successors(Some(path), |p| p.rsplit_once('/').map(|(parent, _)| parent))
                        .any(|p| wanted.contains(p))
            };
            let mut all = self
                .conn
                .prepare_cached(&format!(
                    "SELECT id, kind, path, name, content_digest FROM artifacts
                     WHERE source_id = ?1 AND kind IN {EVERY_KIND} AND removed_commit_id IS NULL"
                ))
                .map_err(db_error)?;
            for row in all.query_map([source_id], live_from_row).map_err(db_error)? {
                let artifact = row.map_err(db_error)?;
                if under_a_root(&artifact.path) {
                    found.push(artifact);
                }
            }
        } else {
            let mut under = self
                .conn
                .prepare_cached(&format!(
                    "SELECT id, kind, path, name, content_digest FROM artifacts
                     WHERE source_id = ?1 AND kind IN {EVERY_KIND} AND path >= ?2 AND path < ?3 AND removed_commit_id IS NULL"
                ))
                .map_err(db_error)?;
            for root in roots {
                // `root0` bounds every `root/...` path ('0' follows '/'); the filter drops `root-x` and the like.
                let upper = if root.is_empty() {
                    "\u{10FFFF}".to_string()
                } else {
                    format!("{root}0")
                };
                let rows = under
                    .query_map(params![source_id, root, upper], live_from_row)
                    .map_err(db_error)?;
                for row in rows {
                    let artifact = row.map_err(db_error)?;
                    let inside = root.is_empty()
                        || artifact.path == *root
                        || artifact
                            .path
                            .strip_prefix(root.as_str())
                            .is_some_and(|rest| rest.starts_with('/'));
                    if inside {
                        found.push(artifact);
                    }
                }
            }
        }
        let mut by_content = self
            .conn
            .prepare_cached(
                "SELECT a.id, a.kind, a.path, a.name, a.content_digest FROM artifact_links l
                 JOIN artifacts a ON a.id = l.artifact_id
                 WHERE l.path = ?2 AND a.source_id = ?1 AND a.removed_commit_id IS NULL",
            )
            .map_err(db_error)?;
        for path in content_paths {
            let rows = by_content
                .query_map(params![source_id, path], live_from_row)
                .map_err(db_error)?;
            for row in rows {
                found.push(row.map_err(db_error)?);
            }
        }
        found.sort_by_key(|a| a.id);
        found.dedup_by_key(|a| a.id);
        Ok(found)
    }

    /// Every file recorded for an artifact, by path, and where its main file's
    /// content lives.
    pub fn artifact_files(&self, artifact_id: ArtifactId) -> Result<ArtifactFiles> {
        let (main_file, content_path): (String, String) = self
            .conn
            .query_row(
                "SELECT main_file, content_path FROM artifacts WHERE id = ?1",
                [artifact_id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(db_error)?;
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT path, mode, git_blob, blake3, size, sha256 FROM artifact_files WHERE artifact_id = ?1
                 ORDER BY path",
            )
            .map_err(db_error)?;
        let rows = stmt
            .query_map([artifact_id], |r| {
                Ok(FileRecord {
                    path: r.get(0)?,
                    mode: FileMode::parse(&r.get::<_, String>(1)?),
                    git_blob: r.get(2)?,
                    blake3: r.get(3)?,
                    size: r.get::<_, i64>(4)? as u64,
                    sha256: r.get(5)?,
                    findings: Vec::new(),
                })
            })
            .map_err(db_error)?;
        let files = rows.collect::<rusqlite::Result<_>>().map_err(db_error)?;
        Ok(ArtifactFiles {
            files,
            main_file,
            content_path,
        })
    }

    /// The blobs recorded for an artifact, by blob id, with their path and findings.
    pub fn known_blobs(&self, artifact_id: ArtifactId) -> Result<std::collections::HashMap<String, KnownBlob>> {
        let mut findings: std::collections::HashMap<String, Vec<Finding>> = Default::default();
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT path, rule, severity, line, excerpt FROM artifact_findings WHERE artifact_id = ?1
                 ORDER BY rowid",
            )
            .map_err(db_error)?;
        let rows = stmt
            .query_map([artifact_id], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, Option<i64>>(3)?,
                    r.get::<_, String>(4)?,
                ))
            })
            .map_err(db_error)?;
        for row in rows {
            let (path, rule, severity, line, excerpt) = row.map_err(db_error)?;
            // Findings of rules this version no longer has are dropped.
            if let (Some(rule), Some(severity)) = (rule_id(&rule), Severity::parse(&severity)) {
                findings.entry(path).or_default().push(Finding {
                    rule,
                    severity,
                    line: line.map(|l| l as u32),
                    excerpt,
                });
            }
        }
        let mut stmt = self
            .conn
            .prepare_cached("SELECT git_blob, blake3, size, path, sha256 FROM artifact_files WHERE artifact_id = ?1")
            .map_err(db_error)?;
        let rows = stmt
            .query_map([artifact_id], |r| {
                let path: String = r.get(3)?;
                Ok((
                    r.get(0)?,
                    KnownBlob {
                        blake3: r.get(1)?,
                        size: r.get::<_, i64>(2)? as u64,
                        sha256: r.get(4)?,
                        findings: findings.get(&path).cloned().unwrap_or_default(),
                        path,
                    },
                ))
            })
            .map_err(db_error)?;
        rows.collect::<rusqlite::Result<_>>().map_err(db_error)
    }

    /// Live artifacts of a source, by kind then path, optionally of one kind.
    pub fn scan_source(&self, source_id: SourceId, kind: Option<ArtifactKind>) -> Result<Vec<ArtifactSummary>> {
        // One query per kind walks the (source, kind, path) index in order: no sort.
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT name, path, description, has_vendor_agent FROM artifacts
                 WHERE source_id = ?1 AND kind = ?2 AND removed_commit_id IS NULL ORDER BY path",
            )
            .map_err(db_error)?;
        let mut out = Vec::new();
        for k in ArtifactKind::ALL
            .into_iter()
            .filter(|k| kind.is_none_or(|wanted| wanted == *k))
        {
            let rows = stmt
                .query_map(params![source_id, k.as_str()], |r| {
                    Ok(ArtifactSummary {
                        kind: k,
                        name: r.get(0)?,
                        path: r.get(1)?,
                        description: r.get(2)?,
                        has_vendor_agent: r.get(3)?,
                    })
                })
                .map_err(db_error)?;
            for row in rows {
                out.push(row.map_err(db_error)?);
            }
        }
        Ok(out)
    }
}

/// With fewer live artifacts per root than this, [`Catalog::live_artifacts_in`]
/// reads all of the source's artifacts in one pass; with more, each root's range.
const ROOTS_PER_PASS: i64 = 16;

fn live_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<LiveArtifact> {
    Ok(LiveArtifact {
        id: r.get(0)?,
        kind: kind_from_sql(&r.get::<_, String>(1)?),
        path: r.get(2)?,
        name: r.get(3)?,
        content_digest: r.get(4)?,
    })
}

/// The schema's CHECK constraint guarantees one of the four kinds.
/// The search row of an artifact just written as `id`, the same row
/// [`Catalog::for_each_search_row`] reads back: the body is the text's first
/// [`SEARCH_BODY_CHARS`] characters, as SQLite's `substr` counts them.
fn search_row(
    id: ArtifactId,
    source_id: SourceId,
    source: &str,
    commit_id: i64,
    artifact: &IndexedArtifact,
) -> SearchRow {
    let text = &artifact.text;
    // No more bytes than the cap means no more characters either: nothing to count.
    let end = match text.len() > SEARCH_BODY_CHARS as usize {
        true => text
            .char_indices()
            .nth(SEARCH_BODY_CHARS as usize)
            .map_or(text.len(), |(end, _)| end),
        false => text.len(),
    };
    SearchRow {
        id,
        source_id,
        source: source.to_string(),
        kind: artifact.kind,
        name: artifact.name.clone(),
        platform: artifact.platform,
        path: artifact.path.clone(),
        description: artifact.description.clone(),
        body: text[..end].to_string(),
        changed_seq: commit_id,
    }
}

pub(super) fn kind_from_sql(text: &str) -> ArtifactKind {
    ArtifactKind::parse(text).unwrap_or(ArtifactKind::Instruction)
}

/// What a write did, for keeping derived data (the search index) in step.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct WriteOutcome {
    /// The catalog generation after the write.
    pub generation: u64,
    /// Ids of artifacts added or modified.
    pub written: Vec<ArtifactId>,
    /// Ids of artifacts removed.
    pub removed: Vec<ArtifactId>,
    /// Artifacts added, by kind (in [`ArtifactKind::ALL`] order).
    pub added_by_kind: [u64; 4],
}

fn kind_index(kind: ArtifactKind) -> usize {
    ArtifactKind::ALL.iter().position(|k| *k == kind).unwrap_or(0)
}

/// Writes one commit's artifact changes inside an open transaction.
/// Where a source's skill tally stands while an update is written.
enum Untallied {
    /// The update changes no skill: the tally stays.
    Untouched,
    /// The stored tally without the skills the update changes or removes.
    Without(Tally),
    /// No tally stored, or a skill folder comes or goes around other skills
    /// (which nests or frees them): count the source again.
    Recount,
}

/// Takes the skills `changes` modifies or removes out of the source's tally,
/// judged against the catalog before the update.
fn untally_changes(
    tx: &Transaction<'_>,
    source_id: SourceId,
    scope: &str,
    changes: &SourceChanges,
) -> Result<Untallied> {
    let skill = |kind: ArtifactKind| kind == ArtifactKind::Skill;
    let modified: Vec<_> = changes.modified.iter().filter(|(_, a)| skill(a.kind)).collect();
    let removed: Vec<_> = changes.removed.iter().filter(|a| skill(a.kind)).collect();
    let added: Vec<_> = changes.added.iter().filter(|a| skill(a.kind)).collect();
    if modified.is_empty() && removed.is_empty() && added.is_empty() {
        return Ok(Untallied::Untouched);
    }
    let Some(mut tally) = stored_tally(tx, source_id)? else {
        return Ok(Untallied::Recount);
    };
    for path in removed.iter().map(|a| &a.path).chain(added.iter().map(|a| &a.path)) {
        if has_skills_under(tx, source_id, path)? {
            return Ok(Untallied::Recount);
        }
    }
    let old = modified
        .iter()
        .map(|(id, a)| (*id, &a.path))
        .chain(removed.iter().map(|a| (a.id, &a.path)));
    for (id, path) in old {
        let (frontmatter, warnings) = frontmatter_of(tx, id)?;
        let frontmatter = RecordedFrontmatter::of_row(frontmatter.as_deref(), warnings.as_deref());
        tally.add(problem_now(tx, source_id, scope, path, frontmatter)?, -1);
    }
    Ok(Untallied::Without(tally))
}

/// Puts the skills `changes` adds or modifies back into the tally, judged
/// against the catalog after the update, and stores it.
fn retally_changes(
    tx: &Transaction<'_>,
    source_id: SourceId,
    scope: &str,
    changes: &SourceChanges,
    untallied: Untallied,
) -> Result<()> {
    let tally = match untallied {
        Untallied::Untouched => return Ok(()),
        Untallied::Recount => full_tally(tx, source_id, scope)?,
        Untallied::Without(mut tally) => {
            let new = changes.added.iter().chain(changes.modified.iter().map(|(_, a)| a));
            for artifact in new.filter(|a| a.kind == ArtifactKind::Skill) {
                let problem = problem_now(tx, source_id, scope, &artifact.path, artifact.frontmatter())?;
                tally.add(problem, 1);
            }
            tally
        }
    };
    store_tally(tx, source_id, &tally)
}

/// Artifacts a new source's write takes between two [`Writeback::start`]s:
/// about 4 MB of catalog pages.
const WRITEBACK_EVERY: usize = 2048;

/// The columns and values of a new artifact row.
const ARTIFACT_INSERT: &str = "(source_id, kind, path, name, description, platform, main_file, content_path,
         frontmatter_json, has_vendor_agent, warnings_json, content_digest, main_size,
         first_commit_id, last_changed_commit_id, main_sha256)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?14, ?15)";

/// A (digest, version) row of the digest lookup. `OR IGNORE`: a row some damage
/// left under a version id now taken again must not fail the write (a lookup
/// believes it only when the version keeps that digest).
const INSERT_VERSION_FILE: &str = "INSERT OR IGNORE INTO artifact_version_files (blake3, version_id) VALUES (?1, ?2)";

/// What [`ChangeWriter::write`] records of an artifact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    /// New at its path, or back at a path it had left.
    Added,
    /// A new content of the live artifact with this row.
    Modified(ArtifactId),
}

impl Change {
    /// The `change` of its `artifact_events` row.
    fn as_str(self) -> &'static str {
        match self {
            Change::Added => "added",
            Change::Modified(_) => "modified",
        }
    }
}

struct ChangeWriter<'t> {
    tx: &'t Transaction<'t>,
    source_id: SourceId,
    commit_id: i64,
    fresh: bool,
    now: String,
    /// Live artifacts gained per kind (negative when lost).
    delta: [i64; 4],
    /// Artifact rows inserted (not revived).
    new_rows: i64,
    outcome: WriteOutcome,
    /// The (blake3, version) rows of the versions written, written at the end in
    /// key order: inserted as they come they would land all over the table's
    /// b-tree (its only one: a version's digests are read from the version).
    /// Held as bytes, not hex strings: a third of the memory and no allocation
    /// per row.
    version_files: Vec<([u8; blake3::OUT_LEN], i64)>,
    rows: RowStatements<'t>,
}

/// The inserts a [`ChangeWriter`] runs for every artifact, prepared once per
/// write. Taken from rusqlite's statement cache at each row they cost a hash of
/// their SQL, a shuffle of the cache and a reset of their bindings: a tenth of
/// the catalog's time in a new source's write.
struct RowStatements<'t> {
    /// A new source: a plain insert. An update: an upsert returning the id.
    artifact: Statement<'t>,
    /// An update: a modified artifact's row, rewritten by id (the upsert
    /// looked the row up by path and went through conflict handling: a second
    /// of a 100,000-artifact update).
    modified: Option<Statement<'t>>,
    text: Statement<'t>,
    file: Statement<'t>,
    finding: Statement<'t>,
    link: Statement<'t>,
    version: Statement<'t>,
    event: Statement<'t>,
}

impl<'t> RowStatements<'t> {
    fn prepare(tx: &'t Transaction<'t>, fresh: bool) -> rusqlite::Result<Self> {
        let artifact = if fresh {
            format!("INSERT INTO artifacts {ARTIFACT_INSERT}")
        } else {
            format!(
                "INSERT INTO artifacts {ARTIFACT_INSERT}
                 ON CONFLICT (source_id, kind, path) DO UPDATE SET
                     name = excluded.name, description = excluded.description, platform = excluded.platform,
                     main_file = excluded.main_file, content_path = excluded.content_path,
                     frontmatter_json = excluded.frontmatter_json, has_vendor_agent = excluded.has_vendor_agent,
                     warnings_json = excluded.warnings_json, content_digest = excluded.content_digest,
                     main_size = excluded.main_size, main_sha256 = excluded.main_sha256,
                     last_changed_commit_id = excluded.last_changed_commit_id,
                     removed_commit_id = NULL
                 RETURNING id"
            )
        };
        // A new source's paths are all new: plain inserts, which need neither
        // the upsert's conflict handling nor a statement journal.
        let text = if fresh {
            "INSERT INTO artifact_texts (artifact_id, body, truncated) VALUES (?1, ?2, ?3)"
        } else {
            "INSERT OR REPLACE INTO artifact_texts (artifact_id, body, truncated) VALUES (?1, ?2, ?3)"
        };
        let modified = (!fresh)
            .then(|| {
                tx.prepare(
                    "UPDATE artifacts SET
                         name = ?4, description = ?5, platform = ?6, main_file = ?7, content_path = ?8,
                         frontmatter_json = ?9, has_vendor_agent = ?10, warnings_json = ?11, content_digest = ?12,
                         main_size = ?13, last_changed_commit_id = ?14, main_sha256 = ?15
                     WHERE id = ?16 AND source_id = ?1 AND kind = ?2 AND path = ?3 AND removed_commit_id IS NULL",
                )
            })
            .transpose()?;
        Ok(Self {
            artifact: tx.prepare(&artifact)?,
            modified,
            text: tx.prepare(text)?,
            file: tx.prepare(
                "INSERT INTO artifact_files (artifact_id, path, mode, git_blob, blake3, size, sha256)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?,
            finding: tx.prepare(
                "INSERT INTO artifact_findings (artifact_id, path, rule, severity, line, excerpt)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?,
            link: tx.prepare("INSERT OR IGNORE INTO artifact_links (artifact_id, path) VALUES (?1, ?2)")?,
            version: tx.prepare(
                "INSERT INTO artifact_versions (artifact_id, content_digest, file_count, first_commit_id, digests)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )?,
            event: tx.prepare(
                "INSERT INTO artifact_events (artifact_id, commit_id, change, recorded_at) VALUES (?1, ?2, ?3, ?4)",
            )?,
        })
    }
}

impl<'t> ChangeWriter<'t> {
    fn new(tx: &'t Transaction<'t>, source_id: SourceId, commit: &CommitInfo, fresh: bool) -> Result<Self> {
        let now = now_timestamp();
        let commit_id: i64 = tx
            .query_row(
                "INSERT INTO commits (source_id, sha, tree_sha, committed_at, indexed_at) VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (source_id, sha) DO UPDATE SET indexed_at = excluded.indexed_at RETURNING id",
                params![source_id, commit.sha, commit.tree_sha, commit.committed_at, now],
                |r| r.get(0),
            )
            .map_err(db_error)?;
        Ok(Self {
            tx,
            source_id,
            commit_id,
            fresh,
            now,
            delta: [0; 4],
            new_rows: 0,
            outcome: WriteOutcome::default(),
            version_files: Vec::new(),
            rows: RowStatements::prepare(tx, fresh).map_err(db_error)?,
        })
    }

    /// Inserts or replaces an artifact (reviving one that had been removed).
    /// Writes one artifact, returning its id.
    fn write(&mut self, artifact: &IndexedArtifact, change: Change) -> Result<ArtifactId> {
        let tx = self.tx;
        // An added artifact is a new row unless it is a removed one coming back,
        // which also counts as packaged again if a package holds it.
        let mut new_row = change == Change::Added;
        if !self.fresh && change == Change::Added {
            let revived: Option<ArtifactId> = tx
                .prepare_cached(
                    "SELECT id FROM artifacts WHERE source_id = ?1 AND kind = ?2 AND path = ?3
                       AND removed_commit_id IS NOT NULL",
                )
                .map_err(db_error)?
                .query_row(params![self.source_id, artifact.kind.as_str(), artifact.path], |r| {
                    r.get(0)
                })
                .optional()
                .map_err(db_error)?;
            if let Some(id) = revived {
                new_row = false;
                if is_packaged(tx, id)? {
                    adjust_packaged(tx, self.source_id, artifact.kind.as_str(), 1)?;
                }
            }
        }
        self.new_rows += i64::from(new_row);
        let warnings =
            (!artifact.warnings.is_empty()).then(|| serde_json::to_string(&artifact.warnings).unwrap_or_default());
        let columns = params![
            self.source_id,
            artifact.kind.as_str(),
            artifact.path,
            artifact.name,
            artifact.description,
            artifact.platform.map(Platform::as_str),
            artifact.main_file,
            artifact.content_path,
            artifact.frontmatter_json,
            artifact.has_vendor_agent,
            warnings,
            artifact.content_digest,
            artifact.main_size as i64,
            self.commit_id,
            artifact.main_sha256
        ];
        let id: ArtifactId = match (change, &mut self.rows.modified) {
            (Change::Modified(id), Some(modified)) => {
                let mut values = columns.to_vec();
                values.push(&id);
                if modified.execute(values.as_slice()).map_err(db_error)? != 1 {
                    return Err(Error::internal(format!(
                        "artifact row {} is not the live `{}` it was read as",
                        id.0, artifact.path
                    )));
                }
                id
            }
            _ if self.fresh => {
                self.rows.artifact.execute(columns).map_err(db_error)?;
                ArtifactId(tx.last_insert_rowid())
            }
            _ => self.rows.artifact.query_row(columns, |r| r.get(0)).map_err(db_error)?,
        };
        self.rows
            .text
            .execute(params![id, artifact.text, artifact.truncated])
            .map_err(db_error)?;
        if !self.fresh {
            for table in ["artifact_files", "artifact_links", "artifact_findings"] {
                tx.prepare_cached(&format!("DELETE FROM {table} WHERE artifact_id = ?1"))
                    .map_err(db_error)?
                    .execute([id])
                    .map_err(db_error)?;
            }
        }
        for path in &artifact.link_paths {
            self.rows.link.execute(params![id, path]).map_err(db_error)?;
        }
        for file in &artifact.files {
            self.rows
                .file
                .execute(params![
                    id,
                    file.path,
                    file.mode.as_str(),
                    file.git_blob,
                    file.blake3,
                    file.size as i64,
                    file.sha256
                ])
                .map_err(db_error)?;
            for finding in &file.findings {
                self.rows
                    .finding
                    .execute(params![
                        id,
                        file.path,
                        finding.rule,
                        finding.severity.as_str(),
                        finding.line,
                        finding.excerpt
                    ])
                    .map_err(db_error)?;
            }
        }
        self.record_version(id, artifact)?;
        // A new source's events are all `added`, written in one statement at the end.
        if !self.fresh {
            self.event(id, change.as_str())?;
        }
        if change == Change::Added {
            self.delta[kind_index(artifact.kind)] += 1;
            self.outcome.added_by_kind[kind_index(artifact.kind)] += 1;
        }
        self.outcome.written.push(id);
        Ok(id)
    }

    /// Keeps the artifact's new content in its version history: the version
    /// it had ends at this commit, and the new one starts here with the
    /// distinct blake3 digests of its files (symlinks left out).
    fn record_version(&mut self, id: ArtifactId, artifact: &IndexedArtifact) -> Result<()> {
        let tx = self.tx;
        if !self.fresh {
            delete_version_files(tx, id, self.commit_id)?;
            tx.prepare_cached("DELETE FROM artifact_versions WHERE artifact_id = ?1 AND first_commit_id = ?2")
                .map_err(db_error)?
                .execute(params![id, self.commit_id])
                .map_err(db_error)?;
            self.end_version(id)?;
        }
        let digests: std::collections::BTreeSet<&str> = artifact
            .files
            .iter()
            .filter(|f| f.mode != FileMode::Symlink)
            .map(|f| f.blake3.as_str())
            .collect();
        self.rows
            .version
            .execute(params![
                id,
                artifact.content_digest,
                digests.len() as i64,
                self.commit_id,
                digests_text(digests.iter().copied())
            ])
            .map_err(db_error)?;
        let version = tx.last_insert_rowid();
        for digest in digests {
            match blake3::Hash::from_hex(digest) {
                Ok(hash) => self.version_files.push((*hash.as_bytes(), version)),
                // A digest an update reused from a damaged row is written as
                // recorded, as it always was: the write does not fail on it.
                Err(_) => {
                    tx.prepare_cached(INSERT_VERSION_FILE)
                        .map_err(db_error)?
                        .execute(params![digest, version])
                        .map_err(db_error)?;
                }
            }
        }
        Ok(())
    }

    /// Writes the version files collected, in key order.
    fn write_version_files(&mut self) -> Result<()> {
        let mut rows = std::mem::take(&mut self.version_files);
        rows.sort_unstable();
        let mut insert = self.tx.prepare_cached(INSERT_VERSION_FILE).map_err(db_error)?;
        for (digest, version) in rows {
            let hex = blake3::Hash::from_bytes(digest).to_hex();
            insert.execute(params![hex.as_str(), version]).map_err(db_error)?;
        }
        Ok(())
    }

    /// Records every artifact of a new source as added at this commit, in the
    /// order they were written: one statement over the new rows (their ids
    /// ascend from the first) instead of one insert bound and run per artifact.
    /// The rows are read by id from the first one on (`+source_id` keeps SQLite
    /// from taking the source's index and sorting what it finds there by id:
    /// 130 to 76 ms at 100,000 artifacts).
    fn write_added_events(&self) -> Result<()> {
        let Some(first) = self.outcome.written.first() else {
            return Ok(());
        };
        self.tx
            .execute(
                "INSERT INTO artifact_events (artifact_id, commit_id, change, recorded_at)
                 SELECT id, ?3, 'added', ?4 FROM artifacts WHERE id >= ?1 AND +source_id = ?2 ORDER BY id",
                params![first, self.source_id, self.commit_id, self.now],
            )
            .map_err(db_error)?;
        Ok(())
    }

    /// Ends the artifact's current version at this commit.
    fn end_version(&self, id: ArtifactId) -> Result<()> {
        self.tx
            .prepare_cached(
                "UPDATE artifact_versions SET replaced_commit_id = ?2 WHERE artifact_id = ?1 AND replaced_commit_id IS NULL",
            )
            .map_err(db_error)?
            .execute(params![id, self.commit_id])
            .map_err(db_error)?;
        Ok(())
    }

    /// Marks a live artifact removed at this commit.
    fn remove(&mut self, artifact: &LiveArtifact) -> Result<()> {
        self.end_version(artifact.id)?;
        self.tx
            .prepare_cached("UPDATE artifacts SET removed_commit_id = ?2, last_changed_commit_id = ?2 WHERE id = ?1")
            .map_err(db_error)?
            .execute(params![artifact.id, self.commit_id])
            .map_err(db_error)?;
        self.event(artifact.id, "removed")?;
        if is_packaged(self.tx, artifact.id)? {
            adjust_packaged(self.tx, self.source_id, artifact.kind.as_str(), -1)?;
        }
        self.delta[kind_index(artifact.kind)] -= 1;
        self.outcome.removed.push(artifact.id);
        Ok(())
    }

    fn event(&mut self, artifact_id: ArtifactId, change: &str) -> Result<()> {
        self.rows
            .event
            .execute(params![artifact_id, self.commit_id, change, self.now])
            .map_err(db_error)?;
        Ok(())
    }

    /// Points the source at the commit and updates its counts.
    fn finish(mut self, resolved_ref: Option<&str>) -> Result<WriteOutcome> {
        self.write_version_files()?;
        if self.fresh {
            self.write_added_events()?;
        }
        let [skills, agents, prompts, instructions] = self.delta;
        self.tx
            .execute(
                "UPDATE sources SET head_commit_id = ?2, fetched_at = ?3, resolved_ref = COALESCE(?4, resolved_ref),
                     skill_count = skill_count + ?5, agent_count = agent_count + ?6,
                     prompt_count = prompt_count + ?7, instruction_count = instruction_count + ?8,
                     artifact_rows = artifact_rows + ?9
                 WHERE id = ?1",
                params![
                    self.source_id,
                    self.commit_id,
                    self.now,
                    resolved_ref,
                    skills,
                    agents,
                    prompts,
                    instructions,
                    self.new_rows
                ],
            )
            .map_err(db_error)?;
        Ok(self.outcome)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn artifact(i: usize, text: String, description: Option<&str>, platform: Option<Platform>) -> IndexedArtifact {
        let path = format!("skills/s-{i}");
        IndexedArtifact {
            kind: ArtifactKind::Skill,
            name: format!("Skill Ünïcode {i}"),
            description: description.map(str::to_string),
            platform,
            main_file: format!("{path}/SKILL.md"),
            content_path: format!("{path}/SKILL.md"),
            link_paths: Vec::new(),
            frontmatter_json: None,
            has_vendor_agent: false,
            warnings: Vec::new(),
            content_digest: format!("{i:064x}"),
            main_size: text.len() as u64,
            main_sha256: None,
            files: Vec::new(),
            path,
            text,
            truncated: false,
        }
    }

    #[test]
    fn artifacts_ever_seen_count_new_rows_not_revived_ones() {
        let dir = tempfile::tempdir().unwrap();
        let mut catalog = Catalog::open(&dir.path().join("c.db")).unwrap();
        let source = crate::catalog::test_data::source("src");
        let initial = (0..3).map(|i| Ok(artifact(i, format!("body {i}"), None, None)));
        let (id, _) = catalog
            .add_indexed_source(&source, None, &crate::catalog::test_data::commit('a'), initial, |_| {})
            .unwrap();
        assert_eq!(catalog.stats().unwrap().artifacts_ever, 3);
        let live = |catalog: &Catalog, path: &str| {
            catalog
                .live_artifacts_in(id, &[path.to_string()], &[])
                .unwrap()
                .pop()
                .unwrap()
        };
        // One goes, a new one comes: the gone one is still a row.
        let gone = live(&catalog, "skills/s-1");
        let changes = SourceChanges {
            added: vec![artifact(7, "new".into(), None, None)],
            modified: Vec::new(),
            removed: vec![gone],
        };
        catalog
            .record_update(
                id,
                Some(&"a".repeat(40)),
                None,
                &crate::catalog::test_data::commit('b'),
                &changes,
                |_| {},
            )
            .unwrap();
        assert_eq!(catalog.stats().unwrap().artifacts_ever, 4);
        // The gone one comes back at its path: the same row again.
        let changes = SourceChanges {
            added: vec![artifact(1, "back".into(), None, None)],
            ..Default::default()
        };
        catalog
            .record_update(
                id,
                Some(&"b".repeat(40)),
                None,
                &crate::catalog::test_data::commit('c'),
                &changes,
                |_| {},
            )
            .unwrap();
        assert_eq!(catalog.stats().unwrap().artifacts_ever, 4);
        catalog.remove_source(id).unwrap();
        assert_eq!(catalog.stats().unwrap().artifacts_ever, 0);
    }

    /// A package's member whose source was removed is linked again when a
    /// source of its repository is added (by URL, kind and path: another
    /// repository's artifact at that path gets no link) and counts as packaged.
    /// A member that never held an artifact (a folder's package, whatever URL
    /// its manifest claims) is never linked.
    #[test]
    fn a_source_added_again_links_the_members_its_removal_left() {
        let dir = tempfile::tempdir().unwrap();
        let mut catalog = Catalog::open(&dir.path().join("c.db")).unwrap();
        let url = "https://example.invalid/o/r.git";
        let add = |catalog: &mut Catalog, name: &str, url: &str| {
            let source = NewSource {
                url,
                ..crate::catalog::test_data::source(name)
            };
            let artifacts = (0..2).map(|i| Ok(artifact(i, String::new(), None, None)));
            let commit = crate::catalog::test_data::commit('a');
            catalog
                .add_indexed_source(&source, None, &commit, artifacts, |_| {})
                .unwrap()
                .0
        };
        let first = add(&mut catalog, "up", url);
        let held = catalog.live_artifacts_in(first, &["skills/s-0".into()], &[]).unwrap()[0].id;
        let manifest = format!(r#"{{"provenance": {{"source_url": "{url}"}}}}"#);
        let record = |catalog: &mut Catalog, name: &str, artifact_id: Option<ArtifactId>, path: &str| {
            let package = crate::catalog::NewPackage {
                name,
                version: "1.0.0",
                description: None,
                manifest_json: &manifest,
                origin: "source",
                provenance_json: None,
                archive_blake3: None,
            };
            let member = crate::catalog::PackageMember {
                artifact_id,
                project_root: None,
                kind: ArtifactKind::Skill,
                name: "s",
                path,
            };
            catalog.record_package(&package, &[member]).unwrap();
        };
        record(&mut catalog, "taken", Some(held), "skills/s-0");
        record(&mut catalog, "claims", None, "skills/s-1");
        let linked = |catalog: &Catalog| -> (Vec<Option<i64>>, Vec<(String, i64)>) {
            let conn = &catalog.conn;
            let mut members = conn
                .prepare("SELECT pa.artifact_id FROM package_artifacts pa JOIN packages p ON p.id = pa.package_id ORDER BY p.name DESC")
                .unwrap();
            let members = members
                .query_map([], |r| r.get(0))
                .unwrap()
                .map(|m| m.unwrap())
                .collect();
            let mut counts = conn
                .prepare("SELECT name, packaged_skill_count FROM sources ORDER BY id")
                .unwrap();
            let counts = counts.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
            (members, counts.map(|c| c.unwrap()).collect())
        };
        assert_eq!(linked(&catalog), (vec![Some(held.0), None], vec![("up".into(), 1)]));

        catalog.remove_source(first).unwrap();
        assert_eq!(linked(&catalog), (vec![None, None], vec![]));
        add(&mut catalog, "other", "https://example.invalid/o/other.git");
        assert_eq!(linked(&catalog), (vec![None, None], vec![("other".into(), 0)]));
        let again = add(&mut catalog, "again", url);
        let back = catalog.live_artifacts_in(again, &["skills/s-0".into()], &[]).unwrap()[0].id;
        assert_eq!(
            linked(&catalog),
            (vec![Some(back.0), None], vec![("other".into(), 0), ("again".into(), 1)])
        );
        let waiting: i64 = catalog
            .conn
            .query_row(
                "SELECT COUNT(*) FROM package_artifacts WHERE source_url IS NOT NULL",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(waiting, 0, "a linked member waits for nothing");
    }

    #[test]
    fn rows_handed_over_while_writing_are_the_rows_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let mut catalog = Catalog::open(&dir.path().join("c.db")).unwrap();
        let source = crate::catalog::test_data::source("src");
        let commit = crate::catalog::test_data::commit('a');
        let cap = SEARCH_BODY_CHARS as usize;
        // Bodies around the cap, in one- to four-byte characters, and none at all.
        let artifacts = vec![
            artifact(0, String::new(), None, None),
            artifact(1, "short body".into(), Some("One line"), Platform::ALL.first().copied()),
            artifact(2, "é".repeat(cap + 3), Some("accents"), None),
            artifact(
                3,
                format!("{}🦀🦀", "a".repeat(cap - 1)),
                None,
                Platform::ALL.last().copied(),
            ),
            artifact(4, "日本".repeat(cap / 2), Some(""), None),
            artifact(5, "x".repeat(cap), None, None),
        ];
        let mut handed = Vec::new();
        catalog
            .add_indexed_source(&source, None, &commit, artifacts.into_iter().map(Ok), |row| {
                handed.push(row)
            })
            .unwrap();
        let mut read = Vec::new();
        catalog
            .for_each_search_row(crate::catalog::RowFilter::All, |row| {
                read.push(row);
                Ok(())
            })
            .unwrap();
        read.sort_by_key(|r| r.id);
        assert_eq!(handed.len(), 6);
        assert_eq!(handed, read);

        // An update hands over the rows of what it adds and modifies, as read back.
        let source_id = read[0].source_id;
        let modified = catalog
            .live_artifacts_in(source_id, &["skills/s-2".into()], &[])
            .unwrap()[0]
            .id;
        let changes = SourceChanges {
            added: vec![artifact(9, "ü".repeat(cap + 1), Some("new"), None)],
            modified: vec![(modified, artifact(2, "changed".into(), Some("again"), None))],
            removed: Vec::new(),
        };
        let mut handed = Vec::new();
        let outcome = catalog
            .record_update(
                source_id,
                Some(&commit.sha),
                None,
                &crate::catalog::test_data::commit('b'),
                &changes,
                |row| handed.push(row),
            )
            .unwrap();
        let mut read = Vec::new();
        catalog
            .for_each_search_row(crate::catalog::RowFilter::Ids(&outcome.written), |row| {
                read.push(row);
                Ok(())
            })
            .unwrap();
        handed.sort_by_key(|r| r.id);
        read.sort_by_key(|r| r.id);
        assert_eq!(handed.len(), 2);
        assert_eq!(handed, read);
    }

    #[test]
    fn a_new_source_alone_is_written_past_the_wal_and_the_catalog_goes_back_to_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.db");
        let journal = dir.path().join("c.db-journal");
        let mut catalog = Catalog::open(&path).unwrap();
        let mode =
            |catalog: &Catalog| -> String { catalog.conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap() };
        let commit = crate::catalog::test_data::commit('a');
        let rows = |n: usize| (0..n).map(|i| Ok(artifact(i, format!("body {i}"), None, None)));
        // Alone: a rollback journal holds the write, and a process opening the
        // catalog meanwhile reads the state before it instead of failing.
        let mut during = Vec::new();
        let mut reader = None;
        catalog
            .add_indexed_source(
                &crate::catalog::test_data::source("alone"),
                None,
                &commit,
                rows(3),
                |_| {
                    let opened = reader.get_or_insert_with(|| Catalog::open(&path).unwrap());
                    during.push((journal.exists(), opened.generation().unwrap()));
                },
            )
            .unwrap();
        assert_eq!(during, vec![(true, 0); 3]);
        assert_eq!(mode(&catalog), "wal", "back in WAL although a reader stayed open");
        assert!(!journal.exists());
        let reader = reader.unwrap();
        assert_eq!(
            reader.generation().unwrap(),
            1,
            "the reader sees the write once committed"
        );
        // Another connection open: SQLite keeps the catalog in WAL, and the write
        // runs there as any other.
        let mut seen = Vec::new();
        catalog
            .add_indexed_source(
                &crate::catalog::test_data::source("beside"),
                None,
                &commit,
                rows(2),
                |_| seen.push(journal.exists()),
            )
            .unwrap();
        assert_eq!(seen, [false, false]);
        assert_eq!(mode(&catalog), "wal");
        assert_eq!(reader.counts().unwrap().artifacts, 5);
    }

    /// A write large enough to start the writeback opens the catalog once more;
    /// that descriptor must never be closed, or the process's POSIX locks on the
    /// catalog (SQLite's, those of every other connection included) go with it.
    /// An open file description lock conflicts with the process's own record
    /// locks, so it shows whether another connection's read lock is still held.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_large_write_leaves_every_lock_on_the_catalog_in_place() {
        use std::os::fd::AsRawFd;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.db");
        let mut catalog = Catalog::open(&path).unwrap();
        let reader = Catalog::open(&path).unwrap();
        reader.conn.execute_batch("BEGIN").unwrap();
        reader.generation().unwrap();
        // SQLite's shared lock: a read lock on bytes 0x40000002.. (510 of them).
        let probe = std::fs::File::open(&path).unwrap();
        let read_locked = || {
            let mut lock = libc::flock {
                l_type: libc::F_WRLCK as i16,
                l_whence: libc::SEEK_SET as i16,
                l_start: 0x4000_0002,
                l_len: 510,
                l_pid: 0,
            };
            // SAFETY: F_OFD_GETLK fills `lock`, a valid flock, and keeps nothing.
            let done = unsafe { libc::fcntl(probe.as_raw_fd(), libc::F_OFD_GETLK, &mut lock) };
            assert_eq!(done, 0, "{}", std::io::Error::last_os_error());
            lock.l_type == libc::F_RDLCK as i16
        };
        assert!(read_locked(), "the reader holds a shared lock");
        let rows = (0..WRITEBACK_EVERY + 10).map(|i| Ok(artifact(i, format!("body {i}"), None, None)));
        catalog
            .add_indexed_source(
                &crate::catalog::test_data::source("big"),
                None,
                &crate::catalog::test_data::commit('a'),
                rows,
                |_| {},
            )
            .unwrap();
        assert!(read_locked(), "the write let go of the reader's lock");
        reader.conn.execute_batch("COMMIT").unwrap();
        // The probe is never closed either: closing it would drop the locks too.
        std::mem::forget(probe);
    }
}
