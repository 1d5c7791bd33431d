//! `aam init`, `aam doctor` and `aam agents`: setting a project up and checking
//! it. Each command's arguments, the tool input they become, and how its output
//! reads for people.

use super::render::{health_report, table};
use super::{Output, interactive, platform_arg, prompts};
use crate::error::Result;
use crate::scan::Platform;
use crate::tools::agents::{Agents, AgentsInput};
use crate::tools::config::{Init, InitInput, InitOutput};
use crate::tools::doctor::{Doctor, DoctorInput};
use crate::tools::{Context, invoke};

/// `aam init`.
#[derive(Debug, clap::Args)]
pub(super) struct InitArgs {
    /// Platform to install into by default (repeatable; default: the ones the project uses).
    #[arg(long = "platform", value_name = "PLATFORM", value_parser = platform_arg, value_delimiter = ',')]
    platforms: Vec<Platform>,
    /// Accept the detected platforms and register the default sources without asking.
    #[arg(long, short)]
    yes: bool,
}

impl From<InitArgs> for InitInput {
    fn from(a: InitArgs) -> Self {
        Self {
            platforms: a.platforms,
            add_default_sources: a.yes,
        }
    }
}

/// Sets the project up, asking on a terminal unless `--yes`.
pub(super) fn init(ctx: &Context, out: &Output, args: InitArgs) -> Result<i32> {
    let ask = !args.yes && interactive(out);
    let mut input = InitInput::from(args);
    if ask {
        prompts::setup(ctx, &mut input)?;
    }
    let adding = input.add_default_sources;
    let output = invoke::<Init>(ctx, input)?;
    if !adding && !out.json {
        eprintln!("hint: register the default sources later with `aam source enable-defaults`");
    }
    out.emit(&output, initialized)
}

/// `aam doctor`.
#[derive(Debug, clap::Args)]
pub(super) struct DoctorArgs {
    /// Run the complete checks (seconds on a large catalog): SQLite's integrity check, which also compares every index with its table, instead of the quick check, and the passes over every row (foreign keys, artifact rows).
    #[arg(long)]
    full: bool,
}

impl From<DoctorArgs> for DoctorInput {
    fn from(a: DoctorArgs) -> Self {
        Self { full: a.full }
    }
}

/// Checks everything and exits 1 on a failure.
pub(super) fn doctor(ctx: &Context, out: &Output, args: DoctorArgs) -> Result<i32> {
    let output = invoke::<Doctor>(ctx, args.into())?;
    out.emit(&output, health_report)?;
    Ok(if output.healthy { 0 } else { 1 })
}

/// `aam agents`.
#[derive(Debug, clap::Args)]
pub(super) struct AgentsArgs {
    /// Only agents found in the project or installed on this machine.
    #[arg(long)]
    detected: bool,
}

impl From<AgentsArgs> for AgentsInput {
    fn from(a: AgentsArgs) -> Self {
        Self { detected: a.detected }
    }
}

/// Lists the agents aam deploys to.
pub(super) fn agents(ctx: &Context, out: &Output, args: AgentsArgs) -> Result<i32> {
    out.emit(&invoke::<Agents>(ctx, args.into())?, agents_table)
}

/// `aam init`.
fn initialized(o: &InitOutput) -> String {
    let mut out = String::new();
    if o.detected.is_empty() {
        out.push_str(&format!("No platform folders found in {}\n", o.project_root));
    } else {
        let found: Vec<String> = o
            .detected
            .iter()
            .map(|d| format!("{} ({})", d.platform.as_str(), d.marker))
            .collect();
        out.push_str(&format!("Found in {}: {}\n", o.project_root, found.join(", ")));
    }
    if o.default_platforms.is_empty() {
        out.push_str("default_platforms: none (each install detects them, or pass `--platform`)\n");
    } else {
        out.push_str(&format!("default_platforms: {}\n", o.default_platforms.join(",")));
    }
    out.push_str(&format!(
        "Project settings: {}\nCatalog: {}\n",
        o.settings_path, o.catalog_path
    ));
    if !o.default_sources_added.is_empty() {
        out.push_str(&format!(
            "Registered default sources: {} (fetch them with `aam source update --all`)\n",
            o.default_sources_added.join(", ")
        ));
    }
    out
}

/// `aam agents`.
fn agents_table(o: &crate::tools::agents::AgentsOutput) -> String {
    let kinds = |kinds: &[crate::scan::ArtifactKind]| {
        if kinds.is_empty() {
            "-".to_string()
        } else {
            kinds.iter().map(|k| k.as_str()).collect::<Vec<_>>().join(",")
        }
    };
    let rows: Vec<Vec<String>> = o
        .agents
        .iter()
        .map(|a| {
            let skills = a
                .places
                .iter()
                .find(|p| p.kind == crate::scan::ArtifactKind::Skill)
                .and_then(|p| p.project.clone())
                .unwrap_or_else(|| "-".to_string());
            let here = match (&a.detected, &a.installed) {
                (Some(marker), _) => format!("project ({marker})"),
                (None, Some(marker)) => format!("machine ({marker})"),
                (None, None) => String::new(),
            };
            vec![
                a.names.join(", "),
                a.name.clone(),
                kinds(&a.takes),
                kinds(&a.takes_global),
                skills,
                here,
            ]
        })
        .collect();
    let mut out = table(&["ID", "AGENT", "TAKES", "TAKES (-g)", "SKILLS", "DETECTED"], &rows);
    out.push_str(&format!(
        "\n{} agents; `aam agents --json` shows every folder and format, `--platform ID` installs for one\n",
        o.agents.len()
    ));
    out
}
