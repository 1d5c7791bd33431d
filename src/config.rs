//! Where aam keeps its state: `AAM_HOME` (default `~/.aam`).
//!
//! `AAM_HOME` holds `catalog.db` (the SQLite catalog), `cache/git/` (one bare
//! repository per remote) and `config.yaml` (settings). Nothing here touches the
//! catalog or git; it names paths and measures the files under them.
//! [`keys`] is the table of settings `aam config` reads and sets.

pub mod keys;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorCode, Result};

/// The environment variable that overrides the home folder.
pub const HOME_ENV: &str = "AAM_HOME";

/// The folder holding aam's catalog, caches and settings.
#[derive(Debug, Clone)]
pub struct AamHome {
    root: PathBuf,
}

impl AamHome {
    /// Resolves `AAM_HOME`, falling back to `~/.aam`.
    pub fn from_env() -> Result<Self> {
        match std::env::var_os(HOME_ENV) {
            Some(value) if !value.is_empty() => Ok(Self::at(PathBuf::from(value))),
            _ => std::env::home_dir()
                .map(|home| Self::at(home.join(".aam")))
                .ok_or_else(|| {
                    Error::new(ErrorCode::InvalidArgument, "cannot find the home folder")
                        .with_hint("set `AAM_HOME` to the folder aam should keep its catalog in")
                }),
        }
    }

    /// A home at an explicit folder (made absolute against the working directory).
    pub fn at(root: PathBuf) -> Self {
        let root = std::path::absolute(&root).unwrap_or(root);
        Self { root }
    }

    /// The home folder itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The SQLite catalog file.
    pub fn catalog_path(&self) -> PathBuf {
        self.root.join("catalog.db")
    }

    /// The folder of bare git repositories, one per remote.
    pub fn git_cache_dir(&self) -> PathBuf {
        self.root.join("cache").join("git")
    }

    /// The folder of the cached repositories' lock files (see `sources::cache::lock`).
    pub fn locks_dir(&self) -> PathBuf {
        self.root.join("locks")
    }

    /// The catalog file's identity (device, inode), `None` when there is
    /// none: a process that keeps the catalog open tells by it that the file
    /// at the path was replaced.
    pub fn catalog_identity(&self) -> Option<(u64, u64)> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(self.catalog_path()).ok()?;
        Some((meta.dev(), meta.ino()))
    }

    /// Sockets of running aam processes that answer other aam processes
    /// (a project's watcher, see [`crate::project::ask`]).
    pub fn run_dir(&self) -> PathBuf {
        self.root.join("run")
    }

    /// The bearer token file `aam mcp serve --transport http` generates.
    pub fn mcp_token_path(&self) -> PathBuf {
        self.root.join("mcp-token")
    }

    /// The settings file.
    pub fn settings_path(&self) -> PathBuf {
        self.root.join("config.yaml")
    }

    /// Reads the settings; a missing file means defaults.
    pub fn load_settings(&self) -> Result<Settings> {
        let path = self.settings_path();
        parse_settings(&path, crate::paths::read_bounded(&path, MAX_SETTINGS))
    }

    /// Writes the settings atomically.
    pub fn save_settings(&self, settings: &Settings) -> Result<()> {
        write_settings(&self.settings_path(), settings)
    }
}

/// A project's own settings file, `<project>/.aam/config.yaml` (written by
/// `aam init`); its `default_platforms` win over the home's.
pub fn project_settings_path(project_root: &Path) -> PathBuf {
    project_root.join(".aam").join("config.yaml")
}

/// Reads a project's settings file (it may come with a cloned repository, so
/// it is never read through a link); a missing file means defaults.
pub fn read_settings(path: &Path) -> Result<Settings> {
    parse_settings(path, crate::paths::read_plain(path, MAX_SETTINGS))
}

/// The settings a read of `path` gave: defaults when the file is absent.
fn parse_settings(path: &Path, read: std::io::Result<Option<Vec<u8>>>) -> Result<Settings> {
    let invalid = |why: String| {
        Error::new(
            ErrorCode::SettingsInvalid,
            format!("the settings file `{}` is invalid: {why}", path.display()),
        )
        .with_hint("fix the file by hand, or delete it to start from the defaults")
    };
    let bytes = match read {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Ok(Settings::default()),
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
            return Err(Error::new(
                ErrorCode::SettingsInvalid,
                format!("the settings file `{}` is refused: {e}", path.display()),
            )
            .with_hint("aam reads settings only from a plain file (in a project, never through a link); replace it with a plain `config.yaml` or delete it"));
        }
        Err(e) => return Err(Error::io("read", path, e)),
    };
    let text = String::from_utf8(bytes).map_err(|_| invalid("it is not UTF-8 text".to_string()))?;
    // Bounded before the YAML parser sees it.
    crate::yaml::check(&text, MAX_SETTINGS as usize).map_err(|refusal| invalid(format!("it {refusal}")))?;
    serde_yaml_ng::from_str(&text).map_err(|e| invalid(without_values(&e.to_string())))
}

/// A settings parse error without the value it quotes (`invalid type:
/// string "ghp_..."`): a settings file may hold a token, and errors end up
/// in terminals and CI logs.
fn without_values(message: &str) -> String {
    for kind in ["invalid type", "invalid value", "invalid length"] {
        // After the field's path (`audit.block: invalid type: ...`).
        if let Some(start) = message.find(&format!("{kind}: ")) {
            let field = &message[..start];
            return match message.rfind(", expected ") {
                Some(at) if at > start => format!("{field}{kind}{}", &message[at..]),
                _ => format!("{field}{kind}"),
            };
        }
    }
    message.to_string()
}

/// A settings value as an error shows it: a short plain word as it is
/// (`hgih`: a typo to fix), anything else by its length alone, since a
/// settings file may hold a token and errors end up in CI logs.
pub fn shown_value(value: &str) -> String {
    let word = value.len() <= 24
        && value
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    match word {
        true => format!("`{value}`"),
        false => format!("a value of {} characters", value.chars().count()),
    }
}

/// Largest settings file handed to the YAML parser, in bytes.
const MAX_SETTINGS: u64 = 1024 * 1024;

/// Writes a settings file atomically.
pub fn write_settings(path: &Path, settings: &Settings) -> Result<()> {
    let text =
        serde_yaml_ng::to_string(settings).map_err(|e| Error::internal(format!("cannot encode the settings: {e}")))?;
    crate::atomic::write_file(path, text.as_bytes())
}

/// What `config.yaml` holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settings {
    /// Package registries, in the order they were added.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub registries: Vec<RegistrySetting>,
    /// Platforms `aam install` deploys to when none is named.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub default_platforms: Vec<String>,
    /// The install policy over content-audit findings (`docs/audit.md`).
    #[serde(default, skip_serializing_if = "AuditSettings::is_unset")]
    pub audit: AuditSettings,
    /// Time limits of remote fetches (`docs/sources.md`).
    #[serde(default, skip_serializing_if = "FetchSettings::is_unset")]
    pub fetch: FetchSettings,
    /// How commands treat the project they run in (`docs/search.md`).
    #[serde(default, skip_serializing_if = "ProjectSettings::is_unset")]
    pub project: ProjectSettings,
    /// Keys this aam does not know (written by a newer one, or by hand): kept
    /// as they are when the file is rewritten.
    #[serde(flatten)]
    pub other: BTreeMap<String, serde_yaml_ng::Value>,
}

/// `project.auto_watch`: from how many folders and files checked per call a
/// command starts a watcher of its project (`0`: never).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectSettings {
    /// The number (default [`crate::project::spawn::DEFAULT_AUTO_WATCH`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_watch: Option<u64>,
    /// Keys this aam does not know, kept as they are.
    #[serde(flatten)]
    pub other: BTreeMap<String, serde_yaml_ng::Value>,
}

impl ProjectSettings {
    /// Whether it is unset.
    pub fn is_unset(&self) -> bool {
        self.auto_watch.is_none() && self.other.is_empty()
    }
}

/// `fetch.timeout` and `fetch.stall_timeout`, in whole seconds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FetchSettings {
    /// The whole fetch, retries included (default 30).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
    /// The longest wait for the server's next bytes (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stall_timeout: Option<u64>,
    /// Keys this aam does not know, kept as they are.
    #[serde(flatten)]
    pub other: BTreeMap<String, serde_yaml_ng::Value>,
}

impl FetchSettings {
    /// Whether neither is set.
    pub fn is_unset(&self) -> bool {
        self.timeout.is_none() && self.stall_timeout.is_none() && self.other.is_empty()
    }
}

/// `audit.block` and `audit.warn`: severities (`info`, `warn`, `high`, or `off`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditSettings {
    /// Installs refuse artifacts with findings at or above this (default `high`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block: Option<String>,
    /// Installs warn about findings at or above this (default `warn`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warn: Option<String>,
    /// Keys this aam does not know, kept as they are.
    #[serde(flatten)]
    pub other: BTreeMap<String, serde_yaml_ng::Value>,
}

impl AuditSettings {
    /// Whether neither is set.
    pub fn is_unset(&self) -> bool {
        self.block.is_none() && self.warn.is_none() && self.other.is_empty()
    }
}

/// One configured registry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegistrySetting {
    /// Unique name.
    pub name: String,
    /// `file:///abs/path` of a local registry.
    pub url: String,
    /// Used when a command names no registry.
    #[serde(default)]
    pub default: bool,
}

impl RegistrySetting {
    /// The URL as it may be shown: a hand-written one may hold credentials
    /// (`https://user:token@host/...`), which no listing, setting read or MCP
    /// resource prints.
    pub fn shown_url(&self) -> String {
        // A local registry's URL has no authority to hide: its path may hold `@` or `?`.
        match self.url.strip_prefix("file://") {
            Some(path) if path.starts_with('/') => self.url.clone(),
            _ => crate::sources::spec::redact(&self.url),
        }
    }

    /// The setting as it may be shown ([`RegistrySetting::shown_url`]).
    pub fn shown(&self) -> Self {
        Self {
            url: self.shown_url(),
            ..self.clone()
        }
    }
}

impl Settings {
    /// The keys this aam does not know (`audit.blok`), as dotted names: a
    /// newer aam's, kept, or a typo, which `aam doctor` points out.
    pub fn unknown_keys(&self) -> Vec<String> {
        let nested = [
            ("audit", &self.audit.other),
            ("fetch", &self.fetch.other),
            ("project", &self.project.other),
        ];
        let mut keys: Vec<String> = self.other.keys().cloned().collect();
        for (section, other) in nested {
            keys.extend(other.keys().map(|k| format!("{section}.{k}")));
        }
        keys.sort();
        keys
    }

    /// The registry called `name`, or the default one (or the only one) for `None`.
    pub fn registry(&self, name: Option<&str>) -> Result<&RegistrySetting> {
        let found = match name {
            Some(name) => self.registries.iter().find(|r| r.name == name),
            None => self
                .registries
                .iter()
                .find(|r| r.default)
                .or_else(|| (self.registries.len() == 1).then(|| &self.registries[0])),
        };
        found.ok_or_else(|| {
            let known: Vec<String> = self.registries.iter().map(|r| format!("`{}`", r.name)).collect();
            let message = match name {
                Some(name) => format!("no registry named `{name}`"),
                None if self.registries.is_empty() => "no registry is configured".to_string(),
                None => "no default registry is set and several are configured".to_string(),
            };
            let hint = match (known.is_empty(), name) {
                (true, _) => "create one with `aam registry init <path> --default`".to_string(),
                (false, Some(_)) => format!("configured registries: {}", known.join(", ")),
                (false, None) => format!(
                    "configured registries: {}; pass `--registry <name>` or mark one with `--default`",
                    known.join(", ")
                ),
            };
            Error::new(ErrorCode::RegistryNotFound, message).with_hint(hint)
        })
    }
}

/// Size of the file at `path` (a link is not followed); 0 when missing.
pub fn file_size(path: &Path) -> u64 {
    std::fs::symlink_metadata(path).map(|m| m.len()).unwrap_or(0)
}

/// Bytes of every file under `dir` (links not followed); 0 when missing.
pub fn dir_size(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.file_type() {
            Ok(t) if t.is_dir() => dir_size(&entry.path()),
            Ok(_) => entry.metadata().map(|m| m.len()).unwrap_or(0),
            Err(_) => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A project's settings are never read through a link (a cloned repository
    /// can point one at `~/.netrc`), nor from a FIFO, which would block; the
    /// home's may be a link the user made. What is refused is never echoed.
    #[test]
    fn settings_come_from_plain_files_and_a_project_never_links_them() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("netrc");
        std::fs::write(&secret, "machine github.com password ghp_SECRET\n").unwrap();
        let project = dir.path().join("project/.aam");
        std::fs::create_dir_all(&project).unwrap();
        std::os::unix::fs::symlink(&secret, project.join("config.yaml")).unwrap();
        let err = read_settings(&project.join("config.yaml")).unwrap_err();
        assert_eq!(err.code(), ErrorCode::SettingsInvalid);
        assert!(!err.message().contains("SECRET"), "{}", err.message());

        let fifo = dir.path().join("fifo.yaml");
        crate::paths::make_fifo(&fifo);
        assert_eq!(read_settings(&fifo).unwrap_err().code(), ErrorCode::SettingsInvalid);
        let home = AamHome::at(dir.path().join("home"));
        std::fs::create_dir_all(home.root()).unwrap();
        std::os::unix::fs::symlink(&fifo, home.settings_path()).unwrap();
        assert_eq!(home.load_settings().unwrap_err().code(), ErrorCode::SettingsInvalid);

        let kept = dir.path().join("dotfiles.yaml");
        std::fs::write(&kept, "default_platforms: [cursor]\n").unwrap();
        std::fs::remove_file(home.settings_path()).unwrap();
        std::os::unix::fs::symlink(&kept, home.settings_path()).unwrap();
        assert_eq!(home.load_settings().unwrap().default_platforms, ["cursor"]);

        std::fs::write(&kept, b"default_platforms: [\xff]\n").unwrap();
        let err = home.load_settings().unwrap_err();
        assert_eq!(err.code(), ErrorCode::SettingsInvalid);
        assert!(err.message().ends_with("it is not UTF-8 text"), "{}", err.message());
    }

    /// A value of the wrong type is named by where it is, never quoted.
    #[test]
    fn settings_errors_do_not_quote_values() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.yaml");
        std::fs::write(&path, "default_platforms: ghp_PROJECTSECRET\n").unwrap();
        let err = read_settings(&path).unwrap_err();
        assert!(!err.message().contains("SECRET"), "{}", err.message());
        assert!(
            err.message().contains("invalid type, expected a sequence"),
            "{}",
            err.message()
        );
        assert!(err.message().contains("line 1"), "{}", err.message());
        assert_eq!(without_values("missing field `x`"), "missing field `x`");
        assert_eq!(shown_value("hgih"), "`hgih`");
        assert_eq!(shown_value("ghp_SECRETAAAA"), "a value of 14 characters");
    }

    /// A key this aam does not know survives a rewrite, at the top and in a
    /// section, and is named for `aam doctor`.
    #[test]
    fn unknown_keys_are_kept_when_the_settings_are_rewritten() {
        let dir = tempfile::tempdir().unwrap();
        let home = AamHome::at(dir.path().join("home"));
        std::fs::create_dir_all(home.root()).unwrap();
        std::fs::write(
            home.settings_path(),
            "future: {mode: fast}\naudit:\n  block: warn\n  blok: high\n",
        )
        .unwrap();
        let mut settings = home.load_settings().unwrap();
        assert_eq!(settings.unknown_keys(), ["audit.blok", "future"]);
        settings.default_platforms = vec!["claude".to_string()];
        home.save_settings(&settings).unwrap();
        let again = home.load_settings().unwrap();
        assert_eq!(again.unknown_keys(), ["audit.blok", "future"]);
        assert_eq!(again.audit.block.as_deref(), Some("warn"));
        assert_eq!(again.default_platforms, ["claude"]);
    }

    #[test]
    fn deep_settings_are_refused_before_the_yaml_parser() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.yaml");
        std::fs::write(&path, format!("default_platforms: {}\n", "[".repeat(100_000))).unwrap();
        let err = read_settings(&path).unwrap_err();
        assert_eq!(err.code(), ErrorCode::SettingsInvalid);
        assert!(
            err.message().ends_with("is invalid: it nests deeper than 64 levels"),
            "{}",
            err.message()
        );
        std::fs::write(&path, "default_platforms: [claude]\n").unwrap();
        read_settings(&path).unwrap();
    }

    #[test]
    fn sizes_count_every_file_below_and_nothing_missing() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        std::fs::write(dir.path().join("a/one"), "12345").unwrap();
        std::fs::write(dir.path().join("a/b/two"), "123").unwrap();
        assert_eq!(dir_size(dir.path()), 8);
        assert_eq!(file_size(&dir.path().join("a/one")), 5);
        assert_eq!(dir_size(&dir.path().join("absent")), 0);
        assert_eq!(file_size(&dir.path().join("absent")), 0);
    }
}
