//! `aam_verify` and `aam_verify_all`: every file an installed package wrote,
//! compared with the lock file's checksums. Read only: an interrupted command's
//! journal is reported, not acted on.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::super::{Context, Example, Expect, Risk, Tool};
use super::roots;
use crate::error::{ErrorCode, Result};
use crate::install::Roots;
use crate::install::journal;
use crate::install::state::{self, FileState};
use crate::packages::lock::LockFile;

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
    /// Those of `modified_files` that still hold the conflict markers of an
    /// `upgrade --merge=markers`: merges to resolve by hand.
    pub conflicted_files: Vec<String>,
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
    const DESCRIPTION: &'static str = "Compare every file an installed package wrote (its copy and each deployed file or section) with the checksum recorded in the lock file: which are unchanged, modified (and of those, which still hold an `upgrade --merge=markers` merge's conflict markers) or missing, and which files appeared in its folders. Next: `aam_diff` to see the changes.";
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
        let lock = roots.read_lock()?;
        super::installed(ctx, &roots, &lock, &input.package, "verify")?;
        verify(&roots, &lock, &input.package)
    }
}

/// Checks one installed package of a checked lock.
fn verify(roots: &Roots, lock: &LockFile, package: &str) -> Result<VerifyOutput> {
    let (package, entry) = lock.installed(package)?;
    let status = state::file_status(roots, entry)?;
    let pick = |s: FileState| state::keys_in(&status, s);
    let untracked_files = state::untracked(roots, package, entry)?;
    let (ok_files, modified_files, missing_files) =
        (pick(FileState::Ok), pick(FileState::Modified), pick(FileState::Missing));
    let conflicted_files = state::conflicted_keys(roots, &modified_files)?;
    let interrupted = journal::pending(&roots.root);
    let has_checksums = !entry.file_checksums.is_empty();
    Ok(VerifyOutput {
        package_name: package.to_string(),
        version: entry.version.clone(),
        // Files no checksum vouches for are not known to be as installed.
        is_clean: has_checksums
            && modified_files.is_empty()
            && missing_files.is_empty()
            && untracked_files.is_empty()
            && !interrupted,
        interrupted,
        has_checksums,
        ok_files,
        modified_files,
        conflicted_files,
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
        let lock = roots.read_lock()?;
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
