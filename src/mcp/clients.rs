//! `aam mcp config`: the configuration snippet each MCP client expects.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::json;

/// MCP clients aam knows how to configure. Each also goes by the id `aam
/// agents` gives the agent (`claude-code`, `github-copilot`, `gemini-cli`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Client {
    /// Claude Code and Claude Desktop.
    #[value(alias = "claude-code")]
    Claude,
    /// Cursor.
    Cursor,
    /// Visual Studio Code (Copilot agent mode).
    #[value(alias = "github-copilot", alias = "copilot")]
    Vscode,
    /// OpenAI Codex CLI.
    Codex,
    /// Gemini CLI.
    #[value(alias = "gemini-cli")]
    Gemini,
}

/// How the client reaches the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reach {
    /// The client starts `aam mcp serve` itself.
    Stdio {
        /// Absolute path of the aam binary.
        binary: String,
        /// Offer write tools.
        allow_write: bool,
        /// `AAM_HOME` the server must run with, when it is not the default `~/.aam`.
        home: Option<String>,
    },
    /// The client connects to a running `aam mcp serve --transport http`.
    Http {
        /// `http://host:port/mcp`.
        url: String,
    },
}

/// A snippet and where it goes.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ClientConfig {
    /// The client.
    pub client: Client,
    /// The file the snippet belongs in.
    pub file: String,
    /// `json` or `toml`.
    pub format: String,
    /// The text to merge into that file.
    pub snippet: String,
    /// Anything else to do.
    pub note: String,
}

/// The configuration `client` needs to reach aam.
pub fn config(client: Client, reach: &Reach) -> ClientConfig {
    let token_note = "set `AAM_MCP_TOKEN` to the token (the server prints where it keeps one: `$AAM_HOME/mcp-token`) in the environment the client starts from";
    let args = |allow_write: bool| {
        let mut args = vec!["mcp", "serve"];
        if allow_write {
            args.push("--allow-write");
        }
        args
    };
    // A stdio server starts in the client's environment: a non-default home goes with it.
    let with_env = |mut server: serde_json::Value| {
        if let Reach::Stdio { home: Some(home), .. } = reach {
            server["env"] = json!({ "AAM_HOME": home });
        }
        server
    };
    // The `mcpServers` entry of a client that starts the server (Claude, Cursor, Gemini CLI).
    let started_by_client = |binary: &str, allow_write: bool| {
        pretty(&json!({ "mcpServers": { "aam": with_env(json!({ "command": binary, "args": args(allow_write) })) } }))
    };
    let (file, format, snippet, note) = match (client, reach) {
        (
            Client::Claude,
            Reach::Stdio {
                binary, allow_write, ..
            },
        ) => (
            ".mcp.json (project) or `claude mcp add-json aam '<snippet's aam entry>'`",
            "json",
            started_by_client(binary, *allow_write),
            "Claude Desktop: the same entry under `mcpServers` in claude_desktop_config.json".to_string(),
        ),
        (Client::Claude, Reach::Http { url }) => (
            ".mcp.json (project)",
            "json",
            pretty(&json!({ "mcpServers": { "aam": {
                "type": "http", "url": url, "headers": { "Authorization": "Bearer ${AAM_MCP_TOKEN}" } } } })),
            token_note.to_string(),
        ),
        (
            Client::Cursor,
            Reach::Stdio {
                binary, allow_write, ..
            },
        ) => (
            ".cursor/mcp.json (project) or ~/.cursor/mcp.json",
            "json",
            started_by_client(binary, *allow_write),
            String::new(),
        ),
        (Client::Cursor, Reach::Http { url }) => (
            ".cursor/mcp.json (project) or ~/.cursor/mcp.json",
            "json",
            pretty(&json!({ "mcpServers": { "aam": {
                "url": url, "headers": { "Authorization": "Bearer ${env:AAM_MCP_TOKEN}" } } } })),
            token_note.to_string(),
        ),
        (
            Client::Vscode,
            Reach::Stdio {
                binary, allow_write, ..
            },
        ) => (
            ".vscode/mcp.json",
            "json",
            pretty(
                &json!({ "servers": { "aam": with_env(json!({ "type": "stdio", "command": binary, "args": args(*allow_write) })) } }),
            ),
            String::new(),
        ),
        (Client::Vscode, Reach::Http { url }) => (
            ".vscode/mcp.json",
            "json",
            pretty(&json!({
                "inputs": [{ "type": "promptString", "id": "aam-token", "description": "aam MCP token ($AAM_HOME/mcp-token)", "password": true }],
                "servers": { "aam": { "type": "http", "url": url, "headers": { "Authorization": "Bearer ${input:aam-token}" } } }
            })),
            "VS Code asks for the token once and stores it securely".to_string(),
        ),
        (
            Client::Codex,
            Reach::Stdio {
                binary,
                allow_write,
                home,
            },
        ) => (
            "~/.codex/config.toml",
            "toml",
            format!(
                "[mcp_servers.aam]\ncommand = {}\nargs = [{}]\n{}",
                toml_string(binary),
                args(*allow_write)
                    .iter()
                    .map(|a| toml_string(a))
                    .collect::<Vec<_>>()
                    .join(", "),
                home.as_deref()
                    .map(|h| format!("env = {{ AAM_HOME = {} }}\n", toml_string(h)))
                    .unwrap_or_default()
            ),
            String::new(),
        ),
        (
            Client::Gemini,
            Reach::Stdio {
                binary, allow_write, ..
            },
        ) => (
            ".gemini/settings.json (project) or ~/.gemini/settings.json",
            "json",
            started_by_client(binary, *allow_write),
            String::new(),
        ),
        (Client::Gemini, Reach::Http { url }) => (
            ".gemini/settings.json (project) or ~/.gemini/settings.json",
            "json",
            pretty(&json!({ "mcpServers": { "aam": {
                "httpUrl": url, "headers": { "Authorization": "Bearer $AAM_MCP_TOKEN" } } } })),
            token_note.to_string(),
        ),
        (Client::Codex, Reach::Http { url }) => (
            "~/.codex/config.toml",
            "toml",
            format!(
                "[mcp_servers.aam]\nurl = {}\nbearer_token_env_var = \"AAM_MCP_TOKEN\"\n",
                toml_string(url)
            ),
            token_note.to_string(),
        ),
    };
    ClientConfig {
        client,
        file: file.to_string(),
        format: format.to_string(),
        snippet,
        note,
    }
}

fn pretty(value: &serde_json::Value) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    text
}

/// A TOML basic string (JSON string escapes are valid TOML).
fn toml_string(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_non_default_home_goes_into_every_stdio_snippet() {
        let reach = Reach::Stdio {
            binary: "/bin/aam".to_string(),
            allow_write: false,
            home: Some("/srv/aam home".to_string()),
        };
        for client in [Client::Claude, Client::Cursor, Client::Vscode, Client::Gemini] {
            let value: serde_json::Value = serde_json::from_str(&config(client, &reach).snippet).unwrap();
            let servers = value.get("mcpServers").or(value.get("servers")).unwrap();
            assert_eq!(servers["aam"]["env"]["AAM_HOME"], "/srv/aam home", "{client:?}");
        }
        let codex = config(Client::Codex, &reach).snippet;
        assert!(codex.contains("env = { AAM_HOME = \"/srv/aam home\" }"), "{codex}");
    }

    #[test]
    fn snippets_parse_and_point_at_the_binary() {
        let stdio = Reach::Stdio {
            binary: "/opt/my tools/aam".to_string(),
            allow_write: true,
            home: None,
        };
        let http = Reach::Http {
            url: "http://127.0.0.1:8765/mcp".to_string(),
        };
        for client in <Client as clap::ValueEnum>::value_variants().iter().copied() {
            for reach in [&stdio, &http] {
                let out = config(client, reach);
                let text = &out.snippet;
                assert!(!text.contains("Bearer ey") && !text.is_empty());
                if out.format == "json" {
                    let value: serde_json::Value = serde_json::from_str(text).unwrap();
                    let rendered = value.to_string();
                    match reach {
                        Reach::Stdio { .. } => {
                            assert!(rendered.contains("/opt/my tools/aam") && rendered.contains("--allow-write"))
                        }
                        Reach::Http { url } => assert!(rendered.contains(url.as_str())),
                    }
                } else {
                    assert!(text.starts_with("[mcp_servers.aam]\n"), "{text}");
                    assert!(
                        text.contains("\"/opt/my tools/aam\"") || text.contains("url = \"http://127.0.0.1:8765/mcp\"")
                    );
                }
            }
        }
    }
}
