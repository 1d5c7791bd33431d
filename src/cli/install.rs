//! The install family: `install` (and restore), `uninstall`, `verify`, `inventory`,
//! `adopt`, `diff`, `outdated` and `upgrade`: their arguments, the tool inputs they
//! become, and exit codes. Their renderers are in `render.rs`.

use super::{Output, interactive, platform_arg, prompts, render};
use crate::error::Result;
use crate::scan::Platform;
use crate::tools::install::{
    Adopt, AdoptInput, Diff, DiffAll, Install, InstallInput, Inventory, InventoryInput, OnEdited, Outdated,
    OutdatedInput, Uninstall, UninstallInput, Upgrade, UpgradeInput, UpgradeOutput, UpgradeStatus, Verify, VerifyAll,
    VerifyAllInput, VerifyInput,
};
use crate::tools::{Context, invoke};

/// `aam install`.
#[derive(Debug, clap::Args)]
pub(super) struct InstallArgs {
    /// `name`, `name@constraint`, `@scope/name@1.2`, `source/artifact`, an artifact name, a folder or a `.aam` file (none: restore the lock file).
    specs: Vec<String>,
    /// Platform to deploy to (repeatable): an agent id (`aam agents` lists them) such as cursor, claude-code, github-copilot, codex, gemini-cli.
    #[arg(long = "platform", value_name = "PLATFORM", value_parser = platform_arg, value_delimiter = ',')]
    platforms: Vec<Platform>,
    /// Keep the package copy and lock entry only; deploy nothing.
    #[arg(long)]
    no_deploy: bool,
    /// Install again even when installed; replace files edited since install and files aam did not write.
    #[arg(long, conflicts_with = "backup")]
    force: bool,
    /// Save files edited since install, and files no package records in the way, to $AAM_HOME/backups/ before replacing them.
    #[arg(long)]
    backup: bool,
    /// Show what would be installed, change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Install into your home folder (e.g. ~/.claude) instead of the project.
    #[arg(short = 'g', long = "global")]
    global: bool,
    /// Fail instead of waiting when another aam command is changing the project.
    #[arg(long)]
    no_wait: bool,
    /// Let findings of this content-audit rule through the `audit.block` policy (repeatable; see `aam audit`).
    #[arg(long = "allow-finding", value_name = "RULE_ID")]
    allow_findings: Vec<String>,
    /// With no arguments: fail instead of changing the lock file (CI: install exactly what it records).
    #[arg(long)]
    frozen: bool,
    /// Never fetch: use only what is in $AAM_HOME; fail when something is missing.
    #[arg(long)]
    offline: bool,
}

impl From<InstallArgs> for InstallInput {
    fn from(a: InstallArgs) -> Self {
        Self {
            specs: a.specs,
            platforms: a.platforms,
            no_deploy: a.no_deploy,
            force: a.force,
            backup: a.backup,
            dry_run: a.dry_run,
            global: a.global,
            no_wait: a.no_wait,
            allow_findings: a.allow_findings,
            frozen: a.frozen,
            offline: a.offline,
        }
    }
}

/// Installs (or restores); exit 1 when edited files kept a package as it was.
pub(super) fn install(ctx: &Context, out: &Output, args: InstallArgs) -> Result<i32> {
    let global = args.global;
    let output = invoke::<Install>(ctx, args.into())?;
    out.emit(&output, |o| render::installed_packages(o, global))?;
    Ok(if output.kept_edits() { 1 } else { 0 })
}

/// `aam uninstall`.
#[derive(Debug, clap::Args)]
pub(super) struct UninstallArgs {
    /// Package name.
    package: String,
    /// Remove files even when edited since install.
    #[arg(long)]
    force: bool,
    /// Uninstall from your home folder.
    #[arg(short = 'g', long = "global")]
    global: bool,
    /// Fail instead of waiting when another aam command is changing the project.
    #[arg(long)]
    no_wait: bool,
    /// Never fetch: check files this machine never wrote only against what is in $AAM_HOME.
    #[arg(long)]
    offline: bool,
    /// Show what would be removed and kept, and change nothing.
    #[arg(long)]
    dry_run: bool,
}

impl From<UninstallArgs> for UninstallInput {
    fn from(a: UninstallArgs) -> Self {
        Self {
            package: a.package,
            force: a.force,
            global: a.global,
            no_wait: a.no_wait,
            offline: a.offline,
            dry_run: a.dry_run,
        }
    }
}

/// Uninstalls, warning on stderr about packages that still need it.
pub(super) fn uninstall(ctx: &Context, out: &Output, args: UninstallArgs) -> Result<i32> {
    let output = invoke::<Uninstall>(ctx, args.into())?;
    if !out.json && !output.dependents.is_empty() {
        let dependents: Vec<String> = output.dependents.iter().map(|d| format!("`{d}`")).collect();
        let is = if output.dry_run { "would still be" } else { "is still" };
        eprintln!(
            "warning: `{}` {is} needed by {}; reinstall it, or uninstall them too",
            output.removed,
            dependents.join(", ")
        );
    }
    out.emit(&output, render::uninstalled)
}

/// `aam verify`.
#[derive(Debug, clap::Args)]
#[command(group = clap::ArgGroup::new("which").args(["package", "all"]))]
pub(super) struct VerifyArgs {
    /// Package name (default: every installed package).
    package: Option<String>,
    /// Verify every installed package (as with no package named).
    #[arg(long)]
    all: bool,
    /// Check the home-folder installs.
    #[arg(short = 'g', long = "global")]
    global: bool,
}

/// Verifies one package or all of them; exit 1 when anything differs.
pub(super) fn verify(ctx: &Context, out: &Output, args: VerifyArgs) -> Result<i32> {
    let VerifyArgs { package, global, .. } = args;
    let clean = match package {
        Some(package) => {
            let output = invoke::<Verify>(ctx, VerifyInput { package, global })?;
            out.emit(&output, render::verified)?;
            output.is_clean
        }
        None => {
            let output = invoke::<VerifyAll>(ctx, VerifyAllInput { global })?;
            out.emit(&output, render::verified_all)?;
            output.is_clean
        }
    };
    Ok(if clean { 0 } else { 1 })
}

/// `aam inventory`.
#[derive(Debug, clap::Args)]
pub(super) struct InventoryArgs {
    /// List the home folder's agent folders.
    #[arg(short = 'g', long = "global")]
    global: bool,
}

impl From<InventoryArgs> for InventoryInput {
    fn from(a: InventoryArgs) -> Self {
        Self { global: a.global }
    }
}

/// Lists what the agents' folders hold.
pub(super) fn inventory(ctx: &Context, out: &Output, args: InventoryArgs) -> Result<i32> {
    out.emit(&invoke::<Inventory>(ctx, args.into())?, render::inventory)
}

/// `aam adopt`.
#[derive(Debug, clap::Args)]
pub(super) struct AdoptArgs {
    /// Artifacts to adopt, by name or location.
    #[arg(required_unless_present = "all")]
    names: Vec<String>,
    /// Adopt every untracked artifact whose origin is found.
    #[arg(long, conflicts_with = "names")]
    all: bool,
    /// Adopt in your home folder.
    #[arg(short = 'g', long = "global")]
    global: bool,
    /// Show what would be recorded, change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Fail instead of waiting when another aam command is changing the project.
    #[arg(long)]
    no_wait: bool,
}

impl From<AdoptArgs> for AdoptInput {
    fn from(a: AdoptArgs) -> Self {
        Self {
            names: a.names,
            all: a.all,
            global: a.global,
            dry_run: a.dry_run,
            no_wait: a.no_wait,
        }
    }
}

/// Records identified copies in the lock file; exit 1 when one named was
/// left as it was (an explicit request refused; `--all` skips quietly).
pub(super) fn adopt(ctx: &Context, out: &Output, args: AdoptArgs) -> Result<i32> {
    let named = !args.names.is_empty();
    let output = invoke::<Adopt>(ctx, args.into())?;
    out.emit(&output, render::adopted)?;
    Ok(if named && !output.skipped.is_empty() { 1 } else { 0 })
}

/// `aam diff`.
#[derive(Debug, clap::Args)]
#[command(group = clap::ArgGroup::new("which").args(["package", "all"]))]
pub(super) struct DiffArgs {
    /// Package name (default: every installed package).
    package: Option<String>,
    /// Show the changes of every installed package (as with no package named).
    #[arg(long)]
    all: bool,
    /// Check the home-folder installs.
    #[arg(short = 'g', long = "global")]
    global: bool,
}

/// Shows the edits made since install, to one package or to all of them.
pub(super) fn diff(ctx: &Context, out: &Output, args: DiffArgs) -> Result<i32> {
    let DiffArgs { package, global, .. } = args;
    match package {
        Some(package) => out.emit(&invoke::<Diff>(ctx, VerifyInput { package, global })?, render::diffed),
        None => out.emit(&invoke::<DiffAll>(ctx, VerifyAllInput { global })?, render::diffed_all),
    }
}

/// `aam outdated`.
#[derive(Debug, clap::Args)]
pub(super) struct OutdatedArgs {
    /// Check the home-folder installs.
    #[arg(short = 'g', long = "global")]
    global: bool,
    /// Exit 1 when a package is outdated (a CI check).
    #[arg(long)]
    exit_code: bool,
}

impl From<OutdatedArgs> for OutdatedInput {
    fn from(a: OutdatedArgs) -> Self {
        Self { global: a.global }
    }
}

/// Lists packages with newer content or versions; with `--exit-code`, exit 1
/// when one is outdated.
pub(super) fn outdated(ctx: &Context, out: &Output, args: OutdatedArgs) -> Result<i32> {
    let exit_code = args.exit_code;
    let output = invoke::<Outdated>(ctx, args.into())?;
    let code = out.emit(&output, render::outdated)?;
    // A check that could not look at some packages passes only for the
    // others: said on stderr, so a CI log shows it.
    let unknown: Vec<&str> = output
        .packages
        .iter()
        .filter(|p| p.unknown)
        .map(|p| p.name.as_str())
        .collect();
    if exit_code && !unknown.is_empty() {
        eprintln!(
            "warning: not checked, their origin is not known here: {} (see `reason`)",
            unknown.join(", ")
        );
    }
    Ok(match exit_code && output.packages.iter().any(|p| p.outdated) {
        true => 1,
        false => code,
    })
}

/// A `--merge` mode of `aam upgrade`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum MergeArg {
    /// Merge; a conflict leaves the package as it is.
    Clean,
    /// Merge, writing conflicts with markers.
    Markers,
}

/// `aam upgrade`.
#[derive(Debug, clap::Args)]
pub(super) struct UpgradeArgs {
    /// Package to upgrade (default: every outdated one).
    package: Option<String>,
    /// Show what would change, change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Overwrite files edited since install.
    #[arg(long, conflicts_with = "backup")]
    force: bool,
    /// Back edited files up to $AAM_HOME/backups/ before overwriting them.
    #[arg(long)]
    backup: bool,
    /// Merge edited files with the new version (three-way); `--merge=markers`
    /// writes overlapping changes with conflict markers instead of skipping.
    #[arg(long, value_name = "MODE", num_args = 0..=1, require_equals = true,
          default_missing_value = "clean", conflicts_with_all = ["force", "backup"])]
    merge: Option<MergeArg>,
    /// Upgrade the home-folder installs.
    #[arg(short = 'g', long = "global")]
    global: bool,
    /// Fail instead of waiting when another aam command is changing the project.
    #[arg(long)]
    no_wait: bool,
    /// Let findings of this content-audit rule through the `audit.block` policy (repeatable; see `aam audit`).
    #[arg(long = "allow-finding", value_name = "RULE_ID")]
    allow_findings: Vec<String>,
}

/// Upgrades, asking per package on a terminal what to do with edited files.
pub(super) fn upgrade(ctx: &Context, out: &Output, args: UpgradeArgs) -> Result<i32> {
    let UpgradeArgs {
        package,
        dry_run,
        force,
        backup,
        merge,
        global,
        no_wait,
        allow_findings,
    } = args;
    let chosen = if force {
        OnEdited::Force
    } else if let Some(mode) = merge {
        match mode {
            MergeArg::Markers => OnEdited::MergeMarkers,
            MergeArg::Clean => OnEdited::Merge,
        }
    } else if backup {
        OnEdited::Backup
    } else {
        OnEdited::Skip
    };
    let input = |package: Option<String>, on_edited, dry_run| UpgradeInput {
        package,
        on_edited,
        dry_run,
        global,
        no_wait,
        allow_findings: allow_findings.clone(),
    };
    // On a terminal, ask per package what to do with edited files.
    let output = if !dry_run && !force && !backup && merge.is_none() && interactive(out) {
        let plan = invoke::<Upgrade>(ctx, input(package.clone(), OnEdited::Skip, true))?;
        let mut reports = Vec::new();
        let mut audit_warnings = plan.audit_warnings;
        for report in plan.packages {
            // The plan skips a package with edits: the user chooses what to do.
            let on_edited = match report.status {
                UpgradeStatus::WouldUpgrade => OnEdited::Skip,
                UpgradeStatus::Skipped if !report.modified_files.is_empty() => {
                    prompts::on_edited(ctx, &report, global)?
                }
                _ => {
                    reports.push(report);
                    continue;
                }
            };
            let done = invoke::<Upgrade>(ctx, input(Some(report.name.clone()), on_edited, false))?;
            reports.extend(done.packages);
            audit_warnings.extend(
                done.audit_warnings
                    .into_iter()
                    .filter(|w| !audit_warnings.contains(w))
                    .collect::<Vec<_>>(),
            );
        }
        UpgradeOutput {
            packages: reports,
            audit_warnings,
        }
    } else {
        invoke::<Upgrade>(ctx, input(package, chosen, dry_run))?
    };
    // Conflict markers left to resolve fail the command, as they do `git merge`:
    // a script must not commit them into files agents read.
    let failed = output
        .packages
        .iter()
        .any(|p| matches!(p.status, UpgradeStatus::Failed | UpgradeStatus::Skipped) || !p.conflict_markers.is_empty());
    out.emit(&output, |o| render::upgraded(o, global))?;
    Ok(if failed { 1 } else { 0 })
}
