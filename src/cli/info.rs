//! `aam info`: its arguments, the tool input they become, and how an artifact or
//! a package reads for people. A `source/artifact` form is an artifact; any other
//! name is the package by that name installed here or published, else an artifact.

use super::Output;
use super::render::{platform_list, table};
use crate::error::{ErrorCode, Result};
use crate::sources::short_id;
use crate::tools::artifacts::{Info, InfoInput, InfoOutput};
use crate::tools::install::{PackageInfo, PackageInfoInput, PackageInfoOutput};
use crate::tools::{Context, invoke};

/// `aam info`.
#[derive(Debug, clap::Args)]
pub(super) struct InfoArgs {
    /// `source/name`, `source/path`, or a name only one source has.
    name: String,
    /// Show the whole main file, not just its beginning.
    #[arg(long)]
    full: bool,
}

impl From<InfoArgs> for InfoInput {
    fn from(a: InfoArgs) -> Self {
        Self {
            name: a.name,
            full: a.full,
        }
    }
}

impl From<&InfoArgs> for PackageInfoInput {
    fn from(a: &InfoArgs) -> Self {
        Self {
            name: a.name.clone(),
            global: false,
        }
    }
}

/// Shows the package or the artifact the name means.
pub(super) fn run(ctx: &Context, out: &Output, args: InfoArgs) -> Result<i32> {
    match package_named(ctx, &args)? {
        Some(found) => out.emit(&found, package),
        None => out.emit(&invoke::<Info>(ctx, args.into())?, artifact),
    }
}

/// The package the name means, or `None` when it means an artifact: the
/// `source/artifact` forms are artifacts; any other name is a package when one by
/// that name is installed here or published.
fn package_named(ctx: &Context, args: &InfoArgs) -> Result<Option<PackageInfoOutput>> {
    if args.name.contains('/') && !args.name.starts_with('@') {
        return Ok(None);
    }
    match invoke::<PackageInfo>(ctx, args.into()) {
        Ok(found) => Ok(Some(found)),
        Err(e) if e.code() == ErrorCode::PackageNotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// `aam info`.
fn artifact(o: &InfoOutput) -> String {
    let mut out = format!("{} ({})\n", o.qualified_name, o.kind.as_str());
    if let Some(d) = &o.description {
        out.push_str(&format!("{d}\n"));
    }
    out.push('\n');
    let commit = o.commit.as_deref().map_or("-", short_id);
    let fields = [
        ("source", format!("{} ({})", o.source, o.source_url)),
        ("commit", commit.to_string()),
        ("path", o.path.clone()),
        ("platform", o.platform.clone().unwrap_or_else(|| "any".into())),
        ("install", o.install_command.clone()),
    ];
    for (key, value) in fields {
        out.push_str(&format!("{key:>9}: {value}\n"));
    }
    out.push_str(&format!("\nFiles ({})\n", o.files.len()));
    let rows: Vec<Vec<String>> = o
        .files
        .iter()
        .map(|f| vec![f.path.clone(), f.size.to_string(), short_id(&f.blake3).to_string()])
        .collect();
    for line in table(&["PATH", "SIZE", "BLAKE3"], &rows).lines() {
        out.push_str(&format!("  {line}\n"));
    }
    if !o.warnings.is_empty() {
        out.push_str("\nWarnings\n");
        for w in &o.warnings {
            out.push_str(&format!("  - {w}\n"));
        }
    }
    if !o.findings.is_empty() {
        let c = &o.finding_counts;
        out.push_str(&format!(
            "\nAudit findings ({} high, {} warn, {} info; `aam audit {}` lists all)\n",
            c.high, c.warn, c.info, o.qualified_name
        ));
        for f in &o.findings {
            let place = f.line.map_or(f.path.clone(), |l| format!("{}:{l}", f.path));
            out.push_str(&format!(
                "  {:<4}  {}  {place}  {}\n",
                f.severity.as_str(),
                f.rule,
                f.excerpt
            ));
        }
    }
    out.push_str("\nPreview\n");
    for line in o.preview.lines() {
        out.push_str(&format!("  {line}\n"));
    }
    if o.preview_truncated {
        out.push_str("  …\n");
    }
    out
}

/// `aam info PKG`.
fn package(o: &PackageInfoOutput) -> String {
    let mut out = format!("{}\n", o.name);
    if let Some(d) = &o.description {
        out.push_str(&format!("{d}\n"));
    }
    let installed = o.installed_version.clone().map_or("no".to_string(), |v| {
        format!("{v} ({})", o.source.clone().unwrap_or_default())
    });
    out.push_str(&format!("\n installed: {installed}\n"));
    if !o.platforms.is_empty() {
        out.push_str(&format!(" platforms: {}\n", platform_list(&o.platforms)));
    }
    if let Some(r) = &o.registry {
        out.push_str(&format!("  registry: {r}\n  versions: {}\n", o.versions.join(", ")));
        for (tag, v) in &o.dist_tags {
            out.push_str(&format!("{tag:>10}: {v}\n"));
        }
    }
    if !o.artifacts.is_empty() {
        out.push_str(&format!(" artifacts: {}\n", o.artifacts.join(", ")));
    }
    for (dep, c) in &o.dependencies {
        out.push_str(&format!("  requires: {dep} {c}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_names_an_artifact_unless_a_package_has_the_name() {
        let dir = tempfile::tempdir().unwrap();
        let home = crate::config::AamHome::at(dir.path().join("home"));
        let ctx = Context::new(home, dir.path().to_path_buf());
        for name in ["team/pdf-tools", "pdf-tools", "@team/tools"] {
            let args = InfoArgs {
                name: name.to_string(),
                full: false,
            };
            assert!(package_named(&ctx, &args).unwrap().is_none(), "{name}");
        }
    }
}
