//! `aam pkg ...`: the arguments of each package-authoring command, the tool input
//! each becomes, and how its output reads for people.
//!
//! Each command's `Args` struct converts into its tool input in one place (`From`,
//! or a small function when the conversion can fail); the match in [`run`] only
//! picks the tool and the renderer. Questions asked on a terminal fill the input
//! before the one tool call.

use super::render::{indented_table, plural};
use super::{Output, interactive, parse_kind, platform_arg, prompts};
use crate::error::Result;
use crate::scan::Platform;
use crate::sources::short_id;
use crate::tools::packages::{
    PkgCreate, PkgCreateInput, PkgCreateOutput, PkgInit, PkgInitInput, PkgInitOutput, PkgPack, PkgPackInput,
    PkgPackOutput, PkgPublish, PkgPublishInput, PkgPublishOutput, PkgValidate, PkgValidateInput, PkgValidateOutput,
};
use crate::tools::registries::type_list;
use crate::tools::{Context, invoke};

/// The `aam pkg` subcommands.
#[derive(Debug, clap::Subcommand)]
pub(super) enum PkgCommand {
    /// Scaffold a new package with one example skill (prompts on a terminal unless `--yes`).
    Init(PkgInitArgs),
    /// Create a package from this project's artifacts, or from a source's.
    Create(PkgCreateArgs),
    /// Check a package folder, its aam.yaml or a .aam archive; exit 1 when invalid.
    Validate(PkgValidateArgs),
    /// Pack a package folder into a reproducible .aam archive.
    Pack(PkgPackArgs),
    /// Publish a package archive (or folder) to a registry.
    Publish(PkgPublishArgs),
}

/// Runs one `aam pkg` command and returns its exit code.
pub(super) fn run(ctx: &Context, out: &Output, command: PkgCommand) -> Result<i32> {
    match command {
        PkgCommand::Init(args) => init(ctx, out, args),
        PkgCommand::Create(args) => create(ctx, out, args),
        PkgCommand::Validate(args) => validate(ctx, out, args),
        PkgCommand::Pack(args) => out.emit(&invoke::<PkgPack>(ctx, args.into())?, packed),
        PkgCommand::Publish(args) => out.emit(&invoke::<PkgPublish>(ctx, args.into())?, published),
    }
}

/// `aam pkg init`.
#[derive(Debug, clap::Args)]
pub(super) struct PkgInitArgs {
    /// Package name (`name` or `@scope/name`); also the new folder's name.
    name: Option<String>,
    /// Accept defaults without asking.
    #[arg(long, short)]
    yes: bool,
    /// Version.
    #[arg(long)]
    version: Option<String>,
    /// Description.
    #[arg(long)]
    description: Option<String>,
    /// Author.
    #[arg(long)]
    author: Option<String>,
    /// License (SPDX).
    #[arg(long)]
    license: Option<String>,
    /// Folder to create the package in.
    #[arg(long)]
    dir: Option<String>,
}

impl From<PkgInitArgs> for PkgInitInput {
    fn from(a: PkgInitArgs) -> Self {
        Self {
            name: a.name,
            dir: a.dir,
            version: a.version,
            description: a.description,
            author: a.author,
            license: a.license,
        }
    }
}

/// Scaffolds a package, asking for what the flags left open on a terminal unless `--yes`.
fn init(ctx: &Context, out: &Output, args: PkgInitArgs) -> Result<i32> {
    let ask = !args.yes && interactive(out);
    let mut input = PkgInitInput::from(args);
    if ask {
        prompts::init(&mut input)?;
    }
    out.emit(&invoke::<PkgInit>(ctx, input)?, initialized)
}

/// `aam pkg create`.
#[derive(Debug, clap::Args)]
pub(super) struct PkgCreateArgs {
    /// Project folder (default: the current project).
    path: Option<String>,
    /// Take artifacts from this registered source.
    #[arg(long, value_name = "SOURCE")]
    from_source: Option<String>,
    /// Artifact names or paths to include (comma-separated or repeated).
    #[arg(long, value_delimiter = ',')]
    artifacts: Vec<String>,
    /// Include every artifact found.
    #[arg(long)]
    all: bool,
    /// Include every artifact of this type (repeatable, or a comma list).
    #[arg(long = "type", value_name = "TYPE", value_delimiter = ',')]
    types: Vec<String>,
    /// Platform the package targets (repeatable): an agent id (`aam agents` lists them).
    #[arg(long = "platform", value_name = "PLATFORM", value_parser = platform_arg, value_delimiter = ',')]
    platforms: Vec<Platform>,
    /// Package name.
    #[arg(long)]
    name: Option<String>,
    /// Version (default 0.1.0).
    #[arg(long)]
    version: Option<String>,
    /// Description.
    #[arg(long)]
    description: Option<String>,
    /// Package the project's files even when its last commit does not hold them as
    /// they are (the provenance then names no commit).
    #[arg(long)]
    allow_dirty: bool,
    /// Show what would be created, write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Folder to write the package to (default: ./<name>).
    #[arg(long)]
    output_dir: Option<String>,
}

impl PkgCreateArgs {
    /// The tool input; fails on an unknown `--type`.
    fn input(self) -> Result<PkgCreateInput> {
        let types = self.types.iter().map(|t| parse_kind(t)).collect::<Result<Vec<_>>>()?;
        Ok(PkgCreateInput {
            path: self.path,
            from_source: self.from_source,
            artifacts: self.artifacts,
            all: self.all,
            types,
            platforms: self.platforms,
            name: self.name,
            version: self.version,
            description: self.description,
            output_dir: self.output_dir,
            allow_dirty: self.allow_dirty,
            dry_run: self.dry_run,
        })
    }
}

/// Creates a package; on a terminal, asks which artifacts when no flag chose any.
fn create(ctx: &Context, out: &Output, args: PkgCreateArgs) -> Result<i32> {
    let mut input = args.input()?;
    if !input.all && input.artifacts.is_empty() && input.types.is_empty() && interactive(out) {
        input.artifacts = prompts::choose_artifacts(ctx, &input)?;
    }
    out.emit(&invoke::<PkgCreate>(ctx, input)?, created)
}

/// `aam pkg validate`.
#[derive(Debug, clap::Args)]
pub(super) struct PkgValidateArgs {
    /// Package folder, aam.yaml or .aam archive (default: here).
    path: Option<String>,
}

impl From<PkgValidateArgs> for PkgValidateInput {
    fn from(a: PkgValidateArgs) -> Self {
        Self { path: a.path }
    }
}

/// Validates and exits 1 when the package is invalid.
fn validate(ctx: &Context, out: &Output, args: PkgValidateArgs) -> Result<i32> {
    let output = invoke::<PkgValidate>(ctx, args.into())?;
    out.emit(&output, validated)?;
    Ok(if output.valid { 0 } else { 1 })
}

/// `aam pkg pack`.
#[derive(Debug, clap::Args)]
pub(super) struct PkgPackArgs {
    /// Package folder (default: here).
    path: Option<String>,
    /// Archive to write (default: dist/<name>-<version>.aam).
    #[arg(long)]
    output: Option<String>,
}

impl From<PkgPackArgs> for PkgPackInput {
    fn from(a: PkgPackArgs) -> Self {
        Self {
            path: a.path,
            output: a.output,
        }
    }
}

/// `aam pkg publish`.
#[derive(Debug, clap::Args)]
pub(super) struct PkgPublishArgs {
    /// .aam archive or package folder (default: here).
    archive: Option<String>,
    /// Registry name (default: the default registry).
    #[arg(long)]
    registry: Option<String>,
    /// Dist-tag to point at this version (default: latest).
    #[arg(long)]
    tag: Option<String>,
    /// Check everything, publish nothing.
    #[arg(long)]
    dry_run: bool,
}

impl From<PkgPublishArgs> for PkgPublishInput {
    fn from(a: PkgPublishArgs) -> Self {
        Self {
            archive: a.archive,
            registry: a.registry,
            tag: a.tag,
            dry_run: a.dry_run,
        }
    }
}

/// `aam pkg init`.
fn initialized(o: &PkgInitOutput) -> String {
    let mut out = format!(
        "Created package `{}` {} at {}\n",
        o.package_name, o.version, o.manifest_path
    );
    for file in &o.files {
        out.push_str(&format!("  {file}\n"));
    }
    out.push_str("Edit the example skill, then run `aam pkg validate` and `aam pkg pack`.\n");
    out
}

/// `aam pkg create`.
fn created(o: &PkgCreateOutput) -> String {
    let verb = if o.dry_run { "Would create" } else { "Created" };
    let mut out = format!(
        "{verb} package `{}` {} with {} at {}\n",
        o.package_name,
        o.version,
        plural(o.artifacts_included.len(), "artifact"),
        o.manifest_path
    );
    let rows: Vec<Vec<String>> = o
        .artifacts_included
        .iter()
        .map(|a| {
            vec![
                a.kind.as_str().to_string(),
                a.name.clone(),
                a.path.clone(),
                a.source_path.clone(),
            ]
        })
        .collect();
    out.push_str(&indented_table(&["TYPE", "NAME", "PATH", "FROM"], &rows));
    if let Some(commit) = &o.provenance.source_commit {
        let url = o.provenance.source_url.as_deref().unwrap_or("");
        out.push_str(&format!("Provenance: {url} at {}\n", short_id(commit)));
    }
    out
}

/// `aam pkg validate`.
fn validated(o: &PkgValidateOutput) -> String {
    let name = match (&o.package_name, &o.package_version) {
        (Some(n), Some(v)) => format!("`{n}` {v}"),
        (Some(n), None) => format!("`{n}`"),
        _ => "the package".to_string(),
    };
    let mut out = if o.valid {
        format!("{name} is valid ({})\n", plural(o.artifact_count, "artifact"))
    } else {
        format!("{name} is invalid: {}\n", plural(o.errors.len(), "error"))
    };
    for (label, list) in [("error", &o.errors), ("warning", &o.warnings)] {
        for issue in list.iter() {
            let field = if issue.field.is_empty() {
                String::new()
            } else {
                format!("{}: ", issue.field)
            };
            out.push_str(&format!("  {label}: {field}{}\n", issue.message));
        }
    }
    out
}

/// `aam pkg pack`.
fn packed(o: &PkgPackOutput) -> String {
    format!(
        "Packed `{}` {} into {}\n  {}, {} bytes, blake3 {}\n",
        o.package_name,
        o.version,
        o.archive,
        plural(o.file_count, "file"),
        o.size,
        o.blake3
    )
}

/// `aam pkg publish`.
fn published(o: &PkgPublishOutput) -> String {
    let verb = if o.dry_run { "Would publish" } else { "Published" };
    format!(
        "{verb} `{}` {} to registry `{}` (tag `{}`): {}, {} bytes, blake3 {}\n",
        o.package_name,
        o.version,
        o.registry,
        o.tag,
        type_list(&o.artifact_types),
        o.size,
        short_id(&o.checksum)
    )
}
