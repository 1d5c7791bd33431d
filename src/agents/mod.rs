//! The agents aam deploys to, as data: one row of [`AGENTS`] per agent.
//!
//! A row says where the agent reads skills, agents (subagents), prompts
//! (commands) and rules (instructions) in a project and in the home folder,
//! which file format each needs, how to tell that a project or this machine
//! uses the agent, and how the agent is spelled (`--platform claude-code`, as
//! the `skills` CLI spells it, or `claude`, the name aam has always used and
//! still writes to lock files). [`Platform`] is generated from the same rows,
//! so adding an agent is one row here (and one row in the table test).
//!
//! Paths are `/`-separated and relative to the project root; a `~/` prefix
//! makes them relative to the home folder. Several agents may share a folder
//! (the `.agents/skills` convention, [`SHARED_SKILLS`]): an install writes one
//! copy and records it once. This module is pure data: it does no I/O and does
//! not decide what an install writes (see `crate::deploy` and `crate::install`).

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::scan::ArtifactKind;

/// The project and home folders of the shared skills convention that several
/// agents read (`.agents/skills`, `~/.agents/skills`).
pub const SHARED_SKILLS: [&str; 2] = [".agents/skills", "~/.agents/skills"];

/// How an artifact's main file is converted for an agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// Byte for byte.
    Verbatim,
    /// Cursor `.mdc` frontmatter: `globs` (from the globs another agent's keys give the rule), `description`, `alwaysApply`.
    CursorRule,
    /// Copilot instructions frontmatter: `applyTo` (from the globs another agent's keys give the rule; `**` when it applies always, none when it is to be asked for), `description`.
    CopilotInstruction,
    /// A Windsurf rule: `trigger` (`always_on`, `glob` with `globs`,
    /// `model_decision` or `manual`) from the scope another agent's keys give
    /// it; a rule without one is copied as it is.
    WindsurfRule,
    /// A Kiro steering file: `inclusion` (`always`, `fileMatch` with
    /// `fileMatchPattern`, `auto` or `manual`) from the scope another agent's
    /// keys give it; a rule without one is copied as it is.
    KiroSteering,
    /// A Cline rule: `paths` (a list) from the globs another agent's keys
    /// give it; other rules are copied as they are.
    ClineRule,
    /// Subagent frontmatter with `name` and `description` (Claude Code and agents that copied it).
    NamedAgent,
    /// A Gemini CLI command: TOML with `description` and `prompt` (the body).
    GeminiCommand,
    /// A Codex custom agent: TOML with `name`, `description` and
    /// `developer_instructions` (the body).
    CodexAgent,
    /// Subagent frontmatter reduced to `name` (as a slug: lowercase letters,
    /// digits, `-`, `_`) and `description`, for agents that refuse fields
    /// they do not know, tool names of other agents or other names (Gemini
    /// CLI, Kiro).
    MinimalAgent,
    /// An OpenCode agent: `mode: subagent` unless set, a `name` set to the
    /// name it is installed as, and the fields OpenCode refuses left out
    /// (`tools` that is not a mapping, a `color` that is not `#rrggbb`, a
    /// `model` without its `provider/` prefix).
    OpencodeAgent,
    /// A Cursor subagent: [`Format::NamedAgent`] without a Claude Code model
    /// alias (`sonnet`, `opus`, `haiku`, `opusplan`), which is no Cursor
    /// model: Cursor takes `inherit`, `fast` or one of its model ids.
    CursorAgent,
}

impl Format {
    /// The kebab-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Verbatim => "verbatim",
            Format::CursorRule => "cursor-rule",
            Format::CopilotInstruction => "copilot-instruction",
            Format::WindsurfRule => "windsurf-rule",
            Format::KiroSteering => "kiro-steering",
            Format::ClineRule => "cline-rule",
            Format::NamedAgent => "named-agent",
            Format::GeminiCommand => "gemini-command",
            Format::CodexAgent => "codex-agent",
            Format::MinimalAgent => "minimal-agent",
            Format::OpencodeAgent => "opencode-agent",
            Format::CursorAgent => "cursor-agent",
        }
    }
}

/// Where one artifact goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// A folder per artifact: `<dir>/<name>/` (skills).
    Folder(&'static str),
    /// A file per artifact: `<dir>/<prefix><name><suffix>`.
    File {
        /// The folder.
        dir: &'static str,
        /// Text before the name.
        prefix: &'static str,
        /// Text after the name (the extension).
        suffix: &'static str,
    },
    /// A section (`<!-- BEGIN AAM: ... -->`) inside one shared file.
    Section(&'static str),
}

impl Place {
    /// The path pattern, `<name>` standing for the artifact's name.
    pub fn pattern(&self) -> String {
        match self {
            Place::Folder(dir) => format!("{dir}/<name>/"),
            Place::File { dir, prefix, suffix } => format!("{dir}/{prefix}<name>{suffix}"),
            Place::Section(file) => format!("{file} (section)"),
        }
    }

    /// The folder or shared file it lives in.
    pub fn root(&self) -> &'static str {
        match self {
            Place::Folder(dir) | Place::File { dir, .. } => dir,
            Place::Section(file) => file,
        }
    }
}

/// Where one artifact type goes for one agent, and in which format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    /// For project installs (`None`: the agent reads none there).
    pub project: Option<Place>,
    /// For global (home-folder) installs.
    pub home: Option<Place>,
    /// The conversion the main file needs.
    pub format: Format,
}

impl Slot {
    /// The place for a project (`global` false) or home-folder install.
    pub fn place(&self, global: bool) -> Option<Place> {
        if global { self.home } else { self.project }
    }
}

/// One agent: a row of the table.
#[derive(Debug, Clone, Copy)]
pub struct Agent {
    /// The id, spelled as the `skills` CLI spells it (`claude-code`).
    pub id: &'static str,
    /// Display name.
    pub name: &'static str,
    /// The name lock files, settings and the catalog store: the id, or the
    /// older name of the agents aam supported first (`claude`).
    pub stored: &'static str,
    /// Other accepted spellings.
    pub aliases: &'static [&'static str],
    /// Skills.
    pub skills: Option<Slot>,
    /// Agents (subagents).
    pub agents: Option<Slot>,
    /// Prompts (commands, workflows).
    pub prompts: Option<Slot>,
    /// Rules (instructions).
    pub rules: Option<Slot>,
    /// Files or folders in a project that show it uses the agent.
    pub project_markers: &'static [&'static str],
    /// Files or folders (`~/...`) that show the agent is installed on this machine.
    pub home_markers: &'static [&'static str],
}

impl Agent {
    const EMPTY: Agent = Agent {
        id: "",
        name: "",
        stored: "",
        aliases: &[],
        skills: None,
        agents: None,
        prompts: None,
        rules: None,
        project_markers: &[],
        home_markers: &[],
    };

    /// Where artifacts of `kind` go, when the agent takes them.
    pub fn slot(&self, kind: ArtifactKind) -> Option<Slot> {
        match kind {
            ArtifactKind::Skill => self.skills,
            ArtifactKind::Agent => self.agents,
            ArtifactKind::Prompt => self.prompts,
            ArtifactKind::Instruction => self.rules,
        }
    }

    /// The artifact types it takes in a project (`global` false) or the home folder.
    pub fn takes(&self, global: bool) -> Vec<ArtifactKind> {
        ArtifactKind::ALL
            .into_iter()
            .filter(|&kind| self.slot(kind).and_then(|s| s.place(global)).is_some())
            .collect()
    }

    /// Every spelling `--platform` accepts for it.
    pub fn names(&self) -> Vec<&'static str> {
        let mut names = vec![self.id];
        for name in std::iter::once(&self.stored).chain(self.aliases) {
            if !names.contains(name) {
                names.push(name);
            }
        }
        names
    }
}

const fn skills(project: &'static str, home: &'static str) -> Option<Slot> {
    Some(Slot {
        project: Some(Place::Folder(project)),
        home: Some(Place::Folder(home)),
        format: Format::Verbatim,
    })
}

const fn project_skills(project: &'static str) -> Option<Slot> {
    Some(Slot {
        project: Some(Place::Folder(project)),
        home: None,
        format: Format::Verbatim,
    })
}

const fn file_in(dir: Option<&'static str>, suffix: &'static str) -> Option<Place> {
    match dir {
        Some(dir) => Some(Place::File {
            dir,
            prefix: "",
            suffix,
        }),
        None => None,
    }
}

/// One `<name><suffix>` file per artifact in `project` and `home` folders.
const fn files(
    project: Option<&'static str>,
    home: Option<&'static str>,
    suffix: &'static str,
    format: Format,
) -> Option<Slot> {
    Some(Slot {
        project: file_in(project, suffix),
        home: file_in(home, suffix),
        format,
    })
}

/// A section per artifact in shared files.
const fn section(project: Option<&'static str>, home: Option<&'static str>) -> Option<Slot> {
    Some(Slot {
        project: match project {
            Some(file) => Some(Place::Section(file)),
            None => None,
        },
        home: match home {
            Some(file) => Some(Place::Section(file)),
            None => None,
        },
        format: Format::Verbatim,
    })
}

macro_rules! agents {
    ($($(#[$doc:meta])* $variant:ident => $row:expr;)+) => {
        /// An agent aam deploys to: one row of [`AGENTS`]. Serialized as its
        /// stored name (`claude`, `gemini-cli`); any of its names is accepted.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Platform {
            $($(#[$doc])* $variant,)+
        }

        impl Platform {
            /// Every agent, in table order.
            pub const ALL: &'static [Platform] = &[$(Platform::$variant,)+];
        }

        /// Every agent, in [`Platform`] order.
        pub static AGENTS: &[Agent] = &[$($row,)+];
    };
}

agents! {
    /// Cursor.
    Cursor => Agent {
        id: "cursor",
        name: "Cursor",
        stored: "cursor",
        skills: skills(".cursor/skills", "~/.cursor/skills"),
        agents: files(Some(".cursor/agents"), Some("~/.cursor/agents"), ".md", Format::CursorAgent),
        prompts: files(Some(".cursor/commands"), Some("~/.cursor/commands"), ".md", Format::Verbatim),
        rules: files(Some(".cursor/rules"), Some("~/.cursor/rules"), ".mdc", Format::CursorRule),
        project_markers: &[".cursor"],
        home_markers: &["~/.cursor"],
        ..Agent::EMPTY
    };
    /// Claude Code.
    Claude => Agent {
        id: "claude-code",
        name: "Claude Code",
        stored: "claude",
        aliases: &["claude"],
        skills: skills(".claude/skills", "~/.claude/skills"),
        agents: files(Some(".claude/agents"), Some("~/.claude/agents"), ".md", Format::NamedAgent),
        prompts: files(Some(".claude/commands"), Some("~/.claude/commands"), ".md", Format::Verbatim),
        rules: section(Some("CLAUDE.md"), Some("~/.claude/CLAUDE.md")),
        project_markers: &[".claude", "CLAUDE.md"],
        home_markers: &["~/.claude"],
    };
    /// GitHub Copilot.
    Copilot => Agent {
        id: "github-copilot",
        name: "GitHub Copilot",
        stored: "copilot",
        aliases: &["copilot"],
        skills: skills(".github/skills", "~/.copilot/skills"),
        agents: files(Some(".github/agents"), Some("~/.copilot/agents"), ".agent.md", Format::Verbatim),
        // VS Code keeps a user's prompt files in its profile folder, which is
        // not one place: only project prompts.
        prompts: files(Some(".github/prompts"), None, ".prompt.md", Format::Verbatim),
        rules: files(Some(".github/instructions"), Some("~/.copilot/instructions"), ".instructions.md", Format::CopilotInstruction),
        // Not `.github` alone: nearly every repository on GitHub has one for its workflows.
        project_markers: &[
            ".github/copilot-instructions.md",
            ".github/instructions",
            ".github/prompts",
            ".github/agents",
            ".github/chatmodes",
            ".github/skills",
        ],
        home_markers: &["~/.copilot"],
    };
    /// OpenAI Codex.
    Codex => Agent {
        id: "codex",
        name: "Codex",
        stored: "codex",
        skills: skills(".agents/skills", "~/.agents/skills"),
        agents: files(Some(".codex/agents"), Some("~/.codex/agents"), ".toml", Format::CodexAgent),
        prompts: files(Some("~/.codex/prompts"), Some("~/.codex/prompts"), ".md", Format::Verbatim),
        rules: section(Some("AGENTS.md"), Some("~/.codex/AGENTS.md")),
        project_markers: &[".codex", "AGENTS.md"],
        home_markers: &["~/.codex"],
        ..Agent::EMPTY
    };
    /// AdaL.
    Adal => Agent {
        id: "adal",
        name: "AdaL",
        stored: "adal",
        skills: skills(".adal/skills", "~/.adal/skills"),
        project_markers: &[".adal"],
        home_markers: &["~/.adal"],
        ..Agent::EMPTY
    };
    /// Amp.
    Amp => Agent {
        id: "amp",
        name: "Amp",
        stored: "amp",
        skills: skills(".agents/skills", "~/.config/agents/skills"),
        rules: section(Some("AGENTS.md"), Some("~/.config/amp/AGENTS.md")),
        project_markers: &[".amp"],
        home_markers: &["~/.config/amp"],
        ..Agent::EMPTY
    };
    /// Google Antigravity.
    Antigravity => Agent {
        id: "antigravity",
        name: "Antigravity",
        stored: "antigravity",
        skills: skills(".agent/skills", "~/.gemini/antigravity/skills"),
        project_markers: &[".agent"],
        home_markers: &["~/.gemini/antigravity"],
        ..Agent::EMPTY
    };
    /// Augment.
    Augment => Agent {
        id: "augment",
        name: "Augment",
        stored: "augment",
        skills: skills(".augment/skills", "~/.augment/skills"),
        agents: files(Some(".augment/agents"), Some("~/.augment/agents"), ".md", Format::NamedAgent),
        prompts: files(Some(".augment/commands"), Some("~/.augment/commands"), ".md", Format::Verbatim),
        rules: files(Some(".augment/rules"), Some("~/.augment/rules"), ".md", Format::Verbatim),
        project_markers: &[".augment"],
        home_markers: &["~/.augment"],
        ..Agent::EMPTY
    };
    /// Cline.
    Cline => Agent {
        id: "cline",
        name: "Cline",
        stored: "cline",
        skills: skills(".cline/skills", "~/.cline/skills"),
        prompts: files(Some(".clinerules/workflows"), Some("~/Documents/Cline/Workflows"), ".md", Format::Verbatim),
        rules: files(Some(".clinerules"), Some("~/Documents/Cline/Rules"), ".md", Format::ClineRule),
        project_markers: &[".clinerules", ".cline"],
        home_markers: &["~/.cline"],
        ..Agent::EMPTY
    };
    /// CodeBuddy.
    Codebuddy => Agent {
        id: "codebuddy",
        name: "CodeBuddy",
        stored: "codebuddy",
        skills: skills(".codebuddy/skills", "~/.codebuddy/skills"),
        project_markers: &[".codebuddy"],
        home_markers: &["~/.codebuddy"],
        ..Agent::EMPTY
    };
    /// Command Code.
    CommandCode => Agent {
        id: "command-code",
        name: "Command Code",
        stored: "command-code",
        skills: skills(".commandcode/skills", "~/.commandcode/skills"),
        project_markers: &[".commandcode"],
        home_markers: &["~/.commandcode"],
        ..Agent::EMPTY
    };
    /// Continue.
    Continue => Agent {
        id: "continue",
        name: "Continue",
        stored: "continue",
        skills: skills(".continue/skills", "~/.continue/skills"),
        rules: files(Some(".continue/rules"), Some("~/.continue/rules"), ".md", Format::Verbatim),
        project_markers: &[".continue"],
        home_markers: &["~/.continue"],
        ..Agent::EMPTY
    };
    /// Crush.
    Crush => Agent {
        id: "crush",
        name: "Crush",
        stored: "crush",
        skills: skills(".crush/skills", "~/.config/crush/skills"),
        project_markers: &[".crush"],
        home_markers: &["~/.config/crush"],
        ..Agent::EMPTY
    };
    /// Devin.
    Devin => Agent {
        id: "devin",
        name: "Devin",
        stored: "devin",
        skills: skills(".devin/skills", "~/.config/devin/skills"),
        rules: section(Some("AGENTS.md"), Some("~/.config/devin/AGENTS.md")),
        project_markers: &[".devin"],
        home_markers: &["~/.config/devin"],
        ..Agent::EMPTY
    };
    /// Factory Droid.
    Droid => Agent {
        id: "droid",
        name: "Droid",
        stored: "droid",
        skills: skills(".factory/skills", "~/.factory/skills"),
        agents: files(Some(".factory/droids"), Some("~/.factory/droids"), ".md", Format::NamedAgent),
        prompts: files(Some(".factory/commands"), Some("~/.factory/commands"), ".md", Format::Verbatim),
        rules: section(Some("AGENTS.md"), Some("~/.factory/AGENTS.md")),
        project_markers: &[".factory"],
        home_markers: &["~/.factory"],
        ..Agent::EMPTY
    };
    /// Gemini CLI.
    GeminiCli => Agent {
        id: "gemini-cli",
        name: "Gemini CLI",
        stored: "gemini-cli",
        aliases: &["gemini"],
        skills: skills(".agents/skills", "~/.agents/skills"),
        agents: files(Some(".gemini/agents"), Some("~/.gemini/agents"), ".md", Format::MinimalAgent),
        prompts: files(Some(".gemini/commands"), Some("~/.gemini/commands"), ".toml", Format::GeminiCommand),
        rules: section(Some("GEMINI.md"), Some("~/.gemini/GEMINI.md")),
        project_markers: &[".gemini", "GEMINI.md"],
        home_markers: &["~/.gemini"],
    };
    /// Goose.
    Goose => Agent {
        id: "goose",
        name: "Goose",
        stored: "goose",
        skills: skills(".goose/skills", "~/.config/goose/skills"),
        rules: section(Some(".goosehints"), Some("~/.config/goose/.goosehints")),
        project_markers: &[".goose", ".goosehints"],
        home_markers: &["~/.config/goose"],
        ..Agent::EMPTY
    };
    /// Grok CLI.
    GrokCli => Agent {
        id: "grok-cli",
        name: "Grok CLI",
        stored: "grok-cli",
        skills: skills(".grok/skills", "~/.grok/skills"),
        agents: files(Some(".grok/agents"), Some("~/.grok/agents"), ".md", Format::NamedAgent),
        prompts: files(Some(".grok/commands"), Some("~/.grok/commands"), ".md", Format::Verbatim),
        rules: files(Some(".grok/rules"), Some("~/.grok/rules"), ".md", Format::Verbatim),
        project_markers: &[".grok"],
        home_markers: &["~/.grok"],
        ..Agent::EMPTY
    };
    /// iFlow CLI.
    IflowCli => Agent {
        id: "iflow-cli",
        name: "iFlow CLI",
        stored: "iflow-cli",
        skills: skills(".iflow/skills", "~/.iflow/skills"),
        project_markers: &[".iflow"],
        home_markers: &["~/.iflow"],
        ..Agent::EMPTY
    };
    /// JetBrains AI Assistant.
    JetbrainsAi => Agent {
        id: "jetbrains-ai",
        name: "JetBrains AI Assistant",
        stored: "jetbrains-ai",
        skills: project_skills(".agents/skills"),
        rules: files(Some(".aiassistant/rules"), None, ".md", Format::Verbatim),
        project_markers: &[".aiassistant"],
        ..Agent::EMPTY
    };
    /// JetBrains Junie.
    Junie => Agent {
        id: "junie",
        name: "Junie",
        stored: "junie",
        skills: skills(".junie/skills", "~/.junie/skills"),
        agents: files(Some(".junie/agents"), Some("~/.junie/agents"), ".md", Format::NamedAgent),
        prompts: files(Some(".junie/commands"), Some("~/.junie/commands"), ".md", Format::Verbatim),
        rules: section(Some(".junie/guidelines.md"), None),
        project_markers: &[".junie"],
        home_markers: &["~/.junie"],
        ..Agent::EMPTY
    };
    /// Kilo Code.
    Kilo => Agent {
        id: "kilo",
        name: "Kilo Code",
        stored: "kilo",
        skills: skills(".kilocode/skills", "~/.kilocode/skills"),
        prompts: files(Some(".kilocode/workflows"), Some("~/.kilocode/workflows"), ".md", Format::Verbatim),
        rules: files(Some(".kilocode/rules"), Some("~/.kilocode/rules"), ".md", Format::Verbatim),
        project_markers: &[".kilocode"],
        home_markers: &["~/.kilocode"],
        ..Agent::EMPTY
    };
    /// Kimi Code CLI.
    KimiCli => Agent {
        id: "kimi-cli",
        name: "Kimi Code CLI",
        stored: "kimi-cli",
        skills: skills(".agents/skills", "~/.config/agents/skills"),
        rules: section(Some("AGENTS.md"), None),
        project_markers: &[".kimi"],
        home_markers: &["~/.kimi"],
        ..Agent::EMPTY
    };
    /// Kiro CLI.
    KiroCli => Agent {
        id: "kiro-cli",
        name: "Kiro CLI",
        stored: "kiro-cli",
        aliases: &["kiro"],
        skills: skills(".kiro/skills", "~/.kiro/skills"),
        agents: files(Some(".kiro/agents"), Some("~/.kiro/agents"), ".md", Format::MinimalAgent),
        prompts: files(Some(".kiro/prompts"), Some("~/.kiro/prompts"), ".md", Format::Verbatim),
        rules: files(Some(".kiro/steering"), Some("~/.kiro/steering"), ".md", Format::KiroSteering),
        project_markers: &[".kiro"],
        home_markers: &["~/.kiro"],
    };
    /// Kode.
    Kode => Agent {
        id: "kode",
        name: "Kode",
        stored: "kode",
        skills: skills(".kode/skills", "~/.kode/skills"),
        project_markers: &[".kode"],
        home_markers: &["~/.kode"],
        ..Agent::EMPTY
    };
    /// MCPJam.
    Mcpjam => Agent {
        id: "mcpjam",
        name: "MCPJam",
        stored: "mcpjam",
        skills: skills(".mcpjam/skills", "~/.mcpjam/skills"),
        project_markers: &[".mcpjam"],
        home_markers: &["~/.mcpjam"],
        ..Agent::EMPTY
    };
    /// Mistral Vibe.
    MistralVibe => Agent {
        id: "mistral-vibe",
        name: "Mistral Vibe",
        stored: "mistral-vibe",
        skills: skills(".vibe/skills", "~/.vibe/skills"),
        rules: section(Some("AGENTS.md"), Some("~/.vibe/AGENTS.md")),
        project_markers: &[".vibe"],
        home_markers: &["~/.vibe"],
        ..Agent::EMPTY
    };
    /// Mux.
    Mux => Agent {
        id: "mux",
        name: "Mux",
        stored: "mux",
        skills: skills(".mux/skills", "~/.mux/skills"),
        project_markers: &[".mux"],
        home_markers: &["~/.mux"],
        ..Agent::EMPTY
    };
    /// Neovate.
    Neovate => Agent {
        id: "neovate",
        name: "Neovate",
        stored: "neovate",
        skills: skills(".neovate/skills", "~/.neovate/skills"),
        project_markers: &[".neovate"],
        home_markers: &["~/.neovate"],
        ..Agent::EMPTY
    };
    /// OpenClaw.
    Openclaw => Agent {
        id: "openclaw",
        name: "OpenClaw",
        stored: "openclaw",
        skills: skills("skills", "~/.openclaw/skills"),
        home_markers: &["~/.openclaw", "~/.clawdbot", "~/.moltbot"],
        ..Agent::EMPTY
    };
    /// OpenCode.
    Opencode => Agent {
        id: "opencode",
        name: "OpenCode",
        stored: "opencode",
        skills: skills(".agents/skills", "~/.agents/skills"),
        agents: files(Some(".opencode/agents"), Some("~/.config/opencode/agents"), ".md", Format::OpencodeAgent),
        prompts: files(Some(".opencode/commands"), Some("~/.config/opencode/commands"), ".md", Format::Verbatim),
        rules: section(Some("AGENTS.md"), Some("~/.config/opencode/AGENTS.md")),
        project_markers: &[".opencode", "opencode.json"],
        home_markers: &["~/.config/opencode"],
        ..Agent::EMPTY
    };
    /// OpenHands.
    Openhands => Agent {
        id: "openhands",
        name: "OpenHands",
        stored: "openhands",
        skills: skills(".openhands/skills", "~/.openhands/skills"),
        rules: files(Some(".openhands/microagents"), None, ".md", Format::Verbatim),
        project_markers: &[".openhands"],
        home_markers: &["~/.openhands"],
        ..Agent::EMPTY
    };
    /// Pi.
    Pi => Agent {
        id: "pi",
        name: "Pi",
        stored: "pi",
        skills: skills(".pi/skills", "~/.pi/agent/skills"),
        prompts: files(Some(".pi/prompts"), Some("~/.pi/agent/prompts"), ".md", Format::Verbatim),
        rules: section(Some("AGENTS.md"), Some("~/.pi/agent/AGENTS.md")),
        project_markers: &[".pi"],
        home_markers: &["~/.pi/agent"],
        ..Agent::EMPTY
    };
    /// Pochi.
    Pochi => Agent {
        id: "pochi",
        name: "Pochi",
        stored: "pochi",
        skills: skills(".pochi/skills", "~/.pochi/skills"),
        project_markers: &[".pochi"],
        home_markers: &["~/.pochi"],
        ..Agent::EMPTY
    };
    /// Qoder.
    Qoder => Agent {
        id: "qoder",
        name: "Qoder",
        stored: "qoder",
        skills: skills(".qoder/skills", "~/.qoder/skills"),
        project_markers: &[".qoder"],
        home_markers: &["~/.qoder"],
        ..Agent::EMPTY
    };
    /// Qwen Code.
    QwenCode => Agent {
        id: "qwen-code",
        name: "Qwen Code",
        stored: "qwen-code",
        skills: skills(".qwen/skills", "~/.qwen/skills"),
        agents: files(Some(".qwen/agents"), Some("~/.qwen/agents"), ".md", Format::NamedAgent),
        prompts: files(Some(".qwen/commands"), Some("~/.qwen/commands"), ".md", Format::Verbatim),
        rules: section(Some("QWEN.md"), Some("~/.qwen/QWEN.md")),
        project_markers: &[".qwen", "QWEN.md"],
        home_markers: &["~/.qwen"],
        ..Agent::EMPTY
    };
    /// Replit.
    Replit => Agent {
        id: "replit",
        name: "Replit",
        stored: "replit",
        skills: skills(".agents/skills", "~/.config/agents/skills"),
        rules: section(Some("replit.md"), None),
        project_markers: &[".replit", "replit.md"],
        ..Agent::EMPTY
    };
    /// Roo Code.
    Roo => Agent {
        id: "roo",
        name: "Roo Code",
        stored: "roo",
        skills: skills(".roo/skills", "~/.roo/skills"),
        prompts: files(Some(".roo/commands"), Some("~/.roo/commands"), ".md", Format::Verbatim),
        rules: files(Some(".roo/rules"), Some("~/.roo/rules"), ".md", Format::Verbatim),
        project_markers: &[".roo", ".roomodes"],
        home_markers: &["~/.roo"],
        ..Agent::EMPTY
    };
    /// Trae.
    Trae => Agent {
        id: "trae",
        name: "Trae",
        stored: "trae",
        skills: skills(".trae/skills", "~/.trae/skills"),
        rules: files(Some(".trae/rules"), None, ".md", Format::Verbatim),
        project_markers: &[".trae"],
        home_markers: &["~/.trae"],
        ..Agent::EMPTY
    };
    /// Trae CN (reads the project's `.trae/` like Trae).
    TraeCn => Agent {
        id: "trae-cn",
        name: "Trae CN",
        stored: "trae-cn",
        skills: skills(".trae/skills", "~/.trae-cn/skills"),
        rules: files(Some(".trae/rules"), None, ".md", Format::Verbatim),
        home_markers: &["~/.trae-cn"],
        ..Agent::EMPTY
    };
    /// Warp.
    Warp => Agent {
        id: "warp",
        name: "Warp",
        stored: "warp",
        skills: project_skills(".warp/skills"),
        rules: section(Some("AGENTS.md"), None),
        project_markers: &[".warp", "WARP.md"],
        home_markers: &["~/.warp"],
        ..Agent::EMPTY
    };
    /// Windsurf.
    Windsurf => Agent {
        id: "windsurf",
        name: "Windsurf",
        stored: "windsurf",
        skills: skills(".windsurf/skills", "~/.codeium/windsurf/skills"),
        prompts: files(Some(".windsurf/workflows"), None, ".md", Format::Verbatim),
        rules: Some(Slot {
            project: Some(Place::File { dir: ".windsurf/rules", prefix: "", suffix: ".md" }),
            home: Some(Place::Section("~/.codeium/windsurf/memories/global_rules.md")),
            format: Format::WindsurfRule,
        }),
        project_markers: &[".windsurf", ".windsurfrules"],
        home_markers: &["~/.codeium/windsurf"],
        ..Agent::EMPTY
    };
    /// Zed.
    Zed => Agent {
        id: "zed",
        name: "Zed",
        stored: "zed",
        skills: skills(".agents/skills", "~/.agents/skills"),
        rules: section(Some(".rules"), Some("~/.config/zed/AGENTS.md")),
        project_markers: &[".zed", ".rules"],
        home_markers: &["~/.config/zed"],
        ..Agent::EMPTY
    };
    /// Zencoder.
    Zencoder => Agent {
        id: "zencoder",
        name: "Zencoder",
        stored: "zencoder",
        skills: skills(".zencoder/skills", "~/.zencoder/skills"),
        project_markers: &[".zencoder"],
        home_markers: &["~/.zencoder"],
        ..Agent::EMPTY
    };
}

impl Platform {
    /// Its row of the table.
    pub fn agent(self) -> &'static Agent {
        &AGENTS[self as usize]
    }

    /// The agent any of its names means (any letter case): id, stored name,
    /// alias or display name (`Claude Code`).
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|p| {
            let agent = p.agent();
            agent.name.eq_ignore_ascii_case(text) || agent.names().iter().any(|n| n.eq_ignore_ascii_case(text))
        })
    }

    /// The stored name: what lock files, settings and the catalog hold.
    pub fn as_str(self) -> &'static str {
        self.agent().stored
    }

    /// The id, as the `skills` CLI spells it.
    pub fn id(self) -> &'static str {
        self.agent().id
    }
}

/// Places earlier versions of aam deployed an artifact type to for an agent,
/// and that the agent reads otherwise (or not at all): the table moved them.
/// A restore keeps an artifact the lock file records at one of them, so a
/// committed lock restores (`--frozen` included) as it is; an install or an
/// upgrade moves it to where the table says (see `crate::install::plan`).
pub const FORMER_PLACES: &[(Platform, ArtifactKind, Slot)] = &[
    // Cursor reads subagents from `.cursor/agents/` and commands from
    // `.cursor/commands/`: agents were rules, prompts went to `.cursor/prompts/`.
    (
        Platform::Cursor,
        ArtifactKind::Agent,
        Slot {
            project: Some(Place::File {
                dir: ".cursor/rules",
                prefix: "agent-",
                suffix: ".mdc",
            }),
            home: Some(Place::File {
                dir: "~/.cursor/rules",
                prefix: "agent-",
                suffix: ".mdc",
            }),
            format: Format::CursorRule,
        },
    ),
    (
        Platform::Cursor,
        ArtifactKind::Prompt,
        Slot {
            project: Some(Place::File {
                dir: ".cursor/prompts",
                prefix: "",
                suffix: ".md",
            }),
            home: Some(Place::File {
                dir: "~/.cursor/prompts",
                prefix: "",
                suffix: ".md",
            }),
            format: Format::Verbatim,
        },
    ),
    // Copilot's home folder is `~/.copilot`; nothing reads `~/.github`.
    (
        Platform::Copilot,
        ArtifactKind::Skill,
        Slot {
            project: None,
            home: Some(Place::Folder("~/.github/skills")),
            format: Format::Verbatim,
        },
    ),
    (
        Platform::Copilot,
        ArtifactKind::Agent,
        Slot {
            project: None,
            home: Some(Place::File {
                dir: "~/.github/agents",
                prefix: "",
                suffix: ".agent.md",
            }),
            format: Format::Verbatim,
        },
    ),
    (
        Platform::Copilot,
        ArtifactKind::Prompt,
        Slot {
            project: None,
            home: Some(Place::File {
                dir: "~/.github/prompts",
                prefix: "",
                suffix: ".prompt.md",
            }),
            format: Format::Verbatim,
        },
    ),
    (
        Platform::Copilot,
        ArtifactKind::Instruction,
        Slot {
            project: None,
            home: Some(Place::File {
                dir: "~/.github/instructions",
                prefix: "",
                suffix: ".instructions.md",
            }),
            format: Format::CopilotInstruction,
        },
    ),
    // Qwen Code's commands are Markdown now; TOML ones are deprecated.
    (
        Platform::QwenCode,
        ArtifactKind::Prompt,
        Slot {
            project: Some(Place::File {
                dir: ".qwen/commands",
                prefix: "",
                suffix: ".toml",
            }),
            home: Some(Place::File {
                dir: "~/.qwen/commands",
                prefix: "",
                suffix: ".toml",
            }),
            format: Format::GeminiCommand,
        },
    ),
    // Codex reads skills from the shared `.agents/skills` (`~/.agents/skills`),
    // no longer from `.codex/skills`.
    (
        Platform::Codex,
        ArtifactKind::Skill,
        Slot {
            project: Some(Place::Folder(".codex/skills")),
            home: Some(Place::Folder("~/.codex/skills")),
            format: Format::Verbatim,
        },
    ),
    // Codex subagents were sections of `AGENTS.md`, which Codex reads as its
    // own instructions; Codex now reads custom agents from `.codex/agents/`.
    (
        Platform::Codex,
        ArtifactKind::Agent,
        Slot {
            project: Some(Place::Section("AGENTS.md")),
            home: Some(Place::Section("~/.codex/AGENTS.md")),
            format: Format::Verbatim,
        },
    ),
];

/// Formats earlier versions of aam wrote at a place the agent table still
/// uses: a restore writes what the lock file records in them (see
/// `crate::install::plan`). OpenCode agents were copied as they are, and
/// OpenCode refuses every agent when one has a Claude `tools` list; Cursor
/// agents kept a Claude model alias; Windsurf, Kiro and Cline rules were
/// copied without the scope another agent's keys gave them.
pub const FORMER_FORMATS: &[(Platform, ArtifactKind, Format)] = &[
    (Platform::Opencode, ArtifactKind::Agent, Format::Verbatim),
    (Platform::Cursor, ArtifactKind::Agent, Format::NamedAgent),
    (Platform::Windsurf, ArtifactKind::Instruction, Format::Verbatim),
    (Platform::KiroCli, ArtifactKind::Instruction, Format::Verbatim),
    (Platform::Cline, ArtifactKind::Instruction, Format::Verbatim),
];

/// Places the agent table gave an agent that took no artifact of a type
/// there in earlier versions of aam (`true`: in the home folder, `false`: in
/// a project): a lock file written then records none, and a restore adds
/// none (see `crate::install::plan`); an install does.
pub const ADDED_PLACES: &[(Platform, ArtifactKind, bool)] = &[
    (Platform::GeminiCli, ArtifactKind::Agent, false),
    (Platform::GeminiCli, ArtifactKind::Agent, true),
    (Platform::KiroCli, ArtifactKind::Agent, false),
    (Platform::KiroCli, ArtifactKind::Agent, true),
    (Platform::Zed, ArtifactKind::Skill, true),
];

impl Platform {
    /// Whether it takes artifacts of `kind` in a project (`global` false) or
    /// the home folder only since a later version of aam ([`ADDED_PLACES`]).
    pub fn gained_place(self, kind: ArtifactKind, global: bool) -> bool {
        ADDED_PLACES.contains(&(self, kind, global))
    }

    /// Where artifacts of `kind` went for it in earlier versions of aam, and
    /// in which format ([`FORMER_PLACES`]).
    pub fn former_slot(self, kind: ArtifactKind) -> Option<Slot> {
        FORMER_PLACES
            .iter()
            .find(|(platform, k, _)| *platform == self && *k == kind)
            .map(|(_, _, slot)| *slot)
    }

    /// [`Platform::former_slot`]'s place for a project (`global` false) or
    /// home-folder install.
    pub fn former_place(self, kind: ArtifactKind, global: bool) -> Option<Place> {
        self.former_slot(kind)?.place(global)
    }
}

impl std::fmt::Display for Platform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Every accepted spelling, in table order (ids first within a row).
pub fn accepted_names() -> Vec<&'static str> {
    Platform::ALL.iter().flat_map(|p| p.agent().names()).collect()
}

/// The hint for `text`, a name that is no agent's: the closest name, when one is close.
pub fn unknown_hint(text: &str) -> String {
    let every = "run `aam agents` for every agent id (cursor, claude-code, github-copilot, codex, gemini-cli, ...)";
    let closest = crate::error::closest_name(text, Platform::ALL.iter().flat_map(|p| p.agent().names()));
    match closest {
        Some(name) => format!("did you mean `{name}`? {every}"),
        None => every.to_string(),
    }
}

impl Serialize for Platform {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Platform {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = Cow::<str>::deserialize(deserializer)?;
        Platform::parse(&text).ok_or_else(|| {
            serde::de::Error::custom(format!("`{text}` is not an agent aam knows; {}", unknown_hint(&text)))
        })
    }
}

impl JsonSchema for Platform {
    fn schema_name() -> Cow<'static, str> {
        "Platform".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "description": "An agent: its id as the `skills` CLI spells it (`claude-code`, `gemini-cli`), or another of its names (`claude`); `aam agents` lists them.",
            "enum": accepted_names(),
        })
    }
}

/// The agent table as Markdown (docs/install.md holds a copy between
/// `<!-- agents:start -->` and `<!-- agents:end -->`; a test keeps it current).
pub fn markdown_table() -> String {
    let mut out =
        String::from("| agent | `--platform` | skills | agents | prompts | rules |\n|---|---|---|---|---|---|\n");
    let cell = |slot: Option<Slot>| match slot {
        None => "—".to_string(),
        Some(slot) => {
            let mut parts: Vec<String> = slot.project.map(|p| format!("`{}`", p.pattern())).into_iter().collect();
            parts.extend(slot.home.map(|p| format!("-g: `{}`", p.pattern())));
            if slot.format != Format::Verbatim {
                parts.push(format!("({})", slot.format.as_str()));
            }
            parts.join("<br>")
        }
    };
    for platform in Platform::ALL {
        let agent = platform.agent();
        let names: Vec<String> = agent.names().iter().map(|n| format!("`{n}`")).collect();
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            agent.name,
            names.join(", "),
            cell(agent.skills),
            cell(agent.agents),
            cell(agent.prompts),
            cell(agent.rules)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_docs_hold_the_current_table() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/install.md");
        let docs = std::fs::read_to_string(path).unwrap();
        let (start, end) = ("<!-- agents:start -->\n", "<!-- agents:end -->");
        let from = docs.find(start).expect("start marker") + start.len();
        let to = docs.find(end).expect("end marker");
        let table = markdown_table();
        if docs[from..to] != table {
            if std::env::var("AAM_UPDATE_GENERATED").is_ok_and(|v| v == "1") {
                std::fs::write(path, format!("{}{table}{}", &docs[..from], &docs[to..])).unwrap();
            } else {
                panic!(
                    "docs/install.md's agent table is stale; regenerate it with `AAM_UPDATE_GENERATED=1 cargo test --lib agents`"
                );
            }
        }
    }

    /// A former place is not where the agent deploys now, and an added place
    /// is one it deploys to now.
    #[test]
    fn former_and_added_places_differ_from_the_table() {
        for &(platform, kind, former) in FORMER_PLACES {
            let now = platform.agent().slot(kind);
            for global in [false, true] {
                if let Some(place) = former.place(global) {
                    assert_ne!(now.and_then(|s| s.place(global)), Some(place), "{platform} {kind:?}");
                }
            }
        }
        for &(platform, kind, format) in FORMER_FORMATS {
            assert_ne!(
                platform.agent().slot(kind).map(|s| s.format),
                Some(format),
                "{platform} {kind:?}"
            );
        }
        for &(platform, kind, global) in ADDED_PLACES {
            assert!(
                platform.agent().slot(kind).and_then(|s| s.place(global)).is_some(),
                "{platform} {kind:?}"
            );
        }
    }

    #[test]
    fn rows_match_variants_and_names_are_unique() {
        assert_eq!(Platform::ALL.len(), AGENTS.len());
        assert!(AGENTS.len() >= 40, "{} agents", AGENTS.len());
        let names = accepted_names();
        let mut seen = std::collections::BTreeSet::new();
        for name in &names {
            assert!(seen.insert(name.to_ascii_lowercase()), "`{name}` names two agents");
            assert!(
                name.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
                "`{name}`"
            );
        }
        for &platform in Platform::ALL {
            let agent = platform.agent();
            assert!(!agent.id.is_empty() && !agent.name.is_empty() && !agent.stored.is_empty());
            assert_eq!(Platform::parse(agent.id), Some(platform));
            assert_eq!(Platform::parse(&agent.id.to_uppercase()), Some(platform));
            assert_eq!(Platform::parse(agent.stored), Some(platform));
            assert_eq!(Platform::parse(agent.name), Some(platform), "{}", agent.name);
            assert!(agent.skills.is_some(), "{} takes skills", agent.id);
        }
    }

    #[test]
    fn a_near_miss_gets_the_closest_name() {
        assert!(
            unknown_hint("claud").starts_with("did you mean `claude`?"),
            "{}",
            unknown_hint("claud")
        );
        assert!(unknown_hint("curser").starts_with("did you mean `cursor`?"));
        assert!(unknown_hint("zzzz").starts_with("run `aam agents`"));
    }

    #[test]
    fn every_skills_cli_id_is_accepted() {
        // The `skills` CLI's agent ids (vercel-labs/skills, src/agents.ts, v1.3.9).
        let ids = [
            "amp",
            "antigravity",
            "augment",
            "claude-code",
            "openclaw",
            "cline",
            "codebuddy",
            "codex",
            "command-code",
            "continue",
            "crush",
            "cursor",
            "droid",
            "gemini-cli",
            "github-copilot",
            "goose",
            "junie",
            "iflow-cli",
            "kilo",
            "kimi-cli",
            "kiro-cli",
            "kode",
            "mcpjam",
            "mistral-vibe",
            "mux",
            "opencode",
            "openhands",
            "pi",
            "qoder",
            "qwen-code",
            "replit",
            "roo",
            "trae",
            "trae-cn",
            "windsurf",
            "zencoder",
            "neovate",
            "pochi",
            "adal",
        ];
        for id in ids {
            assert_eq!(Platform::parse(id).map(Platform::id), Some(id));
        }
    }

    #[test]
    fn the_first_four_keep_their_names() {
        for (platform, stored, id) in [
            (Platform::Cursor, "cursor", "cursor"),
            (Platform::Claude, "claude", "claude-code"),
            (Platform::Copilot, "copilot", "github-copilot"),
            (Platform::Codex, "codex", "codex"),
        ] {
            assert_eq!(platform.as_str(), stored);
            assert_eq!(platform.id(), id);
            assert_eq!(serde_json::to_value(platform).unwrap(), stored);
            assert_eq!(serde_json::from_value::<Platform>(id.into()).unwrap(), platform);
        }
        assert!(serde_json::from_value::<Platform>("emacs".into()).is_err());
    }

    #[test]
    fn every_path_is_plain_and_every_home_path_is_in_the_home() {
        for &platform in Platform::ALL {
            let agent = platform.agent();
            for kind in ArtifactKind::ALL {
                let Some(slot) = agent.slot(kind) else { continue };
                for (place, global) in [(slot.project, false), (slot.home, true)] {
                    let Some(place) = place else { continue };
                    let root = place.root();
                    let rest = root.strip_prefix("~/").unwrap_or(root);
                    crate::paths::check_relative(rest).unwrap_or_else(|e| panic!("{}: {root}: {e}", agent.id));
                    if global {
                        assert!(
                            root.starts_with("~/"),
                            "{}: a home place is in the home: {root}",
                            agent.id
                        );
                    }
                    assert_eq!(
                        matches!(place, Place::Folder(_)),
                        kind == ArtifactKind::Skill,
                        "{}: skills are folders, the rest files or sections",
                        agent.id
                    );
                }
            }
        }
    }

    #[test]
    fn agents_sharing_a_place_share_its_format() {
        let mut by_place: std::collections::BTreeMap<(String, ArtifactKind), (Format, &str)> = Default::default();
        for &platform in Platform::ALL {
            let agent = platform.agent();
            for kind in ArtifactKind::ALL {
                let Some(slot) = agent.slot(kind) else { continue };
                for place in [slot.project, slot.home].into_iter().flatten() {
                    let key = (place.pattern(), kind);
                    let (format, first) = *by_place.entry(key).or_insert((slot.format, agent.id));
                    assert_eq!(
                        format,
                        slot.format,
                        "{} and {first} share {}",
                        agent.id,
                        place.pattern()
                    );
                }
            }
        }
        let shared = Platform::ALL
            .iter()
            .filter(|p| p.agent().skills.and_then(|s| s.project) == Some(Place::Folder(SHARED_SKILLS[0])))
            .count();
        assert!(shared >= 3, "several agents read `.agents/skills`");
    }
}
