//! Skills over MCP (SEP-2640): `skills/list`, `skills/get`, `resources/read`
//! of `skill://` URIs and `resources/directory/read`, answered from the
//! catalog (entries, digests, sizes) and the git objects at the indexed commit
//! (file bytes), plus the skills installed in the served project (the first
//! page lists them; their files are read as they are now, through the lock
//! file's key check). Which skills are served and how their URIs look is
//! `crate::skills`; this module only turns catalog rows into protocol types.
//!
//! Nothing here touches the file system by a name from a URI: a URI is taken
//! apart into segments, matched against catalog paths, and a file's bytes are
//! read by the blob id the catalog recorded for it.

use std::collections::BTreeSet;

use base64::Engine as _;
use rmcp::ErrorData;
use rmcp::model::{
    DIRECTORY_MIME_TYPE, GetSkillResult, ListResourcesResult, ListSkillsResult, ReadResourceResult, Resource,
    ResourceContents, Skill, SkillFrontmatter, SkillResource, SkillResources,
};
use serde_json::{Map, Value, json};

use crate::audit::Policy;
use crate::catalog::{Catalog, SkillFile, SkillRow, SourceRecord};
use crate::error::{Error, ErrorCode, Result};
use crate::skills::{self, Cursor, InstalledSkill, SKILL_MD};
use crate::sources::git::{GitCache, Oid};
use crate::sources::index::{Snapshot, sha256_hex};
use crate::tools::Context;

/// Skills per `skills/list` page.
pub const PAGE_SIZE: usize = 50;

/// One page of served skills, after `cursor`.
pub(super) fn list(ctx: &Context, cursor: Option<&str>) -> std::result::Result<ListSkillsResult, ErrorData> {
    let start = match cursor {
        Some(text) => Some(Cursor::decode(text).ok_or_else(|| {
            ErrorData::invalid_params(
                format!("`{text}` is not a cursor this server gave out"),
                Some(json!({ "cursor": text })),
            )
        })?),
        None => None,
    };
    // A cursor names a position (a source, a path in it), not a page: one of
    // a source no longer registered continues nothing.
    if let (Some(start), Some(text)) = (&start, cursor) {
        let sources = ctx.catalog().and_then(|c| c.list_sources()).map_err(internal)?;
        if sources.iter().all(|s| s.id != start.source_id) {
            return Err(ErrorData::invalid_params(
                format!(
                    "`{text}` continues the skills of a source that is not registered (any more): list again without a cursor"
                ),
                Some(json!({ "cursor": text })),
            ));
        }
    }
    page(ctx, start, PAGE_SIZE).map_err(internal)
}

fn page(ctx: &Context, start: Option<Cursor>, size: usize) -> Result<ListSkillsResult> {
    let catalog = ctx.catalog()?;
    let policy = ctx.serving_audit_policy()?;
    let mut sources = catalog.list_sources()?;
    sources.sort_by_key(|s| s.id);
    // The project's own skills (a handful) open the first page, on top of its size.
    let mut listed: Vec<Skill> = match start {
        None => project_skills(ctx)?.iter().map(project_entry).collect(),
        Some(_) => Vec::new(),
    };
    let mut skills = Vec::with_capacity(size);
    let mut last: Option<Cursor> = None;
    for source in sources
        .iter()
        .filter(|s| start.as_ref().is_none_or(|c| s.id >= c.source_id))
    {
        let mut after = start
            .as_ref()
            .filter(|c| c.source_id == source.id)
            .map(|c| c.path.clone());
        let mut git = Git::new(ctx, source);
        loop {
            let rows = catalog.skills_after(source.id, after.as_deref(), size - skills.len())?;
            let exhausted = rows.len() < size - skills.len();
            for row in rows {
                after = Some(row.path.clone());
                if !served(&catalog, source, &row, &policy)? {
                    continue;
                }
                match entry(&catalog, source, &row, &mut git) {
                    Ok((skill, _)) => skills.push(skill),
                    // A skill indexed before digests were recorded whose cache is
                    // gone cannot be served; the rest of the page still can.
                    Err(e) => tracing::warn!(
                        "`{}` of `{}` left out of skills/list ({}); `aam source update {}` restores it",
                        row.path,
                        source.name,
                        e.code(),
                        source.name
                    ),
                }
            }
            if skills.len() == size {
                last = after.map(|path| Cursor {
                    source_id: source.id,
                    path,
                });
                break;
            }
            if exhausted {
                break;
            }
        }
        if last.is_some() {
            break;
        }
    }
    listed.extend(skills);
    let mut result = ListSkillsResult::with_all_items(listed);
    result.next_cursor = last.map(|c| c.encode());
    Ok(result)
}

/// The entry of the skill whose `SKILL.md` is at `uri`; `-32602` when none is served there.
pub(super) fn get(ctx: &Context, uri: &str) -> std::result::Result<GetSkillResult, ErrorData> {
    let entry = if let Some(found) = in_project(ctx, uri).map_err(internal)? {
        (found.relative == SKILL_MD).then(|| project_entry(&found.skill))
    } else {
        locate(ctx, uri)
            .map_err(internal)?
            .filter(|located| located.relative == SKILL_MD)
            .map(|located| located.skill)
    };
    match entry {
        Some(skill) if skill.uri == uri => Ok(GetSkillResult::new(skill)),
        Some(skill) => Err(served_as(uri, &skill.uri)),
        None => Err(ErrorData::invalid_params(
            format!("no skill is served at `{uri}`"),
            Some(json!({ "uri": uri })),
        )),
    }
}

/// The same file spelled with other escapes (`%2D` for `-`) than the URI it
/// is served as: what is returned must carry the URI the listing gave, so the
/// caller is told the one to ask for.
fn served_as(uri: &str, served: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!("`{uri}` is served as `{served}`: ask for that URI"),
        Some(json!({ "uri": uri, "served_as": served })),
    )
}

/// A skill of the project's and the path a URI names inside it.
struct InProject {
    skill: InstalledSkill,
    relative: String,
}

/// The project's skill holding `uri` (`None` for URIs outside `skill://~project/`
/// or naming no installed skill).
fn in_project(ctx: &Context, uri: &str) -> Result<Option<InProject>> {
    if !uri.starts_with(&format!("{}/", skills::PROJECT_ROOT)) {
        return Ok(None);
    }
    Ok(project_skills(ctx)?.into_iter().find_map(|skill| {
        let relative = if uri == skill.root {
            String::new()
        } else {
            let rest = uri.strip_prefix(&skill.root)?.strip_prefix('/')?;
            skills::parse(&format!("{}/{rest}", skills::PROJECT_ROOT))?.1.join("/")
        };
        Some(InProject { skill, relative })
    }))
}

/// The skills installed in the served project that follow the rules. A lock
/// file that cannot be read or trusted is logged and serves none of them, so
/// the catalog's skills stay listed.
fn project_skills(ctx: &Context) -> Result<Vec<InstalledSkill>> {
    let roots = crate::tools::install::roots(ctx, false)?;
    let installed = crate::packages::lock::read(&ctx.project_root()).and_then(|lock| skills::installed(&roots, &lock));
    let installed = installed.unwrap_or_else(|e| {
        tracing::warn!(code = %e.code(), "the project's installed skills are not served: {}", e.message());
        Vec::new()
    });
    // Held to the same gate as the catalog's skills, as their files are now.
    let policy = ctx.serving_audit_policy()?;
    Ok(installed
        .into_iter()
        .filter(|skill| match skill.blocked_by(&policy) {
            Some(rule) => {
                tracing::info!(skill = %skill.root, rule, "an installed skill is not served: the content audit finds what `audit.block` blocks");
                false
            }
            None => true,
        })
        .collect())
}

/// The `skills/list` entry of an installed skill, digests from its bytes now.
fn project_entry(skill: &InstalledSkill) -> Skill {
    let resources = skill
        .files
        .iter()
        .map(|(relative, bytes)| SkillResource::from_bytes(skills::file_uri(&skill.root, relative), bytes))
        .collect();
    Skill::new(
        skills::file_uri(&skill.root, SKILL_MD),
        frontmatter_of(skill.frontmatter.clone()),
        SkillResources::Files(resources),
    )
}

/// Splits frontmatter fields into `name`, `description` and the rest.
fn frontmatter_of(mut fields: Map<String, Value>) -> SkillFrontmatter {
    let mut take = |key: &str| match fields.remove(key) {
        Some(Value::String(text)) => text,
        _ => String::new(),
    };
    let name = take("name");
    let description = take("description");
    let mut front = SkillFrontmatter::new(name, description);
    front.extra = fields;
    front
}

/// The bytes of a skill file, `None` when no served skill has a file at
/// `uri`; `-32602` for a file spelled otherwise than it is served as.
pub(super) fn read(ctx: &Context, uri: &str) -> std::result::Result<Option<ReadResourceResult>, ErrorData> {
    let protocol = |e: Error| super::resources::to_protocol(uri, &e);
    let (root, relative, bytes) = if let Some(found) = in_project(ctx, uri).map_err(protocol)? {
        let Some((_, bytes)) = found.skill.files.into_iter().find(|(path, _)| *path == found.relative) else {
            return Ok(None);
        };
        (found.skill.root, found.relative, bytes)
    } else {
        let Some(located) = locate(ctx, uri).map_err(protocol)? else {
            return Ok(None);
        };
        let mut git = Git::new(ctx, &located.source);
        let bytes = if located.relative == SKILL_MD {
            git.main_content(&located.row).map_err(protocol)?
        } else {
            let path = join(&located.row.path, &located.relative);
            let Some(file) = located.files.iter().find(|f| f.path == path && !f.symlink) else {
                return Ok(None);
            };
            git.blob(&file.git_blob, &file.path).map_err(protocol)?
        };
        (located.root, located.relative, bytes)
    };
    let served = skills::file_uri(&root, &relative);
    if served != uri {
        return Err(served_as(uri, &served));
    }
    // The type the listing gave; only the encoding depends on the bytes.
    let mime = skills::mime_type(&relative);
    let text = match skills::is_textual(mime) {
        true => String::from_utf8(bytes).map_err(|e| e.into_bytes()),
        false => Err(bytes),
    };
    let contents = match text {
        Ok(text) => ResourceContents::text(text, uri),
        Err(bytes) => ResourceContents::blob(base64::engine::general_purpose::STANDARD.encode(bytes), uri),
    }
    .with_mime_type(mime);
    Ok(Some(ReadResourceResult::new(vec![contents])))
}

/// The direct children of a folder of a served skill (its root or a folder
/// inside it); `-32602` for anything else.
pub(super) fn directory(ctx: &Context, uri: &str) -> std::result::Result<ListResourcesResult, ErrorData> {
    let not_a_directory =
        || ErrorData::invalid_params(format!("`{uri}` is not a skill folder"), Some(json!({ "uri": uri })));
    let uri = uri.trim_end_matches('/');
    let (root, relative, files) = match in_project(ctx, uri).map_err(internal)? {
        Some(found) => {
            let entry = project_entry(&found.skill);
            let relatives = found.skill.files.into_iter().map(|(path, _)| path);
            (found.skill.root, found.relative, pair(&entry, relatives))
        }
        None => {
            let located = locate_folder(ctx, uri).map_err(internal)?.ok_or_else(not_a_directory)?;
            let relatives = std::iter::once(SKILL_MD.to_string()).chain(
                located
                    .files
                    .iter()
                    .filter_map(|f| inside(&located.row, f))
                    .map(str::to_string),
            );
            let files = pair(&located.skill, relatives);
            (located.root, located.relative, files)
        }
    };
    let prefix = if relative.is_empty() {
        String::new()
    } else {
        format!("{relative}/")
    };
    let mut folders = BTreeSet::new();
    let mut children = Vec::new();
    for (path, entry) in &files {
        let Some(rest) = path.strip_prefix(&prefix) else {
            continue;
        };
        match rest.split_once('/') {
            Some((folder, _)) => {
                folders.insert(folder.to_string());
            }
            None => children.push(
                Resource::new(entry.uri.clone(), rest.to_string())
                    .with_mime_type(skills::mime_type(rest))
                    .with_size(entry.size),
            ),
        }
    }
    if children.is_empty() && folders.is_empty() {
        return Err(not_a_directory());
    }
    let base = if relative.is_empty() {
        root
    } else {
        skills::file_uri(&root, &relative)
    };
    for folder in folders {
        children
            .push(Resource::new(skills::file_uri(&base, &folder), folder.clone()).with_mime_type(DIRECTORY_MIME_TYPE));
    }
    Ok(ListResourcesResult::with_all_items(children))
}

/// Each manifest entry of `skill` with its path inside the skill (`relatives`
/// in the order the entries were made).
fn pair(skill: &Skill, relatives: impl Iterator<Item = String>) -> Vec<(String, SkillResource)> {
    let SkillResources::Files(entries) = &skill.resources else {
        return Vec::new();
    };
    relatives.zip(entries.iter().cloned()).collect()
}

/// A served skill found by a URI inside it.
struct Located {
    source: SourceRecord,
    row: SkillRow,
    files: Vec<SkillFile>,
    skill: Skill,
    /// The skill folder's URI.
    root: String,
    /// The path the URI names inside the skill (decoded).
    relative: String,
}

/// The served skill holding `uri` (a file URI), with the path inside it.
fn locate(ctx: &Context, uri: &str) -> Result<Option<Located>> {
    let Some((source, segments)) = skills::parse(uri) else {
        return Ok(None);
    };
    if segments.len() < 2 {
        return Ok(None);
    }
    // The file name is never part of the skill folder.
    find(ctx, &source, &segments, segments.len() - 1)
}

/// The served skill whose folder (or a folder inside it) is `uri`.
fn locate_folder(ctx: &Context, uri: &str) -> Result<Option<Located>> {
    let Some((source, segments)) = skills::parse(uri) else {
        return Ok(None);
    };
    if segments.is_empty() {
        return Ok(None);
    }
    find(ctx, &source, &segments, segments.len())
}

/// The served skill of `source` whose folder is the longest prefix (of at most
/// `max` segments) of `segments`.
fn find(ctx: &Context, source: &str, segments: &[String], max: usize) -> Result<Option<Located>> {
    let catalog = ctx.catalog()?;
    let source = match catalog.source_named(source) {
        Ok(found) if found.name == source => found,
        Ok(_) => return Ok(None),
        Err(e) if e.code() == ErrorCode::SourceNotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    // Candidate folders: every prefix of the path, and the scope root (whose
    // skill is named by its first segment).
    let mut candidates: Vec<String> = (1..=max).map(|n| segments[..n].join("/")).collect();
    candidates.push(source.scope_path.clone());
    let policy = ctx.serving_audit_policy()?;
    let mut best: Option<(usize, SkillRow)> = None;
    for row in catalog.skills_at(source.id, &candidates)? {
        if !served(&catalog, &source, &row, &policy)? {
            continue;
        }
        let depth = folder_segments(&source, &row).len();
        let matches = depth <= max && segments[..depth] == folder_segments(&source, &row)[..];
        if matches && best.as_ref().is_none_or(|(d, _)| depth > *d) {
            best = Some((depth, row));
        }
    }
    let Some((depth, row)) = best else {
        return Ok(None);
    };
    let relative = segments[depth..].join("/");
    // The same check the index applied to the file's repository path: what it
    // listed is readable here, and nothing else is.
    let repository_path = match row.path.as_str() {
        "" => relative.clone(),
        folder => format!("{folder}/{relative}"),
    };
    if !relative.is_empty() && crate::paths::check_relative(&repository_path).is_err() {
        return Ok(None);
    }
    let mut git = Git::new(ctx, &source);
    let (skill, files) = entry(&catalog, &source, &row, &mut git)?;
    let root = skill
        .uri
        .strip_suffix(&format!("/{SKILL_MD}"))
        .unwrap_or(&skill.uri)
        .to_string();
    Ok(Some(Located {
        source,
        row,
        files,
        skill,
        root,
        relative,
    }))
}

/// The decoded URI segments of a skill's folder after the source.
fn folder_segments(source: &SourceRecord, row: &SkillRow) -> Vec<String> {
    if row.path == source.scope_path || row.path.is_empty() {
        vec![name_of(row).unwrap_or_default()]
    } else {
        row.path.split('/').map(str::to_string).collect()
    }
}

fn frontmatter(row: &SkillRow) -> Map<String, Value> {
    row.frontmatter_json
        .as_deref()
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or_default()
}

fn name_of(row: &SkillRow) -> Option<String> {
    frontmatter(row).get("name").and_then(Value::as_str).map(str::to_string)
}

/// Whether a live skill follows the rules (and no other skill's folder holds
/// it), and the content audit finds nothing in it that `audit.block` blocks:
/// serving a skill hands its text to an agent, as installing it would.
fn served(catalog: &Catalog, source: &SourceRecord, row: &SkillRow, policy: &Policy) -> Result<bool> {
    let enclosing = catalog.skills_at(source.id, skills::ancestors(&row.path))?;
    let follows_rules = skills::problem(row, &source.scope_path, |folder| {
        enclosing.iter().any(|s| s.path == folder)
    })
    .is_none();
    Ok(follows_rules && !skills::blocked(catalog, row.id, policy)?)
}

/// The `skills/list` entry of a served skill, and its recorded files.
fn entry(
    catalog: &Catalog,
    source: &SourceRecord,
    row: &SkillRow,
    git: &mut Git<'_>,
) -> Result<(Skill, Vec<SkillFile>)> {
    let front = frontmatter_of(frontmatter(row));
    let root = skills::root_uri(&source.name, &row.path, &source.scope_path, &front.name);
    let skill_uri = skills::file_uri(&root, SKILL_MD);
    let main_digest = match &row.main_sha256 {
        Some(hex) => hex.clone(),
        None => sha256_hex(&git.main_content(row)?),
    };
    let mut resources = vec![SkillResource::new(
        skill_uri.clone(),
        format!("sha256:{main_digest}"),
        row.main_size,
    )];
    let files = catalog.skill_files(row.id)?;
    for file in &files {
        let Some(relative) = inside(row, file) else {
            continue;
        };
        let digest = match &file.sha256 {
            Some(hex) => hex.clone(),
            None => sha256_hex(&git.blob(&file.git_blob, &file.path)?),
        };
        resources.push(SkillResource::new(
            skills::file_uri(&root, relative),
            format!("sha256:{digest}"),
            file.size,
        ));
    }
    Ok((Skill::new(skill_uri, front, SkillResources::Files(resources)), files))
}

/// The path of a served file inside its skill: every recorded file but the
/// main file (served as `SKILL.md`) and symlinks (a host writes files, not links).
fn inside<'f>(row: &SkillRow, file: &'f SkillFile) -> Option<&'f str> {
    if file.symlink || file.path == row.main_file {
        return None;
    }
    if row.path.is_empty() {
        return Some(&file.path);
    }
    file.path.strip_prefix(&row.path)?.strip_prefix('/')
}

fn join(folder: &str, relative: &str) -> String {
    if folder.is_empty() {
        relative.to_string()
    } else {
        format!("{folder}/{relative}")
    }
}

/// A source's git cache, opened on first use.
struct Git<'a> {
    ctx: &'a Context,
    source: &'a SourceRecord,
    cache: Option<GitCache>,
}

impl<'a> Git<'a> {
    fn new(ctx: &'a Context, source: &'a SourceRecord) -> Self {
        Self {
            ctx,
            source,
            cache: None,
        }
    }

    fn cache(&mut self) -> Result<&GitCache> {
        if self.cache.is_none() {
            let dir = self.ctx.home.git_cache_dir().join(&self.source.cache_key);
            let cache = GitCache::open(&dir).map_err(|e| {
                e.with_hint(format!(
                    "run `aam source update {}` to fetch it again",
                    self.source.name
                ))
            })?;
            self.cache = Some(cache);
        }
        Ok(self.cache.as_ref().expect("opened above"))
    }

    /// A blob's bytes by its recorded id.
    fn blob(&mut self, id: &str, path: &str) -> Result<Vec<u8>> {
        let oid = Oid::from_hex(id.as_bytes())
            .map_err(|_| Error::new(ErrorCode::CatalogError, format!("`{id}` is not a blob id")))?;
        self.cache()?.read_blob(oid, path)
    }

    /// The bytes of a skill's `SKILL.md`: its own blob, or (when it is a
    /// symlink) the file it leads to at the indexed commit.
    fn main_content(&mut self, row: &SkillRow) -> Result<Vec<u8>> {
        let missing = || {
            Error::new(
                ErrorCode::CatalogError,
                format!("the content of `{}` is not in the git cache", row.main_file),
            )
            .with_hint("run `aam catalog repair`, or `aam source update` for its source")
        };
        let head = self.source.head_commit.clone().ok_or_else(missing)?;
        let commit = Oid::from_hex(head.as_bytes()).map_err(|_| missing())?;
        let cache = self.cache()?;
        let (root_tree, _) = cache.commit_tree(commit)?;
        Snapshot::new(cache, root_tree, "", "")
            .read_path(&row.content_path)?
            .ok_or_else(missing)
    }
}

/// An aam failure behind a skills request, as a protocol error carrying the aam error body.
fn internal(error: Error) -> ErrorData {
    ErrorData::internal_error(
        format!("[{}] {}", error.code(), error.message()),
        Some(json!({ "error": error.to_body() })),
    )
}
