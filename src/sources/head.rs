//! How a local work tree's files compare with its `HEAD` commit: the hint that a
//! local source has uncommitted files, and the check that a project package's
//! files are the ones the commit its provenance names holds.
//!
//! A work-tree file is compared as `git status` compares it: its bytes go through
//! the repository's conversions to git (`.gitattributes` `text`, `eol` and
//! `ident`, and `core.autocrlf` of the repository's own config; a file committed
//! with CRLF endings is left alone, as git leaves it) before they are hashed, and
//! its executable bit counts unless `core.fileMode` is false. Filter drivers
//! (`filter=lfs`) are never run, so a file one stores reads as changed.
//! Repositories are opened with isolated configuration, like every other aam
//! opens: only their own config is read.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use gix::filter::plumbing::pipeline::convert::ToGitOutcome;
use gix::objs::Find;
use gix::objs::tree::EntryKind;
use gix::{ObjectId, Repository};

/// How a file of the work tree differs from `HEAD`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// `HEAD` has no file there.
    New,
    /// Other content or another executable bit.
    Changed,
    /// `HEAD` has a file the work tree no longer has.
    Deleted,
}

impl Change {
    /// The word for it in messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Change::New => "new",
            Change::Changed => "changed",
            Change::Deleted => "deleted",
        }
    }
}

/// A file read from a work tree.
pub struct WorkFile<'a> {
    /// Relative to the work tree's root, `/`-separated.
    pub path: &'a str,
    /// As read.
    pub bytes: &'a [u8],
    /// Whether its executable bit is set.
    pub executable: bool,
}

/// Whether `source` is a local repository followed on a branch whose work tree
/// has files in the source's scope that no commit holds yet: the answer to
/// "why did my edit not show up?" (committing moves a pinned tag or commit nowhere).
pub fn has_uncommitted_files(source: &crate::catalog::SourceRecord) -> bool {
    source.local_folder().is_some_and(|path| {
        source
            .resolved_ref
            .as_deref()
            .is_some_and(|branch| crate::sources::git::has_branch(path, branch))
            && uncommitted_changes(path, &source.scope_path) == Some(true)
    })
}

/// Whether the work tree of the local repository at `work_tree` has files under
/// `scope` (`""` = everywhere) that are not committed at its `HEAD`: new files not
/// ignored, or files whose content differs (deleted files are not looked for).
/// `None` when it cannot tell cheaply: no work tree, no `HEAD`, or more files than
/// are worth hashing for a hint.
pub fn uncommitted_changes(work_tree: &Path, scope: &str) -> Option<bool> {
    const MAX_FILES: usize = 5_000;
    let mut head = Head::open(work_tree)?;
    let root = head.root.clone();
    let start = if scope.is_empty() {
        root.clone()
    } else {
        root.join(scope)
    };
    if !start.is_dir() {
        return Some(false);
    }
    // From the work tree's root (its ignore files apply inside the scope, and
    // none above it is read), down the folders leading to the scope only.
    // An ignore file the walk must not read leaves the answer unknown.
    let refused = |dir: &Path| crate::project::tree::refused_ignore_file(dir).is_some();
    if refused(&root) {
        return None;
    }
    let mut walk = ignore::WalkBuilder::new(&root);
    walk.hidden(false).parents(false);
    crate::project::tree::git_ignore_rules(&mut walk, &root);
    let scope = start.clone();
    let met_refused = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = std::sync::Arc::clone(&met_refused);
    let walk = walk
        .filter_entry(move |e| {
            let entered = e.file_name() != ".git" && (e.path().starts_with(&scope) || scope.starts_with(e.path()));
            if entered && e.file_type().is_some_and(|t| t.is_dir()) && refused(e.path()) {
                flag.store(true, std::sync::atomic::Ordering::Relaxed);
                return false;
            }
            entered
        })
        .build();
    for (seen, entry) in walk.enumerate() {
        if seen > MAX_FILES || met_refused.load(std::sync::atomic::Ordering::Relaxed) {
            return None;
        }
        let entry = entry.ok()?;
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let rel = entry.path().strip_prefix(&root).ok()?;
        let Some(committed) = head.file(rel) else {
            return Some(true);
        };
        let bytes = std::fs::read(entry.path()).ok()?;
        if head.blob_id(rel, &bytes, committed.id)? != committed.id {
            return Some(true);
        }
    }
    if met_refused.load(std::sync::atomic::Ordering::Relaxed) {
        return None;
    }
    Some(false)
}

/// A file of `HEAD`.
#[derive(Debug, Clone, Copy)]
struct Committed {
    id: ObjectId,
    executable: bool,
}

/// One folder of `HEAD`: its files by name.
type Listing = HashMap<Vec<u8>, Committed>;

/// A work tree's `HEAD` commit: its files looked up by path, and the
/// conversions that turn a work-tree file into what git would store.
pub struct Head {
    repo: Repository,
    root: PathBuf,
    commit: ObjectId,
    tree: ObjectId,
    /// `core.fileMode`: whether the executable bit counts.
    file_mode: bool,
    /// Per folder: a wide folder is decoded once, not per file.
    folders: HashMap<PathBuf, Option<Listing>>,
    /// Made at the first file hashed (it reads the repository's index); `None`
    /// inside when the repository's attributes cannot be read: bytes are then
    /// hashed as they are.
    to_git: Option<Option<ToGit>>,
}

impl Head {
    /// The `HEAD` of the repository whose work tree's root is `root`; `None` when
    /// `root` is no such root or the repository has no commit yet.
    pub fn open(root: &Path) -> Option<Self> {
        let repo = gix::open_opts(root, gix::open::Options::isolated()).ok()?;
        let root = repo.workdir()?.to_path_buf();
        let (commit, tree) = {
            let commit = repo.head_commit().ok()?;
            (commit.id, commit.tree_id().ok()?.detach())
        };
        let file_mode = repo.config_snapshot().boolean("core.fileMode").unwrap_or(true);
        Some(Self {
            repo,
            root,
            commit,
            tree,
            file_mode,
            folders: HashMap::new(),
            to_git: None,
        })
    }

    /// The commit.
    pub fn commit(&self) -> ObjectId {
        self.commit
    }

    /// How `file` differs from what the commit holds at its path; `None` when it
    /// holds it as read.
    pub fn change(&mut self, file: &WorkFile<'_>) -> Option<Change> {
        let path = Path::new(file.path);
        let Some(committed) = self.file(path) else {
            return Some(Change::New);
        };
        let same = self.blob_id(path, file.bytes, committed.id) == Some(committed.id)
            && (!self.file_mode || committed.executable == file.executable);
        (!same).then_some(Change::Changed)
    }

    /// Every file (plain or executable) the commit holds, by its path relative
    /// to the root; names that are no UTF-8 are left out, and none when the
    /// commit's trees cannot be read.
    pub fn paths(&self) -> Vec<String> {
        let mut recorder = gix::traverse::tree::Recorder::default();
        let Ok(tree) = self.repo.find_tree(self.tree) else {
            return Vec::new();
        };
        if tree.traverse().breadthfirst(&mut recorder).is_err() {
            return Vec::new();
        }
        recorder
            .records
            .into_iter()
            .filter(|e| matches!(e.mode.kind(), EntryKind::Blob | EntryKind::BlobExecutable))
            .filter_map(|e| String::from_utf8(e.filepath.into()).ok())
            .collect()
    }

    /// The file `HEAD` holds at `path` (relative to the work tree's root), if any.
    fn file(&mut self, path: &Path) -> Option<Committed> {
        let (parent, name) = (path.parent().unwrap_or(Path::new("")), path.file_name()?);
        self.listing(parent)?.get(name.as_encoded_bytes()).copied()
    }

    /// The files of the folder `dir` in the commit, read once; `None` when it
    /// is no folder there.
    fn listing(&mut self, dir: &Path) -> Option<&Listing> {
        let (repo, tree) = (&self.repo, self.tree);
        self.folders
            .entry(dir.to_path_buf())
            .or_insert_with(|| committed_listing(repo, tree, dir))
            .as_ref()
    }

    /// The id the work-tree file at `path` with `bytes` would have as a blob of
    /// this repository, after git's conversions; `committed` is the blob `HEAD`
    /// holds there (git leaves a file alone whose committed blob has CRLF endings).
    fn blob_id(&mut self, path: &Path, bytes: &[u8], committed: ObjectId) -> Option<ObjectId> {
        let kind = self.repo.object_hash();
        let hash = |bytes: &[u8]| gix::objs::compute_hash(kind, gix::objs::Kind::Blob, bytes).ok();
        let repo = &self.repo;
        match self.to_git.get_or_insert_with(|| ToGit::new(repo)) {
            Some(to_git) => to_git.convert(repo, path, bytes, committed, hash),
            None => hash(bytes),
        }
    }
}

/// Git's conversions of work-tree bytes to what it stores, without filter drivers.
struct ToGit {
    pipeline: gix::filter::plumbing::Pipeline,
    attributes: gix::worktree::Stack,
}

impl ToGit {
    fn new(repo: &Repository) -> Option<Self> {
        let (pipeline, _index) = repo.filter_pipeline(None).ok()?;
        let (mut pipeline, attributes) = pipeline.into_parts();
        // A driver is a program of the repository's config: never run one.
        pipeline.options_mut().drivers.clear();
        Some(Self { pipeline, attributes })
    }

    /// `bytes` of the file at `path` as git would store them, handed to `then`;
    /// `committed` is the blob there the index would hold.
    fn convert<T>(
        &mut self,
        repo: &Repository,
        path: &Path,
        bytes: &[u8],
        committed: ObjectId,
        then: impl FnOnce(&[u8]) -> Option<T>,
    ) -> Option<T> {
        let platform = self.attributes.at_path(path, None, &repo.objects).ok()?;
        let outcome = self
            .pipeline
            .convert_to_git(
                bytes,
                path,
                &mut |_, attributes| {
                    platform.matching_attributes(attributes);
                },
                &mut |buf| match repo.objects.try_find(&committed, buf) {
                    Ok(Some(object)) if object.kind == gix::objs::Kind::Blob => Ok(Some(())),
                    _ => Ok(None),
                },
            )
            .ok()?;
        match outcome {
            ToGitOutcome::Unchanged(bytes) => then(bytes),
            ToGitOutcome::Buffer(converted) => then(converted),
            ToGitOutcome::Process(mut read) => {
                let mut converted = Vec::new();
                std::io::Read::read_to_end(&mut read, &mut converted).ok()?;
                then(&converted)
            }
        }
    }
}

/// The files (plain or executable blobs, by name) of the folder `dir` in
/// `tree`; `None` when it is no folder there.
fn committed_listing(repo: &Repository, tree: ObjectId, dir: &Path) -> Option<Listing> {
    let mut id = tree;
    for part in dir.components() {
        let name = part.as_os_str().as_encoded_bytes();
        let tree = repo.find_tree(id).ok()?;
        let entry = tree
            .iter()
            .filter_map(|e| e.ok())
            .find(|e| e.filename() == name && e.mode().is_tree())?;
        id = entry.oid().to_owned();
    }
    let mut listing = Listing::new();
    for entry in repo.find_tree(id).ok()?.iter().filter_map(|e| e.ok()) {
        let kind = entry.mode().kind();
        if matches!(kind, EntryKind::Blob | EntryKind::BlobExecutable) {
            let committed = Committed {
                id: entry.oid().to_owned(),
                executable: kind == EntryKind::BlobExecutable,
            };
            listing.insert(entry.filename().to_vec(), committed);
        }
    }
    Some(listing)
}
