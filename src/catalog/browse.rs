//! Reads over live artifacts: rows for the search index, keyset-paged listings
//! (candidates, available artifacts) and single-artifact details.

use rusqlite::{OptionalExtension, params, params_from_iter};

use super::{ArtifactId, SourceId};
use super::{Catalog, EVERY_KIND, db_error};
use crate::error::Result;
use crate::scan::{ArtifactKind, Platform};

/// Longest part of a main file fed to the search index, in characters.
pub const SEARCH_BODY_CHARS: i64 = 32 * 1024;

/// What the search index holds for one artifact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchRow {
    /// Artifact id.
    pub id: ArtifactId,
    /// Source id.
    pub source_id: SourceId,
    /// Source name.
    pub source: String,
    /// Kind.
    pub kind: ArtifactKind,
    /// Display name.
    pub name: String,
    /// Platform, when the location implies one.
    pub platform: Option<Platform>,
    /// Repository path.
    pub path: String,
    /// One-line description.
    pub description: Option<String>,
    /// Main file text, capped at [`SEARCH_BODY_CHARS`].
    pub body: String,
    /// Increases with every indexed commit: larger is more recent.
    pub changed_seq: i64,
}

/// Which live artifacts to read for the search index.
#[derive(Debug, Clone, Copy)]
pub enum RowFilter<'a> {
    /// Every live artifact.
    All,
    /// These artifact ids (those no longer live are skipped).
    Ids(&'a [ArtifactId]),
    /// Every live artifact of one source.
    Source(SourceId),
}

/// A position in the keyset order `(source_id, kind, path)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keyset {
    /// Source id.
    pub source_id: SourceId,
    /// Kind.
    pub kind: ArtifactKind,
    /// Repository path.
    pub path: String,
}

/// A live artifact in a paged listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedArtifact {
    /// Artifact id.
    pub id: ArtifactId,
    /// Source id.
    pub source_id: SourceId,
    /// Source name.
    pub source: String,
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

/// Filters shared by paged listings.
#[derive(Debug, Clone, Default)]
pub struct ListFilter {
    /// Only these source ids (empty: all).
    pub source_ids: Vec<SourceId>,
    /// Only these kinds (empty: all).
    pub kinds: Vec<ArtifactKind>,
    /// Leave out artifacts that some package already holds.
    pub exclude_packaged: bool,
}

/// Everything recorded about one artifact.
#[derive(Debug, Clone, PartialEq)]
pub struct ArtifactDetail {
    /// Artifact id.
    pub id: ArtifactId,
    /// Source name.
    pub source: String,
    /// Source URL.
    pub source_url: String,
    /// Kind.
    pub kind: ArtifactKind,
    /// Display name.
    pub name: String,
    /// Repository path.
    pub path: String,
    /// Main file path.
    pub main_file: String,
    /// One-line description.
    pub description: Option<String>,
    /// Platform.
    pub platform: Option<Platform>,
    /// Frontmatter as a JSON object text.
    pub frontmatter_json: Option<String>,
    /// Problems recorded at scan time (JSON array text).
    pub warnings_json: Option<String>,
    /// A skill with vendor agent metadata.
    pub has_vendor_agent: bool,
    /// Commit the artifact was last indexed at.
    pub commit: Option<String>,
    /// Main file text (capped at scan time).
    pub body: String,
    /// Whether the text was cut at scan time.
    pub truncated: bool,
    /// `(path, size, blake3)` of every file.
    pub files: Vec<(String, u64, String)>,
}

const LISTED_COLUMNS: &str = "a.id, a.source_id, s.name, a.kind, a.name, a.path, a.description, a.has_vendor_agent";

fn listed_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ListedArtifact> {
    Ok(ListedArtifact {
        id: r.get(0)?,
        source_id: r.get(1)?,
        source: r.get(2)?,
        kind: super::artifacts::kind_from_sql(&r.get::<_, String>(3)?),
        name: r.get(4)?,
        path: r.get(5)?,
        description: r.get(6)?,
        has_vendor_agent: r.get(7)?,
    })
}

impl Catalog {
    /// Streams search-index rows to `each`.
    pub fn for_each_search_row(
        &self,
        filter: RowFilter<'_>,
        mut each: impl FnMut(SearchRow) -> Result<()>,
    ) -> Result<()> {
        let base = "SELECT a.id, a.source_id, s.name, a.kind, a.name, a.platform, a.path, a.description,
                    substr(COALESCE(t.body, ''), 1, ?1), a.last_changed_commit_id
             FROM artifacts a JOIN sources s ON s.id = a.source_id
             LEFT JOIN artifact_texts t ON t.artifact_id = a.id
             WHERE a.removed_commit_id IS NULL";
        let to_row = |r: &rusqlite::Row<'_>| {
            Ok(SearchRow {
                id: r.get(0)?,
                source_id: r.get(1)?,
                source: r.get(2)?,
                kind: super::artifacts::kind_from_sql(&r.get::<_, String>(3)?),
                name: r.get(4)?,
                platform: platform_from_sql(r.get(5)?),
                path: r.get(6)?,
                description: r.get(7)?,
                body: r.get(8)?,
                changed_seq: r.get::<_, Option<i64>>(9)?.unwrap_or(0),
            })
        };
        match filter {
            RowFilter::All => {
                let mut stmt = self.conn.prepare(base).map_err(db_error)?;
                let rows = stmt.query_map([SEARCH_BODY_CHARS], to_row).map_err(db_error)?;
                for row in rows {
                    each(row.map_err(db_error)?)?;
                }
            }
            RowFilter::Source(source_id) => {
                let mut stmt = self
                    .conn
                    .prepare(&format!("{base} AND a.source_id = ?2"))
                    .map_err(db_error)?;
                let rows = stmt
                    .query_map(params![SEARCH_BODY_CHARS, source_id], to_row)
                    .map_err(db_error)?;
                for row in rows {
                    each(row.map_err(db_error)?)?;
                }
            }
            RowFilter::Ids(ids) => self.reading(|catalog| {
                let mut stmt = catalog
                    .conn
                    .prepare_cached(&format!("{base} AND a.id = ?2"))
                    .map_err(db_error)?;
                for id in ids {
                    let row = stmt
                        .query_row(params![SEARCH_BODY_CHARS, id], to_row)
                        .optional()
                        .map_err(db_error)?;
                    if let Some(row) = row {
                        each(row)?;
                    }
                }
                Ok(())
            })?,
        }
        Ok(())
    }

    /// One page of live artifacts after `after` in `(source_id, kind, path)` order
    /// (kinds in alphabetical order). The page is read partition by partition
    /// (one source and kind at a time) with an equality-plus-range lookup on the
    /// `(source_id, kind, path)` index, so every page costs the same however deep it is.
    pub fn list_page(&self, filter: &ListFilter, after: Option<&Keyset>, limit: usize) -> Result<Vec<ListedArtifact>> {
        let mut source_ids = if filter.source_ids.is_empty() {
            let mut stmt = self.conn.prepare_cached("SELECT id FROM sources").map_err(db_error)?;
            let ids = stmt.query_map([], |r| r.get(0)).map_err(db_error)?;
            ids.collect::<rusqlite::Result<Vec<SourceId>>>().map_err(db_error)?
        } else {
            filter.source_ids.clone()
        };
        source_ids.sort_unstable();
        source_ids.dedup();
        let mut kinds = if filter.kinds.is_empty() {
            ArtifactKind::ALL.to_vec()
        } else {
            filter.kinds.clone()
        };
        kinds.sort_by_key(|k| k.as_str());
        kinds.dedup();
        let packaged = if filter.exclude_packaged {
            " AND NOT EXISTS (SELECT 1 FROM package_artifacts pa WHERE pa.artifact_id = a.id)"
        } else {
            ""
        };
        // A partition is read after the keyset's path, or from its start: an
        // artifact at the repository root (a root skill) has the path "".
        let page = |bound: &str| {
            format!(
                "SELECT {LISTED_COLUMNS} FROM artifacts a JOIN sources s ON s.id = a.source_id
                 WHERE a.source_id = ?1 AND a.kind = ?2 AND a.path {bound} ?3 AND a.removed_commit_id IS NULL{packaged}
                 ORDER BY a.path LIMIT ?4"
            )
        };
        let mut after_path = self.conn.prepare_cached(&page(">")).map_err(db_error)?;
        let mut from_start = self.conn.prepare_cached(&page(">=")).map_err(db_error)?;
        let mut out = Vec::new();
        for &source_id in &source_ids {
            for &kind in &kinds {
                let partition = (source_id, kind.as_str());
                let (stmt, path_after) = match after {
                    Some(k) if partition < (k.source_id, k.kind.as_str()) => continue,
                    Some(k) if partition == (k.source_id, k.kind.as_str()) => (&mut after_path, k.path.as_str()),
                    _ => (&mut from_start, ""),
                };
                let remaining = (limit - out.len()) as i64;
                let rows = stmt
                    .query_map(
                        params![source_id, kind.as_str(), path_after, remaining],
                        listed_from_row,
                    )
                    .map_err(db_error)?;
                for row in rows {
                    out.push(row.map_err(db_error)?);
                }
                if out.len() >= limit {
                    return Ok(out);
                }
            }
        }
        Ok(out)
    }

    /// How many live artifacts match `filter`, from the per-source counts kept in
    /// step by every write: a sum over sources, never a scan of artifacts.
    pub fn count_listed(&self, filter: &ListFilter) -> Result<u64> {
        let kinds: Vec<ArtifactKind> = if filter.kinds.is_empty() {
            ArtifactKind::ALL.to_vec()
        } else {
            filter.kinds.clone()
        };
        let terms: Vec<String> = kinds
            .iter()
            .map(|k| {
                if filter.exclude_packaged {
                    format!("{0}_count - packaged_{0}_count", k.as_str())
                } else {
                    format!("{}_count", k.as_str())
                }
            })
            .collect();
        let mut sql = format!("SELECT COALESCE(SUM({}), 0) FROM sources", terms.join(" + "));
        let mut args: Vec<rusqlite::types::Value> = Vec::new();
        if !filter.source_ids.is_empty() {
            sql.push_str(&format!(" WHERE id IN ({})", placeholders(filter.source_ids.len())));
            args.extend(filter.source_ids.iter().map(|&id| id.into()));
        }
        let count: i64 = self
            .conn
            .query_row(&sql, params_from_iter(args), |r| r.get(0))
            .map_err(db_error)?;
        Ok(count.max(0) as u64)
    }

    /// Which of a project's own artifacts (by kind and path) some package holds.
    pub fn packaged_project_paths(&self, project_root: &str) -> Result<Vec<(ArtifactKind, String)>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT DISTINCT kind, path FROM package_artifacts WHERE project_root = ?1")
            .map_err(db_error)?;
        let rows = stmt
            .query_map([project_root], |r| {
                Ok((super::artifacts::kind_from_sql(&r.get::<_, String>(0)?), r.get(1)?))
            })
            .map_err(db_error)?;
        rows.collect::<rusqlite::Result<_>>().map_err(db_error)
    }

    /// Live artifacts of `source_id` (or of every source) named `name`, case-insensitively.
    pub fn artifacts_named(&self, source_id: Option<SourceId>, name: &str) -> Result<Vec<ListedArtifact>> {
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT {LISTED_COLUMNS} FROM artifacts a JOIN sources s ON s.id = a.source_id
                 WHERE a.removed_commit_id IS NULL AND a.name = ?1 COLLATE NOCASE AND (?2 IS NULL OR a.source_id = ?2)
                 ORDER BY s.name, a.kind, a.path"
            ))
            .map_err(db_error)?;
        let rows = stmt
            .query_map(params![name, source_id], listed_from_row)
            .map_err(db_error)?;
        rows.collect::<rusqlite::Result<_>>().map_err(db_error)
    }

    /// The live artifact of `source_id` at repository `path`, if any.
    pub fn artifact_at(&self, source_id: SourceId, path: &str) -> Result<Option<ListedArtifact>> {
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT {LISTED_COLUMNS} FROM artifacts a JOIN sources s ON s.id = a.source_id
                 WHERE a.removed_commit_id IS NULL AND a.source_id = ?1 AND a.path = ?2 AND a.kind IN {EVERY_KIND}
                 ORDER BY a.kind LIMIT 1"
            ))
            .map_err(db_error)?;
        stmt.query_row(params![source_id, path], listed_from_row)
            .optional()
            .map_err(db_error)
    }

    /// Everything recorded about the artifact `id`.
    pub fn artifact_detail(&self, id: ArtifactId) -> Result<Option<ArtifactDetail>> {
        let detail = self
            .conn
            .query_row(
                "SELECT a.id, s.name, s.url, a.kind, a.name, a.path, a.main_file, a.description, a.platform,
                        a.frontmatter_json, a.warnings_json, a.has_vendor_agent, c.sha,
                        COALESCE(t.body, ''), COALESCE(t.truncated, 0)
                 FROM artifacts a JOIN sources s ON s.id = a.source_id
                 LEFT JOIN commits c ON c.id = a.last_changed_commit_id
                 LEFT JOIN artifact_texts t ON t.artifact_id = a.id
                 WHERE a.id = ?1",
                [id],
                |r| {
                    Ok(ArtifactDetail {
                        id: r.get(0)?,
                        source: r.get(1)?,
                        source_url: r.get(2)?,
                        kind: super::artifacts::kind_from_sql(&r.get::<_, String>(3)?),
                        name: r.get(4)?,
                        path: r.get(5)?,
                        main_file: r.get(6)?,
                        description: r.get(7)?,
                        platform: platform_from_sql(r.get(8)?),
                        frontmatter_json: r.get(9)?,
                        warnings_json: r.get(10)?,
                        has_vendor_agent: r.get(11)?,
                        commit: r.get(12)?,
                        body: r.get(13)?,
                        truncated: r.get(14)?,
                        files: Vec::new(),
                    })
                },
            )
            .optional()
            .map_err(db_error)?;
        let Some(mut detail) = detail else {
            return Ok(None);
        };
        let mut stmt = self
            .conn
            .prepare_cached("SELECT path, size, blake3 FROM artifact_files WHERE artifact_id = ?1 ORDER BY path")
            .map_err(db_error)?;
        let files = stmt
            .query_map([id], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as u64, r.get(2)?)))
            .map_err(db_error)?;
        detail.files = files.collect::<rusqlite::Result<_>>().map_err(db_error)?;
        Ok(Some(detail))
    }

    /// Which of `ids` a package installed in `project_root` holds.
    pub fn installed_among(
        &self,
        project_root: &str,
        ids: &[ArtifactId],
    ) -> Result<std::collections::HashSet<ArtifactId>> {
        if ids.is_empty() {
            return Ok(Default::default());
        }
        let sql = format!(
            "SELECT DISTINCT pa.artifact_id FROM package_artifacts pa JOIN installs i ON i.package_id = pa.package_id
             WHERE i.project_root = ? AND pa.artifact_id IN ({})",
            placeholders(ids.len())
        );
        let mut args: Vec<rusqlite::types::Value> = vec![project_root.to_string().into()];
        args.extend(ids.iter().map(|&id| id.into()));
        let mut stmt = self.conn.prepare(&sql).map_err(db_error)?;
        let rows = stmt.query_map(params_from_iter(args), |r| r.get(0)).map_err(db_error)?;
        rows.collect::<rusqlite::Result<_>>().map_err(db_error)
    }

    /// Those of `ids` whose name another live artifact of the same source has
    /// too (names compare as `artifacts_named` compares them): `source/name`
    /// does not tell them apart, `source/path` does.
    pub fn sharing_a_name(&self, ids: &[ArtifactId]) -> Result<std::collections::HashSet<ArtifactId>> {
        if ids.is_empty() {
            return Ok(Default::default());
        }
        let sql = format!(
            "SELECT a.id FROM artifacts a WHERE a.id IN ({}) AND EXISTS (
                 SELECT 1 FROM artifacts b WHERE b.name = a.name COLLATE NOCASE AND b.source_id = a.source_id
                   AND b.id <> a.id AND b.removed_commit_id IS NULL)",
            placeholders(ids.len())
        );
        let mut stmt = self.conn.prepare(&sql).map_err(db_error)?;
        let rows = stmt
            .query_map(params_from_iter(ids.iter().map(|id| id.0)), |r| r.get(0))
            .map_err(db_error)?;
        rows.collect::<rusqlite::Result<_>>().map_err(db_error)
    }

    /// Names of the packages installed in `project_root`.
    pub fn installed_package_names(&self, project_root: &str) -> Result<std::collections::HashSet<String>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT DISTINCT p.name FROM installs i JOIN packages p ON p.id = i.package_id WHERE i.project_root = ?1",
            )
            .map_err(db_error)?;
        let rows = stmt.query_map([project_root], |r| r.get(0)).map_err(db_error)?;
        rows.collect::<rusqlite::Result<_>>().map_err(db_error)
    }

    /// Every source name, sorted.
    pub fn source_names(&self) -> Result<Vec<String>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT name FROM sources ORDER BY name")
            .map_err(db_error)?;
        let rows = stmt.query_map([], |r| r.get(0)).map_err(db_error)?;
        rows.collect::<rusqlite::Result<_>>().map_err(db_error)
    }

    /// Names of the registered sources never indexed (`aam init` registers
    /// default sources without fetching them): their artifacts are not in
    /// any answer yet.
    pub fn unfetched_source_names(&self) -> Result<Vec<String>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT name FROM sources WHERE head_commit_id IS NULL ORDER BY name")
            .map_err(db_error)?;
        let rows = stmt.query_map([], |r| r.get(0)).map_err(db_error)?;
        rows.collect::<rusqlite::Result<_>>().map_err(db_error)
    }
}

fn placeholders(n: usize) -> String {
    vec!["?"; n].join(", ")
}

/// A stored platform column (written from [`Platform::as_str`]); a name this aam
/// does not know reads as none.
fn platform_from_sql(text: Option<String>) -> Option<Platform> {
    text.as_deref().and_then(Platform::parse)
}
