//! `aam_inventory`: what the agents' folders hold, and where hand-made copies
//! came from.
//!
//! Orchestration only: [`crate::install::inventory`] walks, classifies and
//! matches.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::super::{Context, Example, Expect, Risk, Tool};
use super::{roots, written_here};
use crate::error::{ErrorCode, Result};
use crate::install::inventory::{self, Limits, Match, Tracking};
use crate::scan::{ArtifactKind, Platform};
use crate::sources::qualified_name;

/// Input of `aam_inventory`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InventoryInput {
    /// List the home folder's agent folders instead of the project's.
    #[serde(default)]
    pub global: bool,
}

/// Whether an artifact found is aam's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum InventoryStatus {
    /// Installed by aam, every file as installed.
    Installed,
    /// Installed by aam, files changed since.
    Edited,
    /// Not in the lock file.
    Untracked,
    /// Not in this lock file, but another install on this machine records it: a home-folder file (a Codex prompt) every project's agent reads.
    Elsewhere,
}

/// How a copy compares with the version it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum MatchKind {
    /// Every file is byte for byte that version's.
    Exact,
    /// Modified from that version (the nearest one).
    Modified,
}

impl From<&Match> for MatchKind {
    fn from(m: &Match) -> Self {
        if m.exact { Self::Exact } else { Self::Modified }
    }
}

/// Where an untracked artifact came from, found by its files' digests.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArtifactOrigin {
    /// Source name.
    pub source: String,
    /// `source/path`, what `aam install` takes.
    pub artifact: String,
    /// Repository path.
    pub path: String,
    /// First indexed commit with the matched content.
    pub commit: String,
    /// That commit's time.
    pub committed_at: Option<String>,
    /// Exact copy, or modified from it.
    pub r#match: MatchKind,
    /// Files (distinct digests) the copy shares with it.
    pub shared_files: u64,
    /// Files (distinct digests) the version has.
    pub version_files: u64,
    /// The matched version is what the source has at its indexed head.
    pub current: bool,
    /// Indexed commits of the source since the version was replaced (0 when current).
    pub behind_commits: u64,
    /// The source no longer has the artifact at its head.
    pub removed: bool,
    /// The source's indexed head commit.
    pub head_commit: Option<String>,
}

/// One artifact in an agent folder.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InventoryArtifact {
    /// Type.
    pub kind: ArtifactKind,
    /// Name (its folder or file name).
    pub name: String,
    /// Where: the skill folder or the file (`~/` for the home folder).
    pub location: String,
    /// The agents that read it there.
    pub platforms: Vec<Platform>,
    /// Installed, edited or untracked.
    pub status: InventoryStatus,
    /// The installed package that deployed it.
    pub package: Option<String>,
    /// For `elsewhere`: the installs on this machine that record it (`pkg` in `/project`).
    pub installed_elsewhere: Vec<String>,
    /// It is a link (never followed or read).
    pub link: bool,
    /// Its regular files.
    pub files: u64,
    /// Where an untracked one came from (none when nothing the catalog indexed shares its files).
    pub origin: Option<ArtifactOrigin>,
}

/// Output of `aam_inventory`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InventoryOutput {
    /// The project (or home) root.
    pub root: String,
    /// Every artifact found, by location.
    pub artifacts: Vec<InventoryArtifact>,
    /// Folders not walked, and why (a link out of the root, unreadable).
    pub skipped_folders: Vec<String>,
    /// A walk limit stopped it early: the list is incomplete.
    pub truncated: bool,
}

/// Lists every artifact in every agent folder, and identifies copies.
pub struct Inventory;

impl Tool for Inventory {
    const NAME: &'static str = "aam_inventory";
    const TITLE: &'static str = "List what the agent folders hold";
    const DESCRIPTION: &'static str = "Walk every folder of every agent in the agent table (the project's, or the home folder's with `global`) and list each skill, agent, prompt and rule there: installed by aam (clean or edited) or untracked. For an untracked one, the origin is found by content (the blake3 digests of its files against every version the catalog has indexed): source, path, commit, and whether it is the current version or how many indexed commits behind. Next: `aam_adopt` to record copies in the lock file.";
    const RISK: Risk = Risk::Read;
    const IDEMPOTENT: bool = true;
    const ERRORS: &'static [ErrorCode] = &[ErrorCode::LockInvalid, ErrorCode::UnsafePath];
    const CONSTRAINTS: &'static [&'static str] = &[
        "walks only the agent table's folders and never follows a link out of them",
        "bounded: 100,000 entries per folder, 10,000 files per skill, 1,000,000 files in all (`truncated` says when it stopped)",
    ];
    const EXAMPLES: &'static [Example] = &[Example {
        title: "the project's agent folders",
        input: r#"{}"#,
        expect: Expect::Output(r#"{"truncated": false}"#),
    }];
    type Input = InventoryInput;
    type Output = InventoryOutput;

    fn run(ctx: &Context, input: InventoryInput) -> Result<InventoryOutput> {
        let roots = roots(ctx, input.global)?;
        let lock = roots.read_lock()?;
        let walk = inventory::walk(&roots, Limits::default())?;
        let written = written_here(ctx, &roots, &lock)?;
        let catalog = ctx.catalog()?;
        let mut artifacts = Vec::new();
        for found in &walk.found {
            ctx.cancel.check()?;
            let tracking = inventory::tracking(&roots, &lock, found)?;
            if tracking == Tracking::Untracked && !inventory::read_there(found, roots.global) {
                continue;
            }
            let location = found.location.key();
            let installed_elsewhere = match tracking {
                Tracking::Untracked => written.shared_with(&location).to_vec(),
                Tracking::Installed(_) | Tracking::Edited(_) => Vec::new(),
            };
            let origin = match tracking {
                Tracking::Untracked => inventory::identify(&catalog, found)?.map(|m| origin(&m)),
                Tracking::Installed(_) | Tracking::Edited(_) => None,
            };
            let (status, package) = match tracking {
                Tracking::Installed(p) => (InventoryStatus::Installed, Some(p)),
                Tracking::Edited(p) => (InventoryStatus::Edited, Some(p)),
                Tracking::Untracked if !installed_elsewhere.is_empty() => (InventoryStatus::Elsewhere, None),
                Tracking::Untracked => (InventoryStatus::Untracked, None),
            };
            artifacts.push(InventoryArtifact {
                kind: found.kind,
                name: found.name.clone(),
                location,
                platforms: found.platforms.clone(),
                status,
                package,
                installed_elsewhere,
                link: found.link,
                files: found.files.len() as u64,
                origin,
            });
        }
        Ok(InventoryOutput {
            root: roots.root_text(),
            artifacts,
            skipped_folders: walk.skipped,
            truncated: walk.truncated,
        })
    }
}

/// Where a matched copy came from, as reported.
fn origin(m: &Match) -> ArtifactOrigin {
    let v = &m.version;
    ArtifactOrigin {
        source: v.source.clone(),
        artifact: qualified_name(&v.source, &v.path),
        path: v.path.clone(),
        commit: v.commit.clone(),
        committed_at: v.committed_at.clone(),
        r#match: MatchKind::from(m),
        shared_files: m.shared_files,
        version_files: v.file_count,
        current: v.live && v.replaced_commit.is_none(),
        behind_commits: v.behind_commits,
        removed: !v.live,
        head_commit: v.head_commit.clone(),
    }
}
