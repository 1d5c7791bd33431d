//! `aam config ...`: the arguments of each settings command, the tool input each
//! becomes, and how its output reads for people.
//!
//! Each command's `Args` struct converts into its tool input with one `From`; the
//! match in [`run`] only picks the tool and the renderer. Where a value comes
//! from and a project file shadowing a change go to stderr, so stdout stays the
//! value alone.

use super::Output;
use crate::config::keys;
use crate::error::Result;
use crate::tools::config::{
    ConfigGet, ConfigGetInput, ConfigGetOutput, ConfigSet, ConfigSetInput, ConfigSetOutput, Setting,
};
use crate::tools::{Context, invoke};

/// The `aam config` subcommands.
#[derive(Debug, clap::Subcommand)]
pub(super) enum ConfigCommand {
    /// Print one setting's value.
    Get(ConfigGetArgs),
    /// Show every setting with what it does.
    List,
    /// Change a setting.
    Set(ConfigSetArgs),
}

/// Runs one `aam config` command and returns its exit code.
pub(super) fn run(ctx: &Context, out: &Output, command: ConfigCommand) -> Result<i32> {
    match command {
        ConfigCommand::Get(args) => get(ctx, out, args),
        ConfigCommand::List => out.emit(&invoke::<ConfigGet>(ctx, ConfigGetInput { key: None })?, listed),
        ConfigCommand::Set(args) => set(ctx, out, args),
    }
}

/// `aam config get`.
#[derive(Debug, clap::Args)]
pub(super) struct ConfigGetArgs {
    /// Setting to show (`aam config list` shows them all).
    key: String,
}

impl From<ConfigGetArgs> for ConfigGetInput {
    fn from(a: ConfigGetArgs) -> Self {
        Self { key: Some(a.key) }
    }
}

/// Prints the value on stdout and where it comes from on stderr.
fn get(ctx: &Context, out: &Output, args: ConfigGetArgs) -> Result<i32> {
    let output = invoke::<ConfigGet>(ctx, args.into())?;
    if !out.json {
        for setting in &output.settings {
            eprintln!("origin: {}", origin(setting));
        }
    }
    out.emit(&output, value)
}

/// `aam config set`.
#[derive(Debug, clap::Args)]
pub(super) struct ConfigSetArgs {
    /// Setting to change.
    key: String,
    /// New value (lists comma-separated; "" clears).
    value: String,
}

impl From<ConfigSetArgs> for ConfigSetInput {
    fn from(a: ConfigSetArgs) -> Self {
        Self {
            key: a.key,
            value: a.value,
        }
    }
}

/// Changes a setting, warning when a project file overrides it here.
fn set(ctx: &Context, out: &Output, args: ConfigSetArgs) -> Result<i32> {
    let output = invoke::<ConfigSet>(ctx, args.into())?;
    if let Some(project) = output.shadowed_by.as_deref().filter(|_| !out.json) {
        eprintln!(
            "warning: `{project}` sets `{}` for this project, and it wins here; change it there, or delete it from that file",
            output.key
        );
    }
    out.emit(&output, changed)
}

/// `aam config list`.
fn listed(o: &ConfigGetOutput) -> String {
    let mut out = String::new();
    for setting in &o.settings {
        out.push_str(&format!(
            "{} = {}  ({})\n",
            setting.key,
            setting_text(&setting.value),
            origin(setting)
        ));
        out.push_str(&format!("  {}\n", setting.description));
    }
    out.push_str(&format!("(home settings: {})\n", o.path));
    out
}

/// Where a setting comes from, in words: `project: /p/.aam/config.yaml`, `default`.
fn origin(setting: &Setting) -> String {
    match &setting.origin_path {
        Some(path) => format!("{}: {path}", setting.origin.as_str()),
        None => setting.origin.as_str().to_string(),
    }
}

/// `aam config get KEY`: the value alone, for scripts (the CLI says where it comes from on stderr).
fn value(o: &ConfigGetOutput) -> String {
    o.settings
        .iter()
        .map(|setting| setting_text(&setting.value) + "\n")
        .collect()
}

/// A setting's value as typed on the command line: lists comma-separated.
fn setting_text(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::Array(items) if items.iter().all(|i| i.is_string()) => {
            items.iter().filter_map(|i| i.as_str()).collect::<Vec<_>>().join(",")
        }
        serde_json::Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// `aam config set`: an unset value shown as the default it stands for.
fn changed(o: &ConfigSetOutput) -> String {
    let shown = |value: &serde_json::Value| match keys::key(&o.key) {
        Ok(key) if !keys::is_set(value) => format!("{} (default)", key.default_value()),
        _ => value.to_string(),
    };
    format!("{}: {} -> {}\n", o.key, shown(&o.previous), shown(&o.value))
}
