//! Read tools over what is installed: list, verify, diff, outdated and
//! package info. They read the lock file (every entry checked first) and the
//! disk through [`crate::install::state`], and never write: an interrupted
//! command's journal is reported, not acted on.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::super::{Context, Example, Expect, Risk, Tool};
use super::{installed, object_store, roots};
use crate::error::{Error, ErrorCode, Result};
use crate::install::Roots;
use crate::install::freshness::{self, registry_for};
use crate::install::journal;
use crate::install::keys::copy_dir;
use crate::install::state::{self, FileState};
use crate::packages::lock::{self, LockFile, Origin};
use crate::packages::manifest::{self, MANIFEST_FILE};
use crate::packages::registry::VersionEntry;
use crate::scan::Platform;

/// The lock file under the roots, every entry checked.
fn checked_lock(roots: &Roots) -> Result<LockFile> {
    let lock = lock::read(&roots.root)?;
    roots.check_lock(&lock)?;
    Ok(lock)
}

// ---------------------------------------------------------------- verify

/// Input of `aam_verify`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VerifyInput {
    /// Installed package name.
    pub package: String,
    /// Check the home-folder install.
    #[serde(default)]
    pub global: bool,
}

/// Output of `aam_verify`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VerifyOutput {
    /// Package name.
    pub package_name: String,
    /// Installed version.
    pub version: String,
    /// Files and sections as installed.
    pub ok_files: Vec<String>,
    /// Files and sections changed since install.
    pub modified_files: Vec<String>,
    /// Files and sections gone.
    pub missing_files: Vec<String>,
    /// Files in the package's folders that it did not install.
    pub untracked_files: Vec<String>,
    /// Whether the lock entry records checksums at all.
    pub has_checksums: bool,
    /// An interrupted aam command's journal is waiting in the project (the next
    /// command that may write finishes or undoes it).
    pub interrupted: bool,
    /// No modified, missing or untracked files, and nothing interrupted.
    pub is_clean: bool,
}

/// Checks an installed package file by file against its lock entry.
pub struct Verify;

impl Tool for Verify {
    const NAME: &'static str = "aam_verify";
    const TITLE: &'static str = "Verify an installed package";
    const DESCRIPTION: &'static str = "Compare every file an installed package wrote (its copy and each deployed file or section) with the checksum recorded in the lock file: which are unchanged, modified or missing, and which files appeared in its folders. Next: `aam_diff` to see the changes.";
    const RISK: Risk = Risk::Read;
    const IDEMPOTENT: bool = true;
    const ERRORS: &'static [ErrorCode] = &[
        ErrorCode::PackageNotInstalled,
        ErrorCode::LockInvalid,
        ErrorCode::UnsafePath,
    ];
    const EXAMPLES: &'static [Example] = &[Example {
        title: "an untouched install",
        input: r#"{"package": "review-kit"}"#,
        expect: Expect::Output(
            r#"{"package_name": "review-kit", "is_clean": true, "has_checksums": true, "modified_files": []}"#,
        ),
    }];
    type Input = VerifyInput;
    type Output = VerifyOutput;

    fn run(ctx: &Context, input: VerifyInput) -> Result<VerifyOutput> {
        let roots = roots(ctx, input.global)?;
        let lock = checked_lock(&roots)?;
        verify(&roots, &lock, &input.package)
    }
}

/// Checks one installed package of a checked lock.
fn verify(roots: &Roots, lock: &LockFile, package: &str) -> Result<VerifyOutput> {
    let entry = installed(lock, package)?;
    let status = state::file_status(roots, entry)?;
    let pick = |s: FileState| state::keys_in(&status, s);
    let untracked_files = state::untracked(roots, package, entry)?;
    let (ok_files, modified_files, missing_files) =
        (pick(FileState::Ok), pick(FileState::Modified), pick(FileState::Missing));
    let interrupted = journal::pending(&roots.root);
    Ok(VerifyOutput {
        package_name: package.to_string(),
        version: entry.version.clone(),
        is_clean: modified_files.is_empty() && missing_files.is_empty() && untracked_files.is_empty() && !interrupted,
        interrupted,
        has_checksums: !entry.file_checksums.is_empty(),
        ok_files,
        modified_files,
        missing_files,
        untracked_files,
    })
}

/// Input of `aam_verify_all`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VerifyAllInput {
    /// Check the home-folder installs.
    #[serde(default)]
    pub global: bool,
}

/// Output of `aam_verify_all`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VerifyAllOutput {
    /// One report per installed package, by name.
    pub packages: Vec<VerifyOutput>,
    /// Every package is clean.
    pub is_clean: bool,
}

/// Checks every installed package file by file against the lock.
pub struct VerifyAll;

impl Tool for VerifyAll {
    const NAME: &'static str = "aam_verify_all";
    const TITLE: &'static str = "Verify every installed package";
    const DESCRIPTION: &'static str = "Compare every file each installed package wrote with the checksums in the lock file, as `aam_verify` does for one package: one report per package, and whether all are clean. Next: `aam_diff` for a package with changes.";
    const RISK: Risk = Risk::Read;
    const IDEMPOTENT: bool = true;
    const ERRORS: &'static [ErrorCode] = &[ErrorCode::LockInvalid, ErrorCode::UnsafePath];
    const EXAMPLES: &'static [Example] = &[Example {
        title: "a project whose installs are untouched",
        input: r#"{}"#,
        expect: Expect::Output(r#"{"packages": [{"package_name": "review-kit", "is_clean": true}], "is_clean": true}"#),
    }];
    type Input = VerifyAllInput;
    type Output = VerifyAllOutput;

    fn run(ctx: &Context, input: VerifyAllInput) -> Result<VerifyAllOutput> {
        let roots = roots(ctx, input.global)?;
        let lock = checked_lock(&roots)?;
        let packages = lock
            .packages
            .keys()
            .map(|name| verify(&roots, &lock, name))
            .collect::<Result<Vec<_>>>()?;
        Ok(VerifyAllOutput {
            is_clean: packages.iter().all(|p| p.is_clean),
            packages,
        })
    }
}

// ---------------------------------------------------------------- diff

/// One modified file.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileDiff {
    /// Lock key of the file (or `FILE#name type` section).
    pub path: String,
    /// Unified diff from the installed original to the current content.
    pub diff: String,
}

/// Output of `aam_diff`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiffOutput {
    /// Package name.
    pub package_name: String,
    /// Installed version.
    pub version: String,
    /// Changed files with their diffs.
    pub modified_files: Vec<FileDiff>,
    /// Files in its folders it did not install.
    pub untracked_files: Vec<String>,
    /// Files gone.
    pub missing_files: Vec<String>,
}

/// Shows what changed in an installed package's files.
pub struct Diff;

impl Tool for Diff {
    const NAME: &'static str = "aam_diff";
    const TITLE: &'static str = "Diff an installed package";
    const DESCRIPTION: &'static str = "Show a unified diff of every file of an installed package that was edited since install, against the installed original, plus untracked and missing files. Next: keep the edits, or `aam_upgrade`/`aam_install` with force to restore.";
    const RISK: Risk = Risk::Read;
    const IDEMPOTENT: bool = true;
    const ERRORS: &'static [ErrorCode] = &[
        ErrorCode::PackageNotInstalled,
        ErrorCode::LockInvalid,
        ErrorCode::UnsafePath,
    ];
    const EXAMPLES: &'static [Example] = &[
        Example {
            title: "an installed package without edits",
            input: r#"{"package": "review-kit"}"#,
            expect: Expect::Output(r#"{"package_name": "review-kit", "modified_files": [], "missing_files": []}"#),
        },
        Example {
            title: "a package that is not installed",
            input: r#"{"package": "ghost"}"#,
            expect: Expect::Error(ErrorCode::PackageNotInstalled),
        },
    ];
    type Input = VerifyInput;
    type Output = DiffOutput;

    fn run(ctx: &Context, input: VerifyInput) -> Result<DiffOutput> {
        let roots = roots(ctx, input.global)?;
        let lock = checked_lock(&roots)?;
        let entry = installed(&lock, &input.package)?;
        let store = object_store(ctx);
        let status = state::file_status(&roots, entry)?;
        let mut modified = Vec::new();
        for key in state::keys_in(&status, FileState::Modified) {
            let original = store.get(&entry.file_checksums[&key])?;
            let current = state::current_bytes(&roots, &key)?;
            let diff = match (original, current) {
                (Some(original), Some(current)) => state::unified_diff(&key, &original, &current),
                (None, _) => format!("(the installed original of `{key}` is no longer stored)\n"),
                (_, None) => format!("(`{key}` is now a link, a folder, a damaged section or too big to show)\n"),
            };
            modified.push(FileDiff { path: key, diff });
        }
        Ok(DiffOutput {
            package_name: input.package.clone(),
            version: entry.version.clone(),
            modified_files: modified,
            untracked_files: state::untracked(&roots, &input.package, entry)?,
            missing_files: state::keys_in(&status, FileState::Missing),
        })
    }
}

// ---------------------------------------------------------------- list

/// Input of `aam_list`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListInstalledInput {
    /// List the home-folder installs.
    #[serde(default)]
    pub global: bool,
}

/// One installed package.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListedPackage {
    /// Name.
    pub name: String,
    /// Version.
    pub version: String,
    /// Where it came from.
    pub source: Origin,
    /// Registry, source or path it came from.
    pub source_name: String,
    /// Platforms deployed to.
    pub platforms: Vec<Platform>,
    /// Its dependencies: name to constraint.
    pub dependencies: BTreeMap<String, String>,
    /// Whether another installed package depends on it.
    pub is_dependency: bool,
}

/// Output of `aam_list`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListInstalledOutput {
    /// The project (or home) root.
    pub root: String,
    /// Installed packages, by name.
    pub packages: Vec<ListedPackage>,
}

/// Lists installed packages.
pub struct ListInstalled;

impl Tool for ListInstalled {
    const NAME: &'static str = "aam_list";
    const TITLE: &'static str = "List installed packages";
    const DESCRIPTION: &'static str = "List the packages installed in the current project (or the home folder) from its lock file: version, where each came from, platforms and dependencies. Next: `aam_verify` or `aam_outdated`.";
    const RISK: Risk = Risk::Read;
    const IDEMPOTENT: bool = true;
    const ERRORS: &'static [ErrorCode] = &[ErrorCode::LockInvalid];
    const EXAMPLES: &'static [Example] = &[Example {
        title: "what the project has installed",
        input: r#"{}"#,
        expect: Expect::Output(
            r#"{"packages": [{"name": "review-kit", "version": "1.0.0", "source": "registry", "platforms": ["claude"]}]}"#,
        ),
    }];
    type Input = ListInstalledInput;
    type Output = ListInstalledOutput;

    fn run(ctx: &Context, input: ListInstalledInput) -> Result<ListInstalledOutput> {
        let roots = roots(ctx, input.global)?;
        let lock = checked_lock(&roots)?;
        let depended: BTreeSet<&String> = lock.packages.values().flat_map(|p| p.dependencies.keys()).collect();
        Ok(ListInstalledOutput {
            root: roots.root_text(),
            packages: lock
                .packages
                .iter()
                .map(|(name, p)| ListedPackage {
                    name: name.clone(),
                    version: p.version.clone(),
                    source: p.source,
                    source_name: p.source_name.clone(),
                    platforms: p.platforms.clone(),
                    dependencies: p.dependencies.clone(),
                    is_dependency: depended.contains(name),
                })
                .collect(),
        })
    }
}

// ---------------------------------------------------------------- outdated

/// Input of `aam_outdated`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutdatedInput {
    /// Check the home-folder installs.
    #[serde(default)]
    pub global: bool,
}

/// One installed package's freshness.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutdatedPackage {
    /// Name.
    pub name: String,
    /// Installed version.
    pub current: String,
    /// Newest version its constraint allows (registry packages).
    pub wanted: Option<String>,
    /// Newest published version (registry packages).
    pub latest: Option<String>,
    /// Where it came from.
    pub source: Origin,
    /// Whether an upgrade would change it.
    pub outdated: bool,
    /// A newer version exists that its constraint excludes: `upgrade` leaves it, installing `name@version` moves it.
    pub pinned: bool,
    /// Why, in words.
    pub reason: String,
}

/// Output of `aam_outdated`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutdatedOutput {
    /// Every installed package.
    pub packages: Vec<OutdatedPackage>,
}

/// Tells which installed packages have newer content or versions.
pub struct Outdated;

impl Tool for Outdated {
    const NAME: &'static str = "aam_outdated";
    const TITLE: &'static str = "Find outdated packages";
    const DESCRIPTION: &'static str = "For each installed package: whether its source artifacts changed at the source's indexed commit (a new commit that does not touch them does not count), or a newer registry version satisfies its constraint. Answered from the catalog; run `aam_source_update` first for fresh sources. Next: `aam_upgrade`.";
    const RISK: Risk = Risk::Read;
    const IDEMPOTENT: bool = true;
    const ERRORS: &'static [ErrorCode] = &[ErrorCode::LockInvalid];
    const CONSTRAINTS: &'static [&'static str] = &["answers from the catalog: update sources first for fresh results"];
    const EXAMPLES: &'static [Example] = &[Example {
        title: "a newer version satisfies the constraint",
        input: r#"{}"#,
        expect: Expect::Output(
            r#"{"packages": [{"name": "review-kit", "current": "1.0.0", "wanted": "1.1.0", "latest": "1.1.0", "outdated": true}]}"#,
        ),
    }];
    type Input = OutdatedInput;
    type Output = OutdatedOutput;

    fn run(ctx: &Context, input: OutdatedInput) -> Result<OutdatedOutput> {
        let roots = roots(ctx, input.global)?;
        let lock = checked_lock(&roots)?;
        let catalog = ctx.catalog()?;
        let settings = ctx.home.load_settings()?;
        let mut packages = Vec::new();
        for (name, entry) in &lock.packages {
            let fresh = freshness::check(&catalog, &settings, name, entry)?;
            packages.push(OutdatedPackage {
                name: name.clone(),
                current: entry.version.clone(),
                wanted: fresh.wanted,
                latest: fresh.latest,
                source: entry.source,
                outdated: fresh.outdated,
                pinned: fresh.pinned,
                reason: fresh.reason,
            });
        }
        Ok(OutdatedOutput { packages })
    }
}

// ---------------------------------------------------------------- package info

/// Input of `aam_package_info`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PackageInfoInput {
    /// Package name.
    pub name: String,
    /// Look at the home-folder installs.
    #[serde(default)]
    pub global: bool,
}

/// Output of `aam_package_info`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PackageInfoOutput {
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

/// Shows one package: installed state and published versions.
pub struct PackageInfo;

impl Tool for PackageInfo {
    const NAME: &'static str = "aam_package_info";
    const TITLE: &'static str = "Show a package";
    const DESCRIPTION: &'static str = "Show a package: the version installed here (with its source and platforms) and what its registry publishes (versions, dist-tags, artifacts, dependencies). Next: `aam_install` or `aam_upgrade`.";
    const RISK: Risk = Risk::Read;
    const IDEMPOTENT: bool = true;
    const ERRORS: &'static [ErrorCode] = &[ErrorCode::PackageNotFound];
    const EXAMPLES: &'static [Example] = &[
        Example {
            title: "an installed registry package",
            input: r#"{"name": "review-kit"}"#,
            expect: Expect::Output(
                r#"{"name": "review-kit", "installed_version": "1.0.0", "versions": ["1.0.0", "1.1.0"], "artifacts": ["skill/code-review"]}"#,
            ),
        },
        Example {
            title: "a package nobody has",
            input: r#"{"name": "ghost"}"#,
            expect: Expect::Error(ErrorCode::PackageNotFound),
        },
    ];
    type Input = PackageInfoInput;
    type Output = PackageInfoOutput;

    fn run(ctx: &Context, input: PackageInfoInput) -> Result<PackageInfoOutput> {
        let roots = roots(ctx, input.global)?;
        let lock = checked_lock(&roots)?;
        let catalog = ctx.catalog()?;
        let settings = ctx.home.load_settings()?;
        let entry = lock.packages.get(&input.name);
        let registry = registry_for(&catalog, &settings, &input.name)?;
        if entry.is_none() && registry.is_none() {
            return Err(
                Error::new(ErrorCode::PackageNotFound, format!("no package named `{}`", input.name)).with_hint(
                    "list installed packages with `aam list`, or find packages with `aam search --type package`",
                ),
            );
        }
        let published: Vec<(semver::Version, VersionEntry)> = match &registry {
            Some(r) => catalog.registry_versions(r, &input.name)?,
            None => Vec::new(),
        };
        let dist_tags: BTreeMap<String, String> = match &registry {
            Some(r) => catalog.registry_tags(r, &input.name)?.into_iter().collect(),
            None => BTreeMap::new(),
        };
        let shown = entry
            .and_then(|e| published.iter().find(|(v, _)| v.to_string() == e.version))
            .or(published.last())
            .map(|(_, e)| e.clone());
        let installed_manifest = entry.and_then(|_| {
            let path = roots.root.join(copy_dir(&input.name)).join(MANIFEST_FILE);
            std::fs::read_to_string(path)
                .ok()
                .and_then(|t| manifest::check(&t).manifest)
        });
        let artifacts = match (&installed_manifest, &shown) {
            (Some(m), _) => m
                .artifacts
                .all()
                .map(|(k, a)| format!("{}/{}", k.as_str(), a.name))
                .collect(),
            (None, Some(e)) => e
                .artifacts
                .all()
                .map(|(k, a)| format!("{}/{}", k.as_str(), a.name))
                .collect(),
            _ => Vec::new(),
        };
        Ok(PackageInfoOutput {
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
            name: input.name,
        })
    }
}
