//! Detection rules: which files of a tree are skills, agents, prompts and instructions.
//!
//! Pure functions over paths and file contents; no git, no SQL, no I/O. The caller
//! walks a tree, calls [`detect`] on the file paths (relative to the scan root),
//! reads the main file of each detected artifact and calls [`analyze`] on its bytes.
//!
//! Invariants:
//! - a folder holding a `SKILL.md` is a skill and owns every file below it, except
//!   the subtrees of nested skills; owned files are never separate artifacts;
//! - results are sorted by kind, then path, so scans are deterministic;
//! - bad input (invalid YAML, non-UTF-8, empty or huge files) never fails: the
//!   artifact is still produced, with a warning.

pub mod frontmatter;

use std::collections::BTreeMap;

// Seeded per process, as std's, and several times faster on the paths of a
// 100,000-folder tree (detection hashed each path and folder a few times).
use foldhash::HashMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The largest part of a main file kept as text for display and search.
pub const TEXT_CAP: usize = 256 * 1024;

/// The four kinds of artifact aam catalogs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ArtifactKind {
    /// A folder with a `SKILL.md`.
    Skill,
    /// A subagent or chat mode definition.
    Agent,
    /// A prompt file or slash command.
    Prompt,
    /// Rules and instructions (`.mdc`, `*.instructions.md`, `CLAUDE.md`, ...).
    Instruction,
}

impl ArtifactKind {
    /// Every kind, in display order.
    pub const ALL: [ArtifactKind; 4] = [Self::Skill, Self::Agent, Self::Prompt, Self::Instruction];

    /// Singular name, as stored in the catalog.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Skill => "skill",
            Self::Agent => "agent",
            Self::Prompt => "prompt",
            Self::Instruction => "instruction",
        }
    }

    /// Plural name, as used in JSON groupings.
    pub fn plural(self) -> &'static str {
        match self {
            Self::Skill => "skills",
            Self::Agent => "agents",
            Self::Prompt => "prompts",
            Self::Instruction => "instructions",
        }
    }

    /// Parses a singular or plural name.
    pub fn parse(text: &str) -> Option<Self> {
        let lower = text.to_ascii_lowercase();
        Self::ALL
            .into_iter()
            .find(|k| k.as_str() == lower || k.plural() == lower)
    }

    /// Parses a type a person typed: a name [`ArtifactKind::parse`] takes, or
    /// `rule`/`rules`, as agents call instructions.
    pub fn parse_typed(text: &str) -> Option<Self> {
        match text.to_ascii_lowercase().as_str() {
            "rule" | "rules" => Some(Self::Instruction),
            _ => Self::parse(text),
        }
    }
}

/// The agent platform an artifact was written for, when its location says so
/// (the agents themselves are data: [`crate::agents`]).
pub use crate::agents::Platform;

/// An artifact found by path rules, before its main file is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detected {
    /// What kind of artifact it is.
    pub kind: ArtifactKind,
    /// Its identity inside the scan root: the folder of a skill, the file otherwise.
    pub path: String,
    /// The file its name, description and text come from.
    pub main_file: String,
    /// A name fixed by convention (`CLAUDE.md` is `claude-instructions`), beating frontmatter.
    pub fixed_name: Option<&'static str>,
    /// The name used when the frontmatter has none: folder or file name without type suffix.
    pub fallback_name: String,
    /// The platform its location implies.
    pub platform: Option<Platform>,
    /// Indices (into the paths given to [`detect`]) of every file that makes up the artifact.
    pub files: Vec<usize>,
    /// A skill with companion vendor metadata (`agents/*.yaml`).
    pub has_vendor_agent: bool,
}

/// A folder's `.claude-plugin/plugin.json` lists agents and commands in unconventional places.
pub fn plugin_root(path: &str) -> Option<&str> {
    let root = path.strip_suffix(".claude-plugin/plugin.json")?;
    (root.is_empty() || root.ends_with('/')).then(|| root.trim_end_matches('/'))
}

/// The `.md` files a plugin manifest lists as agents and commands, relative to the scan root.
pub fn plugin_listed(root: &str, manifest: &[u8]) -> Vec<(String, ArtifactKind)> {
    let Ok(serde_json::Value::Object(map)) = serde_json::from_slice::<serde_json::Value>(manifest) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (key, kind) in [("agents", ArtifactKind::Agent), ("commands", ArtifactKind::Prompt)] {
        let entries: Vec<&str> = match map.get(key) {
            Some(serde_json::Value::String(s)) => vec![s.as_str()],
            Some(serde_json::Value::Array(items)) => items.iter().filter_map(|v| v.as_str()).collect(),
            _ => continue,
        };
        for entry in entries {
            if let Some(path) = join_relative(root, entry)
                && path.ends_with(".md")
            {
                out.push((path, kind));
            }
        }
    }
    out
}

/// Joins a manifest's `./x/y.md` onto `root`, refusing anything that climbs out.
fn join_relative(root: &str, entry: &str) -> Option<String> {
    let mut parts: Vec<&str> = root.split('/').filter(|s| !s.is_empty()).collect();
    for part in entry.split('/') {
        match part {
            "" | "." => {}
            ".." => return None,
            other => parts.push(other),
        }
    }
    Some(parts.join("/"))
}

/// Resolves a symlink at `link` whose target text is `target`, relative to the
/// repository root. `None` when it leaves the repository.
pub fn resolve_link(link: &str, target: &str) -> Option<String> {
    if target.starts_with('/') || target.contains('\\') {
        return None;
    }
    let mut parts: Vec<&str> = link.split('/').collect();
    parts.pop();
    for part in target.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            other => parts.push(other),
        }
    }
    Some(parts.join("/"))
}

/// Folders never searched for artifacts: VCS data, aam's own state in a project
/// (the copies of installed packages: a project added as a source listed each
/// installed artifact twice), dependencies and build output.
pub const IGNORED_DIRS: [&str; 11] = [
    ".git",
    ".aam",
    "node_modules",
    ".venv",
    "venv",
    "__pycache__",
    "dist",
    "build",
    "target",
    "vendor",
    ".tox",
];

/// Whether a folder path runs through an ignored folder.
fn has_ignored_dir(dir: &str) -> bool {
    dir.split('/').any(|part| IGNORED_DIRS.contains(&part))
}

/// Root files that are instructions by convention, even in a repository that is one skill.
const ROOT_INSTRUCTIONS: [&str; 3] = ["CLAUDE.md", "AGENTS.md", ".github/copilot-instructions.md"];

/// Finds the artifacts among `paths` (files relative to the scan root, any order),
/// sorted by kind and path. `listed` holds files named by plugin manifests;
/// `root_name` names a skill whose `SKILL.md` sits at the scan root.
pub fn detect(paths: &[&str], listed: &BTreeMap<String, ArtifactKind>, root_name: &str) -> Vec<Detected> {
    let mut all = detect_as_found(paths, listed, root_name);
    all.sort_by(|a, b| (a.kind, &a.path).cmp(&(b.kind, &b.path)));
    all
}

/// [`detect`] without its sort: skills in the order their first file comes in
/// `paths`, then the other artifacts in the order of their files. For a caller
/// that orders them some other way: sorting 100,000 artifacts by path took 28 ms
/// (a skill `pdf` comes after `pdf-tools` by its files, before it by its path, so
/// the order found is far from sorted).
pub fn detect_as_found(paths: &[&str], listed: &BTreeMap<String, ArtifactKind>, root_name: &str) -> Vec<Detected> {
    // A skill folder may itself be called `build` or `vendor`: only the folders above it count.
    let skill_roots = skill_roots(
        paths
            .iter()
            .copied()
            .filter(|p| !has_ignored_dir(split_dir(split_dir(p).0).0)),
    );
    // Skills in the order their first file comes, found by root through a hash
    // map: with every path under one `skills/` folder, a tree map compared long
    // common prefixes a dozen times per lookup.
    let mut skills: Vec<Detected> = Vec::new();
    let mut skill_at: HashMap<&str, usize> = HashMap::default();
    let mut others = Vec::new();
    for (index, path) in paths.iter().enumerate() {
        let owner =
            owning_skill(path, &skill_roots).filter(|root| !(root.is_empty() && ROOT_INSTRUCTIONS.contains(path)));
        if let Some(root) = owner {
            let inside = if root.is_empty() {
                *path
            } else {
                &path[root.len() + 1..]
            };
            if has_ignored_dir(split_dir(inside).0) {
                continue;
            }
            let at = *skill_at.entry(root).or_insert_with(|| {
                skills.push(new_skill(root, &skill_roots, root_name));
                skills.len() - 1
            });
            let skill = &mut skills[at];
            skill.files.push(index);
            if let Some(file) = inside.strip_prefix("agents/")
                && !file.contains('/')
                && (file.ends_with(".yaml") || file.ends_with(".yml"))
            {
                skill.has_vendor_agent = true;
            }
        } else if has_ignored_dir(split_dir(path).0) {
            continue;
        } else if let Some(found) = classify(path, listed.get(*path).copied()) {
            others.push(Detected {
                files: vec![index],
                ..found
            });
        }
    }
    // Sized once: at 100,000 artifacts a growing vector briefly held twice its 20 MB.
    let mut all: Vec<Detected> = Vec::with_capacity(skills.len() + others.len());
    all.extend(skills);
    for skill in &mut all {
        skill.files.sort_by_key(|&i| paths[i]);
    }
    all.extend(others);
    all
}

/// The folder `path` is in when it is a skill file (`SKILL.md`, any case);
/// [`detect`] makes it a skill root when [`counts_as_skill_root`].
pub fn skill_file_folder(path: &str) -> Option<&str> {
    let (dir, file) = split_dir(path);
    file.eq_ignore_ascii_case("SKILL.md").then_some(dir)
}

/// Whether [`detect`] counts a folder holding a skill file as a skill root:
/// no vendored folder above the skill's own.
pub fn counts_as_skill_root(dir: &str) -> bool {
    !has_ignored_dir(split_dir(dir).0)
}

/// Folders that hold a skill file, mapped to that file's path.
fn skill_roots<'a>(paths: impl Iterator<Item = &'a str>) -> HashMap<&'a str, &'a str> {
    let mut roots: HashMap<&str, &str> = HashMap::default();
    for path in paths {
        let (dir, file) = split_dir(path);
        if file.eq_ignore_ascii_case("SKILL.md") {
            // An exact `SKILL.md` wins over `skill.md` in the same folder.
            let keep = roots
                .get(dir)
                .is_some_and(|existing| existing.ends_with("/SKILL.md") || *existing == "SKILL.md");
            if !keep {
                roots.insert(dir, path);
            }
        }
    }
    roots
}

/// The nearest folder at or above `path`'s folder that is a skill root.
fn owning_skill<'a>(path: &str, roots: &HashMap<&'a str, &'a str>) -> Option<&'a str> {
    let mut dir = split_dir(path).0;
    loop {
        if let Some((root, _)) = roots.get_key_value(dir) {
            return Some(root);
        }
        if dir.is_empty() {
            return None;
        }
        dir = split_dir(dir).0;
    }
}

fn new_skill(root: &str, roots: &HashMap<&str, &str>, root_name: &str) -> Detected {
    let fallback_name = if root.is_empty() {
        root_name.to_string()
    } else {
        split_dir(root).1.to_string()
    };
    Detected {
        kind: ArtifactKind::Skill,
        path: root.to_string(),
        main_file: roots[root].to_string(),
        fixed_name: None,
        fallback_name,
        platform: platform_of(root),
        files: Vec::new(),
        has_vendor_agent: false,
    }
}

/// `("a/b", "c.md")` for `"a/b/c.md"`, `("", "c.md")` for `"c.md"`.
fn split_dir(path: &str) -> (&str, &str) {
    match path.rfind('/') {
        Some(i) => (&path[..i], &path[i + 1..]),
        None => ("", path),
    }
}

/// Typed suffixes and the kind each implies, longest first.
const SUFFIXES: [(&str, ArtifactKind); 5] = [
    (".instructions.md", ArtifactKind::Instruction),
    (".chatmode.md", ArtifactKind::Agent),
    (".prompt.md", ArtifactKind::Prompt),
    (".agent.md", ArtifactKind::Agent),
    (".mdc", ArtifactKind::Instruction),
];

/// Files that document a folder rather than define an artifact.
const NOT_ARTIFACTS: [&str; 5] = ["readme.md", "changelog.md", "license.md", "contributing.md", "index.md"];

/// Classifies a file that no skill owns.
fn classify(path: &str, listed: Option<ArtifactKind>) -> Option<Detected> {
    let (dir, file) = split_dir(path);
    let fixed = match path {
        "CLAUDE.md" => Some(("claude-instructions", Platform::Claude)),
        "AGENTS.md" => Some(("codex-instructions", Platform::Codex)),
        ".github/copilot-instructions.md" => Some(("copilot-instructions", Platform::Copilot)),
        _ => None,
    };
    if let Some((name, platform)) = fixed {
        return Some(file_artifact(
            path,
            ArtifactKind::Instruction,
            Some(name),
            name.to_string(),
            Some(platform),
        ));
    }
    if file == ".cursorrules" {
        let name = if dir.is_empty() {
            "cursorrules"
        } else {
            split_dir(dir).1
        };
        return Some(file_artifact(
            path,
            ArtifactKind::Instruction,
            None,
            name.to_string(),
            Some(Platform::Cursor),
        ));
    }
    for (suffix, kind) in SUFFIXES {
        if let Some(stem) = file.strip_suffix(suffix)
            && !stem.is_empty()
        {
            let platform = platform_of(path).or(match suffix {
                ".mdc" => Some(Platform::Cursor),
                _ => Some(Platform::Copilot),
            });
            return Some(file_artifact(path, kind, None, stem.to_string(), platform));
        }
    }
    let stem = file.strip_suffix(".md").filter(|s| !s.is_empty())?;
    if NOT_ARTIFACTS.contains(&file.to_ascii_lowercase().as_str()) {
        return None;
    }
    let kind = listed.or_else(|| kind_of_folder(dir))?;
    Some(file_artifact(path, kind, None, stem.to_string(), platform_of(path)))
}

/// The kind implied by the folder a plain `.md` file sits in.
fn kind_of_folder(dir: &str) -> Option<ArtifactKind> {
    let (parent, last) = split_dir(dir);
    let by_name = |name: &str| match name {
        "agents" => Some(ArtifactKind::Agent),
        "prompts" | "commands" => Some(ArtifactKind::Prompt),
        "instructions" => Some(ArtifactKind::Instruction),
        "chatmodes" => Some(ArtifactKind::Agent),
        _ => None,
    };
    by_name(last).or_else(|| {
        // Claude Code namespaces agents and commands in sub-folders.
        let claude_nested = dir.starts_with(".claude/") || dir.contains("/.claude/");
        claude_nested
            .then(|| split_dir(parent).1)
            .and_then(|grand| matches!(grand, "agents" | "commands").then(|| by_name(grand)).flatten())
    })
}

fn file_artifact(
    path: &str,
    kind: ArtifactKind,
    fixed_name: Option<&'static str>,
    fallback_name: String,
    platform: Option<Platform>,
) -> Detected {
    Detected {
        kind,
        path: path.to_string(),
        main_file: path.to_string(),
        fixed_name,
        fallback_name,
        platform,
        files: Vec::new(),
        has_vendor_agent: false,
    }
}

/// The platform a location implies (`.cursor/`, `.claude/`, `.github/`, `.codex/`).
fn platform_of(path: &str) -> Option<Platform> {
    path.split('/').find_map(|part| match part {
        ".cursor" => Some(Platform::Cursor),
        ".claude" => Some(Platform::Claude),
        ".github" => Some(Platform::Copilot),
        ".codex" => Some(Platform::Codex),
        _ => None,
    })
}

/// Name, description and text read from an artifact's main file.
#[derive(Debug, Clone, PartialEq)]
pub struct Analysis {
    /// Display name.
    pub name: String,
    /// One-line description, when one was found.
    pub description: Option<String>,
    /// The frontmatter as JSON, when present.
    pub frontmatter: Option<serde_json::Map<String, serde_json::Value>>,
    /// Problems found while reading it.
    pub warnings: Vec<String>,
    /// The text (lossy UTF-8), capped at [`TEXT_CAP`] bytes.
    pub text: String,
    /// Whether `text` was cut.
    pub truncated: bool,
}

/// Reads `content` (the main file's bytes, `None` when they could not be reached).
pub fn analyze(detected: &Detected, content: Option<&[u8]>) -> Analysis {
    let mut warnings = Vec::new();
    let bytes = content.unwrap_or_default();
    let bytes = match bytes.strip_prefix(b"\xEF\xBB\xBF") {
        Some(rest) => {
            warnings.push("file starts with a byte-order mark; it was ignored".to_string());
            rest
        }
        None => bytes,
    };
    if memchr::memmem::find(bytes, b"\r\n").is_some() {
        warnings.push("file uses CRLF line endings; read as LF".to_string());
    }
    if content.is_some() && bytes.iter().all(u8::is_ascii_whitespace) {
        warnings.push("file is empty".to_string());
    }
    let capped = &bytes[..bytes.len().min(TEXT_CAP)];
    let truncated = capped.len() < bytes.len();
    if truncated {
        warnings.push(format!(
            "file is {} bytes; only the first {} KiB are indexed",
            bytes.len(),
            TEXT_CAP / 1024
        ));
    }
    let text = match std::str::from_utf8(capped) {
        Ok(text) => text.to_string(),
        // A cut in the middle of a character is not a decoding problem.
        Err(e) if truncated && e.error_len().is_none() => {
            String::from_utf8_lossy(&capped[..e.valid_up_to()]).into_owned()
        }
        Err(_) => {
            warnings.push("file is not valid UTF-8; invalid bytes were replaced".to_string());
            String::from_utf8_lossy(capped).into_owned()
        }
    };
    let front = frontmatter::parse(&text);
    warnings.extend(front.warnings.iter().cloned());
    // A name is one line: one holding a line break or a control character
    // could forge lines wherever it is shown. Nor does it hold a slash, which
    // would read as `source/path` (`../../x` named `source/../../x`), and it
    // fits on a line.
    let declared = front.string("name").filter(|name| {
        let why = if name.chars().any(char::is_control) {
            Some("holds a line break or a control character")
        } else if name.contains(['/', '\\']) || name == "." || name == ".." {
            Some("reads as a path (`/`, `\\`, `.` or `..`)")
        } else if name.chars().count() > MAX_NAME_CHARS {
            Some("is over 256 characters")
        } else {
            None
        };
        if let Some(why) = why {
            warnings.push(format!("`name` {why}; the file's name is used"));
        }
        why.is_none()
    });
    let name = detected
        .fixed_name
        .map(str::to_string)
        .or(declared)
        .unwrap_or_else(|| detected.fallback_name.clone());
    let description = front
        .string("description")
        .or_else(|| first_heading(&text[front.body_offset..]))
        .map(|d| one_line(&d));
    Analysis {
        name,
        description,
        frontmatter: front.fields,
        warnings,
        text,
        truncated,
    }
}

/// The longest name taken from frontmatter.
const MAX_NAME_CHARS: usize = 256;

/// The text of the first markdown heading.
fn first_heading(body: &str) -> Option<String> {
    body.lines().find_map(|line| {
        let title = line.trim_start().strip_prefix('#')?.trim_start_matches('#').trim();
        (!title.is_empty()).then(|| title.to_string())
    })
}

/// Collapses whitespace and caps a description at 1,024 characters.
fn one_line(text: &str) -> String {
    let mut joined = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !joined.is_empty() {
            joined.push(' ');
        }
        joined.push_str(word);
    }
    if joined.len() <= 1024 {
        return joined; // no more bytes than the cap: no more characters either
    }
    match joined.char_indices().nth(1024) {
        Some((cut, _)) => joined[..cut].to_string(),
        None => joined,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_types_take_rules_for_instructions() {
        assert_eq!(ArtifactKind::parse_typed("Rules"), Some(ArtifactKind::Instruction));
        assert_eq!(ArtifactKind::parse_typed("skills"), Some(ArtifactKind::Skill));
        assert_eq!(ArtifactKind::parse("rule"), None, "stored types stay canonical");
    }
    use std::collections::BTreeSet;

    fn owned_paths<'a>(detected: &Detected, paths: &[&'a str]) -> BTreeSet<&'a str> {
        detected.files.iter().map(|&i| paths[i]).collect()
    }

    fn run(paths: &[&str]) -> Vec<(ArtifactKind, String, String)> {
        detect(paths, &BTreeMap::new(), "repo")
            .into_iter()
            .map(|d| (d.kind, d.path, d.fallback_name))
            .collect()
    }

    fn one(path: &str) -> (ArtifactKind, String) {
        let found = run(&[path]);
        assert_eq!(found.len(), 1, "{path}: {found:?}");
        (found[0].0, found[0].2.clone())
    }

    #[test]
    fn every_corpus_layout() {
        use ArtifactKind::*;
        let cases = [
            ("skills/a/SKILL.md", Skill, "a"),
            ("skills/.curated/b/SKILL.md", Skill, "b"),
            ("plugins/p/skills/c/SKILL.md", Skill, "c"),
            (".claude/skills/d/SKILL.md", Skill, "d"),
            (".github/skills/e/SKILL.md", Skill, "e"),
            ("agents/f.md", Agent, "f"),
            ("agents/planner.agent.md", Agent, "planner"),
            ("plugins/p/agents/g.md", Agent, "g"),
            (".claude/agents/h.md", Agent, "h"),
            (".claude/agents/team/h2.md", Agent, "h2"),
            (".github/agents/i.agent.md", Agent, "i"),
            ("chatmodes/x.chatmode.md", Agent, "x"),
            ("prompts/j.md", Prompt, "j"),
            ("prompts/review.prompt.md", Prompt, "review"),
            (".github/prompts/k.prompt.md", Prompt, "k"),
            (".claude/commands/l.md", Prompt, "l"),
            ("plugins/p/commands/m.md", Prompt, "m"),
            ("instructions/style.instructions.md", Instruction, "style"),
            (".github/instructions/n.instructions.md", Instruction, "n"),
            (".github/copilot-instructions.md", Instruction, "copilot-instructions"),
            (".cursor/rules/rule.mdc", Instruction, "rule"),
            ("rules/o.mdc", Instruction, "o"),
            (".cursorrules", Instruction, "cursorrules"),
            ("rules/react/.cursorrules", Instruction, "react"),
            ("AGENTS.md", Instruction, "codex-instructions"),
            ("CLAUDE.md", Instruction, "claude-instructions"),
            ("SKILL.md", Skill, "repo"),
        ];
        for (path, kind, name) in cases {
            assert_eq!(one(path), (kind, name.to_string()), "{path}");
        }
    }

    #[test]
    fn not_artifacts() {
        for path in [
            "README.md",
            "agents/README.md",
            "docs/guide.md",
            "src/AGENTS.md",
            "agents/x.txt",
            "prompts/.md",
        ] {
            assert!(run(&[path]).is_empty(), "{path}");
        }
    }

    #[test]
    fn skills_own_their_folder_except_nested_skills() {
        let paths = [
            "skills/outer/SKILL.md",
            "skills/outer/agents/openai.yaml",
            "skills/outer/agents/helper.md",
            "skills/outer/scripts/run.sh",
            "skills/outer/inner/SKILL.md",
            "skills/outer/inner/notes.md",
            "agents/solo.md",
        ];
        let found = detect(&paths, &BTreeMap::new(), "repo");
        assert_eq!(found.len(), 3, "{found:?}");
        let outer = &found[0];
        assert_eq!(outer.path, "skills/outer");
        assert!(outer.has_vendor_agent);
        assert_eq!(
            owned_paths(outer, &paths).into_iter().collect::<Vec<_>>(),
            [
                "skills/outer/SKILL.md",
                "skills/outer/agents/helper.md",
                "skills/outer/agents/openai.yaml",
                "skills/outer/scripts/run.sh"
            ]
        );
        let inner = &found[1];
        assert_eq!(inner.path, "skills/outer/inner");
        assert!(!inner.has_vendor_agent);
        assert_eq!(inner.files.len(), 2);
        assert_eq!(found[2].path, "agents/solo.md");
    }

    #[test]
    fn vendored_folders_are_skipped_but_skills_may_be_named_like_them() {
        let paths = [
            "skills/build/SKILL.md",
            "skills/build/scripts/run.sh",
            "skills/build/node_modules/dep/index.js",
            "node_modules/pkg/skills/x/SKILL.md",
            "dist/agents/a.md",
            ".aam/packages/kit/skills/copied/SKILL.md",
            ".aam/packages/kit/agents/copied.md",
        ];
        let found = detect(&paths, &BTreeMap::new(), "repo");
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].path, "skills/build");
        assert_eq!(owned_paths(&found[0], &paths).len(), 2);
    }

    #[test]
    fn a_root_skill_leaves_the_conventional_instructions_alone() {
        let paths = [
            "SKILL.md",
            "AGENTS.md",
            "CLAUDE.md",
            ".github/copilot-instructions.md",
            "agents/helper.md",
        ];
        let found = run(&paths);
        let got: Vec<_> = found.iter().map(|(k, p, _)| format!("{} {p}", k.as_str())).collect();
        assert_eq!(
            got,
            [
                "skill ",
                "instruction .github/copilot-instructions.md",
                "instruction AGENTS.md",
                "instruction CLAUDE.md"
            ]
        );
    }

    #[test]
    fn deterministic_order_by_kind_then_path() {
        let paths = [
            "prompts/b.md",
            "agents/z.md",
            "skills/y/SKILL.md",
            "agents/a.md",
            "CLAUDE.md",
        ];
        let kinds: Vec<_> = run(&paths)
            .into_iter()
            .map(|(k, p, _)| format!("{}:{p}", k.as_str()))
            .collect();
        assert_eq!(
            kinds,
            [
                "skill:skills/y",
                "agent:agents/a.md",
                "agent:agents/z.md",
                "prompt:prompts/b.md",
                "instruction:CLAUDE.md"
            ]
        );
        let mut reversed = paths;
        reversed.reverse();
        assert_eq!(run(&reversed).len(), 5);
    }

    #[test]
    fn plugin_manifests_reach_unconventional_agents() {
        let manifest =
            br#"{"name":"x","agents":["./api-designer.md","../escape.md","./notes.txt"],"commands":"./cmd/run.md"}"#;
        let listed: BTreeMap<String, ArtifactKind> = plugin_listed("categories/01", manifest).into_iter().collect();
        assert_eq!(listed.len(), 2);
        assert_eq!(
            plugin_root("categories/01/.claude-plugin/plugin.json"),
            Some("categories/01")
        );
        assert_eq!(plugin_root(".claude-plugin/plugin.json"), Some(""));
        assert_eq!(plugin_root("x.claude-plugin/plugin.json"), None);
        let paths = [
            "categories/01/api-designer.md",
            "categories/01/README.md",
            "categories/01/cmd/run.md",
        ];
        let found = detect(&paths, &listed, "repo");
        let got: Vec<_> = found.iter().map(|d| (d.kind, d.path.as_str())).collect();
        assert_eq!(
            got,
            [
                (ArtifactKind::Agent, "categories/01/api-designer.md"),
                (ArtifactKind::Prompt, "categories/01/cmd/run.md")
            ]
        );
    }

    #[test]
    fn links_stay_inside_the_repository() {
        assert_eq!(resolve_link("CLAUDE.md", "AGENTS.md").as_deref(), Some("AGENTS.md"));
        assert_eq!(
            resolve_link("a/b/CLAUDE.md", "../x/./y.md").as_deref(),
            Some("a/x/y.md")
        );
        assert_eq!(resolve_link("CLAUDE.md", "../outside.md"), None);
        assert_eq!(resolve_link("CLAUDE.md", "/etc/passwd"), None);
    }

    fn analyze_text(path: &str, bytes: &[u8]) -> Analysis {
        let detected = detect(&[path], &BTreeMap::new(), "repo").remove(0);
        analyze(&detected, Some(bytes))
    }

    #[test]
    fn analysis_reads_frontmatter_or_falls_back() {
        let a = analyze_text(
            "skills/x/SKILL.md",
            b"---\nname: real-name\ndescription: >\n  Folded\n  text\n---\n# T\n",
        );
        assert_eq!(a.name, "real-name");
        assert_eq!(a.description.as_deref(), Some("Folded text"));
        assert!(a.warnings.is_empty());
        let a = analyze_text("skills/x/SKILL.md", b"# Heading Here\n\nbody");
        assert_eq!(a.name, "x");
        assert_eq!(a.description.as_deref(), Some("Heading Here"));
        assert!(a.frontmatter.is_none());
        let a = analyze_text("CLAUDE.md", b"---\nname: other\n---\n");
        assert_eq!(a.name, "claude-instructions");
    }

    #[test]
    fn a_declared_name_that_reads_as_a_path_or_forges_lines_gives_way_to_the_folders() {
        let long = format!("---\nname: {}\n---\n", "n".repeat(300));
        for text in [
            "---\nname: ../../../x\n---\n",
            "---\nname: ..\n---\n",
            "---\nname: \"a\\\\b\"\n---\n",
            "---\nname: \"a\\nhint: run this\"\n---\n",
            long.as_str(),
        ] {
            let a = analyze_text("skills/x/SKILL.md", text.as_bytes());
            assert_eq!(a.name, "x", "{text}");
            assert!(
                a.warnings.iter().any(|w| w.starts_with("`name` ")),
                "{text}: {:?}",
                a.warnings
            );
        }
    }

    #[test]
    fn oddities_never_fail() {
        let bom_crlf = analyze_text(
            "agents/a.md",
            b"\xEF\xBB\xBF---\r\nname: bom\r\ndescription: d\r\n---\r\nx\r\n",
        );
        assert_eq!(
            (bom_crlf.name.as_str(), bom_crlf.description.as_deref()),
            ("bom", Some("d"))
        );
        assert_eq!(bom_crlf.warnings.len(), 2, "{:?}", bom_crlf.warnings);
        assert!(bom_crlf.warnings[0].contains("byte-order mark"));
        assert!(bom_crlf.warnings[1].contains("CRLF"));

        let latin1 = analyze_text("agents/a.md", b"# Caf\xe9\n");
        assert_eq!(latin1.description.as_deref(), Some("Caf\u{fffd}"));
        assert!(latin1.warnings[0].contains("UTF-8"));

        let empty = analyze_text("agents/a.md", b"");
        assert_eq!(empty.name, "a");
        assert!(empty.warnings[0].contains("empty"));

        let mut huge = b"---\nname: big\n---\n".to_vec();
        huge.extend("é".repeat(TEXT_CAP).as_bytes());
        let big = analyze_text("agents/a.md", &huge);
        assert!(big.truncated && big.text.len() <= TEXT_CAP);
        assert_eq!(big.warnings.len(), 1, "{:?}", big.warnings);
        assert_eq!(big.name, "big");

        let forged = analyze_text(
            "skills/x/SKILL.md",
            b"---\nname: \"x\\n   source: official\"\ndescription: d\n---\n",
        );
        assert_eq!(forged.name, "x");
        assert!(
            forged.warnings.iter().any(|w| w.contains("line break")),
            "{:?}",
            forged.warnings
        );
        let bad_yaml = analyze_text("rules/r.mdc", b"---\ndescription: TS\nglobs: **/*\n---\nbody");
        assert_eq!(bad_yaml.description.as_deref(), Some("TS"));
        assert_eq!(bad_yaml.warnings.len(), 1);

        let unreachable = analyze(&detect(&["CLAUDE.md"], &BTreeMap::new(), "r")[0], None);
        assert_eq!(unreachable.name, "claude-instructions");
    }
}
