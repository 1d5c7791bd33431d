//! `aam_inventory` (what the agents' folders hold, and where hand-made copies
//! came from) and `aam_adopt` (recording such copies in the lock file).
//!
//! Orchestration only: [`crate::install::inventory`] walks, classifies,
//! matches and makes the package; the plan and the journal write the lock.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::super::{Context, Example, Expect, Risk, Tool};
use super::{apply_mirror, begin_write, mirror_of, object_store, roots};
use crate::error::{Error, ErrorCode, Result};
use crate::install::inventory::{self, Found, Limits, Match, Tracking};
use crate::install::plan::{Plan, Prepared};
use crate::packages::lock;
use crate::scan::{ArtifactKind, Platform};
use crate::sources::qualified_name;

// ---------------------------------------------------------------- inventory

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
        let lock = lock::read(&roots.root)?;
        roots.check_lock(&lock)?;
        let walk = inventory::walk(&roots, Limits::default())?;
        let catalog = ctx.catalog()?;
        let mut artifacts = Vec::new();
        for found in &walk.found {
            ctx.cancel.check()?;
            let tracking = inventory::tracking(&roots, &lock, found)?;
            let origin = match tracking {
                Tracking::Untracked => inventory::identify(&catalog, found)?.map(|m| origin(&m)),
                Tracking::Installed(_) | Tracking::Edited(_) => None,
            };
            let (status, package) = match tracking {
                Tracking::Installed(p) => (InventoryStatus::Installed, Some(p)),
                Tracking::Edited(p) => (InventoryStatus::Edited, Some(p)),
                Tracking::Untracked => (InventoryStatus::Untracked, None),
            };
            artifacts.push(InventoryArtifact {
                kind: found.kind,
                name: found.name.clone(),
                location: found.location.key(),
                platforms: found.platforms.clone(),
                status,
                package,
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

fn origin(m: &Match) -> ArtifactOrigin {
    let v = &m.version;
    ArtifactOrigin {
        source: v.source.clone(),
        artifact: qualified_name(&v.source, &v.path),
        path: v.path.clone(),
        commit: v.commit.clone(),
        committed_at: v.committed_at.clone(),
        r#match: if m.exact { MatchKind::Exact } else { MatchKind::Modified },
        shared_files: m.shared_files,
        version_files: v.file_count,
        current: v.live && v.replaced_commit.is_none(),
        behind_commits: v.behind_commits,
        removed: !v.live,
        head_commit: v.head_commit.clone(),
    }
}

// ---------------------------------------------------------------- adopt

/// Input of `aam_adopt`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AdoptInput {
    /// Untracked artifacts to adopt, by name or location (as `aam_inventory` lists them).
    #[serde(default)]
    pub names: Vec<String>,
    /// Adopt every untracked artifact whose origin is found.
    #[serde(default)]
    pub all: bool,
    /// Adopt in the home folder instead of the project.
    #[serde(default)]
    pub global: bool,
    /// Work out everything, change nothing.
    #[serde(default)]
    pub dry_run: bool,
    /// Fail with `AAM_CONFLICT` instead of waiting when another aam command is changing the project.
    #[serde(default)]
    pub no_wait: bool,
}

/// One artifact recorded in the lock file.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AdoptedArtifact {
    /// The package name it is recorded under.
    pub package: String,
    /// `source/path` it came from.
    pub artifact: String,
    /// The commit recorded (the matched version's).
    pub commit: String,
    /// Exact copy, or modified from that version (then `aam verify` reports the edits).
    pub r#match: MatchKind,
    /// Where it was found, for each agent recorded.
    pub locations: Vec<String>,
    /// The agents recorded.
    pub platforms: Vec<Platform>,
}

/// Why an artifact was not adopted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AdoptSkip {
    /// Nothing the catalog indexed shares its files.
    NoOrigin,
    /// It is a link: aam never follows it.
    Link,
    /// Its folder or file name is not the artifact's name, so no agent reads it where an install would put it.
    NameDiffers,
    /// A package of that name is installed, or another copy is adopted under it.
    PackageExists,
}

/// An artifact left as it was.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SkippedAdoption {
    /// Where it was found.
    pub location: String,
    /// Why.
    pub reason: AdoptSkip,
}

/// Output of `aam_adopt`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AdoptOutput {
    /// Recorded in the lock file (or that would be, on a dry run).
    pub adopted: Vec<AdoptedArtifact>,
    /// Left as they were.
    pub skipped: Vec<SkippedAdoption>,
    /// The project (or home) root.
    pub root: String,
    /// Whether nothing was changed.
    pub dry_run: bool,
}

/// Records untracked copies in the lock file with their origin.
pub struct Adopt;

impl Tool for Adopt {
    const NAME: &'static str = "aam_adopt";
    const TITLE: &'static str = "Adopt hand-made copies";
    const DESCRIPTION: &'static str = "Record untracked artifacts that `aam_inventory` identified in the lock file, as an install of `source/artifact` at the matched commit would (same package, same lock entry), so verify, diff, outdated and upgrade work on them. The copies in the agent folders are not rewritten: only the package copy under `.aam/packages/` is written; a modified copy records the version it was modified from, and `aam_verify` then reports the edits. Next: `aam_verify`.";
    const RISK: Risk = Risk::Write;
    const IDEMPOTENT: bool = true;
    const ERRORS: &'static [ErrorCode] = &[
        ErrorCode::ArtifactNotFound,
        ErrorCode::Conflict,
        ErrorCode::LockInvalid,
        ErrorCode::UnsafePath,
        ErrorCode::SourceNotFound,
        ErrorCode::CacheCorrupted,
        ErrorCode::SourceFileTooLarge,
        ErrorCode::ManifestInvalid,
    ];
    const CONSTRAINTS: &'static [&'static str] =
        &["never rewrites the copies it adopts; writes only the package copy and the lock file, all-or-nothing"];
    const EXAMPLES: &'static [Example] = &[Example {
        title: "an artifact no agent folder holds",
        input: r#"{"names": ["ghost"]}"#,
        expect: Expect::Error(ErrorCode::ArtifactNotFound),
    }];
    type Input = AdoptInput;
    type Output = AdoptOutput;

    fn run(ctx: &Context, input: AdoptInput) -> Result<AdoptOutput> {
        if input.names.is_empty() != input.all {
            return Err(
                Error::invalid_argument("name the artifacts to adopt, or pass `all`, not both")
                    .with_hint("`aam inventory` lists the untracked artifacts and their origins"),
            );
        }
        let roots = roots(ctx, input.global)?;
        let _lock = match input.dry_run {
            true => None,
            false => Some(begin_write(ctx, &roots, input.no_wait)?),
        };
        let store = object_store(ctx);
        let mut plan = Plan::new(&roots, false)?.with_ownership(move |digest| store.has(digest));
        let walk = inventory::walk(&roots, Limits::default())?;
        let wanted = |f: &Found| input.all || input.names.iter().any(|n| *n == f.name || *n == f.location.key());
        let mut chosen = Vec::new();
        for found in walk.found.iter().filter(|f| wanted(f)) {
            if inventory::tracking(&roots, plan.lock(), found)? == Tracking::Untracked {
                chosen.push(found);
            }
        }
        for name in &input.names {
            if !chosen.iter().any(|f| *name == f.name || *name == f.location.key()) {
                return Err(Error::new(
                    ErrorCode::ArtifactNotFound,
                    format!("no untracked artifact in the agent folders is named `{name}`"),
                )
                .with_hint("`aam inventory` lists them by name and location"));
            }
        }
        let mut output = AdoptOutput {
            adopted: Vec::new(),
            skipped: Vec::new(),
            root: roots.root_text(),
            dry_run: input.dry_run,
        };
        // Copies of one artifact in several agents' folders make one package.
        let mut packages: BTreeMap<String, (Prepared, Match, Vec<&Found>)> = BTreeMap::new();
        {
            let catalog = ctx.catalog()?;
            let caches = ctx.home.git_cache_dir();
            for found in chosen {
                let skip = |reason| SkippedAdoption {
                    location: found.location.key(),
                    reason,
                };
                if found.link {
                    output.skipped.push(skip(AdoptSkip::Link));
                    continue;
                }
                let Some(matched) = inventory::identify(&catalog, found)? else {
                    output.skipped.push(skip(AdoptSkip::NoOrigin));
                    continue;
                };
                let package = inventory::adoption(&catalog, &caches, &matched)?;
                let name = package.manifest.name.clone();
                match packages.get_mut(&name) {
                    Some((_, other, founds)) if other.version.id == matched.version.id => founds.push(found),
                    Some(_) => output.skipped.push(skip(AdoptSkip::PackageExists)),
                    None if plan.lock().packages.contains_key(&name) => {
                        output.skipped.push(skip(AdoptSkip::PackageExists))
                    }
                    None => {
                        packages.insert(name, (package, matched, vec![found]));
                    }
                }
            }
        }
        let mut mirror = Vec::new();
        for (name, (package, matched, founds)) in &packages {
            let artifact_name = package.members.first().map(|m| m.name.as_str()).unwrap_or(name);
            let mut platforms = Vec::new();
            let mut locations = Vec::new();
            for found in founds {
                let here = inventory::platforms_at(found, artifact_name, roots.global);
                if here.is_empty() {
                    output.skipped.push(SkippedAdoption {
                        location: found.location.key(),
                        reason: AdoptSkip::NameDiffers,
                    });
                    continue;
                }
                platforms.extend(here);
                locations.push(found.location.key());
            }
            if platforms.is_empty() {
                continue;
            }
            let entry = plan.add_existing(package, &platforms)?;
            mirror.push(mirror_of(&roots, &entry, package));
            output.adopted.push(AdoptedArtifact {
                package: name.clone(),
                artifact: qualified_name(&matched.version.source, &matched.version.path),
                commit: matched.version.commit.clone(),
                r#match: if matched.exact {
                    MatchKind::Exact
                } else {
                    MatchKind::Modified
                },
                locations,
                platforms: entry.platforms.clone(),
            });
        }
        if input.dry_run || output.adopted.is_empty() {
            return Ok(output);
        }
        plan.execute(&object_store(ctx), mirror, &ctx.cancel, |ops| apply_mirror(ctx, ops))?;
        Ok(output)
    }
}
