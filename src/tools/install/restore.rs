//! `aam_install` with no specs: restore what `.aam/aam-lock.yaml` records.
//!
//! Orchestration only: [`crate::install::restore`] decides what each recorded
//! package needs, makes it again from its origin and compares the result with
//! the lock; the plan and the journal write it like any install.

use super::{
    InstallInput, InstallOutput, InstalledPackage, OnEdited, SkipReason, SkippedPackage, apply_mirror, begin_write,
    object_store, prepare_env, roots, written_here,
};
use crate::error::{Error, ErrorCode, Result};
use crate::install::plan::{Plan, Prepared};
use crate::install::restore::{self, Need, RestoreEnv};
use crate::install::{Roots, mirror, state};
use crate::packages::lock::LockedPackage;
use crate::tools::Context;
use crate::tools::with_fresh_registries;

/// Restores every package the lock file records whose files are not all as
/// recorded, as one unit under the project lock.
pub(super) fn restore(ctx: &Context, input: &InstallInput, on_edited: OnEdited) -> Result<InstallOutput> {
    if !input.platforms.is_empty() || input.no_deploy {
        return Err(
            Error::invalid_argument("a restore deploys to the platforms the lock file records")
                .with_hint("drop `--platform`/`--no-deploy`, or name the packages to install them on other platforms"),
        );
    }
    let roots = roots(ctx, input.global)?;
    // A lock file that records no packages (the last one was uninstalled) is
    // restored by doing nothing, as `npm ci` does; no lock file at all is a
    // mistake: there is nothing to say what the project wants.
    let nothing = || {
        match crate::packages::lock::lock_path(&roots.root).exists() {
        true => Ok(InstallOutput::empty(&roots, input.dry_run)),
        false => Err(Error::invalid_argument("nothing to install: there is no lock file (`.aam/aam-lock.yaml`) here")
            .with_hint("name a package, an artifact, a folder or an archive; with none, `aam install` restores what `.aam/aam-lock.yaml` records")),
    }
    };
    // Asked before the project lock is taken, which makes `.aam/`: a folder
    // with nothing to restore is left as it was.
    if roots.read_lock()?.packages.is_empty() {
        return nothing();
    }
    let _lock = match input.dry_run {
        true => None,
        false => Some(begin_write(ctx, &roots, input.no_wait)?),
    };
    let mut plan = Plan::new(&roots, input.force)?.keeping_recorded_places();
    if on_edited == OnEdited::Backup {
        plan = plan.backing_up_edits();
    }
    let written = written_here(ctx, &roots, plan.lock())?;
    let mut plan = plan.with_ownership(written);
    let recorded = plan.lock().clone();
    if recorded.packages.is_empty() {
        return nothing();
    }
    let mut output = InstallOutput::empty(&roots, input.dry_run);
    // Each package to write, with the edited keys it replaces (`backup`,
    // `force`) or writes around (kept as they are).
    let mut todo: Vec<(&String, &LockedPackage, Vec<String>, Vec<String>)> = Vec::new();
    // Packages found as recorded, whose files this project's install now records.
    let mut in_place: Vec<(&String, &LockedPackage)> = Vec::new();
    for (name, entry) in &recorded.packages {
        let skip = |reason, modified_files| SkippedPackage {
            name: name.clone(),
            version: entry.version.clone(),
            wanted_version: entry.version.clone(),
            reason,
            modified_files,
            conflicts: Vec::new(),
        };
        match restore::need(&roots, entry, |key, digest| plan.written_here(key, digest))? {
            Need::Intact => {
                output.skipped.push(skip(SkipReason::AlreadyInstalled, Vec::new()));
                in_place.push((name, entry));
            }
            Need::Edited(keys) if on_edited == OnEdited::Skip => {
                // Edits of what aam installed here before the lock file moved
                // on (`git pull`) lack the recorded version's changes: said so.
                let behind = keys.iter().any(|key| {
                    entry
                        .file_checksums
                        .get(key)
                        .is_some_and(|digest| plan.written_from_another_version(key, digest))
                });
                let reason = match behind {
                    true => SkipReason::EditsOnAnotherVersion,
                    false => SkipReason::EditsKept,
                };
                output.skipped.push(skip(reason, keys))
            }
            Need::WriteAround(keys) if on_edited == OnEdited::Skip => todo.push((name, entry, Vec::new(), keys)),
            Need::Blocked(keys) if on_edited == OnEdited::Skip => {
                output.skipped.push(skip(SkipReason::EditedFiles, keys))
            }
            Need::Edited(keys) | Need::WriteAround(keys) | Need::Blocked(keys) => {
                todo.push((name, entry, keys, Vec::new()))
            }
            Need::Write => todo.push((name, entry, Vec::new(), Vec::new())),
        }
    }
    // A merge left with conflict markers is no edit to keep: a CI restore
    // (`--frozen`) must not pass over it.
    let kept: Vec<String> = (output.skipped.iter().flat_map(|s| s.modified_files.iter().cloned()))
        .chain(todo.iter().flat_map(|(_, _, _, keep)| keep.iter().cloned()))
        .collect();
    let conflicted = state::conflicted_keys(&roots, &kept)?;
    if !conflicted.is_empty() {
        let shown: Vec<String> = conflicted.iter().map(|key| format!("`{key}`")).collect();
        let message = format!(
            "{} still hold{} the conflict markers of an upgrade's merge",
            shown.join(", "),
            if conflicted.len() == 1 { "s" } else { "" }
        );
        if input.frozen {
            return Err(Error::new(ErrorCode::Conflict, message).with_hint(
                "resolve them by hand (keep what each `<<<<<<< yours` … `>>>>>>> upstream` hunk should say and delete the marker lines), then run again; `aam verify --all` lists them",
            ));
        }
        tracing::warn!("{message}: resolve them by hand");
    }
    if !input.dry_run {
        record_in_place(ctx, &roots, &in_place);
    }
    if todo.is_empty() {
        return Ok(output);
    }
    let prepared: Vec<Prepared> = {
        let catalog = with_fresh_registries(ctx, &ctx.home.load_settings()?)?;
        let fetch_limits = ctx.fetch_limits()?;
        let mut prepared = prepare_env(ctx, |spec| {
            let env = RestoreEnv {
                spec,
                offline: input.offline,
                fetch_limits,
                cancel: &ctx.cancel,
            };
            // Every package is tried, so one run names every one that cannot
            // be made (a cancel stops at once).
            let mut made = Vec::new();
            let mut failed: Vec<Error> = Vec::new();
            for (name, entry, _, _) in &todo {
                match restore::prepare(&env, &catalog, &roots, name, entry) {
                    Ok(package) => made.push(package),
                    Err(e) if e.code() == ErrorCode::Cancelled => return Err(e),
                    Err(e) => failed.push(e),
                }
            }
            match failed.is_empty() {
                true => Ok(made),
                false => {
                    let first = failed.remove(0);
                    Err(first.with_also(&failed))
                }
            }
        })?;
        let policy = ctx.install_audit_policy(input.global)?;
        let allowance = |package: &Prepared| super::recorded_allowance(&roots, &recorded, package, true);
        output.audit_warnings =
            crate::audit::gate::gate(&catalog, &mut prepared, &input.allow_findings, allowance, &policy)?;
        // The lock keeps what it recorded, so a restore leaves it as it is.
        for package in &mut prepared {
            package.allowed_findings = recorded
                .packages
                .get(&package.manifest.name)
                .map(|entry| entry.allowed_findings.clone())
                .unwrap_or_default();
        }
        prepared
    };
    for warning in &output.audit_warnings {
        tracing::warn!("{warning}");
    }
    let (mut content, mut mirror, mut backups) = (Vec::new(), Vec::new(), Vec::new());
    for ((name, entry, edited, keep), package) in todo.iter().zip(&prepared) {
        plan.replacing_edits(edited);
        let mut planned = plan.add(package, &entry.platforms)?;
        for key in keep {
            plan.leave_as_is(key)?;
        }
        // What the plan leaves of them (a home-folder file no install here wrote) stays.
        let (edited, unrecorded): (Vec<String>, Vec<String>) = edited
            .iter()
            .cloned()
            .partition(|key| !plan.kept_unrecorded().contains(key));
        let keep: Vec<String> = keep.iter().cloned().chain(unrecorded).collect();
        plan.set_created_dirs(name, entry.created_dirs.clone());
        planned.created_dirs = entry.created_dirs.clone();
        plan.keep_deployment_order(name, &entry.deployed);
        let found = restore::compare(&roots, name, entry, &planned)?;
        content.extend(found.content);
        output.lock_changes.extend(found.lock);
        if on_edited == OnEdited::Backup && !edited.is_empty() {
            backups.push((output.installed.len(), (*name).clone(), edited.clone()));
        }
        output.installed.push(InstalledPackage {
            name: (*name).clone(),
            version: planned.version.clone(),
            replaced_version: None,
            source: planned.source,
            source_name: planned.source_name.clone(),
            platforms: planned.platforms.clone(),
            files_written: planned.file_checksums.len() as u64,
            replaced_untracked: Vec::new(),
            nothing_for: package.platforms_taking_none(&planned.platforms, roots.global),
            deployed_to: planned.targets(),
            replaced_edits: edited,
            backup_dir: None,
            merged_edits: Vec::new(),
            kept_edits: keep,
            kept_untracked: Vec::new(),
            conflict_markers: Vec::new(),
            undeployed: Vec::new(),
        });
        mirror.push(mirror::record_of(&roots, &planned, package));
    }
    if !content.is_empty() {
        return Err(restore::mismatch(&content));
    }
    if input.frozen && !output.lock_changes.is_empty() {
        return Err(restore::outdated(&output.lock_changes));
    }
    if input.dry_run {
        for (_, _, keys) in &backups {
            state::check_backup(&roots, keys)?;
        }
        return Ok(output);
    }
    for (index, name, keys) in backups {
        output.installed[index].backup_dir = Some(state::backup(ctx.home.root(), &roots, &name, &keys)?);
    }
    plan.execute(&object_store(ctx), mirror, &ctx.cancel, |ops| apply_mirror(ctx, ops))?;
    Ok(output)
}

/// Records, for the packages a restore found in place, the shared home-folder
/// files another project's install of the same package records, as this project's
/// ([`crate::catalog::Catalog::record_files_in_place`]): a clone restored where
/// the first project's install already wrote a shared home-folder file (a
/// Codex prompt) wrote nothing, and that project's uninstall then deleted the
/// file this one uses. Best effort: the restore stands without it.
fn record_in_place(ctx: &Context, roots: &Roots, in_place: &[(&String, &LockedPackage)]) {
    if in_place.is_empty() {
        return;
    }
    let recorded = ctx.catalog().and_then(|mut catalog| {
        for (name, entry) in in_place {
            let files: Vec<(&str, &str)> = entry
                .file_checksums
                .iter()
                .map(|(key, digest)| (key.as_str(), digest.as_str()))
                .collect();
            let copy_dir = crate::install::keys::copy_dir(name);
            catalog.record_files_in_place(&roots.root_text(), name, &copy_dir, &files)?;
        }
        Ok(())
    });
    if let Err(e) = recorded {
        tracing::warn!(
            "the installs found in place are not recorded in the catalog: {}",
            e.message()
        );
    }
}
