//! `aam mcp serve` and `aam mcp config`: arguments in, the `mcp` module does the rest.

use std::path::PathBuf;

use clap::Subcommand;

use super::{Output, render};
use crate::config::AamHome;
use crate::error::{Error, Result};
use crate::mcp::clients::{self, Client, Reach};
use crate::mcp::http::HttpOptions;
use crate::mcp::{LogOptions, Transport};
use crate::tools::Context;

#[derive(Debug, Subcommand)]
pub(super) enum McpCommand {
    /// Serve aam's tools, resources and prompts to MCP clients (read-only unless `--allow-write`).
    Serve {
        /// `stdio` (the client starts aam) or `http` (Streamable HTTP with a bearer token).
        #[arg(long, value_enum, default_value_t = TransportArg::Stdio)]
        transport: TransportArg,
        /// Offer the tools that change state (add sources, install, publish...).
        #[arg(long)]
        allow_write: bool,
        /// Serve only the catalog's skills (Skills over MCP: `skills/list`, `skills/get`, `skill://`
        /// files): no tools, prompts or other resources.
        #[arg(long, conflicts_with = "allow_write")]
        skills_only: bool,
        /// Project folder tools work in; paths outside it and AAM_HOME are refused.
        #[arg(long, value_name = "DIR")]
        root: Option<PathBuf>,
        /// Address to listen on (http).
        #[arg(long, default_value = "127.0.0.1")]
        host: String,
        /// Port to listen on (http; 0 picks a free one).
        #[arg(long, default_value_t = 8765)]
        port: u16,
        /// Allow listening on a non-loopback address (http).
        #[arg(long)]
        allow_remote: bool,
        /// Also accept requests whose `Host` is NAME (http; repeatable), e.g. the machine's DNS name.
        #[arg(long, value_name = "NAME")]
        allow_host: Vec<String>,
        /// Append logs to this file instead of stderr.
        #[arg(long, value_name = "PATH")]
        log_file: Option<PathBuf>,
        /// Log level: error, warn, info, debug, trace.
        #[arg(long, default_value = "info")]
        log_level: String,
        /// Log format.
        #[arg(long, value_enum, default_value_t = LogFormat::Text)]
        log_format: LogFormat,
    },
    /// Print the configuration an MCP client needs to use aam.
    Config {
        /// The client to configure.
        #[arg(long, value_enum)]
        client: Client,
        /// How the client reaches aam.
        #[arg(long, value_enum, default_value_t = TransportArg::Stdio)]
        transport: TransportArg,
        /// Let the client use write tools (stdio).
        #[arg(long)]
        allow_write: bool,
        /// Host of the HTTP server.
        #[arg(long, default_value = "127.0.0.1")]
        host: String,
        /// Port of the HTTP server.
        #[arg(long, default_value_t = 8765)]
        port: u16,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum TransportArg {
    Stdio,
    Http,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum LogFormat {
    Text,
    Json,
}

/// Whether a command sets up its own logging (the server logs its own way).
pub(super) fn logs_itself(command: &McpCommand) -> bool {
    matches!(command, McpCommand::Serve { .. })
}

pub(super) fn run(out: &Output, command: McpCommand) -> Result<i32> {
    match command {
        McpCommand::Serve {
            transport,
            allow_write,
            skills_only,
            root,
            host,
            port,
            allow_remote,
            allow_host,
            log_file,
            log_level,
            log_format,
        } => {
            let cwd = std::env::current_dir().map_err(|e| Error::io("read", std::path::Path::new("."), e))?;
            let root = match root {
                Some(dir) => std::path::absolute(cwd.join(dir)).unwrap_or(cwd),
                None => cwd,
            };
            if !root.is_dir() {
                return Err(Error::invalid_argument(format!("`{}` is not a folder", root.display()))
                    .with_hint("pass the project folder the server should work in with `--root`"));
            }
            let ctx = Context::new(AamHome::from_env()?, root.clone()).sandboxed(&root)?;
            super::recover_pending(&ctx);
            let transport = match transport {
                TransportArg::Stdio => Transport::Stdio,
                TransportArg::Http => Transport::Http(HttpOptions {
                    host,
                    port,
                    allow_remote,
                    allowed_hosts: allow_host,
                }),
            };
            let log = LogOptions {
                file: log_file,
                level: log_level,
                json: log_format == LogFormat::Json,
            };
            let surface = if skills_only {
                crate::mcp::Surface::SkillsOnly
            } else {
                crate::mcp::Surface::Full
            };
            crate::mcp::serve(ctx, allow_write, surface, transport, &log)?;
            Ok(0)
        }
        McpCommand::Config {
            client,
            transport,
            allow_write,
            host,
            port,
        } => {
            let reach = match transport {
                TransportArg::Stdio => {
                    let binary = std::env::current_exe()
                        .and_then(|p| p.canonicalize())
                        .map_err(|e| Error::io("resolve", std::path::Path::new("aam"), e))?;
                    Reach::Stdio {
                        binary: binary.display().to_string(),
                        allow_write,
                        home: non_default_home()?,
                    }
                }
                TransportArg::Http => Reach::Http {
                    url: format!("http://{host}:{port}/mcp"),
                },
            };
            let config = clients::config(client, &reach);
            if !out.json {
                eprintln!("Add this to {}:", config.file);
                if !config.note.is_empty() {
                    eprintln!("({})", config.note);
                }
            }
            out.emit(&config, render::client_config)
        }
    }
}

/// `AAM_HOME` when it names another folder than the default `~/.aam`.
fn non_default_home() -> Result<Option<String>> {
    let home = AamHome::from_env()?;
    let default = std::env::home_dir().map(|h| AamHome::at(h.join(".aam")));
    Ok((default.as_ref().map(AamHome::root) != Some(home.root())).then(|| home.root().display().to_string()))
}
