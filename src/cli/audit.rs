//! `aam audit`: its arguments, the tool input they become, and how findings read
//! for people.

use super::{Output, severity_arg};
use crate::audit::Severity;
use crate::error::Result;
use crate::tools::audit::{Audit, AuditInput, AuditOutput};
use crate::tools::{Context, invoke};

/// `aam audit`.
#[derive(Debug, clap::Args)]
pub(super) struct AuditArgs {
    /// A source, or one artifact (`source/name`, `source/path`, a name only one source has); default: every source.
    target: Option<String>,
    /// Audit what this project installed instead: source artifacts from the catalog, other packages' files on disk.
    #[arg(long, conflicts_with = "target")]
    installed: bool,
    /// Only findings at or above this severity: info, warn, high.
    #[arg(long, value_name = "SEVERITY", value_parser = severity_arg)]
    min_severity: Option<Severity>,
    /// Findings to show at most (1 to 10000).
    #[arg(long, default_value_t = 500)]
    limit: u32,
    /// Exit 1 when a finding at or above this severity is found (a CI gate): info, warn, high.
    #[arg(long, value_name = "SEVERITY", value_parser = severity_arg)]
    fail_on: Option<Severity>,
}

impl From<AuditArgs> for AuditInput {
    fn from(a: AuditArgs) -> Self {
        Self {
            target: a.target,
            installed: a.installed,
            min_severity: a.min_severity,
            limit: Some(a.limit),
        }
    }
}

/// Lists the findings; exit 1 when one reaches `--fail-on`.
pub(super) fn run(ctx: &Context, out: &Output, args: AuditArgs) -> Result<i32> {
    let fail_on = args.fail_on;
    let output = invoke::<Audit>(ctx, args.into())?;
    let code = out.emit(&output, audited)?;
    let counts = &output.counts;
    let worst = [
        (Severity::High, counts.high),
        (Severity::Warn, counts.warn),
        (Severity::Info, counts.info),
    ]
    .into_iter()
    .find(|(_, n)| *n > 0)
    .map(|(severity, _)| severity);
    Ok(match (fail_on, worst) {
        (Some(threshold), Some(worst)) if worst >= threshold => 1,
        // What could not be scanned cannot pass a gate.
        (Some(_), _) if !output.not_scanned.is_empty() => 1,
        _ => code,
    })
}

/// `aam audit`: one block per artifact, one line per finding.
fn audited(o: &AuditOutput) -> String {
    let mut out = String::new();
    if !o.not_scanned.is_empty() {
        out.push_str("Not scanned whole (a link, a folder, a damaged section, over 1 MiB or too many files; `--fail-on` fails on them):\n");
        for key in &o.not_scanned {
            out.push_str(&format!("  {key}\n"));
        }
        out.push('\n');
    }
    if o.findings.is_empty() {
        out.push_str("No findings.\n");
        return out;
    }
    let mut current = None;
    for f in &o.findings {
        if current != Some((&f.artifact, &f.artifact_path)) {
            if current.is_some() {
                out.push('\n');
            }
            out.push_str(&format!("{} ({}, {})\n", f.artifact, f.kind.as_str(), f.artifact_path));
            current = Some((&f.artifact, &f.artifact_path));
        }
        let place = match f.line {
            Some(line) => format!("{}:{line}", f.path),
            None => f.path.clone(),
        };
        out.push_str(&format!(
            "  {:<4}  {}  {place}\n        {}\n",
            f.severity.as_str(),
            f.rule,
            f.excerpt
        ));
    }
    out.push_str(&format!(
        "\n{} high, {} warn, {} info in {} artifact(s){}\n",
        o.counts.high,
        o.counts.warn,
        o.counts.info,
        o.artifacts_with_findings,
        if o.truncated {
            " (more than shown; raise `--limit`)"
        } else {
            ""
        }
    ));
    out
}
