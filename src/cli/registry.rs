//! `aam registry ...`: the arguments of each registry command, the tool input each
//! becomes, and how its output reads for people.
//!
//! Each command's `Args` struct converts into its tool input with one `From`; the
//! match in [`run`] only picks the tool and the renderer.

use super::Output;
use super::render::{plural, table};
use crate::error::Result;
use crate::tools::registries::{
    RegistryAdd, RegistryAddInput, RegistryEntry, RegistryInit, RegistryInitInput, RegistryList, RegistryListInput,
    RegistryListOutput, RegistryRemove, RegistryRemoveInput, RegistryRemoveOutput,
};
use crate::tools::{Context, invoke};

/// The `aam registry` subcommands.
#[derive(Debug, clap::Subcommand)]
pub(super) enum RegistryCommand {
    /// Create a local registry in a folder and configure it.
    Init(RegistryInitArgs),
    /// Configure an existing local registry.
    Add(RegistryAddArgs),
    /// List configured registries.
    List,
    /// Forget a registry (its folder is left alone).
    Remove(RegistryRemoveArgs),
}

/// Runs one `aam registry` command and returns its exit code.
pub(super) fn run(ctx: &Context, out: &Output, command: RegistryCommand) -> Result<i32> {
    match command {
        RegistryCommand::Init(args) => out.emit(&invoke::<RegistryInit>(ctx, args.into())?, added),
        RegistryCommand::Add(args) => out.emit(&invoke::<RegistryAdd>(ctx, args.into())?, added),
        RegistryCommand::List => out.emit(&invoke::<RegistryList>(ctx, RegistryListInput {})?, listed),
        RegistryCommand::Remove(args) => out.emit(&invoke::<RegistryRemove>(ctx, args.into())?, removed),
    }
}

/// `aam registry init`.
#[derive(Debug, clap::Args)]
pub(super) struct RegistryInitArgs {
    /// Folder for the registry.
    path: String,
    /// Name to configure it under (default: the folder's name).
    #[arg(long)]
    name: Option<String>,
    /// Make it the default registry.
    #[arg(long)]
    default: bool,
    /// Create it even if the folder is not empty.
    #[arg(long)]
    force: bool,
}

impl From<RegistryInitArgs> for RegistryInitInput {
    fn from(a: RegistryInitArgs) -> Self {
        Self {
            path: a.path,
            name: a.name,
            default: a.default,
            force: a.force,
        }
    }
}

/// `aam registry add`.
#[derive(Debug, clap::Args)]
pub(super) struct RegistryAddArgs {
    /// Name for it.
    name: String,
    /// file:///abs/path or a path.
    url: String,
    /// Make it the default registry.
    #[arg(long)]
    default: bool,
}

impl From<RegistryAddArgs> for RegistryAddInput {
    fn from(a: RegistryAddArgs) -> Self {
        Self {
            name: a.name,
            url: a.url,
            default: a.default,
        }
    }
}

/// `aam registry remove`.
#[derive(Debug, clap::Args)]
pub(super) struct RegistryRemoveArgs {
    /// Registry name.
    name: String,
}

impl From<RegistryRemoveArgs> for RegistryRemoveInput {
    fn from(a: RegistryRemoveArgs) -> Self {
        Self { name: a.name }
    }
}

/// `aam registry init` and `aam registry add`.
fn added(o: &RegistryEntry) -> String {
    let default = if o.default { " (default)" } else { "" };
    format!(
        "Registry `{}`{default} at {}: {}\n",
        o.name,
        o.url,
        plural(o.package_count, "package")
    )
}

/// `aam registry list`.
fn listed(o: &RegistryListOutput) -> String {
    if o.registries.is_empty() {
        return "No registries. Create one with `aam registry init <path> --default`.\n".to_string();
    }
    let rows: Vec<Vec<String>> = o
        .registries
        .iter()
        .map(|r| {
            let name = if r.default {
                format!("{} (default)", r.name)
            } else {
                r.name.clone()
            };
            vec![name, r.package_count.to_string(), r.url.clone()]
        })
        .collect();
    table(&["NAME", "PACKAGES", "URL"], &rows)
}

/// `aam registry remove`.
fn removed(o: &RegistryRemoveOutput) -> String {
    format!("Removed registry `{}` (its folder was left alone)\n", o.removed)
}
