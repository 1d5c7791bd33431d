//! Restoring what `.aam/aam-lock.yaml` records (`aam install` with no
//! arguments): which packages need writing, each package made again from its
//! recorded origin (a registry archive at the recorded version, a source
//! artifact at the recorded commit, fetched into the git cache when missing,
//! a folder or archive at its recorded path), and how the result compares with
//! the lock.
//!
//! Everything read from the lock is untrusted: the tool checks every entry
//! (`Roots::check_lock`) before this module sees it, a source URL passes the
//! same spec checks as `aam source add`, and a commit must be a full object id.
//! Content that does not match the recorded checksums is never installed
//! (`AAM_CHECKSUM_MISMATCH`); other differences are what `--frozen` refuses.

use std::collections::BTreeSet;

use super::Roots;
use super::keys;
use super::plan::Prepared;
use super::specs::{self, SpecEnv};
use super::state::{self, FileState};
use crate::catalog::{Catalog, PlaceKind};
use crate::error::{Error, ErrorCode, Result};
use crate::packages::build::gather_at_commit;
use crate::packages::lock::{LockedPackage, Origin};
use crate::packages::registry::Registry;
use crate::sources::git::{GitCache, Oid, RefWant};
use crate::sources::spec::{SourceSpec, redact};

/// Where a restore reads from.
pub struct RestoreEnv<'a> {
    /// Paths, the git cache and registries, as for install specs.
    pub spec: SpecEnv<'a>,
    /// Use only what is on this machine: never fetch.
    pub offline: bool,
    /// Time limits of a fetch.
    pub fetch_limits: crate::sources::git::FetchLimits,
    /// The call's cancellation flag (a fetch stops soon after it is raised).
    pub cancel: &'a crate::cancel::Cancel,
}

/// What a restore does with one recorded package.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Need {
    /// Every recorded file and section is as recorded: nothing to do.
    Intact,
    /// Some are missing, or hold what aam wrote for another lock (a
    /// teammate's upgrade pulled since): the package is made again and written.
    Write,
    /// These files or sections differ from the lock (edited, or not aam's),
    /// and nothing is missing: never overwritten silently.
    Edited(Vec<String>),
    /// These differ from the lock, and others are missing: the missing ones
    /// are written around them.
    WriteAround(Vec<String>),
    /// These differ from the lock, others are missing, and one of these is
    /// nothing a write can go around (a link, a folder, a damaged section):
    /// never overwritten silently.
    Blocked(Vec<String>),
}

/// What a restore must do with `entry`, from its files' states on disk (a
/// file holding bytes aam wrote at its key on this machine is out of date,
/// not edited: see [`state::edited_keys`]).
pub fn need(roots: &Roots, entry: &LockedPackage, written_here: impl Fn(&str, &str) -> bool) -> Result<Need> {
    // An entry that records no files (every install records some: a lock
    // edited by hand or damaged) cannot be found intact: made again, it
    // records them.
    if entry.file_checksums.is_empty() {
        return Ok(Need::Write);
    }
    let status = state::file_status(roots, entry)?;
    let edited = state::edited_keys(roots, &status, written_here)?;
    let missing = status.values().any(|s| *s == FileState::Missing);
    Ok(if !edited.is_empty() && missing {
        let mut plain = true;
        for key in &edited {
            plain &= state::is_plain(roots, key)?;
        }
        match plain {
            true => Need::WriteAround(edited),
            false => Need::Blocked(edited),
        }
    } else if !edited.is_empty() {
        Need::Edited(edited)
    } else if status.values().all(|s| *s == FileState::Ok) {
        Need::Intact
    } else {
        Need::Write
    })
}

/// Makes the package `name` again from what its lock entry records, and
/// checks it is what was installed: name, version and package checksum.
pub fn prepare(
    env: &RestoreEnv<'_>,
    catalog: &Catalog,
    roots: &Roots,
    name: &str,
    entry: &LockedPackage,
) -> Result<Prepared> {
    let prepared = match entry.source {
        Origin::Registry => registry(env, name, entry)?,
        Origin::Source => source(env, catalog, &roots.root, name, entry)?,
        Origin::Local | Origin::Archive => {
            let path = roots.recorded_location(&entry.source_name);
            let kind = match entry.source {
                Origin::Local => PlaceKind::Folder,
                _ => PlaceKind::Archive,
            };
            if roots.lies_below(&path) {
                // `./kit`, or the absolute path an older aam recorded: it leads
                // below the root, links included (a committed link could lead anywhere).
                let root = roots.root.canonicalize().unwrap_or_else(|_| roots.root.clone());
                if path.canonicalize().is_ok_and(|real| !real.starts_with(&root)) {
                    return Err(Error::new(
                        ErrorCode::LockInvalid,
                        format!(
                            "the lock entry of `{name}` names package folder `{}`, which leads out of the project through a link",
                            entry.source_name
                        ),
                    )
                    .with_hint("the lock file or the project may have been changed by someone else: check the link and the entry"));
                }
            } else if !catalog.installs_from(&entry.source_name, kind)? {
                // Outside the project, only a place this machine installed from.
                let use_it = format!(
                    "install from it once (`aam install {}`)",
                    crate::error::quoted(&entry.source_name)
                );
                return Err(unknown_place(name, kind, &entry.source_name, &use_it));
            } else if path.canonicalize().is_ok_and(|real| real != path) {
                // Installed from, it was recorded as itself: a link in its
                // place now leads somewhere no install used.
                return Err(Error::new(
                    ErrorCode::UnsafePath,
                    format!(
                        "the lock file installs `{name}` from `{}`, which now leads to another place through a link",
                        crate::error::quoted(&entry.source_name)
                    ),
                )
                .with_hint("install the package again from where it is now (`aam install <folder or archive>`)"));
            }
            let prepared = specs::prepare_path(&env.spec, &path, &entry.source_name).map_err(|e| {
                let origin = format!("{} `{}`", entry.source.as_str(), entry.source_name);
                e.in_context(format!("restoring `{name}` from {origin}")).with_hint(format!(
                    "the lock file records `{name}` as coming from {origin}: put the package there, or install it again from where it is now (`aam install <folder or archive>`)"
                ))
            })?;
            Prepared {
                requested: entry.requested.clone(),
                ..prepared
            }
        }
    };
    let mut wrong = Vec::new();
    if prepared.manifest.name != name {
        wrong.push(format!(
            "`{name}`: its origin holds package `{}`",
            prepared.manifest.name
        ));
    }
    if prepared.manifest.version != entry.version {
        wrong.push(format!(
            "`{name}`: version `{}`, the lock file `{}`",
            prepared.manifest.version, entry.version
        ));
    }
    if prepared.checksum != entry.checksum {
        wrong.push(format!(
            "`{name}`: checksum `{}`, the lock file `{}`",
            short(&prepared.checksum),
            short(&entry.checksum)
        ));
    }
    if !wrong.is_empty() {
        return Err(mismatch(&wrong));
    }
    Ok(prepared)
}

fn registry(env: &RestoreEnv<'_>, name: &str, entry: &LockedPackage) -> Result<Prepared> {
    let setting = env.spec.settings.registry(Some(&entry.source_name)).map_err(|e| {
        e.with_hint(format!(
            "the lock file installs `{name}` from registry `{}`; add it with `aam registry add {} <url>`",
            entry.source_name, entry.source_name
        ))
    })?;
    let registry = Registry::configured(setting)?;
    let index = registry.index()?;
    let version = index
        .packages
        .get(name)
        .and_then(|p| p.versions.get(&entry.version))
        .ok_or_else(|| {
            Error::new(
                ErrorCode::PackageNotFound,
                format!(
                    "registry `{}` has no `{name}@{}`, which the lock file records",
                    entry.source_name, entry.version
                ),
            )
            .with_hint(
                "published versions are never removed; check that the registry is the one the lock file was made with",
            )
        })?;
    let bytes = registry.archive(version)?;
    if version.checksum != entry.checksum {
        return Err(mismatch(&[format!(
            "`{name}`: registry `{}` has checksum `{}` for `{}`, the lock file `{}`",
            entry.source_name,
            short(&version.checksum),
            entry.version,
            short(&entry.checksum)
        )]));
    }
    let requested = entry.requested.clone().unwrap_or_else(|| "*".to_string());
    specs::registry_package(&bytes, (name, &entry.version), &entry.source_name, version, requested)
}

fn source(
    env: &RestoreEnv<'_>,
    catalog: &Catalog,
    project_root: &std::path::Path,
    name: &str,
    entry: &LockedPackage,
) -> Result<Prepared> {
    let invalid = |why: String| {
        Error::new(
            ErrorCode::LockInvalid,
            format!("the lock entry of `{name}` {why}"),
        )
        .with_hint("restore the lock file from version control, or install the artifact again with `aam install <source>/<artifact>`")
    };
    let url = match &entry.source_url {
        Some(url) => url.clone(),
        None => match catalog.find_source(&entry.source_name)? {
            Some(source) => source.url,
            None => {
                return Err(Error::new(
                    ErrorCode::SourceNotFound,
                    format!(
                        "the lock entry of `{name}` names source `{}` without its URL, and no source has that name here",
                        entry.source_name
                    ),
                )
                .with_hint(format!(
                    "add the source with `aam source add <url> --name {}`, then run `aam install` again",
                    entry.source_name
                )));
            }
        },
    };
    // A local repository is read only when this machine uses it: registered
    // as a source, or installed from before. Asked of the URL's text, and
    // another one is never looked at: its commit may still be in a cache.
    let unknown_repository = match SourceSpec::recorded_local_path(&url) {
        Some(path) if !uses_repository(catalog, &path)? => Some(path),
        _ => None,
    };
    // The same checks as `aam source add`: accepted transports only, and a
    // URL that carries credentials is refused without echoing them.
    let spec = match unknown_repository {
        Some(_) => SourceSpec::parse_recorded_as_written(&url),
        None => SourceSpec::parse_recorded(&url, env.spec.cwd),
    }
    .map_err(|e| invalid(format!("names a source URL aam does not take ({})", e.message())))?;
    if spec.had_credentials {
        return Err(invalid(format!("names a URL with credentials (`{}`)", redact(&url))));
    }
    let commit_text = entry.source_commit.as_deref().unwrap_or_default();
    let commit = Oid::from_hex(commit_text.as_bytes())
        .ok()
        .filter(|_| commit_text.len() == 40)
        .ok_or_else(|| invalid("has no full commit id".to_string()))?;
    let [artifact] = entry.artifacts.as_slice() else {
        return Err(invalid("does not name exactly one source artifact".to_string()));
    };
    crate::paths::check_relative(&artifact.path)
        .map_err(|why| invalid(format!("names artifact path `{}`: {why}", artifact.path)))?;
    let wanted = WantedCommit {
        package: name,
        source_name: &entry.source_name,
        artifact_path: &artifact.path,
        commit,
        text: commit_text,
        unknown_repository: unknown_repository.as_deref(),
    };
    let (_cache_lock, cache) = match cached_elsewhere(env, catalog, project_root, &spec.cache_key(), &wanted)? {
        Some(found) => found,
        None => url_cache(env, catalog, project_root, &spec, &wanted)?,
    };
    let gathered = gather_at_commit(
        &cache,
        commit,
        &entry.source_name,
        &spec.url,
        artifact.kind,
        &artifact.path,
    )?;
    specs::source_package(
        gathered,
        &entry.source_name,
        &spec.url,
        commit_text,
        entry.artifacts.clone(),
    )
}

/// `AAM_UNSAFE_PATH`: the lock entry of `name` has a restore read the `kind`
/// of place at `path`, outside the project, which no install on this machine used. A
/// lock file comes with the project, written by whoever committed it: were it
/// followed anywhere, a cloned lock would have aam read any folder, archive or
/// repository of the user's. `use_it` says how to use it here.
fn unknown_place(name: &str, kind: PlaceKind, path: &str, use_it: &str) -> Error {
    let what = match kind {
        PlaceKind::Folder => "package folder",
        PlaceKind::Archive => "archive",
        PlaceKind::Repository => "local repository",
    };
    Error::new(
        ErrorCode::UnsafePath,
        format!(
            "the lock file installs `{name}` from the {what} `{}`, outside the project, which no install on this machine used",
            crate::error::quoted(path)
        ),
    )
    .with_hint(format!(
        "aam reads a place outside the project only once you have used it here: if it is yours, {use_it}, then run `aam install` again"
    ))
}

/// The commit a source install's lock entry records, and what it is for.
struct WantedCommit<'a> {
    /// The package's name.
    package: &'a str,
    /// The source name the entry records.
    source_name: &'a str,
    /// The artifact's repository path.
    artifact_path: &'a str,
    commit: Oid,
    /// The commit id as the entry writes it.
    text: &'a str,
    /// The entry's local repository, when this machine never used it: never
    /// fetched from (see [`uses_repository`]).
    unknown_repository: Option<&'a str>,
}

/// Whether this machine uses the local repository at `path` (as a recorded
/// `file://` URL names it): a registered source's, or installed from before.
fn uses_repository(catalog: &Catalog, path: &str) -> Result<bool> {
    let registered = catalog
        .list_sources()?
        .iter()
        .any(|source| SourceSpec::recorded_local_path(&source.url).as_deref() == Some(path));
    Ok(registered || catalog.installs_from(path, PlaceKind::Repository)?)
}

/// The cache of the recorded URL's repository, under its lock, holding the
/// commit: as it is, or fetched into it (never offline, and a local
/// repository only where the caller may read).
fn url_cache(
    env: &RestoreEnv<'_>,
    catalog: &Catalog,
    project_root: &std::path::Path,
    spec: &SourceSpec,
    wanted: &WantedCommit<'_>,
) -> Result<(crate::sources::cache::CacheLock, GitCache)> {
    let (name, commit, commit_text) = (wanted.package, wanted.commit, wanted.text);
    let cache_lock = lock_for_restore(env, catalog, project_root, &spec.cache_key(), commit_text)?;
    let dir = env.spec.caches.join(spec.cache_key());
    let cache = match holding(env, &spec.cache_key(), commit) {
        Some(cache) => keeping(cache, wanted)?,
        // Said before `--offline` would suggest a fetch that is refused anyway.
        None if let Some(path) = wanted.unknown_repository => {
            let use_it = format!("register it (`aam source add {}`)", crate::error::quoted(path));
            return Err(unknown_place(name, PlaceKind::Repository, path, &use_it));
        }
        None if env.offline => {
            return Err(Error::new(
                ErrorCode::OfflineMissing,
                format!(
                    "`{name}` needs commit `{}` of `{}`, which is not in the git cache",
                    crate::sources::short_id(commit_text),
                    redact(&spec.url)
                ),
            )
            .with_hint("run `aam install` without `--offline` to fetch it"));
        }
        None => {
            // A local repository is read only where the caller may read (a
            // restore served over MCP fetched a lock's `file://` URL from anywhere).
            if spec.kind == crate::sources::spec::SourceKind::Local {
                let repository = std::path::Path::new(&spec.repo_path);
                // Checked before anything is asked of the path, so a confined
                // call learns nothing of folders outside it.
                (env.spec.allow_path)(repository, &spec.url)?;
                if !repository.is_dir() {
                    return Err(Error::new(
                        ErrorCode::SourceUrlInvalid,
                        format!(
                            "the lock file installs `{name}` from the local repository `{}`, which is not on this machine, and its commit `{}` is not in the git cache",
                            spec.repo_path,
                            crate::sources::short_id(commit_text)
                        ),
                    )
                    .with_hint(format!(
                        "put the repository at that path and run `aam install` again, or install `{name}` from a source this machine has (`aam install <source>/<artifact> --force`)"
                    )));
                }
            }
            let (cache, created) = GitCache::open_or_create(&dir)?;
            let cache = cache.reading_local_within(env.spec.local_within.clone());
            // A cache this restore made goes again when its fetch fails.
            let mut cleanup = crate::sources::cache::Cleanup::new(env.spec.caches, &cache, &dir, created, Vec::new());
            let want = RefWant::Named(commit_text.to_string());
            let locked_ref = crate::sources::cache::locked_ref(commit_text);
            cache
                .fetch(&spec.url, &want, &locked_ref, created, env.fetch_limits, env.cancel)
                .map_err(|e| match e.code() {
                    // The repository no longer has it (rewritten history, or a
                    // lock edited by hand): say whose commit, and the way on.
                    ErrorCode::GitRefNotFound => Error::new(
                        ErrorCode::GitRefNotFound,
                        format!(
                            "the lock file installs `{name}` at commit `{}` of `{}`, which that repository does not have",
                            crate::sources::short_id(commit_text),
                            redact(&spec.url)
                        ),
                    )
                    .with_hint(format!(
                        "check `source_commit` of `{name}` in `.aam/aam-lock.yaml`; to take what the repository has now instead, install it again from a source of it: `aam install {}/{} --force`",
                        crate::error::quoted(wanted.source_name),
                        crate::error::quoted(wanted.artifact_path)
                    )),
                    _ => e.in_context(format!("restoring `{name}`")),
                })?;
            cleanup.disarm();
            drop(cleanup);
            cache
        }
    };
    Ok((cache_lock, cache))
}

/// The cache of a registered source other than `own_key`'s (the recorded
/// URL's) that holds `commit_text`, under its lock, with the commit kept for
/// the lock file there; `None` when the URL's own cache holds it, or none
/// does. A commit id names its content, so any copy serves: the repository
/// moved and was added again from its new place, or is registered under
/// another URL of it (ssh and https), and nothing is fetched.
fn cached_elsewhere(
    env: &RestoreEnv<'_>,
    catalog: &Catalog,
    project_root: &std::path::Path,
    own_key: &str,
    wanted: &WantedCommit<'_>,
) -> Result<Option<(crate::sources::cache::CacheLock, GitCache)>> {
    if holding(env, own_key, wanted.commit).is_some() {
        return Ok(None);
    }
    for source in catalog.list_sources()? {
        if source.cache_key == own_key || holding(env, &source.cache_key, wanted.commit).is_none() {
            continue;
        }
        let lock = lock_for_restore(env, catalog, project_root, &source.cache_key, wanted.text)?;
        // Looked at again under the lock: a repair may have dropped it meanwhile.
        if let Some(cache) = holding(env, &source.cache_key, wanted.commit) {
            return Ok(Some((lock, keeping(cache, wanted)?)));
        }
    }
    Ok(None)
}

/// Records that the project at `project_root` restores `commit_text` from
/// the cache `key`, then takes that cache's lock, held while the commit is
/// read. Recorded first, so a repair running meanwhile (it deletes unused
/// commits and caches under this lock) finds the lock file that wants it; a
/// root that is no UTF-8 text is never recorded, and its commits are kept.
fn lock_for_restore(
    env: &RestoreEnv<'_>,
    catalog: &Catalog,
    project_root: &std::path::Path,
    key: &str,
    commit_text: &str,
) -> Result<crate::sources::cache::CacheLock> {
    if let Some(root) = project_root.to_str().filter(|_| project_root.is_absolute()) {
        catalog.record_restored_commit(key, commit_text, root)?;
    }
    crate::sources::cache::lock(env.spec.locks, env.spec.caches, key)
}

/// The cache `key` when it holds `commit`.
fn holding(env: &RestoreEnv<'_>, key: &str, commit: Oid) -> Option<GitCache> {
    GitCache::open(&env.spec.caches.join(key))
        .ok()
        .filter(|cache| cache.has_commit(commit))
}

/// `cache`, with the wanted commit kept under its locked ref.
fn keeping(cache: GitCache, wanted: &WantedCommit<'_>) -> Result<GitCache> {
    let locked_ref = crate::sources::cache::locked_ref(wanted.text);
    if !cache.has_ref(&locked_ref) {
        cache.set_ref(&locked_ref, wanted.commit)?;
    }
    Ok(cache)
}

/// The deployed files of `entry` that are on disk as it records but that aam
/// did not write there (`written_here(key, digest)` is false): a lock entry
/// can claim a project's own file, with its checksum, so such files are aam's
/// to replace only once the entry's origin is shown to make them.
pub fn unproven_files(
    roots: &Roots,
    name: &str,
    entry: &LockedPackage,
    written_here: impl Fn(&str, &str) -> bool,
) -> Result<Vec<String>> {
    let copy = format!("{}/", keys::copy_dir(name));
    let mut out = Vec::new();
    for (key, digest) in &entry.file_checksums {
        if !key.starts_with(&copy)
            && !written_here(key, digest)
            && state::key_state(roots, key, digest)? == FileState::Ok
        {
            out.push(key.clone());
        }
    }
    Ok(out)
}

/// Checks that `entry`'s recorded origin makes the files `keys` exactly as it
/// records them, by making the package again (as a restore does) and planning
/// it on a plan that is never carried out: `AAM_CHECKSUM_MISMATCH` naming each
/// file it makes otherwise, or not at all. What an upgrade asks before it
/// replaces the files [`unproven_files`] lists.
pub fn verify_origin(
    env: &RestoreEnv<'_>,
    catalog: &Catalog,
    roots: &Roots,
    name: &str,
    entry: &LockedPackage,
    keys: &[String],
) -> Result<()> {
    let package = prepare(env, catalog, roots, name, entry)?;
    let planned = super::plan::Plan::new(roots, true)?
        .keeping_recorded_places()
        .add(&package, &entry.platforms)?;
    let wrong: Vec<String> = keys
        .iter()
        .filter(|key| planned.file_checksums.get(*key) != entry.file_checksums.get(*key))
        .map(|key| {
            format!("`{name}`: `{key}` is on disk as the lock file records, but its recorded origin does not make it")
        })
        .collect();
    match wrong.is_empty() {
        true => Ok(()),
        false => Err(mismatch(&wrong)),
    }
}

/// How a planned lock entry differs from the recorded one.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Differences {
    /// The package's own files are not what the lock records (never installed).
    pub content: Vec<String>,
    /// The entry would change otherwise (what `--frozen` refuses).
    pub lock: Vec<String>,
}

/// Compares the entry a restore planned for `name` with the recorded one.
/// Folders the install created are not compared: they depend on what
/// existed before. A deployed file that is on disk as the lock records but
/// would now get other bytes counts as content, never as a lock change: a
/// restore fills in what is missing and never rewrites such a file (a lock
/// file edited to claim a project's own file, with its checksum, would
/// otherwise have the restore replace it).
pub fn compare(roots: &Roots, name: &str, recorded: &LockedPackage, planned: &LockedPackage) -> Result<Differences> {
    let mut out = Differences::default();
    let copy = format!("{}/", keys::copy_dir(name));
    let keys: BTreeSet<&String> = recorded
        .file_checksums
        .keys()
        .chain(planned.file_checksums.keys())
        .collect();
    for key in keys {
        let (before, after) = (recorded.file_checksums.get(key), planned.file_checksums.get(key));
        let what = match (before, after) {
            (Some(b), Some(a))
                if a != b && !key.starts_with(&copy) && state::key_state(roots, key, b)? == FileState::Ok =>
            {
                out.content.push(format!(
                    "`{name}`: `{key}` is on disk as the lock file records, but its origin now makes checksum `{}` there (a restore never rewrites it)",
                    short(a)
                ));
                continue;
            }
            (Some(b), Some(a)) if a != b => {
                format!("`{key}` has checksum `{}`, the lock file `{}`", short(a), short(b))
            }
            (Some(_), None) => format!("`{key}` is no longer written"),
            (None, Some(_)) => format!("`{key}` is new"),
            _ => continue,
        };
        // An entry that records no files has only its package checksum
        // (compared below) to vouch for the content: each file is a change
        // of the lock, not of the content.
        let list = if key.starts_with(&copy) && !recorded.file_checksums.is_empty() {
            &mut out.content
        } else {
            &mut out.lock
        };
        list.push(format!("`{name}`: {what}"));
    }
    let fields: [(&str, String, String); 8] = [
        (
            "source",
            recorded.source.as_str().into(),
            planned.source.as_str().into(),
        ),
        ("source_name", recorded.source_name.clone(), planned.source_name.clone()),
        (
            "source_commit",
            text(&recorded.source_commit),
            text(&planned.source_commit),
        ),
        ("source_url", text(&recorded.source_url), text(&planned.source_url)),
        ("requested", text(&recorded.requested), text(&planned.requested)),
        (
            "dependencies",
            format!("{:?}", recorded.dependencies),
            format!("{:?}", planned.dependencies),
        ),
        (
            "platforms",
            format!("{:?}", recorded.platforms),
            format!("{:?}", planned.platforms),
        ),
        (
            "artifacts",
            format!("{:?}", recorded.artifacts),
            format!("{:?}", planned.artifacts),
        ),
    ];
    for (field, before, after) in fields {
        if before != after {
            out.lock.push(format!("`{name}`: `{field}` would change"));
        }
    }
    let targets = |p: &LockedPackage| -> BTreeSet<String> {
        p.deployed
            .iter()
            .map(|d| format!("{} {} {} -> {}", d.platform.as_str(), d.kind.as_str(), d.name, d.target))
            .collect()
    };
    let (before, after) = (targets(recorded), targets(planned));
    for gone in before.difference(&after) {
        out.lock
            .push(format!("`{name}`: deployment `{gone}` is no longer made"));
    }
    for new in after.difference(&before) {
        out.lock.push(format!("`{name}`: deployment `{new}` is new"));
    }
    Ok(out)
}

fn text(value: &Option<String>) -> String {
    value.clone().unwrap_or_default()
}

/// The first 12 characters of a digest, enough to tell two apart.
fn short(digest: &str) -> &str {
    digest.get(..12).unwrap_or(digest)
}

/// Content that does not match the lock file's checksums (`what` names
/// each package and file).
pub fn mismatch(what: &[String]) -> Error {
    Error::new(
        ErrorCode::ChecksumMismatch,
        format!("what the origin holds does not match the lock file: {}", list(what)),
    )
    .with_hint("the origin changed since the lock file was written, or the lock file was edited; restore the lock file from version control, or install the package again with `aam install <spec>` to record what it is now")
}

/// `--frozen`: the differences that would change the lock file.
pub fn outdated(what: &[String]) -> Error {
    Error::new(
        ErrorCode::LockOutdated,
        format!("restoring would change the lock file: {}", list(what)),
    )
    .with_hint("run `aam install` without `--frozen` to update the lock file, and commit it")
}

/// Up to five items, then how many more.
fn list(items: &[String]) -> String {
    let mut text = items.iter().take(5).cloned().collect::<Vec<_>>().join("; ");
    if items.len() > 5 {
        text.push_str(&format!(" (and {} more)", items.len() - 5));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packages::lock::{Deployment, LockedArtifact};
    use crate::scan::{ArtifactKind, Platform};

    fn entry() -> LockedPackage {
        LockedPackage {
            version: "0.0.0+abc".into(),
            source: Origin::Source,
            source_name: "src".into(),
            source_commit: Some("a".repeat(40)),
            source_url: Some("file:///repo".into()),
            checksum: "c".repeat(64),
            dependencies: Default::default(),
            platforms: vec![Platform::Claude],
            requested: Some("src/skills/x".into()),
            artifacts: vec![LockedArtifact {
                kind: ArtifactKind::Skill,
                path: "skills/x".into(),
                digest: "d".into(),
            }],
            deployed: vec![Deployment {
                platform: Platform::Claude,
                kind: ArtifactKind::Skill,
                name: "x".into(),
                target: ".claude/skills/x".into(),
            }],
            file_checksums: [(".aam/packages/x/aam.yaml", "1"), (".claude/skills/x/SKILL.md", "2")]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.repeat(64)))
                .collect(),
            created_dirs: vec![".claude".into()],
            allowed_findings: Vec::new(),
        }
    }

    #[test]
    fn an_identical_entry_has_no_differences_whatever_folders_it_created() {
        let mut planned = entry();
        planned.created_dirs.clear();
        let dir = tempfile::tempdir().unwrap();
        let roots = Roots::new(dir.path().to_path_buf(), dir.path().join("home"), false);
        assert_eq!(
            compare(&roots, "x", &entry(), &planned).unwrap(),
            Differences::default()
        );
    }

    #[test]
    fn package_content_and_lock_changes_are_told_apart() {
        let mut planned = entry();
        planned
            .file_checksums
            .insert(".aam/packages/x/aam.yaml".into(), "9".repeat(64));
        planned
            .file_checksums
            .insert(".claude/skills/x/SKILL.md".into(), "8".repeat(64));
        planned.platforms.push(Platform::Cursor);
        planned.deployed[0].target = ".agents/skills/x".into();
        let dir = tempfile::tempdir().unwrap();
        let roots = Roots::new(dir.path().to_path_buf(), dir.path().join("home"), false);
        let found = compare(&roots, "x", &entry(), &planned).unwrap();
        assert_eq!(found.content.len(), 1, "{found:?}");
        assert!(found.content[0].contains(".aam/packages/x/aam.yaml"), "{found:?}");
        assert!(
            found.lock.iter().any(|d| d.contains(".claude/skills/x/SKILL.md")),
            "{found:?}"
        );
        assert!(found.lock.iter().any(|d| d.contains("`platforms`")), "{found:?}");
        assert!(found.lock.iter().any(|d| d.contains("is no longer made")), "{found:?}");
        assert!(found.lock.iter().any(|d| d.ends_with("is new")), "{found:?}");
    }

    #[test]
    fn a_file_on_disk_as_recorded_is_never_rewritten_by_a_restore() {
        // A lock edited to claim the project's own skill, with its checksum.
        let dir = tempfile::tempdir().unwrap();
        let roots = Roots::new(dir.path().to_path_buf(), dir.path().join("home"), false);
        let key = ".claude/skills/x/SKILL.md";
        std::fs::create_dir_all(dir.path().join(".claude/skills/x")).unwrap();
        std::fs::write(dir.path().join(key), "Run ./deploy.sh --safe\n").unwrap();
        let mut recorded = entry();
        recorded.file_checksums.insert(
            key.into(),
            blake3::hash(b"Run ./deploy.sh --safe\n").to_hex().to_string(),
        );
        let mut planned = recorded.clone();
        planned.file_checksums.insert(key.into(), "8".repeat(64));
        let found = compare(&roots, "x", &recorded, &planned).unwrap();
        assert_eq!(found.content.len(), 1, "{found:?}");
        assert!(found.content[0].contains("never rewrites"), "{found:?}");
        assert!(found.lock.is_empty(), "{found:?}");
        // Once the file is gone, writing what the origin makes is a lock change.
        std::fs::remove_file(dir.path().join(key)).unwrap();
        let found = compare(&roots, "x", &recorded, &planned).unwrap();
        assert!(found.content.is_empty(), "{found:?}");
        assert!(found.lock.iter().any(|d| d.contains(key)), "{found:?}");
    }

    #[test]
    fn long_lists_are_cut_and_counted() {
        let items: Vec<String> = (0..8).map(|i| i.to_string()).collect();
        assert_eq!(list(&items), "0; 1; 2; 3; 4 (and 3 more)");
        let err = outdated(&items);
        assert_eq!(err.code(), ErrorCode::LockOutdated);
        assert!(err.hint().unwrap().contains("--frozen"));
    }

    /// Runs `prepare` for `entry` with a fresh catalog, settings and cache under `dir`.
    fn prepare_in(dir: &std::path::Path, offline: bool, entry: &LockedPackage) -> Result<Prepared> {
        let catalog = Catalog::open(&dir.join("catalog.db")).unwrap();
        let settings = crate::config::Settings::default();
        let caches = dir.join("cache");
        let allow = |_: &std::path::Path, _: &str| Ok(());
        let env = RestoreEnv {
            spec: SpecEnv {
                cwd: dir,
                caches: &caches,
                locks: &dir.join("locks"),
                settings: &settings,
                allow_path: &allow,
                local_within: None,
                close_artifacts: &|_| Vec::new(),
            },
            offline,
            fetch_limits: crate::sources::git::FetchLimits::resolve(None, None),
            cancel: &crate::cancel::Cancel::new(),
        };
        let roots = Roots::new(dir.to_path_buf(), dir.join("home"), false);
        prepare(&env, &catalog, &roots, "kit", entry)
    }

    #[test]
    fn a_folder_package_is_read_again_and_its_checksum_verified() {
        let dir = tempfile::tempdir().unwrap();
        let kit = dir.path().join("kit");
        crate::packages::sample_package(&kit, "pdf", &[]);
        let path = kit.display().to_string();
        let (bytes, manifest, _) = crate::packages::validate::pack_dir(&kit).unwrap();
        let checksum = blake3::hash(&bytes).to_hex().to_string();
        let mut recorded = entry();
        recorded.source = Origin::Local;
        recorded.source_name = path;
        recorded.version = manifest.version.clone();
        recorded.checksum = checksum.clone();
        recorded.requested = Some("./kit".into());
        let again = prepare_in(dir.path(), true, &recorded).unwrap();
        assert_eq!(again.checksum, checksum);
        assert_eq!(again.requested.as_deref(), Some("./kit"), "what was asked for is kept");
        std::fs::write(
            kit.join("skills/pdf/SKILL.md"),
            "---\nname: pdf\ndescription: changed\n---\n",
        )
        .unwrap();
        let err = prepare_in(dir.path(), true, &recorded).err().unwrap();
        assert_eq!(err.code(), ErrorCode::ChecksumMismatch);
        assert!(err.message().contains("`kit`: checksum"), "{}", err.message());
    }

    #[test]
    fn a_source_entry_is_checked_before_anything_is_fetched() {
        let dir = tempfile::tempdir().unwrap();
        let code = |edit: &dyn Fn(&mut LockedPackage), offline: bool| {
            let mut recorded = entry();
            recorded.source_url = Some(format!("file://{}", dir.path().display()));
            edit(&mut recorded);
            prepare_in(dir.path(), offline, &recorded)
                .err()
                .map(|e| (e.code(), e.message().to_string()))
        };
        let (ext, _) = code(&|e| e.source_url = Some("ext::sh -c id".into()), false).unwrap();
        assert_eq!(ext, ErrorCode::LockInvalid);
        let (creds, message) = code(
            &|e| e.source_url = Some("https://me:hunter2@example.com/o/r".into()),
            false,
        )
        .unwrap();
        assert_eq!(creds, ErrorCode::LockInvalid);
        assert!(!message.contains("hunter2"), "{message}");
        let (short, _) = code(&|e| e.source_commit = Some("abc123".into()), false).unwrap();
        assert_eq!(short, ErrorCode::LockInvalid);
        let (two, _) = code(&|e| e.artifacts.push(e.artifacts[0].clone()), false).unwrap();
        assert_eq!(two, ErrorCode::LockInvalid);
        let (escape, _) = code(&|e| e.artifacts[0].path = "../outside".into(), false).unwrap();
        assert_eq!(escape, ErrorCode::LockInvalid);
        let (offline, message) = code(&|e| e.source_url = Some("https://example.com/o/r".into()), true).unwrap();
        assert_eq!(offline, ErrorCode::OfflineMissing);
        assert!(message.contains("`kit`") && message.contains("aaaaaaa"), "{message}");
        assert!(!dir.path().join("cache").exists(), "offline creates no cache");
        let (unknown, _) = code(&|e| e.source_url = None, false).unwrap();
        assert_eq!(unknown, ErrorCode::SourceNotFound);
        // A local repository this machine never used is the blocker, offline or not.
        for offline in [true, false] {
            let (local, _) = code(&|_| {}, offline).unwrap();
            assert_eq!(local, ErrorCode::UnsafePath);
        }
        assert!(!dir.path().join("cache").exists(), "nothing fetched");
    }

    #[test]
    fn need_follows_the_files_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        let roots = Roots::new(dir.path().to_path_buf(), dir.path().join("home"), false);
        let mut recorded = entry();
        let bytes = b"hello";
        recorded.file_checksums = [(
            ".claude/skills/x/SKILL.md".to_string(),
            blake3::hash(bytes).to_hex().to_string(),
        )]
        .into_iter()
        .collect();
        let nothing_written = |_: &str, _: &str| false;
        assert_eq!(need(&roots, &recorded, nothing_written).unwrap(), Need::Write);
        let file = dir.path().join(".claude/skills/x/SKILL.md");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, bytes).unwrap();
        assert_eq!(need(&roots, &recorded, nothing_written).unwrap(), Need::Intact);
        std::fs::write(&file, b"edited").unwrap();
        assert_eq!(
            need(&roots, &recorded, nothing_written).unwrap(),
            Need::Edited(vec![".claude/skills/x/SKILL.md".into()])
        );
        // Bytes aam wrote there for an earlier lock are out of date, not edited.
        let earlier = blake3::hash(b"edited").to_hex().to_string();
        let wrote_earlier = |key: &str, digest: &str| key == ".claude/skills/x/SKILL.md" && digest == earlier;
        assert_eq!(need(&roots, &recorded, wrote_earlier).unwrap(), Need::Write);
        // Another file missing: written around a plain edit, never around a link.
        recorded.file_checksums.insert(
            ".claude/skills/x/notes.md".to_string(),
            blake3::hash(b"notes").to_hex().to_string(),
        );
        let edited = vec![".claude/skills/x/SKILL.md".to_string()];
        assert_eq!(
            need(&roots, &recorded, nothing_written).unwrap(),
            Need::WriteAround(edited.clone())
        );
        std::fs::remove_file(&file).unwrap();
        std::os::unix::fs::symlink("elsewhere", &file).unwrap();
        assert_eq!(need(&roots, &recorded, nothing_written).unwrap(), Need::Blocked(edited));
    }
}
