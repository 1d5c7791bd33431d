//! The catalog's mirror of registry packages: what search and resolution read.

use std::collections::HashMap;

use rusqlite::{OptionalExtension, params};

use super::{Catalog, bump_generation, db_error};
use crate::error::{Error, ErrorCode, Result};
use crate::packages::registry::VersionEntry;
use crate::scan::ArtifactKind;

/// One package of a registry, as mirrored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryPackageRecord {
    /// Package name.
    pub name: String,
    /// Description of the latest version.
    pub description: String,
    /// The version `latest` points at.
    pub latest_version: String,
    /// Artifact types in the latest version.
    pub artifact_types: Vec<ArtifactKind>,
    /// Artifact names and descriptions, for search.
    pub summary: String,
    /// Every version with its registry entry as JSON.
    pub versions: Vec<(String, String)>,
    /// Dist-tags: tag to version.
    pub tags: Vec<(String, String)>,
}

/// What search indexes of a registry package.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageSearchRow {
    /// Row id.
    pub id: i64,
    /// Registry name.
    pub registry: String,
    /// Package name.
    pub name: String,
    /// Latest version.
    pub version: String,
    /// Description.
    pub description: Option<String>,
    /// Artifact types.
    pub artifact_types: Vec<ArtifactKind>,
    /// Artifact names and descriptions.
    pub summary: String,
}

/// Which registry packages to read for the search index.
#[derive(Debug, Clone, Copy)]
pub enum PackageFilter<'a> {
    /// Every package of every registry.
    All,
    /// Every package of one registry.
    Registry(&'a str),
}

impl Catalog {
    /// Replaces what the catalog holds for `registry` with `packages`, read
    /// from the index `stamp` describes, in one transaction. Returns the new
    /// generation.
    pub fn sync_registry(
        &mut self,
        registry: &str,
        packages: &[RegistryPackageRecord],
        stamp: Option<&str>,
    ) -> Result<u64> {
        let tx = self.write()?;
        match stamp {
            Some(stamp) => tx.execute(
                "INSERT INTO registry_mirrors (registry, index_stamp) VALUES (?1, ?2)
                 ON CONFLICT (registry) DO UPDATE SET index_stamp = excluded.index_stamp",
                params![registry, stamp],
            ),
            None => tx.execute("DELETE FROM registry_mirrors WHERE registry = ?1", [registry]),
        }
        .map_err(db_error)?;
        let names: Vec<&str> = packages.iter().map(|p| p.name.as_str()).collect();
        {
            let mut existing = tx
                .prepare_cached("SELECT id, name FROM registry_packages WHERE registry = ?1")
                .map_err(db_error)?;
            let rows: Vec<(i64, String)> = existing
                .query_map([registry], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(db_error)?
                .collect::<rusqlite::Result<_>>()
                .map_err(db_error)?;
            for (id, name) in rows {
                if !names.contains(&name.as_str()) {
                    tx.execute("DELETE FROM registry_packages WHERE id = ?1", [id])
                        .map_err(db_error)?;
                }
            }
        }
        for package in packages {
            let types: Vec<&str> = package.artifact_types.iter().map(|k| k.as_str()).collect();
            let id: i64 = tx
                .query_row(
                    "INSERT INTO registry_packages (registry, name, description, latest_version, artifact_types, summary)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                     ON CONFLICT (registry, name) DO UPDATE SET description = excluded.description,
                         latest_version = excluded.latest_version, artifact_types = excluded.artifact_types,
                         summary = excluded.summary
                     RETURNING id",
                    params![
                        registry,
                        package.name,
                        package.description,
                        package.latest_version,
                        types.join(","),
                        package.summary
                    ],
                    |r| r.get(0),
                )
                .map_err(db_error)?;
            tx.execute("DELETE FROM registry_versions WHERE package_id = ?1", [id])
                .map_err(db_error)?;
            tx.execute("DELETE FROM registry_tags WHERE package_id = ?1", [id])
                .map_err(db_error)?;
            for (version, entry) in &package.versions {
                tx.execute(
                    "INSERT INTO registry_versions (package_id, version, entry_json) VALUES (?1, ?2, ?3)",
                    params![id, version, entry],
                )
                .map_err(db_error)?;
            }
            for (tag, version) in &package.tags {
                tx.execute(
                    "INSERT INTO registry_tags (package_id, tag, version) VALUES (?1, ?2, ?3)",
                    params![id, tag, version],
                )
                .map_err(db_error)?;
            }
        }
        let generation = bump_generation(&tx)?;
        tx.commit().map_err(db_error)?;
        Ok(generation)
    }

    /// Every version of `registry` the catalog mirrors: (package, version) to
    /// its registry entry as JSON.
    pub fn registry_entries(&self, registry: &str) -> Result<HashMap<(String, String), String>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT p.name, v.version, v.entry_json FROM registry_packages p
                 JOIN registry_versions v ON v.package_id = p.id WHERE p.registry = ?1",
            )
            .map_err(db_error)?;
        let rows = stmt
            .query_map([registry], |r| Ok(((r.get(0)?, r.get(1)?), r.get(2)?)))
            .map_err(db_error)?;
        rows.collect::<rusqlite::Result<_>>().map_err(db_error)
    }

    /// Forgets every package of `registry`. Returns the new generation.
    pub fn remove_registry(&mut self, registry: &str) -> Result<u64> {
        let tx = self.write()?;
        tx.execute("DELETE FROM registry_packages WHERE registry = ?1", [registry])
            .map_err(db_error)?;
        tx.execute("DELETE FROM registry_mirrors WHERE registry = ?1", [registry])
            .map_err(db_error)?;
        let generation = bump_generation(&tx)?;
        tx.commit().map_err(db_error)?;
        Ok(generation)
    }

    /// The stamp of the index `registry` was last mirrored from (see
    /// [`Catalog::sync_registry`]), `None` when it was never mirrored.
    pub fn registry_stamp(&self, registry: &str) -> Result<Option<String>> {
        self.conn
            .prepare_cached("SELECT index_stamp FROM registry_mirrors WHERE registry = ?1")
            .map_err(db_error)?
            .query_row([registry], |r| r.get(0))
            .optional()
            .map_err(db_error)
    }

    /// How many packages the catalog mirrors for `registry`.
    pub fn registry_package_count(&self, registry: &str) -> Result<u64> {
        let count: i64 = self
            .conn
            .query_row(
                "SELECT COUNT(*) FROM registry_packages WHERE registry = ?1",
                [registry],
                |r| r.get(0),
            )
            .map_err(db_error)?;
        Ok(count as u64)
    }

    /// The version a tag of a registry package points at.
    pub fn registry_tag(&self, registry: &str, name: &str, tag: &str) -> Result<Option<String>> {
        self.conn
            .query_row(
                "SELECT t.version FROM registry_tags t JOIN registry_packages p ON p.id = t.package_id
                 WHERE p.registry = ?1 AND p.name = ?2 AND t.tag = ?3",
                params![registry, name, tag],
                |r| r.get(0),
            )
            .optional()
            .map_err(db_error)
    }

    /// Every dist-tag of a registry package: tag to version.
    pub fn registry_tags(&self, registry: &str, name: &str) -> Result<Vec<(String, String)>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT t.tag, t.version FROM registry_tags t JOIN registry_packages p ON p.id = t.package_id
                 WHERE p.registry = ?1 AND p.name = ?2 ORDER BY t.tag",
            )
            .map_err(db_error)?;
        let rows = stmt
            .query_map(params![registry, name], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(db_error)?;
        rows.collect::<rusqlite::Result<_>>().map_err(db_error)
    }

    /// Streams search rows for registry packages to `each`.
    pub fn for_each_package_search_row(
        &self,
        filter: PackageFilter<'_>,
        mut each: impl FnMut(PackageSearchRow) -> Result<()>,
    ) -> Result<()> {
        let registry = match filter {
            PackageFilter::All => None,
            PackageFilter::Registry(name) => Some(name),
        };
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id, registry, name, latest_version, description, artifact_types, summary
                 FROM registry_packages WHERE (?1 IS NULL OR registry = ?1)",
            )
            .map_err(db_error)?;
        let rows = stmt
            .query_map([registry], |r| {
                let types: String = r.get(5)?;
                Ok(PackageSearchRow {
                    id: r.get(0)?,
                    registry: r.get(1)?,
                    name: r.get(2)?,
                    version: r.get(3)?,
                    description: r.get(4)?,
                    artifact_types: types.split(',').filter_map(ArtifactKind::parse).collect(),
                    summary: r.get(6)?,
                })
            })
            .map_err(db_error)?;
        for row in rows {
            each(row.map_err(db_error)?)?;
        }
        Ok(())
    }

    /// Every published version of `name` in `registry` with its registry entry,
    /// oldest first. An entry the catalog cannot decode is a damaged catalog.
    pub fn registry_versions(&self, registry: &str, name: &str) -> Result<Vec<(semver::Version, VersionEntry)>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT v.version, v.entry_json FROM registry_versions v JOIN registry_packages p ON p.id = v.package_id
                 WHERE p.registry = ?1 AND p.name = ?2",
            )
            .map_err(db_error)?;
        let rows = stmt
            .query_map(params![registry, name], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
            })
            .map_err(db_error)?;
        let mut versions = Vec::new();
        for row in rows {
            let (version, json) = row.map_err(db_error)?;
            let damaged = |problem: String| {
                Error::new(
                    ErrorCode::CatalogError,
                    format!("the catalog's entry of `{name}@{version}` in `{registry}` is damaged: {problem}"),
                )
                .with_hint(format!(
                    "mirror the registry anew: `aam registry remove {registry}`, then `aam registry add` its folder"
                ))
            };
            let parsed = semver::Version::parse(&version).map_err(|e| damaged(e.to_string()))?;
            let entry: VersionEntry = serde_json::from_str(&json).map_err(|e| damaged(e.to_string()))?;
            versions.push((parsed, entry));
        }
        // Oldest first; a plain version after its build-metadata variants.
        versions.sort_by(|a, b| crate::packages::resolve::newest_first(&b.0, &a.0));
        Ok(versions)
    }

    /// The registries (by name) that hold a package called `name`.
    pub fn registries_with(&self, name: &str) -> Result<Vec<String>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT registry FROM registry_packages WHERE name = ?1 ORDER BY registry")
            .map_err(db_error)?;
        let rows = stmt.query_map([name], |r| r.get(0)).map_err(db_error)?;
        rows.collect::<rusqlite::Result<_>>().map_err(db_error)
    }

    /// How many registry packages the catalog mirrors in all.
    pub fn package_count(&self) -> Result<u64> {
        let count: i64 = self
            .conn
            .query_row("SELECT COUNT(*) FROM registry_packages", [], |r| r.get(0))
            .map_err(db_error)?;
        Ok(count as u64)
    }
}
