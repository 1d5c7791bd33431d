//! `aam_diff` and `aam_diff_all`: what changed in an installed package's
//! files (or in every installed package's), against the installed originals
//! kept in the object store.

use schemars::JsonSchema;
use serde::Serialize;

use super::super::{Context, Example, Expect, Risk, Tool};
use super::{VerifyAllInput, VerifyInput, object_store, roots, written_here};
use crate::error::{ErrorCode, Result};
use crate::install::Roots;
use crate::install::mirror::WrittenHere;
use crate::install::state::{self, FileState};
use crate::packages::lock::LockFile;
use crate::packages::store::ObjectStore;

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
        let lock = roots.read_lock()?;
        super::installed(ctx, &roots, &lock, &input.package, "diff")?;
        let written = written_here(ctx, &roots, &lock)?;
        diff(&roots, &lock, &object_store(ctx), &written, &input.package)
    }
}

/// Output of `aam_diff_all`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiffAllOutput {
    /// One diff per installed package with a change (an edited, missing or
    /// untracked file), by name.
    pub packages: Vec<DiffOutput>,
    /// How many installed packages have no change.
    pub unchanged_count: u64,
}

/// Shows what changed in every installed package's files.
pub struct DiffAll;

impl Tool for DiffAll {
    const NAME: &'static str = "aam_diff_all";
    const TITLE: &'static str = "Diff every installed package";
    const DESCRIPTION: &'static str = "Show what `aam_diff` shows for every installed package that has a change (an edited, missing or untracked file), and how many have none. Next: keep the edits, or `aam_upgrade`/`aam_install` with force to restore.";
    const RISK: Risk = Risk::Read;
    const IDEMPOTENT: bool = true;
    const ERRORS: &'static [ErrorCode] = &[ErrorCode::LockInvalid, ErrorCode::UnsafePath];
    const EXAMPLES: &'static [Example] = &[Example {
        title: "a project whose installs are untouched",
        input: r#"{}"#,
        expect: Expect::Output(r#"{"packages": [], "unchanged_count": 1}"#),
    }];
    type Input = VerifyAllInput;
    type Output = DiffAllOutput;

    fn run(ctx: &Context, input: VerifyAllInput) -> Result<DiffAllOutput> {
        let roots = roots(ctx, input.global)?;
        let lock = roots.read_lock()?;
        let written = written_here(ctx, &roots, &lock)?;
        let store = object_store(ctx);
        let mut packages = Vec::new();
        let mut unchanged_count = 0;
        for name in lock.packages.keys() {
            let diff = diff(&roots, &lock, &store, &written, name)?;
            if diff.modified_files.is_empty() && diff.missing_files.is_empty() && diff.untracked_files.is_empty() {
                unchanged_count += 1;
            } else {
                packages.push(diff);
            }
        }
        Ok(DiffAllOutput {
            packages,
            unchanged_count,
        })
    }
}

/// The changes in the files of installed package `package`.
fn diff(
    roots: &Roots,
    lock: &LockFile,
    store: &ObjectStore,
    written: &WrittenHere,
    package: &str,
) -> Result<DiffOutput> {
    let (package, entry) = lock.installed(package)?;
    let status = state::file_status(roots, entry)?;
    let edited = state::keys_in(&status, FileState::Modified);
    let modified = state::diffs(roots, store, entry, &edited, |key, digest| written.wrote(key, digest))?
        .into_iter()
        .map(|(path, diff)| FileDiff { path, diff })
        .collect();
    Ok(DiffOutput {
        package_name: package.to_string(),
        version: entry.version.clone(),
        modified_files: modified,
        untracked_files: state::untracked(roots, package, entry)?,
        missing_files: state::keys_in(&status, FileState::Missing),
    })
}
