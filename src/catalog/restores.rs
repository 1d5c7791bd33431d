//! Commits lock restores took from the git cache, and the projects whose lock
//! files named them (V23): what tells a restored commit still needed from one
//! no lock file names any more (see `health::catalog::review_restores`).

use rusqlite::params;

use super::{Catalog, db_error, now_timestamp};
use crate::error::Result;

/// One project's restore of a commit from a cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestoredCommit {
    /// The cache it was taken from (`cache/git/<cache_key>`).
    pub cache_key: String,
    /// The commit, 40 hex digits.
    pub commit: String,
    /// The root of the project whose lock file named it.
    pub project_root: String,
}

impl Catalog {
    /// Records that a restore in `project_root` took `commit` from the cache
    /// `cache_key` (again: its time moves).
    pub fn record_restored_commit(&self, cache_key: &str, commit: &str, project_root: &str) -> Result<()> {
        self.conn
            .prepare_cached(
                "INSERT INTO restored_commits (cache_key, commit_id, project_root, used_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (cache_key, commit_id, project_root) DO UPDATE SET used_at = excluded.used_at",
            )
            .and_then(|mut stmt| stmt.execute(params![cache_key, commit, project_root, now_timestamp()]))
            .map_err(db_error)?;
        Ok(())
    }

    /// Every project's record of every commit restores took, by cache and commit.
    pub fn restored_commits(&self) -> Result<Vec<RestoredCommit>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT cache_key, commit_id, project_root FROM restored_commits
                 ORDER BY cache_key, commit_id, project_root",
            )
            .map_err(db_error)?;
        let rows = stmt
            .query_map([], |r| {
                Ok(RestoredCommit {
                    cache_key: r.get(0)?,
                    commit: r.get(1)?,
                    project_root: r.get(2)?,
                })
            })
            .map_err(db_error)?;
        rows.collect::<rusqlite::Result<_>>().map_err(db_error)
    }

    /// Every project an install recorded a source commit for, with that
    /// commit (restores of an aam older than the record of restores are there).
    pub fn installed_commits(&self) -> Result<Vec<(String, String)>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT DISTINCT project_root, source_commit FROM installs WHERE source_commit IS NOT NULL")
            .map_err(db_error)?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).map_err(db_error)?;
        rows.collect::<rusqlite::Result<_>>().map_err(db_error)
    }

    /// Forgets that the project at `project_root` restored `commit` from the
    /// cache `cache_key` (its lock file names it no more).
    pub fn forget_restored_row(&self, row: &RestoredCommit) -> Result<()> {
        self.conn
            .prepare_cached(
                "DELETE FROM restored_commits WHERE cache_key = ?1 AND commit_id = ?2 AND project_root = ?3",
            )
            .and_then(|mut stmt| stmt.execute(params![row.cache_key, row.commit, row.project_root]))
            .map_err(db_error)?;
        Ok(())
    }

    /// Forgets every record of `commit` in the cache `cache_key` (its ref is
    /// deleted, or was never there).
    pub fn forget_restored_commit(&self, cache_key: &str, commit: &str) -> Result<()> {
        self.conn
            .prepare_cached("DELETE FROM restored_commits WHERE cache_key = ?1 AND commit_id = ?2")
            .and_then(|mut stmt| stmt.execute(params![cache_key, commit]))
            .map_err(db_error)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_restore_is_recorded_once_per_project_and_forgotten_with_its_commit() {
        let dir = tempfile::tempdir().unwrap();
        let catalog = Catalog::open(&dir.path().join("catalog.db")).unwrap();
        let a = "a".repeat(40);
        let b = "b".repeat(40);
        catalog.record_restored_commit("local/repo", &a, "/p1").unwrap();
        catalog.record_restored_commit("local/repo", &a, "/p1").unwrap();
        catalog.record_restored_commit("local/repo", &a, "/p2").unwrap();
        catalog.record_restored_commit("local/repo", &b, "/p1").unwrap();
        catalog.record_restored_commit("local/other", &a, "/p1").unwrap();
        let found = |key: &str| -> Vec<(String, String)> {
            let rows = catalog.restored_commits().unwrap().into_iter();
            rows.filter(|r| r.cache_key == key)
                .map(|r| (r.commit, r.project_root))
                .collect()
        };
        assert_eq!(
            found("local/repo"),
            [
                (a.clone(), "/p1".into()),
                (a.clone(), "/p2".into()),
                (b.clone(), "/p1".into())
            ]
        );
        catalog.forget_restored_commit("local/repo", &a).unwrap();
        assert_eq!(found("local/repo"), [(b, "/p1".into())]);
        assert_eq!(found("local/other"), [(a, "/p1".into())]);
    }
}
