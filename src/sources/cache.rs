//! A source's place in the git cache: its folder, its private refs, repairing
//! a missing or damaged cache, restoring its indexed commit, and undoing what a
//! failed command wrote into the cache.
//!
//! Every source owns a ref namespace `refs/aam/<16 hex of blake3(name)>` in the
//! cache of its repository (sources of one repository share a cache): `head` is
//! the commit the catalog indexed, `pending` a fetch the catalog has not taken.

use std::path::{Path, PathBuf};

use crate::catalog::SourceRecord;
use crate::error::{Error, Result};
use crate::progress::Progress;
use crate::sources::git::{FetchLimits, GitCache, Oid, RefWant};

/// The private ref namespace of a source in its cache.
fn ref_namespace(name: &str) -> String {
    let digest = blake3::hash(name.as_bytes()).to_hex();
    format!("refs/aam/{}", &digest[..16])
}

/// The ref a source's indexed commit is kept under.
pub fn head_ref(name: &str) -> String {
    format!("{}/head", ref_namespace(name))
}

/// The ref a fetch lands on before the catalog takes it.
pub fn pending_ref(name: &str) -> String {
    format!("{}/pending", ref_namespace(name))
}

/// The ref a commit a lock file names is kept under once a restore fetched it
/// (outside every source's namespace: a restore needs no registered source).
pub fn locked_ref(commit: &str) -> String {
    format!("refs/aam/locked/{commit}")
}

/// Whether the cache at `dir`, or a cache nested in its folder (a local
/// repository inside another), keeps a commit a lock file names
/// ([`locked_ref`]): a restore fetched it, and `install --frozen --offline`
/// needs it again, so the cache is in use although no source names it.
pub fn keeps_locked_commits(dir: &Path) -> bool {
    let keeps = |dir: &Path| GitCache::open(dir).is_ok_and(|cache| cache.has_refs_under(&locked_ref("")));
    caches_in(dir).iter().any(|cache| keeps(cache))
}

/// Whether the cache at `dir` keeps `commit` for a lock file ([`locked_ref`]).
pub fn keeps_locked_commit(dir: &Path, commit: &str) -> bool {
    GitCache::open(dir).is_ok_and(|cache| cache.has_ref(&locked_ref(commit)))
}

/// Deletes the ref that keeps `commit` for a lock file in the cache
/// `cache_key` under `caches`, unless `in_use` says a lock file names it
/// again, asked once the cache's lock is held (a restore fetching into it
/// holds that lock). `Ok(false)` when in use or already gone. The cache
/// itself stays: [`remove_unused`] deletes one nothing keeps any more.
pub fn remove_locked_commit(
    caches: &Path,
    locks: &Path,
    cache_key: &str,
    commit: &str,
    in_use: impl FnOnce() -> Result<bool>,
) -> Result<bool> {
    let _lock = lock(locks, caches, cache_key)?;
    let dir = caches.join(cache_key);
    if in_use()? || !keeps_locked_commit(&dir, commit) {
        return Ok(false);
    }
    GitCache::open(&dir)?.delete_ref(&locked_ref(commit))?;
    Ok(true)
}

/// The folder a cache is made in before its entries move into a folder that
/// holds the caches of repositories inside it (see `GitCache::open_or_create`).
pub const STAGING: &str = ".aam-new";

/// Every cache in `dir`'s folder: `dir` itself when it is one, and those
/// nested in it, whatever their names; a link is never followed (nor is
/// `dir` when it is one).
pub fn caches_in(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    if std::fs::symlink_metadata(dir).is_ok_and(|meta| meta.file_type().is_symlink()) {
        return found;
    }
    let mut pending = vec![dir.to_path_buf()];
    while let Some(at) = pending.pop() {
        if is_cache(&at) {
            found.push(at.clone());
        }
        for entry in std::fs::read_dir(&at).into_iter().flatten().flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                pending.push(entry.path());
            }
        }
    }
    found
}

/// The entries of `dir`'s folder that hold the cache of a repository inside
/// its own (`outer/inner`), its staging folder aside.
fn nested_caches(dir: &Path) -> Vec<std::ffi::OsString> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|entry| {
            entry.file_name() != STAGING
                && entry.file_type().is_ok_and(|t| t.is_dir())
                && !caches_in(&entry.path()).is_empty()
        })
        .map(|entry| entry.file_name())
        .collect()
}

/// Whether `dir` holds a cached (bare) repository.
pub fn is_cache(dir: &Path) -> bool {
    dir.join("objects").is_dir() && dir.join("HEAD").is_file()
}

/// An OS lock on one cached repository, held by a command while it creates,
/// fetches into, indexes from, repairs or deletes it: two commands on one
/// repository (two `source add`s of one URL, an add and a purge) take turns
/// instead of one deleting or re-creating a cache the other is using. Released
/// when dropped, or when the process dies.
pub struct CacheLock {
    _file: std::fs::File,
}

/// Takes the lock of the cache `cache_key` (`<host>/<path>`) under `caches`,
/// waiting for the command holding it, then removes the git lock files a
/// killed command left in that cache ([`remove_stale_git_locks`]). Lock files
/// live in `locks` (the home's `locks/`), one per repository and never
/// deleted, so a waiting command never holds a lock on a file another one
/// replaced.
pub fn lock(locks: &Path, caches: &Path, cache_key: &str) -> Result<CacheLock> {
    let dir = locks;
    std::fs::create_dir_all(dir).map_err(|e| Error::io("create", dir, e))?;
    let digest = blake3::hash(cache_key.as_bytes()).to_hex();
    let path = dir.join(format!("cache-{}.lock", &digest[..16]));
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| Error::io("open", &path, e))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            tracing::info!("waiting for another aam command using the cache of {cache_key}");
            file.lock().map_err(|e| Error::io("lock", &path, e))?;
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(Error::io("lock", &path, e)),
    }
    remove_stale_git_locks(&caches.join(cache_key));
    Ok(CacheLock { _file: file })
}

/// Git's own lock files (`refs/**/*.lock`, `packed-refs.lock`, `HEAD.lock`,
/// ...) in the cached repository `dir`. Called with the cache lock held:
/// every aam command that writes into a cache holds it, so any such file is
/// left by a command killed mid-write, and gix would refuse every later ref
/// update there. Links are never followed; what cannot be removed is left.
fn remove_stale_git_locks(dir: &Path) {
    let mut stale: Vec<PathBuf> = [
        "HEAD.lock",
        "packed-refs.lock",
        "config.lock",
        "shallow.lock",
        "index.lock",
    ]
    .iter()
    .map(|name| dir.join(name))
    .filter(|path| std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file()))
    .collect();
    // Only a real folder is walked: a `refs` link could lead anywhere.
    let refs = dir.join("refs");
    let mut folders: Vec<PathBuf> = std::fs::symlink_metadata(&refs)
        .is_ok_and(|m| m.is_dir())
        .then_some(refs)
        .into_iter()
        .collect();
    while let Some(folder) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else { continue };
            let path = entry.path();
            if kind.is_dir() {
                folders.push(path);
            } else if kind.is_file() && path.extension().is_some_and(|e| e == "lock") {
                stale.push(path);
            }
        }
    }
    for path in stale {
        match std::fs::remove_file(&path) {
            Ok(()) => tracing::info!(path = %path.display(), "removed a git lock file a killed command left"),
            Err(e) => tracing::debug!(path = %path.display(), "could not remove a stale git lock file: {e}"),
        }
    }
}

/// Deletes the cache `cache_key` under `caches` unless `in_use` says a source
/// uses it, asked once its lock is held: a command still filling it (an add)
/// holds the lock until its source is recorded. `Ok(false)` when in use or
/// already gone. Folders left empty above it are removed.
pub fn remove_unused(
    caches: &Path,
    locks: &Path,
    cache_key: &str,
    in_use: impl FnOnce() -> Result<bool>,
) -> Result<bool> {
    let _lock = lock(locks, caches, cache_key)?;
    let dir = caches.join(cache_key);
    // The command it waited for may have removed it (a cancelled add).
    if in_use()? || !dir.exists() {
        return Ok(false);
    }
    remove_dir(&dir, caches)?;
    Ok(true)
}

/// A source's cache folder under `caches` (the home's git cache folder).
pub fn dir(caches: &Path, source: &SourceRecord) -> PathBuf {
    caches.join(&source.cache_key)
}

/// Opens a source's cache, replacing a missing or damaged one with a fresh, empty
/// repository (the fetch that follows fills it again). Returns whether it is new.
pub fn open_repairing(caches: &Path, source: &SourceRecord) -> Result<(GitCache, bool)> {
    let dir = dir(caches, source);
    match GitCache::open(&dir) {
        Ok(cache) => {
            let intact = source
                .head_commit
                .as_deref()
                .and_then(|sha| Oid::from_hex(sha.as_bytes()).ok())
                .is_none_or(|id| cache.has_commit(id));
            if intact {
                return Ok((cache, false));
            }
            tracing::warn!(
                "the cache of `{}` lacks its indexed commit; fetching again",
                source.name
            );
            Ok((cache, false))
        }
        Err(_) => {
            if dir.exists() {
                tracing::warn!("the cache of `{}` is damaged; fetching it again", source.name);
                remove_dir(&dir, caches)?;
            }
            GitCache::open_or_create(&dir)
        }
    }
}

/// Whether a source's cache holds the commit the catalog says it is indexed at
/// (`None` when it has never been fetched, so there is nothing to hold).
pub fn holds_head(caches: &Path, source: &SourceRecord) -> Option<bool> {
    let id = Oid::from_hex(source.head_commit.as_deref()?.as_bytes()).ok()?;
    Some(GitCache::open(&dir(caches, source)).is_ok_and(|cache| cache.has_commit(id)))
}

/// Fetches a source's indexed commit into its cache again (recreating a missing
/// or damaged cache), leaving the catalog as it is; a local repository's
/// objects are read only from a git folder `within` those folders, when given.
pub fn restore(
    caches: &Path,
    locks: &Path,
    source: &SourceRecord,
    within: Option<Vec<PathBuf>>,
    limits: FetchLimits,
    progress: &dyn Progress,
    cancel: &crate::cancel::Cancel,
) -> Result<()> {
    let Some(sha) = source.head_commit.as_deref() else {
        return Ok(());
    };
    let _lock = lock(locks, caches, &source.cache_key)?;
    let (cache, created) = open_repairing(caches, source)?;
    let cache = cache.reading_local_within(within);
    progress.start(&format!("fetching {}", source.name), None);
    let fetched = cache.fetch(
        &source.url,
        &RefWant::Named(sha.to_string()),
        &head_ref(&source.name),
        created,
        limits,
        cancel,
    );
    progress.finish();
    fetched?;
    Ok(())
}

/// Deletes a cached repository, then the folders above it that it leaves empty
/// (`cache/git/<host>/<owner>`, up to but not including `AAM_HOME`). The
/// caches of repositories inside this one, in its folder, stay (and so does
/// the folder).
pub fn remove_dir(dir: &Path, home: &Path) -> Result<()> {
    let nested = nested_caches(dir);
    if !nested.is_empty() && !std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink()) {
        // The caches of repositories inside this one stay: everything else
        // in the folder is this repository's.
        return remove_all_but(dir, &nested);
    }
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|e| Error::io("delete", dir, e))?;
    }
    let mut parent = dir.parent();
    while let Some(p) = parent.filter(|p| p.starts_with(home) && *p != home) {
        if std::fs::remove_dir(p).is_err() {
            break;
        }
        parent = p.parent();
    }
    Ok(())
}

/// Deletes every entry of `dir` but those named in `kept` (a link as the
/// link, never what it leads to).
pub fn remove_all_but(dir: &Path, kept: &[std::ffi::OsString]) -> Result<()> {
    for entry in std::fs::read_dir(dir).map_err(|e| Error::io("read", dir, e))?.flatten() {
        if kept.contains(&entry.file_name()) {
            continue;
        }
        let path = entry.path();
        let gone = match entry.file_type() {
            Ok(t) if t.is_dir() => std::fs::remove_dir_all(&path),
            _ => std::fs::remove_file(&path),
        };
        gone.map_err(|e| Error::io("delete", &path, e))?;
    }
    Ok(())
}

/// Deletes the refs of `cache` (the cache `cache_key`) in a source namespace
/// ([`head_ref`], [`pending_ref`]) of no source the catalog registers with that
/// cache: what a `source add` killed before the catalog took the source left
/// (its `head`, keeping every object it fetched), which [`Cleanup`] had no
/// chance to delete. Called with the cache's lock held by a command that
/// writes into it (`source add`, `update`): an add holds that lock until its
/// source is in the catalog, so no namespace of a source still being added is
/// taken for one. Best effort: what cannot be deleted now is tried next time.
pub fn forget_unregistered(cache: &GitCache, catalog: &crate::catalog::Catalog, cache_key: &str) {
    let registered: Vec<String> = match catalog.list_sources() {
        Ok(sources) => sources
            .into_iter()
            .filter(|source| source.cache_key == cache_key)
            .map(|source| ref_namespace(&source.name))
            .collect(),
        Err(_) => return,
    };
    let Ok(names) = cache.ref_names_under("refs/aam/") else {
        return;
    };
    for name in names {
        let namespace = name.rsplit_once('/').map_or("", |(namespace, _)| namespace);
        let hex = namespace.strip_prefix("refs/aam/").unwrap_or_default();
        let in_a_source_namespace =
            hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if in_a_source_namespace && !registered.iter().any(|kept| kept == namespace) {
            match cache.delete_ref(&name) {
                Ok(()) => tracing::debug!("deleted `{name}`, left by a source add that did not finish"),
                Err(e) => tracing::debug!("could not delete `{name}`: {e}"),
            }
        }
    }
}

/// Undoes cache changes of a failed `source add`: deletes a cache it created, or
/// the refs it wrote into a shared one.
pub struct Cleanup<'c> {
    cache: &'c GitCache,
    home: PathBuf,
    created_dir: Option<PathBuf>,
    refs: Vec<String>,
}

impl<'c> Cleanup<'c> {
    /// Guards a cache that was `created` by this operation (removed on failure),
    /// or else the `refs` it writes into an existing one.
    pub fn new(home: &Path, cache: &'c GitCache, dir: &Path, created: bool, refs: Vec<String>) -> Self {
        Self {
            cache,
            home: home.to_path_buf(),
            created_dir: created.then(|| dir.to_path_buf()),
            refs,
        }
    }

    /// Keeps everything: the command succeeded.
    pub fn disarm(&mut self) {
        self.created_dir = None;
        self.refs.clear();
    }
}

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        if let Some(dir) = &self.created_dir {
            let _ = remove_dir(dir, &self.home);
            return;
        }
        for name in &self.refs {
            let _ = self.cache.delete_ref(name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cache is deleted only when, with its lock held, no source uses it.
    #[test]
    fn an_unused_cache_is_deleted_and_one_in_use_kept() {
        let dir = tempfile::tempdir().unwrap();
        let (caches, locks) = (dir.path().join("caches"), dir.path().join("locks"));
        std::fs::create_dir_all(caches.join("example.com/team/repo/objects")).unwrap();
        let key = "example.com/team/repo";
        assert!(!remove_unused(&caches, &locks, key, || Ok(true)).unwrap());
        assert!(caches.join(key).exists());
        assert!(remove_unused(&caches, &locks, key, || Ok(false)).unwrap());
        assert!(!caches.join(key).exists());
        assert!(!caches.join("example.com").exists(), "emptied folders go too");
        assert!(caches.exists());
        assert!(
            !remove_unused(&caches, &locks, key, || Ok(false)).unwrap(),
            "already gone"
        );
    }

    #[test]
    fn a_cache_keeping_a_locked_commit_counts_nested_ones_too() {
        let dir = tempfile::tempdir().unwrap();
        let outer = dir.path().join("_local/outer");
        let (outer_cache, _) = GitCache::open_or_create(&outer).unwrap();
        assert!(!keeps_locked_commits(&outer));
        let inner = outer.join("sub/inner");
        let (inner_cache, _) = GitCache::open_or_create(&inner).unwrap();
        assert!(!keeps_locked_commits(&outer));
        let commit = "a".repeat(40);
        let id = Oid::from_hex(commit.as_bytes()).unwrap();
        inner_cache.set_ref(&locked_ref(&commit), id).unwrap();
        assert!(keeps_locked_commits(&inner));
        assert!(
            keeps_locked_commits(&outer),
            "the outer cache's folder holds the inner one"
        );
        outer_cache.set_ref(&head_ref("s"), id).unwrap();
        assert!(!keeps_locked_commits(&dir.path().join("_local/other")));
    }

    /// The cache of `outer/sub/inner` (a restore fetched it first) does not
    /// keep `outer` from being cached: the repository is made around it, a
    /// failed add takes away only what it made, and deleting `outer`'s cache
    /// (a purge, a repair) leaves the inner one.
    #[test]
    fn a_cache_is_made_and_removed_around_the_caches_nested_in_its_folder() {
        let home = tempfile::tempdir().unwrap();
        let outer = home.path().join("cache/_local/outer");
        let inner = outer.join("sub/inner");
        let (inner_cache, _) = GitCache::open_or_create(&inner).unwrap();
        let id = Oid::from_hex("a".repeat(40).as_bytes()).unwrap();
        inner_cache.set_ref(&locked_ref(&"a".repeat(40)), id).unwrap();
        let nested_intact = || keeps_locked_commits(&inner) && is_cache(&inner);

        let (cache, created) = GitCache::open_or_create(&outer).unwrap();
        assert!(created && is_cache(&outer) && nested_intact());
        assert_eq!(nested_caches(&outer), ["sub"]);
        assert!(!outer.join(STAGING).exists(), "no staging folder left");
        // A failed add: its cleanup takes away only the outer repository.
        drop(Cleanup::new(home.path(), &cache, &outer, true, Vec::new()));
        assert!(!is_cache(&outer) && nested_intact());

        // A move killed halfway left git's entries without a `HEAD`, and a
        // whole staging repository.
        std::fs::create_dir_all(outer.join("objects/pack")).unwrap();
        std::fs::write(outer.join("config"), "[core]\n").unwrap();
        gix::init_bare(outer.join(STAGING)).unwrap();
        let (_, created) = GitCache::open_or_create(&outer).unwrap();
        assert!(created && is_cache(&outer) && nested_intact());
        assert!(!outer.join(STAGING).exists());

        remove_dir(&outer, home.path()).unwrap();
        assert!(!is_cache(&outer) && nested_intact());
        // Anything else in the folder is not the cache's to take.
        std::fs::remove_dir_all(outer.join("sub")).unwrap();
        std::fs::write(outer.join("notes.txt"), "mine\n").unwrap();
        let refused = GitCache::open_or_create(&outer).err().expect("refused");
        assert_eq!(refused.code(), crate::error::ErrorCode::CacheCorrupted);
        assert!(
            refused.message().contains("not a repository aam made"),
            "{}",
            refused.message()
        );
        assert!(outer.join("notes.txt").is_file());
    }

    /// A `source add` killed while its cache was being made left git's
    /// entries without a `HEAD` (no fetch ever wrote there): the next add
    /// makes the cache anew instead of stopping at AAM_CACHE_CORRUPTED.
    #[test]
    fn a_cache_whose_creation_was_killed_is_made_anew() {
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join("cache/_local/repo");
        for left in [
            &["hooks", "info"][..],
            &["hooks", "info", "objects", "refs", "config"],
            &[STAGING],
        ] {
            for entry in left {
                std::fs::create_dir_all(dir.join(entry)).unwrap();
            }
            let (_, created) = GitCache::open_or_create(&dir).unwrap();
            assert!(created && is_cache(&dir), "{left:?}");
            assert!(!dir.join(STAGING).exists());
            remove_dir(&dir, home.path()).unwrap();
        }
        // A whole cache is opened as it is.
        GitCache::open_or_create(&dir).unwrap();
        let (_, created) = GitCache::open_or_create(&dir).unwrap();
        assert!(!created);
    }

    /// Nested repositories named like git's entries: `logs` is a cache like
    /// any other; `objects` keeps the outer folder from being a repository.
    #[test]
    fn nested_caches_named_like_gits_entries_are_never_taken_for_its_own() {
        let home = tempfile::tempdir().unwrap();
        let outer = home.path().join("cache/_local/outer");
        GitCache::open_or_create(&outer.join("logs")).unwrap();
        GitCache::open_or_create(&outer).unwrap();
        assert!(is_cache(&outer) && is_cache(&outer.join("logs")));
        remove_dir(&outer, home.path()).unwrap();
        assert!(!is_cache(&outer) && is_cache(&outer.join("logs")));

        let other = home.path().join("cache/_local/other");
        GitCache::open_or_create(&other.join("objects")).unwrap();
        let refused = GitCache::open_or_create(&other).err().expect("refused");
        assert!(
            refused.message().contains("takes the name `objects`"),
            "{}",
            refused.message()
        );
        assert!(is_cache(&other.join("objects")));

        // Made after the outer one, inside its own folders: refused, since a
        // purge of it would take the outer cache's packs.
        let third = home.path().join("cache/_local/third");
        GitCache::open_or_create(&third).unwrap();
        let refused = GitCache::open_or_create(&third.join("objects/pack"))
            .err()
            .expect("refused");
        assert_eq!(refused.code(), crate::error::ErrorCode::CacheCorrupted);
        assert!(
            refused.message().contains("inside the `objects` folder"),
            "{}",
            refused.message()
        );
        assert!(!third.join("objects/pack/HEAD").exists());
        GitCache::open_or_create(&third.join("sub/inner")).unwrap();
    }

    #[test]
    fn each_source_has_its_own_ref_namespace() {
        assert_eq!(head_ref("a").len(), "refs/aam/".len() + 16 + "/head".len());
        assert_ne!(head_ref("a"), head_ref("b"));
        assert_eq!(
            head_ref("a").trim_end_matches("/head"),
            pending_ref("a").trim_end_matches("/pending")
        );
    }

    #[test]
    fn removing_a_cache_prunes_emptied_folders_up_to_the_home() {
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join("cache/git/host/owner/repo");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::create_dir_all(home.path().join("cache/git/host/other")).unwrap();
        remove_dir(&dir, home.path()).unwrap();
        assert!(!home.path().join("cache/git/host/owner").exists());
        assert!(
            home.path().join("cache/git/host/other").exists(),
            "a shared parent stays"
        );
    }

    #[test]
    fn a_failed_command_leaves_no_cache_it_created() {
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join("cache/git/host/repo");
        let (cache, created) = GitCache::open_or_create(&dir).unwrap();
        assert!(created);
        drop(Cleanup::new(home.path(), &cache, &dir, created, Vec::new()));
        assert!(!dir.exists());

        let (cache, _) = GitCache::open_or_create(&dir).unwrap();
        let mut kept = Cleanup::new(home.path(), &cache, &dir, true, Vec::new());
        kept.disarm();
        drop(kept);
        assert!(dir.exists(), "a disarmed cleanup keeps the cache");
    }
}
