//! The settings aam knows: each key's meaning, how it reads from and writes to
//! [`Settings`], the validation of a new value, and where an effective value
//! comes from (the project's `.aam/config.yaml` wins over `$AAM_HOME/config.yaml`
//! for the keys a project may set).

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::Settings;
use crate::error::{Error, Result};
use crate::scan::Platform;

/// One setting: its key, what it means, how to read it and how to set it.
pub struct Key {
    /// Its name (`audit.block`).
    pub name: &'static str,
    /// What it does.
    pub about: &'static str,
    get: fn(&Settings) -> Value,
    /// The value when set nowhere.
    default: fn() -> Value,
    /// `None` for settings other commands own.
    set: Option<fn(&mut Settings, &str) -> Result<()>>,
    /// Whether a project's `.aam/config.yaml` can set it too (and then wins).
    pub per_project: bool,
}

/// Every setting, in the order they are listed.
pub const KEYS: &[Key] = &[
    Key {
        name: "default_platforms",
        about: "platforms `aam install` deploys to when none is named (comma-separated agent ids such as cursor, claude, copilot, codex, gemini-cli (`aam agents` lists them); empty to detect from the project)",
        get: |s| Value::from(s.default_platforms.clone()),
        default: || Value::from(Vec::<String>::new()),
        set: Some(set_default_platforms),
        per_project: true,
    },
    Key {
        name: "audit.block",
        about: "installs refuse artifacts with content-audit findings at or above this severity (info, warn, high, off; default high)",
        get: |s| s.audit.block.clone().map_or(Value::Null, Value::from),
        default: || Value::from(crate::audit::Severity::High.as_str()),
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
        default: || Value::from(crate::audit::Severity::Warn.as_str()),
        set: Some(|s, v| {
            s.audit.warn = audit_level(v)?;
            Ok(())
        }),
        per_project: true,
    },
    Key {
        name: "fetch.timeout",
        about: "seconds a remote fetch may take in all, retries included (a whole number from 1 to 86400; default 30; `AAM_FETCH_TIMEOUT` overrides it)",
        get: |s| s.fetch.timeout.map_or(Value::Null, Value::from),
        default: || Value::from(crate::sources::git::FetchLimits::DEFAULT_TOTAL),
        set: Some(|s, v| {
            s.fetch.timeout = seconds(v)?;
            Ok(())
        }),
        per_project: false,
    },
    Key {
        name: "fetch.stall_timeout",
        about: "seconds a remote fetch waits for the server's next bytes before it gives up on the attempt (a whole number from 1 to 86400; default 10; `AAM_FETCH_STALL_TIMEOUT` overrides it)",
        get: |s| s.fetch.stall_timeout.map_or(Value::Null, Value::from),
        default: || Value::from(crate::sources::git::FetchLimits::DEFAULT_STALL),
        set: Some(|s, v| {
            s.fetch.stall_timeout = seconds(v)?;
            Ok(())
        }),
        per_project: false,
    },
    Key {
        name: "project.auto_watch",
        about: "a command that checks this many folders and files of its project or more (no watcher answering) starts `aam watch` in the background for the next commands (a whole number; 0 never starts one; default 20000; `AAM_PROJECT_AUTO_WATCH` overrides it)",
        get: |s| s.project.auto_watch.map_or(Value::Null, Value::from),
        default: || Value::from(crate::project::spawn::DEFAULT_AUTO_WATCH),
        set: Some(|s, v| {
            s.project.auto_watch = count(v)?;
            Ok(())
        }),
        per_project: false,
    },
    Key {
        name: "registries",
        about: "configured package registries (change them with `aam registry add|init|remove`)",
        get: |s| {
            let shown: Vec<_> = s.registries.iter().map(|r| r.shown()).collect();
            serde_json::to_value(shown).unwrap_or(Value::Null)
        },
        default: || Value::from(Vec::<Value>::new()),
        set: None,
        per_project: false,
    },
];

fn set_default_platforms(settings: &mut Settings, value: &str) -> Result<()> {
    let mut platforms = Vec::new();
    for name in value.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let platform = Platform::parse(name).ok_or_else(|| {
            Error::invalid_argument(format!("`{name}` is not a platform")).with_hint(crate::agents::unknown_hint(name))
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

/// A time limit setting: whole seconds, from 1 to a day; empty unsets it.
fn seconds(value: &str) -> Result<Option<u64>> {
    let value = value.trim();
    if value.is_empty() {
        return Ok(None);
    }
    let most = crate::sources::git::FetchLimits::MAX_SECONDS;
    match value.parse::<u64>() {
        Ok(secs) if (1..=most).contains(&secs) => Ok(Some(secs)),
        _ => Err(
            Error::invalid_argument(format!("`{value}` is not a number of seconds from 1 to {most}")).with_hint(
                format!("use a whole number of seconds, from 1 to {most} (empty to unset)"),
            ),
        ),
    }
}

/// A count setting: a whole number, `0` included; empty unsets it.
fn count(value: &str) -> Result<Option<u64>> {
    let value = value.trim();
    if value.is_empty() {
        return Ok(None);
    }
    value.parse::<u64>().map(Some).map_err(|_| {
        Error::invalid_argument(format!("`{value}` is not a whole number"))
            .with_hint("use a whole number such as 20000, 0 to turn it off (empty to unset)")
    })
}

/// The setting named `name`.
pub fn key(name: &str) -> Result<&'static Key> {
    KEYS.iter().find(|k| k.name == name).ok_or_else(|| {
        let known: Vec<String> = KEYS.iter().map(|k| format!("`{}`", k.name)).collect();
        let closest = crate::error::closest_name(name, KEYS.iter().map(|k| k.name));
        let guess = closest.map_or(String::new(), |key| format!("did you mean `{key}`? "));
        Error::invalid_argument(format!("`{name}` is not a setting"))
            .with_hint(format!("{guess}settings: {}", known.join(", ")))
    })
}

impl Key {
    /// Its value in `settings` (`null` or an empty list when unset).
    pub fn get(&self, settings: &Settings) -> Value {
        (self.get)(settings)
    }

    /// Its value when set nowhere.
    pub fn default_value(&self) -> Value {
        (self.default)()
    }

    /// Whether `aam config set` can change it (others are owned by other commands).
    pub fn settable(&self) -> bool {
        self.set.is_some()
    }

    /// Whether changing it from `before` to `after` weakens the content audit:
    /// `audit.block` or `audit.warn` moved to a laxer threshold (`off` the
    /// laxest; an unset one counts as its default).
    pub fn weakens_audit(&self, before: &Settings, after: &Settings) -> bool {
        if !self.name.starts_with("audit.") {
            return false;
        }
        let threshold = |settings: &Settings| {
            let value = Some(self.get(settings)).filter(is_set).unwrap_or_else(self.default);
            value.as_str().and_then(crate::audit::Threshold::parse)
        };
        match (threshold(after), threshold(before)) {
            (Some(after), Some(before)) => after.laxer_than(before),
            _ => false,
        }
    }

    /// Sets it in `settings` from text, validated first.
    pub fn set(&self, settings: &mut Settings, value: &str) -> Result<()> {
        let set = self.set.ok_or_else(|| {
            Error::invalid_argument(format!("`{}` cannot be set here", self.name)).with_hint(self.about)
        })?;
        set(settings, value)
    }

    /// Its effective value and where it comes from: the project's settings
    /// when it may be set per project and is set there, else the home's, else
    /// the default.
    pub fn effective(&self, project: &Settings, home: &Settings) -> (Value, SettingOrigin) {
        match self.get(project) {
            v if self.per_project && is_set(&v) => (v, SettingOrigin::Project),
            _ => match self.get(home) {
                v if is_set(&v) => (v, SettingOrigin::Home),
                _ => (self.default_value(), SettingOrigin::Default),
            },
        }
    }
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

/// Whether a settings value is set (an empty list or nothing means the default).
pub fn is_set(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Array(items) => !items.is_empty(),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_setting_gets_the_closest_name() {
        let hint = |name: &str| key(name).err().and_then(|e| e.hint().map(str::to_string)).unwrap();
        assert!(hint("default_platform").starts_with("did you mean `default_platforms`?"));
        assert!(hint("colour").starts_with("settings: "));
    }

    #[test]
    fn values_are_checked_before_they_are_set() {
        let mut settings = Settings::default();
        key("default_platforms")
            .unwrap()
            .set(&mut settings, "cursor, claude,cursor")
            .unwrap();
        assert_eq!(settings.default_platforms, ["claude", "cursor"]);
        assert!(key("default_platforms").unwrap().set(&mut settings, "emacs").is_err());
        key("fetch.timeout").unwrap().set(&mut settings, "45").unwrap();
        assert_eq!(settings.fetch.timeout, Some(45));
        for bad in ["0", "-1", "soon", "86401", "18446744073709551615"] {
            assert!(key("fetch.timeout").unwrap().set(&mut settings, bad).is_err(), "{bad}");
        }
        key("fetch.timeout").unwrap().set(&mut settings, "").unwrap();
        assert_eq!(settings.fetch.timeout, None);
        key("audit.block").unwrap().set(&mut settings, "WARN").unwrap();
        assert_eq!(settings.audit.block.as_deref(), Some("warn"));
        assert!(key("audit.block").unwrap().set(&mut settings, "loud").is_err());
        assert!(key("registries").unwrap().set(&mut settings, "x").is_err());
        assert!(key("colour").is_err());
    }

    #[test]
    fn laxer_audit_thresholds_weaken_the_audit() {
        let block = key("audit.block").unwrap();
        let changed = |from: &str, to: &str| {
            let mut before = Settings::default();
            block.set(&mut before, from).unwrap();
            let mut after = before.clone();
            block.set(&mut after, to).unwrap();
            block.weakens_audit(&before, &after)
        };
        for (from, to) in [
            ("", "off"),
            ("high", "off"),
            ("warn", "high"),
            ("info", ""),
            ("warn", ""),
        ] {
            assert!(changed(from, to), "{from:?} -> {to:?}");
        }
        for (from, to) in [
            ("", "high"),
            ("", "warn"),
            ("off", "info"),
            ("high", "high"),
            ("off", "off"),
        ] {
            assert!(!changed(from, to), "{from:?} -> {to:?}");
        }
        let platforms = key("default_platforms").unwrap();
        let mut after = Settings::default();
        platforms.set(&mut after, "claude").unwrap();
        assert!(!platforms.weakens_audit(&Settings::default(), &after));
    }

    #[test]
    fn a_project_value_wins_only_for_keys_a_project_may_set() {
        let mut project = Settings::default();
        let mut home = Settings::default();
        let platforms = key("default_platforms").unwrap();
        assert_eq!(platforms.effective(&project, &home).1, SettingOrigin::Default);
        platforms.set(&mut home, "cursor").unwrap();
        assert_eq!(platforms.effective(&project, &home).1, SettingOrigin::Home);
        platforms.set(&mut project, "claude").unwrap();
        assert_eq!(
            platforms.effective(&project, &home),
            (Value::from(vec!["claude"]), SettingOrigin::Project)
        );
        let timeout = key("fetch.timeout").unwrap();
        timeout.set(&mut project, "5").unwrap();
        assert_eq!(
            timeout.effective(&project, &home),
            (Value::from(30), SettingOrigin::Default),
            "set nowhere, the default value is shown, not null"
        );
        assert_eq!(
            key("audit.block").unwrap().effective(&project, &home).0,
            Value::from("high")
        );
    }
}
