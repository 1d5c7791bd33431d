//! `aam_upgrade`: install newer versions of installed packages, keeping or merging
//! edited files.

use crate::tools::with_fresh_registries;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::apply::{InstallInput, InstallOutput, install_prepared};
use super::{prepare, prove_unwritten, roots};
use crate::catalog::Catalog;
use crate::error::{Error, ErrorCode, Result};
use crate::install::decision::{OnEdited, SkipReason};
use crate::install::freshness;
use crate::install::merge::{ConflictKind, FileConflict};
use crate::install::plan::Prepared;
use crate::install::specs::KeptRegistries;
use crate::packages::lock::{self, LockFile, Origin};
use crate::tools::{Context, Example, Expect, Risk, Tool};

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
    /// Files no package recorded that were in the new version's way, replaced (backed up first with `backup`).
    pub replaced_untracked: Vec<String>,
    /// Edited files and sections merged with the new version.
    pub merged_files: Vec<String>,
    /// Edited files and sections written with conflict markers.
    pub conflict_markers: Vec<String>,
    /// Edits that did not merge, per file, with both sides (nothing of the package was written).
    pub conflicts: Vec<FileConflict>,
    /// Why it was skipped, failed, or left as it is though something newer exists (pinned, or its origin no longer has it).
    pub message: Option<String>,
    /// For `failed`: the error's stable `AAM_*` code.
    pub code: Option<String>,
    /// For `failed`: what to do next, when the error says.
    pub hint: Option<String>,
}

impl UpgradeReport {
    /// Marks the package failed with `error`: its message, code and hint apart.
    fn fail(&mut self, error: &Error) {
        self.status = UpgradeStatus::Failed;
        self.message = Some(error.message().to_string());
        self.code = Some(error.code().to_string());
        self.hint = error.hint().map(str::to_string);
    }
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
            Some(given) => vec![super::installed(ctx, &roots, &lock, given, "upgrade")?.0.to_string()],
            None => lock.packages.keys().cloned().collect(),
        };
        let settings = ctx.home.load_settings()?;
        let catalog = with_fresh_registries(ctx, &settings)?;
        // Installed registry packages (and the dependencies among them) stay
        // with the registry they came from while it still has them.
        let kept = kept_registries(&catalog, &lock)?;
        let mut reports = Vec::new();
        let mut prepared: Vec<Prepared> = Vec::new();
        let mut moving = Vec::new();
        for name in names {
            let entry = &lock.packages[&name];
            let fresh = freshness::check(&catalog, &settings, &ctx.home.git_cache_dir(), &lock, &name, entry)?;
            let mut report = UpgradeReport {
                name: name.clone(),
                from: entry.version.clone(),
                // Only what moves names another version: a `latest` tag moved
                // below the installed version leaves it where it is.
                to: match fresh.outdated {
                    true => fresh.wanted.clone().unwrap_or_else(|| entry.version.clone()),
                    false => entry.version.clone(),
                },
                status: UpgradeStatus::UpToDate,
                modified_files: Vec::new(),
                backup_dir: None,
                replaced_untracked: Vec::new(),
                merged_files: Vec::new(),
                conflict_markers: Vec::new(),
                conflicts: Vec::new(),
                // Why a package with something newer somewhere is left as it is.
                message: (fresh.gone || fresh.unknown || fresh.pinned).then(|| fresh.reason.clone()),
                code: None,
                hint: None,
            };
            // Files on disk as the lock records that this machine never wrote
            // are replaced only once the entry's origin is shown to make them:
            // a lock entry can claim a project's own file, checksum and all.
            if fresh.outdated
                && input.on_edited != OnEdited::Force
                && let Err(e) = prove_unwritten(ctx, &catalog, &roots, (&name, entry), input.dry_run)
            {
                report.fail(&e);
                reports.push(report);
                continue;
            }
            if fresh.outdated {
                let spec = match entry.source {
                    Origin::Registry => format!("{name}@{}", entry.requested.as_deref().unwrap_or("*")),
                    // Its source may be registered here under another name.
                    Origin::Source => freshness::origin_source(&catalog, entry)?
                        .and_then(|source| freshness::requested_from(entry, &source.name))
                        .or_else(|| entry.requested.clone())
                        .unwrap_or_else(|| name.clone()),
                    _ => entry.requested.clone().unwrap_or_else(|| name.clone()),
                };
                // A package that cannot be prepared fails alone; the others go on.
                match prepare(ctx, &catalog, &[spec], &kept) {
                    Ok(packages) => {
                        moving.push(name.clone());
                        for mut package in packages {
                            if package.manifest.name == name {
                                report.to = package.manifest.version.clone();
                                package.replaces_lost_commit = fresh.lost_commit;
                            }
                            if !prepared.iter().any(|p| p.manifest.name == package.manifest.name) {
                                prepared.push(package);
                            }
                        }
                    }
                    Err(e) => report.fail(&e),
                }
            }
            reports.push(report);
        }
        // New versions pass the same content-audit gate as installs; a blocked
        // one stops the whole upgrade, which is one unit.
        let recorded = |package: &Prepared| super::recorded_allowance(&roots, &lock, package, false);
        let gated = match prepared.is_empty() {
            true => Ok(Vec::new()),
            false => ctx.install_audit_policy(input.global).and_then(|policy| {
                crate::audit::gate::gate(&catalog, &mut prepared, &input.allow_findings, recorded, &policy)
            }),
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
        // Every upgrade of the command is one unit; a dry run decides as the
        // upgrade would (a package with edits is skipped unless `on_edited`
        // says otherwise) and reports it.
        match install_prepared(ctx, &request, prepared, input.on_edited) {
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
        report.fail(error);
    }
}

fn upgrade_report(report: &mut UpgradeReport, done: &InstallOutput, dry_run: bool) {
    for package in done.installed.iter().filter(|p| p.name == report.name) {
        report.modified_files.extend(package.replaced_edits.iter().cloned());
        report.to = package.version.clone();
        report.backup_dir = package.backup_dir.clone();
        report.replaced_untracked = package.replaced_untracked.clone();
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
            // Markers are written only where lines overlap, and any other
            // conflict keeps the package still: offer them only when they finish it.
            SkipReason::MergeConflicts if package.conflicts.iter().all(|c| c.kind == ConflictKind::Overlapping) => {
                format!(
                    "edits in {} file(s) do not merge with the new version (see `conflicts`); resolve them by hand, or choose merge_markers, backup or force",
                    package.conflicts.len()
                )
            }
            SkipReason::MergeConflicts => format!(
                "edits in {} file(s) cannot be merged with the new version (see `conflicts`); choose backup or force",
                package.conflicts.len()
            ),
            _ => "files were edited since install; choose merge, backup or force".to_string(),
        });
    }
}

/// The registry each installed registry package stays with (see
/// [`freshness::recorded_registry`]); others resolve as a new name would (the
/// default registry first), and switching them is refused.
fn kept_registries(catalog: &Catalog, lock: &LockFile) -> Result<KeptRegistries> {
    let mut kept = KeptRegistries::new();
    for (name, entry) in &lock.packages {
        if let Some(registry) = freshness::recorded_registry(catalog, name, entry)? {
            kept.insert(name.clone(), registry);
        }
    }
    Ok(kept)
}
