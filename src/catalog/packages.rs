//! Package rows: which artifacts a package took, so candidates can leave them out.

use rusqlite::{OptionalExtension, Transaction, params};

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
    pub artifact_id: Option<i64>,
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
    pub fn record_package(&mut self, package: &NewPackage<'_>, members: &[PackageMember<'_>]) -> Result<i64> {
        let tx = self.write()?;
        let existing: Option<i64> = tx
            .query_row(
                "SELECT id FROM packages WHERE name = ?1 AND version = ?2",
                params![package.name, package.version],
                |r| r.get(0),
            )
            .optional()
            .map_err(db_error)?;
        let package_id = match existing {
            Some(id) => {
                let old: Vec<i64> = tx
                    .prepare("SELECT DISTINCT artifact_id FROM package_artifacts WHERE package_id = ?1 AND artifact_id IS NOT NULL")
                    .map_err(db_error)?
                    .query_map([id], |r| r.get(0))
                    .map_err(db_error)?
                    .collect::<rusqlite::Result<_>>()
                    .map_err(db_error)?;
                tx.execute("DELETE FROM package_artifacts WHERE package_id = ?1", [id])
                    .map_err(db_error)?;
                for artifact_id in old {
                    if let Some((source_id, kind)) = live_unpackaged(&tx, artifact_id)? {
                        adjust_packaged(&tx, source_id, &kind, -1)?;
                    }
                }
                tx.execute(
                    "UPDATE packages SET description = ?2, manifest_json = ?3, origin = ?4, provenance_json = ?5,
                         archive_blake3 = ?6, created_at = ?7 WHERE id = ?1",
                    params![
                        id,
                        package.description,
                        package.manifest_json,
                        package.origin,
                        package.provenance_json,
                        package.archive_blake3,
                        now_timestamp()
                    ],
                )
                .map_err(db_error)?;
                id
            }
            None => {
                tx.execute(
                    "INSERT INTO packages (name, version, description, manifest_json, origin, provenance_json, archive_blake3, created_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
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
                )
                .map_err(db_error)?;
                tx.last_insert_rowid()
            }
        };
        let mut ids: Vec<i64> = members.iter().filter_map(|m| m.artifact_id).collect();
        ids.sort_unstable();
        ids.dedup();
        // Live artifacts that no package held before now count as packaged.
        for id in ids {
            if let Some((source_id, kind)) = live_unpackaged(&tx, id)? {
                adjust_packaged(&tx, source_id, &kind, 1)?;
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
        tx.commit().map_err(db_error)?;
        Ok(package_id)
    }
}

/// The source and kind of a live artifact no package holds, if it is one.
fn live_unpackaged(tx: &Transaction<'_>, id: i64) -> Result<Option<(i64, String)>> {
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

/// Adds `delta` to a source's count of packaged live artifacts of `kind`.
pub(super) fn adjust_packaged(tx: &Transaction<'_>, source_id: i64, kind: &str, delta: i64) -> Result<()> {
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
pub(super) fn is_packaged(tx: &Transaction<'_>, id: i64) -> Result<bool> {
    tx.prepare_cached("SELECT EXISTS (SELECT 1 FROM package_artifacts WHERE artifact_id = ?1)")
        .map_err(db_error)?
        .query_row([id], |r| r.get(0))
        .map_err(db_error)
}
