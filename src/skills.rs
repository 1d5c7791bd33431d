//! Skills as Skills over MCP (SEP-2640) serves them: which catalog skills
//! follow the Agent Skills naming rules, their `skill://` URIs, and the cursor
//! that pages through them. Pure functions: no I/O, no SQL, no protocol types.
//!
//! Invariants:
//! - a skill is served only when its frontmatter `name` is 1-64 characters of
//!   `a-z0-9-` with no leading, trailing or doubled hyphen, equals its folder's
//!   name (skills at a source's root are named by their frontmatter alone), its
//!   `description` is 1-1024 characters, and no other skill's folder holds it;
//! - URIs are `skill://<source>/<folder path>/SKILL.md` (each segment
//!   percent-encoded), so the prefix keeps same-named skills of different
//!   sources apart and stays the same across updates; a skill at the root of
//!   its source is `skill://<source>/<name>/SKILL.md`; a skill installed in
//!   the served project is `skill://~project/<platform>/<name>/SKILL.md` (a
//!   source name in a URI has its `~` encoded, so the two never meet).

use std::collections::BTreeMap;

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::audit::Policy;
use crate::catalog::{ArtifactId, Catalog, FindingCounts, FindingFilter, SkillRow};
use crate::error::Result;
use crate::install::Roots;
use crate::packages::lock::LockFile;
use crate::scan::ArtifactKind;

/// The URI scheme of served skills.
pub const SCHEME: &str = "skill://";

/// Where the served project's installed skills live in `skill://` URIs.
pub const PROJECT_ROOT: &str = "skill://~project";

/// The entry file of a skill.
pub const SKILL_MD: &str = "SKILL.md";

/// Longest name the Agent Skills rules allow.
pub const MAX_NAME: usize = 64;

/// Longest description the Agent Skills rules allow.
pub const MAX_DESCRIPTION: usize = 1024;

/// Why a catalog skill is left out of `skills/list`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SkillProblem {
    /// No frontmatter `name` (or not a string).
    NameMissing,
    /// A `name` that breaks the rules (length, characters, hyphens).
    NameInvalid,
    /// A `name` other than the skill folder's name.
    NameNotFolder,
    /// No frontmatter `description` (or not a string, or empty).
    DescriptionMissing,
    /// A `description` over 1024 characters.
    DescriptionTooLong,
    /// A skill inside another skill's folder (skills never nest).
    Nested,
    /// Frontmatter no YAML parser reads as given (read line by line): a client parsing `SKILL.md` finds other fields than the entry, and rejects it.
    FrontmatterNotYaml,
    /// A content-audit finding at or above `audit.block` (what would block installing it).
    AuditBlocked,
}

impl SkillProblem {
    /// Every problem.
    pub const ALL: [Self; 8] = [
        Self::NameMissing,
        Self::NameInvalid,
        Self::NameNotFolder,
        Self::DescriptionMissing,
        Self::DescriptionTooLong,
        Self::Nested,
        Self::FrontmatterNotYaml,
        Self::AuditBlocked,
    ];

    /// Its name in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NameMissing => "name_missing",
            Self::NameInvalid => "name_invalid",
            Self::NameNotFolder => "name_not_folder",
            Self::DescriptionMissing => "description_missing",
            Self::DescriptionTooLong => "description_too_long",
            Self::Nested => "nested",
            Self::FrontmatterNotYaml => "frontmatter_not_yaml",
            Self::AuditBlocked => "audit_blocked",
        }
    }

    /// What the problem is, for people.
    pub fn reason(self) -> &'static str {
        match self {
            Self::NameMissing => "frontmatter has no `name`",
            Self::NameInvalid => "`name` is not 1-64 of a-z, 0-9 and single inner hyphens",
            Self::NameNotFolder => "`name` differs from the skill folder's name",
            Self::DescriptionMissing => "frontmatter has no `description`",
            Self::DescriptionTooLong => "`description` is longer than 1024 characters",
            Self::Nested => "the skill sits inside another skill's folder",
            Self::FrontmatterNotYaml => "frontmatter is not valid YAML (see `aam info`)",
            Self::AuditBlocked => "the content audit finds what `audit.block` blocks (see `aam audit`)",
        }
    }
}

/// Whether `name` follows the Agent Skills naming rules.
pub fn valid_name(name: &str) -> bool {
    (1..=MAX_NAME).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

/// Checks a skill's frontmatter (as JSON) against the naming rules. `path` is
/// the skill's folder in its repository, `scope` the folder its source was
/// added with (a skill at the scope root has no folder name to match).
pub fn check(frontmatter: Option<&Map<String, Value>>, path: &str, scope: &str) -> Result<(), SkillProblem> {
    let field = |key: &str| frontmatter.and_then(|f| f.get(key)).and_then(Value::as_str);
    let name = field("name").ok_or(SkillProblem::NameMissing)?;
    if !valid_name(name) {
        return Err(SkillProblem::NameInvalid);
    }
    if path != scope && folder_name(path) != name {
        return Err(SkillProblem::NameNotFolder);
    }
    let description = field("description")
        .filter(|d| !d.is_empty())
        .ok_or(SkillProblem::DescriptionMissing)?;
    if description.chars().count() > MAX_DESCRIPTION {
        return Err(SkillProblem::DescriptionTooLong);
    }
    Ok(())
}

/// Why a live catalog skill is not served, `None` when it is. `scope` is its
/// source's scope folder; `is_skill_folder` tells whether a folder of the same
/// source holds a live skill (for the no-nesting rule).
pub fn problem(row: &SkillRow, scope: &str, is_skill_folder: impl Fn(&str) -> bool) -> Option<SkillProblem> {
    problem_of(row.frontmatter(), &row.path, scope, is_skill_folder)
}

/// A skill's frontmatter as the catalog records it: the fields as JSON, and
/// whether they were read line by line because no YAML parser read the text.
#[derive(Debug, Clone, Copy, Default)]
pub struct RecordedFrontmatter<'a> {
    /// The fields, as a JSON object.
    pub json: Option<&'a str>,
    /// Read line by line (see [`crate::scan::frontmatter::READ_LINE_BY_LINE`]).
    pub line_by_line: bool,
}

impl<'a> RecordedFrontmatter<'a> {
    /// The frontmatter of an artifact whose scan warned `warnings`.
    pub fn of(json: Option<&'a str>, warnings: &[String]) -> Self {
        let line_by_line = warnings
            .iter()
            .any(|w| w.starts_with("frontmatter ") && w.contains(crate::scan::frontmatter::READ_LINE_BY_LINE));
        Self { json, line_by_line }
    }

    /// The frontmatter of a catalog row (`warnings_json`: its warnings as a JSON list).
    pub fn of_row(json: Option<&'a str>, warnings_json: Option<&str>) -> Self {
        let warnings: Vec<String> = warnings_json
            .and_then(|w| serde_json::from_str(w).ok())
            .unwrap_or_default();
        Self::of(json, &warnings)
    }
}

/// [`problem`] of a skill at `path` with `frontmatter`.
pub fn problem_of(
    frontmatter: RecordedFrontmatter<'_>,
    path: &str,
    scope: &str,
    is_skill_folder: impl Fn(&str) -> bool,
) -> Option<SkillProblem> {
    own_problem(frontmatter, path, scope).or_else(|| nested(path, is_skill_folder))
}

/// What keeps a skill out by itself: frontmatter no parser reads as given, or
/// that breaks the naming rules.
fn own_problem(frontmatter: RecordedFrontmatter<'_>, path: &str, scope: &str) -> Option<SkillProblem> {
    if frontmatter.line_by_line {
        return Some(SkillProblem::FrontmatterNotYaml);
    }
    let fields: Option<Map<String, Value>> = frontmatter.json.and_then(|text| serde_json::from_str(text).ok());
    check(fields.as_ref(), path, scope).err()
}

/// Whether a folder above `path` holds a skill (the no-nesting rule).
fn nested(path: &str, is_skill_folder: impl Fn(&str) -> bool) -> Option<SkillProblem> {
    ancestors(path).any(is_skill_folder).then_some(SkillProblem::Nested)
}

/// A [`Tally`] counted while a source's skills go by one at a time (as a new
/// source is written), without reading them back: each skill's own check is
/// made as it comes, nesting once every folder is known.
#[derive(Debug, Default)]
pub struct TallyBuilder {
    scope: String,
    /// Every skill folder with what keeps it out by itself.
    skills: Vec<(String, Option<SkillProblem>)>,
}

impl TallyBuilder {
    /// A builder for the skills of a source added with `scope`.
    pub fn new(scope: &str) -> Self {
        Self {
            scope: scope.to_string(),
            skills: Vec::new(),
        }
    }

    /// Counts the skill at `path` with `frontmatter`.
    pub fn add(&mut self, path: &str, frontmatter: RecordedFrontmatter<'_>) {
        let problem = own_problem(frontmatter, path, &self.scope);
        self.skills.push((path.to_string(), problem));
    }

    /// The tally of every skill added.
    pub fn finish(self) -> Tally {
        let folders: foldhash::HashSet<&str> = self.skills.iter().map(|(path, _)| path.as_str()).collect();
        let mut tally = Tally::default();
        for (path, problem) in &self.skills {
            tally.add(problem.or_else(|| nested(path, |f| folders.contains(f))), 1);
        }
        tally
    }
}

/// One source's live skills counted by what keeps each out of `skills/list`
/// (`None`: served). The catalog keeps one per source, in step with its writes,
/// so the census costs what the number of sources does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally(pub BTreeMap<Option<SkillProblem>, i64>);

impl Tally {
    /// Counts every skill of a source: `skills` are its live skills' folders
    /// with their frontmatter.
    pub fn of<'a>(skills: impl IntoIterator<Item = (&'a str, RecordedFrontmatter<'a>)>, scope: &str) -> Self {
        let mut builder = TallyBuilder::new(scope);
        for (path, frontmatter) in skills {
            builder.add(path, frontmatter);
        }
        builder.finish()
    }

    /// Adds `n` (negative to take away) skills with `problem`.
    pub fn add(&mut self, problem: Option<SkillProblem>, n: i64) {
        *self.0.entry(problem).or_default() += n;
    }

    /// Adds every count of `other`.
    pub fn merge(&mut self, other: &Tally) {
        for (problem, n) in &other.0 {
            self.add(*problem, *n);
        }
    }

    /// As stored: `{"served": 3, "name_invalid": 1}` (zeros left out).
    pub fn to_json(&self) -> String {
        let map: Map<String, Value> = self
            .0
            .iter()
            .filter(|(_, n)| **n != 0)
            .map(|(p, n)| (p.map_or("served", SkillProblem::as_str).to_string(), Value::from(*n)))
            .collect();
        Value::Object(map).to_string()
    }

    /// Reads [`Tally::to_json`]; `None` when it is not one.
    pub fn from_json(text: &str) -> Option<Self> {
        let map: Map<String, Value> = serde_json::from_str(text).ok()?;
        let mut tally = Self::default();
        for (key, n) in map {
            let problem = match key.as_str() {
                "served" => None,
                other => Some(*SkillProblem::ALL.iter().find(|p| p.as_str() == other)?),
            };
            tally.add(problem, n.as_i64()?);
        }
        Some(tally)
    }
}

/// How many live catalog skills are served, and how many are left out, why.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Census {
    /// Skills `skills/list` serves.
    pub served: u64,
    /// Skills left out, by problem (only problems that occur).
    pub left_out: Vec<LeftOut>,
}

/// Skills left out of `skills/list` for one reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LeftOut {
    /// The problem.
    pub problem: SkillProblem,
    /// What it means.
    pub reason: String,
    /// How many skills have it.
    pub count: u64,
}

/// Whether the content audit found in the artifact `id` what `policy` blocks.
pub fn blocked(catalog: &Catalog, id: ArtifactId, policy: &Policy) -> Result<bool> {
    let counts = catalog.finding_counts(&[id])?;
    Ok(counts
        .get(&id)
        .and_then(FindingCounts::highest)
        .is_some_and(|highest| policy.block.reached(highest)))
}

/// Counts every live skill of every source: what `skills/list` serves, and
/// what it leaves out, why. Reads the tally the catalog keeps per source,
/// then moves the skills it counts as served that `policy` blocks (found
/// through the findings at or above `audit.block`, which are few).
pub fn census(catalog: &Catalog, policy: &Policy) -> Result<Census> {
    let mut total = Tally::default();
    for tally in catalog.skill_tallies()? {
        total.merge(&tally);
    }
    let blocked = blocked_but_otherwise_served(catalog, policy)?;
    total.add(None, -blocked);
    total.add(Some(SkillProblem::AuditBlocked), blocked);
    Ok(Census {
        served: total.0.get(&None).copied().unwrap_or_default().max(0) as u64,
        left_out: total
            .0
            .iter()
            .filter_map(|(problem, n)| Some((problem.as_ref()?, n)))
            .filter(|(_, n)| **n > 0)
            .map(|(problem, n)| LeftOut {
                problem: *problem,
                reason: problem.reason().to_string(),
                count: *n as u64,
            })
            .collect(),
    })
}

/// How many live skills follow the rules but hold a finding `policy` blocks.
fn blocked_but_otherwise_served(catalog: &Catalog, policy: &Policy) -> Result<i64> {
    let Some(min_severity) = policy.block.0 else {
        return Ok(0);
    };
    let findings = catalog.findings(&FindingFilter {
        min_severity: Some(min_severity),
        ..Default::default()
    })?;
    let skills: std::collections::BTreeSet<(String, String)> = findings
        .into_iter()
        .filter(|f| f.kind == ArtifactKind::Skill)
        .map(|f| (f.source, f.artifact_path))
        .collect();
    let mut count = 0;
    for (source_name, path) in skills {
        let source = catalog.source_named(&source_name)?;
        let enclosing = catalog.skills_at(source.id, ancestors(&path))?;
        for row in catalog.skills_at(source.id, [&path])? {
            if problem(&row, &source.scope_path, |folder| {
                enclosing.iter().any(|s| s.path == folder)
            })
            .is_none()
            {
                count += 1;
            }
        }
    }
    Ok(count)
}

/// A skill installed in the project, as its files are now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstalledSkill {
    /// The skill folder's URI (`skill://~project/<platform>/<name>`).
    pub root: String,
    /// Its frontmatter.
    pub frontmatter: Map<String, Value>,
    /// Every file the lock file records in its folder, `SKILL.md` first:
    /// path inside the folder and bytes.
    pub files: Vec<(String, Vec<u8>)>,
}

impl InstalledSkill {
    /// The first rule the content audit finds in its files (as they are now)
    /// that `policy` blocks: a lock file comes with its repository, so a
    /// skill it names was not necessarily let through by an install here.
    pub fn blocked_by(&self, policy: &Policy) -> Option<&'static str> {
        let mut folders = std::collections::HashSet::new();
        self.files.iter().find_map(|(path, bytes)| {
            let info = crate::audit::FileInfo {
                path,
                executable: false,
                main: path == SKILL_MD,
            };
            let in_folders = path
                .rsplit_once('/')
                .into_iter()
                .flat_map(|(dirs, _)| dirs.split('/'))
                .filter(|dir| folders.insert(dir.to_string()))
                .flat_map(crate::audit::scan_name);
            crate::audit::scan_file(info, bytes)
                .into_iter()
                .chain(in_folders)
                .find(|f| policy.block.reached(f.severity))
                .map(|f| f.rule)
        })
    }
}

/// The skills installed in the project the lock file describes that follow the
/// naming rules (the folder's name is the skill's name), with their files read
/// as they are now. Files that are gone, edited into links, too big, or that
/// cannot be read where they are (a link on the way, outside the served
/// folder) are left out, each logged: one such file never hides the others.
pub fn installed(roots: &Roots, lock: &LockFile) -> Result<Vec<InstalledSkill>> {
    roots.check_lock(lock)?;
    let mut out = Vec::new();
    for entry in lock.packages.values() {
        for deployed in entry.deployed.iter().filter(|d| d.kind == ArtifactKind::Skill) {
            let folder = deployed.target.trim_end_matches('/');
            if folder.contains('#') {
                continue;
            }
            let mut files = Vec::new();
            for key in entry.file_checksums.keys() {
                let Some(relative) = key.strip_prefix(folder).and_then(|r| r.strip_prefix('/')) else {
                    continue;
                };
                match crate::install::state::current_bytes(roots, key) {
                    Ok(Some(bytes)) => files.push((relative.to_string(), bytes)),
                    Ok(None) => {}
                    Err(e) => {
                        tracing::warn!(file = %key, code = %e.code(), "an installed skill's file is left out: {}", e.message())
                    }
                }
            }
            let Some(main) = files.iter().position(|(path, _)| path == SKILL_MD) else {
                continue;
            };
            let main = files.remove(main);
            files.insert(0, main);
            let text = String::from_utf8_lossy(&files[0].1);
            let scanned = crate::scan::frontmatter::parse(text.trim_start_matches('\u{feff}'));
            let recorded = RecordedFrontmatter::of(None, &scanned.warnings);
            let fields = scanned.fields;
            // Read line by line, its fields are not what a client parses (as
            // for the catalog's skills, `frontmatter_not_yaml`).
            if recorded.line_by_line || check(fields.as_ref(), folder, "").is_err() {
                continue;
            }
            let name = folder_name(folder);
            out.push(InstalledSkill {
                root: format!("{PROJECT_ROOT}/{}/{}", deployed.platform.as_str(), encode_segment(name)),
                frontmatter: fields.unwrap_or_default(),
                files,
            });
        }
    }
    out.sort_by(|a, b| a.root.cmp(&b.root));
    out.dedup_by(|a, b| a.root == b.root);
    Ok(out)
}

/// The folders above `path` (closest last), for finding an enclosing skill:
/// `a/b/c` gives `""`, `a`, `a/b`.
pub fn ancestors(path: &str) -> impl Iterator<Item = &str> {
    let root = (!path.is_empty()).then_some("");
    root.into_iter()
        .chain(path.match_indices('/').map(|(slash, _)| &path[..slash]))
}

fn folder_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Characters kept as they are in a URI segment: RFC 3986 unreserved but `~`.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.');

/// One path segment (or a source name) as it appears in a URI; a segment of
/// dots only is encoded whole, so it never reads as `.` or `..`.
pub fn encode_segment(segment: &str) -> String {
    if !segment.is_empty() && segment.bytes().all(|b| b == b'.') {
        return "%2E".repeat(segment.len());
    }
    utf8_percent_encode(segment, SEGMENT).to_string()
}

/// The URI of a skill's folder (no trailing slash): `skill://<source>/<path>`,
/// or `skill://<source>/<name>` for a skill at the root of its source's scope.
pub fn root_uri(source: &str, path: &str, scope: &str, name: &str) -> String {
    let mut uri = format!("{SCHEME}{}", encode_segment(source));
    if path == scope || path.is_empty() {
        uri.push('/');
        uri.push_str(&encode_segment(name));
    } else {
        for segment in path.split('/') {
            uri.push('/');
            uri.push_str(&encode_segment(segment));
        }
    }
    uri
}

/// The URI of a file inside a skill, from the skill's folder URI and the file's
/// path relative to the folder.
pub fn file_uri(root: &str, relative: &str) -> String {
    let mut uri = root.to_string();
    for segment in relative.split('/') {
        uri.push('/');
        uri.push_str(&encode_segment(segment));
    }
    uri
}

/// A `skill://` URI taken apart: the source name and the decoded path
/// segments after it. `None` for other schemes, empty or undecodable segments,
/// `.`/`..` or `/` in a path segment, queries and fragments.
pub fn parse(uri: &str) -> Option<(String, Vec<String>)> {
    let rest = uri.strip_prefix(SCHEME)?;
    if rest.len() > MAX_URI || rest.contains(['?', '#']) {
        return None;
    }
    let decode = |part: &str| -> Option<String> {
        let decoded = percent_decode_str(part).decode_utf8().ok()?.into_owned();
        (!decoded.is_empty() && !decoded.contains('\0')).then_some(decoded)
    };
    let mut parts = rest.split('/');
    // Source names may hold `/` (encoded); path segments never do.
    let source = decode(parts.next()?)?;
    let segments = parts
        .map(|part| decode(part).filter(|d| d != "." && d != ".." && !d.contains('/')))
        .collect::<Option<Vec<String>>>()?;
    Some((source, segments))
}

/// Longest `skill://` URI taken apart (a repository path is at most 4096 bytes).
const MAX_URI: usize = 16 * 1024;

/// Where `skills/list` continues: after this source id and skill path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    /// The source whose skills were being listed.
    pub source_id: crate::catalog::SourceId,
    /// The last skill path listed from it.
    pub path: String,
}

impl Cursor {
    /// The opaque text form: `v1.<source id>.<path as hex>`.
    pub fn encode(&self) -> String {
        let hex = faster_hex::hex_string(self.path.as_bytes());
        format!("v1.{}.{hex}", self.source_id)
    }

    /// Reads a cursor made by [`Cursor::encode`]; `None` for anything else.
    pub fn decode(text: &str) -> Option<Self> {
        let mut parts = text.strip_prefix("v1.")?.splitn(2, '.');
        // Only the form `encode` writes: a source id in plain digits, no sign,
        // no leading zero, never 0 (row ids start at 1).
        let id = parts.next()?;
        if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) || id.starts_with('0') {
            return None;
        }
        let source_id = crate::catalog::SourceId(id.parse().ok()?);
        let hex = parts.next()?;
        // Lower-case hex pairs only, as `encode` writes (`+f` and `2B` parse too).
        if !hex.len().is_multiple_of(2) || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return None;
        }
        let bytes = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
            .collect::<Option<Vec<u8>>>()?;
        Some(Self {
            source_id,
            path: String::from_utf8(bytes).ok()?,
        })
    }
}

/// A MIME type for a skill file, by extension alone, so a listing and a read
/// of the file agree: what no extension says is text is `text/plain`.
pub fn mime_type(path: &str) -> &'static str {
    let extension = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    match extension.as_deref() {
        Some("md" | "markdown" | "mdc") => "text/markdown",
        Some("json") => "application/json",
        Some("yaml" | "yml") => "application/yaml",
        Some("py") => "text/x-python",
        Some("sh") => "text/x-shellscript",
        Some("html" | "htm") => "text/html",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("webp") => "image/webp",
        Some("ico") => "image/vnd.microsoft.icon",
        Some("svg") => "image/svg+xml",
        Some("pdf") => "application/pdf",
        Some("zip") => "application/zip",
        Some("gz" | "tgz") => "application/gzip",
        Some("wasm") => "application/wasm",
        Some(
            "bin" | "exe" | "dll" | "so" | "dylib" | "o" | "a" | "class" | "jar" | "tar" | "xz" | "zst" | "woff"
            | "woff2" | "ttf" | "otf" | "mp3" | "mp4" | "wav" | "ogg" | "xlsx" | "docx" | "pptx" | "sqlite" | "db",
        ) => "application/octet-stream",
        _ => "text/plain",
    }
}

/// Whether a file of `mime` (from [`mime_type`]) is served as text when its
/// bytes are UTF-8; other files, and text files whose bytes are not, are
/// served as bytes (base64), under the same type.
pub fn is_textual(mime: &str) -> bool {
    mime.starts_with("text/") || matches!(mime, "application/json" | "application/yaml" | "image/svg+xml")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fm(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn names_follow_the_agent_skills_rules() {
        for good in ["a", "pdf", "pdf-tools", "a1-b2", &"x".repeat(64)] {
            assert!(valid_name(good), "{good}");
        }
        for bad in [
            "",
            "-pdf",
            "pdf-",
            "pdf--tools",
            "PDF",
            "pdf_tools",
            "pdf tools",
            "pdé",
            &"x".repeat(65),
        ] {
            assert!(!valid_name(bad), "{bad}");
        }
    }

    #[test]
    fn frontmatter_is_checked_with_a_reason() {
        let ok = fm(json!({"name": "pdf", "description": "Fill forms", "license": "MIT"}));
        assert_eq!(check(Some(&ok), "skills/pdf", ""), Ok(()));
        assert_eq!(check(None, "skills/pdf", ""), Err(SkillProblem::NameMissing));
        let cases = [
            (json!({"description": "d"}), SkillProblem::NameMissing),
            (json!({"name": 3, "description": "d"}), SkillProblem::NameMissing),
            (json!({"name": "Pdf", "description": "d"}), SkillProblem::NameInvalid),
            (json!({"name": "docx", "description": "d"}), SkillProblem::NameNotFolder),
            (json!({"name": "pdf"}), SkillProblem::DescriptionMissing),
            (
                json!({"name": "pdf", "description": ""}),
                SkillProblem::DescriptionMissing,
            ),
            (
                json!({"name": "pdf", "description": "é".repeat(1025)}),
                SkillProblem::DescriptionTooLong,
            ),
        ];
        for (frontmatter, problem) in cases {
            assert_eq!(
                check(Some(&fm(frontmatter.clone())), "skills/pdf", ""),
                Err(problem),
                "{frontmatter}"
            );
        }
        // 1024 characters (more bytes) is fine; a skill at the scope root matches no folder.
        let long = fm(json!({"name": "any", "description": "é".repeat(1024)}));
        assert_eq!(check(Some(&long), "skills/pdf", "skills/pdf"), Ok(()));
        assert_eq!(check(Some(&long), "", ""), Ok(()));
    }

    #[test]
    fn uris_keep_sources_apart_and_round_trip() {
        let root = root_uri("anthropics/skills:x", "skills/pdf", "", "pdf");
        assert_eq!(root, "skill://anthropics%2Fskills%3Ax/skills/pdf");
        assert_eq!(
            file_uri(&root, SKILL_MD),
            "skill://anthropics%2Fskills%3Ax/skills/pdf/SKILL.md"
        );
        assert_eq!(root_uri("one", "", "", "solo"), "skill://one/solo");
        assert_eq!(root_uri("one", "a/solo", "a/solo", "solo"), "skill://one/solo");
        assert_eq!(root_uri("..", "a.b/c", "", "c"), "skill://%2E%2E/a.b/c");
        let file = file_uri(&root, "templates/my file~1.md");
        assert_eq!(
            file,
            "skill://anthropics%2Fskills%3Ax/skills/pdf/templates/my%20file%7E1.md"
        );
        let (source, segments) = parse(&file).unwrap();
        assert_eq!(source, "anthropics/skills:x");
        assert_eq!(segments, ["skills", "pdf", "templates", "my file~1.md"]);
        for bad in [
            "aam://x/y",
            "skill://",
            "skill://a//b",
            "skill://a/../b",
            "skill://a/%2E%2E/b",
            "skill://a/b%2Fc",
            "skill://a/b?x",
            "skill://a/%FF",
            &format!("skill://a/{}", "b/".repeat(9000)),
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn cursors_round_trip_and_reject_junk() {
        let cursor = Cursor {
            source_id: crate::catalog::SourceId(42),
            path: "skills/pdf é".to_string(),
        };
        assert_eq!(Cursor::decode(&cursor.encode()), Some(cursor));
        for junk in [
            "", "v1", "v1.x.00", "v1.1.0", "v1.1.zz", "v2.1.00", "v1.1.ff", "v1.0.", "v1.-5.", "v1.03.", "v1.+3.",
            "v1..", "v1.1.+f", "v1.1.2B",
        ] {
            assert_eq!(Cursor::decode(junk), None, "{junk}");
        }
    }

    #[test]
    fn nested_skills_are_left_out() {
        let row = SkillRow {
            id: crate::catalog::ArtifactId(1),
            path: "skills/pdf/inner".into(),
            main_file: "skills/pdf/inner/SKILL.md".into(),
            content_path: "skills/pdf/inner/SKILL.md".into(),
            frontmatter_json: Some(r#"{"name":"inner","description":"d"}"#.into()),
            frontmatter_line_by_line: false,
            main_size: 1,
            main_sha256: None,
        };
        assert_eq!(problem(&row, "", |f| f == "skills/pdf"), Some(SkillProblem::Nested));
        assert_eq!(problem(&row, "", |f| f == "skills/pdfx"), None);
        let bad_json = SkillRow {
            frontmatter_json: Some("{not json".into()),
            ..row
        };
        assert_eq!(problem(&bad_json, "", |_| false), Some(SkillProblem::NameMissing));
        // Read line by line, the fields are not what a client parses from the file.
        let line_by_line = SkillRow {
            path: "skills/inner".into(),
            frontmatter_line_by_line: true,
            ..bad_json
        };
        assert_eq!(
            problem(&line_by_line, "", |_| false),
            Some(SkillProblem::FrontmatterNotYaml)
        );
    }

    #[test]
    fn frontmatter_read_line_by_line_is_told_by_the_scan_warnings() {
        let scanned =
            crate::scan::frontmatter::parse("---\nname: pdf\ndescription: Work with PDF: fill forms\n---\nBody\n");
        assert!(
            RecordedFrontmatter::of(None, &scanned.warnings).line_by_line,
            "{:?}",
            scanned.warnings
        );
        let plain =
            crate::scan::frontmatter::parse("---\nname: pdf\ndescription: \"Work with PDF: fill forms\"\n---\n");
        assert!(!RecordedFrontmatter::of(None, &plain.warnings).line_by_line);
        let json = serde_json::to_string(&scanned.warnings).unwrap();
        assert!(RecordedFrontmatter::of_row(None, Some(&json)).line_by_line);
        assert!(!RecordedFrontmatter::of_row(None, None).line_by_line);
    }

    #[test]
    fn ancestors_list_every_enclosing_folder() {
        assert_eq!(ancestors("a/b/c").collect::<Vec<_>>(), ["", "a", "a/b"]);
        assert_eq!(ancestors("a").collect::<Vec<_>>(), [""]);
        assert_eq!(ancestors("").count(), 0);
    }
}
