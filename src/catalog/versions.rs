//! Artifact version history: every content an artifact had at the commits the
//! catalog indexed, with the blake3 digests of its files (written by the index
//! and update transactions in `artifacts`), and the lookups `aam inventory`
//! finds a hand-made copy's origin with.
//!
//! A version keeps its digests itself (`artifact_versions.digests`, a sorted JSON
//! array) and `artifact_version_files` holds one row per (digest, version), the
//! lookup by digest. That table has no index by version and no foreign key (a
//! deleted version would read all of it): whoever deletes versions deletes their
//! rows first, from the digests they keep ([`delete_version_files`]). A lookup
//! row is only believed when its version holds its digest, and `catalog check
//! --full` compares the two ([`Catalog::digest_row_mismatches`]); the lookup is
//! derived from the versions, so a repair rebuilds it from them.

use rusqlite::{Connection, params};

use super::{Catalog, SourceId, db_error};
use crate::error::{Error, Result};
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

/// Where the digest lookup and the digests the versions keep disagree.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DigestRowMismatches {
    /// Lookup rows of versions that are gone.
    pub rows_of_gone_versions: u64,
    /// Lookup rows of a version that does not keep their digest.
    pub rows_not_kept: u64,
    /// Digests versions keep without their lookup row.
    pub missing_rows: u64,
    /// Versions whose kept digests are damaged (not a list of as many digests
    /// as the version has distinct files): their lookup rows are the only
    /// witness left, and are neither judged nor repaired.
    pub damaged_versions: Vec<i64>,
    /// The versions the mismatched rows name, in id order.
    pub versions: Vec<i64>,
}

impl DigestRowMismatches {
    /// Whether the lookup and the versions agree.
    pub fn is_empty(&self) -> bool {
        self.rows_of_gone_versions == 0
            && self.rows_not_kept == 0
            && self.missing_rows == 0
            && self.damaged_versions.is_empty()
    }
}

/// A version whose kept digests are whole: a list of as many as it has
/// distinct files (`file_count`, written with them).
/// (`CASE`, as SQLite may evaluate the terms of an `AND` in any order, and the
/// JSON functions fail on text that is not JSON.)
const WHOLE: &str = "CASE WHEN json_valid(v.digests)
     THEN json_type(v.digests) = 'array' AND json_array_length(v.digests) = v.file_count ELSE 0 END";

/// The digests whole versions keep, as `v.id, d.value` (a version that is
/// not whole is never handed to `json_each`, which fails on text that is not JSON).
fn kept_digests() -> String {
    format!("FROM (SELECT v.id, v.digests FROM artifact_versions v WHERE {WHOLE}) v, json_each(v.digests) d")
}

impl Catalog {
    /// Ids of the versions holding a file with digest `blake3`, at most `limit`.
    /// A lookup row whose version does not hold the digest is passed over: with
    /// no foreign key, a row some damage left behind could otherwise name a
    /// later version that took its version's id.
    pub fn versions_with_file(&self, blake3: &str, limit: usize) -> Result<Vec<i64>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT f.version_id FROM artifact_version_files f JOIN artifact_versions v ON v.id = f.version_id
                 WHERE f.blake3 = ?1 AND instr(v.digests, '\"' || f.blake3 || '\"') > 0 LIMIT ?2",
            )
            .map_err(db_error)?;
        let rows = stmt
            .query_map(params![blake3, limit as i64], |r| r.get(0))
            .map_err(db_error)?;
        rows.collect::<rusqlite::Result<_>>().map_err(db_error)
    }

    /// The distinct file digests of a version, sorted.
    pub fn version_digests(&self, id: i64) -> Result<Vec<String>> {
        let text: String = self
            .conn
            .prepare_cached("SELECT digests FROM artifact_versions WHERE id = ?1")
            .map_err(db_error)?
            .query_row([id], |r| r.get(0))
            .map_err(db_error)?;
        parse_digests(&text)
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

    /// Compares the digest lookup with the digests each version keeps
    /// (`catalog check --full`), as of one moment (one read transaction, so a
    /// write committing meanwhile is not taken for damage): both read once,
    /// sorted and merged (at 100,000 artifacts about a fifth of a second, where a
    /// lookup per row took 0.6 s).
    pub fn digest_row_mismatches(&self) -> Result<DigestRowMismatches> {
        let tx = self.conn.unchecked_transaction().map_err(db_error)?;
        let pairs = |sql: &str| -> Result<Vec<(i64, String)>> {
            let mut stmt = tx.prepare(sql).map_err(db_error)?;
            let mut pairs: Vec<(i64, String)> = stmt
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(db_error)?
                .collect::<rusqlite::Result<_>>()
                .map_err(db_error)?;
            pairs.sort_unstable();
            pairs.dedup();
            Ok(pairs)
        };
        // Every version, and whether its kept digests are damaged (in id order,
        // which the search of `damaged` below relies on).
        let mut existing = std::collections::HashSet::new();
        let mut damaged = Vec::new();
        let mut stmt = tx
            .prepare(&format!(
                "SELECT v.id, NOT ({WHOLE}) FROM artifact_versions v ORDER BY v.id"
            ))
            .map_err(db_error)?;
        let mut rows = stmt.query([]).map_err(db_error)?;
        while let Some(row) = rows.next().map_err(db_error)? {
            let id: i64 = row.get(0).map_err(db_error)?;
            existing.insert(id);
            if row.get::<_, bool>(1).map_err(db_error)? {
                damaged.push(id);
            }
        }
        drop(rows);
        drop(stmt);
        let lookup = pairs("SELECT version_id, blake3 FROM artifact_version_files")?;
        let kept = pairs(&format!("SELECT v.id, d.value {}", kept_digests()))?;
        drop(tx);
        let mut found = DigestRowMismatches::default();
        let mut versions = std::collections::BTreeSet::new();
        let (mut row, mut held) = (0, 0);
        loop {
            match (lookup.get(row), kept.get(held)) {
                (Some(a), Some(b)) if a == b => {
                    row += 1;
                    held += 1;
                }
                (Some(a), b) if b.is_none_or(|b| a < b) => {
                    row += 1;
                    if damaged.binary_search(&a.0).is_ok() {
                        continue;
                    }
                    match existing.contains(&a.0) {
                        true => found.rows_not_kept += 1,
                        false => found.rows_of_gone_versions += 1,
                    }
                    versions.insert(a.0);
                }
                (_, Some(b)) => {
                    found.missing_rows += 1;
                    versions.insert(b.0);
                    held += 1;
                }
                (_, None) => break,
            }
        }
        found.versions = versions.into_iter().collect();
        found.damaged_versions = damaged;
        Ok(found)
    }

    /// Brings the digest lookup back in step with the digests the versions
    /// keep, in one transaction: deletes the rows of versions that are gone and
    /// the rows a whole version does not keep, adds the rows its digests lack
    /// (in key order). The rows of a version whose digests are damaged stay:
    /// they are all that is left of what it held. Returns the rows deleted and added.
    pub fn rebuild_digest_rows(&mut self) -> Result<(u64, u64)> {
        let tx = self.write()?;
        let gone = tx
            .execute(
                "DELETE FROM artifact_version_files WHERE version_id NOT IN (SELECT id FROM artifact_versions)",
                [],
            )
            .map_err(db_error)?;
        let not_kept = tx
            .execute(
                &format!(
                    "DELETE FROM artifact_version_files WHERE (blake3, version_id) IN (
                       SELECT f.blake3, f.version_id FROM artifact_version_files f
                       JOIN artifact_versions v ON v.id = f.version_id
                       WHERE CASE WHEN {WHOLE}
                         THEN NOT EXISTS (SELECT 1 FROM json_each(v.digests) d WHERE d.value = f.blake3) ELSE 0 END)"
                ),
                [],
            )
            .map_err(db_error)?;
        let added = tx
            .execute(
                &format!(
                    "INSERT OR IGNORE INTO artifact_version_files (version_id, blake3)
                     SELECT v.id, d.value {} ORDER BY d.value, v.id",
                    kept_digests()
                ),
                [],
            )
            .map_err(db_error)?;
        tx.commit().map_err(db_error)?;
        Ok(((gone + not_kept) as u64, added as u64))
    }
}

/// How a version's digests are kept: `digests`, sorted, as a JSON array.
pub(super) fn digests_text<'d>(digests: impl IntoIterator<Item = &'d str>) -> String {
    let mut text = String::from("[");
    for (i, digest) in digests.into_iter().enumerate() {
        if i > 0 {
            text.push(',');
        }
        // Lowercase hex needs no escaping.
        text.push('"');
        text.push_str(digest);
        text.push('"');
    }
    text.push(']');
    text
}

fn parse_digests(text: &str) -> Result<Vec<String>> {
    serde_json::from_str(text).map_err(|e| Error::internal(format!("a version's digests are not a JSON list: {e}")))
}

/// Deletes the `artifact_version_files` rows of the versions `select` returns
/// (`id, digests` rows, for `params`), one by its key each.
fn delete_files_of(conn: &Connection, select: &str, params: impl rusqlite::Params) -> Result<()> {
    let versions: Vec<(i64, String)> = conn
        .prepare_cached(select)
        .map_err(db_error)?
        .query_map(params, |r| Ok((r.get(0)?, r.get(1)?)))
        .map_err(db_error)?
        .collect::<rusqlite::Result<_>>()
        .map_err(db_error)?;
    let mut delete = conn
        .prepare_cached("DELETE FROM artifact_version_files WHERE blake3 = ?1 AND version_id = ?2")
        .map_err(db_error)?;
    for (id, text) in versions {
        for digest in parse_digests(&text)? {
            delete.execute(params![digest, id]).map_err(db_error)?;
        }
    }
    Ok(())
}

/// Deletes the digest rows of one version; call before deleting the version.
pub(super) fn delete_version_files(
    conn: &Connection,
    artifact_id: super::ArtifactId,
    first_commit_id: i64,
) -> Result<()> {
    delete_files_of(
        conn,
        "SELECT id, digests FROM artifact_versions WHERE artifact_id = ?1 AND first_commit_id = ?2",
        params![artifact_id, first_commit_id],
    )
}

/// Deletes the digest rows of every version of a source's artifacts; call before
/// deleting the source (which deletes the versions).
pub(super) fn delete_source_version_files(conn: &Connection, source_id: SourceId) -> Result<()> {
    delete_files_of(
        conn,
        "SELECT v.id, v.digests FROM artifact_versions v JOIN artifacts a ON a.id = v.artifact_id
         WHERE a.source_id = ?1",
        [source_id],
    )
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

    /// A catalog at `path` with the source `up` indexed at commit `a`: one skill
    /// of `files` (content digest `d1`).
    fn catalog_with(path: &std::path::Path, files: Vec<FileRecord>) -> (Catalog, SourceId) {
        let mut catalog = Catalog::open(path).unwrap();
        let source = crate::catalog::test_data::source("up");
        let (id, _) = catalog
            .add_indexed_source(
                &source,
                None,
                &commit('a'),
                std::iter::once(Ok(skill("d1", files))),
                |_| {},
            )
            .unwrap();
        (catalog, id)
    }

    #[test]
    fn every_version_is_kept_with_its_digests_and_how_far_behind_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let (mut catalog, id) = catalog_with(
            &dir.path().join("c.db"),
            vec![
                file("skills/pdf/SKILL.md", "one", FileMode::File),
                file("skills/pdf/run.sh", "script", FileMode::Executable),
                file("skills/pdf/link", "target", FileMode::Symlink),
            ],
        );
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
            .record_update(id, Some(&commit('a').sha), None, &commit('b'), &changes, |_| {})
            .unwrap();
        catalog
            .record_update(
                id,
                Some(&commit('b').sha),
                None,
                &commit('c'),
                &SourceChanges::default(),
                |_| {},
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
            .record_update(id, Some(&commit('c').sha), None, &commit('d'), &removed, |_| {})
            .unwrap();
        let gone = catalog.artifact_version(new).unwrap();
        assert_eq!((gone.live, gone.behind_commits), (false, 1));
        let mut digests = catalog.version_digests(new).unwrap();
        digests.sort();
        let mut expected = [digest("script"), digest("two")];
        expected.sort();
        assert_eq!(digests, expected);
    }

    fn version_file_rows(catalog: &Catalog) -> i64 {
        catalog
            .conn
            .query_row("SELECT count(*) FROM artifact_version_files", [], |r| r.get(0))
            .unwrap()
    }

    /// A version's digest rows go with it: when the artifact is indexed again at
    /// the same commit (its version written anew) and when its source goes. No
    /// foreign key deletes them (the table has no index by version to follow one).
    #[test]
    fn digest_rows_go_with_their_version() {
        let dir = tempfile::tempdir().unwrap();
        let (mut catalog, id) = catalog_with(
            &dir.path().join("c.db"),
            vec![file("skills/pdf/SKILL.md", "one", FileMode::File)],
        );
        let artifact_id: crate::catalog::ArtifactId = catalog
            .conn
            .query_row("SELECT id FROM artifacts", [], |r| r.get(0))
            .unwrap();
        let at_b = |content: &str| SourceChanges {
            modified: vec![(
                artifact_id,
                skill(content, vec![file("skills/pdf/SKILL.md", content, FileMode::File)]),
            )],
            ..Default::default()
        };
        catalog
            .record_update(id, Some(&commit('a').sha), None, &commit('b'), &at_b("two"), |_| {})
            .unwrap();
        assert_eq!(version_file_rows(&catalog), 2);
        // The same commit recorded again with other content: its version is written anew.
        catalog
            .conn
            .execute(
                "UPDATE sources SET head_commit_id = (SELECT id FROM commits WHERE sha = ?1)",
                [commit('a').sha],
            )
            .unwrap();
        catalog
            .record_update(id, Some(&commit('a').sha), None, &commit('b'), &at_b("three"), |_| {})
            .unwrap();
        assert!(catalog.versions_with_file(&digest("two"), 10).unwrap().is_empty());
        let [three] = catalog.versions_with_file(&digest("three"), 10).unwrap()[..] else {
            panic!("one version holds `three`")
        };
        assert_eq!(catalog.version_digests(three).unwrap(), [digest("three")]);
        assert_eq!(version_file_rows(&catalog), 2, "one row each for a and b");
        catalog.remove_source(id).unwrap();
        assert_eq!(version_file_rows(&catalog), 0, "none left behind by the source");
    }

    /// Lookup rows left behind by damage (no foreign key deletes them) are found
    /// and never believed, missing ones are found, and a repair puts the lookup
    /// back as the writes left it; a version whose kept digests are damaged is
    /// named, and its lookup rows, the only witness left, are kept.
    #[test]
    fn a_damaged_digest_lookup_is_found_passed_over_and_repaired() {
        let dir = tempfile::tempdir().unwrap();
        let (mut catalog, _) = catalog_with(
            &dir.path().join("c.db"),
            vec![
                file("skills/pdf/SKILL.md", "one", FileMode::File),
                file("skills/pdf/run.sh", "script", FileMode::Executable),
            ],
        );
        assert_eq!(catalog.digest_row_mismatches().unwrap(), DigestRowMismatches::default());
        let [version] = catalog.versions_with_file(&digest("one"), 10).unwrap()[..] else {
            panic!("one version holds `one`")
        };
        // A row naming the version for a digest it does not keep (as one left by
        // a deleted version whose id was taken again would), one naming a
        // version that is gone, and one of its own rows lost.
        catalog
            .conn
            .execute_batch(&format!(
                "INSERT INTO artifact_version_files (blake3, version_id) VALUES ('{}', {version}), ('{}', 999);
                 DELETE FROM artifact_version_files WHERE blake3 = '{}';",
                digest("elsewhere"),
                digest("gone"),
                digest("script"),
            ))
            .unwrap();
        assert!(
            catalog.versions_with_file(&digest("elsewhere"), 10).unwrap().is_empty(),
            "a row its version does not back is passed over"
        );
        assert!(catalog.versions_with_file(&digest("gone"), 10).unwrap().is_empty());
        let found = catalog.digest_row_mismatches().unwrap();
        assert_eq!(
            found,
            DigestRowMismatches {
                rows_of_gone_versions: 1,
                rows_not_kept: 1,
                missing_rows: 1,
                damaged_versions: Vec::new(),
                versions: vec![version, 999],
            }
        );
        assert_eq!(catalog.rebuild_digest_rows().unwrap(), (2, 1));
        assert!(catalog.digest_row_mismatches().unwrap().is_empty());
        assert_eq!(catalog.versions_with_file(&digest("script"), 10).unwrap(), [version]);
        assert_eq!(version_file_rows(&catalog), 2);

        // Kept digests that are not JSON, or fewer than the version's files: the
        // version is named, and a repair keeps its rows.
        for damage in ["'not json'", "'[]'"] {
            catalog
                .conn
                .execute(&format!("UPDATE artifact_versions SET digests = {damage}"), [])
                .unwrap();
            let found = catalog.digest_row_mismatches().unwrap();
            assert_eq!(found.damaged_versions, [version], "{damage}");
            assert_eq!((found.rows_not_kept, found.missing_rows), (0, 0), "{damage}");
            assert_eq!(catalog.rebuild_digest_rows().unwrap(), (0, 0), "{damage}");
            assert_eq!(version_file_rows(&catalog), 2, "{damage}");
        }
    }

    /// A catalog from before V20 keeps its digests in `artifact_version_files`
    /// only: migrating copies each version's into the version, sorted.
    #[test]
    fn catalogs_from_before_v20_get_each_versions_digests() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.db");
        let (catalog, _) = catalog_with(
            &path,
            vec![
                file("skills/pdf/SKILL.md", "one", FileMode::File),
                file("skills/pdf/run.sh", "script", FileMode::Executable),
            ],
        );
        let [version] = catalog.versions_with_file(&digest("one"), 10).unwrap()[..] else {
            panic!("one version holds `one`")
        };
        catalog
            .conn
            .execute_batch(
                "ALTER TABLE artifact_versions DROP COLUMN digests; DROP INDEX package_artifacts_awaiting_source; ALTER TABLE package_artifacts DROP COLUMN source_url;
                 DROP TABLE restored_commits; DROP TABLE install_places; DELETE FROM refinery_schema_history WHERE version >= 20",
            )
            .unwrap();
        drop(catalog);
        let catalog = Catalog::open(&path).unwrap();
        let mut expected = vec![digest("one"), digest("script")];
        expected.sort();
        assert_eq!(catalog.version_digests(version).unwrap(), expected);
        assert_eq!(version_file_rows(&catalog), 2);
    }
}
