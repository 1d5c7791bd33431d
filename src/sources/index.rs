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

use super::folder::Folder;
use super::git::{FileMode, GitCache, Oid, PathTarget, TreeFile};
use crate::audit::{self, FileInfo, Finding};
use crate::cancel::Cancel;
use crate::catalog::{FileRecord, IndexedArtifact, KnownBlob, LiveArtifact, SourceChanges};
use crate::error::Result;
use crate::progress::Progress;
use crate::scan::{self, ArtifactKind, Detected};

/// Files of some regions and the artifacts found among them.
pub struct Detection {
    files: Vec<TreeFile>,
    /// Sorted by kind and path, except from [`Snapshot::detect_apart`], whose
    /// artifacts are read in pack order ([`Snapshot::pack_order`]) anyway.
    detected: Vec<Detected>,
    /// Where each file's blob lies in the cache's packs, when found with them
    /// ([`Snapshot::detect_apart`]).
    positions: Option<Vec<Option<(usize, u64)>>>,
}

/// Artifacts [`Snapshot::read_on_thread`] hands over at a time.
const ARTIFACTS_PER_BATCH: usize = 64;

/// Batches that may wait at each hand-over of a `source add`: between the
/// reading thread and the catalog writer (about 1,000 artifacts, 2 MB, read
/// ahead), and between the writer and the search index (`tools::writes`). The
/// three share the cores and each stalls now and then (the index writing a
/// segment, the catalog spilling pages); with two batches each stall soon
/// stopped the others too, with sixteen it rarely does (a 10,000-artifact add
/// 7% faster).
pub(crate) const BATCHES_AHEAD: usize = 16;

/// Artifacts the reading thread of [`Snapshot::read_on_thread`] reads through
/// one handle on the cache. It reads in pack order, so each window of artifacts
/// touches its own stretch of the pack, and a fresh handle per window unmaps the
/// pages read before: a mapped page stays in the process's memory until it is
/// unmapped (at 100,000 artifacts, the whole 69 MB pack). Windows of 8,192
/// artifacts left 6 MB more at the peak; reopening costs about a millisecond.
const ARTIFACTS_PER_MAPPING: usize = 2048;

/// How many symlinks are followed in a row before giving up.
const MAX_LINK_HOPS: usize = 8;

/// Most files an artifact may hold to be catalogued: every one is listed in
/// `aam info`, a Skills over MCP entry and a package manifest, so a skill of
/// 30,000 files made answers of many megabytes. Real skills hold dozens.
pub const MAX_FILES_PER_ARTIFACT: usize = 1000;

/// One commit of a cached repository, limited to a scope folder.
pub struct Snapshot<'c> {
    cache: &'c GitCache,
    root_tree: Oid,
    scope: String,
    root_name: String,
    /// Parsed folders by repository path (`None`: not a folder), so each tree is
    /// read once however often paths below it are looked up.
    folders: RefCell<HashMap<String, Option<Rc<Folder>>>>,
    /// Whether the folder at a repository path holds a skill file: every `SKILL.md`
    /// changed in a folder of skills asks it of that folder.
    skill_dirs: RefCell<HashMap<String, bool>>,
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
            folders: Default::default(),
            skill_dirs: Default::default(),
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

    /// Like [`Snapshot::detect`], unsorted (the artifacts are read in pack
    /// order), and through a handle on the cache of its own: the
    /// pages of every tree it read (all of a new source's) are unmapped when it
    /// returns instead of staying in the process's memory while the source is read.
    /// Meanwhile a second thread finds where each file's blob lies in the packs
    /// (the order [`Snapshot::read_on_thread`] reads them in), which took a
    /// tenth of a second more before the first read at 100,000 artifacts.
    pub fn detect_apart(&self, regions: &[String]) -> Result<Detection> {
        let cache = GitCache::open(self.cache.dir())?;
        let snapshot = SnapshotPlace::of(self).snapshot(&cache);
        let files = snapshot.files_in(regions)?;
        let indexes = cache.pack_indexes();
        let (detected, positions) = std::thread::scope(|scope| {
            let positions = scope.spawn(|| files.iter().map(|f| indexes.position(f.oid)).collect::<Vec<_>>());
            let detected = snapshot.detect_among(regions, &files);
            (detected, positions.join())
        });
        Ok(Detection {
            detected: detected?,
            positions: positions.ok(),
            files,
        })
    }

    /// Finds the artifacts inside `regions` (folders or files) by path rules,
    /// without reading their contents yet; sorted by kind and path.
    pub fn detect(&self, regions: &[String]) -> Result<Detection> {
        let files = self.files_in(regions)?;
        let mut detected = self.detect_among(regions, &files)?;
        detected.sort_by(|a, b| (a.kind, &a.path).cmp(&(b.kind, &b.path)));
        Ok(Detection {
            files,
            detected,
            positions: None,
        })
    }

    /// The files inside `regions` that may be listed, in path order.
    fn files_in(&self, regions: &[String]) -> Result<Vec<TreeFile>> {
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
        // A path no install or `skill://` read would accept (`:`, a backslash,
        // a control character...) is left out here, so it is never listed.
        files.retain(|f| match crate::paths::check_relative(&f.path) {
            Ok(()) => true,
            Err(why) => {
                tracing::warn!("left out `{}`: {why}", f.path.escape_debug());
                false
            }
        });
        files.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(files)
    }

    /// The artifacts among `files` (those of `regions`), in the order found.
    fn detect_among(&self, regions: &[String], files: &[TreeFile]) -> Result<Vec<Detected>> {
        let listed = self.plugin_listings(regions, files)?;
        let relative: Vec<&str> = files.iter().filter_map(|f| self.relative(&f.path)).collect();
        Ok(scan::detect_as_found(&relative, &listed, &self.root_name))
    }

    /// Reads the detected artifacts one by one, in pack order, reporting each to `progress`;
    /// once `cancel` is raised the next item is `AAM_CANCELLED` (which aborts
    /// the write consuming them).
    pub fn read<'s>(
        &'s self,
        detection: &'s Detection,
        progress: &'s dyn Progress,
        cancel: &'s Cancel,
    ) -> impl Iterator<Item = Result<IndexedArtifact>> + 's {
        progress.start("indexing", Some(detection.detected.len() as u64));
        let none = KnownBlobs::new();
        self.pack_order(detection).into_iter().filter_map(move |i| {
            let found = &detection.detected[i];
            let artifact = self.read_new(found, &detection.files, &none, cancel);
            progress.advance(1);
            unless_oversized(artifact, || self.to_repo_path(&found.path))
        })
    }

    /// Reads one artifact that is new to the catalog, unless `cancel` was raised.
    fn read_new(
        &self,
        found: &Detected,
        files: &[TreeFile],
        none: &KnownBlobs,
        cancel: &Cancel,
    ) -> Result<IndexedArtifact> {
        cancel.check()?;
        let prepared = self.prepare(found, files)?;
        self.read_prepared(prepared, none)
    }

    /// The positions in `detection` of the detected artifacts, in the order their
    /// main files lie in the cache's packs (loose objects last; artifacts whose
    /// main files are the same blob, or loose, by kind and path):
    /// git stores most blobs as deltas against blobs written just before, so
    /// reading in pack order decodes each base once, where path order re-inflates
    /// chains up to 50 deep.
    fn pack_order(&self, detection: &Detection) -> Vec<usize> {
        let main_file = |found: &Detected| {
            let main_path = self.to_repo_path(&found.main_file);
            found
                .files
                .iter()
                .copied()
                .find(|&i| detection.files[i].path == main_path)
        };
        let mains: Vec<Option<usize>> = detection.detected.iter().map(main_file).collect();
        let positions: Vec<Option<(usize, u64)>> = match &detection.positions {
            Some(known) => mains.iter().map(|main| main.and_then(|i| known[i])).collect(),
            None => {
                let blobs = mains.iter().flatten().map(|&i| detection.files[i].oid);
                let mut found = self.cache.pack_positions(blobs).into_iter();
                mains
                    .iter()
                    .map(|main| main.and_then(|_| found.next().flatten()))
                    .collect()
            }
        };
        let mut ordered: Vec<(Option<(usize, u64)>, usize)> = positions
            .into_iter()
            .enumerate()
            .map(|(i, position)| (position, i))
            .collect();
        // `None` sorts first: put loose and unknown objects after the packed ones.
        // The artifacts themselves are looked at only on a tie: each look is a
        // read from anywhere in memory (12 ms more at 100,000 artifacts).
        ordered.sort_by(|&(a, i), &(b, j)| {
            (a.is_none(), a).cmp(&(b.is_none(), b)).then_with(|| {
                let (x, y) = (&detection.detected[i], &detection.detected[j]);
                (x.kind, &x.path).cmp(&(y.kind, &y.path))
            })
        });
        ordered.into_iter().map(|(_, i)| i).collect()
    }

    /// Like [`Snapshot::read`], with the blobs read, inflated, parsed and audited
    /// on a second thread (its own handle on the cache, spawned in `scope`) while
    /// the caller consumes what it sends, so writing the catalog and reading git
    /// use both cores. The thread owns `detection` and lets each artifact's part
    /// of it go once read. The reader stops at its first error, or at its next
    /// hand-over once the consumer dropped the iterator; a reader that ended any
    /// other way (a panic) ends the iterator with an error, never just an end.
    pub fn read_on_thread<'scope, 'env: 'scope>(
        &self,
        scope: &'scope std::thread::Scope<'scope, 'env>,
        detection: Detection,
        progress: &'env dyn Progress,
        cancel: &'env Cancel,
    ) -> impl Iterator<Item = Result<IndexedArtifact>> + 'scope {
        // Handed over in batches: one by one, each artifact woke the consumer.
        let (sender, receiver) = std::sync::mpsc::sync_channel::<Vec<Result<IndexedArtifact>>>(BATCHES_AHEAD);
        // Set once every artifact was handed over: a reader that panicked ends the
        // stream early, and the consumer must not take that for the end.
        let finished = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let reader_finished = finished.clone();
        let place = SnapshotPlace::of(self);
        progress.start("indexing", Some(detection.detected.len() as u64));
        scope.spawn(move || {
            let mut batch = Vec::with_capacity(ARTIFACTS_PER_BATCH);
            let read_all = place.read_in_windows(detection, ARTIFACTS_PER_MAPPING, cancel, |artifact| {
                // An error ends the consumer's write: hand it over at once, read no further.
                let failed = artifact.is_err();
                batch.push(artifact);
                if failed || batch.len() >= ARTIFACTS_PER_BATCH {
                    let full = std::mem::replace(&mut batch, Vec::with_capacity(ARTIFACTS_PER_BATCH));
                    return sender.send(full).is_ok() && !failed;
                }
                true
            });
            if read_all {
                reader_finished.store(true, std::sync::atomic::Ordering::Release);
                let _ = sender.send(batch);
            }
        });
        let ended_early = std::iter::from_fn(move || {
            (!finished.swap(true, std::sync::atomic::Ordering::AcqRel)).then(|| {
                Err(crate::error::Error::internal(
                    "the thread reading the repository stopped early",
                ))
            })
        });
        receiver
            .into_iter()
            .flatten()
            .inspect(move |_| progress.advance(1))
            .chain(ended_early)
    }

    /// What changed in `regions` compared with the artifacts the catalog held
    /// there (`before`). Only new or changed artifacts are read, and of those only
    /// the blobs `known_blobs` (asked per previous artifact id) does not already cover.
    /// Stops with `AAM_CANCELLED` between artifacts once `cancel` is raised.
    pub fn changes(
        &self,
        regions: &[String],
        before: Vec<LiveArtifact>,
        known_blobs: impl Fn(crate::catalog::ArtifactId) -> Result<KnownBlobs>,
        cancel: &Cancel,
    ) -> Result<SourceChanges> {
        let detection = self.detect(regions)?;
        let mut old: HashMap<(ArtifactKind, String), LiveArtifact> =
            before.into_iter().map(|a| ((a.kind, a.path.clone()), a)).collect();
        let mut changes = SourceChanges::default();
        // Artifacts that now hold a file too large to read: no longer indexed.
        let mut unreadable = Vec::new();
        for found in &detection.detected {
            cancel.check()?;
            let prepared = self.prepare(found, &detection.files)?;
            let path = self.to_repo_path(&found.path);
            match old.remove(&(found.kind, path.clone())) {
                None => {
                    if let Some(artifact) =
                        unless_oversized(self.read_prepared(prepared, &KnownBlobs::new()), || path.clone())
                    {
                        changes.added.push(artifact?);
                    }
                }
                Some(previous) if previous.content_digest != prepared.digest => {
                    let known = known_blobs(previous.id)?;
                    match unless_oversized(self.read_prepared(prepared, &known), || path.clone()) {
                        Some(artifact) => changes.modified.push((previous.id, artifact?)),
                        None => unreadable.push(previous),
                    }
                }
                Some(_) => {}
            }
        }
        let mut removed: Vec<LiveArtifact> = old.into_values().chain(unreadable).collect();
        removed.sort_by_key(|a| a.id);
        changes.removed = removed;
        Ok(changes)
    }

    /// The bytes of the file at a repository path, `None` when it is not a file.
    pub fn read_path(&self, path: &str) -> Result<Option<Vec<u8>>> {
        match self.lookup(path)? {
            Some(PathTarget::File(_, oid)) => Ok(Some(self.cache.read_blob(oid, path)?)),
            _ => Ok(None),
        }
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
        if let Some(&known) = self.skill_dirs.borrow().get(dir) {
            return Ok(known);
        }
        let is_skill_dir = self
            .folder(dir)?
            .is_some_and(|folder| folder.any_name(|n| n.eq_ignore_ascii_case(b"SKILL.md")));
        self.skill_dirs.borrow_mut().insert(dir.to_string(), is_skill_dir);
        Ok(is_skill_dir)
    }

    /// What a repository path names in this commit; `""` is the root folder.
    fn lookup(&self, path: &str) -> Result<Option<PathTarget>> {
        if path.is_empty() {
            return Ok(Some(PathTarget::Tree(self.root_tree)));
        }
        let (dir, name) = split_dir(path);
        Ok(self.folder(dir)?.and_then(|folder| folder.get(name)))
    }

    /// The entries of the folder at `dir`, `None` when it is not a folder.
    fn folder(&self, dir: &str) -> Result<Option<Rc<Folder>>> {
        if let Some(known) = self.folders.borrow().get(dir) {
            return Ok(known.clone());
        }
        let folder = match self.lookup(dir)? {
            Some(PathTarget::Tree(id)) => Some(self.cache.folder(id)?),
            _ => None,
        };
        self.folders.borrow_mut().insert(dir.to_string(), folder.clone());
        Ok(folder)
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
            let bytes = self.cache.read_blob(oid, &path)?;
            listed.extend(scan::plugin_listed(root, &bytes));
        }
        Ok(listed)
    }

    /// Resolves what a detected artifact consists of, reading only symlink blobs:
    /// enough to compute its digest and decide whether it changed.
    fn prepare<'d>(&self, found: &'d Detected, files: &'d [TreeFile]) -> Result<Prepared<'d>> {
        let main_path = self.to_repo_path(&found.main_file);
        let mut digest = blake3::Hasher::new();
        let mut main = None;
        for &index in &found.files {
            let file = &files[index];
            // `path\0mode\0oid\n`, fed piece by piece (a `format!` per file was a
            // tenth of preparing an artifact).
            digest.update(file.path.as_bytes());
            digest.update(b"\0");
            digest.update(file.mode.as_str().as_bytes());
            digest.update(b"\0");
            digest.update(file.oid.hex_to_buf(&mut gix::hash::Kind::hex_buf()).as_bytes());
            digest.update(b"\n");
            if file.path == main_path {
                main = Some(file);
            }
        }
        let mut link = Link::default();
        let content = match main {
            Some(file) if file.mode == FileMode::Symlink => {
                link = self.follow_link(&main_path, file.oid)?;
                for hop in &link.visited {
                    digest.update(
                        format!("hop\0{}\0{}\n", hop.0, hop.1.map(|o| o.to_string()).unwrap_or_default()).as_bytes(),
                    );
                }
                link.content.clone()
            }
            Some(file) => Some((main_path.clone(), file.oid)),
            None => None,
        };
        Ok(Prepared {
            found,
            files,
            main_path,
            link,
            content,
            digest: digest.finalize().to_hex().as_str().to_owned(),
        })
    }

    /// Reads a prepared artifact's blobs and builds its record. `known` maps blob
    /// ids to (blake3, size) already recorded, so unchanged files are not re-read.
    fn read_prepared(&self, prepared: Prepared<'_>, known: &KnownBlobs) -> Result<IndexedArtifact> {
        let Prepared {
            found,
            files,
            main_path,
            link,
            content,
            digest,
        } = prepared;
        if found.files.len() > MAX_FILES_PER_ARTIFACT {
            return Err(crate::error::Error::new(
                crate::error::ErrorCode::SourceFileTooLarge,
                format!(
                    "it holds {} files; aam catalogs artifacts of at most {MAX_FILES_PER_ARTIFACT}",
                    found.files.len()
                ),
            )
            .with_hint("keep data sets and dependencies outside skill folders"));
        }
        let mut records = Vec::with_capacity(found.files.len());
        // The content file's bytes and sha256, when it is one of the artifact's files.
        let mut main_bytes = None;
        let mut main_sha256 = None;
        for &index in &found.files {
            let file = &files[index];
            let oid = file.oid.hex_to_buf(&mut gix::hash::Kind::hex_buf()).to_owned();
            let is_content = content.as_ref().is_some_and(|(path, _)| *path == file.path);
            let (blake3, sha256, size, findings) = match known.get(&oid) {
                // An unchanged blob at the same path keeps its summary and findings
                // (once its sha256 is recorded: older rows are read again).
                Some(recorded) if !is_content && recorded.path == file.path && recorded.sha256.is_some() => (
                    recorded.blake3.clone(),
                    recorded.sha256.clone(),
                    recorded.size,
                    recorded.findings.clone(),
                ),
                _ => {
                    let bytes = self.cache.read_blob(file.oid, &file.path)?;
                    let blake3 = blake3::hash(&bytes).to_hex().as_str().to_owned();
                    let sha256 = Some(sha256_hex(&bytes));
                    let findings = scan_blob(file, file.path == main_path || is_content, &bytes);
                    let size = bytes.len() as u64;
                    if is_content {
                        main_bytes = Some(bytes);
                        main_sha256.clone_from(&sha256);
                    }
                    (blake3, sha256, size, findings)
                }
            };
            records.push(FileRecord {
                path: file.path.clone(),
                mode: file.mode,
                git_blob: oid,
                blake3,
                sha256,
                size,
                findings,
            });
        }
        name_findings(&self.to_repo_path(&found.path), &mut records);
        let (content_path, content_bytes) = match content {
            Some((path, oid)) => {
                let bytes = match main_bytes {
                    Some(bytes) => bytes,
                    None => self.cache.read_blob(oid, &path)?,
                };
                (path, Some(bytes))
            }
            None => (main_path.clone(), None),
        };
        let mut warnings: Vec<String> = link.problem.into_iter().collect();
        warnings.extend(
            records
                .iter()
                .filter(|r| r.mode == FileMode::Symlink && r.path != main_path)
                .map(|r| format!("`{}` is a symlink; packages and installs leave it out", r.path)),
        );
        let analysis = scan::analyze(found, content_bytes.as_deref());
        warnings.extend(analysis.warnings);
        Ok(IndexedArtifact {
            kind: found.kind,
            path: self.to_repo_path(&found.path),
            name: analysis.name,
            description: analysis.description,
            platform: found.platform,
            main_file: main_path,
            content_path,
            link_paths: link.visited.into_iter().map(|(path, _)| path).collect(),
            frontmatter_json: analysis.frontmatter.map(|f| serde_json::Value::Object(f).to_string()),
            has_vendor_agent: found.has_vendor_agent,
            warnings,
            content_digest: digest,
            main_size: content_bytes.as_ref().map_or(0, |c| c.len() as u64),
            main_sha256: main_sha256.or_else(|| content_bytes.as_deref().map(sha256_hex)),
            text: analysis.text,
            truncated: analysis.truncated,
            files: records,
        })
    }

    /// Follows a symlink inside the repository, recording every path visited.
    fn follow_link(&self, link: &str, link_oid: Oid) -> Result<Link> {
        let mut result = Link::default();
        let mut link = link.to_string();
        let mut target = String::from_utf8_lossy(&self.cache.read_blob(link_oid, &link)?).into_owned();
        for _ in 0..MAX_LINK_HOPS {
            let Some(resolved) = scan::resolve_link(&link, &target) else {
                result.problem = Some(format!(
                    "symlink `{link}` points outside the repository (`{target}`); not followed"
                ));
                return Ok(result);
            };
            match self.lookup(&resolved)? {
                Some(PathTarget::File(FileMode::Symlink, oid)) => {
                    result.visited.push((resolved.clone(), Some(oid)));
                    target = String::from_utf8_lossy(&self.cache.read_blob(oid, &resolved)?).into_owned();
                    link = resolved;
                }
                Some(PathTarget::File(_, oid)) => {
                    result.visited.push((resolved.clone(), Some(oid)));
                    result.content = Some((resolved, oid));
                    return Ok(result);
                }
                Some(PathTarget::Tree(_)) | None => {
                    result.visited.push((resolved, None));
                    result.problem = Some(format!(
                        "symlink `{link}` points to `{target}`, which is not a file here"
                    ));
                    return Ok(result);
                }
            }
        }
        result.problem = Some(format!("symlink `{link}` is part of a chain too long to follow"));
        Ok(result)
    }
}

/// The sha256 of `bytes` (lowercase hex): the digest Skills over MCP hosts verify.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    faster_hex::hex_string(&sha2::Sha256::digest(bytes))
}

/// Blob id (hex) to what is already recorded for it.
pub type KnownBlobs = HashMap<String, KnownBlob>;

/// What the content audit finds in one file's bytes (symlinks are not read as text).
/// `AAM_AUDIT=off` turns the scan off, for measuring what it costs.
fn scan_blob(file: &TreeFile, main: bool, bytes: &[u8]) -> Vec<Finding> {
    static OFF: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    if file.mode == FileMode::Symlink || *OFF.get_or_init(|| std::env::var("AAM_AUDIT").is_ok_and(|v| v == "off")) {
        return Vec::new();
    }
    let info = FileInfo {
        path: &file.path,
        executable: file.mode == FileMode::Executable,
        main,
    };
    audit::scan_file(info, bytes)
}

/// Names hide things too (`a\u{202E}b/` shows reordered): every folder
/// below the artifact's `root` and every link's own name (a file's own name
/// is scanned with its bytes) is checked once, its findings on the first
/// record that holds it.
fn name_findings(root: &str, records: &mut [FileRecord]) {
    let mut seen = std::collections::HashSet::new();
    for record in records {
        let inside = match root {
            "" => record.path.as_str(),
            root => record
                .path
                .strip_prefix(root)
                .and_then(|p| p.strip_prefix('/'))
                .unwrap_or(&record.path),
        };
        let mut names: Vec<&str> = inside.split('/').collect();
        if record.mode != FileMode::Symlink {
            names.pop();
        }
        let found: Vec<_> = names
            .into_iter()
            .filter(|name| !name.is_ascii() && seen.insert(name.to_string()))
            .flat_map(audit::scan_name)
            .collect();
        record.findings.extend(found);
    }
}

/// `read` unless it failed on a file larger than aam reads from a source (or
/// one a partial fetch left on the server), or on more files than an artifact
/// may hold: that artifact, at `path()`, stays out of the catalog with a
/// warning saying why, so one oversized artifact does not stop the whole
/// source from being indexed.
fn unless_oversized(read: Result<IndexedArtifact>, path: impl FnOnce() -> String) -> Option<Result<IndexedArtifact>> {
    match read {
        Err(e) if e.code() == crate::error::ErrorCode::SourceFileTooLarge => {
            tracing::warn!("`{}` is left out of the catalog: {}", path(), e.message());
            None
        }
        other => Some(other),
    }
}

/// Where a symlinked main file leads.
#[derive(Debug, Default)]
struct Link {
    /// Every path visited after the link itself, with its blob (`None`: missing).
    visited: Vec<(String, Option<Oid>)>,
    /// The file the chain ends at.
    content: Option<(String, Oid)>,
    /// Why the chain did not end at a file.
    problem: Option<String>,
}

/// A detected artifact whose digest is known but whose blobs are not read yet.
struct Prepared<'d> {
    found: &'d Detected,
    files: &'d [TreeFile],
    main_path: String,
    link: Link,
    /// The path and blob the text comes from.
    content: Option<(String, Oid)>,
    digest: String,
}

/// Where a [`Snapshot`] looks, without a handle on the cache: what a thread
/// needs to open its own.
struct SnapshotPlace {
    dir: std::path::PathBuf,
    root_tree: Oid,
    scope: String,
    root_name: String,
}

impl SnapshotPlace {
    fn of(snapshot: &Snapshot<'_>) -> Self {
        Self {
            dir: snapshot.cache.dir().to_path_buf(),
            root_tree: snapshot.root_tree,
            scope: snapshot.scope.clone(),
            root_name: snapshot.root_name.clone(),
        }
    }

    /// Reads the detected artifacts in pack order, `window` at a time through a
    /// fresh handle on the cache ([`ARTIFACTS_PER_MAPPING`]), handing each to
    /// `deliver` while it returns `true`; each artifact's detection record is
    /// dropped once read, each window's list once done. Returns whether every
    /// artifact was delivered; a cache that cannot be opened is delivered as
    /// the last item.
    fn read_in_windows(
        &self,
        detection: Detection,
        window: usize,
        cancel: &Cancel,
        mut deliver: impl FnMut(Result<IndexedArtifact>) -> bool,
    ) -> bool {
        match self.read_windows(detection, window, cancel, &mut deliver) {
            Ok(all) => all,
            Err(cannot_open) => {
                deliver(Err(cannot_open));
                false
            }
        }
    }

    /// [`SnapshotPlace::read_in_windows`], failing when a handle cannot be opened.
    fn read_windows(
        &self,
        detection: Detection,
        window: usize,
        cancel: &Cancel,
        deliver: &mut impl FnMut(Result<IndexedArtifact>) -> bool,
    ) -> Result<bool> {
        let order = self.snapshot(&GitCache::open(&self.dir)?).pack_order(&detection);
        let Detection { files, detected, .. } = detection;
        let none = KnownBlobs::new();
        for part in split_in_order(detected, &order, window.max(1)) {
            // Each window opens its own handle and drops it, mapped pages and all,
            // before the next one opens.
            let cache = GitCache::open(&self.dir)?;
            let reader = self.snapshot(&cache);
            for found in part {
                let read = reader.read_new(&found, &files, &none, cancel);
                let Some(artifact) = unless_oversized(read, || reader.to_repo_path(&found.path)) else {
                    continue;
                };
                if !deliver(artifact) {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    fn snapshot<'c>(&self, cache: &'c GitCache) -> Snapshot<'c> {
        Snapshot::new(cache, self.root_tree, &self.scope, &self.root_name)
    }
}

/// `items` in the order of the positions `order`, as lists of `window` items.
fn split_in_order<T>(items: Vec<T>, order: &[usize], window: usize) -> Vec<Vec<T>> {
    let mut slots: Vec<Option<T>> = items.into_iter().map(Some).collect();
    order
        .chunks(window)
        .map(|part| part.iter().filter_map(|&i| slots[i].take()).collect())
        .collect()
}

/// Drops regions contained in other regions; the rest in order. One pass:
/// in the order of their path parts a region's subfolders come right after
/// it, so only the last region kept can hold the next one (comparing each with
/// every region kept made an update of 50,000 renamed folders take 49 s).
fn merge_regions(mut regions: Vec<String>) -> Vec<String> {
    regions.sort_by(|a, b| a.split('/').cmp(b.split('/')));
    regions.dedup();
    let mut kept: Vec<String> = Vec::new();
    for region in regions {
        let covered = kept.last().is_some_and(|outer| {
            outer.is_empty()
                || region == *outer
                || region.strip_prefix(outer.as_str()).is_some_and(|r| r.starts_with('/'))
        });
        if !covered {
            kept.push(region);
        }
    }
    kept.sort();
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
        // A name that sorts between a folder and its subfolders (`-` before `/`).
        let merged = merge_regions(vec![
            "a".into(),
            "a-b".into(),
            "a/c".into(),
            "a-b/d".into(),
            "a.c".into(),
        ]);
        assert_eq!(merged, ["a", "a-b", "a.c"]);
    }

    /// A cache holding one commit of a repository with a skill per name, and
    /// that commit's tree.
    fn cache_with_skills(dir: &std::path::Path, names: &[&str]) -> (GitCache, Oid) {
        let files: Vec<(String, String)> = names
            .iter()
            .map(|name| {
                let text = format!("---\nname: {name}\ndescription: d\n---\nbody\n");
                (format!("skills/{name}/SKILL.md"), text)
            })
            .collect();
        cache_with_files(dir, &files, false)
    }

    /// A cache holding one commit of a repository with the given (path, text)
    /// files, and that commit's tree; `packed`: its objects in a pack, as a
    /// remote's come (a local repository's loose objects are linked as they are).
    fn cache_with_files(dir: &std::path::Path, files: &[(String, String)], packed: bool) -> (GitCache, Oid) {
        let source = dir.join("source");
        let git = |args: &[&str]| crate::sources::git::run_git(&source, args);
        for (path, text) in files {
            let path = source.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        git(&["init", "-q", "-b", "main"]);
        crate::sources::git::commit_all(&source, "one");
        if packed {
            git(&["repack", "-a", "-d", "-q"]);
        }
        let (cache, _) = GitCache::open_or_create(&dir.join("cache")).unwrap();
        let limits = crate::sources::git::FetchLimits::resolve(None, None);
        let url = format!("file://{}", source.display());
        let fetched = cache
            .fetch(
                &url,
                &crate::sources::git::RefWant::DefaultBranch,
                "refs/aam/t/head",
                true,
                limits,
                &crate::cancel::Cancel::new(),
            )
            .unwrap();
        let (tree, _) = cache.commit_tree(fetched.commit).unwrap();
        (cache, tree)
    }

    /// Windows of any size read every artifact once, in the order one pass
    /// through a single handle reads them.
    #[test]
    fn reading_in_windows_reads_what_one_pass_reads() {
        let dir = tempfile::tempdir().unwrap();
        let (cache, tree) = cache_with_skills(dir.path(), &["alpha", "beta", "gamma", "delta", "epsilon"]);
        let snapshot = Snapshot::new(&cache, tree, "", "source");
        let detect = || snapshot.detect(&[String::new()]).unwrap();
        let detection = detect();
        let cancel = Cancel::new();
        let one_pass: Vec<IndexedArtifact> = snapshot
            .read(&detection, &crate::progress::NoProgress, &cancel)
            .collect::<Result<_>>()
            .unwrap();
        assert_eq!(one_pass.len(), 5);
        for window in [1, 2, 5, ARTIFACTS_PER_MAPPING] {
            let mut read = Vec::new();
            let place = SnapshotPlace::of(&snapshot);
            let all = place.read_in_windows(detect(), window, &cancel, |artifact| {
                read.push(artifact.unwrap());
                true
            });
            assert!(all, "window of {window}");
            assert_eq!(read, one_pass, "window of {window}");
        }
        // A consumer that stops is handed nothing more.
        let mut handed = 0;
        let place = SnapshotPlace::of(&snapshot);
        assert!(!place.read_in_windows(detect(), 2, &cancel, |_| {
            handed += 1;
            handed < 3
        }));
        assert_eq!(handed, 3);
    }

    /// A new source's detection is left unsorted (the skill `pdf` is found
    /// after `pdf-tools`, whose files come first), yet read in the order a sorted
    /// one is: by where the main files lie in the pack, and artifacts whose main
    /// files are one blob by kind and path.
    #[test]
    fn an_unsorted_detection_is_read_in_the_order_a_sorted_one_is() {
        let dir = tempfile::tempdir().unwrap();
        let same = "---\ndescription: d\n---\nthe same text\n".to_string();
        let other = "---\ndescription: d\n---\nanother text\n".to_string();
        let files: Vec<(String, String)> = ["skills/pdf", "skills/pdf-tools", "skills/pdf-a"]
            .iter()
            .map(|skill| (format!("{skill}/SKILL.md"), same.clone()))
            .chain([("agents/pdf.md".to_string(), same.clone())])
            .chain([("skills/other/SKILL.md".to_string(), other.clone())])
            .chain([("agents/other.md".to_string(), format!("{other}, as an agent"))])
            .collect();
        let (cache, tree) = cache_with_files(dir.path(), &files, true);
        let snapshot = Snapshot::new(&cache, tree, "", "source");
        let everything = [String::new()];
        let paths = |detection: &Detection| detection.detected.iter().map(|d| d.path.clone()).collect::<Vec<_>>();
        let read = |detection: &Detection| {
            let cancel = Cancel::new();
            let read = snapshot.read(detection, &crate::progress::NoProgress, &cancel);
            read.map(|a| a.map(|a| (a.path, a.main_file)).unwrap())
                .collect::<Vec<_>>()
        };
        let sorted = snapshot.detect(&everything).unwrap();
        let apart = snapshot.detect_apart(&everything).unwrap();
        let tied = ["skills/pdf", "skills/pdf-a", "skills/pdf-tools", "agents/pdf.md"];
        let by_kind_and_path = ["skills/other", "skills/pdf", "skills/pdf-a", "skills/pdf-tools"]
            .into_iter()
            .chain(["agents/other.md", "agents/pdf.md"]);
        assert!(paths(&sorted).iter().eq(by_kind_and_path));
        assert_ne!(paths(&apart), paths(&sorted), "found in another order than sorted");
        let read_apart = read(&apart);
        assert_eq!(read_apart, read(&sorted));
        // By pack position first, the artifacts of one blob then by kind and path.
        let indexes = cache.pack_indexes();
        let position = |main_file: &str| {
            let file = apart.files.iter().find(|f| f.path == main_file).unwrap();
            indexes.position(file.oid).expect("the fetch packs every object")
        };
        let positions: Vec<_> = read_apart.iter().map(|(_, main)| position(main)).collect();
        assert!(positions.is_sorted(), "{read_apart:?} at {positions:?}");
        let of_one_blob = read_apart.iter().filter(|(path, _)| tied.contains(&path.as_str()));
        assert!(of_one_blob.map(|(path, _)| path.as_str()).eq(tied));
    }

    /// A reading thread that dies (a panic) closes its channel like one that
    /// finished: the consumer gets an error last, so a new source's write fails
    /// and commits nothing, instead of committing the artifacts read so far.
    #[test]
    fn a_reader_that_panics_ends_the_stream_with_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let (cache, tree) = cache_with_skills(dir.path(), &["alpha", "beta"]);
        let snapshot = Snapshot::new(&cache, tree, "", "source");
        let detect = || snapshot.detect(&[String::new()]).unwrap();
        assert_eq!(detect().detected.len(), 2);
        let read = |detection: Detection| {
            let mut seen = Vec::new();
            let cancel = Cancel::new();
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                std::thread::scope(|scope| {
                    let artifacts = snapshot.read_on_thread(scope, detection, &crate::progress::NoProgress, &cancel);
                    seen.extend(artifacts.map(|artifact| artifact.is_ok()));
                })
            }));
            (outcome.is_ok(), seen)
        };
        assert_eq!(read(detect()), (true, vec![true, true]), "a reader that finishes");
        // A file index out of range makes the reading thread panic.
        let mut detection = detect();
        detection.detected[1].files.push(usize::MAX);
        let (returned, seen) = read(detection);
        assert!(!returned, "the reader's panic reaches the caller once the scope ends");
        assert_eq!(seen.last(), Some(&false), "the stream ends with an error: {seen:?}");
    }
}
