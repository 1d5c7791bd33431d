//! Content-audit findings: what `aam audit`, `aam info`, `aam search` and the
//! install gate read. Findings are written with their artifact's files (see
//! `artifacts.rs`); only live artifacts' findings are ever returned.

use std::collections::HashMap;

use rusqlite::params_from_iter;

use super::{ArtifactId, SourceId};
use super::{Catalog, db_error};
use crate::audit::Severity;
use crate::error::Result;
use crate::scan::ArtifactKind;

/// One finding with the artifact it is in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FindingRow {
    /// Artifact id.
    pub artifact_id: ArtifactId,
    /// Source name.
    pub source: String,
    /// Artifact kind.
    pub kind: ArtifactKind,
    /// Artifact name.
    pub name: String,
    /// Artifact path.
    pub artifact_path: String,
    /// Repository path of the file.
    pub path: String,
    /// Rule id.
    pub rule: String,
    /// Severity.
    pub severity: Severity,
    /// 1-based line; `None` for whole-file findings.
    pub line: Option<u32>,
    /// Excerpt, invisible characters made visible.
    pub excerpt: String,
}

/// Which findings to read.
#[derive(Debug, Clone, Default)]
pub struct FindingFilter {
    /// Only this source.
    pub source_id: Option<SourceId>,
    /// Only these artifacts (`None`: every live artifact).
    pub artifact_ids: Option<Vec<ArtifactId>>,
    /// Only at or above this severity (`None`: all).
    pub min_severity: Option<Severity>,
}

/// Findings of one artifact, counted by severity.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FindingCounts {
    /// `info` findings.
    pub info: u64,
    /// `warn` findings.
    pub warn: u64,
    /// `high` findings.
    pub high: u64,
}

impl FindingCounts {
    /// All findings.
    pub fn total(&self) -> u64 {
        self.info + self.warn + self.high
    }

    /// The highest severity counted, `None` when there are none.
    pub fn highest(&self) -> Option<Severity> {
        if self.high > 0 {
            Some(Severity::High)
        } else if self.warn > 0 {
            Some(Severity::Warn)
        } else if self.info > 0 {
            Some(Severity::Info)
        } else {
            None
        }
    }
}

impl Catalog {
    /// Findings of live artifacts matching `filter`, by source, kind, artifact, file and line.
    pub fn findings(&self, filter: &FindingFilter) -> Result<Vec<FindingRow>> {
        let mut sql = String::from(
            "SELECT f.artifact_id, s.name, a.kind, a.name, a.path, f.path, f.rule, f.severity, f.line, f.excerpt
             FROM artifact_findings f
             JOIN artifacts a ON a.id = f.artifact_id
             JOIN sources s ON s.id = a.source_id
             WHERE a.removed_commit_id IS NULL",
        );
        let mut args: Vec<rusqlite::types::Value> = Vec::new();
        if let Some(source_id) = filter.source_id {
            sql.push_str(" AND a.source_id = ?");
            args.push(source_id.into());
        }
        if let Some(ids) = &filter.artifact_ids {
            if ids.is_empty() {
                return Ok(Vec::new());
            }
            sql.push_str(&format!(" AND f.artifact_id IN ({})", vec!["?"; ids.len()].join(",")));
            args.extend(ids.iter().map(|&id| rusqlite::types::Value::from(id)));
        }
        if let Some(min) = filter.min_severity {
            let kept: Vec<&str> = Severity::ALL
                .iter()
                .filter(|s| **s >= min)
                .map(|s| s.as_str())
                .collect();
            sql.push_str(&format!(" AND f.severity IN ({})", vec!["?"; kept.len()].join(",")));
            args.extend(kept.iter().map(|s| rusqlite::types::Value::from(s.to_string())));
        }
        sql.push_str(" ORDER BY s.name, a.kind, a.path, f.path, f.line, f.rule");
        let mut stmt = self.conn.prepare(&sql).map_err(db_error)?;
        let rows = stmt
            .query_map(params_from_iter(args), |r| {
                let kind: String = r.get(2)?;
                let severity: String = r.get(7)?;
                Ok(FindingRow {
                    artifact_id: r.get(0)?,
                    source: r.get(1)?,
                    kind: super::artifacts::kind_from_sql(&kind),
                    name: r.get(3)?,
                    artifact_path: r.get(4)?,
                    path: r.get(5)?,
                    rule: r.get(6)?,
                    severity: Severity::parse(&severity).unwrap_or(Severity::High),
                    line: r.get::<_, Option<i64>>(8)?.map(|l| l as u32),
                    excerpt: r.get(9)?,
                })
            })
            .map_err(db_error)?;
        rows.collect::<rusqlite::Result<_>>().map_err(db_error)
    }

    /// Findings counted by severity for each of `ids` that has any.
    pub fn finding_counts(&self, ids: &[ArtifactId]) -> Result<HashMap<ArtifactId, FindingCounts>> {
        let mut counts: HashMap<ArtifactId, FindingCounts> = HashMap::new();
        let mut stmt = self
            .conn
            .prepare_cached("SELECT severity, COUNT(*) FROM artifact_findings WHERE artifact_id = ?1 GROUP BY severity")
            .map_err(db_error)?;
        for &id in ids {
            let rows = stmt
                .query_map([id], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as u64)))
                .map_err(db_error)?;
            for row in rows {
                let (severity, n) = row.map_err(db_error)?;
                let entry = counts.entry(id).or_default();
                match Severity::parse(&severity) {
                    Some(Severity::Info) => entry.info += n,
                    Some(Severity::Warn) => entry.warn += n,
                    _ => entry.high += n,
                }
            }
        }
        Ok(counts)
    }
}
