//! What aam knows of one package by name: the version installed under the
//! roots (its source, platforms, and the artifacts of its installed copy) and
//! what its registry publishes (versions, dist-tags, the artifacts and
//! dependencies of the version shown: the one asked for as `name@version`, a
//! constraint or a dist-tag, else the installed one, else the latest). Read
//! only: the lock file, the installed copy's manifest and the catalog's
//! registry records.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;

use super::Roots;
use super::freshness::{recorded_registry, registry_for};
use super::keys::copy_dir;
use super::specs::split_version;
use crate::catalog::Catalog;
use crate::config::Settings;
use crate::error::{Error, ErrorCode, Result};
use crate::packages::lock::LockFile;
use crate::packages::lock::Origin;
use crate::packages::manifest::{self, MANIFEST_FILE, ManifestArtifacts};
use crate::packages::registry::VersionEntry;
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
    /// Registry whose versions are shown: the one the installed version came
    /// from, else the one an install takes it from (the default first).
    pub registry: Option<String>,
    /// Other configured registries that publish a package of this name.
    pub also_in: Vec<String>,
    /// Published versions, oldest first.
    pub versions: Vec<String>,
    /// Dist-tags.
    pub dist_tags: BTreeMap<String, String>,
    /// The version whose description, artifacts and dependencies are shown: the one matching what was asked for (`name@1.2.0`, `name@^1`, `name@next`; of a range, the `latest` dist-tag's version when it matches, else the newest), else the installed one, else the `latest` dist-tag's.
    pub shown_version: Option<String>,
    /// Artifacts of the version shown: `type/name`.
    pub artifacts: Vec<String>,
    /// Dependencies of the version shown.
    pub dependencies: BTreeMap<String, String>,
    /// The source artifact (`source/path`) it was installed from, whose files,
    /// preview and content audit `aam_info` shows under that name.
    pub from_artifact: Option<String>,
}

/// The package `asked` names (`name`, or `name@` a version, constraint or
/// dist-tag) as installed under `roots` (per their checked `lock`) and as
/// published by the registry that has it; `None` when it is neither installed
/// nor published. A version asked for that the package does not have is
/// `AAM_PACKAGE_NOT_FOUND`, a malformed one `AAM_INVALID_ARGUMENT`.
pub fn describe(
    catalog: &Catalog,
    settings: &Settings,
    roots: &Roots,
    lock: &LockFile,
    asked: &str,
) -> Result<Option<PackageDetails>> {
    let (name, wanted) = split_version(asked);
    let entry = lock.packages.get(name);
    let recorded = match entry {
        Some(entry) => recorded_registry(catalog, name, entry)?,
        None => None,
    };
    let registry = match recorded {
        Some(recorded) => Some(recorded),
        None => registry_for(catalog, settings, name)?,
    };
    let also_in: Vec<String> = catalog
        .registries_with(name)?
        .into_iter()
        .filter(|r| Some(r) != registry.as_ref() && settings.registries.iter().any(|s| &s.name == r))
        .collect();
    if entry.is_none() && registry.is_none() {
        return Ok(None);
    }
    let (published, dist_tags): (_, BTreeMap<String, String>) = match &registry {
        Some(r) => (
            catalog.registry_versions(r, name)?,
            catalog.registry_tags(r, name)?.into_iter().collect(),
        ),
        None => (Vec::new(), BTreeMap::new()),
    };
    let installed = entry.map(|e| e.version.as_str());
    let shown_version = match wanted {
        Some(wanted) => Some(pick_version(name, wanted, &published, &dist_tags, installed)?),
        None => installed
            .map(str::to_string)
            .or(dist_tags.get("latest").cloned())
            .or(published.last().map(|(v, _)| v.to_string())),
    };
    let shows_installed = entry.is_some() && shown_version.as_deref() == installed;
    let shown = published
        .iter()
        .find(|(v, _)| Some(v.to_string()) == shown_version)
        .map(|(_, e)| e.clone());
    let installed_manifest = shows_installed
        .then(|| {
            let path = roots.root.join(copy_dir(name)).join(MANIFEST_FILE);
            std::fs::read_to_string(path)
                .ok()
                .and_then(|t| manifest::check(&t).manifest)
        })
        .flatten();
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
        installed_version: installed.map(str::to_string),
        source: entry.map(|e| format!("{} {}", e.source.as_str(), e.source_name)),
        platforms: entry.map(|e| e.platforms.clone()).unwrap_or_default(),
        registry,
        also_in,
        versions: published.iter().map(|(v, _)| v.to_string()).collect(),
        dist_tags,
        shown_version,
        artifacts,
        dependencies: match (entry, shown) {
            (Some(e), _) if shows_installed => e.dependencies.clone(),
            (_, Some(shown)) => shown.dependencies,
            _ => BTreeMap::new(),
        },
        from_artifact: entry
            .filter(|e| e.source == Origin::Source)
            .and_then(|e| e.requested.clone()),
    }))
}

/// The package name in `asked` (`name` or `name@version`).
pub fn package_name(asked: &str) -> &str {
    split_version(asked).0
}

/// The version `wanted` means among those `published` and the one
/// `installed`: a dist-tag's version, else the newest matching it as a
/// constraint (`1.2.0` is exactly that version).
fn pick_version(
    name: &str,
    wanted: &str,
    published: &[(semver::Version, VersionEntry)],
    dist_tags: &BTreeMap<String, String>,
    installed: Option<&str>,
) -> Result<String> {
    if let Some(version) = dist_tags.get(wanted) {
        return Ok(version.clone());
    }
    let constraint = manifest::parse_constraint(wanted).map_err(|why| {
        Error::invalid_argument(format!("`{name}@{wanted}` asks for no version: {why}")).with_hint(format!(
            "write a version (`{name}@1.2.0`), a constraint (`{name}@^1`) or a dist-tag"
        ))
    })?;
    let installed = installed.and_then(|v| semver::Version::parse(v).ok());
    let known = published.iter().map(|(v, _)| v).chain(installed.as_ref());
    let latest = dist_tags.get("latest").and_then(|v| semver::Version::parse(v).ok());
    let matching = || known.clone().filter(|v| constraint.matches(v));
    match matching().find(|v| Some(*v) == latest.as_ref()).or(matching().max()) {
        Some(version) => Ok(version.to_string()),
        None => {
            let versions: Vec<String> = published.iter().map(|(v, _)| v.to_string()).collect();
            let listed = if versions.is_empty() {
                "none is published".to_string()
            } else {
                format!("published: {}", versions.join(", "))
            };
            Err(Error::new(
                ErrorCode::PackageNotFound,
                format!("`{name}` has no version matching `{wanted}` ({listed})"),
            )
            .with_hint(format!("`aam info {name}` shows the package and its versions")))
        }
    }
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
    fn a_version_asked_for_is_a_tag_or_the_newest_match() {
        let entry: VersionEntry = serde_json::from_value(serde_json::json!({
            "archive": "a.aam", "checksum": "c", "size": 1, "description": "d", "artifact_types": [],
            "artifacts": {}, "dependencies": {}, "published_at": "2026-01-01T00:00:00Z"
        }))
        .unwrap();
        let published: Vec<_> = ["1.0.0", "1.2.0", "2.0.0"]
            .iter()
            .map(|v| (semver::Version::parse(v).unwrap(), entry.clone()))
            .collect();
        let mut tags = BTreeMap::from([("stable".to_string(), "1.0.0".to_string())]);
        let pick = |wanted: &str, installed: Option<&str>, tags: &BTreeMap<String, String>| {
            pick_version("kit", wanted, &published, tags, installed)
        };
        assert_eq!(pick("^1", None, &tags).unwrap(), "1.2.0");
        // The `latest` tag wins where it matches, as installs pick.
        tags.insert("latest".into(), "1.0.0".into());
        assert_eq!(pick("^1", None, &tags).unwrap(), "1.0.0");
        assert_eq!(pick(">=1.1", None, &tags).unwrap(), "2.0.0");
        let pick = |wanted: &str, installed: Option<&str>| pick_version("kit", wanted, &published, &tags, installed);
        assert_eq!(pick("1.0.0", None).unwrap(), "1.0.0");
        assert_eq!(pick("stable", None).unwrap(), "1.0.0");
        assert_eq!(pick(">=2", None).unwrap(), "2.0.0");
        // A version installed from elsewhere counts too.
        assert_eq!(pick("^3", Some("3.1.0")).unwrap(), "3.1.0");
        let none = pick("^3", None).unwrap_err();
        assert_eq!(none.code(), ErrorCode::PackageNotFound);
        assert!(none.message().contains("published: 1.0.0, 1.2.0, 2.0.0"), "{none}");
        assert_eq!(pick("nope", None).unwrap_err().code(), ErrorCode::InvalidArgument);
        assert_eq!(split_version("@team/kit@^1"), ("@team/kit", Some("^1")));
        assert_eq!(split_version("@team/kit"), ("@team/kit", None));
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
