//! `aam_diff`: what changed in an installed package's files, against the
//! installed originals kept in the object store.

use schemars::JsonSchema;
use serde::Serialize;

use super::super::{Context, Example, Expect, Risk, Tool};
use super::{VerifyInput, object_store, roots, written_here};
use crate::error::{ErrorCode, Result};
use crate::install::state::{self, FileState};

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
        let entry = lock.installed(&input.package)?;
        let store = object_store(ctx);
        let status = state::file_status(&roots, entry)?;
        let edited = state::keys_in(&status, FileState::Modified);
        let written = written_here(ctx, &roots, &lock)?;
        let modified = state::diffs(&roots, &store, entry, &edited, |key, digest| written.wrote(key, digest))?
            .into_iter()
            .map(|(path, diff)| FileDiff { path, diff })
            .collect();
        Ok(DiffOutput {
            package_name: input.package.clone(),
            version: entry.version.clone(),
            modified_files: modified,
            untracked_files: state::untracked(&roots, &input.package, entry)?,
            missing_files: state::keys_in(&status, FileState::Missing),
        })
    }
}
