//! `aam_outdated`: which installed packages have newer content or versions
//! (answered from the catalog by [`crate::install::freshness`]).

use crate::tools::with_fresh_registries;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::super::{Context, Example, Expect, Risk, Tool};
use super::roots;
use crate::error::{ErrorCode, Result};
use crate::install::freshness;
use crate::packages::lock::Origin;

/// Input of `aam_outdated`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutdatedInput {
    /// Check the home-folder installs.
    #[serde(default)]
    pub global: bool,
}

/// One installed package's freshness.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutdatedPackage {
    /// Name.
    pub name: String,
    /// Installed version.
    pub current: String,
    /// Newest version its constraint allows (registry packages).
    pub wanted: Option<String>,
    /// Newest published version (registry packages).
    pub latest: Option<String>,
    /// Where it came from.
    pub source: Origin,
    /// Whether an upgrade would change it.
    pub outdated: bool,
    /// A newer version exists that its constraint excludes: `upgrade` leaves it, installing `name@version` moves it.
    pub pinned: bool,
    /// Its origin no longer has it (the artifact was removed upstream): nothing to upgrade to; it stays as it is unless uninstalled.
    pub gone: bool,
    /// Where upstream moved it, when `gone` from its path: the path in its source of the one artifact there of its type and name (`reason` gives the commands that follow it).
    pub moved_to: Option<String>,
    /// Its origin is not known on this machine (source not registered here, registry not configured or not listing it; or a package folder or archive, which aam does not track): nothing to compare with (`reason` says what to run).
    pub unknown: bool,
    /// Why, in words.
    pub reason: String,
}

/// Output of `aam_outdated`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutdatedOutput {
    /// Every installed package.
    pub packages: Vec<OutdatedPackage>,
    /// The registered sources the installed source artifacts are compared with,
    /// and when each was last fetched: the answer is as of then.
    pub sources: Vec<ComparedSource>,
}

/// A source as the catalog last fetched it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ComparedSource {
    /// Source name.
    pub name: String,
    /// When it was last fetched (RFC 3339); `null` when never.
    pub fetched_at: Option<String>,
}

/// Tells which installed packages have newer content or versions.
pub struct Outdated;

impl Tool for Outdated {
    const NAME: &'static str = "aam_outdated";
    const TITLE: &'static str = "Find outdated packages";
    const DESCRIPTION: &'static str = "For each installed package: whether its source artifacts changed at the source's indexed commit (a new commit that does not touch them does not count), or a newer registry version satisfies its constraint. Answered from the catalog; run `aam_source_update` first for fresh sources. Next: `aam_upgrade`.";
    const RISK: Risk = Risk::Read;
    const IDEMPOTENT: bool = true;
    const ERRORS: &'static [ErrorCode] = &[ErrorCode::LockInvalid, ErrorCode::UnsafePath];
    const CONSTRAINTS: &'static [&'static str] = &["answers from the catalog: update sources first for fresh results"];
    const EXAMPLES: &'static [Example] = &[Example {
        title: "a newer version satisfies the constraint",
        input: r#"{}"#,
        expect: Expect::Output(
            r#"{"packages": [{"name": "review-kit", "current": "1.0.0", "wanted": "1.1.0", "latest": "1.1.0", "outdated": true}]}"#,
        ),
    }];
    type Input = OutdatedInput;
    type Output = OutdatedOutput;

    fn run(ctx: &Context, input: OutdatedInput) -> Result<OutdatedOutput> {
        let roots = roots(ctx, input.global)?;
        let lock = roots.read_lock()?;
        let settings = ctx.home.load_settings()?;
        let catalog = with_fresh_registries(ctx, &settings)?;
        let mut packages = Vec::new();
        for (name, entry) in &lock.packages {
            let fresh = freshness::check(&catalog, &settings, &ctx.home.git_cache_dir(), &lock, name, entry)?;
            packages.push(OutdatedPackage {
                name: name.clone(),
                current: entry.version.clone(),
                wanted: fresh.wanted,
                latest: fresh.latest,
                source: entry.source,
                outdated: fresh.outdated,
                pinned: fresh.pinned,
                gone: fresh.gone,
                moved_to: fresh.moved_to,
                unknown: fresh.unknown,
                reason: fresh.reason,
            });
        }
        let mut sources: Vec<ComparedSource> = Vec::new();
        for entry in lock.packages.values().filter(|e| e.source == Origin::Source) {
            // A source not registered here is named in the package's `reason`.
            if let Some(source) = freshness::origin_source(&catalog, entry)?
                && !sources.iter().any(|s| s.name == source.name)
            {
                sources.push(ComparedSource {
                    name: source.name,
                    fetched_at: source.fetched_at,
                });
            }
        }
        sources.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(OutdatedOutput { packages, sources })
    }
}
