//! Install tools, one file each: install (which is also how an installed
//! package is upgraded; `restore` is install with no specs), uninstall and
//! upgrade; the read tools over installs (verify, diff, list, outdated,
//! package info); inventory and adopt (copies made by hand) in `inventory`.
//!
//! Each tool is orchestration over [`crate::install`]: take the project lock
//! (finishing an interrupted command first), resolve specs, plan, protect
//! edits, execute through the journal, mirror into the catalog.

mod adopt;
mod apply;
mod diff;
mod inventory;
mod list;
mod outdated;
mod package_info;
mod restore;
mod uninstall;
mod upgrade;
mod verify;

use std::path::Path;

use super::Context;
use crate::catalog::Catalog;
use crate::error::{Error, ErrorCode, Result};
use crate::install::Roots;
use crate::install::journal::{self, MirrorOp, ProjectLock};
use crate::install::mirror::{self, WrittenHere};
use crate::install::plan::Prepared;
use crate::install::specs::{KeptRegistries, SpecEnv, prepare_specs};
use crate::packages::lock::{AllowedFinding, LockFile, LockedPackage};
use crate::packages::store::ObjectStore;
use crate::search::close_artifacts;

pub use crate::install::decision::{OnEdited, SkipReason, SkippedPackage};
pub use crate::install::package_info::PackageDetails as PackageInfoOutput;
pub use adopt::{Adopt, AdoptInput, AdoptOutput, AdoptSkip, AdoptedArtifact, SkippedAdoption};
pub use apply::{Install, InstallInput, InstallOutput, InstalledPackage};
pub use diff::{Diff, DiffAll, DiffAllOutput, DiffOutput, FileDiff};
pub use inventory::{
    ArtifactOrigin, Inventory, InventoryArtifact, InventoryInput, InventoryOutput, InventoryStatus, MatchKind,
};
pub use list::{ListInstalled, ListInstalledInput, ListInstalledOutput, ListedPackage};
pub use outdated::{Outdated, OutdatedInput, OutdatedOutput, OutdatedPackage};
pub use package_info::{PackageInfo, PackageInfoInput};
pub use uninstall::{Uninstall, UninstallInput, UninstallOutput};
pub use upgrade::{Upgrade, UpgradeInput, UpgradeOutput, UpgradeReport, UpgradeStatus};
pub use verify::{Verify, VerifyAll, VerifyAllInput, VerifyAllOutput, VerifyInput, VerifyOutput};

// ---------------------------------------------------------------- shared

/// The install roots of a call (see [`Context::install_roots`]).
pub(crate) fn roots(ctx: &Context, global: bool) -> Result<Roots> {
    ctx.install_roots(global)
}

/// The package `name` names in `lock` (the lock of `roots`), for `command`.
/// In a project, a package only the home folder has installed is pointed to
/// with `-g` (it said only "not installed here"), when the caller may read
/// the home folder.
fn installed<'l>(
    ctx: &Context,
    roots: &Roots,
    lock: &'l LockFile,
    name: &str,
    command: &str,
) -> Result<(&'l str, &'l LockedPackage)> {
    lock.installed(name).map_err(|e| {
        if roots.global || e.code() != ErrorCode::PackageNotInstalled || ctx.check_path(&roots.home, "~").is_err() {
            return e;
        }
        let home = Roots::new(roots.home.clone(), roots.home.clone(), true);
        match home.read_lock() {
            Ok(global) if global.installed(name).is_ok() => e.with_hint(format!(
                "`{name}` is installed in your home folder: `aam {command} -g {}`",
                crate::paths::shell_word(name)
            )),
            _ => e,
        }
    })
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

/// Applies catalog mirror operations (see [`crate::install::mirror`]).
fn apply_mirror(ctx: &Context, ops: &[MirrorOp]) -> Result<()> {
    if ops.is_empty() {
        return Ok(());
    }
    let mut catalog = ctx.catalog()?;
    mirror::apply(&mut catalog, ops)
}

/// Turns install specs into packages, reading only paths the front end may,
/// with registry packages taken from the registries in `kept` while those
/// still have them (see [`prepare_specs`]).
fn prepare(ctx: &Context, catalog: &Catalog, specs: &[String], kept: &KeptRegistries) -> Result<Vec<Prepared>> {
    prepare_env(ctx, |env| prepare_specs(&env, catalog, specs, kept))
}

/// Runs `f` with where specs are read from: the working directory, the git
/// cache, the settings, and the front end's confinement.
fn prepare_env<T>(ctx: &Context, f: impl FnOnce(SpecEnv<'_>) -> Result<T>) -> Result<T> {
    let settings = ctx.home.load_settings()?;
    let caches = ctx.home.git_cache_dir();
    let locks = ctx.home.locks_dir();
    // A package folder is packed whole: never one holding AAM_HOME.
    let allow_path = |path: &Path, shown: &str| {
        ctx.check_path(path, shown)?;
        if path.is_dir() {
            ctx.refuse_holding_home(path, shown)?;
        }
        // A package's copy is aam's: installed from, it would be its own
        // copy, and an uninstall would delete the only one.
        let real = crate::paths::resolve_links(path).unwrap_or_else(|| path.to_path_buf());
        let parts: Vec<_> = real.iter().collect();
        if parts.windows(2).any(|pair| pair[0] == ".aam" && pair[1] == "packages") {
            return Err(Error::new(
                ErrorCode::Forbidden,
                format!("`{shown}` is inside `.aam/packages/`, where aam keeps the copies of installed packages"),
            )
            .with_hint("install a package from a folder of its own, outside `.aam/packages/`"));
        }
        Ok(())
    };
    // Only a hint: a catalog or index that cannot be read suggests nothing.
    let close_artifacts = |name: &str| {
        let close = ctx.catalog().and_then(|catalog| {
            let index = ctx.search_index()?;
            close_artifacts(&index, &catalog, ctx.progress.as_ref(), name)
        });
        close.unwrap_or_default()
    };
    f(SpecEnv {
        cwd: &ctx.cwd,
        caches: &caches,
        locks: &locks,
        settings: &settings,
        allow_path: &allow_path,
        local_within: ctx.sandbox_folders(),
        close_artifacts: &close_artifacts,
    })
}

/// Before an installed package is replaced: its files that are on disk as the
/// lock records but that this machine never wrote (a teammate's committed
/// install, or a forged entry's claim) must be what the entry's recorded
/// origin makes (see [`crate::install::restore::verify_origin`]); otherwise
/// the error says which, and that `--force` replaces them anyway. Proven files
/// are recorded as aam's unless `dry_run` (so that an upgrade also removes
/// those the new version drops).
fn prove_unwritten(
    ctx: &Context,
    catalog: &Catalog,
    roots: &Roots,
    (name, entry): (&str, &LockedPackage),
    dry_run: bool,
) -> Result<()> {
    use crate::install::restore;
    let written = WrittenHere::of(catalog, roots, &roots.read_lock()?)?;
    let keys = restore::unproven_files(roots, name, entry, |key, digest| written.wrote(key, digest))?;
    let proof = Proof {
        offline: false,
        record: !dry_run,
    };
    prove_made_by_origin(ctx, catalog, roots, (name, entry), &keys, proof)
}

/// How [`prove_made_by_origin`] checks files against their origin.
#[derive(Debug, Clone, Copy)]
struct Proof {
    /// Use only what is in `AAM_HOME`: never fetch the origin.
    offline: bool,
    /// Keep the proven files as aam's in the catalog from then on.
    record: bool,
}

/// Checks that `entry`'s recorded origin makes the files `keys` (on disk as the
/// lock records, never written by this machine) exactly so, fetching the
/// origin when needed (unless `proof.offline`): what makes them the package's
/// to replace or remove. With `proof.record`, the catalog keeps them as aam's
/// from then on.
fn prove_made_by_origin(
    ctx: &Context,
    catalog: &Catalog,
    roots: &Roots,
    (name, entry): (&str, &LockedPackage),
    keys: &[String],
    proof: Proof,
) -> Result<()> {
    use crate::install::restore::{self, RestoreEnv};
    if keys.is_empty() {
        return Ok(());
    }
    let fetch_limits = ctx.fetch_limits()?;
    let proven = prepare_env(ctx, |spec| {
        let env = RestoreEnv {
            spec,
            offline: proof.offline,
            fetch_limits,
            cancel: &ctx.cancel,
        };
        restore::verify_origin(&env, catalog, roots, name, entry, keys)
    });
    if proven.is_ok() && proof.record {
        // A project's home-folder file is aam's only where aam wrote it: bytes
        // its origin makes prove nothing of a copy the user made there (once
        // recorded, any later lock naming it could remove it).
        let files: Vec<(&str, &str)> = keys
            .iter()
            .filter(|key| roots.global || !key.starts_with("~/"))
            .filter_map(|key| Some((key.as_str(), entry.file_checksums.get(key)?.as_str())))
            .collect();
        ctx.catalog()?.record_proven(&files)?;
    }
    proven.map_err(|e| match e.code() {
        ErrorCode::ChecksumMismatch | ErrorCode::Cancelled | ErrorCode::Timeout => e,
        code => Error::new(
            code,
            format!(
                "cannot check that `{name}`'s files this machine never wrote ({}) are what its recorded origin makes: {}",
                keys.join(", "),
                e.message()
            ),
        ),
    }
    .with_hint("check those files yourself, then replace them anyway with `--force` (`on_edited: force`), or keep them"))
}

/// The audit findings `lock` records as let through for `package` (see
/// [`crate::audit::gate::gate`]) while it comes from the place its entry
/// records: another package of the same name starts with none.
fn recorded_allowance(
    roots: &Roots,
    lock: &crate::packages::lock::LockFile,
    package: &Prepared,
    restoring: bool,
) -> Vec<AllowedFinding> {
    use crate::packages::lock::Origin;
    let Some(entry) = lock.packages.get(&package.manifest.name) else {
        return Vec::new();
    };
    let same_place = entry.source == package.origin
        && match package.origin {
            Origin::Local | Origin::Archive => roots.records_place(&entry.source_name, &package.source_name),
            Origin::Registry | Origin::Source => entry.source_name == package.source_name,
        };
    if !same_place {
        return Vec::new();
    }
    // A bare rule (an earlier lock's record) says nothing of which findings
    // were reviewed: it holds for the content the lock records, not a new one.
    entry
        .allowed_findings
        .iter()
        .filter(|allowed| restoring || matches!(allowed, AllowedFinding::Finding { .. }))
        .cloned()
        .collect()
}

/// What the catalog records aam wrote at the keys of `lock`: the proof a file is aam's to remove.
fn written_here(ctx: &Context, roots: &Roots, lock: &crate::packages::lock::LockFile) -> Result<WrittenHere> {
    WrittenHere::of(&*ctx.catalog()?, roots, lock)
}

fn object_store(ctx: &Context) -> ObjectStore {
    ObjectStore::new(ctx.home.root().join("objects"))
}
