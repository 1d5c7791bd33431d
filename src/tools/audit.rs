//! `aam_audit`: the content audit's findings (see `docs/audit.md`), read from the
//! catalog for every source, one source, one artifact or what this project installed.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Context, Example, Expect, Risk, Tool, qualified_name};
use crate::audit::installed::{InstalledFinding, scan_edited_deployments, scan_installed};
use crate::audit::report::{AuditFinding, SeverityCounts, finding};
use crate::audit::{RULES_VERSION, Severity, find_rule};
use crate::catalog::{ArtifactId, Catalog, FindingFilter};
use crate::error::{Error, ErrorCode, Result};
use crate::packages::lock::{self, Origin};
use crate::search::resolve_artifact;

/// Findings returned by default.
const DEFAULT_LIMIT: u32 = 500;

/// Input of `aam_audit`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AuditInput {
    /// A source name, or one artifact (`source/name`, `source/path`, a name only one
    /// source has). Empty: every source.
    #[serde(default)]
    pub target: Option<String>,
    /// Audit what this project installed instead: source artifacts from the catalog while it holds them as installed, other packages' files on disk, and deployed files edited since install.
    #[serde(default)]
    pub installed: bool,
    /// Only findings at or above this severity: `info` (default), `warn` or `high`.
    #[serde(default)]
    pub min_severity: Option<Severity>,
    /// Findings to return at most (1 to 10000, default 500).
    #[serde(default)]
    pub limit: Option<u32>,
}

/// Output of `aam_audit`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AuditOutput {
    /// Version of the rule set the scanner runs.
    pub rules_version: u32,
    /// Every finding matched, counted by severity (also those past `limit`).
    pub counts: SeverityCounts,
    /// Artifacts with at least one finding matched.
    pub artifacts_with_findings: u64,
    /// Findings, by source, type, artifact, file and line.
    pub findings: Vec<AuditFinding>,
    /// Whether findings were left out by `limit`.
    pub truncated: bool,
}

/// Lists content-audit findings.
pub struct Audit;

impl Tool for Audit {
    const NAME: &'static str = "aam_audit";
    const TITLE: &'static str = "Audit artifact contents";
    const DESCRIPTION: &'static str = "List what the content audit found in artifacts' files when their sources were indexed: hidden characters, instructions aimed at the agent, risky commands, committed secrets, broad frontmatter powers, binaries. Each finding has a rule id, severity (info, warn, high), file, line, an excerpt with invisible characters made visible, a reason and a fix. Audit every source, one source, one artifact, or (`installed`) everything installed in this project (source artifacts from the catalog while it holds them as installed, else and for other packages from their installed copies, plus deployed files edited since install). Next: `aam_info` for the artifact; `aam_install` refuses findings at or above the `audit.block` setting unless `allow_findings` names their rules.";
    const RISK: Risk = Risk::Read;
    const IDEMPOTENT: bool = true;
    const ERRORS: &'static [ErrorCode] = &[ErrorCode::ArtifactNotFound, ErrorCode::ArtifactAmbiguous];
    const CONSTRAINTS: &'static [&'static str] = &[
        "`target` and `installed` are exclusive",
        "`limit` is 1 to 10000",
        "findings of artifacts indexed before the audit existed appear after their source is updated or re-added",
    ];
    const EXAMPLES: &'static [Example] = &[
        Example {
            title: "every finding of a source at warn or above",
            input: r#"{"target": "sample", "min_severity": "warn"}"#,
            expect: Expect::Output(r#"{"rules_version": 1, "truncated": false}"#),
        },
        Example {
            title: "an artifact no source has",
            input: r#"{"target": "sample/ghost"}"#,
            expect: Expect::Error(ErrorCode::ArtifactNotFound),
        },
    ];
    type Input = AuditInput;
    type Output = AuditOutput;

    fn run(ctx: &Context, input: AuditInput) -> Result<AuditOutput> {
        let limit = input.limit.unwrap_or(DEFAULT_LIMIT);
        if !(1..=10_000).contains(&limit) {
            return Err(Error::invalid_argument(format!(
                "`limit` is {limit}; it takes 1 to 10000"
            )));
        }
        if input.installed && input.target.is_some() {
            return Err(Error::invalid_argument("`target` and `installed` cannot be combined")
                .with_hint("audit one target, or everything installed in this project"));
        }
        let catalog = ctx.catalog()?;
        let mut filter = FindingFilter {
            min_severity: input.min_severity,
            ..Default::default()
        };
        let mut from_copies = Vec::new();
        if input.installed {
            let (ids, copies) = installed(ctx, &catalog)?;
            filter.artifact_ids = Some(ids);
            from_copies = copies;
        } else if let Some(target) = input.target.as_deref().filter(|t| !t.trim().is_empty()) {
            match catalog.list_sources()?.into_iter().find(|s| s.name == target) {
                Some(source) => filter.source_id = Some(source.id),
                None => {
                    let found = resolve_artifact(&catalog, target, || ctx.search_index(), ctx.progress.as_ref())?;
                    filter.artifact_ids = Some(vec![found.id]);
                }
            }
        }
        let mut findings: Vec<AuditFinding> = catalog.findings(&filter)?.into_iter().map(finding).collect();
        findings.extend(
            from_copies
                .into_iter()
                .filter(|f| input.min_severity.is_none_or(|min| f.severity >= min)),
        );
        Ok(output(findings, limit as usize))
    }
}

/// What this project installed: the catalog artifacts of its source installs
/// the catalog holds as installed (audited from the catalog), the findings in
/// the copies of every other install, scanned on disk, and those in deployed
/// files edited since install.
fn installed(ctx: &Context, catalog: &Catalog) -> Result<(Vec<ArtifactId>, Vec<AuditFinding>)> {
    let roots = ctx.install_roots(false)?;
    let lock = lock::read(&roots.root)?;
    roots.check_lock(&lock)?;
    let sources = catalog.list_sources()?;
    let (mut ids, mut copies) = (Vec::new(), Vec::new());
    for (name, package) in &lock.packages {
        let mut found = scan_edited_deployments(&roots, name, package)?;
        match as_installed_in_catalog(catalog, &sources, package)? {
            Some(artifacts) => ids.extend(artifacts),
            None => found.extend(scan_installed(&roots, name, package)?),
        }
        copies.extend(found.into_iter().map(|f| copy_finding(name, f)));
    }
    Ok((ids, copies))
}

/// The catalog artifacts of a source install while the catalog holds every
/// one of them as installed (same content digest); `None` for other installs,
/// and for a source install the catalog does not hold so (its source not
/// registered here, as on a fresh CI machine, or changed since): its copy is
/// scanned instead.
fn as_installed_in_catalog(
    catalog: &Catalog,
    sources: &[crate::catalog::SourceRecord],
    package: &crate::packages::lock::LockedPackage,
) -> Result<Option<Vec<ArtifactId>>> {
    if package.source != Origin::Source {
        return Ok(None);
    }
    let Some(source) = sources.iter().find(|s| s.name == package.source_name) else {
        return Ok(None);
    };
    let paths: Vec<String> = package.artifacts.iter().map(|a| a.path.clone()).collect();
    let live = catalog.live_artifacts_in(source.id, &paths, &[])?;
    let mut ids = Vec::new();
    for artifact in &package.artifacts {
        match live
            .iter()
            .find(|l| l.kind == artifact.kind && l.path == artifact.path && l.content_digest == artifact.digest)
        {
            Some(found) => ids.push(found.id),
            None => return Ok(None),
        }
    }
    Ok(Some(ids))
}

/// A finding in an installed package's copy, named `package/artifact`.
fn copy_finding(package: &str, found: InstalledFinding) -> AuditFinding {
    let rule = find_rule(found.finding.rule);
    AuditFinding {
        artifact: qualified_name(package, &found.artifact),
        kind: found.kind,
        artifact_path: found.artifact_path,
        path: found.path,
        rule: found.finding.rule.to_string(),
        severity: found.finding.severity,
        line: found.finding.line,
        excerpt: found.finding.excerpt,
        reason: rule.map(|r| r.reason.to_string()).unwrap_or_default(),
        fix: rule.map(|r| r.fix.to_string()).unwrap_or_default(),
    }
}

fn output(findings: Vec<AuditFinding>, limit: usize) -> AuditOutput {
    let mut counts = SeverityCounts::default();
    let mut artifacts = std::collections::HashSet::new();
    for finding in &findings {
        counts.add(finding.severity);
        artifacts.insert((finding.artifact.clone(), finding.artifact_path.clone()));
    }
    let truncated = findings.len() > limit;
    AuditOutput {
        rules_version: RULES_VERSION,
        counts,
        artifacts_with_findings: artifacts.len() as u64,
        findings: findings.into_iter().take(limit).collect(),
        truncated,
    }
}

// ---------------------------------------------------------------- install gate
