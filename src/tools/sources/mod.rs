//! Source tools: add, list, scan, update, diff, remove and enable-defaults.
//!
//! Reads (`list`, `scan`) are catalog queries. Writes fetch with gix, index the
//! commit, and record the result in one catalog transaction; on failure they
//! leave the catalog untouched and remove any cache state they created.

mod add;
mod defaults;
mod diff;
mod list;
mod remove;
mod scan;
mod update;

use std::path::Path;

use schemars::JsonSchema;
use serde::Serialize;

use crate::error::{Error, ErrorCode, Result};
use crate::scan::ArtifactKind;
use crate::sources::git::{Fetched, is_repository};
use crate::sources::short_id;

pub use add::{SourceAdd, SourceAddInput, SourceAddOutput};
pub use defaults::{SourceEnableDefaults, SourceEnableDefaultsInput, SourceEnableDefaultsOutput};
pub use diff::{SourceDiff, SourceDiffInput, SourceDiffOutput};
pub use list::{SourceList, SourceListEntry, SourceListInput, SourceListOutput};
pub use remove::{SourceRemove, SourceRemoveInput, SourceRemoveOutput};
pub use scan::{ArtifactsByType, ScannedArtifact, SourceScan, SourceScanInput, SourceScanOutput};
pub use update::{SourceUpdate, SourceUpdateInput, SourceUpdateOutput, SourceUpdateReport, UpdateStatus};

// ---------------------------------------------------------------- shared types

/// Artifact counts by kind.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct CountsByType {
    /// Skills.
    pub skills: u64,
    /// Agents.
    pub agents: u64,
    /// Prompts.
    pub prompts: u64,
    /// Instructions.
    pub instructions: u64,
}

/// An artifact named in a change report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArtifactRef {
    /// Display name.
    pub name: String,
    /// Kind.
    #[serde(rename = "type")]
    pub kind: ArtifactKind,
    /// Repository path.
    pub path: String,
}

// ---------------------------------------------------------------- helpers

fn path_not_found(scope: &str, fetched: &Fetched) -> Error {
    Error::new(
        ErrorCode::SourcePathNotFound,
        format!(
            "`{scope}` is not a folder at `{}` ({})",
            fetched.resolved_ref,
            short_id(&fetched.commit.to_string())
        ),
    )
    .with_hint("check the folder name; paths are case-sensitive and relative to the repository root")
}

fn ensure_git_repository(path: &Path) -> Result<()> {
    if !is_repository(path) {
        return Err(Error::new(
            ErrorCode::SourceUrlInvalid,
            format!("`{}` is not a git repository", path.display()),
        )
        .with_hint("pass the root folder of a git repository (one with a `.git` folder), or run `git init` there"));
    }
    Ok(())
}
