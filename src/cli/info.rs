//! `aam info`: its arguments, the tool input they become, and how an artifact or
//! a package reads for people. Which one a name means is `aam_info`'s choice.

use super::Output;
use super::render::{indented_table, platform_list};
use crate::error::Result;
use crate::sources::short_id;
use crate::tools::artifacts::{ArtifactInfo, Info, InfoInput, InfoOutput, InstallScope};
use crate::tools::install::PackageInfoOutput;
use crate::tools::{Context, invoke};

/// `aam info`.
#[derive(Debug, clap::Args)]
pub(super) struct InfoArgs {
    /// `source/name`, `source/path`, a name that only one source has, or a package name (installed here or published; it wins over an artifact of that name), optionally `name@version` (or a constraint or dist-tag) to show that version.
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

/// Shows the artifact or the package the name means (the tool decides).
pub(super) fn run(ctx: &Context, out: &Output, args: InfoArgs) -> Result<i32> {
    out.emit(&invoke::<Info>(ctx, args.into())?, render)
}

/// `aam info`.
fn render(o: &InfoOutput) -> String {
    match o {
        InfoOutput::Artifact(a) => artifact(a),
        InfoOutput::Package(p) => package(p),
    }
}

/// `aam info SOURCE/ARTIFACT`.
fn artifact(o: &ArtifactInfo) -> String {
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
        (
            "platform",
            o.platform.map_or_else(|| "any".into(), |p| p.as_str().to_string()),
        ),
        ("install", o.install_command.clone()),
    ];
    for (key, value) in fields {
        out.push_str(&format!("{key:>9}: {value}\n"));
    }
    for installed in &o.installed_here {
        let scope = match installed.scope {
            InstallScope::Project => "",
            InstallScope::Global => ", globally",
        };
        out.push_str(&format!(
            "{:>9}: as `{}` {} ({}{scope})\n",
            "installed",
            installed.package,
            installed.version,
            platform_list(&installed.platforms)
        ));
    }
    out.push_str(&format!("\nFiles ({})\n", o.files.len()));
    let rows: Vec<Vec<String>> = o
        .files
        .iter()
        .map(|f| vec![f.path.clone(), f.size.to_string(), short_id(&f.blake3).to_string()])
        .collect();
    out.push_str(&indented_table(&["PATH", "SIZE", "BLAKE3"], &rows));
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
        if !o.also_in.is_empty() {
            out.push_str(&format!("   also in: {}\n", o.also_in.join(", ")));
        }
        for (tag, v) in &o.dist_tags {
            out.push_str(&format!("{tag:>10}: {v}\n"));
        }
    }
    if let Some(v) = &o.shown_version {
        out.push_str(&format!("   showing: {v}\n"));
    }
    if !o.artifacts.is_empty() {
        out.push_str(&format!(" artifacts: {}\n", o.artifacts.join(", ")));
    }
    for (dep, c) in &o.dependencies {
        out.push_str(&format!("  requires: {dep} {c}\n"));
    }
    // A published package not installed here says how to install it, as an artifact's card does.
    if o.installed_version.is_none() && o.registry.is_some() {
        let version = o.shown_version.as_deref().map(|v| format!("@{v}")).unwrap_or_default();
        out.push_str(&format!(
            "   install: aam install {}\n",
            crate::paths::shell_word(&format!("{}{version}", o.name))
        ));
    }
    if let Some(artifact) = &o.from_artifact {
        out.push_str(&format!("\nFiles, preview and audit: `aam info {artifact}`\n"));
    }
    out
}
