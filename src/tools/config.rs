//! Settings tools: set aam up for a project, read and change `$AAM_HOME/config.yaml`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Context, Example, Expect, Risk, Tool};
use crate::config::{Settings, project_settings_path, read_settings, write_settings};
use crate::deploy::detect_platforms;
use crate::error::{Error, ErrorCode, Result};
use crate::scan::Platform;

/// One setting: its key, what it means, how to read it and how to set it.
struct Key {
    name: &'static str,
    about: &'static str,
    get: fn(&Settings) -> Value,
    /// `None` for settings other commands own.
    set: Option<fn(&mut Settings, &str) -> Result<()>>,
    /// Whether a project's `.aam/config.yaml` can set it too (and then wins).
    per_project: bool,
}

const KEYS: &[Key] = &[
    Key {
        name: "default_platforms",
        about: "platforms `aam install` deploys to when none is named (comma-separated agent ids such as cursor, claude, copilot, codex, gemini-cli (`aam agents` lists them); empty to detect from the project)",
        get: |s| Value::from(s.default_platforms.clone()),
        set: Some(set_default_platforms),
        per_project: true,
    },
    Key {
        name: "audit.block",
        about: "installs refuse artifacts with content-audit findings at or above this severity (info, warn, high, off; default high)",
        get: |s| s.audit.block.clone().map_or(Value::Null, Value::from),
        set: Some(|s, v| {
            s.audit.block = audit_level(v)?;
            Ok(())
        }),
        per_project: true,
    },
    Key {
        name: "audit.warn",
        about: "installs warn about content-audit findings at or above this severity (info, warn, high, off; default warn)",
        get: |s| s.audit.warn.clone().map_or(Value::Null, Value::from),
        set: Some(|s, v| {
            s.audit.warn = audit_level(v)?;
            Ok(())
        }),
        per_project: true,
    },
    Key {
        name: "fetch.timeout",
        about: "seconds a remote fetch may take in all, retries included (a whole number, at least 1; default 30; `AAM_FETCH_TIMEOUT` overrides it)",
        get: |s| s.fetch.timeout.map_or(Value::Null, Value::from),
        set: Some(|s, v| {
            s.fetch.timeout = seconds(v)?;
            Ok(())
        }),
        per_project: false,
    },
    Key {
        name: "fetch.stall_timeout",
        about: "seconds a remote fetch waits for the server's next bytes before it gives up on the attempt (a whole number, at least 1; default 10; `AAM_FETCH_STALL_TIMEOUT` overrides it)",
        get: |s| s.fetch.stall_timeout.map_or(Value::Null, Value::from),
        set: Some(|s, v| {
            s.fetch.stall_timeout = seconds(v)?;
            Ok(())
        }),
        per_project: false,
    },
    Key {
        name: "registries",
        about: "configured package registries (change them with `aam registry add|init|remove`)",
        get: |s| serde_json::to_value(&s.registries).unwrap_or(Value::Null),
        set: None,
        per_project: false,
    },
];

fn set_default_platforms(settings: &mut Settings, value: &str) -> Result<()> {
    let mut platforms = Vec::new();
    for name in value.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let platform = Platform::parse(name).ok_or_else(|| {
            Error::invalid_argument(format!("`{name}` is not a platform")).with_hint(crate::agents::unknown_hint())
        })?;
        platforms.push(platform.as_str().to_string());
    }
    platforms.sort();
    platforms.dedup();
    settings.default_platforms = platforms;
    Ok(())
}

/// A severity threshold setting: `info`, `warn`, `high` or `off`; empty unsets it.
fn audit_level(value: &str) -> Result<Option<String>> {
    let value = value.trim().to_ascii_lowercase();
    if value.is_empty() {
        return Ok(None);
    }
    crate::audit::Threshold::parse(&value)
        .map(|_| Some(value.clone()))
        .ok_or_else(|| {
            Error::invalid_argument(format!("`{value}` is not a severity")).with_hint("use info, warn, high or off")
        })
}

/// A time limit setting: whole seconds, at least 1; empty unsets it.
fn seconds(value: &str) -> Result<Option<u64>> {
    let value = value.trim();
    if value.is_empty() {
        return Ok(None);
    }
    match value.parse::<u64>() {
        Ok(secs) if secs >= 1 => Ok(Some(secs)),
        _ => Err(Error::invalid_argument(format!("`{value}` is not a number of seconds"))
            .with_hint("use a whole number of seconds, at least 1 (empty to unset)")),
    }
}

fn key(name: &str) -> Result<&'static Key> {
    KEYS.iter().find(|k| k.name == name).ok_or_else(|| {
        let known: Vec<String> = KEYS.iter().map(|k| format!("`{}`", k.name)).collect();
        Error::invalid_argument(format!("`{name}` is not a setting"))
            .with_hint(format!("settings: {}", known.join(", ")))
    })
}

/// Input of `aam_config_get`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfigGetInput {
    /// One setting (default: all of them).
    #[serde(default)]
    pub key: Option<String>,
}

/// Where a setting's effective value comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SettingOrigin {
    /// The project's `.aam/config.yaml` (it wins over the home's).
    Project,
    /// `$AAM_HOME/config.yaml`.
    Home,
    /// Set nowhere: the built-in default.
    Default,
}

impl SettingOrigin {
    /// The origin as written in output.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Project => "project",
            Self::Home => "home",
            Self::Default => "default",
        }
    }
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
            Some(name) => vec![key(name)?],
            None => KEYS.iter().collect(),
        };
        let project_path = project_settings_path(&crate::project::root(&ctx.cwd));
        let project = read_settings(&project_path)?;
        let home_path = ctx.home.settings_path();
        Ok(ConfigGetOutput {
            path: home_path.display().to_string(),
            settings: keys
                .into_iter()
                .map(|k| {
                    let (value, origin, origin_path) = match (k.get)(&project) {
                        v if k.per_project && is_set(&v) => (v, SettingOrigin::Project, Some(&project_path)),
                        _ => match (k.get)(&settings) {
                            v if is_set(&v) => (v, SettingOrigin::Home, Some(&home_path)),
                            v => (v, SettingOrigin::Default, None),
                        },
                    };
                    Setting {
                        key: k.name.to_string(),
                        value,
                        origin,
                        origin_path: origin_path.map(|p| p.display().to_string()),
                        description: k.about.to_string(),
                        settable: k.set.is_some(),
                    }
                })
                .collect(),
        })
    }
}

/// Whether a settings value is set (an empty list or nothing means the default).
fn is_set(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Array(items) => !items.is_empty(),
        _ => true,
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
    const ERRORS: &'static [ErrorCode] = &[ErrorCode::SettingsInvalid];
    const CONSTRAINTS: &'static [&'static str] = &[
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
        let key = key(&input.key)?;
        let set = key.set.ok_or_else(|| {
            Error::invalid_argument(format!("`{}` cannot be set here", key.name)).with_hint(key.about)
        })?;
        let mut settings = ctx.home.load_settings()?;
        let previous = (key.get)(&settings);
        set(&mut settings, &input.value)?;
        ctx.home.save_settings(&settings)?;
        let project_path = project_settings_path(&crate::project::root(&ctx.cwd));
        let shadowed_by = (key.per_project && is_set(&(key.get)(&read_settings(&project_path)?)))
            .then(|| project_path.display().to_string());
        Ok(ConfigSetOutput {
            key: key.name.to_string(),
            previous,
            value: (key.get)(&settings),
            shadowed_by,
        })
    }
}

/// Input of `aam_init`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InitInput {
    /// Platforms installs deploy to by default (empty: the ones the project already uses).
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
    const DESCRIPTION: &'static str = "Set aam up for the current project: detect the agents it uses by the agent table's project markers (`.cursor/`, `.claude/` or `CLAUDE.md`, `.github/`, `.codex/` or `AGENTS.md`, `.windsurf/`, `GEMINI.md`, ...; see `aam_agents`), save them (or the ones given) as the project's `default_platforms` in `.aam/config.yaml` (they win over the home's setting), create the catalog, and optionally register the built-in default sources. Safe to run again. Next: `aam_source_add` or `aam_source_update`.";
    const RISK: Risk = Risk::Write;
    const IDEMPOTENT: bool = true;
    const ERRORS: &'static [ErrorCode] = &[ErrorCode::SettingsInvalid];
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
        let root = crate::project::root(&ctx.cwd);
        let detected = detect_platforms(&root);
        let chosen = if input.platforms.is_empty() {
            detected.iter().map(|(p, _)| *p).collect()
        } else {
            input.platforms
        };
        let settings_path = project_settings_path(&root);
        ctx.check_path(&settings_path, ".aam/config.yaml")?;
        let mut settings = read_settings(&settings_path)?;
        let mut names: Vec<String> = chosen.iter().map(|p| p.as_str().to_string()).collect();
        names.sort();
        names.dedup();
        settings.default_platforms = names.clone();
        write_settings(&settings_path, &settings)?;
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
