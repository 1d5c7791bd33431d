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

use schemars::JsonSchema;
use serde::Serialize;

use crate::scan::ArtifactKind;

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
