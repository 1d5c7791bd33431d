//! The queries behind Skills over MCP: live skills of a source in path order
//! (keyset paging), skills at given folders, and a skill's files with their
//! sha256 digests. Which skills are served is decided by `crate::skills`; each
//! source's tally of served and left-out skills (`sources.skill_census`) is kept
//! in step by the writes that change its skills, so `catalog stats` reads
//! numbers instead of every skill.

use std::collections::HashSet;

use rusqlite::{Connection, OptionalExtension, params};

use super::{ArtifactId, SourceId};
use super::{Catalog, db_error};
use crate::error::Result;
use crate::skills::{RecordedFrontmatter, SkillProblem, Tally, ancestors, problem_of};

/// A live skill as the skills surface needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillRow {
    /// Artifact row id.
    pub id: ArtifactId,
    /// Repository path of its folder.
    pub path: String,
    /// Repository path of its `SKILL.md`.
    pub main_file: String,
    /// Where the main file's bytes live (differs when `SKILL.md` is a symlink).
    pub content_path: String,
    /// Its frontmatter as a JSON object, when it has one.
    pub frontmatter_json: Option<String>,
    /// Whether that frontmatter was read line by line (no YAML parser read it).
    pub frontmatter_line_by_line: bool,
    /// Size of the main file's content.
    pub main_size: u64,
    /// sha256 (hex) of the main file's content; `None` when indexed before V8.
    pub main_sha256: Option<String>,
}

/// One recorded file of a skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillFile {
    /// Repository path.
    pub path: String,
    /// Whether it is a symlink (served skills leave those out, but for `SKILL.md`).
    pub symlink: bool,
    /// Git blob id (hex).
    pub git_blob: String,
    /// Size in bytes.
    pub size: u64,
    /// sha256 (hex); `None` when indexed before V8.
    pub sha256: Option<String>,
}

const SKILL_COLUMNS: &str =
    "id, path, main_file, content_path, frontmatter_json, main_size, main_sha256, warnings_json";

fn skill_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<SkillRow> {
    let frontmatter_json: Option<String> = r.get(4)?;
    let warnings_json: Option<String> = r.get(7)?;
    Ok(SkillRow {
        id: r.get(0)?,
        path: r.get(1)?,
        main_file: r.get(2)?,
        content_path: r.get(3)?,
        frontmatter_line_by_line: RecordedFrontmatter::of_row(frontmatter_json.as_deref(), warnings_json.as_deref())
            .line_by_line,
        frontmatter_json,
        main_size: r.get::<_, i64>(5)? as u64,
        main_sha256: r.get(6)?,
    })
}

impl SkillRow {
    /// Its frontmatter as recorded.
    pub fn frontmatter(&self) -> RecordedFrontmatter<'_> {
        RecordedFrontmatter {
            json: self.frontmatter_json.as_deref(),
            line_by_line: self.frontmatter_line_by_line,
        }
    }
}

impl Catalog {
    /// Each source's tally of live skills; a source without a stored one (a
    /// write failed to keep it) is counted from its rows.
    pub fn skill_tallies(&self) -> Result<Vec<Tally>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT id, scope_path, skill_census FROM sources ORDER BY id")
            .map_err(db_error)?;
        let sources = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, SourceId>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, Option<String>>(2)?,
                ))
            })
            .map_err(db_error)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(db_error)?;
        sources
            .into_iter()
            .map(
                |(id, scope, stored)| match stored.as_deref().and_then(Tally::from_json) {
                    Some(tally) => Ok(tally),
                    None => full_tally(&self.conn, id, &scope),
                },
            )
            .collect()
    }

    /// Up to `limit` live skills of a source whose path sorts after `after`
    /// (from the first when `None`), in path order: one range of the
    /// `(source_id, kind, path)` index, so a deep page costs what the first does.
    pub fn skills_after(&self, source_id: SourceId, after: Option<&str>, limit: usize) -> Result<Vec<SkillRow>> {
        // A skill at the repository root has the path "": the first page starts at it.
        let (bound, after) = match after {
            Some(after) => (">", after),
            None => (">=", ""),
        };
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT {SKILL_COLUMNS} FROM artifacts
                 WHERE source_id = ?1 AND kind = 'skill' AND path {bound} ?2 AND removed_commit_id IS NULL
                 ORDER BY path LIMIT ?3"
            ))
            .map_err(db_error)?;
        let rows = stmt
            .query_map(params![source_id, after, limit as i64], skill_from_row)
            .map_err(db_error)?;
        rows.collect::<rusqlite::Result<_>>().map_err(db_error)
    }

    /// The live skills of a source whose folder is one of `paths`.
    pub fn skills_at<P: AsRef<str>>(
        &self,
        source_id: SourceId,
        paths: impl IntoIterator<Item = P>,
    ) -> Result<Vec<SkillRow>> {
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT {SKILL_COLUMNS} FROM artifacts
                 WHERE source_id = ?1 AND kind = 'skill' AND path = ?2 AND removed_commit_id IS NULL"
            ))
            .map_err(db_error)?;
        let mut found = Vec::new();
        for path in paths {
            let rows = stmt
                .query_map(params![source_id, path.as_ref()], skill_from_row)
                .map_err(db_error)?;
            for row in rows {
                found.push(row.map_err(db_error)?);
            }
        }
        Ok(found)
    }

    /// Every recorded file of a skill, by path.
    pub fn skill_files(&self, artifact_id: ArtifactId) -> Result<Vec<SkillFile>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT path, mode, git_blob, size, sha256 FROM artifact_files WHERE artifact_id = ?1 ORDER BY path",
            )
            .map_err(db_error)?;
        let rows = stmt
            .query_map([artifact_id], |r| {
                Ok(SkillFile {
                    path: r.get(0)?,
                    symlink: r.get::<_, String>(1)? == "symlink",
                    git_blob: r.get(2)?,
                    size: r.get::<_, i64>(3)? as u64,
                    sha256: r.get(4)?,
                })
            })
            .map_err(db_error)?;
        rows.collect::<rusqlite::Result<_>>().map_err(db_error)
    }
}

/// Counts every live skill of a source from its rows.
pub(super) fn full_tally(conn: &Connection, source_id: SourceId, scope: &str) -> Result<Tally> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT path, frontmatter_json, warnings_json FROM artifacts
             WHERE source_id = ?1 AND kind = 'skill' AND removed_commit_id IS NULL",
        )
        .map_err(db_error)?;
    let rows = stmt
        .query_map([source_id], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, Option<String>>(1)?,
                r.get::<_, Option<String>>(2)?,
            ))
        })
        .map_err(db_error)?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(db_error)?;
    Ok(Tally::of(
        rows.iter().map(|(path, fm, warnings)| {
            (
                path.as_str(),
                RecordedFrontmatter::of_row(fm.as_deref(), warnings.as_deref()),
            )
        }),
        scope,
    ))
}

/// The tally stored for a source, if any.
pub(super) fn stored_tally(conn: &Connection, source_id: SourceId) -> Result<Option<Tally>> {
    let stored: Option<String> = conn
        .query_row("SELECT skill_census FROM sources WHERE id = ?1", [source_id], |r| {
            r.get(0)
        })
        .map_err(db_error)?;
    Ok(stored.as_deref().and_then(Tally::from_json))
}

/// Stores a source's tally.
pub(super) fn store_tally(conn: &Connection, source_id: SourceId, tally: &Tally) -> Result<()> {
    conn.execute(
        "UPDATE sources SET skill_census = ?2 WHERE id = ?1",
        params![source_id, tally.to_json()],
    )
    .map_err(db_error)?;
    Ok(())
}

/// The frontmatter recorded for the artifact `id`: (fields as JSON, warnings as JSON).
pub(super) fn frontmatter_of(conn: &Connection, id: ArtifactId) -> Result<(Option<String>, Option<String>)> {
    conn.prepare_cached("SELECT frontmatter_json, warnings_json FROM artifacts WHERE id = ?1")
        .map_err(db_error)?
        .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()
        .map_err(db_error)
        .map(Option::unwrap_or_default)
}

/// What keeps a skill at `path` with `frontmatter_json` out of `skills/list`,
/// against the source's live skills as the catalog holds them now.
pub(super) fn problem_now(
    conn: &Connection,
    source_id: SourceId,
    scope: &str,
    path: &str,
    frontmatter: RecordedFrontmatter<'_>,
) -> Result<Option<SkillProblem>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM artifacts
                 WHERE source_id = ?1 AND kind = 'skill' AND path = ?2 AND removed_commit_id IS NULL)",
        )
        .map_err(db_error)?;
    let mut folders = HashSet::new();
    for folder in ancestors(path) {
        if stmt
            .query_row(params![source_id, folder], |r| r.get::<_, bool>(0))
            .map_err(db_error)?
        {
            folders.insert(folder);
        }
    }
    Ok(problem_of(frontmatter, path, scope, |f| folders.contains(f)))
}

/// Whether a live skill of the source sits inside the folder `path` (whose
/// skills a skill at `path` would nest, or unnest when it goes).
pub(super) fn has_skills_under(conn: &Connection, source_id: SourceId, path: &str) -> Result<bool> {
    let (low, high) = if path.is_empty() {
        (String::new(), "\u{10FFFF}".to_string())
    } else {
        (format!("{path}/"), format!("{path}0"))
    };
    conn.prepare_cached(
        "SELECT EXISTS (SELECT 1 FROM artifacts
             WHERE source_id = ?1 AND kind = 'skill' AND path > ?2 AND path < ?3 AND path <> ?4
               AND removed_commit_id IS NULL)",
    )
    .map_err(db_error)?
    .query_row(params![source_id, low, high, path], |r| r.get(0))
    .map_err(db_error)
}

/// Counts the skills of every source without a stored tally (a catalog from
/// before V11), in one transaction.
pub(super) fn tally_uncounted(conn: &mut Connection) -> Result<()> {
    let tx = conn.transaction().map_err(db_error)?;
    let sources = tx
        .prepare("SELECT id, scope_path FROM sources WHERE skill_census IS NULL")
        .map_err(db_error)?
        .query_map([], |r| Ok((r.get::<_, SourceId>(0)?, r.get::<_, String>(1)?)))
        .map_err(db_error)?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(db_error)?;
    for (id, scope) in sources {
        store_tally(&tx, id, &full_tally(&tx, id, &scope)?)?;
    }
    tx.commit().map_err(db_error)
}
