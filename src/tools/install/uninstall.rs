//! `aam_uninstall`: remove installed packages and everything they deployed, through the
//! journal.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{apply_mirror, begin_write, object_store, prove_made_by_origin, roots, written_here};
use crate::error::{ErrorCode, Result};
use crate::install::journal::MirrorOp;
use crate::install::keys::copy_dir;
use crate::install::plan::Plan;
use crate::install::state::{self, FileState};
use crate::tools::{Context, Example, Expect, Risk, Tool};

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
    /// and their recorded origin could not be shown to make them (pass `force`
    /// to remove them).
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
        let plan = Plan::new(&roots, input.force)?;
        let written = written_here(ctx, plan.lock())?;
        let mut plan = plan.with_ownership(written);
        let entry = plan.lock().installed(&input.package)?.clone();
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
            .partition(|key| plan.written_here(key, &entry.file_checksums[key]));
        // Unless the package's recorded origin makes exactly those files (a
        // teammate's committed install): then they are the package's, and go
        // as an upgrade would replace them. Outside its copy folder, which is aam's own.
        if !input.force && !unproven.is_empty() {
            let copy = format!("{}/", copy_dir(&input.package));
            let elsewhere: Vec<String> = unproven.iter().filter(|k| !k.starts_with(&copy)).cloned().collect();
            match prove_made_by_origin(
                ctx,
                &*ctx.catalog()?,
                &roots,
                (&input.package, &entry),
                &elsewhere,
                false,
            ) {
                Ok(()) => remove.append(&mut unproven),
                Err(e) => tracing::warn!(
                    "kept the files of `{}` this machine never wrote: {}",
                    input.package,
                    e.message()
                ),
            }
            remove.sort();
        }
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
