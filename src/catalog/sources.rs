//! Source rows: registration, listing, removal and remembered defaults.

use rusqlite::{OptionalExtension, Row, params};

use super::SourceId;
use super::{Catalog, bump_generation, db_error, now_timestamp};
use crate::error::{Error, ErrorCode, Result};
use crate::sources::spec::SourceKind;

/// A registered source as the catalog knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceRecord {
    /// Row id.
    pub id: SourceId,
    /// Unique name.
    pub name: String,
    /// Remote or local.
    pub kind: SourceKind,
    /// Credential-free URL.
    pub url: String,
    /// Folder under `cache/git/` holding its objects.
    pub cache_key: String,
    /// Requested ref; `None` follows the remote's default branch.
    pub ref_name: Option<String>,
    /// What the ref resolved to at the last fetch (branch name for the default).
    pub resolved_ref: Option<String>,
    /// Folder the scan is limited to (`""` = whole tree).
    pub scope_path: String,
    /// One of the built-in default sources.
    pub is_default: bool,
    /// Commit the catalog reflects, `None` until first fetched.
    pub head_commit: Option<String>,
    /// Row id of that commit.
    pub head_commit_id: Option<i64>,
    /// When it was registered.
    pub added_at: String,
    /// When it was last fetched.
    pub fetched_at: Option<String>,
    /// Live artifacts indexed from it.
    pub artifact_count: i64,
}

/// What is known about a source before its first index.
#[derive(Debug, Clone)]
pub struct NewSource<'a> {
    /// Unique name.
    pub name: &'a str,
    /// Remote or local.
    pub kind: SourceKind,
    /// Credential-free URL.
    pub url: &'a str,
    /// Folder under `cache/git/`.
    pub cache_key: &'a str,
    /// Requested ref.
    pub ref_name: Option<&'a str>,
    /// Scope folder.
    pub scope_path: &'a str,
    /// One of the built-in defaults.
    pub is_default: bool,
}

const SOURCE_COLUMNS: &str = "s.id, s.name, s.kind, s.url, s.cache_key, s.ref_name, s.resolved_ref, s.scope_path, \
     s.is_default, c.sha, s.head_commit_id, s.added_at, s.fetched_at, \
     s.skill_count + s.agent_count + s.prompt_count + s.instruction_count";

impl SourceRecord {
    /// The folder of a local repository (`None` for a remote).
    pub fn local_folder(&self) -> Option<&std::path::Path> {
        match self.kind {
            SourceKind::Local => self.url.strip_prefix("file://").map(std::path::Path::new),
            SourceKind::Git => None,
        }
    }
}

impl rusqlite::types::FromSql for SourceKind {
    fn column_result(value: rusqlite::types::ValueRef<'_>) -> rusqlite::types::FromSqlResult<Self> {
        match value.as_str()? {
            "git" => Ok(SourceKind::Git),
            "local" => Ok(SourceKind::Local),
            _ => Err(rusqlite::types::FromSqlError::InvalidType),
        }
    }
}

fn source_from_row(row: &Row<'_>) -> rusqlite::Result<SourceRecord> {
    Ok(SourceRecord {
        id: row.get(0)?,
        name: row.get(1)?,
        kind: row.get(2)?,
        url: row.get(3)?,
        cache_key: row.get(4)?,
        ref_name: row.get(5)?,
        resolved_ref: row.get(6)?,
        scope_path: row.get(7)?,
        is_default: row.get(8)?,
        head_commit: row.get(9)?,
        head_commit_id: row.get(10)?,
        added_at: row.get(11)?,
        fetched_at: row.get(12)?,
        artifact_count: row.get(13)?,
    })
}

impl Catalog {
    /// Every source, by name.
    pub fn list_sources(&self) -> Result<Vec<SourceRecord>> {
        let sql = format!(
            "SELECT {SOURCE_COLUMNS} FROM sources s LEFT JOIN commits c ON c.id = s.head_commit_id ORDER BY s.name"
        );
        let mut stmt = self.conn.prepare_cached(&sql).map_err(db_error)?;
        let rows = stmt.query_map([], source_from_row).map_err(db_error)?;
        rows.collect::<rusqlite::Result<_>>().map_err(db_error)
    }

    /// The source called `name`, if any.
    pub fn find_source(&self, name: &str) -> Result<Option<SourceRecord>> {
        let sql = format!(
            "SELECT {SOURCE_COLUMNS} FROM sources s LEFT JOIN commits c ON c.id = s.head_commit_id WHERE s.name = ?1"
        );
        let mut stmt = self.conn.prepare_cached(&sql).map_err(db_error)?;
        stmt.query_row([name], source_from_row).optional().map_err(db_error)
    }

    /// The source called `name`, or `AAM_SOURCE_NOT_FOUND` naming the registered ones.
    pub fn source_named(&self, name: &str) -> Result<SourceRecord> {
        if let Some(source) = self.find_source(name)? {
            return Ok(source);
        }
        let names: Vec<String> = self.list_sources()?.into_iter().map(|s| s.name).collect();
        let hint = if names.is_empty() {
            "no sources are registered; add one with `aam source add <spec>`".to_string()
        } else if let Some(close) = crate::error::closest_name(name, names.iter().map(String::as_str)) {
            format!("did you mean `{close}`? registered sources: {}", quoted_list(&names))
        } else {
            format!("registered sources: {}; see `aam source list`", quoted_list(&names))
        };
        Err(Error::new(ErrorCode::SourceNotFound, format!("no source named `{name}`")).with_hint(hint))
    }

    /// Registers a source without indexing it (built-in defaults are added this
    /// way); a default registered again is no longer remembered as dismissed.
    pub fn insert_unfetched_source(&mut self, source: &NewSource<'_>) -> Result<SourceId> {
        let tx = self.write()?;
        let id = insert_source(&tx, source)?;
        tx.execute("DELETE FROM dismissed_defaults WHERE name = ?1", [source.name])
            .map_err(db_error)?;
        tx.commit().map_err(db_error)?;
        Ok(id)
    }

    /// Deletes a source with its commits, artifacts and events, returning the new
    /// generation. A default source is remembered as dismissed so it is never
    /// re-added silently.
    pub fn remove_source(&mut self, id: SourceId) -> Result<u64> {
        let tx = self.write()?;
        let (name, is_default): (String, bool) = tx
            .query_row("SELECT name, is_default FROM sources WHERE id = ?1", [id], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .map_err(db_error)?;
        if is_default {
            tx.execute(
                "INSERT OR REPLACE INTO dismissed_defaults (name, dismissed_at) VALUES (?1, ?2)",
                params![name, now_timestamp()],
            )
            .map_err(db_error)?;
        }
        tx.execute("UPDATE sources SET head_commit_id = NULL WHERE id = ?1", [id])
            .map_err(db_error)?;
        super::versions::delete_source_version_files(&tx, id)?;
        super::packages::unlink_members_of(&tx, id)?;
        tx.execute("DELETE FROM sources WHERE id = ?1", [id])
            .map_err(db_error)?;
        let generation = bump_generation(&tx)?;
        tx.commit().map_err(db_error)?;
        self.refresh_statistics();
        Ok(generation)
    }

    /// Whether any source other than `except_id` keeps its objects under
    /// `cache_key`: in that cache, or in one inside its folder (a local
    /// repository nested in another), which deleting the folder would take too.
    pub fn cache_shared(&self, cache_key: &str, except_id: SourceId) -> Result<bool> {
        self.conn
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM sources WHERE id <> ?2
                     AND (cache_key = ?1 OR substr(cache_key, 1, length(?1) + 1) = ?1 || '/'))",
                params![cache_key, except_id],
                |r| r.get(0),
            )
            .map_err(db_error)
    }

    /// The installs on this machine made from the source's artifacts, as
    /// (project root, package), in order.
    pub fn installs_from_source(&self, id: SourceId) -> Result<Vec<(String, String)>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT DISTINCT i.project_root, p.name FROM installs i
                 JOIN packages p ON p.id = i.package_id
                 JOIN package_artifacts pa ON pa.package_id = p.id
                 JOIN artifacts a ON a.id = pa.artifact_id
                 WHERE a.source_id = ?1 ORDER BY 1, 2",
            )
            .map_err(db_error)?;
        let rows = stmt.query_map([id], |r| Ok((r.get(0)?, r.get(1)?))).map_err(db_error)?;
        rows.collect::<rusqlite::Result<_>>().map_err(db_error)
    }

    /// Live artifact counts of a source: skills, agents, prompts, instructions.
    pub fn source_counts_by_kind(&self, id: SourceId) -> Result<[u64; 4]> {
        self.conn
            .query_row(
                "SELECT skill_count, agent_count, prompt_count, instruction_count FROM sources WHERE id = ?1",
                [id],
                |r| {
                    let count = |i: usize| r.get::<_, i64>(i).map(|n| n.max(0) as u64);
                    Ok([count(0)?, count(1)?, count(2)?, count(3)?])
                },
            )
            .map_err(db_error)
    }

    /// Names of built-in defaults the user removed.
    pub fn dismissed_defaults(&self) -> Result<Vec<String>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT name FROM dismissed_defaults ORDER BY name")
            .map_err(db_error)?;
        let rows = stmt.query_map([], |r| r.get(0)).map_err(db_error)?;
        rows.collect::<rusqlite::Result<_>>().map_err(db_error)
    }
}

/// Inserts a source row inside an open transaction.
pub(super) fn insert_source(tx: &rusqlite::Transaction<'_>, source: &NewSource<'_>) -> Result<SourceId> {
    let inserted = tx.execute(
        "INSERT INTO sources (name, kind, url, cache_key, ref_name, scope_path, is_default, added_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            source.name,
            source.kind.as_str(),
            source.url,
            source.cache_key,
            source.ref_name,
            source.scope_path,
            source.is_default,
            now_timestamp()
        ],
    );
    match inserted {
        Ok(_) => Ok(SourceId(tx.last_insert_rowid())),
        // Another process registered the same name since the caller checked.
        Err(e) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::ConstraintViolation) => Err(Error::new(
            ErrorCode::SourceAlreadyExists,
            format!("a source named `{}` already exists", source.name),
        )
        .with_hint(format!("run `aam source update {}` to fetch it again", source.name))),
        Err(e) => Err(db_error(e)),
    }
}

/// Up to ten names, quoted, with how many more there are.
fn quoted_list(names: &[String]) -> String {
    const SHOWN: usize = 10;
    let mut text = names
        .iter()
        .take(SHOWN)
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > SHOWN {
        text.push_str(&format!(" and {} more", names.len() - SHOWN));
    }
    text
}
