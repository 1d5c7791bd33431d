//! Turning a commit of a cached repository into catalog records.
//!
//! A [`Snapshot`] is one commit seen through a source's scope. Indexing reads the
//! scope's tree, detects artifacts with the `scan` rules and reads only the blobs
//! those artifacts consist of. Updates work on *regions*: the smallest folders
//! (or single files) whose detection can change when the given paths change, so
//! an update re-reads only what changed, however large the repository.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use super::git::{FileMode, GitCache, Oid, PathTarget, TreeFile};
use crate::catalog::{FileRecord, IndexedArtifact, LiveArtifact, SourceChanges};
use crate::error::Result;
use crate::progress::Progress;
use crate::scan::{self, ArtifactKind, Detected};

/// Files of some regions and the artifacts found among them.
pub struct Detection {
    files: Vec<TreeFile>,
    detected: Vec<Detected>,
}

impl Detection {
    /// How many artifacts were found.
    pub fn len(&self) -> usize {
        self.detected.len()
    }

    /// Whether none were found.
    pub fn is_empty(&self) -> bool {
        self.detected.is_empty()
    }
}

/// The entries of one folder, by name.
type Listing = HashMap<String, PathTarget>;

/// How many symlinks are followed in a row before giving up.
const MAX_LINK_HOPS: usize = 8;

/// One commit of a cached repository, limited to a scope folder.
pub struct Snapshot<'c> {
    cache: &'c GitCache,
    root_tree: Oid,
    scope: String,
    root_name: String,
    /// Decoded folders by repository path (`None`: not a folder), so each tree is
    /// read once however often paths below it are looked up.
    listings: RefCell<HashMap<String, Option<Rc<Listing>>>>,
}

impl<'c> Snapshot<'c> {
    /// A view of `root_tree` limited to `scope` (`""` = everything). `root_name`
    /// names a skill whose `SKILL.md` sits at the scope root.
    pub fn new(cache: &'c GitCache, root_tree: Oid, scope: &str, root_name: &str) -> Self {
        Self {
            cache,
            root_tree,
            scope: scope.to_string(),
            root_name: root_name.to_string(),
            listings: Default::default(),
        }
    }

    /// The id of the scope folder's tree, `None` when the scope does not exist.
    pub fn scope_tree(&self) -> Result<Option<Oid>> {
        Ok(match self.lookup(&self.scope)? {
            Some(PathTarget::Tree(id)) => Some(id),
            _ => None,
        })
    }

    /// The regions (repository paths) whose artifacts can differ when `changed`
    /// paths change, plus the `extra` regions given. Paths outside the scope are
    /// ignored; nested regions merge.
    pub fn regions_for(&self, changed: &[String], extra: &[String]) -> Result<Vec<String>> {
        let mut regions = extra.to_vec();
        for path in changed {
            if self.relative(path).is_none() {
                continue;
            }
            let (dir, file) = split_dir(path);
            let (start, fallback) = if let Some(root) = scan::plugin_root(path) {
                (Some(root.to_string()), root.to_string())
            } else if file.eq_ignore_ascii_case("SKILL.md") {
                (self.parent_in_scope(dir), dir.to_string())
            } else {
                (Some(dir.to_string()), path.clone())
            };
            let enclosing = match start {
                Some(start) => self.enclosing_skill(&start)?,
                None => None,
            };
            regions.push(enclosing.unwrap_or(fallback));
        }
        Ok(merge_regions(regions))
    }

    /// Finds the artifacts inside `regions` (folders or files) by path rules,
    /// without reading their contents yet.
    pub fn detect(&self, regions: &[String]) -> Result<Detection> {
        let mut files = Vec::new();
        for region in regions {
            match self.lookup(region)? {
                Some(PathTarget::Tree(id)) => files.extend(self.cache.files_under(id, region)?),
                Some(PathTarget::File(mode, oid)) => files.push(TreeFile {
                    path: region.clone(),
                    mode,
                    oid,
                }),
                None => {}
            }
        }
        files.retain(|f| self.relative(&f.path).is_some());
        files.sort_by(|a, b| a.path.cmp(&b.path));
        let listed = self.plugin_listings(regions, &files)?;
        let relative: Vec<&str> = files.iter().filter_map(|f| self.relative(&f.path)).collect();
        let detected = scan::detect(&relative, &listed, &self.root_name);
        Ok(Detection { files, detected })
    }

    /// Reads the detected artifacts one by one, reporting each to `progress`.
    pub fn read<'s>(
        &'s self,
        detection: &'s Detection,
        progress: &'s dyn Progress,
    ) -> impl Iterator<Item = Result<IndexedArtifact>> + 's {
        progress.start("indexing", Some(detection.detected.len() as u64));
        detection.detected.iter().map(move |found| {
            let artifact = self.read_artifact(found, &detection.files);
            progress.advance(1);
            artifact
        })
    }

    /// Detects and reads every artifact inside `regions`.
    pub fn index_regions(&self, regions: &[String], progress: &dyn Progress) -> Result<Vec<IndexedArtifact>> {
        let detection = self.detect(regions)?;
        let artifacts = self.read(&detection, progress).collect();
        progress.finish();
        artifacts
    }

    /// The scope root, as the one region covering everything.
    pub fn scope(&self) -> &str {
        &self.scope
    }

    /// The path relative to the scope root, `None` when outside the scope.
    fn relative<'p>(&self, path: &'p str) -> Option<&'p str> {
        if self.scope.is_empty() {
            return Some(path);
        }
        if path == self.scope {
            return Some("");
        }
        path.strip_prefix(self.scope.as_str())?.strip_prefix('/')
    }

    fn to_repo_path(&self, relative: &str) -> String {
        match (self.scope.is_empty(), relative.is_empty()) {
            (true, _) => relative.to_string(),
            (false, true) => self.scope.clone(),
            (false, false) => format!("{}/{relative}", self.scope),
        }
    }

    /// The folder above `dir`, unless `dir` is the scope root.
    fn parent_in_scope(&self, dir: &str) -> Option<String> {
        (dir != self.scope).then(|| split_dir(dir).0.to_string())
    }

    /// The nearest folder at or above `dir` (within the scope) that holds a skill file.
    fn enclosing_skill(&self, dir: &str) -> Result<Option<String>> {
        let mut current = dir.to_string();
        loop {
            if self.relative(&current).is_none() {
                return Ok(None);
            }
            if self.is_skill_dir(&current)? {
                return Ok(Some(current));
            }
            match self.parent_in_scope(&current) {
                Some(parent) if parent != current => current = parent,
                _ => return Ok(None),
            }
        }
    }

    fn is_skill_dir(&self, dir: &str) -> Result<bool> {
        Ok(self
            .listing(dir)?
            .is_some_and(|entries| entries.keys().any(|n| n.eq_ignore_ascii_case("SKILL.md"))))
    }

    /// What a repository path names in this commit; `""` is the root folder.
    fn lookup(&self, path: &str) -> Result<Option<PathTarget>> {
        if path.is_empty() {
            return Ok(Some(PathTarget::Tree(self.root_tree)));
        }
        let (dir, name) = split_dir(path);
        Ok(self.listing(dir)?.and_then(|entries| entries.get(name).copied()))
    }

    /// The decoded entries of the folder at `dir`, `None` when it is not a folder.
    fn listing(&self, dir: &str) -> Result<Option<Rc<Listing>>> {
        if let Some(known) = self.listings.borrow().get(dir) {
            return Ok(known.clone());
        }
        let listing = match self.lookup(dir)? {
            Some(PathTarget::Tree(id)) => Some(Rc::new(self.cache.tree_entries(id)?.into_iter().collect())),
            _ => None,
        };
        self.listings.borrow_mut().insert(dir.to_string(), listing.clone());
        Ok(listing)
    }

    /// Files listed by plugin manifests inside the regions or above them.
    fn plugin_listings(&self, regions: &[String], files: &[TreeFile]) -> Result<BTreeMap<String, ArtifactKind>> {
        let mut manifests: BTreeMap<String, Oid> = files
            .iter()
            .filter(|f| f.mode != FileMode::Symlink && scan::plugin_root(&f.path).is_some())
            .map(|f| (f.path.clone(), f.oid))
            .collect();
        for region in regions {
            let mut dir = split_dir(region).0.to_string();
            while self.relative(&dir).is_some() {
                let manifest = if dir.is_empty() {
                    ".claude-plugin/plugin.json".to_string()
                } else {
                    format!("{dir}/.claude-plugin/plugin.json")
                };
                if let Some(PathTarget::File(FileMode::File | FileMode::Executable, oid)) = self.lookup(&manifest)? {
                    manifests.insert(manifest, oid);
                }
                if dir.is_empty() || dir == self.scope {
                    break;
                }
                dir = split_dir(&dir).0.to_string();
            }
        }
        let mut listed = BTreeMap::new();
        for (path, oid) in manifests {
            let Some(root) = self.relative(&path).and_then(scan::plugin_root) else {
                continue;
            };
            let bytes = self.cache.read_blob(oid)?;
            listed.extend(scan::plugin_listed(root, &bytes));
        }
        Ok(listed)
    }

    /// Reads every file of a detected artifact and builds its record.
    fn read_artifact(&self, found: &Detected, files: &[TreeFile]) -> Result<IndexedArtifact> {
        let main_path = self.to_repo_path(&found.main_file);
        let mut records = Vec::with_capacity(found.files.len());
        let mut digest = blake3::Hasher::new();
        let mut main = None;
        for &index in &found.files {
            let file = &files[index];
            let bytes = self.cache.read_blob(file.oid)?;
            records.push(FileRecord {
                path: file.path.clone(),
                mode: file.mode.as_str(),
                git_blob: file.oid.to_string(),
                blake3: blake3::hash(&bytes).to_hex().to_string(),
                size: bytes.len() as u64,
            });
            digest.update(format!("{}\0{}\0{}\n", file.path, file.mode.as_str(), file.oid).as_bytes());
            if file.path == main_path {
                main = Some((file.mode, bytes));
            }
        }
        let mut warnings = Vec::new();
        let (content_path, content) = match main {
            Some((FileMode::Symlink, target)) => match self.follow_link(&main_path, &target)? {
                Ok((path, oid)) => {
                    digest.update(format!("content\0{path}\0{oid}\n").as_bytes());
                    (path, Some(self.cache.read_blob(oid)?))
                }
                Err(problem) => {
                    warnings.push(problem);
                    (main_path.clone(), None)
                }
            },
            Some((_, bytes)) => (main_path.clone(), Some(bytes)),
            None => (main_path.clone(), None),
        };
        let analysis = scan::analyze(found, content.as_deref());
        warnings.extend(analysis.warnings);
        Ok(IndexedArtifact {
            kind: found.kind,
            path: self.to_repo_path(&found.path),
            name: analysis.name,
            description: analysis.description,
            platform: found.platform,
            main_file: main_path,
            content_path,
            frontmatter_json: analysis.frontmatter.map(|f| serde_json::Value::Object(f).to_string()),
            has_vendor_agent: found.has_vendor_agent,
            warnings,
            content_digest: digest.finalize().to_hex().to_string(),
            main_size: content.as_ref().map_or(0, |c| c.len() as u64),
            text: analysis.text,
            truncated: analysis.truncated,
            files: records,
        })
    }

    /// Follows a symlink inside the repository to a file; the `Err` side is a warning.
    fn follow_link(&self, link: &str, target: &[u8]) -> Result<Result<(String, Oid), String>> {
        let mut link = link.to_string();
        let mut target = String::from_utf8_lossy(target).into_owned();
        for _ in 0..MAX_LINK_HOPS {
            let Some(resolved) = scan::resolve_link(&link, &target) else {
                return Ok(Err(format!(
                    "symlink `{link}` points outside the repository (`{target}`); not followed"
                )));
            };
            match self.lookup(&resolved)? {
                Some(PathTarget::File(FileMode::Symlink, oid)) => {
                    target = String::from_utf8_lossy(&self.cache.read_blob(oid)?).into_owned();
                    link = resolved;
                }
                Some(PathTarget::File(_, oid)) => return Ok(Ok((resolved, oid))),
                Some(PathTarget::Tree(_)) | None => {
                    return Ok(Err(format!(
                        "symlink `{link}` points to `{target}`, which is not a file here"
                    )));
                }
            }
        }
        Ok(Err(format!("symlink `{link}` is part of a chain too long to follow")))
    }
}

/// Compares what a region held before with what it holds now.
pub fn reconcile(old: Vec<LiveArtifact>, new: Vec<IndexedArtifact>) -> SourceChanges {
    let mut old_by_key: HashMap<(ArtifactKind, String), LiveArtifact> =
        old.into_iter().map(|a| ((a.kind, a.path.clone()), a)).collect();
    let mut changes = SourceChanges::default();
    for artifact in new {
        match old_by_key.remove(&(artifact.kind, artifact.path.clone())) {
            None => changes.added.push(artifact),
            Some(previous) if previous.content_digest != artifact.content_digest => {
                changes.modified.push((previous.id, artifact));
            }
            Some(_) => {}
        }
    }
    let mut removed: Vec<LiveArtifact> = old_by_key.into_values().collect();
    removed.sort_by_key(|a| a.id);
    changes.removed = removed;
    changes
}

/// Drops regions contained in other regions.
fn merge_regions(mut regions: Vec<String>) -> Vec<String> {
    regions.sort();
    regions.dedup();
    let mut kept: Vec<String> = Vec::new();
    for region in regions {
        let covered = kept.iter().any(|outer| {
            outer.is_empty()
                || region == *outer
                || region.strip_prefix(outer.as_str()).is_some_and(|r| r.starts_with('/'))
        });
        if !covered {
            kept.push(region);
        }
    }
    kept
}

fn split_dir(path: &str) -> (&str, &str) {
    match path.rfind('/') {
        Some(i) => (&path[..i], &path[i + 1..]),
        None => ("", path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_regions_merge() {
        let merged = merge_regions(vec![
            "skills/a/x.md".into(),
            "skills/a".into(),
            "skills/ab".into(),
            "agents/b.md".into(),
            "skills/a".into(),
        ]);
        assert_eq!(merged, ["agents/b.md", "skills/a", "skills/ab"]);
        assert_eq!(merge_regions(vec!["".into(), "x".into()]), [""]);
    }
}
