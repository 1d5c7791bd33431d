//! Deploying package artifacts where each agent reads them.
//!
//! Where each artifact type goes, per agent and for project and home-folder
//! installs, is data: the table in [`crate::agents`]. For the four agents aam
//! supported first:
//!
//! | type | cursor | copilot | claude | codex |
//! |---|---|---|---|---|
//! | skill | `.cursor/skills/<n>/` | `.github/skills/<n>/` | `.claude/skills/<n>/` | `.agents/skills/<n>/` |
//! | agent | `.cursor/agents/<n>.md` | `.github/agents/<n>.agent.md` | `.claude/agents/<n>.md` | `.codex/agents/<n>.toml` |
//! | prompt | `.cursor/commands/<n>.md` | `.github/prompts/<n>.prompt.md` | `.claude/commands/<n>.md` | `~/.codex/prompts/<n>.md` |
//! | instruction | `.cursor/rules/<n>.mdc` | `.github/instructions/<n>.instructions.md` | section in `CLAUDE.md` | section in `AGENTS.md` |
//!
//! Paths are relative to the project root, or to the home folder for global
//! installs (where `CLAUDE.md` is `~/.claude/CLAUDE.md` and `AGENTS.md` is
//! `~/.codex/AGENTS.md`). This module computes targets and file contents (with
//! the conversion the table names) and detects agents by their markers; it
//! does not write anything (see `crate::install`).

pub mod scope;
pub mod sections;

use std::path::Path;

use serde_json::{Map, Value};

use crate::agents::{Agent, Format, Place};
use crate::scan::{ArtifactKind, Platform, frontmatter};
use scope::Scope;

/// Where one artifact goes on one platform.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A folder holding the skill's files.
    Dir(Location),
    /// One file.
    File(Location),
    /// A section inside a shared file.
    Section {
        /// The shared file.
        file: Location,
        /// Section name.
        name: String,
        /// Section type.
        kind: ArtifactKind,
    },
}

/// A path relative to the project root, or to the home folder.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Location {
    /// Relative to the project root (`/`-separated).
    Project(String),
    /// Relative to the home folder (`/`-separated).
    Home(String),
}

impl Location {
    /// The key used in lock files: the project-relative path, or `~/path`.
    pub fn key(&self) -> String {
        match self {
            Location::Project(p) => p.clone(),
            Location::Home(p) => format!("~/{p}"),
        }
    }

    /// Parses a lock-file key.
    pub fn from_key(key: &str) -> Self {
        match key.strip_prefix("~/") {
            Some(rest) => Location::Home(rest.to_string()),
            None => Location::Project(key.to_string()),
        }
    }

    /// A path below this one.
    pub fn join(&self, rest: &str) -> Location {
        match self {
            Location::Project(p) => Location::Project(format!("{p}/{rest}")),
            Location::Home(p) => Location::Home(format!("{p}/{rest}")),
        }
    }

    /// The absolute path, given the two roots.
    pub fn resolve(&self, project: &std::path::Path, home: &std::path::Path) -> std::path::PathBuf {
        match self {
            Location::Project(p) => project.join(p),
            Location::Home(p) => home.join(p),
        }
    }
}

/// Where an artifact of `kind` named `name` goes on `platform`, as the agent
/// table says (`global` installs target the home folder); `None` when the
/// agent takes no artifact of that type there.
pub fn target(kind: ArtifactKind, name: &str, platform: Platform, global: bool) -> Option<Target> {
    Some(target_at(platform.agent().slot(kind)?.place(global)?, kind, name))
}

/// Where an earlier version of aam put an artifact of `kind` named `name` on
/// `platform`, when the agent table has moved it since
/// ([`crate::agents::FORMER_PLACES`]).
pub fn former_target(kind: ArtifactKind, name: &str, platform: Platform, global: bool) -> Option<Target> {
    Some(target_at(platform.former_place(kind, global)?, kind, name))
}

fn target_at(place: Place, kind: ArtifactKind, name: &str) -> Target {
    match place {
        Place::Folder(dir) => Target::Dir(Location::from_key(&format!("{dir}/{name}"))),
        Place::File { dir, prefix, suffix } => {
            Target::File(Location::from_key(&format!("{dir}/{prefix}{name}{suffix}")))
        }
        Place::Section(file) => Target::Section {
            file: Location::from_key(file),
            name: name.to_string(),
            kind,
        },
    }
}

/// The agents a project uses, each with the first marker found, in table order
/// (`.cursor`, `.claude` or `CLAUDE.md`, `.github`, `.codex` or `AGENTS.md`, ...).
pub fn detect_platforms(root: &Path) -> Vec<(Platform, &'static str)> {
    detect(root, |agent| agent.project_markers)
}

/// The agents installed on this machine (a marker in the home folder `home`),
/// each with the first marker found, in table order.
pub fn detect_installed(home: &Path) -> Vec<(Platform, &'static str)> {
    detect(home, |agent| agent.home_markers)
}

fn detect(root: &Path, markers: impl Fn(&Agent) -> &'static [&'static str]) -> Vec<(Platform, &'static str)> {
    Platform::ALL
        .iter()
        .filter_map(|&platform| {
            markers(platform.agent())
                .iter()
                .find(|marker| root.join(marker.strip_prefix("~/").unwrap_or(marker)).exists())
                .map(|marker| (platform, *marker))
        })
        .collect()
}

/// The text a section of a shared file holds for an artifact of `kind` named
/// `name` (`text` is its main file): the body, without the frontmatter, after
/// a sentence saying when a rule applies when its frontmatter limits it
/// ([`scope::sentence`]).
pub fn section_text(kind: ArtifactKind, name: &str, text: &str) -> String {
    let body = section_body(text);
    if kind != ArtifactKind::Instruction {
        return body;
    }
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let fields = frontmatter::parse(text).fields.unwrap_or_default();
    let description = fields.get("description").and_then(Value::as_str);
    match scope::sentence(&Scope::of(&fields), name, description) {
        Some(sentence) if body.is_empty() => format!("{sentence}\n"),
        Some(sentence) => format!("{sentence}\n\n{body}"),
        None => body,
    }
}

/// What a section held before aam carried a rule's scope to shared files:
/// the body alone. Only to match what older lock files record.
pub fn section_body(text: &str) -> String {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    text[frontmatter::parse(text).body_offset..]
        .trim_start_matches(['\r', '\n'])
        .to_string()
}

/// The text deployed for an artifact file (`text` is its main file) in
/// `format` (the one its agent's place takes): frontmatter adjusted to what
/// the agent reads, merged into one block (never doubled); content otherwise
/// unchanged.
pub fn render(format: Format, name: &str, text: &str) -> String {
    render_described(format, name, None, text)
}

/// [`render`], with the description a platform needs taken from `description`
/// (the manifest's) when the frontmatter has none, and from the name only when
/// neither has one. A file whose frontmatter already holds what the platform
/// reads is deployed as it is, byte for byte.
pub fn render_described(format: Format, name: &str, description: Option<&str>, text: &str) -> String {
    render_as(Rendering::KeepingText, format, name, description, text)
}

/// What aam 0.1 deployed where [`render_described`] now keeps the file as it
/// is: the frontmatter written again even when no field changed, and a byte
/// order mark dropped. Only to match what older lock files record.
pub fn render_rewritten(format: Format, name: &str, description: Option<&str>, text: &str) -> String {
    render_as(Rendering::Rewriting, format, name, description, text)
}

/// What aam deployed before it carried a rule's scope to every agent
/// ([`scope`]): a Windsurf-, Kiro- or Claude Code-scoped rule kept only the
/// keys Cursor and Copilot share. Only to match what older lock files record.
pub fn render_before_scopes(format: Format, name: &str, description: Option<&str>, text: &str) -> String {
    render_as(Rendering::BeforeScopes, format, name, description, text)
}

/// How a file is rendered: as now, or as an earlier aam did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rendering {
    /// A frontmatter that needs no change kept as written.
    KeepingText,
    /// The frontmatter written again (aam 0.1).
    Rewriting,
    /// [`Rendering::KeepingText`] without a rule's scope read from other
    /// agents' keys.
    BeforeScopes,
}

fn render_as(rendering: Rendering, format: Format, name: &str, description: Option<&str>, text: &str) -> String {
    // What a file kept as it is holds: the source's bytes, a byte order mark
    // included (aam 0.1 dropped it).
    let kept = match rendering {
        Rendering::KeepingText | Rendering::BeforeScopes => text,
        Rendering::Rewriting => text.strip_prefix('\u{feff}').unwrap_or(text),
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let front = frontmatter::parse(text);
    let body = &text[front.body_offset..];
    let mut fields: Map<String, Value> = front.fields.clone().unwrap_or_default();
    // aam 0.1 wrote no scope; the formats it did not have were copied as
    // they are (`crate::agents::FORMER_FORMATS`), so they have no 0.1 form.
    let newer_format = matches!(format, Format::WindsurfRule | Format::KiroSteering | Format::ClineRule);
    let scope = match rendering {
        Rendering::KeepingText => Some(Scope::of(&fields)),
        Rendering::Rewriting if newer_format => Some(Scope::of(&fields)),
        Rendering::Rewriting | Rendering::BeforeScopes => None,
    };
    let description = fields
        .get("description")
        .and_then(Value::as_str)
        .filter(|d| !d.trim().is_empty())
        .map(str::to_string)
        .or_else(|| description.filter(|d| !d.trim().is_empty()).map(str::to_string))
        .unwrap_or_else(|| name.to_string());
    match format {
        Format::CursorRule => match &scope {
            None => {
                if !fields.contains_key("globs")
                    && let Some(apply_to) = fields.remove("applyTo")
                {
                    fields.insert("globs".into(), apply_to);
                }
                fields.entry("description").or_insert(Value::String(description));
                fields.entry("alwaysApply").or_insert(Value::Bool(false));
            }
            Some(scope) => {
                if !has_value(&fields, "globs") && has_value(&fields, "applyTo") {
                    let apply_to = fields.remove("applyTo").unwrap_or_default();
                    fields.insert("globs".into(), apply_to);
                }
                match scope {
                    Scope::Files(globs) if !has_value(&fields, "globs") => {
                        fields.insert("globs".into(), Value::String(scope::joined(globs)));
                    }
                    Scope::Always => {
                        fields.entry("alwaysApply").or_insert(Value::Bool(true));
                    }
                    // Globs beside `trigger: manual` or `model_decision`:
                    // Cursor would attach the rule to those files.
                    Scope::Described | Scope::Manual if has_value(&fields, "globs") => {
                        fields.remove("globs");
                    }
                    _ => {}
                }
                // Cursor applies a rule with a description when it finds it
                // relevant: one to be asked for gets none.
                if *scope != Scope::Manual {
                    fields.entry("description").or_insert(Value::String(description));
                }
                fields.entry("alwaysApply").or_insert(Value::Bool(false));
            }
        },
        Format::CopilotInstruction => {
            match &scope {
                // Before scopes: a rule its author left to be asked for
                // (`alwaysApply: false`, no globs) stayed one.
                None => {
                    if !fields.contains_key("applyTo")
                        && let Some(globs) = fields.remove("globs")
                    {
                        fields.insert("applyTo".into(), globs);
                    }
                    if fields.get("alwaysApply") != Some(&Value::Bool(false)) {
                        fields.entry("applyTo").or_insert(Value::String("**".into()));
                    }
                }
                Some(scope) => {
                    // Copilot reads `applyTo` only, as one comma-separated text.
                    let globs = fields.remove("globs").filter(|_| !has_value(&fields, "applyTo"));
                    let apply_to = match scope {
                        _ if has_value(&fields, "applyTo") => None,
                        Scope::Files(all) => Some(match globs {
                            Some(Value::String(text)) if !text.trim().is_empty() => text,
                            _ => scope::joined(all),
                        }),
                        Scope::Always | Scope::Unstated => Some("**".to_string()),
                        // Without `applyTo`, Copilot applies a rule only when
                        // attached: a rule to be asked for stays one.
                        Scope::Described | Scope::Manual => {
                            fields.remove("applyTo");
                            None
                        }
                    };
                    if let Some(apply_to) = apply_to {
                        fields.insert("applyTo".into(), Value::String(apply_to));
                    }
                }
            }
            fields.entry("description").or_insert(Value::String(description));
        }
        Format::WindsurfRule => {
            let trigger = match &scope {
                _ if fields.contains_key("trigger") => return kept.to_string(),
                None | Some(Scope::Unstated) => return kept.to_string(),
                Some(Scope::Always) => "always_on",
                Some(Scope::Files(_)) => "glob",
                Some(Scope::Described) => "model_decision",
                Some(Scope::Manual) => "manual",
            };
            fields.insert("trigger".into(), Value::String(trigger.into()));
            match &scope {
                Some(Scope::Files(globs)) if !(has_value(&fields, "globs") && fields["globs"].is_string()) => {
                    fields.insert("globs".into(), Value::String(scope::joined(globs)));
                }
                Some(Scope::Described) => {
                    fields.entry("description").or_insert(Value::String(description));
                }
                _ => {}
            }
        }
        Format::ClineRule => match &scope {
            Some(Scope::Files(globs)) if !has_value(&fields, "paths") => {
                let paths = globs.iter().map(|glob| Value::String(glob.clone())).collect();
                fields.insert("paths".into(), Value::Array(paths));
            }
            _ => return kept.to_string(),
        },
        Format::KiroSteering => {
            let inclusion = match &scope {
                _ if fields.contains_key("inclusion") => return kept.to_string(),
                None | Some(Scope::Unstated) => return kept.to_string(),
                Some(Scope::Always) => "always",
                Some(Scope::Files(_)) => "fileMatch",
                Some(Scope::Described) => "auto",
                Some(Scope::Manual) => "manual",
            };
            fields.insert("inclusion".into(), Value::String(inclusion.into()));
            match &scope {
                Some(Scope::Files(globs)) => {
                    fields.insert("fileMatchPattern".into(), Value::String(scope::one_glob(globs)));
                }
                Some(Scope::Described) => {
                    fields.entry("name").or_insert(Value::String(name.to_string()));
                    fields.entry("description").or_insert(Value::String(description));
                }
                _ => {}
            }
        }
        Format::NamedAgent | Format::CursorAgent => {
            fields.insert("name".into(), Value::String(name.to_string()));
            fields.entry("description").or_insert(Value::String(description));
            const CLAUDE_MODELS: [&str; 4] = ["sonnet", "opus", "haiku", "opusplan"];
            if format == Format::CursorAgent
                && fields
                    .get("model")
                    .and_then(Value::as_str)
                    .is_some_and(|model| CLAUDE_MODELS.iter().any(|alias| model.eq_ignore_ascii_case(alias)))
            {
                fields.remove("model");
            }
        }
        Format::MinimalAgent => {
            fields.clear();
            fields.insert("name".into(), Value::String(slug(name)));
            fields.insert("description".into(), Value::String(description));
        }
        Format::OpencodeAgent => {
            // OpenCode needs a description (one left empty counts as none).
            if fields
                .get("description")
                .and_then(Value::as_str)
                .is_none_or(|d| d.trim().is_empty())
            {
                fields.insert("description".into(), Value::String(description));
            }
            fields.entry("mode").or_insert(Value::String("subagent".into()));
            // OpenCode calls an agent by its `name` when it has one, else by
            // its file's: the name it is installed as, either way.
            if fields.contains_key("name") {
                fields.insert("name".into(), Value::String(name.to_string()));
            }
            if fields.get("tools").is_some_and(|tools| !tools.is_object()) {
                fields.remove("tools");
            }
            if fields
                .get("color")
                .is_some_and(|color| !color.as_str().is_some_and(opencode_color))
            {
                fields.remove("color");
            }
            if fields
                .get("model")
                .is_some_and(|model| !model.as_str().is_some_and(|m| m.contains('/')))
            {
                fields.remove("model");
            }
        }
        Format::GeminiCommand => return gemini_command(&description, body),
        Format::CodexAgent => return codex_agent(name, &description, body),
        Format::Verbatim => return kept.to_string(),
    }
    if rendering != Rendering::Rewriting && front.fields.as_ref() == Some(&fields) {
        return kept.to_string();
    }
    let yaml = serde_yaml_ng::to_string(&fields).unwrap_or_default();
    // One blank line between the frontmatter and a non-empty body.
    let body = body.trim_start_matches(['\r', '\n']);
    let body = if body.is_empty() {
        String::new()
    } else {
        format!("\n{body}")
    };
    format!("---\n{yaml}---\n{body}")
}

/// Whether `fields` give `key` a value: not null, an empty text or an empty list.
fn has_value(fields: &Map<String, Value>, key: &str) -> bool {
    match fields.get(key) {
        None | Some(Value::Null) => false,
        Some(Value::String(text)) => !text.trim().is_empty(),
        Some(Value::Array(items)) => !items.is_empty(),
        Some(_) => true,
    }
}

/// `name` as the agents that take only slugs spell it (Gemini CLI refuses an
/// agent named otherwise): lowercase letters, digits, `-` and `_`.
fn slug(name: &str) -> String {
    name.chars()
        .map(|c| match c.to_ascii_lowercase() {
            c @ ('a'..='z' | '0'..='9' | '-' | '_') => c,
            _ => '-',
        })
        .collect()
}

/// A color OpenCode takes: `#rrggbb` or one of its theme's names.
fn opencode_color(color: &str) -> bool {
    const THEME: [&str; 7] = ["primary", "secondary", "accent", "success", "warning", "error", "info"];
    let hex = color
        .strip_prefix('#')
        .is_some_and(|digits| digits.len() == 6 && digits.chars().all(|c| c.is_ascii_hexdigit()));
    hex || THEME.contains(&color)
}

/// A Gemini CLI command file: TOML with the description and the body as the prompt.
fn gemini_command(description: &str, body: &str) -> String {
    let body = body.trim_start_matches(['\r', '\n']);
    format!(
        "description = {}\nprompt = {}\n",
        toml_string(description),
        toml_string(body)
    )
}

/// A Codex custom agent file: TOML with the name Codex spawns it by, the
/// description and the body as its instructions.
fn codex_agent(name: &str, description: &str, body: &str) -> String {
    #[derive(serde::Serialize)]
    struct CodexAgent<'a> {
        name: &'a str,
        description: &'a str,
        developer_instructions: &'a str,
    }
    let agent = CodexAgent {
        name,
        description,
        developer_instructions: body.trim_start_matches(['\r', '\n']),
    };
    toml::to_string(&agent).expect("a table of strings is always TOML")
}

/// A TOML basic string: quotes, backslashes and control characters escaped.
fn toml_string(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_platform_layout() {
        use ArtifactKind::*;
        use Platform::*;
        let path = |t: Target| match t {
            Target::Dir(l) | Target::File(l) => l.key(),
            Target::Section { file, name, kind } => format!("{}#{name} {}", file.key(), kind.as_str()),
        };
        let cases = [
            (Skill, Cursor, false, ".cursor/skills/n"),
            (Skill, Copilot, false, ".github/skills/n"),
            (Skill, Claude, false, ".claude/skills/n"),
            (Skill, Codex, false, ".agents/skills/n"),
            (Skill, Codex, true, "~/.agents/skills/n"),
            (Agent, Cursor, false, ".cursor/agents/n.md"),
            (Agent, Copilot, false, ".github/agents/n.agent.md"),
            (Agent, Claude, false, ".claude/agents/n.md"),
            (Agent, Codex, false, ".codex/agents/n.toml"),
            (Agent, Codex, true, "~/.codex/agents/n.toml"),
            (Prompt, Cursor, false, ".cursor/commands/n.md"),
            (Prompt, Copilot, false, ".github/prompts/n.prompt.md"),
            (Prompt, Claude, false, ".claude/commands/n.md"),
            (Prompt, Codex, false, "~/.codex/prompts/n.md"),
            (Instruction, Cursor, false, ".cursor/rules/n.mdc"),
            (Instruction, Copilot, false, ".github/instructions/n.instructions.md"),
            (Instruction, Claude, false, "CLAUDE.md#n instruction"),
            (Instruction, Claude, true, "~/.claude/CLAUDE.md#n instruction"),
            (Instruction, Codex, false, "AGENTS.md#n instruction"),
            (Instruction, Codex, true, "~/.codex/AGENTS.md#n instruction"),
        ];
        for (kind, platform, global, expected) in cases {
            assert_eq!(
                path(target(kind, "n", platform, global).unwrap()),
                expected,
                "{kind:?} {platform:?} {global}"
            );
        }
    }

    #[test]
    fn agents_without_a_place_take_nothing_there() {
        assert_eq!(target(ArtifactKind::Agent, "n", Platform::Adal, false), None);
        assert_eq!(
            target(ArtifactKind::Instruction, "n", Platform::JetbrainsAi, true),
            None
        );
        assert_eq!(
            target(ArtifactKind::Skill, "n", Platform::GeminiCli, true),
            Some(Target::Dir(Location::Home(".agents/skills/n".into())))
        );
    }

    #[test]
    fn gemini_commands_are_toml() {
        let out = render(
            Format::GeminiCommand,
            "p",
            "---\ndescription: Say \"hi\"\n---\nLine one\\\n\tTwo\n",
        );
        assert_eq!(
            out,
            "description = \"Say \\\"hi\\\"\"\nprompt = \"Line one\\\\\\n\\tTwo\\n\"\n"
        );
    }

    /// A Codex agent is a custom-agent TOML file whatever its text holds:
    /// quotes of both kinds, backslashes, control characters, a Claude
    /// frontmatter Codex has no use for.
    #[rstest::rstest]
    #[case::plain(
        "---\nname: rev\ndescription: Reviews code\nmodel: sonnet\n---\n\nYou review.\n",
        "Reviews code",
        "You review.\n"
    )]
    #[case::quotes(
        "---\ndescription: 'Say \"hi\"'\n---\nUse ''' and \"\"\" and \\d+\n",
        "Say \"hi\"",
        "Use ''' and \"\"\" and \\d+\n"
    )]
    #[case::controls("Tab\there\r\nbell\u{7}end '", "rev", "Tab\there\r\nbell\u{7}end '")]
    fn codex_agents_are_custom_agent_toml(#[case] text: &str, #[case] description: &str, #[case] instructions: &str) {
        #[derive(serde::Deserialize, Debug, PartialEq)]
        #[serde(deny_unknown_fields)]
        struct CodexAgent {
            name: String,
            description: String,
            developer_instructions: String,
        }
        let out = render(Format::CodexAgent, "rev", text);
        let parsed: CodexAgent = toml::from_str(&out).unwrap_or_else(|e| panic!("not TOML: {e}\n{out}"));
        assert_eq!(
            parsed,
            CodexAgent {
                name: "rev".into(),
                description: description.into(),
                developer_instructions: instructions.into(),
            }
        );
    }

    /// A Claude subagent, as agents that validate their frontmatter get it.
    const CLAUDE_AGENT: &str = "---\nname: reviewer\ndescription: Reviews code\ntools: Read, Grep\nmodel: sonnet\ncolor: blue\n---\nYou review.\n";

    #[test]
    fn strict_agents_get_only_what_they_take() {
        let minimal = render(Format::MinimalAgent, "rev", CLAUDE_AGENT);
        assert_eq!(
            minimal,
            "---\nname: rev\ndescription: Reviews code\n---\n\nYou review.\n"
        );
        // An empty description is the manifest's (or the name).
        for empty in [
            "---\nname: rev\ndescription:\n---\nBody\n",
            "---\ndescription: ' '\n---\nBody\n",
        ] {
            assert!(render(Format::MinimalAgent, "rev", empty).contains("description: rev\n"));
            assert!(render(Format::OpencodeAgent, "rev", empty).contains("description: rev\n"));
        }
        // Gemini CLI takes slugs only.
        let named = render(Format::MinimalAgent, "Code.Reviewer_2", CLAUDE_AGENT);
        assert!(named.starts_with("---\nname: code-reviewer_2\n"), "{named}");
        let opencode = render(Format::OpencodeAgent, "rev", CLAUDE_AGENT);
        assert_eq!(
            opencode,
            "---\nname: rev\ndescription: Reviews code\nmode: subagent\n---\n\nYou review.\n"
        );
        // Cursor has no model named like Claude Code's aliases: the agent
        // inherits the session's; its own names stay.
        let cursor = render(Format::CursorAgent, "rev", CLAUDE_AGENT);
        assert!(
            !cursor.contains("model:") && cursor.contains("tools: Read, Grep"),
            "{cursor}"
        );
        let capitalized = CLAUDE_AGENT.replace("model: sonnet", "model: Sonnet");
        assert!(!render(Format::CursorAgent, "rev", &capitalized).contains("model:"));
        for kept in ["inherit", "fast", "gpt-5"] {
            let agent = format!("---\nname: rev\ndescription: Reviews\nmodel: {kept}\n---\nReview.\n");
            assert_eq!(render(Format::CursorAgent, "rev", &agent), agent);
        }
        // What OpenCode takes stays as written.
        let native = "---\ndescription: Plans\nmode: subagent\nmodel: anthropic/claude-sonnet-4\ntools:\n  write: false\ncolor: '#ff8800'\n---\nPlan.\n";
        assert_eq!(render(Format::OpencodeAgent, "plan", native), native);
        assert!(opencode_color("accent") && !opencode_color("#ff88") && !opencode_color("blue"));
    }

    #[test]
    fn a_frontmatter_that_needs_no_change_is_kept_byte_for_byte() {
        let mdc = "---\ndescription: \"TS rules\"\nglobs: **/*.ts\nalwaysApply: false\n---\nUse strict mode.\n";
        assert_eq!(render(Format::CursorRule, "ts", mdc), mdc);
        let agent = "---\nname: rev\ndescription: 'Reviews'\n---\nReview.\n";
        assert_eq!(render(Format::NamedAgent, "rev", agent), agent);
        // Deployed under another name, the frontmatter is written again.
        let renamed = render(Format::NamedAgent, "other", agent);
        assert_eq!(frontmatter::parse(&renamed).string("name").as_deref(), Some("other"));
        // A byte order mark stays with the file it starts.
        let marked = format!("\u{feff}{mdc}");
        assert_eq!(render(Format::CursorRule, "ts", &marked), marked);
        let prompt = "\u{feff}# Summarize\n";
        assert_eq!(render(Format::Verbatim, "s", prompt), prompt);
        assert_eq!(render_rewritten(Format::Verbatim, "s", None, prompt), "# Summarize\n");
        // What older lock files record.
        let rewritten = render_rewritten(Format::CursorRule, "ts", None, mdc);
        assert_eq!(
            rewritten,
            "---\ndescription: TS rules\nglobs: '**/*.ts'\nalwaysApply: false\n---\n\nUse strict mode.\n"
        );
    }

    #[test]
    fn frontmatter_is_merged_not_doubled() {
        let mdc = "---\ndescription: TS rules\nglobs: **/*.ts\n---\nUse strict mode.\n";
        let out = render(Format::CursorRule, "ts", mdc);
        assert_eq!(out.matches("---\n").count(), 2, "{out}");
        let front = frontmatter::parse(&out);
        assert!(front.warnings.is_empty(), "valid YAML now: {out}");
        assert_eq!(front.string("globs").as_deref(), Some("**/*.ts"));
        assert_eq!(front.string("alwaysApply").as_deref(), Some("false"));
        assert!(out.ends_with("\nUse strict mode.\n"));

        let copilot = "---\napplyTo: \"**/*.rs\"\n---\nRust rules\n";
        let as_cursor = render(Format::CursorRule, "rs", copilot);
        assert_eq!(
            frontmatter::parse(&as_cursor).string("globs").as_deref(),
            Some("**/*.rs")
        );
        let back = render(Format::CopilotInstruction, "rs", &as_cursor);
        assert_eq!(frontmatter::parse(&back).string("applyTo").as_deref(), Some("**/*.rs"));

        let plain = render(Format::CopilotInstruction, "plain", "# Plain\n");
        assert_eq!(frontmatter::parse(&plain).string("applyTo").as_deref(), Some("**"));
        let asked_for = "---\ndescription: On request\nalwaysApply: false\n---\nBody\n";
        let copilot = render(Format::CopilotInstruction, "r", asked_for);
        assert_eq!(frontmatter::parse(&copilot).string("applyTo"), None, "{copilot}");
        let always = asked_for.replace("false", "true");
        let copilot = render(Format::CopilotInstruction, "r", &always);
        assert_eq!(frontmatter::parse(&copilot).string("applyTo").as_deref(), Some("**"));
        let agent = render(Format::NamedAgent, "helper", "---\ndescription: Helps\n---\nBody\n");
        assert_eq!(frontmatter::parse(&agent).string("name").as_deref(), Some("helper"));
        let prompt = "# Just a prompt\r\n";
        assert_eq!(render(Format::Verbatim, "p", prompt), prompt, "byte for byte");
        assert_eq!(section_body(mdc), "Use strict mode.\n");
    }

    #[test]
    fn a_rule_keeps_its_scope_on_every_agent() {
        let windsurf = "---\ntrigger: glob\nglobs: '*.py'\n---\nUse ruff.\n";
        let kiro = "---\ninclusion: fileMatch\nfileMatchPattern: ['*.py', '*.pyi']\n---\nUse ruff.\n";
        let claude = "---\npaths:\n  - \"*.py\"\n---\nUse ruff.\n";
        let field = |text: &str, key: &str| frontmatter::parse(text).string(key);
        for rule in [windsurf, kiro, claude] {
            let cursor = render(Format::CursorRule, "py", rule);
            assert!(field(&cursor, "globs").unwrap().starts_with("*.py"), "{cursor}");
            assert_eq!(field(&cursor, "alwaysApply").as_deref(), Some("false"));
            let copilot = render(Format::CopilotInstruction, "py", rule);
            assert!(field(&copilot, "applyTo").unwrap().starts_with("*.py"), "{copilot}");
            let as_windsurf = render(Format::WindsurfRule, "py", rule);
            assert!(field(&as_windsurf, "trigger").is_some(), "{as_windsurf}");
            assert!(
                field(&as_windsurf, "globs").unwrap().starts_with("*.py"),
                "{as_windsurf}"
            );
            let as_kiro = render(Format::KiroSteering, "py", rule);
            assert!(field(&as_kiro, "inclusion").is_some(), "{as_kiro}");
            assert!(as_kiro.ends_with("\nUse ruff.\n"), "{as_kiro}");
        }
        let cline = render(Format::ClineRule, "py", "---\nglobs: '*.py, *.pyi'\n---\nUse ruff.\n");
        assert_eq!(
            cline,
            "---\nglobs: '*.py, *.pyi'\npaths:\n- '*.py'\n- '*.pyi'\n---\n\nUse ruff.\n"
        );
        assert_eq!(render(Format::ClineRule, "py", claude), claude);
        assert_eq!(render(Format::ClineRule, "p", "# Plain\n"), "# Plain\n");
        // Each agent's own rule is copied as it is.
        assert_eq!(render(Format::WindsurfRule, "py", windsurf), windsurf);
        assert_eq!(render(Format::KiroSteering, "py", kiro), kiro);
        assert_eq!(
            field(&render(Format::KiroSteering, "py", windsurf), "fileMatchPattern").as_deref(),
            Some("*.py")
        );
        assert_eq!(
            field(&render(Format::KiroSteering, "py", kiro), "fileMatchPattern"),
            None,
            "a list stays a list"
        );
        let two = render(
            Format::KiroSteering,
            "py",
            "---\nglobs: '*.py, *.pyi'\n---\nUse ruff.\n",
        );
        assert_eq!(
            field(&two, "fileMatchPattern").as_deref(),
            Some("{*.py,*.pyi}"),
            "{two}"
        );
        // A plain rule stays plain where a plain rule applies always.
        assert_eq!(render(Format::WindsurfRule, "p", "# Plain\n"), "# Plain\n");
        assert_eq!(render(Format::KiroSteering, "p", "# Plain\n"), "# Plain\n");
        // Asked for, described, always.
        let asked = "---\ndescription: Release steps\nalwaysApply: false\n---\nTag it.\n";
        assert_eq!(
            field(&render(Format::WindsurfRule, "rel", asked), "trigger").as_deref(),
            Some("model_decision")
        );
        let as_kiro = render(Format::KiroSteering, "rel", asked);
        assert_eq!(field(&as_kiro, "inclusion").as_deref(), Some("auto"));
        assert_eq!(field(&as_kiro, "name").as_deref(), Some("rel"));
        let manual = "---\nalwaysApply: false\n---\nTag it.\n";
        assert_eq!(
            field(&render(Format::WindsurfRule, "rel", manual), "trigger").as_deref(),
            Some("manual")
        );
        assert_eq!(
            field(&render(Format::KiroSteering, "rel", manual), "inclusion").as_deref(),
            Some("manual")
        );
        assert_eq!(
            field(
                &render(Format::CopilotInstruction, "rel", "---\ntrigger: manual\n---\nx\n"),
                "applyTo"
            ),
            None
        );
        let always = "---\ntrigger: always_on\n---\nAlways.\n";
        assert_eq!(
            field(&render(Format::CursorRule, "a", always), "alwaysApply").as_deref(),
            Some("true")
        );
        assert_eq!(
            field(&render(Format::KiroSteering, "a", always), "inclusion").as_deref(),
            Some("always")
        );
        // What an earlier aam wrote, for older lock files: Claude's `paths` unread.
        let before = render_before_scopes(Format::CopilotInstruction, "py", None, claude);
        assert_eq!(field(&before, "applyTo").as_deref(), Some("**"), "{before}");
        assert_eq!(render_before_scopes(Format::WindsurfRule, "py", None, claude), claude);
    }

    #[test]
    fn cursor_and_copilot_read_the_scope_not_only_their_keys() {
        let field = |text: &str, key: &str| frontmatter::parse(text).fields.unwrap_or_default().get(key).cloned();
        let text = |value: &str| Some(Value::String(value.into()));
        // Globs beside a manual or model-decided trigger attach nothing.
        for trigger in ["manual", "model_decision"] {
            let rule = format!("---\ntrigger: {trigger}\ndescription: Py\nglobs: '*.py'\n---\nx\n");
            let cursor = render(Format::CursorRule, "r", &rule);
            assert_eq!(field(&cursor, "globs"), None, "{cursor}");
            assert_eq!(field(&cursor, "description"), text("Py"), "{cursor}");
            assert_eq!(field(&cursor, "alwaysApply"), Some(Value::Bool(false)), "{cursor}");
            let copilot = render(Format::CopilotInstruction, "r", &rule);
            assert_eq!(field(&copilot, "applyTo"), None, "{copilot}");
        }
        // One to be asked for gets no description: Cursor would apply it when relevant.
        let manual = render(Format::CursorRule, "r", "---\ntrigger: manual\n---\nx\n");
        assert_eq!(field(&manual, "description"), None, "{manual}");
        assert_eq!(
            render(Format::CursorRule, "r", "---\nalwaysApply: false\n---\nx\n"),
            "---\nalwaysApply: false\n---\nx\n"
        );
        // Always, whatever globs say.
        let always = "---\nalwaysApply: true\nglobs: '*.py'\n---\nx\n";
        assert_eq!(
            field(&render(Format::CopilotInstruction, "r", always), "applyTo"),
            text("**")
        );
        // An empty key hides no scope another key gives.
        for empty in ["globs:", "globs: ''"] {
            let rule = format!("---\n{empty}\npaths:\n  - src/**/*.ts\n---\nx\n");
            let cursor = render(Format::CursorRule, "r", &rule);
            assert_eq!(field(&cursor, "globs"), text("src/**/*.ts"), "{cursor}");
            let copilot = render(Format::CopilotInstruction, "r", &rule);
            assert_eq!(field(&copilot, "applyTo"), text("src/**/*.ts"), "{copilot}");
            let windsurf = render(Format::WindsurfRule, "r", &rule);
            assert_eq!(field(&windsurf, "globs"), text("src/**/*.ts"), "{windsurf}");
        }
        // Copilot reads one text, not a list.
        let listed = "---\nglobs:\n  - '*.ts'\n  - '*.tsx'\n---\nx\n";
        assert_eq!(
            field(&render(Format::CopilotInstruction, "r", listed), "applyTo"),
            text("*.ts,*.tsx")
        );
        // aam 0.1 wrote the frontmatter again and read no scope.
        let complete = "---\ndescription: D\nalwaysApply: false\npaths:\n- src/**/*.ts\n---\nBody\n";
        assert_eq!(
            render_rewritten(Format::CursorRule, "r", None, complete),
            "---\ndescription: D\nalwaysApply: false\npaths:\n- src/**/*.ts\n---\n\nBody\n"
        );
    }

    #[test]
    fn a_scoped_rule_in_a_shared_file_says_when_it_applies() {
        let rule = "---\nglobs: src/**/*.ts\nalwaysApply: false\n---\nUse strict mode.\n";
        assert_eq!(
            section_text(ArtifactKind::Instruction, "ts", rule),
            "Apply the `ts` rule below only when working on files matching `src/**/*.ts`.\n\nUse strict mode.\n"
        );
        let asked = "---\ndescription: Releasing\nalwaysApply: false\n---\nTag it.\n";
        assert!(
            section_text(ArtifactKind::Instruction, "rel", asked)
                .starts_with("Apply the `rel` rule below only when it is relevant: Releasing\n\nTag it.")
        );
        let manual = "---\nalwaysApply: false\n---\nTag it.\n";
        assert!(
            section_text(ArtifactKind::Instruction, "rel", manual)
                .starts_with("Apply the `rel` rule below only when the user asks for it by name.\n\nTag it.")
        );
        for plain in ["Use tabs.\n", "---\nalwaysApply: true\nglobs: '*'\n---\nUse tabs.\n"] {
            assert_eq!(section_text(ArtifactKind::Instruction, "tabs", plain), "Use tabs.\n");
        }
        assert_eq!(section_text(ArtifactKind::Agent, "ts", rule), "Use strict mode.\n");
    }
}
