//! What aam knows of one package by name: the version installed under the
//! roots (its source, platforms, and the artifacts of its installed copy) and
//! what its registry publishes (versions, dist-tags, the artifacts and
//! dependencies of the version shown). Read only: the lock file, the installed
//! copy's manifest and the catalog's registry records.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;

use super::Roots;
use super::freshness::registry_for;
use super::keys::copy_dir;
use crate::catalog::Catalog;
use crate::config::Settings;
use crate::error::{Error, ErrorCode, Result};
use crate::packages::lock::LockFile;
use crate::packages::manifest::{self, MANIFEST_FILE, ManifestArtifacts};
use crate::scan::Platform;

/// One package: installed state and published versions.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "PackageInfoOutput", description = "Output of `aam_package_info`.")]
pub struct PackageDetails {
    /// Name.
    pub name: String,
    /// Description.
    pub description: Option<String>,
    /// Version installed here, if any.
    pub installed_version: Option<String>,
    /// Where the installed version came from.
    pub source: Option<String>,
    /// Platforms it is deployed to here.
    pub platforms: Vec<Platform>,
    /// Registry that publishes it, if any.
    pub registry: Option<String>,
    /// Published versions, oldest first.
    pub versions: Vec<String>,
    /// Dist-tags.
    pub dist_tags: BTreeMap<String, String>,
    /// Artifacts of the installed (else latest) version: `type/name`.
    pub artifacts: Vec<String>,
    /// Dependencies of the installed (else latest) version.
    pub dependencies: BTreeMap<String, String>,
}

/// The package `name` as installed under `roots` (per their checked `lock`)
/// and as published by the registry that has it; `None` when it is neither
/// installed nor published.
pub fn describe(
    catalog: &Catalog,
    settings: &Settings,
    roots: &Roots,
    lock: &LockFile,
    name: &str,
) -> Result<Option<PackageDetails>> {
    let entry = lock.packages.get(name);
    let registry = registry_for(catalog, settings, name)?;
    if entry.is_none() && registry.is_none() {
        return Ok(None);
    }
    let (published, dist_tags) = match &registry {
        Some(r) => (
            catalog.registry_versions(r, name)?,
            catalog.registry_tags(r, name)?.into_iter().collect(),
        ),
        None => (Vec::new(), BTreeMap::new()),
    };
    // The installed version's registry record, else the latest one.
    let shown = entry
        .and_then(|e| published.iter().find(|(v, _)| v.to_string() == e.version))
        .or(published.last())
        .map(|(_, e)| e.clone());
    let installed_manifest = entry.and_then(|_| {
        let path = roots.root.join(copy_dir(name)).join(MANIFEST_FILE);
        std::fs::read_to_string(path)
            .ok()
            .and_then(|t| manifest::check(&t).manifest)
    });
    let artifacts = match (&installed_manifest, &shown) {
        (Some(m), _) => artifact_names(&m.artifacts),
        (None, Some(e)) => artifact_names(&e.artifacts),
        _ => Vec::new(),
    };
    Ok(Some(PackageDetails {
        name: name.to_string(),
        description: installed_manifest
            .as_ref()
            .map(|m| m.description.clone())
            .or(shown.as_ref().map(|e| e.description.clone())),
        installed_version: entry.map(|e| e.version.clone()),
        source: entry.map(|e| format!("{} {}", e.source.as_str(), e.source_name)),
        platforms: entry.map(|e| e.platforms.clone()).unwrap_or_default(),
        registry,
        versions: published.iter().map(|(v, _)| v.to_string()).collect(),
        dist_tags,
        artifacts,
        dependencies: entry
            .map(|e| e.dependencies.clone())
            .or(shown.map(|e| e.dependencies))
            .unwrap_or_default(),
    }))
}

/// Whether `name` may name a package: `name` or `@scope/name`; a
/// `source/artifact` form names an artifact.
pub fn may_name_package(name: &str) -> bool {
    !name.contains('/') || name.starts_with('@')
}

/// The error of a name that is no package installed here or published.
pub fn package_not_found(name: &str) -> Error {
    Error::new(ErrorCode::PackageNotFound, format!("no package named `{name}`"))
        .with_hint("list installed packages with `aam list`, or find packages with `aam search --type package`")
}

/// `type/name` of every artifact, by type.
fn artifact_names(artifacts: &ManifestArtifacts) -> Vec<String> {
    artifacts
        .all()
        .map(|(k, a)| format!("{}/{}", k.as_str(), a.name))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_with_a_source_are_artifacts() {
        assert!(may_name_package("pdf-tools"));
        assert!(may_name_package("@team/tools"));
        assert!(!may_name_package("team/pdf-tools"));
        assert!(!may_name_package("team/skills/pdf-tools"));
    }

    #[test]
    fn a_package_is_what_the_lock_records_or_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let catalog = Catalog::open(&dir.path().join("catalog.db")).unwrap();
        let settings = Settings::default();
        let roots = Roots::new(dir.path().join("project"), dir.path().join("home"), false);
        let mut lock = LockFile::default();
        assert!(describe(&catalog, &settings, &roots, &lock, "kit").unwrap().is_none());
        let entry = serde_json::from_value(serde_json::json!({
            "version": "1.2.0", "source": "local", "source_name": "./kit", "checksum": "c",
            "platforms": ["claude"], "dependencies": {"base": "^1"}
        }))
        .unwrap();
        lock.packages.insert("kit".to_string(), entry);
        let found = describe(&catalog, &settings, &roots, &lock, "kit").unwrap().unwrap();
        assert_eq!(found.installed_version.as_deref(), Some("1.2.0"));
        assert_eq!(found.source.as_deref(), Some("local ./kit"));
        assert_eq!(found.platforms, [Platform::parse("claude").unwrap()]);
        assert_eq!(found.dependencies["base"], "^1");
        // No registry has it and its copy is gone: nothing published, no artifacts.
        assert!(found.registry.is_none() && found.versions.is_empty() && found.artifacts.is_empty());
        assert!(describe(&catalog, &settings, &roots, &lock, "other").unwrap().is_none());
    }
}
