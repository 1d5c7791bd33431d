//! `aam_install`: resolve specs, plan the change list, protect edited files and apply
//! it through the journal (also how an installed package is upgraded).

use crate::tools::with_fresh_registries;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{apply_mirror, begin_write, object_store, prepare, roots, written_here};
use crate::error::{Error, ErrorCode, Result};
use crate::install::decision::{Decision, OnEdited, SkippedPackage, decide, keep_dependents_of_kept, platforms_for};
use crate::install::plan::{Plan, Prepared, same_origin};
use crate::install::specs::KeptRegistries;
use crate::install::{Roots, platforms};
use crate::install::{mirror, state};
use crate::packages::lock::Origin;
use crate::packages::manifest::Manifest;
use crate::scan::Platform;
use crate::tools::{Context, Example, Expect, Risk, Tool};

/// Input of `aam_install`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InstallInput {
    /// What to install (none: restore what `.aam/aam-lock.yaml` records): `name`, `name@constraint`, `@scope/name@1.2`, `source/artifact`, an artifact name, a folder or a `.aam` archive.
    #[serde(default)]
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
    /// Save files edited since install, and files no package records where it deploys, to `$AAM_HOME/backups/` before replacing them.
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
    /// Files and sections no installed package recorded that were where it deploys, saved to `backup_dir` and replaced (`backup`).
    pub replaced_untracked: Vec<String>,
    /// Platforms it is recorded for that take none of its artifact types here: nothing was deployed for them.
    pub nothing_for: Vec<Platform>,
    /// Where it is deployed: folders, files and `FILE#name type` sections, as lock keys.
    pub deployed_to: Vec<String>,
    /// Where the edited files were saved (with `backup`).
    pub backup_dir: Option<String>,
    /// Edited files and sections merged with the new version (`on_edited: merge`).
    pub merged_edits: Vec<String>,
    /// Edited files and sections left as they are: a restore writing the missing ones around them, or home-folder files the lock names that no install on this machine wrote.
    pub kept_edits: Vec<String>,
    /// Files it did not install found in folders of the replaced version it no longer deploys (a skill renamed or dropped): kept, with their folders.
    pub kept_untracked: Vec<String>,
    /// Edited files and sections written with conflict markers (`merge_markers`).
    pub conflict_markers: Vec<String>,
    /// Targets of the replaced version it no longer deploys (platforms dropped).
    pub undeployed: Vec<String>,
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
    // A restore (no `specs`) fetches what the cache lacks from each source's URL.
    const OPEN_WORLD: bool = true;
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
        ErrorCode::CacheCorrupted,
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
        ErrorCode::SourceFileTooLarge,
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
        let on_edited = OnEdited::from_flags(input.force, input.backup);
        if input.specs.is_empty() {
            return super::restore::restore(ctx, &input, on_edited);
        }
        if input.frozen {
            return Err(Error::invalid_argument(
                "`--frozen` (`frozen`) restores the lock file as it is and takes no specs",
            )
            .with_hint("run `aam install --frozen` with no arguments, or drop `--frozen` to install new packages"));
        }
        install(ctx, &input, on_edited)
    }
}

/// The one install path: new packages, and installed ones replaced (what an
/// upgrade is), with edits protected by `on_edited`.
pub(super) fn install(ctx: &Context, input: &InstallInput, on_edited: OnEdited) -> Result<InstallOutput> {
    let (prepared, audit_warnings) = {
        let catalog = with_fresh_registries(ctx, &ctx.home.load_settings()?)?;
        // A name is looked up afresh (the default registry first): what the
        // lock file records does not steer what the user asks for.
        let mut prepared = prepare(ctx, &catalog, &input.specs, &KeptRegistries::new())?;
        let roots = roots(ctx, input.global)?;
        let lock = crate::packages::lock::read(&roots.root)?;
        roots.check_lock(&lock)?;
        refuse_breaking_dependents(&lock, &prepared)?;
        refuse_overriding_requests(&lock, &prepared, &input.specs)?;
        // Installing an installed package replaces it, as an upgrade does.
        if on_edited != OnEdited::Force {
            for package in &prepared {
                if let Some(entry) = lock.packages.get(&package.manifest.name) {
                    super::prove_unwritten(ctx, &catalog, &roots, (&package.manifest.name, entry), input.dry_run)?;
                }
            }
        }
        let policy = ctx.install_audit_policy(input.global)?;
        let recorded = |package: &Prepared| super::recorded_allowance(&roots, &lock, package, false);
        let warnings = crate::audit::gate::gate(&catalog, &mut prepared, &input.allow_findings, recorded, &policy)?;
        (prepared, warnings)
    };
    for warning in &audit_warnings {
        tracing::warn!("{warning}");
    }
    let mut output = install_prepared(ctx, input, prepared, on_edited)?;
    output.audit_warnings = audit_warnings;
    Ok(output)
}

/// Refuses an install whose versions break what installed packages it does
/// not replace require of them (`dy@2.0.0` while `dx` needs `dy ^1`): the lock
/// would record a dependency its dependent excludes.
fn refuse_breaking_dependents(lock: &crate::packages::lock::LockFile, prepared: &[Prepared]) -> Result<()> {
    let installing: std::collections::BTreeMap<String, semver::Version> = prepared
        .iter()
        .filter_map(|p| {
            Some((
                p.manifest.name.clone(),
                semver::Version::parse(&p.manifest.version).ok()?,
            ))
        })
        .collect();
    let kept = lock
        .packages
        .iter()
        .filter(|(name, _)| !installing.contains_key(*name))
        .map(|(name, entry)| (name.as_str(), entry.version.as_str(), &entry.dependencies));
    let Some(broken) = crate::packages::resolve::broken_constraints(kept, &installing)
        .into_iter()
        .next()
    else {
        return Ok(());
    };
    let (dependent, dependent_version) = &broken.dependent;
    Err(Error::new(
        ErrorCode::DependencyConflict,
        format!(
            "`{}` {} does not satisfy `{}`, which the installed `{dependent}` {dependent_version} requires",
            broken.dependency, broken.version, broken.constraint
        ),
    )
    .with_hint(format!(
        "install a version that does (`aam install {}@{}`), or upgrade or uninstall `{dependent}` first",
        broken.dependency, broken.constraint
    )))
}

/// Refuses an install that would move a package installed from a registry
/// out of the version range it was asked for (`base@0.1.0`), as a dependency
/// of another package (`mid` needing `base ^1`): what the user asked for is
/// changed only by naming it again.
fn refuse_overriding_requests(
    lock: &crate::packages::lock::LockFile,
    prepared: &[Prepared],
    specs: &[String],
) -> Result<()> {
    let named = |name: &str| {
        specs
            .iter()
            .any(|spec| crate::install::specs::split_version(spec).0 == name)
    };
    // Only what registries resolve comes in as a dependency: a folder or an
    // archive is asked for by its path.
    let dependencies = prepared
        .iter()
        .filter(|p| p.origin == crate::packages::lock::Origin::Registry && !named(&p.manifest.name));
    for package in dependencies {
        let name = &package.manifest.name;
        let Some(entry) = lock
            .packages
            .get(name)
            .filter(|e| e.source == crate::packages::lock::Origin::Registry)
        else {
            continue;
        };
        let Some(asked) = entry.requested.as_deref() else {
            continue;
        };
        let (Ok(range), Ok(version)) = (
            crate::packages::manifest::parse_constraint(asked),
            semver::Version::parse(&package.manifest.version),
        ) else {
            continue;
        };
        if range.matches(&version) {
            continue;
        }
        let wanted = package.requested.as_deref().unwrap_or("*");
        return Err(Error::new(
            ErrorCode::DependencyConflict,
            format!(
                "a package being installed requires `{name}` `{wanted}`, which would replace the installed `{name}` {} asked for as `{asked}` with {version}",
                entry.version
            ),
        )
        .with_hint(format!(
            "name it with a version both allow (`aam install {} {name}@{wanted}`), or keep `{name}` as it is",
            specs.join(" ")
        )));
    }
    Ok(())
}

/// Whether the source `source` still has the artifact a lock entry records, at
/// its path; when that cannot be told (no catalog, no such source), it is taken
/// to be there, so a same-named package elsewhere stays a conflict.
fn still_in_source(ctx: &Context, source: &str, artifact: &crate::packages::lock::LockedArtifact) -> bool {
    let Ok(catalog) = ctx.catalog() else {
        return true;
    };
    match catalog.find_source(source) {
        Ok(Some(record)) => match catalog.artifact_at(record.id, &artifact.path) {
            Ok(Some(now)) => now.kind == artifact.kind,
            Ok(None) => false,
            Err(_) => true,
        },
        _ => true,
    }
}

/// Installs prepared packages as one unit under the project lock. A package
/// kept for its edits also keeps every package of the command that depends on it.
pub(super) fn install_prepared(
    ctx: &Context,
    input: &InstallInput,
    prepared: Vec<Prepared>,
    on_edited: OnEdited,
) -> Result<InstallOutput> {
    let roots = roots(ctx, input.global)?;
    let home_settings = ctx.home.load_settings()?;
    // No platform to deploy a new package to is said before the project lock
    // is taken, which makes `.aam/`: a folder that is no project stays as it was.
    if !input.no_deploy && input.platforms.is_empty() && !input.dry_run {
        let installed = roots.read_lock().map(|lock| lock.packages).unwrap_or_default();
        if prepared.iter().any(|p| !installed.contains_key(&p.manifest.name)) {
            platforms::choose(&roots, &home_settings, &[])?;
        }
    }
    let _lock = if input.dry_run {
        None
    } else {
        Some(begin_write(ctx, &roots, input.no_wait)?)
    };
    let mut default_platforms: Option<Vec<Platform>> = None;
    let plan = Plan::new(&roots, input.force)?;
    let written = written_here(ctx, &roots, plan.lock())?;
    let mut plan = plan.with_ownership(written);
    match on_edited {
        OnEdited::Backup => plan = plan.saving_what_is_in_the_way(),
        OnEdited::Force => plan = plan.replacing_shared_files(),
        _ => {}
    }
    let mut decisions = Vec::with_capacity(prepared.len());
    for package in &prepared {
        let name = &package.manifest.name;
        let existing = plan.lock().packages.get(name);
        if let Some(existing) = existing
            && !input.force
        {
            same_origin(name, existing, package, |artifact| {
                still_in_source(ctx, &existing.source_name, artifact)
            })?;
        }
        let platforms = platforms_for(input.no_deploy, &input.platforms, existing, || {
            let chosen = match &default_platforms {
                Some(chosen) => chosen.clone(),
                None => platforms::choose(&roots, &home_settings, &[])?,
            };
            default_platforms = Some(chosen.clone());
            Ok(chosen)
        })?;
        let store = object_store(ctx);
        decisions.push(decide(
            &plan,
            &store,
            existing,
            package,
            platforms,
            input.force,
            on_edited,
        )?);
    }
    let manifests: Vec<&Manifest> = prepared.iter().map(|p| &p.manifest).collect();
    keep_dependents_of_kept(&manifests, &mut decisions);
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
        plan.replacing_edits(modified.iter().chain(merged.writes.keys()));
        let entry = plan.add(package, &platforms)?;
        // What the plan leaves of them (a home-folder file no install here wrote) stays.
        let (modified, kept_edits): (Vec<String>, Vec<String>) = modified
            .into_iter()
            .partition(|key| !plan.kept_unrecorded().contains(key));
        let in_the_way = plan.take_in_the_way();
        for (key, bytes) in &merged.writes {
            plan.replace_planned(key, bytes)?;
        }
        // A place still deployed under another name (an agent folder linked to
        // another) is not undeployed.
        let place = |target: &str| roots.real_place(target);
        let undeployed: Vec<String> = existing
            .iter()
            .flat_map(|e| &e.deployed)
            .filter(|d| !entry.deployed.iter().any(|n| n.target == d.target))
            .filter(|d| {
                place(&d.target).is_none_or(|p| !entry.deployed.iter().any(|n| place(&n.target) == Some(p.clone())))
            })
            .map(|d| d.target.clone())
            .collect();
        // Files of the user's in a folder no longer deployed stay, with that folder: said so.
        let kept_untracked = match &existing {
            Some(previous) if !undeployed.is_empty() => state::untracked(&roots, name, previous)?
                .into_iter()
                .filter(|key| undeployed.iter().any(|t| key.starts_with(&format!("{t}/"))))
                .collect(),
            _ => Vec::new(),
        };
        if on_edited == OnEdited::Backup && !(modified.is_empty() && in_the_way.is_empty()) {
            let saved: Vec<String> = modified.iter().chain(&in_the_way).cloned().collect();
            backups.push((output.installed.len(), name.clone(), saved));
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
            replaced_untracked: in_the_way,
            nothing_for: package.platforms_taking_none(&entry.platforms, roots.global),
            deployed_to: entry.targets(),
            backup_dir: None,
            merged_edits: merged.merged,
            kept_edits,
            kept_untracked,
            conflict_markers: merged.marked,
            undeployed,
        });
        todo.push(mirror::record_of(&roots, &entry, package));
    }
    if input.dry_run {
        // What the backups would refuse fails the dry run as it fails the command.
        for (_, _, keys) in &backups {
            state::check_backup(&roots, keys)?;
        }
        return Ok(output);
    }
    if todo.is_empty() {
        return Ok(output);
    }
    for (index, name, keys) in backups {
        output.installed[index].backup_dir = Some(state::backup(ctx.home.root(), &roots, &name, &keys)?);
    }
    plan.execute(&object_store(ctx), todo, &ctx.cancel, |ops| apply_mirror(ctx, ops))?;
    Ok(output)
}
