//! `aam_uninstall`: remove installed packages and everything they deployed, through the
//! journal.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Proof, apply_mirror, begin_write, object_store, prove_made_by_origin, roots, written_here};
use crate::error::{Error, ErrorCode, Result};
use crate::install::Roots;
use crate::install::journal::MirrorOp;
use crate::install::keys::copy_dir;
use crate::install::plan::Plan;
use crate::install::state::{self, FileState};
use crate::packages::lock::LockedPackage;
use crate::tools::{Context, Example, Expect, Risk, Tool};

/// Input of `aam_uninstall`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UninstallInput {
    /// Package name.
    pub package: String,
    /// Remove files even when they were edited since install, or this machine never wrote them (saved to `$AAM_HOME/backups/` first).
    #[serde(default)]
    pub force: bool,
    /// Uninstall from the home folder.
    #[serde(default)]
    pub global: bool,
    /// Fail with `AAM_CONFLICT` instead of waiting when another aam command is changing the project.
    #[serde(default)]
    pub no_wait: bool,
    /// Never fetch: checking files this machine never wrote against their origin uses only what is in `AAM_HOME` (`AAM_OFFLINE_MISSING` when that is not enough).
    #[serde(default)]
    pub offline: bool,
    /// Work out what would be removed and kept, and change nothing.
    #[serde(default)]
    pub dry_run: bool,
}

/// Output of `aam_uninstall`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UninstallOutput {
    /// Package removed (or that would be, with `dry_run`).
    pub removed: String,
    /// Nothing was changed: the lists say what the uninstall would do.
    pub dry_run: bool,
    /// Its version.
    pub version: String,
    /// Files and sections removed.
    pub removed_files: Vec<String>,
    /// Files and sections kept because they were edited (pass `force` to remove them).
    pub kept_modified: Vec<String>,
    /// Files kept, forced or not, because they lie beyond a link leading out of the project or to a folder aam does not install into: never read, so never removed.
    pub kept_beyond_links: Vec<String>,
    /// Files already gone.
    pub missing_files: Vec<String>,
    /// Files the package did not install that are in its folders (added by you or another tool): never removed, so their folders stay too.
    pub kept_untracked: Vec<String>,
    /// Files in the home folder kept because other installs on this machine use them too (Codex prompts: one `~/.codex/prompts` for every project).
    pub kept_shared: Vec<String>,
    /// Files in the home folder the project's lock names that hold bytes no install on this machine wrote there (yours, or edited since): never removed on a lock file's word, forced or not.
    pub kept_unrecorded: Vec<String>,
    /// Files another installed package records under another name (an agent folder linked to another one shows one file under both): they stay that package's.
    pub kept_for_other_packages: Vec<String>,
    /// Installed packages that depend on it.
    pub dependents: Vec<String>,
    /// Where the files `force` removed that aam did not write as they are (edited since, or never written by this machine) were saved first: `$AAM_HOME/backups/<package>--<time>/`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backup_dir: Option<String>,
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
        ErrorCode::ChecksumMismatch,
        ErrorCode::OfflineMissing,
    ];
    const CONSTRAINTS: &'static [&'static str] = &[
        "files edited since install are kept unless `force`, which saves them to `$AAM_HOME/backups/` first",
        "files this machine never wrote are removed only when the package's recorded origin makes exactly them (it may be fetched, unless `offline`); otherwise nothing changes, unless `force`",
    ];
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
        let _lock = match input.dry_run {
            true => None,
            false => Some(begin_write(ctx, &roots, input.no_wait)?),
        };
        let mut plan = owned_plan(ctx, &roots, input.force)?;
        let (package, entry) = super::installed(ctx, &roots, plan.lock(), &input.package, "uninstall")?;
        let (package, entry) = (package.to_string(), entry.clone());
        let status = state::file_status(&roots, &entry)?;
        let first = unwritten(&plan, &entry, &status);
        // Files as recorded that this machine never wrote (a teammate's
        // committed install, or a forged entry's claim) are the package's only
        // once its recorded origin is shown to make exactly them (its copy
        // folder is aam's own); otherwise nothing changes, unless forced.
        let status = if !input.force && !first.is_empty() {
            let copy = format!("{}/", copy_dir(&package));
            // A project's home-folder file aam did not write stays whatever
            // its origin makes (see `Plan::foreign_in_home`): nothing to show.
            let elsewhere: Vec<String> = first
                .iter()
                .filter(|k| !k.starts_with(&copy) && (roots.global || !k.starts_with("~/")))
                .cloned()
                .collect();
            let proof = Proof {
                offline: input.offline,
                record: !input.dry_run,
            };
            prove_made_by_origin(ctx, &*ctx.catalog()?, &roots, (&package, &entry), &elsewhere, proof).map_err(
                |e| {
                    // One code for "not shown to be the package's", whatever stopped the check.
                    let code = match e.code() {
                        code if crate::tools::COMMON_ERRORS.contains(&code) => code,
                        code @ (ErrorCode::ChecksumMismatch | ErrorCode::OfflineMissing) => code,
                        _ => ErrorCode::Conflict,
                    };
                    let name = &package;
                    let hint = if code == ErrorCode::OfflineMissing {
                        format!("nothing was changed. Run `aam uninstall {name}` without `--offline` to fetch the origin and check them, or check them yourself and remove them with `--force`")
                    } else {
                        format!("nothing was changed. Check those files: if they are the package's, `aam uninstall {name} --force` removes them (after saving a copy); if they are yours, remove the package's entry from `.aam/aam-lock.yaml` instead")
                    };
                    Error::new(code, e.message()).with_hint(hint)
                },
            )?;
            // The check may have taken long (a fetch): the lock file and the
            // files are read again, so what changed meanwhile (an edit, a
            // pull bringing another lock) is kept or stops the command.
            let changed = |what: &str| {
                Error::new(
                    ErrorCode::Conflict,
                    format!(
                        "{what} changed while aam checked `{}`'s files against their origin",
                        package
                    ),
                )
                .with_hint("nothing was changed; run the command again")
            };
            plan = owned_plan(ctx, &roots, input.force)?;
            if plan.lock().packages.get(&package) != Some(&entry) {
                return Err(changed("the lock file"));
            }
            let again = state::file_status(&roots, &entry)?;
            if unwritten(&plan, &entry, &again).iter().any(|key| !first.contains(key)) {
                return Err(changed("its files"));
            }
            again
        } else {
            status
        };
        let dependents: Vec<String> = plan
            .lock()
            .packages
            .iter()
            .filter(|(_, p)| p.dependencies.contains_key(&package))
            .map(|(n, _)| n.clone())
            .collect();
        let kept_untracked = state::untracked(&roots, &package, &entry)?;
        let mut remove = state::keys_in(&status, FileState::Ok);
        // What lies beyond a link (a skill folder the user linked to their
        // own copy) is theirs, forced or not.
        let (mut kept, kept_beyond_links): (Vec<String>, Vec<String>) = state::keys_in(&status, FileState::Modified)
            .into_iter()
            .partition(|key| !roots.key_beyond_link(key));
        // Forced, what aam did not write as it is now (an edit, or a file
        // this machine never wrote that the lock names) is saved first.
        let mut saving: Vec<String> = Vec::new();
        if input.force {
            plan.replacing_edits(&kept);
            saving.extend(kept.iter().cloned());
            saving.extend(first.iter().filter(|key| remove.contains(key)).cloned());
            remove.append(&mut kept);
            remove.sort();
        }
        plan.remove_package(&package, &remove)?;
        let kept_shared = plan.kept_shared().to_vec();
        let kept_unrecorded = plan.kept_unrecorded().to_vec();
        let kept_for_other_packages = plan.kept_for_other_packages().to_vec();
        remove.retain(|key| {
            !kept_shared.contains(key) && !kept_unrecorded.contains(key) && !kept_for_other_packages.contains(key)
        });
        saving.retain(|key| remove.contains(key));
        saving.sort();
        saving.dedup();
        let backup_dir = match (saving.is_empty(), input.dry_run) {
            (true, _) => None,
            (false, true) => {
                state::check_backup(&roots, &saving)?;
                None
            }
            (false, false) => Some(state::backup(ctx.home.root(), &roots, &package, &saving)?),
        };
        let mirror = vec![MirrorOp::Remove {
            project_root: roots.root_text(),
            package: package.clone(),
        }];
        if !input.dry_run {
            plan.execute(&object_store(ctx), mirror, &ctx.cancel, |ops| apply_mirror(ctx, ops))?;
        }
        Ok(UninstallOutput {
            removed: package,
            dry_run: input.dry_run,
            version: entry.version,
            removed_files: remove,
            kept_modified: kept,
            kept_beyond_links,
            missing_files: state::keys_in(&status, FileState::Missing),
            kept_untracked,
            kept_shared,
            kept_unrecorded,
            kept_for_other_packages,
            dependents,
            backup_dir,
        })
    }
}

/// The plan of a command on the project's lock as it is now, knowing what
/// aam wrote there.
fn owned_plan<'r>(ctx: &Context, roots: &'r Roots, force: bool) -> Result<Plan<'r>> {
    let plan = Plan::new(roots, force)?;
    let written = written_here(ctx, roots, plan.lock())?;
    Ok(plan.with_ownership(written))
}

/// The keys of `entry` that are on disk as recorded but that this machine
/// never wrote.
fn unwritten(plan: &Plan<'_>, entry: &LockedPackage, status: &BTreeMap<String, FileState>) -> Vec<String> {
    state::keys_in(status, FileState::Ok)
        .into_iter()
        .filter(|key| !plan.written_here(key, &entry.file_checksums[key]))
        .collect()
}
