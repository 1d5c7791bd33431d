//! Settings tools: set aam up for a project, read and change `$AAM_HOME/config.yaml`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Context, Example, Expect, Risk, Tool};
pub use crate::config::keys::SettingOrigin;
use crate::config::keys::{self, Key};
use crate::config::{project_settings_path, read_settings, write_settings};
use crate::deploy::detect_platforms;
use crate::error::{Error, ErrorCode, Result};
use crate::scan::Platform;

/// Input of `aam_config_get`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfigGetInput {
    /// One setting (default: all of them).
    #[serde(default)]
    pub key: Option<String>,
}

/// One setting's value.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Setting {
    /// Key.
    pub key: String,
    /// Effective value (a command-line flag such as `--platform` still wins over it).
    pub value: Value,
    /// Where the value comes from.
    pub origin: SettingOrigin,
    /// The file it was read from (`null` for the default).
    pub origin_path: Option<String>,
    /// What it does.
    pub description: String,
    /// Whether `aam_config_set` can change it.
    pub settable: bool,
}

/// Output of `aam_config_get`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfigGetOutput {
    /// The settings file.
    pub path: String,
    /// The settings asked for.
    pub settings: Vec<Setting>,
}

/// Reads settings.
pub struct ConfigGet;

impl Tool for ConfigGet {
    const NAME: &'static str = "aam_config_get";
    const TITLE: &'static str = "Read settings";
    const DESCRIPTION: &'static str = "Read aam's settings: every setting, or one by `key`, with its effective value, where it comes from (the project's `.aam/config.yaml`, `$AAM_HOME/config.yaml` or the default), what it does and whether it can be set. Next: `aam_config_set` to change one.";
    const RISK: Risk = Risk::Read;
    const IDEMPOTENT: bool = true;
    const EXAMPLES: &'static [Example] = &[
        Example {
            title: "every setting",
            input: r#"{}"#,
            expect: Expect::Output(r#"{"settings": [{"key": "default_platforms", "settable": true}]}"#),
        },
        Example {
            title: "an unknown key",
            input: r#"{"key": "colour"}"#,
            expect: Expect::Error(ErrorCode::InvalidArgument),
        },
    ];
    type Input = ConfigGetInput;
    type Output = ConfigGetOutput;

    fn run(ctx: &Context, input: ConfigGetInput) -> Result<ConfigGetOutput> {
        let settings = ctx.home.load_settings()?;
        let keys: Vec<&Key> = match &input.key {
            Some(name) => vec![keys::key(name)?],
            None => keys::KEYS.iter().collect(),
        };
        let project_path = project_settings_path(&ctx.project_root());
        let project = read_settings(&project_path)?;
        let home_path = ctx.home.settings_path();
        Ok(ConfigGetOutput {
            path: home_path.display().to_string(),
            settings: keys
                .into_iter()
                .map(|k| {
                    let (value, origin) = k.effective(&project, &settings);
                    let origin_path = match origin {
                        SettingOrigin::Project => Some(&project_path),
                        SettingOrigin::Home => Some(&home_path),
                        SettingOrigin::Default => None,
                    };
                    Setting {
                        key: k.name.to_string(),
                        value,
                        origin,
                        origin_path: origin_path.map(|p| p.display().to_string()),
                        description: k.about.to_string(),
                        settable: k.settable(),
                    }
                })
                .collect(),
        })
    }
}

/// Input of `aam_config_set`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfigSetInput {
    /// Setting to change.
    pub key: String,
    /// New value, as text (lists comma-separated; empty to clear).
    pub value: String,
}

/// Output of `aam_config_set`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfigSetOutput {
    /// Setting changed.
    pub key: String,
    /// Value before.
    pub previous: Value,
    /// Value now.
    pub value: Value,
    /// The project settings file whose own value wins over the one just set here, if any.
    pub shadowed_by: Option<String>,
}

/// Changes a setting.
pub struct ConfigSet;

impl Tool for ConfigSet {
    const NAME: &'static str = "aam_config_set";
    const TITLE: &'static str = "Change a setting";
    const DESCRIPTION: &'static str = "Change one of aam's settings in `$AAM_HOME/config.yaml` (see `aam_config_get` for the keys), validating the value first; the settings file is rewritten atomically. Returns the value before and after, and the project settings file that overrides it here, if any.";
    const RISK: Risk = Risk::Write;
    const IDEMPOTENT: bool = true;
    const ERRORS: &'static [ErrorCode] = &[ErrorCode::Forbidden];
    const CONSTRAINTS: &'static [&'static str] = &[
        "`audit.block` and `audit.warn` may only be made stricter by a tool call (`AAM_FORBIDDEN` otherwise): a person lowers them with `aam config set` in a terminal",
        "`default_platforms` takes agent ids (`aam_agents` lists them: cursor, claude, copilot, codex, gemini-cli, ...), comma-separated",
    ];
    const EXAMPLES: &'static [Example] = &[
        Example {
            title: "deploy to two platforms by default",
            input: r#"{"key": "default_platforms", "value": "cursor,claude"}"#,
            expect: Expect::Output(r#"{"key": "default_platforms", "value": ["claude", "cursor"]}"#),
        },
        Example {
            title: "a value that is not a platform",
            input: r#"{"key": "default_platforms", "value": "emacs"}"#,
            expect: Expect::Error(ErrorCode::InvalidArgument),
        },
    ];
    type Input = ConfigSetInput;
    type Output = ConfigSetOutput;

    fn run(ctx: &Context, input: ConfigSetInput) -> Result<ConfigSetOutput> {
        let key = keys::key(&input.key)?;
        if !key.settable() {
            return Err(Error::invalid_argument(format!("`{}` cannot be set here", key.name)).with_hint(key.about));
        }
        let mut settings = ctx.home.load_settings()?;
        let before = settings.clone();
        let previous = key.get(&settings);
        key.set(&mut settings, &input.value)?;
        // Text an agent reads (a skill, a tool result) may ask it to do this:
        // only a person at a terminal turns the audit down.
        if ctx.is_tool_call() && key.weakens_audit(&before, &settings) {
            return Err(Error::new(
                ErrorCode::Forbidden,
                format!("`{}` may not be lowered by a tool call", key.name),
            )
            .with_hint(format!(
                "run `aam config set {} <value>` in a terminal yourself; tool calls may only make the audit stricter",
                key.name
            )));
        }
        ctx.home.save_settings(&settings)?;
        let project_path = project_settings_path(&ctx.project_root());
        let shadowed_by = (key.per_project && keys::is_set(&key.get(&read_settings(&project_path)?)))
            .then(|| project_path.display().to_string());
        Ok(ConfigSetOutput {
            key: key.name.to_string(),
            previous,
            value: key.get(&settings),
            shadowed_by,
        })
    }
}

/// Input of `aam_init`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InitInput {
    /// Platforms installs deploy to by default (empty: keep the project's `default_platforms` when set, else the ones the project already uses).
    #[serde(default)]
    pub platforms: Vec<Platform>,
    /// Also register the built-in default sources (not fetched until `aam_source_update`).
    #[serde(default)]
    pub add_default_sources: bool,
}

/// A platform found in the project.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DetectedPlatform {
    /// The platform.
    pub platform: Platform,
    /// The file or folder that gave it away.
    pub marker: String,
}

/// Output of `aam_init`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InitOutput {
    /// The project root looked at.
    pub project_root: String,
    /// Platforms found in the project.
    pub detected: Vec<DetectedPlatform>,
    /// The project's `default_platforms` as now set (empty: detect at each install).
    pub default_platforms: Vec<String>,
    /// The project's settings file written (`.aam/config.yaml`).
    pub settings_path: String,
    /// The catalog (created when missing).
    pub catalog_path: String,
    /// Default sources registered now.
    pub default_sources_added: Vec<String>,
}

/// Sets aam up for a project.
pub struct Init;

impl Tool for Init {
    const NAME: &'static str = "aam_init";
    const TITLE: &'static str = "Set aam up";
    const DESCRIPTION: &'static str = "Set aam up for the current project: detect the agents it uses by the agent table's project markers (`.cursor/`, `.claude/` or `CLAUDE.md`, `.github/`, `.codex/` or `AGENTS.md`, `.windsurf/`, `GEMINI.md`, ...; see `aam_agents`), save them (or the ones given) as the project's `default_platforms` in `.aam/config.yaml` (they win over the home's setting; one already set there is kept unless platforms are given), create the catalog, and optionally register the built-in default sources. Safe to run again. Next: `aam_source_add` or `aam_source_update`.";
    const RISK: Risk = Risk::Write;
    const IDEMPOTENT: bool = true;
    const ERRORS: &'static [ErrorCode] = &[];
    const EXAMPLES: &'static [Example] = &[
        Example {
            title: "deploy to Claude by default",
            input: r#"{"platforms": ["claude"]}"#,
            expect: Expect::Output(r#"{"default_platforms": ["claude"], "default_sources_added": []}"#),
        },
        Example {
            title: "a platform aam does not know",
            input: r#"{"platforms": ["emacs"]}"#,
            expect: Expect::Error(ErrorCode::InvalidArgument),
        },
    ];
    type Input = InitInput;
    type Output = InitOutput;

    fn run(ctx: &Context, input: InitInput) -> Result<InitOutput> {
        let root = ctx.project_root();
        let detected = detect_platforms(&root);
        let settings_path = project_settings_path(&root);
        ctx.check_path(&settings_path, ".aam/config.yaml")?;
        let mut settings = read_settings(&settings_path)?;
        // A project's setting (a team's committed choice) stays unless other
        // platforms are given.
        let names = if input.platforms.is_empty() && !settings.default_platforms.is_empty() {
            settings.default_platforms.clone()
        } else {
            let chosen: Vec<Platform> = match input.platforms.is_empty() {
                true => detected.iter().map(|(p, _)| *p).collect(),
                false => input.platforms,
            };
            let mut names: Vec<String> = chosen.iter().map(|p| p.as_str().to_string()).collect();
            names.sort();
            names.dedup();
            settings.default_platforms = names.clone();
            write_settings(&settings_path, &settings)?;
            names
        };
        drop(ctx.catalog()?);
        let default_sources_added = if input.add_default_sources {
            crate::sources::defaults::enable(&mut *ctx.catalog()?, &ctx.cwd, false)?.added
        } else {
            Vec::new()
        };
        Ok(InitOutput {
            project_root: root.display().to_string(),
            detected: detected
                .into_iter()
                .map(|(platform, marker)| DetectedPlatform {
                    platform,
                    marker: marker.to_string(),
                })
                .collect(),
            default_platforms: names,
            settings_path: settings_path.display().to_string(),
            catalog_path: ctx.home.catalog_path().display().to_string(),
            default_sources_added,
        })
    }
}
