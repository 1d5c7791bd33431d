//! Install tools: install (which is also how an installed package is upgraded),
//! uninstall and upgrade; the read tools over installs live in [`installed`],
//! inventory and adopt (copies made by hand) in [`inventory`].
//!
//! Each tool is orchestration over [`crate::install`]: take the project lock
//! (finishing an interrupted command first), resolve specs, plan, protect
//! edits, execute through the journal, mirror into the catalog.

mod installed;
mod inventory;
mod restore;

use std::collections::BTreeMap;
use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use installed::{
    Diff, DiffOutput, FileDiff, ListInstalled, ListInstalledInput, ListInstalledOutput, ListedPackage, Outdated,
    OutdatedInput, OutdatedOutput, OutdatedPackage, PackageInfo, PackageInfoInput, PackageInfoOutput, Verify,
    VerifyAll, VerifyAllInput, VerifyAllOutput, VerifyInput, VerifyOutput,
};
pub use inventory::{
    Adopt, AdoptInput, AdoptOutput, AdoptSkip, AdoptedArtifact, ArtifactOrigin, Inventory, InventoryArtifact,
    InventoryInput, InventoryOutput, InventoryStatus, MatchKind, SkippedAdoption,
};

use super::{Context, Example, Expect, Risk, Tool};
use crate::catalog::{Catalog, InstallRecord, NewPackage, PackageMember, now_timestamp};
use crate::error::{Error, ErrorCode, Result};
use crate::install::journal::{self, InstallMirror, MirrorOp, ProjectLock};
use crate::install::merge::{self, FileConflict, Resolution};
use crate::install::plan::{Plan, Prepared};
use crate::install::specs::{SpecEnv, prepare_specs};
use crate::install::state::{self, FileState};
use crate::install::{Roots, freshness, platforms};
use crate::packages::lock::{self, LockFile, LockedPackage, Origin};
use crate::packages::store::ObjectStore;
use crate::scan::Platform;

// ---------------------------------------------------------------- shared

/// The install roots of a call (see [`Context::install_roots`]).
pub(crate) fn roots(ctx: &Context, global: bool) -> Result<Roots> {
    ctx.install_roots(global)
}

/// Takes the project lock for a write and finishes or undoes an interrupted
/// command first.
fn begin_write(ctx: &Context, roots: &Roots, no_wait: bool) -> Result<ProjectLock> {
    let lock = journal::lock_project(&roots.root, no_wait, || {
        tracing::warn!("waiting for another aam command to finish changing this project");
    })?;
    recover_locked(ctx, roots, &lock)?;
    Ok(lock)
}

fn recover_locked(ctx: &Context, roots: &Roots, lock: &ProjectLock) -> Result<()> {
    if let Some(outcome) = journal::recover(roots, lock, |ops| apply_mirror(ctx, ops))? {
        tracing::warn!(
            "an interrupted aam command in `{}` was {}",
            roots.root.display(),
            match outcome {
                journal::Recovered::RolledBack => "undone",
                journal::Recovered::RolledForward => "finished",
            }
        );
    }
    Ok(())
}

/// Finishes or undoes an interrupted command in the working directory's
/// project and in the home folder, if one is pending (every CLI command runs
/// this first).
pub fn recover_pending(ctx: &Context) -> Result<()> {
    for global in [false, true] {
        let roots = roots(ctx, global)?;
        if journal::pending(&roots.root) {
            let lock = journal::lock_project(&roots.root, false, || {
                tracing::warn!("waiting for another aam command to finish changing this project");
            })?;
            recover_locked(ctx, &roots, &lock)?;
        }
    }
    Ok(())
}

/// Applies catalog mirror operations.
fn apply_mirror(ctx: &Context, ops: &[MirrorOp]) -> Result<()> {
    if ops.is_empty() {
        return Ok(());
    }
    let mut catalog = ctx.catalog()?;
    for op in ops {
        match op {
            MirrorOp::Record(record) => record_install(&mut catalog, record)?,
            MirrorOp::Remove { project_root, package } => catalog.remove_install(project_root, package)?,
        }
    }
    Ok(())
}

fn record_install(catalog: &mut Catalog, record: &InstallMirror) -> Result<()> {
    let members: Vec<PackageMember> = record
        .members
        .iter()
        .map(|m| PackageMember {
            artifact_id: m.artifact_id,
            project_root: None,
            kind: m.kind,
            name: &m.name,
            path: &m.path,
        })
        .collect();
    let platforms: Vec<String> = record.platforms.iter().map(|p| p.as_str().to_string()).collect();
    catalog.record_install(&InstallRecord {
        project_root: &record.project_root,
        package: NewPackage {
            name: &record.name,
            version: &record.version,
            description: Some(&record.description),
            manifest_json: &record.manifest_json,
            origin: &record.origin,
            provenance_json: None,
            archive_blake3: Some(&record.checksum),
        },
        members: &members,
        platforms: &platforms,
        source_commit: record.source_commit.as_deref(),
        files: &record.files,
    })
}

fn mirror_of(roots: &Roots, entry: &LockedPackage, prepared: &Prepared) -> MirrorOp {
    MirrorOp::Record(Box::new(InstallMirror {
        project_root: roots.root_text(),
        name: prepared.manifest.name.clone(),
        version: entry.version.clone(),
        description: prepared.manifest.description.clone(),
        manifest_json: serde_json::to_string(&prepared.manifest).unwrap_or_default(),
        origin: match prepared.origin {
            Origin::Registry => "registry",
            Origin::Source | Origin::Local | Origin::Archive => "source",
        }
        .to_string(),
        checksum: entry.checksum.clone(),
        members: prepared.members.clone(),
        platforms: entry.platforms.clone(),
        source_commit: entry.source_commit.clone(),
        files: entry
            .file_checksums
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    }))
}

/// Turns install specs into packages, reading only paths the front end may.
fn prepare(ctx: &Context, catalog: &Catalog, specs: &[String]) -> Result<Vec<Prepared>> {
    prepare_env(ctx, |env| prepare_specs(&env, catalog, specs))
}

/// Runs `f` with where specs are read from: the working directory, the git
/// cache, the settings, and the front end's confinement.
fn prepare_env<T>(ctx: &Context, f: impl FnOnce(SpecEnv<'_>) -> Result<T>) -> Result<T> {
    let settings = ctx.home.load_settings()?;
    let caches = ctx.home.git_cache_dir();
    let allow_path = |path: &Path, shown: &str| ctx.check_path(path, shown);
    f(SpecEnv {
        cwd: &ctx.cwd,
        caches: &caches,
        settings: &settings,
        allow_path: &allow_path,
    })
}

fn object_store(ctx: &Context) -> ObjectStore {
    ObjectStore::new(ctx.home.root().join("objects"))
}

fn installed<'l>(lock: &'l LockFile, name: &str) -> Result<&'l LockedPackage> {
    lock.packages.get(name).ok_or_else(|| {
        let names: Vec<String> = lock.packages.keys().map(|n| format!("`{n}`")).collect();
        let hint = if names.is_empty() {
            "nothing is installed here; install with `aam install <package>`".to_string()
        } else {
            format!("installed packages: {}", names.join(", "))
        };
        Error::new(
            ErrorCode::PackageNotInstalled,
            format!("`{name}` is not installed here"),
        )
        .with_hint(hint)
    })
}

/// Copies edited files to `$AAM_HOME/backups/<pkg>--<timestamp>/`.
fn backup(ctx: &Context, roots: &Roots, name: &str, keys: &[String]) -> Result<String> {
    let stamp = now_timestamp().replace(':', "-");
    let dir = ctx
        .home
        .root()
        .join("backups")
        .join(format!("{}--{stamp}", name.replace('/', "-")));
    for key in keys {
        if let Some(bytes) = state::current_bytes(roots, key)? {
            let file = key.replace("~/", "home/").replace('#', "--").replace(' ', "-");
            crate::atomic::write_file(&dir.join(file), &bytes)?;
        }
    }
    Ok(dir.display().to_string())
}

// ---------------------------------------------------------------- install

/// What to do with files and sections edited since install when a package is
/// replaced (upgraded, or installed again).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OnEdited {
    /// Leave the package as it is and report the edited files.
    #[default]
    Skip,
    /// Copy the edited files to `$AAM_HOME/backups/<pkg>--<timestamp>/`, then replace them.
    Backup,
    /// Replace them.
    Force,
    /// Merge each edit with the new version (three-way); on a conflict, leave the package as it is and report it.
    Merge,
    /// Merge, writing overlapping changes with conflict markers.
    #[serde(rename = "merge_markers")]
    MergeMarkers,
}

impl OnEdited {
    /// Whether edits are merged with the new version.
    pub fn merges(self) -> bool {
        matches!(self, Self::Merge | Self::MergeMarkers)
    }
}

/// Input of `aam_install`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InstallInput {
    /// What to install (none: restore what `.aam/aam-lock.yaml` records): `name`, `name@constraint`, `@scope/name@1.2`, `source/artifact`, an artifact name, a folder or a `.aam` archive.
    pub specs: Vec<String>,
    /// Agents to deploy to, by id (`aam agents` lists them; default: the ones an installed package already uses, else settings, else the agents the project uses).
    #[serde(default)]
    pub platforms: Vec<Platform>,
    /// Only keep the package copy and lock entry; deploy nothing.
    #[serde(default)]
    pub no_deploy: bool,
    /// Install again even when installed; replace files edited since install and files aam did not write.
    #[serde(default)]
    pub force: bool,
    /// Save files edited since install to `$AAM_HOME/backups/` before replacing them.
    #[serde(default)]
    pub backup: bool,
    /// Work out everything, change nothing.
    #[serde(default)]
    pub dry_run: bool,
    /// Install into the home folder instead of the project.
    #[serde(default)]
    pub global: bool,
    /// Fail with `AAM_CONFLICT` instead of waiting when another aam command is changing the project.
    #[serde(default)]
    pub no_wait: bool,
    /// Content-audit rule ids (`cmd-pipe-shell`) whose findings do not block this install (see `aam_audit`).
    #[serde(default)]
    pub allow_findings: Vec<String>,
    /// With no specs: fail with `AAM_LOCK_OUTDATED` instead of changing the lock file (a restore must install exactly what it records).
    #[serde(default)]
    pub frozen: bool,
    /// Never fetch: use only what is in `AAM_HOME` (git cache, local registries); fail with `AAM_OFFLINE_MISSING` when something is not there.
    #[serde(default)]
    pub offline: bool,
}

/// One package installed.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InstalledPackage {
    /// Name.
    pub name: String,
    /// Version.
    pub version: String,
    /// Version it replaced, when it was installed already.
    pub replaced_version: Option<String>,
    /// Where it came from.
    pub source: Origin,
    /// Registry, source or path it came from.
    pub source_name: String,
    /// Platforms it was deployed to.
    pub platforms: Vec<Platform>,
    /// Files and sections written (package copy included).
    pub files_written: u64,
    /// Files and sections of the replaced version that were edited and are now replaced.
    pub replaced_edits: Vec<String>,
    /// Where the edited files were saved (with `backup`).
    pub backup_dir: Option<String>,
    /// Edited files and sections merged with the new version (`on_edited: merge`).
    pub merged_edits: Vec<String>,
    /// Edited files and sections written with conflict markers (`merge_markers`).
    pub conflict_markers: Vec<String>,
    /// Targets of the replaced version it no longer deploys (platforms dropped).
    pub undeployed: Vec<String>,
}

/// Why a package was left as it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    /// The same version is installed and every file is as installed.
    AlreadyInstalled,
    /// Files or sections were edited since install (pass `backup` or `force`).
    EditedFiles,
    /// Edits overlap changes of the new version (see `conflicts`).
    MergeConflicts,
}

impl SkipReason {
    /// Whether the package was left alone to keep local edits.
    pub fn kept_edits(self) -> bool {
        matches!(self, Self::EditedFiles | Self::MergeConflicts)
    }
}

/// A package left as it was.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SkippedPackage {
    /// Name.
    pub name: String,
    /// Version already there.
    pub version: String,
    /// Version it would have become.
    pub wanted_version: String,
    /// Why.
    pub reason: SkipReason,
    /// The edited files and sections that stopped it.
    pub modified_files: Vec<String>,
    /// The edits that did not merge, per file, with both sides.
    pub conflicts: Vec<FileConflict>,
}

/// Output of `aam_install`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InstallOutput {
    /// Packages installed (or that would be, on a dry run).
    pub installed: Vec<InstalledPackage>,
    /// Packages left as they were.
    pub skipped: Vec<SkippedPackage>,
    /// The project (or home) root.
    pub root: String,
    /// Whether nothing was changed.
    pub dry_run: bool,
    /// Content-audit findings at or above `audit.warn` in what was installed.
    pub audit_warnings: Vec<String>,
    /// What a restore changed in the lock file (it differed from what this aam installs).
    pub lock_changes: Vec<String>,
}

impl InstallOutput {
    /// Whether a package was left alone because of local edits.
    pub fn kept_edits(&self) -> bool {
        self.skipped.iter().any(|s| s.reason.kept_edits())
    }
}

/// Installs packages and deploys their artifacts.
pub struct Install;

impl InstallOutput {
    /// Nothing installed or skipped yet, in the project (or home) of `roots`.
    pub(crate) fn empty(roots: &Roots, dry_run: bool) -> Self {
        Self {
            installed: Vec::new(),
            skipped: Vec::new(),
            root: roots.root_text(),
            dry_run,
            audit_warnings: Vec::new(),
            lock_changes: Vec::new(),
        }
    }
}

impl Tool for Install {
    const NAME: &'static str = "aam_install";
    const TITLE: &'static str = "Install packages";
    const DESCRIPTION: &'static str = "Install packages (from registries, with dependencies resolved transitively), source artifacts (`source/artifact`, read from cached git objects at the indexed commit), folders or `.aam` archives, and deploy their artifacts where each platform (cursor, claude, copilot, codex, or any agent `aam_agents` lists) reads them. Installing an installed package again upgrades it in place on the platforms it already uses: files edited since install are kept and the package skipped (reported in `skipped`), unless `backup` or `force`. Writes `.aam/aam-lock.yaml` with a checksum for every file; with no specs, restores exactly what it records (`frozen`: fail rather than change it; `offline`: never fetch). All-or-nothing, even if killed: a failure leaves everything as it was. Next: `aam_verify`.";
    const RISK: Risk = Risk::Write;
    const IDEMPOTENT: bool = true;
    const ERRORS: &'static [ErrorCode] = &[
        ErrorCode::PackageNotFound,
        ErrorCode::ArtifactNotFound,
        ErrorCode::ArtifactAmbiguous,
        ErrorCode::ArtifactRejected,
        ErrorCode::AuditBlocked,
        ErrorCode::DependencyConflict,
        ErrorCode::Conflict,
        ErrorCode::ManifestInvalid,
        ErrorCode::ArchiveInvalid,
        ErrorCode::Forbidden,
        ErrorCode::UnsafePath,
        ErrorCode::LockInvalid,
        ErrorCode::SettingsInvalid,
        ErrorCode::CacheCorrupted,
        ErrorCode::SourceFileTooLarge,
        ErrorCode::SourceNotFound,
        ErrorCode::SourceNotIndexed,
        ErrorCode::RegistryNotFound,
        ErrorCode::RegistryInvalid,
        ErrorCode::ChecksumMismatch,
        ErrorCode::LockOutdated,
        ErrorCode::OfflineMissing,
        ErrorCode::SourceUrlInvalid,
        ErrorCode::GitRefNotFound,
        ErrorCode::GitCloneFailed,
        ErrorCode::GitFetchFailed,
        ErrorCode::GitAuthFailed,
        ErrorCode::NetworkError,
        ErrorCode::TlsCertificate,
    ];
    const CONSTRAINTS: &'static [&'static str] = &[
        "with no specs, installs exactly what `.aam/aam-lock.yaml` records (source artifacts at the recorded commit, registry packages at the recorded version), checksums verified",
        "all-or-nothing, even if the process is killed: the next aam command finishes or undoes it",
        "files edited since install are never replaced unless `backup` or `force`",
        "machine front ends refuse targets outside the project and AAM_HOME (global installs, Codex prompts)",
    ];
    const EXAMPLES: &'static [Example] = &[
        Example {
            title: "one source artifact for claude",
            input: r#"{"specs": ["sample/test-planner"], "platforms": ["claude"]}"#,
            expect: Expect::Output(
                r#"{"installed": [{"name": "test-planner", "source": "source", "source_name": "sample", "platforms": ["claude"]}], "skipped": []}"#,
            ),
        },
        Example {
            title: "something nobody has",
            input: r#"{"specs": ["ghost"], "platforms": ["claude"]}"#,
            expect: Expect::Error(ErrorCode::PackageNotFound),
        },
    ];
    type Input = InstallInput;
    type Output = InstallOutput;

    fn run(ctx: &Context, input: InstallInput) -> Result<InstallOutput> {
        let on_edited = if input.force {
            OnEdited::Force
        } else if input.backup {
            OnEdited::Backup
        } else {
            OnEdited::Skip
        };
        if input.specs.is_empty() {
            return restore::restore(ctx, &input, on_edited);
        }
        if input.frozen {
            return Err(
                Error::invalid_argument("`frozen` restores the lock file as it is and takes no specs").with_hint(
                    "run `aam install --frozen` with no arguments, or drop `--frozen` to install new packages",
                ),
            );
        }
        install(ctx, &input, on_edited)
    }
}

/// The one install path: new packages, and installed ones replaced (what an
/// upgrade is), with edits protected by `on_edited`.
fn install(ctx: &Context, input: &InstallInput, on_edited: OnEdited) -> Result<InstallOutput> {
    let (prepared, audit_warnings) = {
        let catalog = ctx.catalog()?;
        let prepared = prepare(ctx, &catalog, &input.specs)?;
        let policy = ctx.audit_policy(input.global)?;
        let warnings = crate::audit::gate::gate(&catalog, &prepared, &input.allow_findings, &policy)?;
        (prepared, warnings)
    };
    for warning in &audit_warnings {
        tracing::warn!("{warning}");
    }
    let mut output = install_prepared(ctx, input, prepared, on_edited)?;
    output.audit_warnings = audit_warnings;
    Ok(output)
}

/// What one command does with one prepared package.
enum Decision {
    Add {
        platforms: Vec<Platform>,
        existing: Option<Box<LockedPackage>>,
        modified: Vec<String>,
        merged: Resolution,
    },
    Skip(SkippedPackage),
}

/// Installs prepared packages as one unit under the project lock. A package
/// kept for its edits also keeps every package of the command that depends on it.
fn install_prepared(
    ctx: &Context,
    input: &InstallInput,
    prepared: Vec<Prepared>,
    on_edited: OnEdited,
) -> Result<InstallOutput> {
    let roots = roots(ctx, input.global)?;
    let _lock = if input.dry_run {
        None
    } else {
        Some(begin_write(ctx, &roots, input.no_wait)?)
    };
    let home_settings = ctx.home.load_settings()?;
    let mut default_platforms: Option<Vec<Platform>> = None;
    let store = object_store(ctx);
    let mut plan = Plan::new(&roots, input.force)?.with_ownership(move |digest| store.has(digest));
    let mut decisions = Vec::with_capacity(prepared.len());
    for package in &prepared {
        let name = &package.manifest.name;
        let existing = plan.lock().packages.get(name).cloned();
        if let Some(existing) = &existing
            && !input.force
        {
            same_origin(name, existing, package)?;
        }
        let platforms = if input.no_deploy {
            Vec::new()
        } else if !input.platforms.is_empty() {
            input.platforms.clone()
        } else if let Some(existing) = &existing {
            existing.platforms.clone()
        } else {
            match &default_platforms {
                Some(p) => p.clone(),
                None => {
                    let chosen = platforms::choose(&roots, &home_settings, &[])?;
                    default_platforms = Some(chosen.clone());
                    chosen
                }
            }
        };
        let status = match &existing {
            Some(existing) => state::file_status(&roots, existing)?,
            None => BTreeMap::new(),
        };
        let modified = state::keys_in(&status, FileState::Modified);
        let decision = match &existing {
            Some(existing)
                if !input.force
                    && existing.version == package.manifest.version
                    && existing.checksum == package.checksum
                    && sorted(&existing.platforms) == sorted(&platforms)
                    && status.values().all(|s| *s == FileState::Ok) =>
            {
                Decision::Skip(skipped(existing, package, SkipReason::AlreadyInstalled, Vec::new()))
            }
            Some(existing) if !modified.is_empty() && on_edited == OnEdited::Skip => {
                Decision::Skip(skipped(existing, package, SkipReason::EditedFiles, modified))
            }
            Some(existing) if !modified.is_empty() && on_edited.merges() => {
                // What the new version writes, worked out on a scratch plan.
                let mut preview = Plan::new(&roots, input.force)?;
                preview.add(package, &platforms)?;
                let upstream = |key: &str| preview.planned(key);
                let markers = on_edited == OnEdited::MergeMarkers;
                let merged = merge::resolve(&roots, &object_store(ctx), existing, &modified, upstream, markers)?;
                match merged.conflicts.is_empty() {
                    false => Decision::Skip(SkippedPackage {
                        conflicts: merged.conflicts,
                        ..skipped(existing, package, SkipReason::MergeConflicts, modified)
                    }),
                    true => Decision::Add {
                        platforms,
                        existing: Some(Box::new(existing.clone())),
                        modified: Vec::new(),
                        merged,
                    },
                }
            }
            _ => Decision::Add {
                platforms,
                existing: existing.map(Box::new),
                modified,
                merged: Resolution::default(),
            },
        };
        decisions.push(decision);
    }
    keep_dependents_of_kept(&prepared, &mut decisions);
    let mut output = InstallOutput::empty(&roots, input.dry_run);
    let mut todo = Vec::new();
    let mut backups = Vec::new();
    for (package, decision) in prepared.iter().zip(decisions) {
        let (platforms, existing, modified, merged) = match decision {
            Decision::Skip(skipped) => {
                output.skipped.push(skipped);
                continue;
            }
            Decision::Add {
                platforms,
                existing,
                modified,
                merged,
            } => (platforms, existing, modified, merged),
        };
        let name = &package.manifest.name;
        let entry = plan.add(package, &platforms)?;
        for (key, bytes) in &merged.writes {
            plan.replace_planned(key, bytes)?;
        }
        let undeployed: Vec<String> = existing
            .iter()
            .flat_map(|e| &e.deployed)
            .filter(|d| !entry.deployed.iter().any(|n| n.target == d.target))
            .map(|d| d.target.clone())
            .collect();
        if on_edited == OnEdited::Backup && !modified.is_empty() {
            backups.push((output.installed.len(), name.clone(), modified.clone()));
        }
        output.installed.push(InstalledPackage {
            name: name.clone(),
            version: entry.version.clone(),
            replaced_version: existing.as_ref().map(|e| e.version.clone()),
            source: entry.source,
            source_name: entry.source_name.clone(),
            platforms: entry.platforms.clone(),
            files_written: entry.file_checksums.len() as u64,
            replaced_edits: modified,
            backup_dir: None,
            merged_edits: merged.merged,
            conflict_markers: merged.marked,
            undeployed,
        });
        todo.push(mirror_of(&roots, &entry, package));
    }
    if input.dry_run || todo.is_empty() {
        return Ok(output);
    }
    for (index, name, keys) in backups {
        output.installed[index].backup_dir = Some(backup(ctx, &roots, &name, &keys)?);
    }
    plan.execute(&object_store(ctx), todo, &ctx.cancel, |ops| apply_mirror(ctx, ops))?;
    Ok(output)
}

/// Turns `Add` into `Skip` for every package that depends (directly or not)
/// on one kept for its edits: it would otherwise run against the old version.
fn keep_dependents_of_kept(prepared: &[Prepared], decisions: &mut [Decision]) {
    loop {
        let kept: BTreeMap<String, Vec<String>> = decisions
            .iter()
            .filter_map(|d| match d {
                Decision::Skip(s) if s.reason.kept_edits() => Some((s.name.clone(), s.modified_files.clone())),
                _ => None,
            })
            .collect();
        let mut changed = false;
        for (package, decision) in prepared.iter().zip(decisions.iter_mut()) {
            let Decision::Add { existing, .. } = decision else {
                continue;
            };
            let Some(files) = package.manifest.dependencies.keys().find_map(|d| kept.get(d)) else {
                continue;
            };
            *decision = Decision::Skip(SkippedPackage {
                name: package.manifest.name.clone(),
                version: existing.as_ref().map(|e| e.version.clone()).unwrap_or_default(),
                wanted_version: package.manifest.version.clone(),
                reason: SkipReason::EditedFiles,
                modified_files: files.clone(),
                conflicts: Vec::new(),
            });
            changed = true;
        }
        if !changed {
            return;
        }
    }
}

fn sorted(platforms: &[Platform]) -> Vec<Platform> {
    let mut out = platforms.to_vec();
    out.sort_by_key(|p| p.as_str());
    out.dedup();
    out
}

fn skipped(existing: &LockedPackage, package: &Prepared, reason: SkipReason, modified: Vec<String>) -> SkippedPackage {
    SkippedPackage {
        name: package.manifest.name.clone(),
        version: existing.version.clone(),
        wanted_version: package.manifest.version.clone(),
        reason,
        modified_files: modified,
        conflicts: Vec::new(),
    }
}

/// Refuses to replace an installed package with a same-named one from
/// elsewhere (another source, a registry instead of a folder...). A folder
/// and its archives count as one place.
fn same_origin(name: &str, existing: &LockedPackage, package: &Prepared) -> Result<()> {
    let files = |o: Origin| matches!(o, Origin::Local | Origin::Archive);
    let same = existing.checksum == package.checksum
        || (existing.source == Origin::Registry
            && package.origin == Origin::Registry
            && existing.source_name == package.source_name)
        || (files(existing.source) && files(package.origin))
        || (existing.source == package.origin && existing.source_name == package.source_name);
    if same {
        return Ok(());
    }
    let from = |origin: Origin, source: &str| format!("{} `{source}`", origin.as_str());
    Err(Error::new(
        ErrorCode::Conflict,
        format!(
            "`{name}` is installed from {}; this one comes from {}",
            from(existing.source, &existing.source_name),
            from(package.origin, &package.source_name)
        ),
    )
    .with_hint(format!(
        "uninstall `{name}` first (`aam uninstall {name}`), or pass `--force` to replace it"
    )))
}

// ---------------------------------------------------------------- uninstall

/// Input of `aam_uninstall`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UninstallInput {
    /// Package name.
    pub package: String,
    /// Remove files even when they were edited since install.
    #[serde(default)]
    pub force: bool,
    /// Uninstall from the home folder.
    #[serde(default)]
    pub global: bool,
    /// Fail with `AAM_CONFLICT` instead of waiting when another aam command is changing the project.
    #[serde(default)]
    pub no_wait: bool,
}

/// Output of `aam_uninstall`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UninstallOutput {
    /// Package removed.
    pub removed: String,
    /// Its version.
    pub version: String,
    /// Files and sections removed.
    pub removed_files: Vec<String>,
    /// Files and sections kept because they were edited (pass `force` to remove them).
    pub kept_modified: Vec<String>,
    /// Files and sections kept because aam never wrote them on this machine
    /// (the lock file came from elsewhere; pass `force` to remove them).
    pub kept_not_written_here: Vec<String>,
    /// Files already gone.
    pub missing_files: Vec<String>,
    /// Installed packages that depend on it.
    pub dependents: Vec<String>,
}

/// Removes an installed package.
pub struct Uninstall;

impl Tool for Uninstall {
    const NAME: &'static str = "aam_uninstall";
    const TITLE: &'static str = "Uninstall a package";
    const DESCRIPTION: &'static str = "Remove an installed package: undeploy it from every platform it was deployed to and delete its copy, removing only files it wrote that are unchanged (and only folders it created); edited files and sections are kept and reported unless `force`. Reports installed packages that depend on it.";
    const RISK: Risk = Risk::Destructive;
    const IDEMPOTENT: bool = false;
    const ERRORS: &'static [ErrorCode] = &[
        ErrorCode::PackageNotInstalled,
        ErrorCode::LockInvalid,
        ErrorCode::Forbidden,
        ErrorCode::UnsafePath,
        ErrorCode::Conflict,
    ];
    const CONSTRAINTS: &'static [&'static str] = &["files edited since install are kept unless `force`"];
    const EXAMPLES: &'static [Example] = &[
        Example {
            title: "remove an installed package",
            input: r#"{"package": "review-kit"}"#,
            expect: Expect::Output(r#"{"removed": "review-kit", "kept_modified": []}"#),
        },
        Example {
            title: "a package that is not installed",
            input: r#"{"package": "ghost"}"#,
            expect: Expect::Error(ErrorCode::PackageNotInstalled),
        },
    ];
    type Input = UninstallInput;
    type Output = UninstallOutput;

    fn run(ctx: &Context, input: UninstallInput) -> Result<UninstallOutput> {
        let roots = roots(ctx, input.global)?;
        let _lock = begin_write(ctx, &roots, input.no_wait)?;
        let store = object_store(ctx);
        let mut plan = Plan::new(&roots, input.force)?.with_ownership(move |digest| store.has(digest));
        let entry = installed(plan.lock(), &input.package)?.clone();
        let dependents: Vec<String> = plan
            .lock()
            .packages
            .iter()
            .filter(|(_, p)| p.dependencies.contains_key(&input.package))
            .map(|(n, _)| n.clone())
            .collect();
        let status = state::file_status(&roots, &entry)?;
        // A file as recorded but never written by aam on this machine (the lock
        // came from elsewhere) is kept, like an edited one, unless forced.
        let (mut remove, mut unproven): (Vec<String>, Vec<String>) = state::keys_in(&status, FileState::Ok)
            .into_iter()
            .partition(|key| plan.written_here(&entry.file_checksums[key]));
        let mut kept = state::keys_in(&status, FileState::Modified);
        if input.force {
            remove.append(&mut kept);
            remove.append(&mut unproven);
            remove.sort();
        }
        plan.remove_package(&input.package, &remove)?;
        let mirror = vec![MirrorOp::Remove {
            project_root: roots.root_text(),
            package: input.package.clone(),
        }];
        plan.execute(&object_store(ctx), mirror, &ctx.cancel, |ops| apply_mirror(ctx, ops))?;
        Ok(UninstallOutput {
            removed: input.package,
            version: entry.version,
            removed_files: remove,
            kept_modified: kept,
            kept_not_written_here: unproven,
            missing_files: state::keys_in(&status, FileState::Missing),
            dependents,
        })
    }
}

// ---------------------------------------------------------------- upgrade

/// Input of `aam_upgrade`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpgradeInput {
    /// Package to upgrade (default: every outdated one).
    #[serde(default)]
    pub package: Option<String>,
    /// What to do when files were edited since install: skip the package, back them up, force, or merge each edit with the new version (`merge`; `merge_markers` writes overlapping changes with conflict markers).
    #[serde(default)]
    pub on_edited: OnEdited,
    /// Report what would change, change nothing.
    #[serde(default)]
    pub dry_run: bool,
    /// Upgrade the home-folder installs.
    #[serde(default)]
    pub global: bool,
    /// Fail with `AAM_CONFLICT` instead of waiting when another aam command is changing the project.
    #[serde(default)]
    pub no_wait: bool,
    /// Content-audit rule ids (`cmd-pipe-shell`) whose findings do not block this upgrade (see `aam_audit`).
    #[serde(default)]
    pub allow_findings: Vec<String>,
}

/// What happened to one package.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum UpgradeStatus {
    /// Upgraded.
    Upgraded,
    /// Would be upgraded (dry run).
    WouldUpgrade,
    /// Nothing newer.
    UpToDate,
    /// Left alone: files were edited since install.
    Skipped,
    /// The upgrade failed; see `message`.
    Failed,
}

/// One package's upgrade.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpgradeReport {
    /// Name.
    pub name: String,
    /// Version before.
    pub from: String,
    /// Version after (or that would be installed).
    pub to: String,
    /// What happened.
    pub status: UpgradeStatus,
    /// Files edited since install (of it, or of a dependency the upgrade moves).
    pub modified_files: Vec<String>,
    /// Where edited files were copied.
    pub backup_dir: Option<String>,
    /// Edited files and sections merged with the new version.
    pub merged_files: Vec<String>,
    /// Edited files and sections written with conflict markers.
    pub conflict_markers: Vec<String>,
    /// Edits that did not merge, per file, with both sides (nothing of the package was written).
    pub conflicts: Vec<FileConflict>,
    /// Why it was skipped or failed.
    pub message: Option<String>,
}

/// Output of `aam_upgrade`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpgradeOutput {
    /// One report per package considered.
    pub packages: Vec<UpgradeReport>,
    /// Content-audit findings at or above `audit.warn` in what the upgrade installs.
    pub audit_warnings: Vec<String>,
}

/// Upgrades installed packages, protecting local edits.
pub struct Upgrade;

impl Tool for Upgrade {
    const NAME: &'static str = "aam_upgrade";
    const TITLE: &'static str = "Upgrade packages";
    const DESCRIPTION: &'static str = "Upgrade outdated installed packages (or one) to the newest version their constraint allows, or the source's current content, on the platforms they use. Files edited since install are never overwritten silently: `on_edited` skips the package (default), backs the files up first, forces, or merges each edit with the new version (three-way; the lock records the new version, so `aam_verify` and `aam_diff` show the edit on top of it). Overlapping changes, and edited files the new version deletes, leave the package as it is with a per-file `conflicts` list, unless `merge_markers` writes conflict markers. Reports each package's status.";
    const RISK: Risk = Risk::Write;
    const IDEMPOTENT: bool = true;
    const ERRORS: &'static [ErrorCode] = &[
        ErrorCode::PackageNotInstalled,
        ErrorCode::LockInvalid,
        ErrorCode::UnsafePath,
        ErrorCode::Conflict,
        ErrorCode::SettingsInvalid,
    ];
    const CONSTRAINTS: &'static [&'static str] = &[
        "edited files are never overwritten silently: `on_edited` skips (default), backs up, forces or merges",
        "a merge writes nothing of a package when any of its edits conflicts (unless `merge_markers`); binary files never merge",
        "new versions pass the content-audit gate like installs; a blocked one fails the upgrade with `AAM_AUDIT_BLOCKED` in its report",
    ];
    const EXAMPLES: &'static [Example] = &[Example {
        title: "upgrade within the constraint",
        input: r#"{"package": "review-kit"}"#,
        expect: Expect::Output(
            r#"{"packages": [{"name": "review-kit", "from": "1.0.0", "to": "1.1.0", "status": "upgraded"}]}"#,
        ),
    }];
    type Input = UpgradeInput;
    type Output = UpgradeOutput;

    fn run(ctx: &Context, input: UpgradeInput) -> Result<UpgradeOutput> {
        let roots = roots(ctx, input.global)?;
        let lock = lock::read(&roots.root)?;
        roots.check_lock(&lock)?;
        let names: Vec<String> = match &input.package {
            Some(name) => {
                installed(&lock, name)?;
                vec![name.clone()]
            }
            None => lock.packages.keys().cloned().collect(),
        };
        let settings = ctx.home.load_settings()?;
        let catalog = ctx.catalog()?;
        let mut reports = Vec::new();
        let mut prepared: Vec<Prepared> = Vec::new();
        let mut moving = Vec::new();
        for name in names {
            let entry = &lock.packages[&name];
            let fresh = freshness::check(&catalog, &settings, &name, entry)?;
            let mut report = UpgradeReport {
                name: name.clone(),
                from: entry.version.clone(),
                to: fresh.wanted.clone().unwrap_or_else(|| entry.version.clone()),
                status: UpgradeStatus::UpToDate,
                modified_files: Vec::new(),
                backup_dir: None,
                merged_files: Vec::new(),
                conflict_markers: Vec::new(),
                conflicts: Vec::new(),
                message: None,
            };
            if fresh.outdated {
                let spec = match entry.source {
                    Origin::Registry => format!("{name}@{}", entry.requested.as_deref().unwrap_or("*")),
                    _ => entry.requested.clone().unwrap_or_else(|| name.clone()),
                };
                // A package that cannot be prepared fails alone; the others go on.
                match prepare(ctx, &catalog, &[spec]) {
                    Ok(packages) => {
                        moving.push(name.clone());
                        for package in packages {
                            if !prepared.iter().any(|p| p.manifest.name == package.manifest.name) {
                                prepared.push(package);
                            }
                        }
                    }
                    Err(e) => {
                        report.status = UpgradeStatus::Failed;
                        report.message = Some(format!("[{}] {}", e.code(), e.message()));
                    }
                }
            }
            reports.push(report);
        }
        // New versions pass the same content-audit gate as installs; a blocked
        // one stops the whole upgrade, which is one unit.
        let gated = match prepared.is_empty() {
            true => Ok(Vec::new()),
            false => ctx
                .audit_policy(input.global)
                .and_then(|policy| crate::audit::gate::gate(&catalog, &prepared, &input.allow_findings, &policy)),
        };
        drop(catalog);
        let audit_warnings = match gated {
            Ok(warnings) => {
                warnings.iter().for_each(|warning| tracing::warn!("{warning}"));
                warnings
            }
            Err(e) => {
                fail_moving(&mut reports, &moving, &e);
                return Ok(UpgradeOutput {
                    packages: reports,
                    audit_warnings: Vec::new(),
                });
            }
        };
        if prepared.is_empty() {
            return Ok(UpgradeOutput {
                packages: reports,
                audit_warnings,
            });
        }
        let request = InstallInput {
            dry_run: input.dry_run,
            global: input.global,
            no_wait: input.no_wait,
            ..Default::default()
        };
        // Every upgrade of the command is one unit; a dry run reports what
        // would be replaced, edits included (or how they would merge).
        let policy = if input.dry_run && !input.on_edited.merges() {
            OnEdited::Force
        } else {
            input.on_edited
        };
        match install_prepared(ctx, &request, prepared, policy) {
            Ok(done) => {
                for report in &mut reports {
                    upgrade_report(report, &done, input.dry_run);
                }
            }
            Err(e) => fail_moving(&mut reports, &moving, &e),
        }
        Ok(UpgradeOutput {
            packages: reports,
            audit_warnings,
        })
    }
}

/// Marks every package the upgrade was moving as failed with `error`.
fn fail_moving(reports: &mut [UpgradeReport], moving: &[String], error: &Error) {
    for report in reports.iter_mut().filter(|r| moving.contains(&r.name)) {
        report.status = UpgradeStatus::Failed;
        report.message = Some(match error.hint() {
            Some(hint) => format!("[{}] {} ({hint})", error.code(), error.message()),
            None => format!("[{}] {}", error.code(), error.message()),
        });
    }
}

fn upgrade_report(report: &mut UpgradeReport, done: &InstallOutput, dry_run: bool) {
    for package in done.installed.iter().filter(|p| p.name == report.name) {
        report.modified_files.extend(package.replaced_edits.iter().cloned());
        report.to = package.version.clone();
        report.backup_dir = package.backup_dir.clone();
        report.merged_files = package.merged_edits.clone();
        report.conflict_markers = package.conflict_markers.clone();
        report.status = if dry_run {
            UpgradeStatus::WouldUpgrade
        } else {
            UpgradeStatus::Upgraded
        };
    }
    let kept = done
        .skipped
        .iter()
        .filter(|s| s.reason.kept_edits() && s.name == report.name);
    for package in kept {
        report.modified_files.extend(package.modified_files.iter().cloned());
        report.conflicts.extend(package.conflicts.iter().cloned());
        report.status = UpgradeStatus::Skipped;
        report.message = Some(match package.reason {
            SkipReason::MergeConflicts => format!(
                "edits in {} file(s) do not merge with the new version (see `conflicts`); resolve them by hand, or choose merge_markers, backup or force",
                package.conflicts.len()
            ),
            _ => "files were edited since install; choose merge, backup or force".to_string(),
        });
    }
}
