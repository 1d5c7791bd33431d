//! The git cache: one bare repository per remote, read and fetched with gix.
//!
//! Each source keeps its own refs under `refs/aam/<source key>/` so sources that
//! share a remote share objects but never move each other. Repositories are
//! opened with isolated configuration (the user's git config never changes
//! behaviour) and a delta-base cache (without it every blob read re-inflates its
//! whole delta chain). Fetches ask a server that supports filters to keep blobs
//! over [`MAX_SOURCE_FILE_BYTES`]; such a cache is marked a partial clone in its
//! own config (a promisor remote, as `git clone --filter` writes), the only config
//! aam writes. Nothing here checks out a work tree or runs a `git` process itself.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gix::bstr::ByteSlice;
use gix::credentials::helper::Action;
use gix::objs::tree::{EntryKind, EntryMode};
use gix::protocol::handshake::Ref;
use gix::refs::transaction::PreviousValue;
use gix::remote::{Direction, fetch::Tags, ref_map};
use gix::{ObjectId, Repository};

use super::cache;
use super::folder::Folder;
use crate::cancel::Cancel;
use crate::error::{Error, ErrorCode, Result};

pub use gix::ObjectId as Oid;

/// What to fetch for a source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefWant {
    /// The remote's default branch (its `HEAD`).
    DefaultBranch,
    /// A branch or tag by short name, or a commit id (full or abbreviated).
    Named(String),
}

impl RefWant {
    /// From an optional user-given ref.
    pub fn from_ref(r: Option<&str>) -> Self {
        r.map_or(Self::DefaultBranch, |r| Self::Named(r.to_string()))
    }
}

/// The result of a fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// The commit the destination ref now points at.
    pub commit: ObjectId,
    /// The branch, tag or commit id the request resolved to.
    pub resolved_ref: String,
}

/// How a file entry is stored in a tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileMode {
    /// A regular file.
    File,
    /// An executable file.
    Executable,
    /// A symbolic link; its blob holds the target path.
    Symlink,
}

impl FileMode {
    /// The catalog's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::File => "file",
            Self::Executable => "executable",
            Self::Symlink => "symlink",
        }
    }

    /// Reads the catalog's spelling back (anything unknown is a regular file).
    pub fn parse(text: &str) -> Self {
        match text {
            "executable" => Self::Executable,
            "symlink" => Self::Symlink,
            _ => Self::File,
        }
    }

    pub(super) fn from_mode(mode: EntryMode) -> Option<Self> {
        match mode.kind() {
            EntryKind::Blob => Some(Self::File),
            EntryKind::BlobExecutable => Some(Self::Executable),
            EntryKind::Link => Some(Self::Symlink),
            EntryKind::Tree | EntryKind::Commit => None,
        }
    }
}

/// A file in a tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeFile {
    /// Repository path.
    pub path: String,
    /// How it is stored.
    pub mode: FileMode,
    /// Its blob.
    pub oid: ObjectId,
}

/// What a path names in a tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathTarget {
    /// A folder.
    Tree(ObjectId),
    /// A file.
    File(FileMode, ObjectId),
}

/// Whether `path` is the root of a git repository (work tree or bare).
pub fn is_repository(path: &Path) -> bool {
    gix::open_opts(path, gix::open::Options::isolated()).is_ok()
}

/// Where the repository at `path` really keeps its data: its git folder and
/// the common folder holding its objects, after a `.git` link or a `.git`
/// file (`gitdir: ...`, worktrees and submodules) is followed. Empty when
/// `path` holds no repository.
pub fn repository_dirs(path: &Path) -> Vec<PathBuf> {
    let Ok(repo) = gix::open_opts(path, gix::open::Options::isolated()) else {
        return Vec::new();
    };
    let mut dirs = vec![repo.git_dir().to_path_buf()];
    if repo.common_dir() != repo.git_dir() {
        dirs.push(repo.common_dir().to_path_buf());
    }
    dirs
}

/// The most entries [`repository_links`] looks at in a repository's git folders.
pub const MAX_GIT_DIR_ENTRIES: usize = 1_000_000;

/// Every link inside the git folders of the repository at `path` (see
/// [`repository_dirs`]): its `objects/` or `refs/` (or a single object or
/// ref) can be a link to another repository's, which reading follows. `None`
/// when the folders hold more than [`MAX_GIT_DIR_ENTRIES`] entries. Links are
/// listed, never followed.
pub fn repository_links(path: &Path) -> Option<Vec<PathBuf>> {
    let mut links = Vec::new();
    let mut pending = repository_dirs(path);
    let mut seen = 0usize;
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_GIT_DIR_ENTRIES {
                return None;
            }
            match entry.file_type() {
                Ok(kind) if kind.is_symlink() => links.push(entry.path()),
                Ok(kind) if kind.is_dir() => pending.push(entry.path()),
                _ => {}
            }
        }
    }
    Some(links)
}

/// Whether the repository at `path` has the branch `name`: a source following
/// it picks up new commits, one pinned to a tag or a commit never does.
pub fn has_branch(path: &Path, name: &str) -> bool {
    gix::open_opts(path, gix::open::Options::isolated())
        .is_ok_and(|repo| repo.find_reference(format!("refs/heads/{name}").as_str()).is_ok())
}

/// The time limits of one remote fetch over http(s).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchLimits {
    /// The whole operation, retries included.
    pub total: Duration,
    /// Opening the connection (TCP and TLS).
    pub connect: Duration,
    /// The longest wait for the server's next bytes (an answer, or more of one): a stall.
    pub stall: Duration,
}

impl FetchLimits {
    /// The environment variable that sets [`FetchLimits::total`], in seconds.
    pub const TOTAL_ENV: &'static str = "AAM_FETCH_TIMEOUT";
    /// The environment variable that sets [`FetchLimits::stall`], in seconds.
    pub const STALL_ENV: &'static str = "AAM_FETCH_STALL_TIMEOUT";
    /// The whole operation's default, in seconds.
    pub const DEFAULT_TOTAL: u64 = 30;
    /// The stall limit's default, in seconds.
    pub const DEFAULT_STALL: u64 = 10;
    /// The longest limit of either kind, in seconds: a day.
    pub const MAX_SECONDS: u64 = 86_400;

    /// `total` in all; connecting gets at most 5 s of it, and no stall outlasts it.
    pub fn new(total: Duration, stall: Duration) -> Self {
        Self {
            total,
            connect: total.min(Duration::from_secs(5)),
            stall: stall.min(total),
        }
    }

    /// The settings' values (whole seconds), each overridden by its environment variable
    /// (`AAM_FETCH_TIMEOUT`, `AAM_FETCH_STALL_TIMEOUT`); unset ones take the defaults
    /// (30 s, 10 s). An environment value that is no whole number from 1 to
    /// [`Self::MAX_SECONDS`] is reported and ignored; a longer setting (a file
    /// edited by hand) is cut to it.
    pub fn resolve(total: Option<u64>, stall: Option<u64>) -> Self {
        let pick = |env: &str, setting: Option<u64>, default: u64| {
            let from_env = std::env::var(env).ok().and_then(|v| match v.trim().parse::<u64>() {
                Ok(secs) if (1..=Self::MAX_SECONDS).contains(&secs) => Some(secs),
                _ => {
                    tracing::warn!(
                        "`{env}={v}` is not a number of seconds from 1 to {}; ignoring it",
                        Self::MAX_SECONDS
                    );
                    None
                }
            });
            let secs = from_env.or(setting).unwrap_or(default);
            Duration::from_secs(secs.clamp(1, Self::MAX_SECONDS))
        };
        Self::new(
            pick(Self::TOTAL_ENV, total, Self::DEFAULT_TOTAL),
            pick(Self::STALL_ENV, stall, Self::DEFAULT_STALL),
        )
    }
}

/// A bare repository in the cache.
pub struct GitCache {
    repo: Repository,
    dir: PathBuf,
    /// Folders already parsed, by tree id: an update diffs a wide folder and then
    /// looks names up in it, and each decode of a 100,000-entry tree inflates
    /// megabytes again.
    folders: RefCell<FolderCache>,
    /// The same objects for [`GitCache::read_blob`], with gix's allocation limit
    /// ([`BLOB_ALLOC_LIMIT_BYTES`]); made on the first read.
    blobs: std::cell::OnceCell<Repository>,
    /// The folders a local repository's objects must be read from (a
    /// confined call's project and AAM_HOME); `None`: anywhere.
    local_within: Option<Vec<PathBuf>>,
}

/// Parsed trees by id, at most [`FolderCache::MAX_BYTES`] of tree data (emptied
/// when a new one would pass it, so it holds the folders of the current work).
#[derive(Default)]
struct FolderCache {
    folders: HashMap<ObjectId, Rc<Folder>>,
    bytes: usize,
}

impl FolderCache {
    const MAX_BYTES: usize = 64 * 1024 * 1024;

    fn insert(&mut self, id: ObjectId, folder: Rc<Folder>) {
        if self.bytes + folder.size() > Self::MAX_BYTES {
            self.folders.clear();
            self.bytes = 0;
        }
        self.bytes += folder.size();
        self.folders.insert(id, folder);
    }
}

/// Tree objects of at least this many bytes (about 10,000 entries) are decoded
/// two at a time by [`GitCache::folder_pair`]; a thread costs more than a smaller one.
const WIDE_TREE_BYTES: u64 = 512 * 1024;

/// One side of a folder an update compares: absent where the folder is not.
type MaybeFolder = Option<Rc<Folder>>;

/// Why a tree could not be read as a folder.
#[derive(Debug, thiserror::Error)]
enum DecodeFolderError {
    #[error(transparent)]
    Find(#[from] gix::Error),
    #[error(transparent)]
    Malformed(#[from] super::folder::MalformedTree),
}

/// Reads and parses the tree `id` of `repo`.
fn decode_folder(repo: &Repository, id: ObjectId) -> std::result::Result<Folder, DecodeFolderError> {
    let mut tree = repo.find_tree(id)?;
    Ok(Folder::parse(std::mem::take(&mut tree.data), repo.object_hash())?)
}

/// The most memory gix may allocate at once to inflate a blob in
/// [`GitCache::read_blob`]'s first attempt: a file of [`MAX_SOURCE_FILE_BYTES`]
/// decoded from a delta chain needs twice its size and the deltas. A blob that
/// declares more is refused before anything that size is allocated.
const BLOB_ALLOC_LIMIT_BYTES: usize = 2 * MAX_SOURCE_FILE_BYTES as usize + 1024 * 1024;

/// The most memory gix may allocate at once to inflate any object of a cache, a
/// local source or a received pack: a folder of several million entries fits,
/// while an object of a hostile repository or server that declares gigabytes is
/// refused before they are allocated (and zero-filled).
const OBJECT_ALLOC_LIMIT_BYTES: usize = 1024 * 1024 * 1024;

/// The configuration that sets [`OBJECT_ALLOC_LIMIT_BYTES`] on a handle.
fn alloc_limit() -> String {
    format!("gitoxide.objects.allocLimit={OBJECT_ALLOC_LIMIT_BYTES}")
}

fn open_options() -> gix::open::Options {
    // Each blob is read once; a bigger cache of delta bases bought no time at 100k
    // artifacts (32 MB cost 35 MB more peak memory than 8 MB: one cache per thread).
    gix::open::Options::isolated().config_overrides(["core.deltaBaseCacheLimit=8m".to_string(), alloc_limit()])
}

/// `repo` reading its objects through a store with gix's allocation limit
/// `limit`: the store is made the way gix reopens one, sharing nothing but the
/// objects folder, so `repo` keeps its own limit.
fn with_alloc_limit(repo: &Repository, limit: usize) -> std::io::Result<Repository> {
    let store = repo.objects.store_ref();
    let options = gix::odb::store::init::Options {
        alloc_limit_bytes: Some(limit),
        use_multi_pack_index: store.use_multi_pack_index(),
        ..Default::default()
    };
    let mut handle = gix::odb::at_opts(store.path(), store.object_hash(), store.replacements(), options)?.into_inner();
    handle.refresh = repo.objects.refresh;
    handle.max_recursion_depth = repo.objects.max_recursion_depth;
    handle.ignore_replacements = repo.objects.ignore_replacements;
    let mut limited = repo.clone();
    // The clone keeps the handle's cache constructors (the delta-base cache).
    **limited.objects = handle;
    Ok(limited)
}

/// Refuses to make a cache at `dir` inside another cache's own entries (a
/// repository at `outer/objects/pack`): deleting it (a purge) would take
/// the outer cache's packs with it. A cache nested in another's folder under
/// any other name is one [`GitCache::open_or_create`] makes around.
fn refuse_inside_git_folder(dir: &Path) -> Result<()> {
    // The folders a cache holds (it keeps no reflog, so no `logs`).
    const GIT_FOLDERS: [&str; 4] = ["objects", "refs", "hooks", "info"];
    for outer in dir.ancestors().skip(1) {
        if !cache::is_cache(outer) {
            continue;
        }
        let first = dir.strip_prefix(outer).ok().and_then(|rest| rest.iter().next());
        if let Some(entry) = first.filter(|first| GIT_FOLDERS.iter().any(|own| first == own)) {
            return Err(Error::new(
                ErrorCode::CacheCorrupted,
                format!(
                    "the git cache `{}` cannot be made inside the `{}` folder of the cache `{}`",
                    dir.display(),
                    entry.to_string_lossy(),
                    outer.display()
                ),
            )
            .with_hint("add the repository from a path that is not inside another repository's git folders"));
        }
    }
    Ok(())
}

/// Whether `dir`, a folder without `HEAD`, holds only the caches of
/// repositories inside this one and what a killed [`init_around`] left: its
/// staging folder and entries of a new bare repository. Without a `HEAD` no
/// fetch ever wrote there, so those entries hold nothing to keep.
fn holds_no_repository_yet(dir: &Path) -> bool {
    const NEW_REPOSITORY: [&str; 6] = ["config", "description", "hooks", "info", "objects", "refs"];
    std::fs::read_dir(dir).into_iter().flatten().all(|entry| {
        entry.is_ok_and(|entry| {
            let name = entry.file_name();
            let folder = entry.file_type().is_ok_and(|t| t.is_dir());
            if folder && name != cache::STAGING && !cache::caches_in(&entry.path()).is_empty() {
                return true;
            }
            name == cache::STAGING || NEW_REPOSITORY.iter().any(|own| name == *own)
        })
    })
}

/// Makes an empty bare repository in `dir`, which may hold the caches of
/// repositories inside this one (see [`GitCache::open_or_create`]): in a
/// staging folder inside it first, whose entries then move up, `HEAD` last,
/// so a folder with a `HEAD` is always a whole repository.
fn init_around(dir: &Path) -> Result<()> {
    let staging = dir.join(cache::STAGING);
    let _ = std::fs::remove_dir_all(&staging);
    gix::init_bare(&staging).map_err(|e| cache_not_created(dir, e))?;
    let moved = (|| {
        let mut names: Vec<std::ffi::OsString> = std::fs::read_dir(&staging)
            .map_err(|e| Error::io("read", &staging, e))?
            .filter_map(|entry| entry.ok().map(|e| e.file_name()))
            .collect();
        // A nested repository named like one of git's entries (`outer/objects`)
        // keeps the folder from being one.
        if let Some(taken) = names.iter().find(|name| !cache::caches_in(&dir.join(name)).is_empty()) {
            return Err(Error::new(
                ErrorCode::CacheCorrupted,
                format!(
                    "the git cache `{}` cannot be made: the cache of a repository inside it takes the name `{}`",
                    dir.display(),
                    taken.to_string_lossy()
                ),
            )
            .with_hint("add the inner repository from another path, or move its cache out of `AAM_HOME`"));
        }
        // `HEAD` last: until it lands, the folder is not a repository.
        names.sort_by_key(|name| name == "HEAD");
        for name in names {
            let (from, to) = (staging.join(&name), dir.join(&name));
            // What a killed move left there is replaced (a link as the link).
            match std::fs::symlink_metadata(&to) {
                Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(&to),
                Ok(_) => std::fs::remove_file(&to),
                Err(_) => Ok(()),
            }
            .map_err(|e| Error::io("delete", &to, e))?;
            std::fs::rename(&from, &to).map_err(|e| Error::io("move", &to, e))?;
        }
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&staging);
    moved
}

/// A cache that could not be created.
fn cache_not_created(dir: &Path, e: impl std::error::Error + Send + Sync + 'static) -> Error {
    Error::new(
        ErrorCode::IoError,
        format!("failed to create the git cache `{}`", dir.display()),
    )
    .with_hint("check that `AAM_HOME` is writable")
    .with_source(e)
}

impl GitCache {
    /// Opens an existing cache; a missing or unreadable one is `AAM_CACHE_CORRUPTED`.
    pub fn open(dir: &Path) -> Result<Self> {
        match gix::open_opts(dir, open_options()) {
            Ok(repo) => Ok(Self {
                repo,
                dir: dir.to_path_buf(),
                folders: Default::default(),
                blobs: Default::default(),
                local_within: None,
            }),
            Err(e) => Err(cache_corrupted(dir).with_source(e)),
        }
    }

    /// Reads a local repository's objects only from a git folder that, as
    /// opened, lies in one of `folders` (the checks of a confined call hold
    /// for what is read, not only for the path looked at before).
    pub fn reading_local_within(mut self, folders: Option<Vec<PathBuf>>) -> Self {
        self.local_within = folders;
        self
    }

    /// The cache's folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Opens the cache at `dir`, creating an empty bare repository when there is
    /// none. Returns whether it was created.
    ///
    /// The repository is made in a staging folder inside `dir` and its
    /// entries moved up, `HEAD` last (a folder with a `HEAD` is a repository):
    /// gix creates one only in an empty folder, and a folder holding the caches
    /// of repositories inside this one (`outer/inner`, restored from a lock
    /// file before `outer` was added) gets the repository around them. What a
    /// killed creation left (the staging folder, entries without a `HEAD`) is
    /// replaced the next time.
    pub fn open_or_create(dir: &Path) -> Result<(Self, bool)> {
        let empty = std::fs::read_dir(dir).map(|mut d| d.next().is_none()).unwrap_or(true);
        if empty {
            refuse_inside_git_folder(dir)?;
        }
        // A repository already (the usual case) is never walked.
        let create = empty || (!dir.join("HEAD").exists() && holds_no_repository_yet(dir));
        if create {
            std::fs::create_dir_all(dir).map_err(|e| Error::io("create", dir, e))?;
            init_around(dir)?;
        } else if !dir.join("HEAD").exists() {
            return Err(Error::new(
                ErrorCode::CacheCorrupted,
                format!(
                    "the git cache folder `{}` holds files that are not a repository aam made",
                    dir.display()
                ),
            )
            .with_hint(
                "move that folder out of `AAM_HOME` and run the command again: aam fetches the repository anew",
            ));
        }
        Ok((Self::open(dir)?, create))
    }

    /// Fetches `want` from `url` into the local ref `dst`. Local repositories
    /// (`file://`) are read in-process; remotes go through gix's fetch protocol,
    /// which stops (`AAM_CANCELLED`) soon after `cancel` is raised, retries included.
    pub fn fetch(
        &self,
        url: &str,
        want: &RefWant,
        dst: &str,
        first_fetch: bool,
        limits: FetchLimits,
        cancel: &Cancel,
    ) -> Result<Fetched> {
        if let Some(path) = url.strip_prefix("file://") {
            return self.fetch_local(Path::new(path), want, dst, first_fetch);
        }
        let remote_url = || redact_url(url);
        let deadline = Instant::now() + limits.total;
        let attempts = 3;
        let mut delay = Duration::from_millis(500);
        let mut attempt = 1;
        loop {
            cancel.check()?;
            let tried = self.try_fetch(
                url,
                want,
                dst,
                Limits {
                    limits,
                    deadline,
                    cancel,
                },
            );
            if tried.is_err() {
                cancel.check()?;
            }
            match tried {
                Ok(fetched) => return Ok(fetched),
                Err(FetchError::Aam(e)) => return Err(e),
                Err(FetchError::Git(e)) if e.is_resource_exhausted() => {
                    return Err(object_too_large().with_source(e));
                }
                Err(FetchError::Git(e)) => {
                    let failure = classify(&e);
                    // Another try must still fit in the time limit, with a second to spare.
                    let time_left = Instant::now() + delay + Duration::from_secs(1) < deadline;
                    if failure.can_pass() && attempt < attempts && time_left {
                        tracing::warn!("fetching {} failed ({e}); retrying in {delay:?}", remote_url());
                        cancel.sleep(delay);
                        delay *= 2;
                        attempt += 1;
                        continue;
                    }
                    return Err(fetch_error(failure, &remote_url(), first_fetch, attempt, limits).with_source(e));
                }
            }
        }
    }

    fn try_fetch(&self, url: &str, want: &RefWant, dst: &str, limits: Limits<'_>) -> Result<Fetched, FetchError> {
        match want {
            RefWant::DefaultBranch => {
                let ref_map = self.receive(url, &[format!("+HEAD:{dst}")], limits)?;
                let branch = ref_map.mappings.iter().find_map(|m| {
                    m.remote
                        .as_target()
                        .and_then(|t| t.strip_prefix(b"refs/heads/"))
                        .map(|b| b.to_str_lossy().into_owned())
                });
                let commit = self.peel_ref_to_commit(dst)?;
                Ok(Fetched {
                    commit,
                    resolved_ref: branch.unwrap_or_else(|| "HEAD".to_string()),
                })
            }
            RefWant::Named(name) => {
                let refs = self.list_remote(url, limits)?;
                if refs.branches.iter().any(|b| b == name) {
                    self.receive(url, &[format!("+refs/heads/{name}:{dst}")], limits)?;
                } else if refs.tags.iter().any(|t| t == name) {
                    self.receive(url, &[format!("+refs/tags/{name}:{dst}")], limits)?;
                } else if is_commit_like(name) {
                    return self.fetch_commit(url, name, dst, limits);
                } else {
                    return Err(FetchError::Aam(ref_not_found(name, &redact_url(url))));
                }
                let commit = self.peel_ref_to_commit(dst)?;
                self.set_ref(dst, commit)?;
                Ok(Fetched {
                    commit,
                    resolved_ref: name.clone(),
                })
            }
        }
    }

    /// "Fetches" from a repository on this machine the way `git clone --local`
    /// does: object files (immutable, content-addressed) are hard-linked into the
    /// cache, or copied across file systems, and the wanted ref is resolved by
    /// opening the repository directly. The cache stays a complete, standalone
    /// copy, and no process is spawned.
    fn fetch_local(&self, path: &Path, want: &RefWant, dst: &str, first_fetch: bool) -> Result<Fetched> {
        let (code, verb) = if first_fetch {
            (ErrorCode::GitCloneFailed, "clone")
        } else {
            (ErrorCode::GitFetchFailed, "fetch")
        };
        let source =
            gix::open_opts(path, gix::open::Options::isolated().config_overrides([alloc_limit()])).map_err(|e| {
                Error::new(
                    code,
                    format!(
                        "failed to {verb} `{}`: it is not a git repository (any more)",
                        path.display()
                    ),
                )
                .with_hint("check that the folder exists and holds a git repository; remove the source if it moved")
                .with_source(e)
            })?;
        let (commit, resolved_ref) = resolve_local(&source, want)
            .map_err(|e| e.unwrap_or_else(|| ref_not_found(&want_text(want), &format!("file://{}", path.display()))))?;
        let copied = link_objects(source.common_dir(), &self.dir.join("objects"), self.local_within.as_deref())
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::PermissionDenied => Error::new(
                    ErrorCode::Forbidden,
                    format!("`{}` keeps its git data outside the project and AAM_HOME", path.display()),
                )
                .with_hint("a local source served over MCP must keep its git folder inside the project; add it with the CLI instead"),
                _ => Error::io("copy objects into", &self.dir, e),
            })?;
        tracing::debug!("linked {copied} object files from {}", path.display());
        // Reopen so the object database sees packs that arrived after it was opened.
        let cache = Self::open(&self.dir)?;
        if !cache.has_commit(commit) {
            return Err(Error::new(code, format!("failed to {verb} `{}`: its objects are not all in its own object store", path.display()))
                .with_hint("repositories that borrow objects (`git clone --shared`, alternates) are not supported as local sources; clone it normally"));
        }
        cache.set_ref(dst, commit)?;
        Ok(Fetched { commit, resolved_ref })
    }

    /// Fetches every branch and tag, then pins `dst` to the commit `id` among them.
    fn fetch_commit(&self, url: &str, id: &str, dst: &str, limits: Limits<'_>) -> Result<Fetched, FetchError> {
        let scratch = format!("{dst}-scan");
        self.receive(
            url,
            &[
                format!("+refs/heads/*:{scratch}/heads/*"),
                format!("+refs/tags/*:{scratch}/tags/*"),
            ],
            limits,
        )?;
        let found = self
            .repo
            .rev_parse_single(id)
            .ok()
            .and_then(|obj| obj.object().ok())
            .and_then(|obj| obj.peel_to_commit().ok())
            .map(|c| c.id);
        let refs: Vec<String> = self
            .repo
            .references()
            .and_then(|platform| {
                platform.prefixed(format!("{scratch}/").as_str()).map(|iter| {
                    iter.filter_map(|r| r.ok())
                        .map(|r| r.name().as_bstr().to_string())
                        .collect()
                })
            })
            .unwrap_or_default();
        for name in refs {
            self.delete_ref(&name)?;
        }
        let Some(commit) = found else {
            return Err(FetchError::Aam(ref_not_found(id, &redact_url(url))));
        };
        self.set_ref(dst, commit)?;
        Ok(Fetched {
            commit,
            resolved_ref: commit.to_string(),
        })
    }

    fn remote(&self, url: &str, refspecs: &[String]) -> Result<gix::Remote<'_>, FetchError> {
        Ok(self
            .repo
            .remote_at(url)?
            .with_fetch_tags(Tags::None)
            .with_refspecs(refspecs.iter().map(String::as_str), Direction::Fetch)?)
    }

    /// Transport options for `url` with aam's time limits; `None` for transports
    /// other than http(s), which keep their own.
    fn transport_options(&self, url: &str, limits: Limits<'_>) -> Result<Option<Box<dyn std::any::Any>>, FetchError> {
        use gix::protocol::transport::client::blocking_io::http;
        let Some(options) = self.repo.transport_options(url, None)? else {
            return Ok(None);
        };
        let Ok(mut options) = options.downcast::<http::Options>() else {
            return Ok(None);
        };
        let Limits { limits, deadline, .. } = limits;
        // Each connection builds its client afresh, so the whole-operation bound is what is left of it.
        let left = deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_secs(1));
        let backend = http::reqwest::Options {
            // The blocking client's own timeout bounds each wait (for the answer, then for
            // every read of the body): the stall limit. The whole-operation bound is the
            // async client's, which also covers the body, so a trickle cannot outlast it.
            configure_client: Some(Box::new(move |_| {
                Ok(
                    reqwest::blocking::ClientBuilder::from(reqwest::ClientBuilder::new().timeout(left))
                        .http1_title_case_headers()
                        .connect_timeout(limits.connect.min(left))
                        .timeout(limits.stall.min(left)),
                )
            })),
            configure_request: None,
        };
        options.backend = Some(Arc::new(Mutex::new(backend)));
        Ok(Some(options))
    }

    /// Fetches the objects `refspecs` name and writes their local refs; returns the
    /// ref map. When the server supports it, blobs larger than
    /// [`MAX_SOURCE_FILE_BYTES`] stay on the server (`filter blob:limit=`): aam never
    /// reads them, so a repository with large assets beside its skills costs what its
    /// skills cost. gix's high-level fetch has no filter option, so this drives
    /// `gix::protocol::fetch` itself the way gix does, with a negotiation delegate
    /// that adds the filter to the wants.
    fn receive(
        &self,
        url: &str,
        refspecs: &[String],
        limits: Limits<'_>,
    ) -> Result<gix::protocol::fetch::RefMap, FetchError> {
        use gix::protocol::fetch;
        use gix::protocol::transport::client::TransportWithoutIO;
        let remote = self.remote(url, refspecs)?;
        let mut connection = remote.connect(Direction::Fetch)?;
        let transport = connection.transport_mut();
        if let Some(options) = self.transport_options(url, limits)? {
            transport.configure(&*options).map_err(gix::Error::from_error)?;
        }
        let mut handshake = gix::protocol::handshake(
            &mut *transport,
            gix::protocol::transport::Service::UploadPack,
            credentials_for(url),
            Vec::new(),
            &mut gix::progress::Discard,
        )?;
        let agent = || ("agent", Some(format!("aam/{}", env!("CARGO_PKG_VERSION"))));
        let context = fetch::refmap::init::Context {
            fetch_refspecs: remote.refspecs(Direction::Fetch).to_vec(),
            extra_refspecs: Vec::new(),
        };
        let ref_map = handshake
            .prepare_lsrefs_or_extract_refmap(agent(), true, context)?
            .fetch_blocking(gix::progress::Discard, &mut *transport, false)?;
        if ref_map.is_missing_required_mapping() {
            return Err(FetchError::Aam(ref_not_found(
                refspecs.first().map(String::as_str).unwrap_or("HEAD"),
                &redact_url(url),
            )));
        }
        let repo = &self.repo;
        let graph_repo = {
            let mut r = repo.clone();
            r.objects.refresh = gix::odb::store::RefreshMode::Never;
            r.objects.unset_object_cache();
            r
        };
        let mut graph = graph_repo.revision_graph(None);
        let mut negotiate = Negotiate {
            objects: &graph_repo.objects,
            refs: &graph_repo.refs,
            graph: &mut graph,
            ref_map: &ref_map,
            shallow: &fetch::Shallow::NoChange,
            negotiator: gix::negotiate::Algorithm::Consecutive.into_negotiator(),
            filter: format!("blob:limit={MAX_SOURCE_FILE_BYTES}"),
            filtered: false,
        };
        let mut bundle: Option<gix::odb::pack::bundle::write::Outcome> = None;
        let pack_dir = repo.objects.store_ref().path().join("pack");
        let outcome = gix::protocol::fetch(
            &mut negotiate,
            |reader, progress, should_interrupt| -> gix::Result<bool> {
                let written = gix::odb::pack::Bundle::write_to_directory(
                    reader,
                    Some(&pack_dir),
                    progress,
                    should_interrupt,
                    Some(repo.objects.clone()),
                    repo.object_hash(),
                    gix::odb::pack::bundle::write::Options {
                        thread_limit: None,
                        index_version: gix::odb::pack::index::Version::V2,
                        iteration_mode: gix::odb::pack::data::input::Mode::Verify,
                        // Resolving the pack inflates every object it holds: a server
                        // that does not filter (or one that lies in a delta) must not
                        // make aam allocate more than it allows for any object.
                        alloc_limit_bytes: Some(OBJECT_ALLOC_LIMIT_BYTES),
                        compression: Default::default(),
                    },
                )?;
                bundle = Some(written);
                Ok(true)
            },
            gix::progress::Discard,
            limits.cancel.flag(),
            fetch::Context {
                handshake: &mut handshake,
                transport: &mut *transport,
                user_agent: agent(),
                trace_packetlines: false,
            },
            fetch::Options {
                shallow_file: repo.shallow_file()?,
                shallow: &fetch::Shallow::NoChange,
                tags: fetch::Tags::None,
                reject_shallow_remote: false,
            },
        )?;
        let filtered = negotiate.filtered && outcome.is_some();
        if handshake.server_protocol_version == gix::protocol::transport::Protocol::V2 {
            gix::protocol::indicate_end_of_interaction(&mut *transport, false).ok();
        }
        if filtered {
            self.mark_partial(url)?;
            // As `git fetch --filter` does: objects a `.promisor` pack names may be missing.
            if let Some(data) = bundle.as_ref().and_then(|b| b.data_path.as_ref()) {
                let marker = data.with_extension("promisor");
                std::fs::write(&marker, b"").map_err(|e| Error::io("write", &marker, e))?;
            }
        }
        for mapping in &ref_map.mappings {
            if let (Some(local), Some(id)) = (&mapping.local, mapping.remote.as_id()) {
                self.set_ref(&local.to_str_lossy(), id.to_owned())?;
            }
        }
        if let Some(path) = bundle.and_then(|b| b.keep_path) {
            std::fs::remove_file(&path).map_err(|e| Error::io("remove", &path, e))?;
        }
        Ok(ref_map)
    }

    /// Marks the cache as a partial clone of `url` the way `git clone --filter` does
    /// (`extensions.partialClone` naming a promisor remote with the filter), so `git`
    /// itself reads it without taking the blobs left on the server for damage.
    fn mark_partial(&self, url: &str) -> Result<()> {
        let path = self.dir.join("config");
        let broken = |e: &dyn std::fmt::Display| {
            Error::new(
                ErrorCode::IoError,
                format!("failed to update the git cache's config `{}`", path.display()),
            )
            .with_hint(format!("check that `AAM_HOME` is writable ({e})"))
        };
        let mut config = gix::config::File::from_path_no_includes(path.clone(), gix::config::Source::Local)
            .map_err(|e| broken(&e))?;
        let url = redact_url(url);
        let filter = format!("blob:limit={MAX_SOURCE_FILE_BYTES}");
        for (section, sub, key, value) in [
            ("core", None, "repositoryformatversion", "1"),
            ("extensions", None, "partialClone", PROMISOR_REMOTE),
            ("remote", Some(PROMISOR_REMOTE), "url", url.as_str()),
            ("remote", Some(PROMISOR_REMOTE), "promisor", "true"),
            ("remote", Some(PROMISOR_REMOTE), "partialclonefilter", filter.as_str()),
        ] {
            config
                .set_raw_value_by(section, sub.map(|s: &str| s.as_bytes().as_bstr()), key, value)
                .map_err(|e| broken(&e))?;
        }
        let mut bytes = Vec::new();
        config.write_to(&mut bytes).map_err(|e| broken(&e))?;
        crate::atomic::write_file(&path, &bytes)
    }

    /// Whether the cache is a partial clone: blobs above [`MAX_SOURCE_FILE_BYTES`] may
    /// have been left on the server.
    pub fn is_partial(&self) -> bool {
        std::fs::read_to_string(self.dir.join("config"))
            .ok()
            .and_then(|text| gix::config::File::try_from(text.as_str()).ok())
            .and_then(|config| config.string("extensions.partialClone").map(|_| ()))
            .is_some()
    }

    fn list_remote(&self, url: &str, limits: Limits<'_>) -> Result<RemoteRefs, FetchError> {
        // Fetch refspecs with a glob must be two-sided; listing writes nothing, so the destination is unused.
        let specs = [
            "+refs/heads/*:refs/aam-list/heads/*".to_string(),
            "+refs/tags/*:refs/aam-list/tags/*".to_string(),
        ];
        let remote = self.remote(url, &specs)?;
        let mut connection = remote.connect(Direction::Fetch)?.with_credentials(credentials_for(url));
        if let Some(options) = self.transport_options(url, limits)? {
            connection = connection.with_transport_options(options);
        }
        let (map, _) = connection.ref_map(gix::progress::Discard, ref_map::Options::default())?;
        let mut refs = RemoteRefs::default();
        for r in &map.remote_refs {
            let name = match r {
                Ref::Direct { full_ref_name, .. }
                | Ref::Peeled { full_ref_name, .. }
                | Ref::Symbolic { full_ref_name, .. } => full_ref_name.to_str_lossy(),
                Ref::Unborn { .. } => continue,
            };
            if let Some(branch) = name.strip_prefix("refs/heads/") {
                refs.branches.push(branch.to_string());
            } else if let Some(tag) = name.strip_prefix("refs/tags/") {
                refs.tags.push(tag.to_string());
            }
        }
        Ok(refs)
    }

    fn peel_ref_to_commit(&self, name: &str) -> Result<ObjectId, FetchError> {
        let mut reference = self.repo.find_reference(name)?;
        let commit = reference.peel_to_commit()?;
        Ok(commit.id)
    }

    /// Points the local ref `name` at `id`.
    pub fn set_ref(&self, name: &str, id: ObjectId) -> Result<()> {
        use gix::refs::transaction::{Change, LogChange, RefEdit, RefLog};
        let name: gix::refs::FullName = name.try_into().map_err(|e| self.write_error(e))?;
        let edit = RefEdit {
            change: Change::Update {
                log: LogChange {
                    mode: RefLog::AndReference,
                    force_create_reflog: false,
                    message: "aam".into(),
                },
                expected: PreviousValue::Any,
                new: gix::refs::Target::Object(id),
            },
            name,
            deref: false,
        };
        // The cache keeps no reflog (`core.logAllRefUpdates` is off in a bare
        // repository), so no committer is named: finding one reads the time zone
        // database, a few milliseconds of every update.
        self.repo
            .edit_references_as([edit], None)
            .map_err(|e| self.write_error(e))?;
        Ok(())
    }

    /// Deletes the local ref `name` when it exists.
    pub fn delete_ref(&self, name: &str) -> Result<()> {
        let found = self.repo.try_find_reference(name).map_err(|e| self.write_error(e))?;
        if let Some(r) = found {
            r.delete().map_err(|e| self.write_error(e))?;
        }
        Ok(())
    }

    /// Whether the cache holds the ref `name`; one that cannot be read is
    /// taken to be there, so nothing decides on it as if it were gone.
    pub fn has_ref(&self, name: &str) -> bool {
        self.repo.try_find_reference(name).map_or(true, |found| found.is_some())
    }

    /// Whether the cache holds a ref below `prefix` (`refs/aam/locked/`); a
    /// cache whose refs cannot be listed is taken to hold one, so nothing
    /// decides on it as if it held none.
    pub fn has_refs_under(&self, prefix: &str) -> bool {
        let found = self.repo.references().map(|platform| {
            platform
                .prefixed(prefix)
                .map(|mut refs| refs.next().is_some())
                .unwrap_or(true)
        });
        found.unwrap_or(true)
    }

    /// The full names of the refs below `prefix` (`refs/aam/`).
    pub fn ref_names_under(&self, prefix: &str) -> Result<Vec<String>> {
        let platform = self.repo.references().map_err(|e| self.write_error(e))?;
        let refs = platform.prefixed(prefix).map_err(|e| self.write_error(e))?;
        let mut names = Vec::new();
        for found in refs {
            let found = found.map_err(|e| self.write_error(e))?;
            names.push(found.name().as_bstr().to_string());
        }
        Ok(names)
    }

    /// Whether `id` is a commit present in the cache.
    pub fn has_commit(&self, id: ObjectId) -> bool {
        matches!(self.repo.try_find_header(id), Ok(Some(h)) if h.kind() == gix::objs::Kind::Commit)
    }

    /// Whether `commit` is `head` or one of its ancestors: `None` when the
    /// cache does not hold `commit` (it cannot tell). The walk goes back only
    /// to a week before `commit` was made (a child made before its parent by
    /// a skewed clock is still found), so it stays short in a long history.
    pub fn in_history(&self, commit: ObjectId, head: ObjectId) -> Result<Option<bool>> {
        if commit == head {
            return Ok(Some(true));
        }
        let Ok(found) = self.repo.find_commit(commit) else {
            return Ok(None);
        };
        const SLACK_SECONDS: i64 = 7 * 86_400;
        let made = found.time().map_err(|e| self.corrupted(e))?.seconds;
        let walk = self
            .repo
            .rev_walk([head])
            .sorting(gix::revision::walk::Sorting::ByCommitTimeCutoff {
                order: Default::default(),
                seconds: made.saturating_sub(SLACK_SECONDS),
            })
            .all()
            .map_err(|e| self.corrupted(e))?;
        for info in walk {
            if info.map_err(|e| self.corrupted(e))?.id == commit {
                return Ok(Some(true));
            }
        }
        Ok(Some(false))
    }

    /// The root tree and commit time of `commit`.
    pub fn commit_tree(&self, commit: ObjectId) -> Result<(ObjectId, Option<String>)> {
        let commit = self.repo.find_commit(commit).map_err(|e| self.corrupted(e))?;
        let tree = commit.tree_id().map_err(|e| self.corrupted(e))?.detach();
        let when = commit
            .time()
            .ok()
            .and_then(|t| time::OffsetDateTime::from_unix_timestamp(t.seconds).ok())
            .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok());
        Ok((tree, when))
    }

    /// The entries directly inside the tree `id`, parsed for lookups by name.
    pub fn folder(&self, id: ObjectId) -> Result<Rc<Folder>> {
        if let Some(folder) = self.folders.borrow().folders.get(&id) {
            return Ok(folder.clone());
        }
        let folder = Rc::new(decode_folder(&self.repo, id).map_err(|e| self.corrupted(e))?);
        self.folders.borrow_mut().insert(id, folder.clone());
        Ok(folder)
    }

    /// The folders `old` and `new` as [`GitCache::folder`] gives them. When both
    /// are wide and not parsed yet (the two sides of a 100,000-entry folder an
    /// update compares), `new` is decoded on a second thread meanwhile: each
    /// inflates megabytes, and a delta inflates its base once more.
    fn folder_pair(&self, old: Option<ObjectId>, new: Option<ObjectId>) -> Result<(MaybeFolder, MaybeFolder)> {
        let unparsed_and_wide = |id: ObjectId| {
            !self.folders.borrow().folders.contains_key(&id)
                && matches!(self.repo.try_find_header(id), Ok(Some(h)) if h.size() >= WIDE_TREE_BYTES)
        };
        if let (Some(old), Some(new)) = (old, new)
            && unparsed_and_wide(old)
            && unparsed_and_wide(new)
        {
            let mut other = self.repo.clone();
            // The thread reads one tree: a cache of delta bases would only copy it once more.
            other.objects.unset_pack_cache();
            let (old_folder, new_folder) = std::thread::scope(|scope| {
                let new_folder = scope.spawn(move || decode_folder(&other, new));
                let old_folder = decode_folder(&self.repo, old);
                (
                    old_folder,
                    new_folder
                        .join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                )
            });
            let cached = |id, decoded: std::result::Result<Folder, DecodeFolderError>| {
                let folder = Rc::new(decoded.map_err(|e| self.corrupted(e))?);
                self.folders.borrow_mut().insert(id, folder.clone());
                Ok::<_, Error>(folder)
            };
            return Ok((Some(cached(old, old_folder)?), Some(cached(new, new_folder)?)));
        }
        Ok((
            old.map(|id| self.folder(id)).transpose()?,
            new.map(|id| self.folder(id)).transpose()?,
        ))
    }

    /// Every file below the tree `id`, with paths prefixed by `prefix` (its
    /// repository path), folder level by folder level (the files of a folder
    /// before those of its subfolders). A level of at least
    /// [`TREES_SPLIT_AT`] folders (the 100,000 skill folders of a wide
    /// `skills/`) is read on two threads, each half through its own handle, and
    /// the halves are put back in order: reading them was most of a new
    /// source's detection, with the second core idle.
    pub fn files_under(&self, id: ObjectId, prefix: &str) -> Result<Vec<TreeFile>> {
        let mut found = Level::default();
        let mut level = vec![(gix::bstr::BString::default(), id)];
        while !level.is_empty() {
            let read = if level.len() >= TREES_SPLIT_AT {
                let (first, second) = level.split_at(level.len() / 2);
                let other = self.repo.clone();
                std::thread::scope(|scope| {
                    let second = scope.spawn(move || read_level(&other, second));
                    let first = read_level(&self.repo, first);
                    let second = second.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                    first.and_then(|mut first| {
                        first.append(second?);
                        Ok(first)
                    })
                })
            } else {
                read_level(&self.repo, &level)
            };
            let mut read = read.map_err(|e| self.corrupted(e))?;
            if read.unordered {
                read.keep_first_of_each_name();
            }
            level = std::mem::take(&mut read.folders);
            found.append(read);
        }
        let shown = |path: &gix::bstr::BStr| match prefix {
            "" => path.to_str_lossy().into_owned(),
            _ => format!("{prefix}/{}", path.to_str_lossy()),
        };
        for (path, why) in &found.refused {
            tracing::warn!("left out `{}`: {why}", shown(path.as_ref()));
        }
        Ok(found
            .files
            .into_iter()
            .filter_map(|(filepath, mode, oid)| {
                let mode = FileMode::from_mode(mode)?;
                // A name that is not UTF-8 cannot be installed, served or told
                // apart from another one that differs in the same bytes.
                let Ok(rel) = filepath.to_str() else {
                    tracing::warn!("left out `{}`: its name is not UTF-8", shown(filepath.as_ref()));
                    return None;
                };
                let path = if prefix.is_empty() {
                    rel.to_string()
                } else {
                    format!("{prefix}/{rel}")
                };
                Some(TreeFile { path, mode, oid })
            })
            .collect())
    }

    /// Repository paths of files added, modified or deleted between two root trees,
    /// sorted: both trees walked together in git order, unchanged subtrees skipped
    /// by id (so the cost follows the change and the width of the folders it
    /// touches), added and removed folders walked whole. Submodules are not files.
    pub fn changed_paths(&self, old: ObjectId, new: ObjectId) -> Result<Vec<String>> {
        use super::folder::{Difference, differences};
        let mut paths = Vec::new();
        // Folders still to compare: (old tree, new tree, their path); a stack, not
        // recursion, so a hostile repository's depth cannot exhaust the call stack.
        let mut pending: Vec<(Option<ObjectId>, Option<ObjectId>, Vec<u8>)> = vec![(Some(old), Some(new), Vec::new())];
        while let Some((old, new, prefix)) = pending.pop() {
            if old == new {
                continue;
            }
            let (old, new) = self.folder_pair(old, new)?;
            let path = |name: &[u8]| {
                let mut path = prefix.clone();
                if !path.is_empty() {
                    path.push(b'/');
                }
                path.extend_from_slice(name);
                path
            };
            for difference in differences(old.as_deref(), new.as_deref()) {
                let (name, before, after) = match difference {
                    Difference::Removed(name, mode, oid) => (name, Some((mode, oid)), None),
                    Difference::Added(name, mode, oid) => (name, None, Some((mode, oid))),
                    Difference::Changed(name, before, after) => (name, Some(before), Some(after)),
                };
                let tree =
                    |side: Option<(EntryMode, ObjectId)>| side.filter(|(mode, _)| mode.is_tree()).map(|(_, id)| id);
                let file = |side: Option<(EntryMode, ObjectId)>| {
                    side.is_some_and(|(mode, _)| FileMode::from_mode(mode).is_some())
                };
                if tree(before).is_some() || tree(after).is_some() {
                    pending.push((tree(before), tree(after), path(name)));
                } else if file(before) || file(after) {
                    paths.push(path(name).to_str_lossy().into_owned());
                }
            }
        }
        paths.sort();
        paths.dedup();
        Ok(paths)
    }

    /// The bytes of the blob `id`, the file at the repository path `path`. A blob
    /// larger than [`MAX_SOURCE_FILE_BYTES`], or one a partial fetch left on the
    /// server, is `AAM_SOURCE_FILE_TOO_LARGE`; any other missing blob is damage.
    ///
    /// The blob is read without asking its size first, through a handle whose
    /// allocation limit ([`BLOB_ALLOC_LIMIT_BYTES`]) bounds the memory: asking
    /// inflated the start of every delta twice (4% of an add's CPU). Only when
    /// that read fails is the size looked up, to refuse the file or, for a file
    /// within the limit whose delta chain passes through a larger version, to
    /// read it again through the cache's own handle ([`OBJECT_ALLOC_LIMIT_BYTES`]).
    pub fn read_blob(&self, id: ObjectId, path: &str) -> Result<Vec<u8>> {
        let blobs = match self.blobs.get() {
            Some(blobs) => blobs,
            None => {
                let limited = with_alloc_limit(&self.repo, BLOB_ALLOC_LIMIT_BYTES).map_err(|e| self.corrupted(e))?;
                self.blobs.get_or_init(|| limited)
            }
        };
        let first = match blobs.find_blob(id) {
            Ok(mut blob) => return within_limit(blob.take_data(), path),
            Err(e) => e,
        };
        match self.repo.try_find_header(id) {
            Ok(Some(header)) if header.size() > MAX_SOURCE_FILE_BYTES => {
                Err(source_file_too_large(path, Some(header.size())))
            }
            Ok(None) if self.is_partial() => Err(source_file_too_large(path, None)),
            Ok(Some(_)) if first.is_resource_exhausted() => {
                let mut blob = self.repo.find_blob(id).map_err(|e| self.corrupted(e))?;
                within_limit(blob.take_data(), path)
            }
            _ => Err(self.corrupted(first)),
        }
    }

    /// Where each object lies in the cache's packs: (pack, offset) from the pack
    /// indexes alone (nothing is inflated), `None` for a loose or missing object.
    /// Reading blobs in this order lets each delta find its base among the objects
    /// just decoded (in the delta-base cache) instead of inflating its chain again.
    pub fn pack_positions(&self, ids: impl Iterator<Item = ObjectId>) -> Vec<Option<(usize, u64)>> {
        let indexes = self.pack_indexes();
        ids.map(|id| indexes.position(id)).collect()
    }

    /// The indexes of the cache's packs, to ask [`PackIndexes::position`] of,
    /// from any thread.
    pub fn pack_indexes(&self) -> PackIndexes {
        let mut index_paths: Vec<PathBuf> = std::fs::read_dir(self.dir.join("objects").join("pack"))
            .map(|entries| {
                entries
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == "idx"))
                    .collect()
            })
            .unwrap_or_default();
        index_paths.sort();
        PackIndexes(
            index_paths
                .iter()
                .filter_map(|path| gix::odb::pack::index::File::at(path, self.repo.object_hash()).ok())
                .collect(),
        )
    }

    /// An object of the cache that could not be read: damage, or one gix refused
    /// to inflate past [`OBJECT_ALLOC_LIMIT_BYTES`].
    fn corrupted(&self, e: impl std::error::Error + Send + Sync + 'static) -> Error {
        if gix::error::classify(&e).is_resource_exhausted() {
            return object_too_large().with_source(e);
        }
        cache_corrupted(&self.dir).with_source(e)
    }

    fn write_error(&self, e: impl std::error::Error + Send + Sync + 'static) -> Error {
        Error::new(
            ErrorCode::IoError,
            format!("failed to update refs in the git cache `{}`", self.dir.display()),
        )
        .with_hint("check that `AAM_HOME` is writable")
        .with_source(e)
    }
}

/// The remote a partial cache names as its promisor (only `git` reads it).
const PROMISOR_REMOTE: &str = "origin";

/// The largest file aam reads from a source, in bytes: fetches leave larger blobs on
/// the server where it allows, and reading one is `AAM_SOURCE_FILE_TOO_LARGE`.
pub const MAX_SOURCE_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// gix's own negotiation (consecutive algorithm, no shallow boundary, no alternates),
/// plus a blob filter when the server can apply one.
struct Negotiate<'a, 'b, 'c> {
    objects: &'a gix::OdbHandle,
    refs: &'a gix::refs::file::Store,
    graph: &'a mut gix::negotiate::Graph<'b, 'c>,
    ref_map: &'a gix::protocol::fetch::RefMap,
    shallow: &'a gix::protocol::fetch::Shallow,
    negotiator: Box<dyn gix::negotiate::Negotiator>,
    filter: String,
    /// Whether the filter was sent.
    filtered: bool,
}

impl gix::protocol::fetch::Negotiate for Negotiate<'_, '_, '_> {
    fn mark_complete_and_common_ref(&mut self) -> gix::Result<gix::protocol::fetch::negotiate::Action> {
        use gix::protocol::fetch::{Tags, negotiate};
        negotiate::mark_complete_and_common_ref(
            &self.objects,
            self.refs,
            || Ok(std::iter::empty::<(gix::refs::file::Store, gix::OdbHandle)>()),
            &mut *self.negotiator,
            &mut *self.graph,
            self.ref_map,
            self.shallow,
            negotiate::make_refmapping_ignore_predicate(Tags::None, self.ref_map),
        )
    }

    fn add_wants(&mut self, arguments: &mut gix::protocol::fetch::Arguments, remote_ref_target_known: &[bool]) -> bool {
        use gix::protocol::fetch::{Tags, negotiate};
        let wants = negotiate::add_wants(
            self.objects,
            arguments,
            self.ref_map,
            remote_ref_target_known,
            self.shallow,
            negotiate::make_refmapping_ignore_predicate(Tags::None, self.ref_map),
        );
        if wants && arguments.can_use_filter() {
            arguments.filter(&self.filter);
            self.filtered = true;
        }
        wants
    }

    fn one_round(
        &mut self,
        state: &mut gix::protocol::fetch::negotiate::one_round::State,
        arguments: &mut gix::protocol::fetch::Arguments,
        previous_response: Option<&gix::protocol::fetch::Response>,
    ) -> gix::Result<(gix::protocol::fetch::negotiate::Round, bool)> {
        gix::protocol::fetch::negotiate::one_round(
            &mut *self.negotiator,
            &mut *self.graph,
            state,
            arguments,
            previous_response,
        )
    }
}

/// Resolves `want` in a local repository: branch first, then tag, then commit id.
/// `Err(None)` means the name matched nothing.
fn resolve_local(repo: &Repository, want: &RefWant) -> Result<(ObjectId, String), Option<Error>> {
    let peel = |name: &str| -> Option<ObjectId> {
        let mut reference = repo.try_find_reference(name).ok().flatten()?;
        reference.peel_to_commit().ok().map(|c| c.id)
    };
    match want {
        RefWant::DefaultBranch => {
            let commit = repo
                .head_commit()
                .map_err(|e| {
                    if gix::error::classify(&e).is_resource_exhausted() {
                        return Some(object_too_large().with_source(e));
                    }
                    let shown = repo.workdir().unwrap_or(repo.git_dir()).display().to_string();
                    let others = local_ref_names(repo);
                    Some(match others.is_empty() {
                        true => Error::new(ErrorCode::GitRefNotFound, format!("`{shown}` has no commits yet"))
                            .with_hint("commit the artifacts first, then add the repository"),
                        false => Error::new(
                            ErrorCode::GitRefNotFound,
                            format!(
                                "`{shown}` is on branch `{}`, which has no commits yet",
                                repo.head_name()
                                    .ok()
                                    .flatten()
                                    .map(|n| n.shorten().to_string())
                                    .unwrap_or_else(|| "HEAD".to_string())
                            ),
                        )
                        .with_hint(format!(
                            "pass `--ref` with one it has: {}",
                            others.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
                        )),
                    })
                })?
                .id;
            let branch = repo.head_name().ok().flatten().and_then(|n| {
                n.as_bstr()
                    .strip_prefix(b"refs/heads/")
                    .map(|b| b.to_str_lossy().into_owned())
            });
            Ok((commit, branch.unwrap_or_else(|| "HEAD".to_string())))
        }
        RefWant::Named(name) => {
            // A branch, a tag, a remote-tracking branch (`origin/main`, what a
            // clone of a bundle has), or a full ref name.
            let found = peel(&format!("refs/heads/{name}"))
                .or_else(|| peel(&format!("refs/tags/{name}")))
                .or_else(|| peel(&format!("refs/remotes/{name}")))
                .or_else(|| name.starts_with("refs/").then(|| peel(name)).flatten());
            if let Some(commit) = found {
                return Ok((commit, name.clone()));
            }
            if !is_commit_like(name) {
                return Err(None);
            }
            let commit = repo
                .rev_parse_single(name.as_str())
                .ok()
                .and_then(|id| id.object().ok())
                .and_then(|obj| obj.peel_to_commit().ok())
                .map(|c| c.id)
                .ok_or(None)?;
            Ok((commit, commit.to_string()))
        }
    }
}

/// The branches, remote-tracking branches and tags of a local repository, as
/// `--ref` takes them (`main`, `origin/main`, `v1`), the first ten.
fn local_ref_names(repo: &Repository) -> Vec<String> {
    let Ok(platform) = repo.references() else {
        return Vec::new();
    };
    let Ok(all) = platform.all() else {
        return Vec::new();
    };
    all.filter_map(|r| r.ok())
        .filter_map(|r| {
            let name = r.name().as_bstr().to_str_lossy().into_owned();
            ["refs/heads/", "refs/remotes/", "refs/tags/"]
                .iter()
                .find_map(|prefix| name.strip_prefix(prefix).map(str::to_string))
        })
        .filter(|name| !name.ends_with("/HEAD"))
        .take(10)
        .collect()
}

fn want_text(want: &RefWant) -> String {
    match want {
        RefWant::DefaultBranch => "HEAD".to_string(),
        RefWant::Named(name) => name.clone(),
    }
}

/// Hard-links (or copies) every pack and loose object of the git folder
/// `git_dir`'s `objects/` that `to` lacks. Packs land data first, index last,
/// so a reader never sees an index without its pack. Returns how many files
/// were added.
///
/// The folders are opened one inside the other, never through a link, and
/// the files are taken from the folders so opened, as regular files only: a
/// hostile repository's `objects/`, `pack/` or an object put as a link to
/// another repository's (or swapped for one after a check) is refused or left
/// out, never read.
fn link_objects(git_dir: &Path, to: &Path, within: Option<&[PathBuf]>) -> std::io::Result<usize> {
    use rustix::fs::{Mode, OFlags};
    let folder = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let git = rustix::fs::open(git_dir, folder, Mode::empty())?;
    // The folder as opened (whatever its path led to by then) is what counts.
    if let Some(within) = within
        && !within
            .iter()
            .any(|root| crate::paths::opened_lies_in(&git, root).unwrap_or(false))
    {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            "the git folder lies outside the allowed folders",
        ));
    }
    let objects = rustix::fs::openat(&git, "objects", folder | OFlags::NOFOLLOW, Mode::empty()).map_err(|e| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("its `objects` folder cannot be opened as a folder of its own ({e}): a link is not followed"),
        )
    })?;
    let mut added = 0;
    if let Ok(pack) = rustix::fs::openat(&objects, "pack", folder | OFlags::NOFOLLOW, Mode::empty()) {
        let names = regular_files(&pack)?;
        for idx in names.iter().filter(|n| n.ends_with(".idx")) {
            let data = format!("{}.pack", idx.trim_end_matches(".idx"));
            let target_idx = to.join("pack").join(idx);
            if target_idx.exists() || !names.contains(&data) {
                continue;
            }
            link_or_copy(&pack, &data, &to.join("pack").join(&data))?;
            link_or_copy(&pack, idx, &target_idx)?;
            added += 2;
        }
    }
    for entry in rustix::fs::Dir::read_from(&objects)? {
        let entry = entry?;
        let Ok(name) = entry.file_name().to_str() else { continue };
        if name.len() != 2 || !name.chars().all(|c| c.is_ascii_hexdigit()) {
            continue;
        }
        let Ok(fanout) = rustix::fs::openat(&objects, name, folder | OFlags::NOFOLLOW, Mode::empty()) else {
            continue; // a link, or not a folder
        };
        for object in regular_files(&fanout)? {
            let target = to.join(name).join(&object);
            if !target.exists() {
                std::fs::create_dir_all(to.join(name))?;
                link_or_copy(&fanout, &object, &target)?;
                added += 1;
            }
        }
    }
    Ok(added)
}

/// The names of the regular files in an open folder (links not followed).
fn regular_files(folder: &rustix::fd::OwnedFd) -> std::io::Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in rustix::fs::Dir::read_from(folder)? {
        let entry = entry?;
        let Ok(name) = entry.file_name().to_str() else { continue };
        let regular = rustix::fs::statat(folder, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW)
            .is_ok_and(|stat| rustix::fs::FileType::from_raw_mode(stat.st_mode) == rustix::fs::FileType::RegularFile);
        if regular {
            names.push(name.to_string());
        }
    }
    Ok(names)
}

/// A hard link to the file `name` of the open `folder` when both sides share
/// a file system, else a copy that lands atomically; the file is never
/// reached through a link.
fn link_or_copy(folder: &rustix::fd::OwnedFd, name: &str, to: &Path) -> std::io::Result<()> {
    use rustix::fs::{AtFlags, CWD, Mode, OFlags};
    match rustix::fs::linkat(folder, name, CWD, to, AtFlags::empty()) {
        Ok(()) | Err(rustix::io::Errno::EXIST) => Ok(()),
        Err(_) => {
            let from = rustix::fs::openat(
                folder,
                name,
                OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            let mut from = std::fs::File::from(from);
            let tmp = to.with_extension("aam-tmp");
            let mut out = std::fs::File::create(&tmp)?;
            std::io::copy(&mut from, &mut out)?;
            std::fs::rename(&tmp, to)
        }
    }
}

/// The limits of one fetch, the instant its time is up, and the call's
/// cancellation flag (gix checks it while it talks to the server).
#[derive(Debug, Clone, Copy)]
struct Limits<'c> {
    limits: FetchLimits,
    deadline: Instant,
    cancel: &'c Cancel,
}

/// Branch and tag names a remote advertises.
#[derive(Debug, Default)]
struct RemoteRefs {
    branches: Vec<String>,
    tags: Vec<String>,
}

enum FetchError {
    /// Already a product error.
    Aam(Error),
    /// A gix failure still to be classified.
    Git(gix::Error),
}

impl From<gix::Error> for FetchError {
    fn from(e: gix::Error) -> Self {
        Self::Git(e)
    }
}

impl From<Error> for FetchError {
    fn from(e: Error) -> Self {
        Self::Aam(e)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Failure {
    Auth,
    RepositoryNotFound,
    /// The server's TLS certificate was refused; the text names why.
    Certificate(&'static str),
    /// Connecting took too long, or the server stopped sending.
    TimedOut,
    /// The host could not be reached (name lookup, refused or unreachable connection).
    Network,
    /// The connection broke after the transfer began.
    Transfer,
    Other,
}

impl Failure {
    /// Whether trying again may succeed: never for certificates, 401/403 or 404.
    fn can_pass(self) -> bool {
        matches!(self, Self::TimedOut | Self::Network | Self::Transfer)
    }
}

/// What one error in a failure's chain says about it.
#[derive(Debug, Default, Clone, Copy)]
struct Cause {
    timed_out: bool,
    connect: bool,
    transient: bool,
}

fn classify(err: &gix::Error) -> Failure {
    use gix::protocol::transport::client::Error as TransportError;
    if err.is_unauthenticated() || err.is_permission_denied() {
        return Failure::Auth;
    }
    let mut messages = Vec::new();
    let mut cause = Cause {
        transient: err.is_retryable()
            || err.can_retry()
            || err
                .downcast_any_ref::<TransportError>()
                .is_some_and(|e| matches!(e, TransportError::Io(_) | TransportError::Http(_))),
        ..Cause::default()
    };
    for top in err.iter_errors() {
        let mut next: Option<&(dyn std::error::Error + 'static)> = Some(top);
        while let Some(e) = next {
            messages.push(e.to_string());
            if let Some(r) = e.downcast_ref::<reqwest::Error>() {
                cause.timed_out |= r.is_timeout();
                cause.connect |= r.is_connect();
                cause.transient = true;
            }
            if let Some(io) = e.downcast_ref::<std::io::Error>() {
                use std::io::ErrorKind::*;
                cause.timed_out |= io.kind() == TimedOut;
                cause.connect |= matches!(
                    io.kind(),
                    ConnectionRefused | HostUnreachable | NetworkUnreachable | AddrNotAvailable | NotConnected
                );
                cause.transient = true;
            }
            next = e.source();
        }
    }
    classify_messages(&messages, cause)
}

/// The part of [`classify`] that reads the chain's messages (rustls reports its
/// certificate verdicts only in words, inside an `io::Error`).
fn classify_messages(messages: &[String], cause: Cause) -> Failure {
    let mentions = |needle: &str| messages.iter().any(|m| m.contains(needle));
    if mentions("Received HTTP status 404") || mentions("does not appear to be a git repository") {
        return Failure::RepositoryNotFound;
    }
    if mentions("No CA certificates were loaded") {
        return Failure::Certificate(
            "no certificate authority could be loaded to check it (see `SSL_CERT_FILE` and `SSL_CERT_DIR`)",
        );
    }
    if mentions("invalid peer certificate") {
        let why = if mentions("UnknownIssuer") {
            "it is signed by an unknown issuer (a self-signed certificate or a private certificate authority)"
        } else if mentions("not valid for name") || mentions("NotValidForName") {
            "it was issued for another host name"
        } else if mentions("expired") || mentions("Expired") || mentions("not valid yet") || mentions("NotValidYet") {
            "it has expired or is not valid yet"
        } else if mentions("Revoked") {
            "it has been revoked"
        } else {
            "it could not be verified"
        };
        return Failure::Certificate(why);
    }
    let connect = cause.connect
        || mentions("dns error")
        || mentions("failed to lookup address")
        || mentions("Connection refused")
        || mentions("error trying to connect");
    if cause.timed_out || mentions("timed out") || mentions("operation timed out") {
        Failure::TimedOut
    } else if connect {
        Failure::Network
    } else if cause.transient {
        Failure::Transfer
    } else {
        Failure::Other
    }
}

/// Folders of one level below which [`GitCache::files_under`] reads them on one
/// thread: a second thread and handle cost about what a few hundred folders do.
const TREES_SPLIT_AT: usize = 2048;

/// What one level of [`GitCache::files_under`]'s walk found, in tree order.
#[derive(Default)]
struct Level {
    /// Non-folder entries: (path below the walk's root, mode, id).
    files: Vec<(gix::bstr::BString, EntryMode, ObjectId)>,
    /// Folders of the next level: (path, tree id).
    folders: Vec<(gix::bstr::BString, ObjectId)>,
    /// Paths of the entries left out, with why.
    refused: Vec<(gix::bstr::BString, &'static str)>,
    /// Whether some folder's entries were out of git's order: only a hand-made
    /// tree has that, and it may name one entry twice apart (see
    /// [`GitCache::files_under`]).
    unordered: bool,
}

impl Level {
    /// Leaves out every entry whose path an earlier one of this level has (a
    /// folder out of git's order may name one twice apart), and all below it.
    fn keep_first_of_each_name(&mut self) {
        let mut seen = std::collections::HashSet::new();
        let mut refused = Vec::new();
        let mut first = |path: &gix::bstr::BString| {
            let new = seen.insert(path.clone());
            if !new {
                refused.push((path.clone(), "an entry of that name comes before it"));
            }
            new
        };
        self.files.retain(|(path, _, _)| first(path));
        self.folders.retain(|(path, _)| first(path));
        self.refused.append(&mut refused);
    }

    fn append(&mut self, mut later: Level) {
        self.files.append(&mut later.files);
        self.folders.append(&mut later.folders);
        self.refused.append(&mut later.refused);
        self.unordered |= later.unordered;
    }
}

/// Git's order of a folder's entries: by name, a folder's name read as if it
/// ended in `/`.
fn git_order(a: &[u8], a_tree: bool, b: &[u8], b_tree: bool) -> std::cmp::Ordering {
    let a_key = a.iter().copied().chain(a_tree.then_some(b'/'));
    a_key.cmp(b.iter().copied().chain(b_tree.then_some(b'/')))
}

/// The entries of the folders `trees` (path, id), in order. An entry whose
/// name is empty or holds a `/` is left out, and so is all below it: only a
/// hand-made tree has one (git fsck's `fullPathname`, `emptyName`), and its
/// path would read as another entry's. A name given twice (`duplicateEntries`)
/// marks the level unordered, for [`Level::keep_first_of_each_name`].
fn read_level(repo: &Repository, trees: &[(gix::bstr::BString, ObjectId)]) -> std::result::Result<Level, gix::Error> {
    let mut level = Level::default();
    for (path, id) in trees {
        let tree = repo.find_tree(*id)?;
        let mut previous: Option<(&[u8], bool)> = None;
        for entry in gix::objs::TreeRefIter::from_bytes(&tree.data, repo.object_hash()) {
            let entry = entry?;
            let name: &[u8] = entry.filename;
            let mut entry_path = path.clone();
            if !entry_path.is_empty() {
                entry_path.push(b'/');
            }
            entry_path.extend_from_slice(name);
            // A name given twice (as a file and a folder too) or out of order
            // is sorted out once the level is read.
            if let Some((before, before_tree)) = previous
                && (before == name || git_order(before, before_tree, name, entry.mode.is_tree()).is_ge())
            {
                level.unordered = true;
            }
            previous = Some((name, entry.mode.is_tree()));
            if name.is_empty() {
                level.refused.push((entry_path, "its name is empty"));
            } else if name.contains(&b'/') {
                level.refused.push((entry_path, "its name holds a `/`"));
            } else if entry.mode.is_tree() {
                level.folders.push((entry_path, entry.oid.to_owned()));
            } else {
                level.files.push((entry_path, entry.mode, entry.oid.to_owned()));
            }
        }
    }
    Ok(level)
}

fn fetch_error(failure: Failure, url: &str, first_fetch: bool, attempts: u32, limits: FetchLimits) -> Error {
    let (code, verb) = if first_fetch {
        (ErrorCode::GitCloneFailed, "clone")
    } else {
        (ErrorCode::GitFetchFailed, "fetch")
    };
    match failure {
        Failure::Auth => {
            let hint = if url.starts_with("https://github.com/") {
                "the repository is private or does not exist: check the name, then set a token with read access in `GH_TOKEN` or `GITHUB_TOKEN`, or use an ssh URL with a key loaded in your ssh agent".to_string()
            } else if url.starts_with("https://") || url.starts_with("http://") {
                format!(
                    "the repository is private or does not exist: check the name, then set a token with read access in `{}`, or use an ssh URL with a key loaded in your ssh agent",
                    token_variable(url).unwrap_or_else(|| "AAM_GIT_TOKEN_<HOST>".to_string())
                )
            } else {
                "check the repository name and that your ssh key is loaded (`ssh-add -l`) and has access to it".to_string()
            };
            Error::new(
                ErrorCode::GitAuthFailed,
                format!("`{url}` refused access without valid credentials"),
            )
            .with_hint(hint)
        }
        Failure::RepositoryNotFound => Error::new(code, format!("failed to {verb} `{url}`: repository not found"))
            .with_hint("check the spelling; a private repository also needs credentials (a token or an ssh key)"),
        Failure::Certificate(why) => Error::new(
            ErrorCode::TlsCertificate,
            format!("`{url}` presented a TLS certificate aam does not trust: {why}"),
        )
        .with_hint("for a private certificate authority, set `SSL_CERT_FILE` to a PEM bundle holding it (or `SSL_CERT_DIR` to a folder of them); otherwise check the host name and the server's certificate"),
        Failure::TimedOut => Error::new(
            ErrorCode::Timeout,
            format!(
                "`{url}` did not answer in time (limits: {} s to connect, {} s without data, {} s in all; {attempts} attempt(s))",
                limits.connect.as_secs(),
                limits.stall.as_secs(),
                limits.total.as_secs()
            ),
        )
        .with_hint(format!(
            "check your network connection; on a slow link raise the limits with `aam config set fetch.stall_timeout <seconds>` and `fetch.timeout` (or `{}`, `{}`)",
            FetchLimits::STALL_ENV,
            FetchLimits::TOTAL_ENV
        )),
        Failure::Network => Error::new(
            ErrorCode::NetworkError,
            format!("failed to reach `{url}` after {attempts} attempt(s)"),
        )
        .with_hint("check your network connection and the host name, and try again"),
        Failure::Transfer => Error::new(
            code,
            format!("failed to {verb} `{url}`: the connection broke during the transfer ({attempts} attempt(s))"),
        )
        .with_hint("try again; run with `-v` for details"),
        Failure::Other => {
            Error::new(code, format!("failed to {verb} `{url}`")).with_hint("run again with `-v` for details")
        }
    }
}

fn ref_not_found(name: &str, url: &str) -> Error {
    let name = name.trim_start_matches('+').split(':').next().unwrap_or(name);
    Error::new(
        ErrorCode::GitRefNotFound,
        format!("`{name}` is not a branch, tag or commit of `{url}`"),
    )
    .with_hint("pass an existing branch, tag or commit id (full, or an unambiguous abbreviation) with `--ref`")
}

/// The bytes of the file at `path`, or `AAM_SOURCE_FILE_TOO_LARGE` when they
/// are more than [`MAX_SOURCE_FILE_BYTES`].
fn within_limit(bytes: Vec<u8>, path: &str) -> Result<Vec<u8>> {
    if bytes.len() as u64 > MAX_SOURCE_FILE_BYTES {
        return Err(source_file_too_large(path, Some(bytes.len() as u64)));
    }
    Ok(bytes)
}

/// `path` is larger than aam reads from a source; `size` when it is known (the blob
/// is in the cache), `None` when a partial fetch left it on the server.
fn source_file_too_large(path: &str, size: Option<u64>) -> Error {
    let limit = MAX_SOURCE_FILE_BYTES / 1024 / 1024;
    let what = match size {
        Some(size) => format!("`{path}` is {:.1} MiB", size as f64 / 1024.0 / 1024.0),
        None => format!("`{path}` was left on the server by the fetch: it is larger than {limit} MiB"),
    };
    Error::new(
        ErrorCode::SourceFileTooLarge,
        format!("{what}; aam reads files of at most {limit} MiB from a source"),
    )
    .with_hint("keep large files outside skill and plugin folders, or add the source with a scope that leaves them out")
}

fn object_too_large() -> Error {
    Error::new(
        ErrorCode::SourceFileTooLarge,
        format!(
            "a git object of the source (a folder listing, a commit, or a version of a file) declares more than {} MiB",
            OBJECT_ALLOC_LIMIT_BYTES / 1024 / 1024
        ),
    )
    .with_hint(
        "unless the repository is damaged or hostile, keep such files out of it, or add it from a host that filters blobs (GitHub, GitLab, Gitea): large files then stay there",
    )
}

fn cache_corrupted(dir: &Path) -> Error {
    Error::new(
        ErrorCode::CacheCorrupted,
        format!("the git cache `{}` is missing or damaged", dir.display()),
    )
    .with_hint("run `aam catalog check --repair` to fetch it again, or `aam source update` the source that uses it")
}

fn is_commit_like(name: &str) -> bool {
    (4..=40).contains(&name.len()) && name.chars().all(|c| c.is_ascii_hexdigit())
}

/// The URL with any credentials replaced, safe to show.
fn redact_url(url: &str) -> String {
    super::spec::redact(url)
}

/// The lowercase host name (no port) of an `https://` URL; `None` for other transports,
/// so a token never travels in clear text or over ssh.
fn https_host(url: &str) -> Option<String> {
    let rest = url.strip_prefix("https://")?;
    let authority = rest.split('/').next()?;
    let hostport = authority.rsplit('@').next()?;
    let host = hostport.split(':').next()?;
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

/// The environment variable holding a token for the https host of `url`:
/// `AAM_GIT_TOKEN_` and the host in capitals, every other character `_`
/// (`git.example.com` → `AAM_GIT_TOKEN_GIT_EXAMPLE_COM`).
fn token_variable(url: &str) -> Option<String> {
    let host = https_host(url)?;
    let suffix: String = host
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    Some(format!("AAM_GIT_TOKEN_{suffix}"))
}

/// The token for `url`, looked up with `var`: the host's own variable first, then
/// `GH_TOKEN` / `GITHUB_TOKEN` for github.com. Returns the host it may be sent to.
fn token_for(url: &str, var: impl Fn(&str) -> Option<String>) -> Option<(String, String)> {
    let host = https_host(url)?;
    let nonempty = |k: &str| var(k).filter(|v| !v.trim().is_empty());
    let own = token_variable(url).and_then(|k| nonempty(&k));
    let github = || {
        (host == "github.com")
            .then(|| ["GH_TOKEN", "GITHUB_TOKEN"].iter().find_map(|k| nonempty(k)))
            .flatten()
    };
    let token = own.or_else(github)?;
    Some((host, token))
}

/// Credentials for one fetch: a token from the environment for the URL's https host
/// ([`token_for`]), offered only when gix asks for that same host, nothing otherwise.
/// Never prompts, never consults git helpers, never logs the token.
fn credentials_for(
    url: &str,
) -> impl FnMut(Action) -> gix::Result<Option<gix::credentials::protocol::Outcome>> + use<> {
    credentials_from(token_for(url, |k| std::env::var(k).ok()))
}

fn credentials_from(
    token: Option<(String, String)>,
) -> impl FnMut(Action) -> gix::Result<Option<gix::credentials::protocol::Outcome>> + use<> {
    move |action| match action {
        Action::Get(mut ctx) => {
            if ctx.host.is_none() {
                // Asked by URL only: read protocol and host out of it.
                let _ = ctx.destructure_url_in_place(false);
            }
            let asked = ctx
                .host
                .as_deref()
                .map(|h| h.split(':').next().unwrap_or(h).to_ascii_lowercase());
            let offered = token.as_ref().filter(|(host, _)| {
                ctx.protocol.as_deref() == Some("https") && asked.as_deref() == Some(host.as_str())
            });
            Ok(offered.map(|(_, password)| gix::credentials::protocol::Outcome {
                identity: gix::sec::identity::Account {
                    username: "x-access-token".to_string(),
                    password: password.clone(),
                    oauth_refresh_token: None,
                },
                next: ctx.into(),
            }))
        }
        Action::Store(_) | Action::Erase(_) => Ok(None),
    }
}

/// Runs the `git` command line in `dir` for a test's fixture repository (the
/// product itself never shells out to git), with no user or system config and
/// fixed dates.
#[cfg(test)]
pub(crate) fn run_git(dir: &Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_DATE", "2024-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2024-01-01T00:00:00Z")
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

/// Commits everything in the test repository `dir` (`git add -A`, then a commit
/// by a fixed author).
#[cfg(test)]
pub(crate) fn commit_all(dir: &Path, message: &str) {
    run_git(dir, &["add", "-A"]);
    run_git(
        dir,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "-m",
            message,
        ],
    );
}

/// The pack indexes of a cache (see [`GitCache::pack_positions`]).
pub struct PackIndexes(Vec<gix::odb::pack::index::File>);

impl PackIndexes {
    /// Where the object `id` lies: (pack, offset), `None` when loose or missing.
    pub fn position(&self, id: ObjectId) -> Option<(usize, u64)> {
        self.0
            .iter()
            .enumerate()
            .find_map(|(pack, index)| index.lookup(id).map(|entry| (pack, index.pack_offset_at_index(entry))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: FetchLimits = FetchLimits {
        total: Duration::from_secs(30),
        connect: Duration::from_secs(5),
        stall: Duration::from_secs(10),
    };

    #[test]
    fn a_cancelled_fetch_stops_instead_of_retrying() {
        let dir = tempfile::tempdir().unwrap();
        let (cache, _) = GitCache::open_or_create(&dir.path().join("cache")).unwrap();
        // A port nothing listens on: each try fails at once and may be retried.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = format!("http://127.0.0.1:{port}/o/r.git");
        let cancel = Cancel::new();
        let raiser = cancel.clone();
        let raising = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            raiser.raise();
        });
        let err = cache
            .fetch(&url, &RefWant::DefaultBranch, "refs/aam/t/head", true, T, &cancel)
            .unwrap_err();
        raising.join().unwrap();
        assert_eq!(err.code(), ErrorCode::Cancelled, "{err:?}");
    }

    #[test]
    fn failures_map_to_codes_with_actionable_hints() {
        let auth = fetch_error(Failure::Auth, "https://github.com/o/private.git", true, 1, T);
        assert_eq!(auth.code(), ErrorCode::GitAuthFailed);
        assert!(auth.hint().unwrap().contains("GH_TOKEN"));
        let other = fetch_error(Failure::Auth, "https://git.example.com:8443/private.git", true, 1, T);
        assert!(
            other.hint().unwrap().contains("`AAM_GIT_TOKEN_GIT_EXAMPLE_COM`"),
            "{other:?}"
        );
        let ssh = fetch_error(Failure::Auth, "git@github.com:o/private.git", false, 1, T);
        assert!(ssh.hint().unwrap().contains("ssh-add"));
        let missing = fetch_error(Failure::RepositoryNotFound, "https://host/o/r.git", true, 1, T);
        assert_eq!(missing.code(), ErrorCode::GitCloneFailed);
        let later = fetch_error(Failure::Other, "https://host/o/r.git", false, 1, T);
        assert_eq!(later.code(), ErrorCode::GitFetchFailed);
        let offline = fetch_error(Failure::Network, "https://host/o/r.git", false, 3, T);
        assert_eq!(offline.code(), ErrorCode::NetworkError);
        assert!(offline.message().contains("3 attempt(s)"));
        let broke = fetch_error(Failure::Transfer, "https://host/o/r.git", false, 3, T);
        assert_eq!(broke.code(), ErrorCode::GitFetchFailed);
        let slow = fetch_error(Failure::TimedOut, "https://host/o/r.git", true, 1, T);
        assert_eq!(slow.code(), ErrorCode::Timeout);
        assert!(slow.hint().unwrap().contains("AAM_FETCH_TIMEOUT"));
        let tls = fetch_error(
            Failure::Certificate("it has expired"),
            "https://host/o/r.git",
            true,
            1,
            T,
        );
        assert_eq!(tls.code(), ErrorCode::TlsCertificate);
        assert!(tls.message().contains("it has expired"));
        assert!(tls.hint().unwrap().contains("SSL_CERT_FILE"));
    }

    fn chain(messages: &[&str], cause: Cause) -> Failure {
        let messages: Vec<String> = messages.iter().map(|m| m.to_string()).collect();
        classify_messages(&messages, cause)
    }

    #[rstest::rstest]
    #[case("invalid peer certificate: UnknownIssuer", "unknown issuer")]
    #[case(
        "invalid peer certificate: certificate not valid for name \"a.example\"; certificate is only valid for b.example",
        "another host name"
    )]
    #[case(
        "invalid peer certificate: certificate expired: verification time 2 (UNIX), but certificate is not valid after 1 (1 seconds ago)",
        "expired"
    )]
    #[case("invalid peer certificate: BadSignature", "could not be verified")]
    #[case("unexpected error: No CA certificates were loaded from the system", "SSL_CERT_DIR")]
    fn certificate_failures_name_their_cause_and_never_retry(#[case] rustls: &str, #[case] why: &str) {
        let transient = Cause {
            transient: true,
            connect: true,
            ..Cause::default()
        };
        let failure = chain(
            &["Could not initialize HTTP client", "error sending request", rustls],
            transient,
        );
        let Failure::Certificate(text) = failure else {
            panic!("{rustls}: {failure:?}");
        };
        assert!(text.contains(why), "{text}");
        assert!(!failure.can_pass());
    }

    #[test]
    fn connect_failures_are_network_errors_and_later_ones_fetch_failures() {
        let connect = Cause {
            connect: true,
            transient: true,
            ..Cause::default()
        };
        assert_eq!(
            chain(&["error sending request", "tcp connect error"], connect),
            Failure::Network
        );
        let reset = Cause {
            transient: true,
            ..Cause::default()
        };
        assert_eq!(
            chain(&["An IO error occurred", "connection reset by peer"], reset),
            Failure::Transfer
        );
        assert_eq!(chain(&["Received HTTP status 404"], reset), Failure::RepositoryNotFound);
        let slow = Cause {
            timed_out: true,
            ..Cause::default()
        };
        assert_eq!(chain(&["error sending request"], slow), Failure::TimedOut);
        assert_eq!(chain(&["a corrupt pack"], Cause::default()), Failure::Other);
        assert!(Failure::Network.can_pass() && Failure::Transfer.can_pass() && Failure::TimedOut.can_pass());
        assert!(!Failure::Auth.can_pass() && !Failure::RepositoryNotFound.can_pass());
    }

    #[test]
    fn connecting_and_stalls_get_part_of_the_whole_limit() {
        let limits = FetchLimits::new(Duration::from_secs(2), Duration::from_secs(10));
        assert_eq!(limits.connect, Duration::from_secs(2));
        assert_eq!(limits.stall, Duration::from_secs(2));
        assert_eq!(FetchLimits::new(T.total, T.stall), T);
    }

    fn ask(
        credentials: &mut impl FnMut(Action) -> gix::Result<Option<gix::credentials::protocol::Outcome>>,
        url: &str,
    ) -> Option<String> {
        credentials(Action::get_for_url(url))
            .unwrap()
            .map(|o| o.identity.password)
    }

    #[test]
    fn a_token_is_offered_to_its_own_host_only() {
        let env = |k: &str| match k {
            "AAM_GIT_TOKEN_GIT_EXAMPLE_COM" => Some("own-t0ken".to_string()),
            "GH_TOKEN" => Some("gh-t0ken".to_string()),
            _ => None,
        };
        assert_eq!(
            token_variable("https://git.example.com:8443/r.git").as_deref(),
            Some("AAM_GIT_TOKEN_GIT_EXAMPLE_COM")
        );
        assert_eq!(token_variable("ssh://git@git.example.com/r.git"), None);
        let own = token_for("https://git.example.com:8443/team/r.git", env);
        assert_eq!(own, Some(("git.example.com".to_string(), "own-t0ken".to_string())));
        assert_eq!(token_for("https://github.com/o/r.git", env).unwrap().1, "gh-t0ken");
        assert_eq!(token_for("https://gitlab.com/o/r.git", env), None);
        assert_eq!(token_for("http://git.example.com/r.git", env), None);
        assert_eq!(token_for("git@git.example.com:r.git", env), None);

        let mut credentials = credentials_from(own);
        assert_eq!(
            ask(&mut credentials, "https://git.example.com:8443/team/r.git").as_deref(),
            Some("own-t0ken")
        );
        // A redirect elsewhere, or a downgrade to http, gets nothing.
        assert_eq!(ask(&mut credentials, "https://evil.example/team/r.git"), None);
        assert_eq!(ask(&mut credentials, "http://git.example.com/team/r.git"), None);
        let shown = format!(
            "{:?}",
            fetch_error(Failure::Auth, "https://git.example.com/r.git", true, 1, T)
        );
        assert!(!shown.contains("own-t0ken"), "{shown}");
    }

    #[test]
    fn local_objects_are_linked_once() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("source");
        let git = |args: &[&str]| run_git(&source, args);
        std::fs::create_dir(&source).unwrap();
        git(&["init", "-q", "-b", "main"]);
        std::fs::write(source.join("SKILL.md"), "# s\n").unwrap();
        commit_all(&source, "one");
        git(&["repack", "-q"]);
        std::fs::write(source.join("extra.md"), "loose\n").unwrap();
        commit_all(&source, "two");

        let (cache, created) = GitCache::open_or_create(&dir.path().join("cache")).unwrap();
        assert!(created);
        let fetched = cache
            .fetch(
                &format!("file://{}", source.display()),
                &RefWant::DefaultBranch,
                "refs/aam/t/head",
                true,
                T,
                &Cancel::new(),
            )
            .unwrap();
        assert_eq!(fetched.resolved_ref, "main");
        let mut head = cache.repo.find_reference("refs/aam/t/head").unwrap();
        assert_eq!(head.peel_to_commit().unwrap().id, fetched.commit);
        let (tree, _) = GitCache::open(&cache.dir).unwrap().commit_tree(fetched.commit).unwrap();
        assert_eq!(
            GitCache::open(&cache.dir).unwrap().files_under(tree, "").unwrap().len(),
            2
        );
        // Everything is already there the second time.
        let again = link_objects(&source.join(".git"), &cache.dir.join("objects"), None).unwrap();
        assert_eq!(again, 0);
    }

    /// A commit amended away (a force-pushed branch) is no longer in the
    /// history of the new head, though the cache still holds it.
    #[test]
    fn a_commit_amended_away_is_out_of_the_new_history() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("source");
        std::fs::create_dir(&source).unwrap();
        run_git(&source, &["init", "-q", "-b", "main"]);
        std::fs::write(source.join("SKILL.md"), "# one\n").unwrap();
        commit_all(&source, "one");
        std::fs::write(source.join("SKILL.md"), "# two\n").unwrap();
        commit_all(&source, "two");
        let (cache, _) = GitCache::open_or_create(&dir.path().join("cache")).unwrap();
        let fetch = |dst: &str| {
            GitCache::open(&cache.dir)
                .unwrap()
                .fetch(
                    &format!("file://{}", source.display()),
                    &RefWant::DefaultBranch,
                    dst,
                    false,
                    T,
                    &Cancel::new(),
                )
                .unwrap()
                .commit
        };
        let two = fetch("refs/aam/t/two");
        let one = GitCache::open(&cache.dir)
            .unwrap()
            .repo
            .find_commit(two)
            .unwrap()
            .parent_ids()
            .next()
            .unwrap()
            .detach();
        run_git(
            &source,
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "commit",
                "-q",
                "--amend",
                "-m",
                "rewritten",
            ],
        );
        let rewritten = fetch("refs/aam/t/rewritten");
        let cache = GitCache::open(&cache.dir).unwrap();
        assert_eq!(cache.in_history(two, rewritten).unwrap(), Some(false));
        assert_eq!(cache.in_history(one, rewritten).unwrap(), Some(true));
        assert_eq!(cache.in_history(rewritten, rewritten).unwrap(), Some(true));
        let absent = ObjectId::from_hex(b"1111111111111111111111111111111111111111").unwrap();
        assert_eq!(cache.in_history(absent, rewritten).unwrap(), None);
    }

    /// A hostile repository's object store may hold links to files outside it,
    /// named as packs and objects, or be a link itself (its `pack/` or a
    /// fan-out folder too): none of them is taken into the cache.
    #[test]
    fn links_in_a_local_object_store_are_not_taken() {
        let dir = tempfile::tempdir().unwrap();
        let (git, to) = (dir.path().join("git"), dir.path().join("to"));
        let from = git.join("objects");
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "not an object").unwrap();
        for folder in [from.join("pack"), from.join("ab"), to.join("pack")] {
            std::fs::create_dir_all(folder).unwrap();
        }
        // Folders that are links to another repository's.
        let other = dir.path().join("other");
        std::fs::create_dir_all(other.join("objects/cd")).unwrap();
        std::fs::write(other.join("objects/cd/4567"), "private").unwrap();
        std::os::unix::fs::symlink(other.join("objects/cd"), from.join("cd")).unwrap();
        let linked = dir.path().join("linked");
        std::fs::create_dir_all(&linked).unwrap();
        std::os::unix::fs::symlink(other.join("objects"), linked.join("objects")).unwrap();
        assert!(
            link_objects(&linked, &to, None).is_err(),
            "an objects folder that is a link"
        );
        std::os::unix::fs::symlink(&secret, from.join("pack/pack-1.idx")).unwrap();
        std::os::unix::fs::symlink(&secret, from.join("pack/pack-1.pack")).unwrap();
        std::fs::write(from.join("pack/pack-2.idx"), "idx").unwrap();
        std::os::unix::fs::symlink(&secret, from.join("pack/pack-2.pack")).unwrap();
        std::os::unix::fs::symlink(&secret, from.join("ab/cdef")).unwrap();
        std::fs::write(from.join("ab/0123"), "loose").unwrap();

        assert_eq!(link_objects(&git, &to, None).unwrap(), 1);
        // Confined, a git folder outside the allowed ones gives nothing.
        let elsewhere = tempfile::tempdir().unwrap();
        let denied = link_objects(&git, &to, Some(&[elsewhere.path().to_path_buf()])).unwrap_err();
        assert_eq!(denied.kind(), std::io::ErrorKind::PermissionDenied);
        assert_eq!(link_objects(&git, &to, Some(&[dir.path().to_path_buf()])).unwrap(), 0);
        assert!(to.join("ab/0123").is_file());
        for taken in [
            "pack/pack-1.idx",
            "pack/pack-1.pack",
            "pack/pack-2.idx",
            "pack/pack-2.pack",
            "ab/cdef",
            "cd/4567",
        ] {
            assert!(std::fs::symlink_metadata(to.join(taken)).is_err(), "{taken} was taken");
        }
    }

    /// Blobs read through the handle with the allocation limit: one over the file
    /// limit is refused with its size, one declaring more than the allocation limit
    /// before it is inflated, and a small file stored as changes to a version too
    /// large for the limit is read all the same (through the cache's own handle).
    #[test]
    fn blobs_are_read_within_the_limits() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("source");
        let git = |args: &[&str]| run_git(&source, args);
        std::fs::create_dir(&source).unwrap();
        git(&["init", "-q", "-b", "main"]);
        // 20 MiB that do not compress, then its first 2 MiB: git stores the small
        // version as changes to the large one, which needs 40 MiB to inflate.
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let shrinking: Vec<u8> = (0..20 * 1024 * 1024)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        std::fs::write(source.join("shrinks.bin"), &shrinking).unwrap();
        commit_all(&source, "large");
        std::fs::write(source.join("shrinks.bin"), &shrinking[..2 * 1024 * 1024]).unwrap();
        std::fs::write(source.join("SKILL.md"), "fits\n").unwrap();
        std::fs::write(source.join("large.bin"), vec![b'a'; MAX_SOURCE_FILE_BYTES as usize + 1]).unwrap();
        std::fs::write(source.join("huge.bin"), vec![b'a'; BLOB_ALLOC_LIMIT_BYTES + 1]).unwrap();
        commit_all(&source, "small");
        git(&["repack", "-adfq", "--depth=50", "--window=250"]);

        let (cache, _) = GitCache::open_or_create(&dir.path().join("cache")).unwrap();
        let url = format!("file://{}", source.display());
        let fetched = cache
            .fetch(
                &url,
                &RefWant::DefaultBranch,
                "refs/aam/t/head",
                true,
                T,
                &Cancel::new(),
            )
            .unwrap();
        let (tree, _) = cache.commit_tree(fetched.commit).unwrap();
        let files = cache.files_under(tree, "").unwrap();
        let blob = |name: &str| files.iter().find(|f| f.path == name).unwrap().oid;
        let limited = with_alloc_limit(&cache.repo, BLOB_ALLOC_LIMIT_BYTES).unwrap();

        assert_eq!(cache.read_blob(blob("SKILL.md"), "SKILL.md").unwrap(), b"fits\n");
        let refused = cache.read_blob(blob("large.bin"), "large.bin").unwrap_err();
        assert_eq!(refused.code(), ErrorCode::SourceFileTooLarge);
        assert!(refused.message().contains("`large.bin` is 16.0 MiB"), "{refused:?}");
        let declared = limited.find_blob(blob("huge.bin")).map(|_| ()).unwrap_err();
        assert!(declared.is_resource_exhausted(), "{declared:?}");
        let refused = cache.read_blob(blob("huge.bin"), "huge.bin").unwrap_err();
        assert_eq!(refused.code(), ErrorCode::SourceFileTooLarge);
        assert!(refused.message().contains("`huge.bin` is 33.0 MiB"), "{refused:?}");
        let chain = limited.find_blob(blob("shrinks.bin")).map(|_| ()).unwrap_err();
        assert!(chain.is_resource_exhausted(), "{chain:?}");
        assert_eq!(
            cache.read_blob(blob("shrinks.bin"), "shrinks.bin").unwrap(),
            &shrinking[..2 * 1024 * 1024]
        );
    }

    /// A tree or commit of a hostile repository that declares gigabytes is refused
    /// before they are allocated, in the cache and in a local source, as too large.
    #[test]
    fn objects_declaring_gigabytes_are_refused_as_too_large() {
        use std::io::Write;
        // A loose object whose header declares `claimed` bytes.
        let forge = |objects: &Path, id: &str, kind: &str, claimed: u64| {
            let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            zlib.write_all(format!("{kind} {claimed}\0x").as_bytes()).unwrap();
            std::fs::create_dir_all(objects.join(&id[..2])).unwrap();
            std::fs::write(objects.join(&id[..2]).join(&id[2..]), zlib.finish().unwrap()).unwrap();
            ObjectId::from_hex(id.as_bytes()).unwrap()
        };
        let declared = 2 * OBJECT_ALLOC_LIMIT_BYTES as u64;
        let too_large = |result: Result<()>| {
            let error = result.unwrap_err();
            assert_eq!(error.code(), ErrorCode::SourceFileTooLarge, "{error:?}");
        };
        let dir = tempfile::tempdir().unwrap();
        let (cache, _) = GitCache::open_or_create(&dir.path().join("cache")).unwrap();
        let objects = cache.dir.join("objects");
        let tree = forge(&objects, &"7".repeat(40), "tree", declared);
        let commit = forge(&objects, &"c".repeat(40), "commit", declared);
        too_large(cache.files_under(tree, "").map(drop));
        let root = cache
            .repo
            .write_object(gix::objs::Tree {
                entries: vec![gix::objs::tree::Entry {
                    mode: EntryKind::Tree.into(),
                    filename: "skills".into(),
                    oid: tree,
                }],
            })
            .unwrap()
            .detach();
        too_large(cache.files_under(root, "").map(drop));
        too_large(cache.folder(tree).map(drop));
        too_large(cache.commit_tree(commit).map(drop));

        let source = dir.path().join("source");
        std::fs::create_dir(&source).unwrap();
        run_git(&source, &["init", "-q", "-b", "main"]);
        let head = forge(&source.join(".git/objects"), &"c".repeat(40), "commit", declared);
        std::fs::write(source.join(".git/refs/heads/main"), format!("{head}\n")).unwrap();
        let url = format!("file://{}", source.display());
        too_large(
            cache
                .fetch(
                    &url,
                    &RefWant::DefaultBranch,
                    "refs/aam/t/head",
                    true,
                    T,
                    &Cancel::new(),
                )
                .map(drop),
        );
    }

    /// A tree entry of `kind` named `name`.
    fn tree_entry(kind: EntryKind, name: &str, oid: ObjectId) -> gix::objs::tree::Entry {
        gix::objs::tree::Entry {
            mode: kind.into(),
            filename: name.into(),
            oid,
        }
    }

    /// Writes a tree of `entries` as given (not sorted: hand-made trees too).
    fn write_tree(repo: &Repository, entries: Vec<gix::objs::tree::Entry>) -> ObjectId {
        repo.write_object(gix::objs::Tree { entries }).unwrap().detach()
    }

    /// A name holding a `/` (only a hand-made tree has one) is left out, file or
    /// folder, and puts nothing at the path it spells.
    #[test]
    fn names_holding_a_slash_are_left_out_and_misplace_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let (cache, _) = GitCache::open_or_create(&dir.path().join("cache")).unwrap();
        let repo = &cache.repo;
        let blob = repo.write_blob("text\n").unwrap().detach();
        let entry = tree_entry;
        let write_tree = |entries| write_tree(repo, entries);
        let skill = write_tree(vec![entry(EntryKind::Blob, "SKILL.md", blob)]);
        let skills = write_tree(vec![entry(EntryKind::Tree, "s1", skill)]);
        let hidden = write_tree(vec![entry(EntryKind::Blob, "inner.md", blob)]);
        // What only a hand-made tree holds: names with a `/`, a file and a folder.
        let root = write_tree(vec![
            entry(EntryKind::Tree, "skills", skills),
            entry(EntryKind::Blob, "skills/s1/run.sh", blob),
            entry(EntryKind::Tree, "x/y", hidden),
            entry(EntryKind::Blob, "zz-notes.txt", blob),
        ]);
        let paths: Vec<String> = cache
            .files_under(root, "")
            .unwrap()
            .into_iter()
            .map(|f| f.path)
            .collect();
        assert_eq!(paths, ["zz-notes.txt", "skills/s1/SKILL.md"]);
        let paths: Vec<String> = cache
            .files_under(skills, "skills")
            .unwrap()
            .into_iter()
            .map(|f| f.path)
            .collect();
        assert_eq!(paths, ["skills/s1/SKILL.md"]);
    }

    /// A level wide enough to be read on two threads gives its files in the
    /// order one thread would: level by level, each folder's entries in tree
    /// order, with names holding a `/` left out on either half.
    #[test]
    fn a_wide_level_read_on_two_threads_keeps_the_order_of_one() {
        let dir = tempfile::tempdir().unwrap();
        let (cache, _) = GitCache::open_or_create(&dir.path().join("cache")).unwrap();
        let repo = &cache.repo;
        let blob = repo.write_blob("text\n").unwrap().detach();
        let entry = tree_entry;
        let write_tree = |entries| write_tree(repo, entries);
        let inner = write_tree(vec![entry(EntryKind::Blob, "deep.md", blob)]);
        let count = TREES_SPLIT_AT + 3;
        let names: Vec<String> = (0..count).map(|i| format!("s{i:05}")).collect();
        let folders: Vec<gix::objs::tree::Entry> = names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let mut entries = vec![entry(EntryKind::Blob, "SKILL.md", blob)];
                if i == 1 || i == count - 1 {
                    entries.push(entry(EntryKind::Blob, "a/b", blob));
                }
                if i == count - 2 {
                    entries.push(entry(EntryKind::Tree, "z", inner));
                }
                entry(EntryKind::Tree, name, write_tree(entries))
            })
            .collect();
        let skills = write_tree(folders);
        let root = write_tree(vec![
            entry(EntryKind::Blob, "README.md", blob),
            entry(EntryKind::Tree, "skills", skills),
        ]);
        let paths: Vec<String> = cache
            .files_under(root, "repo")
            .unwrap()
            .into_iter()
            .map(|f| f.path)
            .collect();
        let mut expected = vec!["repo/README.md".to_string()];
        expected.extend(names.iter().map(|name| format!("repo/skills/{name}/SKILL.md")));
        expected.push(format!("repo/skills/{}/z/deep.md", names[count - 2]));
        assert_eq!(paths, expected);
    }

    /// Two sides of a folder wide enough to be decoded on two threads, with files
    /// changed, removed, added and one turned into a folder, give every changed
    /// path (decoded side by side, then again from the folders already parsed),
    /// and a folder compared with itself gives none.
    #[test]
    fn wide_folders_decoded_side_by_side_give_every_changed_path() {
        use gix::objs::{Tree, tree::Entry};
        let dir = tempfile::tempdir().unwrap();
        let (cache, _) = GitCache::open_or_create(&dir.path().join("cache")).unwrap();
        let repo = &cache.repo;
        let (same, edited) = (
            repo.write_blob("same\n").unwrap().detach(),
            repo.write_blob("edited\n").unwrap().detach(),
        );
        let file = |name: String, oid| Entry {
            mode: EntryKind::Blob.into(),
            filename: name.into(),
            oid,
        };
        let write_tree = |mut entries: Vec<Entry>| {
            entries.sort();
            repo.write_object(Tree { entries }).unwrap().detach()
        };
        // 16,000 entries of about 40 bytes: past WIDE_TREE_BYTES.
        let wide: Vec<Entry> = (0..16_000).map(|i| file(format!("s{i:05}"), same)).collect();
        let mut changed = wide.clone();
        changed[10].oid = edited;
        changed[15_999].oid = edited;
        changed.remove(8_000);
        changed.push(file("s16000".into(), same));
        changed[500] = Entry {
            mode: EntryKind::Tree.into(),
            filename: "s00500".into(),
            oid: write_tree(vec![file("SKILL.md".into(), same)]),
        };
        let root = |skills| {
            write_tree(vec![
                file("README.md".into(), same),
                Entry {
                    mode: EntryKind::Tree.into(),
                    filename: "skills".into(),
                    oid: skills,
                },
            ])
        };
        let (old_skills, new_skills) = (write_tree(wide), write_tree(changed));
        for side in [old_skills, new_skills] {
            assert!(repo.find_header(side).unwrap().size() >= WIDE_TREE_BYTES);
        }
        let (old, new) = (root(old_skills), root(new_skills));
        let expected = [
            "skills/s00010",
            "skills/s00500",
            "skills/s00500/SKILL.md",
            "skills/s08000",
            "skills/s15999",
            "skills/s16000",
        ];
        // Both sides new to the cache (two threads), then already parsed (none).
        let fresh = GitCache::open(&cache.dir).unwrap();
        assert_eq!(fresh.changed_paths(old, new).unwrap(), expected);
        assert_eq!(fresh.changed_paths(new, old).unwrap(), expected);
        assert!(fresh.changed_paths(old, old).unwrap().is_empty());
    }
}
