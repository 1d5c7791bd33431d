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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::test_data::commit;
    use crate::catalog::{FileRecord, IndexedArtifact, LiveArtifact, SourceChanges};
    use crate::sources::git::FileMode;

    /// The blake3 digest of the bytes `content`, as the catalog records it.
    fn digest(content: &str) -> String {
        blake3::hash(content.as_bytes()).to_hex().to_string()
    }

    fn file(path: &str, content: &str, mode: FileMode) -> FileRecord {
        FileRecord {
            path: path.into(),
            mode,
            git_blob: "b".repeat(40),
            blake3: digest(content),
            sha256: None,
            size: 1,
            findings: Vec::new(),
        }
    }

    fn skill(digest: &str, files: Vec<FileRecord>) -> IndexedArtifact {
        IndexedArtifact {
            kind: ArtifactKind::Skill,
            path: "skills/pdf".into(),
            name: "pdf".into(),
            description: None,
            platform: None,
            main_file: "skills/pdf/SKILL.md".into(),
            content_path: "skills/pdf/SKILL.md".into(),
            link_paths: Vec::new(),
            frontmatter_json: None,
            has_vendor_agent: false,
            warnings: Vec::new(),
            content_digest: digest.into(),
            main_size: 1,
            main_sha256: None,
            text: String::new(),
            truncated: false,
            files,
        }
    }

    #[test]
    fn every_version_is_kept_with_its_digests_and_how_far_behind_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let mut catalog = Catalog::open(&dir.path().join("c.db")).unwrap();
        let source = crate::catalog::test_data::source("up");
        let v1 = skill(
            "d1",
            vec![
                file("skills/pdf/SKILL.md", "one", FileMode::File),
                file("skills/pdf/run.sh", "script", FileMode::Executable),
                file("skills/pdf/link", "target", FileMode::Symlink),
            ],
        );
        let (id, _) = catalog
            .add_indexed_source(&source, None, &commit('a'), std::iter::once(Ok(v1)), |_| {})
            .unwrap();
        let [old] = catalog.versions_with_file(&digest("one"), 10).unwrap()[..] else {
            panic!("one version holds `one`")
        };
        assert!(
            catalog.versions_with_file(&digest("target"), 10).unwrap().is_empty(),
            "links are left out"
        );
        let found = catalog.artifact_version(old).unwrap();
        assert_eq!((found.file_count, found.behind_commits), (2, 0));
        assert_eq!((found.live, found.replaced_commit.as_deref()), (true, None));

        let v2 = skill(
            "d2",
            vec![
                file("skills/pdf/SKILL.md", "two", FileMode::File),
                file("skills/pdf/run.sh", "script", FileMode::Executable),
            ],
        );
        let artifact_id: crate::catalog::ArtifactId = catalog
            .conn
            .query_row("SELECT id FROM artifacts", [], |r| r.get(0))
            .unwrap();
        let changes = SourceChanges {
            modified: vec![(artifact_id, v2)],
            ..Default::default()
        };
        catalog
            .record_update(id, Some(&commit('a').sha), None, &commit('b'), &changes)
            .unwrap();
        catalog
            .record_update(
                id,
                Some(&commit('b').sha),
                None,
                &commit('c'),
                &SourceChanges::default(),
            )
            .unwrap();
        let before = catalog.artifact_version(old).unwrap();
        assert_eq!(before.commit, commit('a').sha);
        assert_eq!(before.replaced_commit, Some(commit('b').sha));
        assert_eq!(before.behind_commits, 2, "b and c came after it");
        assert_eq!(catalog.versions_with_file(&digest("script"), 10).unwrap().len(), 2);
        let [new] = catalog.versions_with_file(&digest("two"), 10).unwrap()[..] else {
            panic!("one version holds `two`")
        };
        assert_eq!(catalog.artifact_version(new).unwrap().commit, commit('b').sha);

        let removed = SourceChanges {
            removed: vec![LiveArtifact {
                id: artifact_id,
                kind: ArtifactKind::Skill,
                path: "skills/pdf".into(),
                name: "pdf".into(),
                content_digest: "d2".into(),
            }],
            ..Default::default()
        };
        catalog
            .record_update(id, Some(&commit('c').sha), None, &commit('d'), &removed)
            .unwrap();
        let gone = catalog.artifact_version(new).unwrap();
        assert_eq!((gone.live, gone.behind_commits), (false, 1));
        let mut digests = catalog.version_digests(new).unwrap();
        digests.sort();
        let mut expected = [digest("script"), digest("two")];
        expected.sort();
        assert_eq!(digests, expected);
    }
}
