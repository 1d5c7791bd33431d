//! Health checks: what `aam catalog check` and `aam doctor` report, one check at a
//! time (pass, warn or fail, with a suggestion), and the checks of the catalog,
//! the search index, the git caches and the stored originals.
//!
//! Reads only: a check never repairs (that is `aam_catalog_repair`, which acts on
//! the checks' names). The one file it writes is `record`'s: the last passing
//! integrity check, a cache the checks can always do without.

mod catalog;
mod record;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use catalog::{
    CACHES_CHECK, FILES_CHECK, INDEX_CHECK, OBJECTS_CHECK, RestoreReview, UnusedRestore, VERSIONS_CHECK,
    catalog_checks, originals, review_restores, unused_caches,
};

/// How a health check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CheckStatus {
    /// Nothing to do.
    Pass,
    /// Works, but worth a look.
    Warn,
    /// Broken: something will fail.
    Fail,
}

/// One health check's finding.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HealthCheck {
    /// Stable check name.
    pub name: String,
    /// Outcome.
    pub status: CheckStatus,
    /// What was found.
    pub message: String,
    /// What to do about it, when anything.
    pub suggestion: Option<String>,
}

impl HealthCheck {
    fn new(name: &str, status: CheckStatus, message: impl Into<String>, suggestion: Option<String>) -> Self {
        Self {
            name: name.to_string(),
            status,
            message: message.into(),
            suggestion,
        }
    }

    pub fn pass(name: &str, message: impl Into<String>) -> Self {
        Self::new(name, CheckStatus::Pass, message, None)
    }

    pub fn warn(name: &str, message: impl Into<String>, suggestion: impl Into<String>) -> Self {
        Self::new(name, CheckStatus::Warn, message, Some(suggestion.into()))
    }

    pub fn fail(name: &str, message: impl Into<String>, suggestion: impl Into<String>) -> Self {
        Self::new(name, CheckStatus::Fail, message, Some(suggestion.into()))
    }
}

/// `N checks: P passed, W warnings, F failed`.
fn summary(checks: &[HealthCheck]) -> String {
    let count = |status| checks.iter().filter(|c| c.status == status).count();
    let warnings = count(CheckStatus::Warn);
    format!(
        "{} {}: {} passed, {warnings} {}, {} failed",
        checks.len(),
        if checks.len() == 1 { "check" } else { "checks" },
        count(CheckStatus::Pass),
        if warnings == 1 { "warning" } else { "warnings" },
        count(CheckStatus::Fail)
    )
}

/// Output of `aam_catalog_check` and `aam_doctor`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HealthReport {
    /// Whether no check failed (warnings allowed).
    pub healthy: bool,
    /// Every check, in order.
    pub checks: Vec<HealthCheck>,
    /// One line.
    pub summary: String,
}

impl HealthReport {
    /// The report on `checks`.
    pub fn of(checks: Vec<HealthCheck>) -> Self {
        Self {
            healthy: checks.iter().all(|c| c.status != CheckStatus::Fail),
            summary: summary(&checks),
            checks,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_is_healthy_unless_a_check_fails() {
        let report = HealthReport::of(vec![
            HealthCheck::pass("a", "fine"),
            HealthCheck::warn("b", "odd", "look"),
        ]);
        assert!(report.healthy);
        assert_eq!(report.summary, "2 checks: 1 passed, 1 warning, 0 failed");
        let report = HealthReport::of(vec![HealthCheck::fail("c", "broken", "fix it")]);
        assert!(!report.healthy);
        assert_eq!(report.summary, "1 check: 0 passed, 0 warnings, 1 failed");
        assert_eq!(report.checks[0].suggestion.as_deref(), Some("fix it"));
    }
}
