//! `aam_adopt`: recording hand-made copies that `aam_inventory` identified in
//! the lock file, as an install of their origin would, without rewriting them.
//!
//! Orchestration only: [`crate::install::inventory`] picks the copies, matches
//! them and makes the package; the plan and the journal write the lock.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::super::{Context, Example, Expect, Risk, Tool};
use super::{MatchKind, apply_mirror, begin_write, object_store, roots, written_here};
use crate::error::{Error, ErrorCode, Result};
use crate::install::inventory::{self, Found, Limits, Match};
use crate::install::mirror;
use crate::install::plan::{Plan, Prepared};
use crate::scan::Platform;
use crate::sources::qualified_name;

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
    /// Another install on this machine wrote it (a home-folder file such as a Codex prompt): not a hand-made copy, and not this project's to record.
    InstalledElsewhere,
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
        let plan = Plan::new(&roots, false)?;
        let written = written_here(ctx, &roots, plan.lock())?;
        let walk = inventory::walk(&roots, Limits::default())?;
        let chosen = inventory::untracked_named(&roots, plan.lock(), &walk, &input.names, input.all)?;
        // A home-folder file another project's install wrote is that install's:
        // recorded here, every clone's restore would write it too.
        let elsewhere: Vec<bool> = chosen
            .iter()
            .map(|found| !written.shared_with(&found.location.key()).is_empty())
            .collect();
        let mut plan = plan.with_ownership(written);
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
            for (found, elsewhere) in chosen.into_iter().zip(elsewhere) {
                let skip = |reason| SkippedAdoption {
                    location: found.location.key(),
                    reason,
                };
                if found.link {
                    output.skipped.push(skip(AdoptSkip::Link));
                    continue;
                }
                if elsewhere {
                    output.skipped.push(skip(AdoptSkip::InstalledElsewhere));
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
            mirror.push(mirror::adoption_of(&roots, &entry, package));
            output.adopted.push(AdoptedArtifact {
                package: name.clone(),
                artifact: qualified_name(&matched.version.source, &matched.version.path),
                commit: matched.version.commit.clone(),
                r#match: MatchKind::from(matched),
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
