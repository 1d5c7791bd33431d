//! Package rows: which artifacts a package took, so candidates can leave them out.

use std::collections::HashMap;

use rusqlite::{OptionalExtension, Transaction, params};

use super::artifacts::kind_from_sql;
use super::{ArtifactId, PackageId, SourceId};
use super::{Catalog, db_error, now_timestamp};
use crate::error::Result;
use crate::scan::ArtifactKind;

/// A package being recorded.
#[derive(Debug, Clone)]
pub struct NewPackage<'a> {
    /// Package name (`name` or `@scope/name`).
    pub name: &'a str,
    /// Semantic version.
    pub version: &'a str,
    /// One-line description.
    pub description: Option<&'a str>,
    /// The manifest as JSON.
    pub manifest_json: &'a str,
    /// `project`, `source` or `registry`.
    pub origin: &'a str,
    /// Where its artifacts came from, as JSON.
    pub provenance_json: Option<&'a str>,
    /// blake3 of the packed archive, once packed.
    pub archive_blake3: Option<&'a str>,
}

/// An artifact a package holds: a catalog artifact, or a project's own file.
#[derive(Debug, Clone)]
pub struct PackageMember<'a> {
    /// The catalog artifact, for artifacts taken from a source.
    pub artifact_id: Option<ArtifactId>,
    /// The project folder, for a project's own artifacts.
    pub project_root: Option<&'a str>,
    /// Kind.
    pub kind: ArtifactKind,
    /// Name inside the package.
    pub name: &'a str,
    /// Path in the source repository or the project.
    pub path: &'a str,
}

impl Catalog {
    /// Records a package and its members in one transaction. Recording the same
    /// name and version again replaces its description, manifest and members (an
    /// author re-creating a package they are still working on).
    pub fn record_package(&mut self, package: &NewPackage<'_>, members: &[PackageMember<'_>]) -> Result<PackageId> {
        let tx = self.write()?;
        let id = record_package_tx(&tx, package, members)?;
        tx.commit().map_err(db_error)?;
        Ok(id)
    }

    /// Mirrors an install of a project's lock entry: the package and its members,
    /// one `installs` row per platform, and the checksum of every file written.
    pub fn record_install(&mut self, install: &InstallRecord<'_>) -> Result<()> {
        let tx = self.write()?;
        delete_install(&tx, install.project_root, install.package.name)?;
        // An install knows its members by name only: what `pkg create` linked
        // them to (a source's artifacts, a project's own) stays, or installing
        // the package made them candidates again; only for the very package
        // recorded (the same manifest), not another one of that name and version.
        let known = linked_members(&tx, &install.package)?;
        let members: Vec<PackageMember<'_>> = install
            .members
            .iter()
            .map(|m| match known.get(&(m.kind.as_str(), m.name.to_string())) {
                Some((artifact_id, project_root, path)) if m.artifact_id.is_none() && m.project_root.is_none() => {
                    PackageMember {
                        artifact_id: *artifact_id,
                        project_root: project_root.as_deref(),
                        path: path.as_str(),
                        ..m.clone()
                    }
                }
                _ => m.clone(),
            })
            .collect();
        let package_id = record_package_tx(&tx, &install.package, &members)?;
        if let Some(url) = install.source_url {
            tx.execute(
                "UPDATE package_artifacts SET source_url = ?2
                 WHERE package_id = ?1 AND artifact_id IS NULL AND project_root IS NULL",
                params![package_id, url],
            )
            .map_err(db_error)?;
        }
        let platforms: Vec<&str> = if install.platforms.is_empty() {
            vec![""]
        } else {
            install.platforms.iter().map(String::as_str).collect()
        };
        for platform in platforms {
            tx.execute(
                "INSERT INTO installs (project_root, package_id, platform, source_commit, installed_at)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![
                    install.project_root,
                    package_id,
                    platform,
                    install.source_commit,
                    now_timestamp()
                ],
            )
            .map_err(db_error)?;
        }
        let mut insert = tx
            .prepare_cached("INSERT INTO install_files (project_root, package, path, blake3) VALUES (?1, ?2, ?3, ?4)")
            .map_err(db_error)?;
        let mut written = tx
            .prepare_cached("INSERT OR IGNORE INTO written_files (path, blake3) VALUES (?1, ?2)")
            .map_err(db_error)?;
        for (path, digest) in install.files {
            insert
                .execute(params![install.project_root, install.package.name, path, digest])
                .map_err(db_error)?;
            if !install.found_in_place.contains(path) {
                written.execute(params![path, digest]).map_err(db_error)?;
            }
        }
        drop((insert, written));
        if let Some(place) = install.place {
            tx.execute(
                "INSERT INTO install_places (path, kind, used_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (path, kind) DO UPDATE SET used_at = excluded.used_at",
                params![place.path, place.kind.as_str(), now_timestamp()],
            )
            .map_err(db_error)?;
        }
        tx.commit().map_err(db_error)
    }

    /// Whether a package was installed from the `kind` of place at `path`
    /// (absolute, as recorded) on this machine: the only places outside a
    /// project a lock file may have a restore read, and only as that kind (a
    /// repository's folder read as a package folder holds its uncommitted files).
    pub fn installs_from(&self, path: &str, kind: PlaceKind) -> Result<bool> {
        self.conn
            .prepare_cached("SELECT EXISTS (SELECT 1 FROM install_places WHERE path = ?1 AND kind = ?2)")
            .and_then(|mut stmt| stmt.query_row(params![path, kind.as_str()], |r| r.get(0)))
            .map_err(db_error)
    }

    /// Records `files` (lock key, blake3) as shown to be what a package's
    /// recorded origin makes at those keys: aam's to replace or remove from
    /// now on, like the files it wrote (see `digests_written_at`).
    pub fn record_proven(&mut self, files: &[(&str, &str)]) -> Result<()> {
        let tx = self.write()?;
        let mut written = tx
            .prepare_cached("INSERT OR IGNORE INTO written_files (path, blake3) VALUES (?1, ?2)")
            .map_err(db_error)?;
        for (path, digest) in files {
            written.execute(params![path, digest]).map_err(db_error)?;
        }
        drop(written);
        tx.commit().map_err(db_error)
    }

    /// The digests of every file an install on this machine wrote at the lock
    /// key `path`, in any project, then or since gone, or that were shown to
    /// be what a package's origin makes there (`record_proven`).
    pub fn digests_written_at(&self, path: &str) -> Result<Vec<String>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT blake3 FROM written_files WHERE path = ?1")
            .map_err(db_error)?;
        let rows = stmt.query_map([path], |r| r.get(0)).map_err(db_error)?;
        rows.collect::<rusqlite::Result<_>>().map_err(db_error)
    }

    /// Every file in the home folder an install on this machine wrote, as
    /// (lock key, blake3): the `~/` keys of project and `-g` installs alike.
    pub fn home_files_written(&self) -> Result<Vec<(String, String)>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT path, blake3 FROM written_files WHERE path LIKE '~/%'")
            .map_err(db_error)?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).map_err(db_error)?;
        rows.collect::<rusqlite::Result<_>>().map_err(db_error)
    }

    /// The files in the home folder (`~/` keys) that the installs of roots
    /// other than `this_root` record, as (lock key, root, package): other
    /// projects' installs and the home folder's own (`-g`) ones.
    pub fn home_files_installed_elsewhere(&self, this_root: &str) -> Result<Vec<(String, String, String)>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT path, project_root, package FROM install_files
                 WHERE path LIKE '~/%' AND project_root != ?1",
            )
            .map_err(db_error)?;
        let rows = stmt
            .query_map([this_root], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .map_err(db_error)?;
        rows.collect::<rusqlite::Result<_>>().map_err(db_error)
    }

    /// Records, as files of the install of `package` in `project_root`, the
    /// home-folder files (`~/` keys) among `files` (lock key, blake3) that
    /// another project's install of a package of that name records, when this
    /// install holds that install's package copy (every file under `copy_dir`
    /// but its `aam.yaml`, which names the commit, at the same digests): a
    /// restore that finds the package in place (a clone, where the first
    /// project's install wrote a shared Codex prompt) makes the file known as
    /// used here too, so that project's uninstall keeps it. A lock entry naming
    /// only the home file proves nothing. Rows already recorded stay; nothing
    /// is written when nothing is new.
    pub fn record_files_in_place(
        &mut self,
        project_root: &str,
        package: &str,
        copy_dir: &str,
        files: &[(&str, &str)],
    ) -> Result<()> {
        let wanted: std::collections::BTreeSet<(&str, &str)> = files.iter().copied().collect();
        let rows_of = |root: &str| -> Result<Vec<(String, String)>> {
            let mut stmt = self
                .conn
                .prepare_cached("SELECT path, blake3 FROM install_files WHERE project_root = ?1 AND package = ?2")
                .map_err(db_error)?;
            let rows = stmt
                .query_map(params![root, package], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(db_error)?;
            rows.collect::<rusqlite::Result<_>>().map_err(db_error)
        };
        let others: Vec<String> = {
            let mut stmt = self
                .conn
                .prepare_cached(
                    "SELECT DISTINCT i.project_root FROM packages p JOIN installs i ON i.package_id = p.id
                     WHERE p.name = ?1 AND i.project_root != ?2",
                )
                .map_err(db_error)?;
            let rows = stmt
                .query_map(params![package, project_root], |r| r.get(0))
                .map_err(db_error)?;
            rows.collect::<rusqlite::Result<_>>().map_err(db_error)?
        };
        let copy = format!("{copy_dir}/");
        let manifest = format!("{copy}{}", crate::packages::manifest::MANIFEST_FILE);
        let mut proven: std::collections::BTreeSet<(String, String)> = Default::default();
        for other in &others {
            let rows = rows_of(other)?;
            let mut copied = rows
                .iter()
                .filter(|(key, _)| key.starts_with(&copy) && **key != manifest)
                .peekable();
            let holds_the_copy = copied.peek().is_some()
                && copied.all(|(key, digest)| wanted.contains(&(key.as_str(), digest.as_str())));
            if holds_the_copy {
                proven.extend(rows.into_iter().filter(|(key, digest)| {
                    key.starts_with("~/") && wanted.contains(&(key.as_str(), digest.as_str()))
                }));
            }
        }
        for row in rows_of(project_root)? {
            proven.remove(&row);
        }
        if proven.is_empty() {
            return Ok(());
        }
        let tx = self.write()?;
        let mut insert = tx
            .prepare_cached(
                "INSERT OR IGNORE INTO install_files (project_root, package, path, blake3) VALUES (?1, ?2, ?3, ?4)",
            )
            .map_err(db_error)?;
        for (path, digest) in &proven {
            insert
                .execute(params![project_root, package, path, digest])
                .map_err(db_error)?;
        }
        drop(insert);
        tx.commit().map_err(db_error)
    }

    /// Forgets an install of `package` in `project_root`.
    pub fn remove_install(&mut self, project_root: &str, package: &str) -> Result<()> {
        let tx = self.write()?;
        delete_install(&tx, project_root, package)?;
        tx.commit().map_err(db_error)
    }
}

/// What `record_install` mirrors.
#[derive(Debug, Clone)]
pub struct InstallRecord<'a> {
    /// Project (or home) root.
    pub project_root: &'a str,
    /// The installed package.
    pub package: NewPackage<'a>,
    /// What it holds.
    pub members: &'a [PackageMember<'a>],
    /// Platforms deployed to (empty: not deployed).
    pub platforms: &'a [String],
    /// Commit the files were read at, for source installs.
    pub source_commit: Option<&'a str>,
    /// The repository of a package taken from a source: members it holds no
    /// catalog artifact for wait for a source of it (see [`link_orphaned_members`]).
    pub source_url: Option<&'a str>,
    /// (lock key, blake3) of every file written.
    pub files: &'a [(String, String)],
    /// The keys of `files` found in place rather than written (an adoption's
    /// copies): recorded as the install's, not as written by aam.
    pub found_in_place: &'a [String],
    /// The package folder, archive or local repository outside the project it
    /// was read from: a place this machine installs from.
    pub place: Option<&'a InstallPlace>,
}

/// A place outside a project a package was installed from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct InstallPlace {
    /// Its absolute path, as the lock file records it.
    pub path: String,
    /// What it is.
    pub kind: PlaceKind,
}

/// What kind of place a package was installed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PlaceKind {
    /// A package folder.
    Folder,
    /// A package archive.
    Archive,
    /// A local git repository (a source's).
    Repository,
}

impl PlaceKind {
    /// The catalog's name for it.
    pub fn as_str(self) -> &'static str {
        match self {
            PlaceKind::Folder => "folder",
            PlaceKind::Archive => "archive",
            PlaceKind::Repository => "repository",
        }
    }
}

fn delete_install(tx: &Transaction<'_>, project_root: &str, package: &str) -> Result<()> {
    tx.execute(
        "DELETE FROM installs WHERE project_root = ?1 AND package_id IN (SELECT id FROM packages WHERE name = ?2)",
        params![project_root, package],
    )
    .map_err(db_error)?;
    tx.execute(
        "DELETE FROM install_files WHERE project_root = ?1 AND package = ?2",
        params![project_root, package],
    )
    .map_err(db_error)?;
    Ok(())
}

/// The members of the package recorded as `package` (same name, version and
/// manifest) that `pkg create` linked to a catalog artifact or a project's own,
/// by (kind, name): (artifact, project root, path).
type LinkedMembers = HashMap<(&'static str, String), (Option<ArtifactId>, Option<String>, String)>;

fn linked_members(tx: &Transaction<'_>, package: &NewPackage<'_>) -> Result<LinkedMembers> {
    let mut stmt = tx
        .prepare_cached(
            "SELECT pa.kind, pa.name, pa.artifact_id, pa.project_root, pa.path
             FROM package_artifacts pa JOIN packages p ON p.id = pa.package_id
             WHERE p.name = ?1 AND p.version = ?2 AND p.manifest_json = ?3
               AND (pa.artifact_id IS NOT NULL OR pa.project_root IS NOT NULL)",
        )
        .map_err(db_error)?;
    let rows = stmt
        .query_map(params![package.name, package.version, package.manifest_json], |r| {
            let kind: String = r.get(0)?;
            Ok((
                (kind_from_sql(&kind).as_str(), r.get::<_, String>(1)?),
                (r.get(2)?, r.get(3)?, r.get(4)?),
            ))
        })
        .map_err(db_error)?;
    rows.collect::<rusqlite::Result<_>>().map_err(db_error)
}

/// Records a package inside an open transaction (see `record_package`).
fn record_package_tx(
    tx: &Transaction<'_>,
    package: &NewPackage<'_>,
    members: &[PackageMember<'_>],
) -> Result<PackageId> {
    let existing: Option<i64> = tx
        .query_row(
            "SELECT id FROM packages WHERE name = ?1 AND version = ?2",
            params![package.name, package.version],
            |r| r.get(0),
        )
        .optional()
        .map_err(db_error)?;
    if let Some(id) = existing {
        // Its members are replaced below: release the old ones first.
        let old: Vec<ArtifactId> = tx
            .prepare(
                "SELECT DISTINCT artifact_id FROM package_artifacts WHERE package_id = ?1 AND artifact_id IS NOT NULL",
            )
            .map_err(db_error)?
            .query_map([id], |r| r.get(0))
            .map_err(db_error)?
            .collect::<rusqlite::Result<_>>()
            .map_err(db_error)?;
        tx.execute("DELETE FROM package_artifacts WHERE package_id = ?1", [id])
            .map_err(db_error)?;
        for artifact_id in old {
            if let Some((source_id, kind)) = live_unpackaged(tx, artifact_id)? {
                adjust_packaged(tx, source_id, &kind, -1)?;
            }
        }
    }
    let package_id: PackageId = tx
        .query_row(
            "INSERT INTO packages (name, version, description, manifest_json, origin, provenance_json, archive_blake3, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
             ON CONFLICT (name, version) DO UPDATE SET description = excluded.description,
                 manifest_json = excluded.manifest_json, origin = excluded.origin,
                 provenance_json = excluded.provenance_json, archive_blake3 = excluded.archive_blake3,
                 created_at = excluded.created_at
             RETURNING id",
            params![
                package.name,
                package.version,
                package.description,
                package.manifest_json,
                package.origin,
                package.provenance_json,
                package.archive_blake3,
                now_timestamp()
            ],
            |r| r.get(0),
        )
        .map_err(db_error)?;
    let mut ids: Vec<ArtifactId> = members.iter().filter_map(|m| m.artifact_id).collect();
    ids.sort_unstable();
    ids.dedup();
    // Live artifacts that no package held before now count as packaged.
    for id in ids {
        if let Some((source_id, kind)) = live_unpackaged(tx, id)? {
            adjust_packaged(tx, source_id, &kind, 1)?;
        }
    }
    let mut insert = tx
        .prepare_cached(
            "INSERT INTO package_artifacts (package_id, artifact_id, project_root, kind, name, path)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )
        .map_err(db_error)?;
    for m in members {
        insert
            .execute(params![
                package_id,
                m.artifact_id,
                m.project_root,
                m.kind.as_str(),
                m.name,
                m.path
            ])
            .map_err(db_error)?;
    }
    drop(insert);
    Ok(package_id)
}

/// The source and kind of a live artifact no package holds, if it is one.
fn live_unpackaged(tx: &Transaction<'_>, id: ArtifactId) -> Result<Option<(SourceId, String)>> {
    tx.prepare_cached(
        "SELECT a.source_id, a.kind FROM artifacts a
         WHERE a.id = ?1 AND a.removed_commit_id IS NULL
           AND NOT EXISTS (SELECT 1 FROM package_artifacts pa WHERE pa.artifact_id = a.id)",
    )
    .map_err(db_error)?
    .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
    .optional()
    .map_err(db_error)
}

/// Links a new source's artifacts to the members of packages taken from its
/// repository that wait for one (`source_url`, by kind and path): a package
/// installed before its source was removed and added again, or restored from
/// a lock file before its source was added here, holds those artifacts again,
/// so `source remove` names the install, search marks it installed and
/// candidates leave it out. Reads only such members, through their index.
pub(super) fn link_orphaned_members(tx: &Transaction<'_>, source_id: SourceId) -> Result<()> {
    let found: Vec<(i64, ArtifactId)> = {
        // CROSS JOIN keeps the order: from the few waiting members to their
        // artifact, never from the source's artifacts to the members.
        let mut stmt = tx
            .prepare_cached(
                "SELECT pa.rowid, a.id FROM package_artifacts pa
                 CROSS JOIN artifacts a ON a.source_id = ?1 AND a.kind = pa.kind AND a.path = pa.path
                 WHERE pa.source_url = (SELECT url FROM sources WHERE id = ?1)
                   AND pa.artifact_id IS NULL AND a.removed_commit_id IS NULL",
            )
            .map_err(db_error)?;
        let rows = stmt
            .query_map([source_id], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(db_error)?;
        rows.collect::<rusqlite::Result<_>>().map_err(db_error)?
    };
    for (member, artifact) in found {
        if let Some((source, kind)) = live_unpackaged(tx, artifact)? {
            adjust_packaged(tx, source, &kind, 1)?;
        }
        tx.prepare_cached("UPDATE package_artifacts SET artifact_id = ?2, source_url = NULL WHERE rowid = ?1")
            .map_err(db_error)?
            .execute(params![member, artifact])
            .map_err(db_error)?;
    }
    Ok(())
}

/// Keeps the repository URL of every member holding an artifact of the
/// source `source_id`, which is about to go with it (see [`link_orphaned_members`]).
pub(super) fn unlink_members_of(tx: &Transaction<'_>, source_id: SourceId) -> Result<()> {
    tx.execute(
        "UPDATE package_artifacts SET source_url = (SELECT url FROM sources WHERE id = ?1)
         WHERE artifact_id IS NOT NULL
           AND (SELECT a.source_id FROM artifacts a WHERE a.id = package_artifacts.artifact_id) = ?1",
        [source_id],
    )
    .map_err(db_error)?;
    Ok(())
}

/// Adds `delta` to a source's count of packaged live artifacts of `kind`.
pub(super) fn adjust_packaged(tx: &Transaction<'_>, source_id: SourceId, kind: &str, delta: i64) -> Result<()> {
    let column = match ArtifactKind::parse(kind) {
        Some(k) => format!("packaged_{}_count", k.as_str()),
        None => return Ok(()),
    };
    tx.prepare_cached(&format!("UPDATE sources SET {column} = {column} + ?2 WHERE id = ?1"))
        .map_err(db_error)?
        .execute(params![source_id, delta])
        .map_err(db_error)?;
    Ok(())
}

/// Whether some package holds the artifact `id`.
pub(super) fn is_packaged(tx: &Transaction<'_>, id: ArtifactId) -> Result<bool> {
    tx.prepare_cached("SELECT EXISTS (SELECT 1 FROM package_artifacts WHERE artifact_id = ?1)")
        .map_err(db_error)?
        .query_row([id], |r| r.get(0))
        .map_err(db_error)
}
