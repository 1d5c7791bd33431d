//! `aam_audit`: the content audit's findings (see `docs/audit.md`), read from the
//! catalog for every source, one source, one artifact or what this project installed.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Context, Example, Expect, Risk, Tool, qualified_name};
use crate::audit::installed::{InstalledFinding, scan_deployed};
use crate::audit::report::{AuditFinding, SeverityCounts, finding};
use crate::audit::{RULES_VERSION, Severity, find_rule};
use crate::catalog::FindingFilter;
use crate::error::{Error, ErrorCode, Result};
use crate::packages::lock;
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
    /// Audit what this project's agents read instead: its installs' deployed files as they are on disk.
    #[serde(default)]
    pub installed: bool,
    /// Only findings at or above this severity: `info` (default), `warn` or `high`.
    #[serde(default)]
    pub min_severity: Option<Severity>,
    /// Findings to return at most (1 to 10000, default 500).
    #[serde(default)]
    #[schemars(range(min = 1, max = 10000))]
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
    /// With `installed`: deployed files that could not be scanned whole (links, folders, damaged sections, files over 1 MiB, folders too large to walk); a gate cannot vouch for them.
    pub not_scanned: Vec<String>,
}

/// Lists content-audit findings.
pub struct Audit;

impl Tool for Audit {
    const NAME: &'static str = "aam_audit";
    const TITLE: &'static str = "Audit artifact contents";
    const DESCRIPTION: &'static str = "List what the content audit found in artifacts' files when their sources were indexed: hidden characters, instructions aimed at the agent, risky commands, committed secrets, broad frontmatter powers, binaries. Each finding has a rule id, severity (info, warn, high), file, line, an excerpt with invisible characters made visible, a reason and a fix. Audit every source, one source, one artifact, or (`installed`) what this project's agents read: every deployed file and section of its installs and files added to deployed skill folders, scanned as they are on disk (`not_scanned` lists what cannot be read as it is). Next: `aam_info` for the artifact; `aam_install` refuses findings at or above the `audit.block` setting unless `allow_findings` names their rules.";
    const RISK: Risk = Risk::Read;
    const IDEMPOTENT: bool = true;
    const ERRORS: &'static [ErrorCode] = &[
        ErrorCode::ArtifactNotFound,
        ErrorCode::ArtifactAmbiguous,
        ErrorCode::SourceNotFound,
        ErrorCode::SourceNotIndexed,
        ErrorCode::LockInvalid,
        ErrorCode::UnsafePath,
    ];
    const CONSTRAINTS: &'static [&'static str] = &[
        "`target` and `installed` are exclusive",
        "`limit` is 1 to 10000",
        "findings of artifacts indexed before the audit existed appear after their source is updated or re-added",
    ];
    const EXAMPLES: &'static [Example] = &[
        Example {
            title: "every finding of a source at warn or above",
            input: r#"{"target": "sample", "min_severity": "warn"}"#,
            expect: Expect::Output(r#"{"rules_version": 4, "truncated": false}"#),
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
        let at_least = |f: &AuditFinding| input.min_severity.is_none_or(|min| f.severity >= min);
        if input.installed {
            let (findings, not_scanned) = installed(ctx)?;
            let findings = findings.into_iter().filter(at_least).collect();
            return Ok(AuditOutput {
                not_scanned,
                ..output(findings, limit as usize)
            });
        }
        let catalog = ctx.catalog()?;
        let mut filter = FindingFilter {
            min_severity: input.min_severity,
            ..Default::default()
        };
        if let Some(target) = input.target.as_deref().filter(|t| !t.trim().is_empty()) {
            match catalog.list_sources()?.into_iter().find(|s| s.name == target) {
                Some(source) => filter.source_id = Some(source.id),
                None => {
                    let found = resolve_artifact(&catalog, target, || ctx.search_index(), ctx.progress.as_ref())
                        .map_err(|e| match e.code() {
                            // The target may name a source as well.
                            ErrorCode::ArtifactNotFound => Error::new(
                                ErrorCode::ArtifactNotFound,
                                format!("no artifact or source named `{}`", crate::error::quoted(target)),
                            )
                            .with_hint(format!(
                                "{}; `aam source list` names the sources",
                                e.hint().unwrap_or("find artifacts with `aam search <words>`")
                            )),
                            _ => e,
                        })?;
                    filter.artifact_ids = Some(vec![found.id]);
                }
            }
        }
        let findings: Vec<AuditFinding> = catalog.findings(&filter)?.into_iter().map(finding).collect();
        Ok(output(findings, limit as usize))
    }
}

/// What agents read of this project's installs, scanned on disk as it is
/// now (see [`scan_deployed`]): the findings, and what could not be scanned.
fn installed(ctx: &Context) -> Result<(Vec<AuditFinding>, Vec<String>)> {
    let roots = ctx.install_roots(false)?;
    let lock = lock::read(&roots.root)?;
    roots.check_lock(&lock)?;
    let written = crate::install::mirror::WrittenHere::of(&*ctx.catalog()?, &roots, &lock)?;
    let (mut findings, mut not_scanned) = (Vec::new(), Vec::new());
    for (name, package) in &lock.packages {
        let deployed = scan_deployed(&roots, name, package, |key, digest| written.wrote(key, digest))?;
        findings.extend(deployed.findings.into_iter().map(|f| deployed_finding(name, f)));
        not_scanned.extend(deployed.not_scanned);
    }
    Ok((findings, not_scanned))
}

/// A finding in what an install deployed, named `package/artifact`.
fn deployed_finding(package: &str, found: InstalledFinding) -> AuditFinding {
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
        not_scanned: Vec::new(),
    }
}

// ---------------------------------------------------------------- install gate
