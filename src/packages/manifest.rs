//! `aam.yaml`: the package manifest, its parsing and its validation.
//!
//! Validation walks the YAML as a generic value so that every problem is reported
//! at once, each with the path of the field it concerns (`artifacts.skills[0].path`).
//! Only a manifest without errors is turned into a [`Manifest`].

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_yaml_ng::Value;

use crate::scan::ArtifactKind;

/// The manifest's file name.
pub const MANIFEST_FILE: &str = "aam.yaml";

/// Longest description accepted, in characters.
pub const MAX_DESCRIPTION: usize = 256;

/// A package manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// `name` or `@scope/name`.
    pub name: String,
    /// Semantic version.
    pub version: String,
    /// What the package is for (at most 256 characters).
    pub description: String,
    /// Who made it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    /// SPDX license expression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub license: Option<String>,
    /// Source repository URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    /// Home page URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub homepage: Option<String>,
    /// Search keywords.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keywords: Vec<String>,
    /// The artifacts it contains, by type.
    pub artifacts: ManifestArtifacts,
    /// Other packages it needs: name to version constraint.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub dependencies: BTreeMap<String, String>,
    /// Platforms it is meant for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub platforms: Vec<String>,
    /// Where its artifacts came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Provenance>,
    /// Digests of every file in the package.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_checksums: Option<FileChecksums>,
}

/// Artifacts by type.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ManifestArtifacts {
    /// Skill folders.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skills: Vec<ManifestArtifact>,
    /// Agent files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<ManifestArtifact>,
    /// Prompt files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prompts: Vec<ManifestArtifact>,
    /// Instruction files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub instructions: Vec<ManifestArtifact>,
}

impl ManifestArtifacts {
    /// The list of one kind.
    pub fn of(&self, kind: ArtifactKind) -> &[ManifestArtifact] {
        match kind {
            ArtifactKind::Skill => &self.skills,
            ArtifactKind::Agent => &self.agents,
            ArtifactKind::Prompt => &self.prompts,
            ArtifactKind::Instruction => &self.instructions,
        }
    }

    /// The list of one kind, to add to.
    pub fn of_mut(&mut self, kind: ArtifactKind) -> &mut Vec<ManifestArtifact> {
        match kind {
            ArtifactKind::Skill => &mut self.skills,
            ArtifactKind::Agent => &mut self.agents,
            ArtifactKind::Prompt => &mut self.prompts,
            ArtifactKind::Instruction => &mut self.instructions,
        }
    }

    /// Every artifact with its kind, in type order.
    pub fn all(&self) -> impl Iterator<Item = (ArtifactKind, &ManifestArtifact)> {
        ArtifactKind::ALL
            .into_iter()
            .flat_map(move |k| self.of(k).iter().map(move |a| (k, a)))
    }

    /// How many there are.
    pub fn len(&self) -> usize {
        self.all().count()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One artifact in a package.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ManifestArtifact {
    /// Name, unique within its type.
    pub name: String,
    /// Path inside the package (a folder for skills, a file otherwise).
    pub path: String,
    /// One-line description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// Where a package's artifacts came from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Provenance {
    /// `local_project` or `remote_git`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_type: Option<String>,
    /// Repository or project URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_url: Option<String>,
    /// Branch, tag or commit the source followed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_ref: Option<String>,
    /// Folder of the repository the artifacts were taken from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_path: Option<String>,
    /// Commit the files were read at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_commit: Option<String>,
    /// When the source was fetched (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fetched_at: Option<String>,
}

impl Provenance {
    /// A git repository at one commit, and nothing that changes between fetches
    /// (so one commit always makes the same manifest).
    pub fn remote_git_at(url: &str, commit: &str) -> Self {
        Self {
            source_type: Some("remote_git".to_string()),
            source_url: Some(url.to_string()),
            source_commit: Some(commit.to_string()),
            ..Self::default()
        }
    }
}

/// Digests of the package's files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileChecksums {
    /// Always `blake3`.
    pub algorithm: String,
    /// Package path to hex digest.
    pub files: BTreeMap<String, String>,
}

/// One problem, with the field it concerns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Issue {
    /// Dotted path of the field (`artifacts.skills[0].path`), or `` for the file.
    pub field: String,
    /// What is wrong and how to fix it.
    pub message: String,
}

/// The outcome of checking a manifest's text.
#[derive(Debug, Clone, Default)]
pub struct Checked {
    /// The manifest, when there are no errors.
    pub manifest: Option<Manifest>,
    /// Problems that make it invalid.
    pub errors: Vec<Issue>,
    /// Problems worth knowing about.
    pub warnings: Vec<Issue>,
    /// Name and version, when readable, even if invalid.
    pub name: Option<String>,
    /// Version, when readable.
    pub version: Option<String>,
    /// Artifacts listed, counted even if invalid.
    pub artifact_count: usize,
}

impl Checked {
    fn error(&mut self, field: impl Into<String>, message: impl Into<String>) {
        self.errors.push(Issue {
            field: field.into(),
            message: message.into(),
        });
    }

    fn warn(&mut self, field: impl Into<String>, message: impl Into<String>) {
        self.warnings.push(Issue {
            field: field.into(),
            message: message.into(),
        });
    }
}

const KNOWN_KEYS: [&str; 13] = [
    "name",
    "version",
    "description",
    "author",
    "license",
    "repository",
    "homepage",
    "keywords",
    "artifacts",
    "dependencies",
    "platforms",
    "provenance",
    "file_checksums",
];

/// Largest manifest handed to the YAML parser, in bytes.
pub const MAX_MANIFEST: usize = 1024 * 1024;

/// A version a registry holds: semantic, without build metadata
/// (`1.0.0+build`), which semver ranks beside the version itself, so an exact
/// `1.0.0` would not name one archive and a second publish could stand in for
/// the first. (Packages aam assembles from a source's artifacts carry the
/// commit as build metadata; they are installed, never published.) The
/// refusal says why in words.
pub fn published_version(text: &str) -> std::result::Result<semver::Version, String> {
    let version = semver::Version::parse(text)
        .map_err(|e| format!("`{text}` is not a semantic version ({e}); use e.g. `1.0.0`"))?;
    if !version.build.is_empty() {
        return Err(format!(
            "`{text}` has build metadata (`+{}`), which does not make another version; use e.g. `{}`",
            version.build,
            semver::Version {
                build: semver::BuildMetadata::EMPTY,
                ..version.clone()
            }
        ));
    }
    Ok(version)
}

/// Checks manifest text, reporting every problem at once.
pub fn check(text: &str) -> Checked {
    let mut checked = Checked::default();
    if let Err(refusal) = crate::yaml::check(text, MAX_MANIFEST) {
        checked.error("", format!("`{MANIFEST_FILE}` {refusal}"));
        return checked;
    }
    let value: Value = match serde_yaml_ng::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            let at = e
                .location()
                .map(|l| format!(" at line {}", l.line()))
                .unwrap_or_default();
            checked.error("", format!("`{MANIFEST_FILE}` is not valid YAML{at}: {e}"));
            return checked;
        }
    };
    let Some(map) = value.as_mapping() else {
        checked.error("", format!("`{MANIFEST_FILE}` must be a mapping of fields"));
        return checked;
    };
    for key in map.keys() {
        match key.as_str() {
            Some(k) if KNOWN_KEYS.contains(&k) => {}
            Some(k) => checked.warn(k, format!("unknown field `{k}` is ignored")),
            None => checked.error("", "field names must be text"),
        }
    }
    let get = |key: &str| map.get(key);

    match get("name").map(Value::as_str) {
        Some(Some(name)) => {
            checked.name = Some(name.to_string());
            if let Err(message) = check_package_name(name) {
                checked.error("name", message);
            }
        }
        Some(None) => checked.error("name", "must be text"),
        None => checked.error("name", "is required"),
    }
    match get("version") {
        Some(v) => match scalar_text(v) {
            Some(version) => {
                checked.version = Some(version.clone());
                match semver::Version::parse(&version) {
                    Err(e) => checked.error(
                        "version",
                        format!("`{version}` is not a semantic version ({e}); use e.g. `1.0.0`"),
                    ),
                    // Installs from a folder take it; a registry does not.
                    Ok(_) => {
                        if let Err(why) = published_version(&version) {
                            checked.warn("version", format!("{why}: a registry refuses to publish it"));
                        }
                    }
                }
            }
            None => checked.error("version", "must be text such as `1.0.0`"),
        },
        None => checked.error("version", "is required"),
    }
    match get("description").map(Value::as_str) {
        Some(Some(d)) if d.trim().is_empty() => checked.error("description", "must not be empty"),
        Some(Some(d)) if d.chars().count() > MAX_DESCRIPTION => checked.error(
            "description",
            format!(
                "is {} characters; at most {MAX_DESCRIPTION} are allowed",
                d.chars().count()
            ),
        ),
        Some(Some(_)) => {}
        Some(None) => checked.error("description", "must be text"),
        None => checked.error("description", "is required"),
    }
    for key in ["author", "license", "repository", "homepage"] {
        if let Some(v) = get(key)
            && v.as_str().is_none()
        {
            checked.error(key, "must be text");
        }
    }
    for key in ["repository", "homepage"] {
        if let Some(url) = get(key).and_then(Value::as_str)
            && !(url.starts_with("https://") || url.starts_with("http://"))
        {
            checked.warn(key, format!("`{url}` is not an http(s) URL"));
        }
    }
    check_string_list(&mut checked, get("keywords"), "keywords", |_| Ok(()));
    check_string_list(
        &mut checked,
        get("platforms"),
        "platforms",
        |p| match crate::agents::Platform::parse(p) {
            Some(_) => Ok(()),
            None => Err(format!("`{p}` is not a platform; {}", crate::agents::unknown_hint(p))),
        },
    );
    check_artifacts(&mut checked, get("artifacts"));
    check_dependencies(&mut checked, get("dependencies"));
    check_provenance(&mut checked, get("provenance"));
    check_checksums(&mut checked, get("file_checksums"));

    if checked.errors.is_empty() {
        match serde_yaml_ng::from_value::<Manifest>(value) {
            Ok(manifest) => checked.manifest = Some(manifest),
            Err(e) => checked.error("", format!("cannot read the manifest: {e}")),
        }
    }
    checked
}

/// Versions may be written unquoted (`version: 1.0`), which YAML reads as a number.
fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn check_string_list(
    checked: &mut Checked,
    value: Option<&Value>,
    field: &str,
    each: impl Fn(&str) -> Result<(), String>,
) {
    let Some(value) = value else { return };
    let Some(items) = value.as_sequence() else {
        checked.error(field, "must be a list");
        return;
    };
    for (i, item) in items.iter().enumerate() {
        match item.as_str() {
            Some(text) => {
                if let Err(message) = each(text) {
                    checked.error(format!("{field}[{i}]"), message);
                }
            }
            None => checked.error(format!("{field}[{i}]"), "must be text"),
        }
    }
}

fn check_artifacts(checked: &mut Checked, value: Option<&Value>) {
    let Some(value) = value else {
        checked.error("artifacts", "is required and must list at least one artifact");
        return;
    };
    let Some(map) = value.as_mapping() else {
        checked.error(
            "artifacts",
            "must map types (skills, agents, prompts, instructions) to lists",
        );
        return;
    };
    for (key, list) in map {
        let Some(kind_key) = key.as_str() else {
            checked.error("artifacts", "types must be text");
            continue;
        };
        let field = format!("artifacts.{kind_key}");
        if !ArtifactKind::ALL.iter().any(|k| k.plural() == kind_key) {
            checked.error(
                &field,
                format!("`{kind_key}` is not a type; use skills, agents, prompts or instructions"),
            );
            continue;
        }
        let Some(items) = list.as_sequence() else {
            checked.error(&field, "must be a list");
            continue;
        };
        let mut names = std::collections::BTreeSet::new();
        for (i, item) in items.iter().enumerate() {
            checked.artifact_count += 1;
            let at = format!("{field}[{i}]");
            let Some(entry) = item.as_mapping() else {
                checked.error(&at, "must be a mapping with `name` and `path`");
                continue;
            };
            for key in entry.keys().filter_map(Value::as_str) {
                if !["name", "path", "description"].contains(&key) {
                    checked.warn(format!("{at}.{key}"), format!("unknown field `{key}` is ignored"));
                }
            }
            match entry.get("name").map(Value::as_str) {
                Some(Some(name)) => {
                    if let Err(message) = check_artifact_name(name) {
                        checked.error(format!("{at}.name"), message);
                    } else if !names.insert(name.to_string()) {
                        checked.error(format!("{at}.name"), format!("`{name}` appears twice in `{field}`"));
                    }
                }
                Some(None) => checked.error(format!("{at}.name"), "must be text"),
                None => checked.error(format!("{at}.name"), "is required"),
            }
            match entry.get("path").map(Value::as_str) {
                Some(Some(path)) => {
                    if let Err(message) = check_relative_path(path).and_then(|()| check_packed_path(path)) {
                        checked.error(format!("{at}.path"), message);
                    }
                }
                Some(None) => checked.error(format!("{at}.path"), "must be text"),
                None => checked.error(format!("{at}.path"), "is required"),
            }
            if let Some(d) = entry.get("description")
                && d.as_str().is_none()
                && !d.is_null()
            {
                checked.error(format!("{at}.description"), "must be text");
            }
        }
    }
    if checked.artifact_count == 0 {
        checked.error("artifacts", "must list at least one artifact");
    }
}

fn check_dependencies(checked: &mut Checked, value: Option<&Value>) {
    let Some(value) = value else { return };
    let Some(map) = value.as_mapping() else {
        checked.error("dependencies", "must map package names to version constraints");
        return;
    };
    for (name, constraint) in map {
        let Some(name) = name.as_str() else {
            checked.error("dependencies", "package names must be text");
            continue;
        };
        let field = format!("dependencies.{name}");
        if let Err(message) = check_package_name(name) {
            checked.error(&field, message);
        } else if checked.name.as_deref() == Some(name) {
            checked.error(&field, "a package does not depend on itself");
        }
        match scalar_text(constraint) {
            Some(text) => {
                if let Err(message) = parse_constraint(&text) {
                    checked.error(&field, message);
                }
            }
            None => checked.error(&field, "must be a version constraint such as `^1.2`"),
        }
    }
}

fn check_provenance(checked: &mut Checked, value: Option<&Value>) {
    let Some(value) = value else { return };
    let Some(map) = value.as_mapping() else {
        checked.error("provenance", "must be a mapping");
        return;
    };
    const FIELDS: [&str; 6] = [
        "source_type",
        "source_url",
        "source_ref",
        "source_path",
        "source_commit",
        "fetched_at",
    ];
    for (key, v) in map {
        let Some(key) = key.as_str() else { continue };
        let field = format!("provenance.{key}");
        if !FIELDS.contains(&key) {
            checked.warn(&field, format!("unknown field `{key}` is ignored"));
        } else if v.as_str().is_none() && !v.is_null() {
            checked.error(&field, "must be text");
        }
    }
}

fn check_checksums(checked: &mut Checked, value: Option<&Value>) {
    let Some(value) = value else { return };
    let Some(map) = value.as_mapping() else {
        checked.error("file_checksums", "must be a mapping with `algorithm` and `files`");
        return;
    };
    match map.get("algorithm").and_then(Value::as_str) {
        Some("blake3") => {}
        Some(other) => checked.error(
            "file_checksums.algorithm",
            format!("`{other}` is not supported; use `blake3`"),
        ),
        None => checked.error("file_checksums.algorithm", "is required (`blake3`)"),
    }
    match map.get("files").map(Value::as_mapping) {
        Some(Some(files)) => {
            for (path, digest) in files {
                let Some(path) = path.as_str() else { continue };
                let field = format!("file_checksums.files.{path}");
                if let Err(message) = check_relative_path(path) {
                    checked.error(&field, message);
                }
                let ok = digest
                    .as_str()
                    .is_some_and(|d| d.len() == 64 && d.chars().all(|c| c.is_ascii_hexdigit()));
                if !ok {
                    checked.error(&field, "must be a 64-character hex blake3 digest");
                }
            }
        }
        Some(None) => checked.error("file_checksums.files", "must map paths to digests"),
        None => checked.error("file_checksums.files", "is required"),
    }
}

/// Checks a package name: `name` or `@scope/name`, lowercase letters, digits and
/// hyphens (`_` also allowed in the scope). The error suggests a fixed name.
pub fn check_package_name(name: &str) -> Result<(), String> {
    if is_valid_package_name(name) {
        return Ok(());
    }
    if name.starts_with('@') && !name.contains('/') {
        return Err(format!("`{name}` needs a name after the scope: `@scope/name`"));
    }
    let mut message = format!(
        "`{name}` is not a valid package name: use lowercase letters, digits and hyphens (`name` or `@scope/name`)"
    );
    if let Some(fixed) = suggest_package_name(name) {
        message.push_str(&format!("; did you mean `{fixed}`?"));
    }
    Err(message)
}

fn is_valid_package_name(name: &str) -> bool {
    let (scope, bare) = match name.strip_prefix('@') {
        Some(rest) => match rest.split_once('/') {
            Some((scope, bare)) => (Some(scope), bare),
            None => return false,
        },
        None => (None, name),
    };
    let part_ok = |part: &str, extra: &str| {
        !part.is_empty()
            && part.len() <= 64
            && !part.starts_with('-')
            && !part.ends_with('-')
            && part
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || extra.contains(c))
    };
    scope.is_none_or(|s| part_ok(s, "_")) && part_ok(bare, "")
}

/// A valid package name close to `name`, when one can be made.
pub fn suggest_package_name(name: &str) -> Option<String> {
    let clean = |part: &str, keep_underscore: bool| {
        let mut out = String::new();
        for c in part.chars().flat_map(char::to_lowercase) {
            if c.is_ascii_lowercase() || c.is_ascii_digit() || (keep_underscore && c == '_') {
                out.push(c);
            } else if !out.ends_with('-') {
                out.push('-');
            }
        }
        out.trim_matches('-')
            .chars()
            .take(64)
            .collect::<String>()
            .trim_matches('-')
            .to_string()
    };
    let fixed = match name.strip_prefix('@').and_then(|rest| rest.split_once('/')) {
        Some((scope, bare)) => format!("@{}/{}", clean(scope, true), clean(bare, false)),
        None => clean(name, false),
    };
    (is_valid_package_name(&fixed) && fixed != name).then_some(fixed)
}

/// Checks an artifact name inside a package: it becomes a file or folder name.
pub fn check_artifact_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 128
        && !name.starts_with(['.', '-'])
        && name.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "`{name}` is not a valid artifact name: use letters, digits, `.`, `_` and `-`, not starting with `.` or `-`"
        ))
    }
}

/// A valid artifact name made from any display name (`C++ Guide` -> `c-guide`).
pub fn artifact_file_name(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() || c == '_' || c == '.' {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let out: String = out.trim_matches(|c| c == '-' || c == '.').chars().take(128).collect();
    if out.is_empty() { "artifact".to_string() } else { out }
}

/// Checks a path inside a package: relative, `/`-separated, no `..`.
pub fn check_relative_path(path: &str) -> Result<(), String> {
    if path.is_empty() {
        return Err("must not be empty".to_string());
    }
    if path.starts_with('/') || path.contains('\\') || path.chars().nth(1) == Some(':') {
        return Err(format!("`{path}` must be a relative path"));
    }
    if path.split('/').any(|part| part == "..") {
        return Err(format!("`{path}` must not contain `..`"));
    }
    Ok(())
}

/// Checks an artifact's path as packing lays files out: plain `/`-separated
/// parts (no `.`, no empty part, no trailing `/`), and nothing a packed
/// archive leaves out (hidden names, `.aam` files, build folders, the
/// manifest itself): a folder that validates must pack into an archive that
/// installs.
fn check_packed_path(path: &str) -> Result<(), String> {
    if path.split('/').any(|part| part.is_empty() || part == ".") {
        let plain: Vec<&str> = path
            .split('/')
            .filter(|part| !part.is_empty() && *part != ".")
            .collect();
        return Err(format!("`{path}` must be written plainly, as `{}`", plain.join("/")));
    }
    if path == MANIFEST_FILE || crate::packages::layout::left_out(path) {
        return Err(format!(
            "`{path}` is left out of archives (hidden names, `.aam` files, build folders and `{MANIFEST_FILE}` are never packed)"
        ));
    }
    Ok(())
}

/// Parses a dependency constraint: `*`, `1.2.3` (exactly that version), `=`, `>=`,
/// `>`, `<=`, `<`, `^`, `~`, and comma-joined combinations (all must hold).
/// The description `aam pkg init` writes for the package, to be replaced.
pub const PLACEHOLDER_DESCRIPTION: &str = "Describe what this package gives an agent.";

/// The description `aam pkg init` writes in its skill's `SKILL.md`, to be replaced.
pub const PLACEHOLDER_SKILL_DESCRIPTION: &str = "Describe when an agent should use this skill.";

pub fn parse_constraint(text: &str) -> Result<semver::VersionReq, String> {
    let text = text.trim();
    if text == "*" {
        return Ok(semver::VersionReq::STAR);
    }
    if text.is_empty() {
        return Err("no version, range or dist-tag is written (after `@`)".to_string());
    }
    let mut parts = Vec::new();
    for part in text.split(',') {
        let part = part.trim();
        if part.is_empty() {
            return Err(format!("`{text}` has an empty part between commas"));
        }
        let part = if part.starts_with(|c: char| c.is_ascii_digit()) {
            format!("={part}")
        } else {
            part.to_string()
        };
        let known = ["=", ">=", ">", "<=", "<", "^", "~"]
            .iter()
            .any(|op| part.starts_with(op));
        if !known {
            return Err(format!(
                "`{part}` is no version or range: write a version (`1.2.3`) or start with one of `=`, `>=`, `>`, `<=`, `<`, `^`, `~`"
            ));
        }
        parts.push(part);
    }
    semver::VersionReq::parse(&parts.join(", "))
        .map_err(|e| format!("`{text}` is not a version constraint ({e}); use e.g. `^1.2` or `>=1.0, <2.0`"))
}

/// The manifest as YAML text.
pub fn to_yaml(manifest: &Manifest) -> String {
    serde_yaml_ng::to_string(manifest).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const VALID: &str = "name: my-pkg\nversion: 1.0.0\ndescription: Useful things\nartifacts:\n  skills:\n    - name: pdf\n      path: skills/pdf\n";

    #[test]
    fn published_versions_are_semantic_without_build_metadata() {
        assert!(published_version("1.0.0-rc.1").is_ok());
        let why = published_version("1.0.0+zzz").unwrap_err();
        assert!(why.contains("build metadata") && why.contains("`1.0.0`"), "{why}");
        assert!(published_version("v1").is_err());
    }

    #[test]
    fn a_version_a_registry_refuses_is_a_warning() {
        let checked = check(&VALID.replace("1.0.0", "1.0.0+build.5"));
        assert!(checked.errors.is_empty(), "{:?}", checked.errors);
        assert!(
            checked
                .warnings
                .iter()
                .any(|w| w.field == "version" && w.message.contains("refuses to publish"))
        );
    }

    #[test]
    fn a_valid_manifest_reads_back() {
        let checked = check(VALID);
        assert!(checked.errors.is_empty(), "{:?}", checked.errors);
        let manifest = checked.manifest.unwrap();
        assert_eq!(manifest.artifacts.skills[0].path, "skills/pdf");
        assert_eq!(check(&to_yaml(&manifest)).manifest.unwrap(), manifest);
    }

    #[rstest]
    #[case("name: My_Pkg", "name", "did you mean `my-pkg`")]
    #[case("name: '@Team/x'", "name", "did you mean `@team/x`")]
    #[case("name: '@scope'", "name", "needs a name after the scope")]
    #[case("version: 1.0", "version", "not a semantic version")]
    #[case("version: [1]", "version", "must be text")]
    #[case("description: ''", "description", "must not be empty")]
    #[case("description: {}", "description", "must be text")]
    #[case("license: 3", "license", "must be text")]
    #[case("keywords: nope", "keywords", "must be a list")]
    #[case("platforms: [emacs]", "platforms[0]", "not a platform")]
    #[case("artifacts: {}", "artifacts", "at least one artifact")]
    #[case("artifacts: {widgets: []}", "artifacts.widgets", "not a type")]
    #[case("artifacts: {skills: [{name: a}]}", "artifacts.skills[0].path", "is required")]
    #[case(
        "artifacts: {skills: [{name: a, path: /abs}]}",
        "artifacts.skills[0].path",
        "relative"
    )]
    #[case("artifacts: {skills: [{name: a, path: ../up}]}", "artifacts.skills[0].path", "`..`")]
    #[case(
        "artifacts: {skills: [{name: a, path: ./skills/a/}]}",
        "artifacts.skills[0].path",
        "plainly, as `skills/a`"
    )]
    #[case(
        "artifacts: {skills: [{name: a, path: skills//a}]}",
        "artifacts.skills[0].path",
        "plainly"
    )]
    #[case(
        "artifacts: {skills: [{name: a, path: .git}]}",
        "artifacts.skills[0].path",
        "left out"
    )]
    #[case(
        "artifacts: {instructions: [{name: a, path: aam.yaml}]}",
        "artifacts.instructions[0].path",
        "left out"
    )]
    #[case(
        "artifacts: {agents: [{name: a, path: dist/a.md}]}",
        "artifacts.agents[0].path",
        "left out"
    )]
    #[case(
        "artifacts: {skills: [{name: a, path: a}, {name: a, path: b}]}",
        "artifacts.skills[1].name",
        "twice"
    )]
    #[case(
        "artifacts: {skills: [{name: .hidden, path: a}]}",
        "artifacts.skills[0].name",
        "not a valid artifact name"
    )]
    #[case("dependencies: {other: 'bogus'}", "dependencies.other", "is no version or range")]
    #[case("dependencies: {Bad_Name: '*'}", "dependencies.Bad_Name", "not a valid package name")]
    #[case("dependencies: {my-pkg: '*'}", "dependencies.my-pkg", "does not depend on itself")]
    #[case("provenance: [x]", "provenance", "must be a mapping")]
    #[case(
        "file_checksums: {algorithm: md5, files: {}}",
        "file_checksums.algorithm",
        "not supported"
    )]
    #[case(
        "file_checksums: {algorithm: blake3, files: {a: xyz}}",
        "file_checksums.files.a",
        "64-character"
    )]
    fn every_invalid_field_is_named(#[case] line: &str, #[case] field: &str, #[case] message: &str) {
        let mut map: serde_yaml_ng::Mapping = serde_yaml_ng::from_str(VALID).unwrap();
        let replacement: serde_yaml_ng::Mapping = serde_yaml_ng::from_str(line).unwrap();
        for (k, v) in replacement {
            map.insert(k, v);
        }
        let checked = check(&serde_yaml_ng::to_string(&map).unwrap());
        assert!(checked.manifest.is_none());
        let found = checked.errors.iter().find(|e| e.field == field);
        assert!(
            found.is_some_and(|e| e.message.contains(message)),
            "{line}: {:?}",
            checked.errors
        );
    }

    #[test]
    fn all_problems_at_once_and_warnings() {
        let checked = check("name: Bad Name\nversion: x\nextra: 1\nartifacts: {}\n");
        let fields: Vec<&str> = checked.errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["name", "version", "description", "artifacts"]);
        assert_eq!(checked.warnings[0].field, "extra");
        assert_eq!(checked.name.as_deref(), Some("Bad Name"));
        let broken = check("name: [unclosed");
        assert!(broken.errors[0].message.contains("not valid YAML"));
    }

    #[test]
    fn deep_manifests_are_refused_before_the_yaml_parser() {
        let deep = format!("{VALID}keywords: {}\n", "[".repeat(100_000));
        let checked = check(&deep);
        assert!(checked.manifest.is_none());
        assert_eq!(checked.errors[0].message, "`aam.yaml` nests deeper than 64 levels");
        assert!(check(VALID).errors.is_empty());
    }

    #[rstest]
    #[case("*", "9.9.9", true)]
    #[case("1.2.3", "1.2.3", true)]
    #[case("1.2.3", "1.2.4", false)]
    #[case("=1.2.3", "1.2.3", true)]
    #[case(">=1.2, <2", "1.9.0", true)]
    #[case(">=1.2, <2", "2.0.0", false)]
    #[case(">1.0.0", "1.0.0", false)]
    #[case("<=1.0.0", "1.0.0", true)]
    #[case("^1.2", "1.3.0", true)]
    #[case("~1.2", "1.3.0", false)]
    fn constraints(#[case] req: &str, #[case] version: &str, #[case] matches: bool) {
        let req = parse_constraint(req).unwrap();
        assert_eq!(req.matches(&semver::Version::parse(version).unwrap()), matches);
    }

    #[test]
    fn an_empty_constraint_says_nothing_is_written() {
        assert_eq!(
            parse_constraint(" ").unwrap_err(),
            "no version, range or dist-tag is written (after `@`)"
        );
        assert!(parse_constraint("1.0,").unwrap_err().contains("empty part"));
    }

    #[test]
    fn names_for_files() {
        assert_eq!(artifact_file_name("C++ Guide"), "c-guide");
        assert_eq!(artifact_file_name("review.v2"), "review.v2");
        assert_eq!(artifact_file_name("..."), "artifact");
        assert_eq!(suggest_package_name("my_pkg").as_deref(), Some("my-pkg"));
        assert_eq!(
            suggest_package_name("@my_team/Cool Thing").as_deref(),
            Some("@my_team/cool-thing")
        );
    }
}
