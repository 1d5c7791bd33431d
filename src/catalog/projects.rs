//! The project's own artifacts and the recorded state of its tree (V10): loading
//! what the last refresh saw, writing a refresh in one transaction, and the
//! keyset-paged candidate listing over them. Project rows are not in the search
//! index and do not bump the catalog generation.

use rusqlite::{OptionalExtension, params};

use super::ProjectId;
use super::{Catalog, db_error, now_timestamp};
use crate::error::Result;
use crate::project::tree::{FileStat, Recorded, is_ignore_file};
use crate::scan::ArtifactKind;

/// One of a project's own artifacts as the catalog keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectArtifactRow {
    /// Kind.
    pub kind: ArtifactKind,
    /// Path relative to the project root: the folder of a skill, the file otherwise.
    pub path: String,
    /// Display name.
    pub name: String,
    /// One-line description.
    pub description: Option<String>,
    /// The file its name and text come from, relative to the root.
    pub main_file: String,
    /// A skill with vendor agent metadata.
    pub has_vendor_agent: bool,
}

/// What one refresh changes, written in one transaction.
#[derive(Debug, Clone, Default)]
pub struct ProjectChanges {
    /// Folders added or whose mtime moved.
    pub dirs_set: Vec<(String, i64)>,
    /// Folders gone.
    pub dirs_removed: Vec<String>,
    /// Files added or whose stat data moved.
    pub files_set: Vec<(String, FileStat)>,
    /// Files gone.
    pub files_removed: Vec<String>,
    /// Artifacts added or re-read.
    pub artifacts_set: Vec<ProjectArtifactRow>,
    /// Artifacts gone.
    pub artifacts_removed: Vec<(ArtifactKind, String)>,
}

impl ProjectChanges {
    /// Whether the refresh found nothing to write.
    pub fn is_empty(&self) -> bool {
        self.dirs_set.is_empty()
            && self.dirs_removed.is_empty()
            && self.files_set.is_empty()
            && self.files_removed.is_empty()
            && self.artifacts_set.is_empty()
            && self.artifacts_removed.is_empty()
    }
}

/// Which of a project's artifacts a listing shows.
#[derive(Debug, Clone, Default)]
pub struct ProjectFilter<'a> {
    /// Only this kind.
    pub kind: Option<ArtifactKind>,
    /// Leave out those a package made from the project (recorded under this root) holds.
    pub packaged_root: Option<&'a str>,
    /// Leave out those these sources (the project registered as a source) already list.
    pub shadow_sources: &'a [i64],
    /// Leave out aam's own deployed copies: those whose main file an install
    /// into the project at this root recorded.
    pub installed_root: Option<&'a str>,
}

fn artifact_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ProjectArtifactRow> {
    Ok(ProjectArtifactRow {
        kind: super::artifacts::kind_from_sql(&r.get::<_, String>(0)?),
        path: r.get(1)?,
        name: r.get(2)?,
        description: r.get(3)?,
        main_file: r.get(4)?,
        has_vendor_agent: r.get(5)?,
    })
}

fn file_entry(r: &rusqlite::Row<'_>) -> rusqlite::Result<(String, Recorded)> {
    Ok((
        r.get(0)?,
        Recorded::File(FileStat {
            size: r.get::<_, i64>(1)? as u64,
            mtime_ns: r.get(2)?,
            inode: r.get::<_, i64>(3)? as u64,
            ctime_ns: r.get(4)?,
        }),
    ))
}

impl Catalog {
    /// The recorded files of project `id` whose stat data a refresh checks:
    /// its artifacts' main files and its ignore files (other files count by
    /// their paths, which their folders' mtimes tell).
    pub fn project_checked_files(&self, id: ProjectId) -> Result<Vec<(String, Recorded)>> {
        let mut checked = Vec::new();
        // The main files and every recorded file, both in path order, merged:
        // two ordered scans, where matching each file against the main files
        // in SQL probed an index (or built a temporary table) per row.
        let mut mains = self
            .conn
            .prepare_cached("SELECT main_file FROM project_artifacts WHERE project_id = ?1 ORDER BY main_file")
            .map_err(db_error)?;
        let mains: Vec<String> = mains
            .query_map([id], |r| r.get(0))
            .map_err(db_error)?
            .collect::<rusqlite::Result<_>>()
            .map_err(db_error)?;
        let mut files = self
            .conn
            .prepare_cached(
                "SELECT path, size, mtime_ns, inode, ctime_ns FROM project_files WHERE project_id = ?1 ORDER BY path",
            )
            .map_err(db_error)?;
        let mut next_main = mains.iter().peekable();
        for row in files.query_map([id], file_entry).map_err(db_error)? {
            let (path, recorded) = row.map_err(db_error)?;
            while next_main.next_if(|main| main.as_str() < path.as_str()).is_some() {}
            let is_main = next_main.next_if(|main| **main == path).is_some();
            if is_main || is_ignore_file(&path) {
                checked.push((path, recorded));
            }
        }
        Ok(checked)
    }

    /// The row id and version of the project at `root` (canonical), if it was
    /// ever refreshed: one indexed lookup, what a watched call compares.
    pub fn project_head(&self, root: &str) -> Result<Option<(ProjectId, i64)>> {
        self.conn
            .query_row("SELECT id, version FROM projects WHERE root = ?1", [root], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()
            .map_err(db_error)
    }

    /// Every recorded folder of project `id` with its mtime, in no particular order.
    pub fn project_dir_entries(&self, id: ProjectId) -> Result<Vec<(String, Recorded)>> {
        let mut entries = Vec::new();
        self.project_dirs(id, &mut entries)?;
        Ok(entries)
    }

    /// Every recorded folder of project `id`, in no particular order.
    pub fn project_dir_paths(&self, id: ProjectId) -> Result<Vec<String>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT path FROM project_dirs WHERE project_id = ?1")
            .map_err(db_error)?;
        let rows = stmt.query_map([id], |r| r.get(0)).map_err(db_error)?;
        rows.collect::<rusqlite::Result<_>>().map_err(db_error)
    }

    /// Every recorded folder and file of project `id`, in no particular order.
    pub fn project_entries(&self, id: ProjectId) -> Result<Vec<(String, Recorded)>> {
        let mut entries = Vec::new();
        self.project_dirs(id, &mut entries)?;
        let mut stmt = self
            .conn
            .prepare_cached("SELECT path, size, mtime_ns, inode, ctime_ns FROM project_files WHERE project_id = ?1")
            .map_err(db_error)?;
        let rows = stmt.query_map([id], file_entry).map_err(db_error)?;
        for row in rows {
            entries.push(row.map_err(db_error)?);
        }
        Ok(entries)
    }

    /// The recorded entries of project `id` in the folder `dir` (`""` is the
    /// root): the folder itself and the folders and files directly in it,
    /// found by a range of the primary keys (a folder's descendants are read
    /// and skipped, so a shallow folder costs little).
    pub fn project_entries_in(&self, id: ProjectId, dir: &str) -> Result<Vec<(String, Recorded)>> {
        // Every path below `dir` sorts in [`dir/`, `dir0`) ('0' follows '/').
        let (from, to) = if dir.is_empty() {
            (String::new(), "\u{10FFFF}".to_string())
        } else {
            (format!("{dir}/"), format!("{dir}0"))
        };
        let mut entries = Vec::new();
        let itself: Option<i64> = self
            .conn
            .prepare_cached("SELECT mtime_ns FROM project_dirs WHERE project_id = ?1 AND path = ?2")
            .map_err(db_error)?
            .query_row(params![id, dir], |r| r.get(0))
            .optional()
            .map_err(db_error)?;
        entries.extend(itself.map(|mtime| (dir.to_string(), Recorded::Dir(mtime))));
        let direct = |path: &str| path.len() > from.len() && !path[from.len()..].contains('/');
        self.project_entries_between(id, (&from, &to), direct, &mut entries)?;
        Ok(entries)
    }

    /// The recorded folder `dir` of project `id` and its entries named
    /// `names` (each looked up by its key), in path order.
    pub fn project_entries_named(
        &self,
        id: ProjectId,
        dir: &str,
        names: &std::collections::BTreeSet<String>,
    ) -> Result<Vec<(String, Recorded)>> {
        let mut folder = self
            .conn
            .prepare_cached("SELECT mtime_ns FROM project_dirs WHERE project_id = ?1 AND path = ?2")
            .map_err(db_error)?;
        let mut file = self
            .conn
            .prepare_cached(
                "SELECT path, size, mtime_ns, inode, ctime_ns FROM project_files WHERE project_id = ?1 AND path = ?2",
            )
            .map_err(db_error)?;
        let mut entries = Vec::new();
        let children = names.iter().map(|name| match dir {
            "" => name.clone(),
            _ => format!("{dir}/{name}"),
        });
        for (path, is_child) in std::iter::once((dir.to_string(), false)).chain(children.map(|p| (p, true))) {
            let mtime: Option<i64> = folder
                .query_row(params![id, path], |r| r.get(0))
                .optional()
                .map_err(db_error)?;
            if is_child
                && let Some(found) = file
                    .query_row(params![id, path], file_entry)
                    .optional()
                    .map_err(db_error)?
            {
                entries.push(found);
            }
            entries.extend(mtime.map(|mtime| (path, Recorded::Dir(mtime))));
        }
        entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        Ok(entries)
    }

    /// The recorded folders and files of project `id` at or below `region` (a
    /// folder or a file relative to the root, not `""`), by a range of the
    /// primary keys: a region costs what it holds.
    pub fn project_entries_within(&self, id: ProjectId, region: &str) -> Result<Vec<(String, Recorded)>> {
        // `region` up to `region0` holds `region/...` ('0' follows '/'), and
        // names such as `region-b` that are left out below.
        let within = |path: &str| {
            path.strip_prefix(region)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        };
        let mut entries = Vec::new();
        self.project_entries_between(id, (region, &format!("{region}0")), within, &mut entries)?;
        Ok(entries)
    }

    /// Adds to `out` the recorded folders, then files, of project `id` whose
    /// paths lie in `[from, to)` and that `keep` takes. Each path is looked at
    /// in place and copied only when it is kept: a range can hold many more
    /// rows than the caller wants (a wide folder's descendants).
    fn project_entries_between(
        &self,
        id: ProjectId,
        (from, to): (&str, &str),
        keep: impl Fn(&str) -> bool,
        out: &mut Vec<(String, Recorded)>,
    ) -> Result<()> {
        let mut dirs = self
            .conn
            .prepare_cached(
                "SELECT path, mtime_ns FROM project_dirs WHERE project_id = ?1 AND path >= ?2 AND path < ?3",
            )
            .map_err(db_error)?;
        let mut rows = dirs.query(params![id, from, to]).map_err(db_error)?;
        while let Some(row) = rows.next().map_err(db_error)? {
            let path = row.get_ref(0).and_then(|v| Ok(v.as_str()?)).map_err(db_error)?;
            if keep(path) {
                out.push((path.to_string(), Recorded::Dir(row.get(1).map_err(db_error)?)));
            }
        }
        let mut files = self
            .conn
            .prepare_cached(
                "SELECT path, size, mtime_ns, inode, ctime_ns FROM project_files
                 WHERE project_id = ?1 AND path >= ?2 AND path < ?3",
            )
            .map_err(db_error)?;
        let mut rows = files.query(params![id, from, to]).map_err(db_error)?;
        while let Some(row) = rows.next().map_err(db_error)? {
            let path = row.get_ref(0).and_then(|v| Ok(v.as_str()?)).map_err(db_error)?;
            if keep(path) {
                out.push(file_entry(row).map_err(db_error)?);
            }
        }
        Ok(())
    }

    /// The recorded skill files (`SKILL.md`, any case) of project `id` directly
    /// in the folder `dir` (`""` is the root): each of the 128 spellings looked
    /// up by its key.
    pub fn project_skill_files_in(&self, id: ProjectId, dir: &str) -> Result<Vec<(String, Recorded)>> {
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        let mut spellings = vec![prefix];
        for c in "skill.md".chars() {
            spellings = spellings
                .into_iter()
                .flat_map(|s| {
                    let (lower, upper) = (c.to_ascii_lowercase(), c.to_ascii_uppercase());
                    let both = if lower == upper {
                        vec![lower]
                    } else {
                        vec![upper, lower]
                    };
                    both.into_iter().map(move |c| format!("{s}{c}"))
                })
                .collect();
        }
        let placeholders = vec!["?"; spellings.len()].join(", ");
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT path, size, mtime_ns, inode, ctime_ns FROM project_files WHERE project_id = ? AND path IN ({placeholders})"
            ))
            .map_err(db_error)?;
        let params = std::iter::once(rusqlite::types::Value::from(id))
            .chain(spellings.into_iter().map(rusqlite::types::Value::Text));
        let rows = stmt
            .query_map(rusqlite::params_from_iter(params), file_entry)
            .map_err(db_error)?;
        rows.collect::<rusqlite::Result<_>>().map_err(db_error)
    }

    fn project_dirs(&self, id: ProjectId, out: &mut Vec<(String, Recorded)>) -> Result<()> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT path, mtime_ns FROM project_dirs WHERE project_id = ?1")
            .map_err(db_error)?;
        let rows = stmt
            .query_map([id], |r| Ok((r.get::<_, String>(0)?, Recorded::Dir(r.get(1)?))))
            .map_err(db_error)?;
        for row in rows {
            out.push(row.map_err(db_error)?);
        }
        Ok(())
    }

    /// Every artifact recorded for project `id`, by kind then path.
    pub fn project_artifacts(&self, id: ProjectId) -> Result<Vec<ProjectArtifactRow>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT kind, path, name, description, main_file, has_vendor_agent FROM project_artifacts
                 WHERE project_id = ?1 ORDER BY kind, path",
            )
            .map_err(db_error)?;
        let rows = stmt.query_map([id], artifact_from_row).map_err(db_error)?;
        rows.collect::<rusqlite::Result<_>>().map_err(db_error)
    }

    /// The artifacts of project `id` at or below one of `regions` (folders or
    /// files relative to the root; `""` is the whole project), by kind then path.
    pub fn project_artifacts_within(&self, id: ProjectId, regions: &[String]) -> Result<Vec<ProjectArtifactRow>> {
        if regions.iter().any(String::is_empty) {
            return self.project_artifacts(id);
        }
        // One range of the primary key per kind: `region` up to `region0` holds
        // `region/...` ('0' follows '/'), and names such as `region-b` that are
        // left out below.
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT kind, path, name, description, main_file, has_vendor_agent FROM project_artifacts
                 WHERE project_id = ?1 AND kind IN ('skill', 'agent', 'prompt', 'instruction')
                   AND path >= ?2 AND path < ?3",
            )
            .map_err(db_error)?;
        let mut out = Vec::new();
        for region in regions {
            let rows = stmt
                .query_map(params![id, region, format!("{region}0")], artifact_from_row)
                .map_err(db_error)?;
            for row in rows {
                let row = row.map_err(db_error)?;
                if row.path == *region
                    || row
                        .path
                        .strip_prefix(region.as_str())
                        .is_some_and(|rest| rest.starts_with('/'))
                {
                    out.push(row);
                }
            }
        }
        out.sort_by(|a, b| (a.kind, &a.path).cmp(&(b.kind, &b.path)));
        Ok(out)
    }

    /// The artifacts of project `id` whose main file is one of `main_files`.
    pub fn project_artifacts_with_main(&self, id: ProjectId, main_files: &[&str]) -> Result<Vec<ProjectArtifactRow>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT kind, path, name, description, main_file, has_vendor_agent FROM project_artifacts
                 WHERE project_id = ?1 AND main_file = ?2",
            )
            .map_err(db_error)?;
        let mut out = Vec::new();
        for main_file in main_files {
            let rows = stmt
                .query_map(params![id, main_file], artifact_from_row)
                .map_err(db_error)?;
            for row in rows {
                out.push(row.map_err(db_error)?);
            }
        }
        Ok(out)
    }

    /// Writes one refresh of the project at `root` in one transaction, returning
    /// its row id and the version written. When another process refreshed it
    /// since `expected_version` was read, nothing is written (that refresh is at
    /// least as new as this one) and the version is `None`.
    pub fn record_project(
        &mut self,
        root: &str,
        expected_version: Option<i64>,
        changes: &ProjectChanges,
    ) -> Result<(ProjectId, Option<i64>)> {
        let tx = self.write()?;
        let current: Option<(ProjectId, i64)> = tx
            .query_row("SELECT id, version FROM projects WHERE root = ?1", [root], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()
            .map_err(db_error)?;
        let id = match (current, expected_version) {
            (Some((id, version)), Some(expected)) if version == expected => id,
            (Some((id, _)), _) => return Ok((id, None)),
            (None, _) => tx
                .query_row(
                    "INSERT INTO projects (root, checked_at) VALUES (?1, ?2) RETURNING id",
                    params![root, now_timestamp()],
                    |r| r.get(0),
                )
                .map_err(db_error)?,
        };
        let version: i64 = tx
            .query_row(
                "UPDATE projects SET version = version + 1, checked_at = ?2 WHERE id = ?1 RETURNING version",
                params![id, now_timestamp()],
                |r| r.get(0),
            )
            .map_err(db_error)?;
        {
            let mut stmt = tx
                .prepare_cached("DELETE FROM project_dirs WHERE project_id = ?1 AND path = ?2")
                .map_err(db_error)?;
            for path in &changes.dirs_removed {
                stmt.execute(params![id, path]).map_err(db_error)?;
            }
            let mut stmt = tx
                .prepare_cached("INSERT OR REPLACE INTO project_dirs (project_id, path, mtime_ns) VALUES (?1, ?2, ?3)")
                .map_err(db_error)?;
            for (path, mtime) in &changes.dirs_set {
                stmt.execute(params![id, path, mtime]).map_err(db_error)?;
            }
            let mut stmt = tx
                .prepare_cached("DELETE FROM project_files WHERE project_id = ?1 AND path = ?2")
                .map_err(db_error)?;
            for path in &changes.files_removed {
                stmt.execute(params![id, path]).map_err(db_error)?;
            }
            let mut stmt = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO project_files (project_id, path, size, mtime_ns, inode, ctime_ns)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )
                .map_err(db_error)?;
            for (path, stat) in &changes.files_set {
                stmt.execute(params![
                    id,
                    path,
                    stat.size as i64,
                    stat.mtime_ns,
                    stat.inode as i64,
                    stat.ctime_ns
                ])
                .map_err(db_error)?;
            }
            // Each artifact is updated in place, else inserted: what was inserted
            // and deleted keeps the project's artifact count in step.
            let mut count_change: i64 = 0;
            let mut stmt = tx
                .prepare_cached("DELETE FROM project_artifacts WHERE project_id = ?1 AND kind = ?2 AND path = ?3")
                .map_err(db_error)?;
            for (kind, path) in &changes.artifacts_removed {
                count_change -= stmt.execute(params![id, kind.as_str(), path]).map_err(db_error)? as i64;
            }
            let mut update = tx
                .prepare_cached(
                    "UPDATE project_artifacts SET name = ?4, description = ?5, main_file = ?6, has_vendor_agent = ?7
                     WHERE project_id = ?1 AND kind = ?2 AND path = ?3",
                )
                .map_err(db_error)?;
            let mut insert = tx
                .prepare_cached(
                    "INSERT INTO project_artifacts
                         (project_id, kind, path, name, description, main_file, has_vendor_agent)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                )
                .map_err(db_error)?;
            for a in &changes.artifacts_set {
                let row = params![
                    id,
                    a.kind.as_str(),
                    a.path,
                    a.name,
                    a.description,
                    a.main_file,
                    a.has_vendor_agent
                ];
                if update.execute(row).map_err(db_error)? == 0 {
                    insert.execute(row).map_err(db_error)?;
                    count_change += 1;
                }
            }
            if count_change != 0 {
                tx.execute(
                    "UPDATE projects SET artifact_count = artifact_count + ?2 WHERE id = ?1",
                    params![id, count_change],
                )
                .map_err(db_error)?;
            }
        }
        tx.commit().map_err(db_error)?;
        if !changes.is_empty() {
            self.refresh_statistics();
        }
        Ok((id, Some(version)))
    }

    /// Ids of the local sources whose URL is `url` (the project registered as a source).
    pub fn local_sources_at(&self, url: &str) -> Result<Vec<i64>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT id FROM sources WHERE kind = 'local' AND url = ?1 ORDER BY id")
            .map_err(db_error)?;
        let rows = stmt.query_map([url], |r| r.get(0)).map_err(db_error)?;
        rows.collect::<rusqlite::Result<_>>().map_err(db_error)
    }

    /// One page of project `id`'s artifacts after `(kind, path)` in `(kind, path)`
    /// order, read along the primary key: every page costs the same however deep.
    pub fn project_page(
        &self,
        id: ProjectId,
        filter: &ProjectFilter<'_>,
        after: Option<(ArtifactKind, &str)>,
        limit: usize,
    ) -> Result<Vec<ProjectArtifactRow>> {
        let (after_kind, after_path) = after.map_or(("", ""), |(k, p)| (k.as_str(), p));
        let sql = format!(
            "SELECT p.kind, p.path, p.name, p.description, p.main_file, p.has_vendor_agent FROM project_artifacts p
             WHERE p.project_id = ?1 AND (p.kind, p.path) > (?2, ?3){}
             ORDER BY p.kind, p.path LIMIT {limit}",
            filter_sql(filter)
        );
        let mut stmt = self.conn.prepare_cached(&sql).map_err(db_error)?;
        let rows = stmt
            .query_map(
                params![
                    id,
                    after_kind,
                    after_path,
                    filter.kind.map(ArtifactKind::as_str),
                    filter.packaged_root,
                    filter.installed_root
                ],
                artifact_from_row,
            )
            .map_err(db_error)?;
        rows.collect::<rusqlite::Result<_>>().map_err(db_error)
    }

    /// How many artifacts the record of project `id` holds (kept by every refresh).
    pub fn project_artifact_count(&self, id: ProjectId) -> Result<u64> {
        let count: i64 = self
            .conn
            .prepare_cached("SELECT artifact_count FROM projects WHERE id = ?1")
            .map_err(db_error)?
            .query_row([id], |r| r.get(0))
            .map_err(db_error)?;
        Ok(count.max(0) as u64)
    }

    /// How many of project `id`'s artifacts `filter` keeps: the kept count
    /// when nothing is left out, else a count of the rows.
    pub fn project_count(&self, id: ProjectId, filter: &ProjectFilter<'_>) -> Result<u64> {
        // Most projects have no package made from them: the per-row check of
        // the packaged paths is then dropped, which makes the count 3x cheaper.
        let mut filter = filter.clone();
        if let Some(root) = filter.packaged_root
            && !self.packaged_from(root)?
        {
            filter.packaged_root = None;
        }
        if let Some(root) = filter.installed_root
            && !self.installed_into(root)?
        {
            filter.installed_root = None;
        }
        if filter.kind.is_none()
            && filter.packaged_root.is_none()
            && filter.shadow_sources.is_empty()
            && filter.installed_root.is_none()
        {
            return self.project_artifact_count(id);
        }
        let filter = &filter;
        let sql = format!(
            "SELECT COUNT(*) FROM project_artifacts p WHERE p.project_id = ?1 AND ?2 IS NULL AND ?3 IS NULL{}",
            filter_sql(filter)
        );
        let count: i64 = self
            .conn
            .prepare_cached(&sql)
            .map_err(db_error)?
            .query_row(
                params![
                    id,
                    None::<&str>,
                    None::<&str>,
                    filter.kind.map(ArtifactKind::as_str),
                    filter.packaged_root,
                    filter.installed_root
                ],
                |r| r.get(0),
            )
            .map_err(db_error)?;
        Ok(count.max(0) as u64)
    }
}

impl Catalog {
    /// Whether any install into the project at `root` is recorded.
    fn installed_into(&self, root: &str) -> Result<bool> {
        self.conn
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM install_files WHERE project_root = ?1)",
                [root],
                |r| r.get(0),
            )
            .map_err(db_error)
    }

    /// Whether a package made from the project at `root` records any artifact.
    fn packaged_from(&self, root: &str) -> Result<bool> {
        self.conn
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM package_artifacts WHERE project_root = ?1)",
                [root],
                |r| r.get(0),
            )
            .map_err(db_error)
    }
}

/// The conditions of `filter` over `project_artifacts p` (parameters ?4 kind,
/// ?5 packaged root, ?6 installed root).
fn filter_sql(filter: &ProjectFilter<'_>) -> String {
    let mut sql = String::from(" AND (?4 IS NULL OR p.kind = ?4)");
    if filter.packaged_root.is_some() {
        sql.push_str(
            " AND NOT EXISTS (SELECT 1 FROM package_artifacts pa
                 WHERE pa.project_root = ?5 AND pa.kind = p.kind AND pa.path = p.path)",
        );
    } else {
        sql.push_str(" AND ?5 IS NULL");
    }
    if filter.installed_root.is_some() {
        sql.push_str(
            " AND NOT EXISTS (SELECT 1 FROM install_files i
                 WHERE i.project_root = ?6 AND i.path = p.main_file)",
        );
    } else {
        sql.push_str(" AND ?6 IS NULL");
    }
    if !filter.shadow_sources.is_empty() {
        let ids: Vec<String> = filter.shadow_sources.iter().map(i64::to_string).collect();
        sql.push_str(&format!(
            " AND NOT EXISTS (SELECT 1 FROM artifacts a WHERE a.source_id IN ({}) AND a.kind = p.kind
                 AND a.path = p.path AND a.removed_commit_id IS NULL)",
            ids.join(", ")
        ));
    }
    sql
}
