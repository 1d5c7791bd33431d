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
/// always JSON. `cancel` is raised by Ctrl-C or `SIGTERM`.
pub(super) fn run_tool(command: ToolCommand, cancel: crate::cancel::Cancel) -> Result<i32> {
    match call_tool(command, cancel) {
        Ok(output) => {
            write_stdout(&to_text(&output))?;
            Ok(0)
        }
        Err(error) => Ok(report_error(&error, true)),
    }
}

fn call_tool(command: ToolCommand, cancel: crate::cancel::Cancel) -> Result<Value> {
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
    // As MCP's `arguments`: named fields, never a list read in field order.
    if !value.is_object() {
        return Err(Error::invalid_argument("the input is not a JSON object")
            .with_hint("pass an object such as '{\"query\": \"pdf\"}'"));
    }
    let Some(spec) = find(&name) else {
        let names: Vec<&str> = registry().iter().map(|t| t.name).collect();
        // A few typos for the part after `aam_`, fewer in a short one
        // (`aam_nope` is not `aam_adopt`).
        let bare = |n: &str| n.strip_prefix("aam_").unwrap_or(n).to_string();
        let wanted = bare(&name);
        let allowed = (wanted.chars().count() / 3).max(1);
        let close = names
            .iter()
            .filter(|n| strsim::levenshtein(&bare(n), &wanted) <= allowed)
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
    let mut ctx = Context::new(AamHome::from_env()?, cwd.clone())
        .starting_watchers()
        .sandboxed(&cwd)?;
    ctx.cancel = cancel;
    crate::tools::call(&ctx, &spec, value, read_only_mode(), &next_request_id())
}

/// Largest `--input`, in bytes: what an MCP message may carry.
const MAX_INPUT: u64 = 16 * 1024 * 1024;

/// The text of `--input` (`-`: standard input), at most [`MAX_INPUT`] bytes.
fn read_input(path: &Path) -> Result<String> {
    use std::io::Read;
    let shown = if path == Path::new("-") {
        Path::new("<stdin>")
    } else {
        path
    };
    let source: Box<dyn Read> = if path == Path::new("-") {
        Box::new(std::io::stdin())
    } else {
        Box::new(std::fs::File::open(path).map_err(|e| Error::io("read", path, e))?)
    };
    let mut bytes = Vec::new();
    source
        .take(MAX_INPUT + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io("read", shown, e))?;
    if bytes.len() as u64 > MAX_INPUT {
        return Err(
            Error::invalid_argument(format!("`{}` is larger than {MAX_INPUT} bytes", shown.display()))
                .with_hint("a tool's input is a small JSON object; pass its fields, not data"),
        );
    }
    String::from_utf8(bytes).map_err(|_| Error::invalid_argument(format!("`{}` is not UTF-8 text", shown.display())))
}
