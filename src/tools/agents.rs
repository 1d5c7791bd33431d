//! `aam_agents`: the agent table (`crate::agents`), with what each agent takes,
//! where it goes, and which agents this project and this machine use.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Context, Example, Expect, Risk, Tool};
use crate::agents::{Format, Platform, SHARED_SKILLS};
use crate::deploy::{detect_installed, detect_platforms};
use crate::error::Result;
use crate::scan::ArtifactKind;

/// Input of `aam_agents`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentsInput {
    /// Only agents found in the project or installed on this machine.
    #[serde(default)]
    pub detected: bool,
}

/// Where one artifact type goes for an agent.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentPlace {
    /// Artifact type.
    #[serde(rename = "type")]
    pub kind: ArtifactKind,
    /// Path pattern for project installs (`<name>` stands for the artifact's name; `~/` is the home folder).
    pub project: Option<String>,
    /// Path pattern for global (`-g`) installs.
    pub home: Option<String>,
    /// The conversion the main file gets.
    pub format: Format,
}

/// One agent.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentInfo {
    /// Its id, as the `skills` CLI spells it (`claude-code`).
    pub id: String,
    /// Display name.
    pub name: String,
    /// The name lock files and settings store (`claude` for `claude-code`).
    pub platform: Platform,
    /// Every name `--platform` accepts for it.
    pub names: Vec<String>,
    /// Artifact types it takes in a project.
    pub takes: Vec<ArtifactKind>,
    /// Artifact types it takes in the home folder (`-g`).
    pub takes_global: Vec<ArtifactKind>,
    /// Where each type goes.
    pub places: Vec<AgentPlace>,
    /// Whether its skills go to the shared `.agents/skills` (or `~/.agents/skills`) folder.
    pub shared_skills: bool,
    /// The marker that shows the project uses it (used when an install names no platform).
    pub detected: Option<String>,
    /// The marker in the home folder that shows it is installed on this machine.
    pub installed: Option<String>,
}

/// Output of `aam_agents`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentsOutput {
    /// The project root looked at.
    pub project_root: String,
    /// The agents, in table order.
    pub agents: Vec<AgentInfo>,
}

/// Lists the agents aam deploys to.
pub struct Agents;

impl Tool for Agents {
    const NAME: &'static str = "aam_agents";
    const TITLE: &'static str = "List agents";
    const DESCRIPTION: &'static str = "List every agent aam deploys to (Claude Code, Cursor, GitHub Copilot, Codex, Gemini CLI, OpenCode, Windsurf, ... from one table): its id as the `skills` CLI spells it and the other names `--platform` accepts, which artifact types it takes (skill, agent, prompt, instruction) in a project and in the home folder, where each goes and in which format, whether its skills go to the shared `.agents/skills` folder, and whether this project uses it (`detected`) or this machine has it (`installed`). Changes nothing. Next: `aam_install` with `platforms`.";
    const RISK: Risk = Risk::Read;
    const IDEMPOTENT: bool = true;
    const EXAMPLES: &'static [Example] = &[Example {
        title: "every agent, the first four as aam has always named them",
        input: r#"{}"#,
        expect: Expect::Output(
            r#"{"agents": [{"id": "cursor", "platform": "cursor"}, {"id": "claude-code", "platform": "claude", "names": ["claude-code", "claude"]}, {"id": "github-copilot", "platform": "copilot"}, {"id": "codex", "platform": "codex"}]}"#,
        ),
    }];
    type Input = AgentsInput;
    type Output = AgentsOutput;

    fn run(ctx: &Context, input: AgentsInput) -> Result<AgentsOutput> {
        let root = ctx.project_root();
        let in_project = detect_platforms(&root);
        let on_machine = ctx.user_home().map(detect_installed).unwrap_or_default();
        let marker = |found: &[(Platform, &str)], platform| {
            found.iter().find(|(p, _)| *p == platform).map(|(_, m)| m.to_string())
        };
        let agents = Platform::ALL
            .iter()
            .map(|&platform| {
                let agent = platform.agent();
                let places = ArtifactKind::ALL
                    .into_iter()
                    .filter_map(|kind| {
                        let slot = agent.slot(kind)?;
                        Some(AgentPlace {
                            kind,
                            project: slot.project.map(|p| p.pattern()),
                            home: slot.home.map(|p| p.pattern()),
                            format: slot.format,
                        })
                    })
                    .collect();
                let skills = agent.skills.map(|s| [s.project, s.home]).unwrap_or_default();
                AgentInfo {
                    id: agent.id.to_string(),
                    name: agent.name.to_string(),
                    platform,
                    names: agent.names().into_iter().map(str::to_string).collect(),
                    takes: agent.takes(false),
                    takes_global: agent.takes(true),
                    places,
                    shared_skills: skills.into_iter().flatten().any(|p| SHARED_SKILLS.contains(&p.root())),
                    detected: marker(&in_project, platform),
                    installed: marker(&on_machine, platform),
                }
            })
            .filter(|a| !input.detected || a.detected.is_some() || a.installed.is_some())
            .collect();
        Ok(AgentsOutput {
            project_root: root.display().to_string(),
            agents,
        })
    }
}
