//! Artifact version history: every content an artifact had at the commits the
//! catalog indexed, with the blake3 digests of its files (written by the index
//! and update transactions in `artifacts`), and the lookups `aam inventory`
//! finds a hand-made copy's origin with.

use rusqlite::params;

use super::{Catalog, db_error};
use crate::error::Result;
use crate::scan::ArtifactKind;

/// One recorded version of a source artifact, with where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArtifactVersion {
    /// Row id.
    pub id: i64,
    /// Source name.
    pub source: String,
    /// The source's repository URL (credential-free).
    pub source_url: String,
    /// Artifact kind.
    pub kind: ArtifactKind,
    /// Repository path.
    pub path: String,
    /// Display name (as of the artifact's last index).
    pub name: String,
    /// The artifact's content digest at this version.
    pub content_digest: String,
    /// Distinct file digests it holds.
    pub file_count: u64,
    /// The first indexed commit with this content (hex).
    pub commit: String,
    /// That commit's time, RFC 3339.
    pub committed_at: Option<String>,
    /// The commit that changed or removed it, `None` while it is current.
    pub replaced_commit: Option<String>,
    /// Whether the artifact still exists at the source's head.
    pub live: bool,
    /// Indexed commits of the source since it was replaced (0 when current).
    pub behind_commits: u64,
    /// The source's indexed head commit (hex).
    pub head_commit: Option<String>,
}

impl Catalog {
    /// Ids of the versions holding a file with digest `blake3`, at most `limit`.
    pub fn versions_with_file(&self, blake3: &str, limit: usize) -> Result<Vec<i64>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT version_id FROM artifact_version_files WHERE blake3 = ?1 LIMIT ?2")
            .map_err(db_error)?;
        let rows = stmt
            .query_map(params![blake3, limit as i64], |r| r.get(0))
            .map_err(db_error)?;
        rows.collect::<rusqlite::Result<_>>().map_err(db_error)
    }

    /// The distinct file digests of a version.
    pub fn version_digests(&self, id: i64) -> Result<Vec<String>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT blake3 FROM artifact_version_files WHERE version_id = ?1")
            .map_err(db_error)?;
        let rows = stmt.query_map([id], |r| r.get(0)).map_err(db_error)?;
        rows.collect::<rusqlite::Result<_>>().map_err(db_error)
    }

    /// One version, with its source, commits and how far behind the head it is.
    pub fn artifact_version(&self, id: i64) -> Result<ArtifactVersion> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT v.id, s.name, s.url, a.kind, a.path, a.name, v.content_digest, v.file_count,
                        fc.sha, fc.committed_at, rc.sha, a.removed_commit_id IS NULL, h.sha,
                        CASE WHEN v.replaced_commit_id IS NULL THEN 0 ELSE
                          (SELECT count(*) FROM commits c WHERE c.source_id = a.source_id AND c.id >= v.replaced_commit_id)
                        END
                 FROM artifact_versions v
                 JOIN artifacts a ON a.id = v.artifact_id
                 JOIN sources s ON s.id = a.source_id
                 JOIN commits fc ON fc.id = v.first_commit_id
                 LEFT JOIN commits rc ON rc.id = v.replaced_commit_id
                 LEFT JOIN commits h ON h.id = s.head_commit_id
                 WHERE v.id = ?1",
            )
            .map_err(db_error)?;
        stmt.query_row([id], |r| {
            let kind: String = r.get(3)?;
            Ok(ArtifactVersion {
                id: r.get(0)?,
                source: r.get(1)?,
                source_url: r.get(2)?,
                kind: ArtifactKind::parse(&kind).unwrap_or(ArtifactKind::Skill),
                path: r.get(4)?,
                name: r.get(5)?,
                content_digest: r.get(6)?,
                file_count: r.get::<_, i64>(7)? as u64,
                commit: r.get(8)?,
                committed_at: r.get(9)?,
                replaced_commit: r.get(10)?,
                live: r.get(11)?,
                head_commit: r.get(12)?,
                behind_commits: r.get::<_, i64>(13)? as u64,
            })
        })
        .map_err(db_error)
    }
}
