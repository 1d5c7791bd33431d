//! `aam_source_scan`: the artifacts an indexed source holds, by type, from the catalog.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{ErrorCode, Result};
use crate::scan::ArtifactKind;
use crate::tools::{Context, Example, Expect, Risk, Tool};

/// Input of `aam_source_scan`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceScanInput {
    /// Source name.
    pub name: String,
    /// Only artifacts of this kind.
    #[serde(default, rename = "type")]
    pub kind: Option<ArtifactKind>,
}

/// One artifact in a scan.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScannedArtifact {
    /// Display name.
    pub name: String,
    /// Repository path: the folder of a skill, the file otherwise.
    pub path: String,
    /// One-line description.
    pub description: Option<String>,
    /// A skill with companion vendor agent metadata (`agents/*.yaml`).
    pub has_vendor_agent: bool,
}

/// Artifacts grouped by kind.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArtifactsByType {
    /// Skills.
    pub skills: Vec<ScannedArtifact>,
    /// Agents.
    pub agents: Vec<ScannedArtifact>,
    /// Prompts.
    pub prompts: Vec<ScannedArtifact>,
    /// Instructions.
    pub instructions: Vec<ScannedArtifact>,
}

/// Output of `aam_source_scan`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceScanOutput {
    /// Source name.
    pub source_name: String,
    /// Commit the artifacts were indexed at.
    pub commit: String,
    /// Scope folder (`""` = whole repository).
    pub scan_path: String,
    /// Artifacts by kind, each sorted by path.
    pub artifacts: ArtifactsByType,
    /// Number of artifacts listed.
    pub total: u64,
}

/// Lists a source's indexed artifacts.
pub struct SourceScan;

impl Tool for SourceScan {
    const NAME: &'static str = "aam_source_scan";
    const TITLE: &'static str = "Scan a source";
    const DESCRIPTION: &'static str = "List the artifacts indexed from one source, grouped by type (skills, agents, prompts, instructions) with path, description and whether a skill has vendor agent metadata. Answered from the catalog at the source's indexed commit; no network. Next: `aam_info` for one artifact, `aam_source_update` to refresh.";
    const RISK: Risk = Risk::Read;
    const IDEMPOTENT: bool = true;
    const ERRORS: &'static [ErrorCode] = &[ErrorCode::SourceNotFound, ErrorCode::SourceNotIndexed];
    const EXAMPLES: &'static [Example] = &[Example {
        title: "one source's skills",
        input: r#"{"name": "sample", "type": "skill"}"#,
        expect: Expect::Output(
            r#"{"source_name": "sample", "total": 3, "artifacts": {"skills": [{"name": "changelog-audit"}, {"name": "code-review"}, {"name": "release-notes"}]}}"#,
        ),
    }];
    type Input = SourceScanInput;
    type Output = SourceScanOutput;

    fn run(ctx: &Context, input: SourceScanInput) -> Result<SourceScanOutput> {
        let catalog = ctx.catalog()?;
        let source = catalog.source_named(&input.name)?;
        let Some(commit) = source.head_commit.clone() else {
            return Err(crate::sources::not_indexed(&source.name));
        };
        let mut artifacts = ArtifactsByType::default();
        let rows = catalog.scan_source(source.id, input.kind)?;
        let total = rows.len() as u64;
        for row in rows {
            let group = match row.kind {
                ArtifactKind::Skill => &mut artifacts.skills,
                ArtifactKind::Agent => &mut artifacts.agents,
                ArtifactKind::Prompt => &mut artifacts.prompts,
                ArtifactKind::Instruction => &mut artifacts.instructions,
            };
            group.push(ScannedArtifact {
                name: row.name,
                path: row.path,
                description: row.description,
                has_vendor_agent: row.has_vendor_agent,
            });
        }
        Ok(SourceScanOutput {
            source_name: source.name,
            commit,
            scan_path: source.scope_path,
            artifacts,
            total,
        })
    }
}
