//! The queries behind Skills over MCP: live skills of a source in path order
//! (keyset paging), skills at given folders, and a skill's files with their
//! sha256 digests. Which skills are served is decided by `crate::skills`.

use rusqlite::params;

use super::{Catalog, db_error};
use crate::error::Result;

/// A live skill as the skills surface needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillRow {
    /// Artifact row id.
    pub id: i64,
    /// Repository path of its folder.
    pub path: String,
    /// Repository path of its `SKILL.md`.
    pub main_file: String,
    /// Where the main file's bytes live (differs when `SKILL.md` is a symlink).
    pub content_path: String,
    /// Its frontmatter as a JSON object, when it has one.
    pub frontmatter_json: Option<String>,
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

const SKILL_COLUMNS: &str = "id, path, main_file, content_path, frontmatter_json, main_size, main_sha256";

fn skill_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<SkillRow> {
    Ok(SkillRow {
        id: r.get(0)?,
        path: r.get(1)?,
        main_file: r.get(2)?,
        content_path: r.get(3)?,
        frontmatter_json: r.get(4)?,
        main_size: r.get::<_, i64>(5)? as u64,
        main_sha256: r.get(6)?,
    })
}

impl Catalog {
    /// Up to `limit` live skills of a source whose path sorts after `after`
    /// (from the first when `None`), in path order: one range of the
    /// `(source_id, kind, path)` index, so a deep page costs what the first does.
    pub fn skills_after(&self, source_id: i64, after: Option<&str>, limit: usize) -> Result<Vec<SkillRow>> {
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
    pub fn skills_at(&self, source_id: i64, paths: &[String]) -> Result<Vec<SkillRow>> {
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
                .query_map(params![source_id, path], skill_from_row)
                .map_err(db_error)?;
            for row in rows {
                found.push(row.map_err(db_error)?);
            }
        }
        Ok(found)
    }

    /// Every recorded file of a skill, by path.
    pub fn skill_files(&self, artifact_id: i64) -> Result<Vec<SkillFile>> {
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
