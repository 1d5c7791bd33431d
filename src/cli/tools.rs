//! `aam tools manifest|skill-doc|adapters` (exports of the tool registry) and
//! `aam tool call` (any registered tool, without MCP).

use std::path::{Path, PathBuf};

use clap::Subcommand;
use serde_json::Value;

use super::{report_error, write_stdout};
use crate::config::AamHome;
use crate::error::{Error, Result};
use crate::manifest::adapters::{Format, adapters};
use crate::manifest::skill_doc::{skill_doc, skill_package};
use crate::manifest::{manifest, to_text};
use crate::tools::{Context, find, next_request_id, read_only_mode, registry};

#[derive(Debug, Subcommand)]
pub(super) enum ToolsCommand {
    /// Print the tool manifest: every tool with schemas, risk, errors, constraints and examples.
    Manifest {
        /// Write it to this file instead of stdout.
        #[arg(long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Print a SKILL.md that teaches an agent to use aam.
    SkillDoc {
        /// Write `SKILL.md` into this folder instead of stdout.
        #[arg(long, value_name = "DIR", conflicts_with = "package")]
        output: Option<PathBuf>,
        /// Write a package folder holding the skill, for `aam install DIR`.
        #[arg(long, value_name = "DIR")]
        package: Option<PathBuf>,
    },
    /// Print the tools as another vendor's function-calling definitions.
    Adapters {
        /// The vendor format.
        #[arg(long, value_enum)]
        format: Format,
        /// Write them to this file instead of stdout.
        #[arg(long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
pub(super) enum ToolCommand {
    /// Call a tool by name with JSON input and print its JSON output (exit 1 on a tool error).
    Call {
        /// Tool name (`aam tools manifest` lists them).
        name: String,
        /// Input JSON (default `{}`).
        #[arg(value_name = "JSON", conflicts_with = "input")]
        arguments: Option<String>,
        /// Read the input JSON from this file (`-` for stdin).
        #[arg(long, value_name = "FILE")]
        input: Option<PathBuf>,
    },
}

pub(super) fn run_tools(command: ToolsCommand) -> Result<i32> {
    let (text, output) = match command {
        ToolsCommand::Manifest { output } => (to_text(&manifest()), output),
        ToolsCommand::SkillDoc { package: Some(dir), .. } => {
            for (rel, text) in skill_package(&manifest()) {
                write_reported(&dir.join(rel), &text)?;
            }
            eprintln!("install it with `aam install {}`", dir.display());
            return Ok(0);
        }
        ToolsCommand::SkillDoc { output, .. } => (skill_doc(&manifest()), output.map(|dir| dir.join("SKILL.md"))),
        ToolsCommand::Adapters { format, output } => (to_text(&adapters(&manifest(), format)), output),
    };
    match output {
        Some(path) => write_reported(&path, &text)?,
        None => write_stdout(&text)?,
    }
    Ok(0)
}

fn write_reported(path: &Path, text: &str) -> Result<()> {
    crate::atomic::write_file(path, text.as_bytes())?;
    eprintln!("wrote {}", path.display());
    Ok(())
}

/// Runs a tool as the MCP server would: same validation, read-only rule, path
/// confinement (the current folder and AAM_HOME) and logs. Output and errors are
/// always JSON.
pub(super) fn run_tool(command: ToolCommand) -> Result<i32> {
    match call_tool(command) {
        Ok(output) => {
            write_stdout(&to_text(&output))?;
            Ok(0)
        }
        Err(error) => Ok(report_error(&error, true)),
    }
}

fn call_tool(command: ToolCommand) -> Result<Value> {
    let ToolCommand::Call { name, arguments, input } = command;
    let text = match (arguments, input) {
        (Some(text), _) => text,
        (None, Some(path)) => read_input(&path)?,
        (None, None) => "{}".to_string(),
    };
    let value: Value = serde_json::from_str(&text).map_err(|e| {
        Error::invalid_argument(format!("the input is not JSON: {e}"))
            .with_hint("pass an object such as '{\"query\": \"pdf\"}'")
    })?;
    let Some(spec) = find(&name) else {
        let names: Vec<&str> = registry().iter().map(|t| t.name).collect();
        let close = names
            .iter()
            .filter(|n| strsim::levenshtein(n, &name) <= 3)
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>();
        let hint = if close.is_empty() {
            "list the tools with `aam tools manifest`".to_string()
        } else {
            format!("did you mean {}?", close.join(" or "))
        };
        return Err(Error::invalid_argument(format!("no tool named `{name}`")).with_hint(hint));
    };
    let cwd = std::env::current_dir().map_err(|e| Error::io("read", Path::new("."), e))?;
    let ctx = Context::new(AamHome::from_env()?, cwd.clone())
        .starting_watchers()
        .sandboxed(&cwd)?;
    crate::tools::call(&ctx, &spec, value, read_only_mode(), &next_request_id())
}

fn read_input(path: &Path) -> Result<String> {
    if path == Path::new("-") {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
            .map_err(|e| Error::io("read", Path::new("<stdin>"), e))?;
        return Ok(text);
    }
    std::fs::read_to_string(path).map_err(|e| Error::io("read", path, e))
}
