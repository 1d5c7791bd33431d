//! What the content audit found, as `aam_audit` and `aam_info` report it: one
//! finding with its rule's reason and fix, and findings counted by severity.
//!
//! Plain data built from catalog rows; no SQL, no I/O.

use schemars::JsonSchema;
use serde::Serialize;

use super::{Severity, find_rule};
use crate::catalog::FindingRow;
use crate::scan::ArtifactKind;
use crate::sources::qualified_name;

/// One finding.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AuditFinding {
    /// `source/name` of the artifact.
    pub artifact: String,
    /// Artifact type.
    #[serde(rename = "type")]
    pub kind: ArtifactKind,
    /// Artifact path in its repository.
    pub artifact_path: String,
    /// File the finding is in (repository path).
    pub path: String,
    /// Rule id (see `docs/audit.md`).
    pub rule: String,
    /// `info`, `warn` or `high`.
    pub severity: Severity,
    /// 1-based line; absent for whole-file findings.
    pub line: Option<u32>,
    /// The text found, invisible characters shown as `<U+XXXX>`, secrets cut short.
    pub excerpt: String,
    /// Why the rule matters.
    pub reason: String,
    /// What to do about it.
    pub fix: String,
}

/// Findings counted by severity.
#[derive(Debug, Clone, Copy, Default, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SeverityCounts {
    /// `high` findings.
    pub high: u64,
    /// `warn` findings.
    pub warn: u64,
    /// `info` findings.
    pub info: u64,
}

impl SeverityCounts {
    /// Counts one more finding of `severity`.
    pub fn add(&mut self, severity: Severity) {
        match severity {
            Severity::High => self.high += 1,
            Severity::Warn => self.warn += 1,
            Severity::Info => self.info += 1,
        }
    }
}

/// A catalog finding with its rule's reason and fix.
pub fn finding(row: FindingRow) -> AuditFinding {
    let rule = find_rule(&row.rule);
    AuditFinding {
        artifact: qualified_name(&row.source, &row.name),
        kind: row.kind,
        artifact_path: row.artifact_path,
        path: row.path,
        reason: rule.map(|r| r.reason.to_string()).unwrap_or_default(),
        fix: rule.map(|r| r.fix.to_string()).unwrap_or_default(),
        rule: row.rule,
        severity: row.severity,
        line: row.line,
        excerpt: row.excerpt,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_up_by_severity() {
        let mut counts = SeverityCounts::default();
        for severity in [Severity::High, Severity::Warn, Severity::Warn, Severity::Info] {
            counts.add(severity);
        }
        assert_eq!((counts.high, counts.warn, counts.info), (1, 2, 1));
    }
}
