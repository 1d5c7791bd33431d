//! What the agents' folders hold (`aam inventory`) and taking hand-made copies
//! into the lock file (`aam adopt`).
//!
//! The walk visits only the folders of the agent table (`crate::agents`) for a
//! project or the home folder, each once however many agents share it, and
//! never follows a link: a folder that leads out of its root through a link is
//! skipped, and an artifact that is a link is listed without being read. It is
//! bounded ([`Limits`]): past a limit it stops and says so.
//!
//! An artifact found is *installed* when the lock file deploys it there (clean,
//! or edited when a recorded file differs), otherwise *untracked*. The origin
//! of an untracked one is found by content: the set of its files' blake3
//! digests looked up in the catalog's version history
//! (`Catalog::versions_with_file`), paths ignored. An equal set is an exact
//! match; otherwise the version sharing the most digests (by Jaccard index) is
//! the one it was modified from. Adopting makes the package an install of
//! `source/artifact` at the matched commit makes ([`adoption`]), which the
//! plan records without rewriting the user's files (`Plan::add_existing`).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use rustix::fd::OwnedFd;
use rustix::fs::{AtFlags, FileType, Mode, OFlags};

use super::Roots;
use super::plan::Prepared;
use super::specs;
use super::state::{self, FileState};
use crate::agents::Place;
use crate::catalog::{ArtifactVersion, Catalog};
use crate::deploy::{self, Location, Target};
use crate::error::{Error, ErrorCode, Result};
use crate::packages::build::gather_at_commit;
use crate::packages::lock::{LockFile, LockedArtifact};
use crate::scan::{ArtifactKind, Platform};
use crate::sources::git::{GitCache, Oid};

/// How far a walk goes.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Entries read from one agent folder.
    pub entries_per_folder: usize,
    /// Files read from one skill folder.
    pub files_per_artifact: usize,
    /// Folder depth inside a skill.
    pub depth: usize,
    /// Files hashed in the whole walk.
    pub files: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            entries_per_folder: 100_000,
            files_per_artifact: 10_000,
            depth: 32,
            files: 1_000_000,
        }
    }
}

/// One artifact found in an agent folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Type.
    pub kind: ArtifactKind,
    /// Its name as the folder or file name says.
    pub name: String,
    /// Where: the skill folder or the file.
    pub location: Location,
    /// The agents that read it there.
    pub platforms: Vec<Platform>,
    /// Its regular files: path relative to the skill folder (the file name
    /// otherwise) to blake3 (hex).
    pub files: BTreeMap<String, String>,
    /// Whether it is a link (listed, never followed or read).
    pub link: bool,
}

/// What a walk found.
#[derive(Debug, Clone, Default)]
pub struct Walk {
    /// Every artifact, by location.
    pub found: Vec<Found>,
    /// Folders skipped, with why (a link out of the root, unreadable).
    pub skipped: Vec<String>,
    /// A limit stopped the walk early.
    pub truncated: bool,
}

/// How one place of the table lists artifacts.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Shape {
    /// A folder per skill.
    Folder,
    /// A file per artifact, named `<prefix><name><suffix>`.
    File { prefix: &'static str, suffix: &'static str },
}

/// Walks every agent folder of the table for a project (`roots.global` false,
/// which includes the home-folder places project installs use) or for the
/// home folder, and the folders earlier versions of aam deployed into
/// ([`crate::agents::FORMER_PLACES`]), which lock files may still record.
pub fn walk(roots: &Roots, limits: Limits) -> Result<Walk> {
    let mut places: BTreeMap<(ArtifactKind, String, Shape), Vec<Platform>> = BTreeMap::new();
    for &platform in Platform::ALL {
        for kind in ArtifactKind::ALL {
            let now = platform.agent().slot(kind).and_then(|s| s.place(roots.global));
            for place in [now, platform.former_place(kind, roots.global)].into_iter().flatten() {
                let (dir, shape) = match place {
                    Place::Folder(dir) => (dir, Shape::Folder),
                    Place::File { dir, prefix, suffix } => (dir, Shape::File { prefix, suffix }),
                    Place::Section(_) => continue,
                };
                places.entry((kind, dir.to_string(), shape)).or_default().push(platform);
            }
        }
    }
    let mut out = Walk::default();
    // The same folder reached twice (a link inside the root, `~` as the project)
    // is read once; its agents are merged.
    let mut seen: HashMap<(ArtifactKind, PathBuf, Shape), std::ops::Range<usize>> = HashMap::new();
    let mut hashed = 0usize;
    for ((kind, dir, shape), platforms) in places {
        let location = Location::from_key(&dir);
        let plain = location.resolve(&roots.root, &roots.home);
        if std::fs::symlink_metadata(&plain).is_err() {
            continue;
        }
        // Read from the folder as opened and checked where the kernel says
        // it is (links on the way followed only where installs follow them).
        let (folder, real) = match roots.open_folder(&location, &dir) {
            Ok(opened) => opened,
            Err(e) if e.code() == ErrorCode::IoError => continue, // not a folder, or gone since
            Err(e) => {
                out.skipped.push(format!("{dir}: {}", e.message()));
                continue;
            }
        };
        let path = plain;
        let key = (kind, real, shape.clone());
        if let Some(range) = seen.get(&key) {
            for found in &mut out.found[range.clone()] {
                found.platforms.extend(&platforms);
                found
                    .platforms
                    .sort_by_key(|p| Platform::ALL.iter().position(|q| q == p));
                found.platforms.dedup();
            }
            continue;
        }
        let start = out.found.len();
        let entries = match list(&folder, limits.entries_per_folder) {
            Ok((entries, cut)) => {
                out.truncated |= cut;
                entries
            }
            Err(e) => {
                out.skipped.push(format!("{dir}: {e}"));
                continue;
            }
        };
        for (file_name, file_type) in entries {
            let name = match &shape {
                Shape::Folder if matches!(file_type, FileType::Directory | FileType::Symlink) => file_name.clone(),
                Shape::File { prefix, suffix } if file_type != FileType::Directory => {
                    match file_name
                        .strip_prefix(prefix)
                        .and_then(|rest| rest.strip_suffix(suffix))
                        .filter(|n| !n.is_empty())
                    {
                        Some(name) => name.to_string(),
                        None => continue,
                    }
                }
                _ => continue,
            };
            let entry = path.join(&file_name);
            let mut found = Found {
                kind,
                name,
                location: location.join(&file_name),
                platforms: platforms.clone(),
                files: BTreeMap::new(),
                link: file_type == FileType::Symlink,
            };
            if !found.link {
                let budget = limits.files.saturating_sub(hashed);
                let plain = file_type == FileType::RegularFile;
                let cut = match shape {
                    Shape::Folder => {
                        // Gone or swapped for a link since it was listed: skipped.
                        let Some(skill) = open_dir_at(&folder, &file_name) else {
                            continue;
                        };
                        let is_skill = rustix::fs::statat(&skill, "SKILL.md", AtFlags::SYMLINK_NOFOLLOW)
                            .is_ok_and(|stat| FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile);
                        if !is_skill {
                            continue;
                        }
                        hash_tree(
                            &skill,
                            &entry,
                            "",
                            limits.depth,
                            budget.min(limits.files_per_artifact),
                            &mut found.files,
                        )?
                    }
                    Shape::File { .. } if plain && budget > 0 => {
                        if let Some(digest) = state::hash_at(&folder, file_name.as_ref(), &entry)? {
                            found.files.insert(file_name.clone(), digest);
                        }
                        false
                    }
                    Shape::File { .. } => plain,
                };
                hashed += found.files.len();
                out.truncated |= cut;
            }
            out.found.push(found);
        }
        seen.insert(key, start..out.found.len());
    }
    out.found.sort_by_key(|a| (a.location.key(), a.kind));
    // A file two shapes match is one artifact (Cursor's `agent-<name>.mdc` is
    // also a rule's `<name>.mdc`): the more specific shape, whose prefix and
    // suffix leave the shorter name, says what it is.
    out.found.dedup_by(|later, earlier| {
        if later.location.key() != earlier.location.key() {
            return false;
        }
        if later.name.len() < earlier.name.len() {
            std::mem::swap(later, earlier);
        }
        earlier.platforms.extend(later.platforms.iter().copied());
        earlier
            .platforms
            .sort_by_key(|p| Platform::ALL.iter().position(|q| q == p));
        earlier.platforms.dedup();
        true
    });
    Ok(out)
}

/// The folder `name` in the open `folder`, opened without following a link;
/// `None` when it is not (or no longer) a folder there.
fn open_dir_at(folder: &OwnedFd, name: &str) -> Option<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    rustix::fs::openat(folder, name, flags, Mode::empty()).ok()
}

/// An open folder's entries (name, type, links not followed), sorted, at most `limit`.
fn list(folder: &OwnedFd, limit: usize) -> std::io::Result<(Vec<(String, FileType)>, bool)> {
    let mut entries = Vec::new();
    let mut cut = false;
    for entry in rustix::fs::Dir::read_from(folder)? {
        let entry = entry?;
        let Ok(name) = entry.file_name().to_str() else {
            continue; // not UTF-8: no artifact name aam could install
        };
        if name == "." || name == ".." {
            continue;
        }
        if entries.len() == limit {
            cut = true;
            break;
        }
        let file_type = match entry.file_type() {
            FileType::Unknown => {
                FileType::from_raw_mode(rustix::fs::statat(folder, name, AtFlags::SYMLINK_NOFOLLOW)?.st_mode)
            }
            known => known,
        };
        entries.push((name.to_string(), file_type));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    Ok((entries, cut))
}

/// Hashes the regular files under the open `folder` (at `path`, for errors)
/// into `files` (paths relative to the walk's start), by name in folders as
/// opened, never following links; true when a limit cut it short.
fn hash_tree(
    folder: &OwnedFd,
    path: &Path,
    prefix: &str,
    depth: usize,
    budget: usize,
    files: &mut BTreeMap<String, String>,
) -> Result<bool> {
    let (entries, mut cut) =
        list(folder, budget.saturating_sub(files.len()).max(1)).map_err(|e| Error::io("read", path, e))?;
    for (name, file_type) in entries {
        let rel = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        if file_type == FileType::RegularFile {
            if files.len() >= budget {
                return Ok(true);
            }
            if let Some(digest) = state::hash_at(folder, name.as_ref(), &path.join(&name))? {
                files.insert(rel, digest);
            }
        } else if file_type == FileType::Directory {
            if depth == 0 {
                cut = true;
                continue;
            }
            if let Some(below) = open_dir_at(folder, &name) {
                cut |= hash_tree(&below, &path.join(&name), &rel, depth - 1, budget, files)?;
            }
        }
    }
    Ok(cut)
}

/// Whether an artifact found is aam's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tracking {
    /// Deployed there by an installed package, as installed.
    Installed(String),
    /// Deployed there by an installed package, with files changed since.
    Edited(String),
    /// Not in the lock file.
    Untracked,
}

/// Tells what the lock file says about `found`.
pub fn tracking(roots: &Roots, lock: &LockFile, found: &Found) -> Result<Tracking> {
    let key = found.location.key();
    let Some((name, entry)) = lock
        .packages
        .iter()
        .find(|(_, p)| p.deployed.iter().any(|d| d.target == key))
    else {
        return Ok(Tracking::Untracked);
    };
    let inside = format!("{key}/");
    for (file, digest) in &entry.file_checksums {
        if *file != key && !file.starts_with(&inside) {
            continue;
        }
        // A folder on the way swapped for a link out since the walk read it:
        // not as installed, and not read.
        let as_installed = match state::key_state(roots, file, digest) {
            Ok(state) => state == FileState::Ok,
            Err(e) if e.code() == ErrorCode::UnsafePath => false,
            Err(e) => return Err(e),
        };
        if !as_installed {
            return Ok(Tracking::Edited(name.clone()));
        }
    }
    Ok(Tracking::Installed(name.clone()))
}

/// A version of a source artifact a copy was made from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Match {
    /// The version.
    pub version: ArtifactVersion,
    /// Every file digest equal, none more or fewer.
    pub exact: bool,
    /// Digests the copy shares with it.
    pub shared_files: u64,
}

/// A digest held by more versions than this says nothing about the origin
/// (an empty file, a common licence) and is not looked up further.
const COMMON_DIGEST: usize = 256;

/// Candidates checked in full once ranked by shared digests.
const CANDIDATES: usize = 16;

/// Finds the version `found` was copied from: an exact match of its file
/// digests when there is one (the current version first, then the newest),
/// else the version sharing the most digests, of which the copy holds at
/// least half.
pub fn identify(catalog: &Catalog, found: &Found) -> Result<Option<Match>> {
    let local: BTreeSet<&str> = found.files.values().map(String::as_str).collect();
    if local.is_empty() {
        return Ok(None);
    }
    let mut hits: HashMap<i64, u64> = HashMap::new();
    for digest in &local {
        let ids = catalog.versions_with_file(digest, COMMON_DIGEST + 1)?;
        if ids.len() > COMMON_DIGEST {
            continue;
        }
        for id in ids {
            *hits.entry(id).or_default() += 1;
        }
    }
    let mut ranked: Vec<(i64, u64)> = hits.into_iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(b.0.cmp(&a.0)));
    let mut best: Option<(f64, bool, Match)> = None;
    for (id, _) in ranked.into_iter().take(CANDIDATES) {
        let version = catalog.artifact_version(id)?;
        if version.kind != found.kind {
            continue;
        }
        let theirs: BTreeSet<String> = catalog.version_digests(id)?.into_iter().collect();
        let shared = local.iter().filter(|d| theirs.contains(**d)).count();
        let union = local.len() + theirs.len() - shared;
        let score = shared as f64 / union.max(1) as f64;
        let exact = shared == local.len() && shared == theirs.len();
        // A copy modified from a version holds at least half of its files
        // unchanged. Less is no evidence of an origin, and adopting would
        // write the whole version into the project's package copy: a planted
        // copy sharing one file with a private skill would pull in the rest.
        if !exact && shared * 2 < theirs.len() {
            continue;
        }
        let current = version.replaced_commit.is_none() && version.live;
        let better = match &best {
            None => true,
            Some((s, c, m)) => (exact, score, current, version.id) > (m.exact, *s, *c, m.version.id),
        };
        if better {
            best = Some((
                score,
                current,
                Match {
                    version,
                    exact,
                    shared_files: shared as u64,
                },
            ));
        }
    }
    Ok(best.map(|(_, _, m)| m))
}

/// The agents of `found` whose place for its type, with the artifact named
/// `name`, is where it was found.
pub fn platforms_at(found: &Found, name: &str, global: bool) -> Vec<Platform> {
    found
        .platforms
        .iter()
        .copied()
        .filter(|&platform| match deploy::target(found.kind, name, platform, global) {
            Some(Target::Dir(location) | Target::File(location)) => location == found.location,
            _ => false,
        })
        .collect()
}

/// Whether one of its agents reads the folder `found` is in. The walk also
/// visits the places only earlier versions of aam deployed to, for what lock
/// files still record there: what nothing records in a folder no agent reads
/// any more (`.codex/skills`, `.cursor/prompts`) is nobody's, and is not
/// listed. A folder an agent still reads (`.cursor/rules`, where Cursor's
/// agents were `agent-<name>.mdc`) keeps everything in it listed.
pub fn read_there(found: &Found, global: bool) -> bool {
    let key = found.location.key();
    let Some((folder, _)) = key.rsplit_once('/') else {
        return false;
    };
    found.platforms.iter().any(|platform| {
        ArtifactKind::ALL.into_iter().any(|kind| {
            platform
                .agent()
                .slot(kind)
                .and_then(|slot| slot.place(global))
                .is_some_and(|place| place.root() == folder)
        })
    })
}

/// The package an install of the matched artifact at the matched commit
/// makes, byte for byte (the same lock entry an install would write).
pub fn adoption(catalog: &Catalog, caches: &Path, matched: &Match) -> Result<Prepared> {
    let version = &matched.version;
    let source = catalog.source_named(&version.source)?;
    let cache = GitCache::open(&caches.join(&source.cache_key))
        .map_err(|e| e.with_hint(format!("run `aam source update {}` to fetch it again", source.name)))?;
    let commit =
        Oid::from_hex(version.commit.as_bytes()).map_err(|_| Error::internal("stored commit id is not hex"))?;
    if !cache.has_commit(commit) {
        return Err(Error::new(
            ErrorCode::CacheCorrupted,
            format!(
                "the cache of `{}` lacks commit `{}`",
                source.name,
                crate::sources::short_id(&version.commit)
            ),
        )
        .with_hint(format!("run `aam source update {}` to fetch it again", source.name)));
    }
    let gathered = gather_at_commit(&cache, commit, &source.name, &source.url, version.kind, &version.path)?;
    let artifacts = vec![LockedArtifact {
        kind: version.kind,
        path: version.path.clone(),
        digest: version.content_digest.clone(),
    }];
    specs::source_package(gathered, &source.name, &source.url, &version.commit, artifacts)
}

/// The untracked artifacts of `walk` that `names` name (by name or location),
/// or all of them with `all`; a name that matches no untracked artifact is
/// `AAM_ARTIFACT_NOT_FOUND`.
pub fn untracked_named<'w>(
    roots: &Roots,
    lock: &LockFile,
    walk: &'w Walk,
    names: &[String],
    all: bool,
) -> Result<Vec<&'w Found>> {
    let named = |f: &Found, name: &str| name == f.name || name == f.location.key();
    let mut chosen = Vec::new();
    for found in walk.found.iter().filter(|f| all || names.iter().any(|n| named(f, n))) {
        if read_there(found, roots.global) && tracking(roots, lock, found)? == Tracking::Untracked {
            chosen.push(found);
        }
    }
    if let Some(name) = names.iter().find(|n| !chosen.iter().any(|f| named(f, n))) {
        return Err(Error::new(
            ErrorCode::ArtifactNotFound,
            format!("no untracked artifact in the agent folders is named `{name}`"),
        )
        .with_hint("`aam inventory` lists them by name and location"));
    }
    Ok(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn the_walk_lists_each_shared_folder_once_and_never_follows_links() {
        let project = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = project.path();
        write(&root.join(".claude/skills/pdf/SKILL.md"), "---\nname: pdf\n---\n");
        write(&root.join(".claude/skills/pdf/lib/x.py"), "print(1)\n");
        write(&root.join(".claude/skills/notes/README.md"), "no skill here\n");
        write(&root.join(".agents/skills/shared/SKILL.md"), "---\nname: shared\n---\n");
        write(&root.join(".claude/agents/reviewer.md"), "agent\n");
        write(&outside.path().join("evil/SKILL.md"), "---\nname: evil\n---\n");
        write(&outside.path().join("rules/agent-x.mdc"), "rule\n");
        std::os::unix::fs::symlink(outside.path().join("evil"), root.join(".claude/skills/evil")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join(".cursor")).unwrap();
        let roots = Roots::new(root.to_path_buf(), home.path().to_path_buf(), false);
        let walk = walk(&roots, Limits::default()).unwrap();
        let keys: Vec<(String, bool)> = walk.found.iter().map(|f| (f.location.key(), f.link)).collect();
        assert_eq!(
            keys,
            [
                (".agents/skills/shared".to_string(), false),
                (".claude/agents/reviewer.md".to_string(), false),
                (".claude/skills/evil".to_string(), true),
                (".claude/skills/pdf".to_string(), false),
            ]
        );
        let pdf = &walk.found[3];
        assert_eq!(pdf.files.keys().collect::<Vec<_>>(), ["SKILL.md", "lib/x.py"]);
        assert!(pdf.platforms.contains(&Platform::Claude));
        let shared = &walk.found[0];
        assert!(shared.platforms.len() > 1, "{:?}", shared.platforms);
        assert!(walk.found[2].files.is_empty());
        assert!(
            walk.skipped.iter().any(|s| s.starts_with(".cursor")),
            "{:?}",
            walk.skipped
        );
        assert!(!walk.truncated);
    }

    /// Cursor's agents were `agent-<name>.mdc` among its rules (a former place
    /// the walk still visits): such a file is one agent, not an agent and a
    /// rule (found by a user helper).
    #[test]
    fn a_file_two_shapes_match_is_listed_once_as_the_more_specific() {
        let project = tempfile::tempdir().unwrap();
        let root = project.path();
        write(
            &root.join(".cursor/rules/agent-hand.mdc"),
            "---\ndescription: hand\n---\nBe nice\n",
        );
        write(
            &root.join(".cursor/rules/style.mdc"),
            "---\ndescription: style\n---\nTabs\n",
        );
        let roots = Roots::new(root.to_path_buf(), root.to_path_buf(), false);
        let walk = walk(&roots, Limits::default()).unwrap();
        let found: Vec<(String, ArtifactKind, String)> = walk
            .found
            .iter()
            .map(|f| (f.location.key(), f.kind, f.name.clone()))
            .collect();
        assert_eq!(
            found,
            [
                (
                    ".cursor/rules/agent-hand.mdc".to_string(),
                    ArtifactKind::Agent,
                    "hand".to_string()
                ),
                (
                    ".cursor/rules/style.mdc".to_string(),
                    ArtifactKind::Instruction,
                    "style".to_string()
                ),
            ]
        );
        assert_eq!(walk.found[0].platforms, [Platform::Cursor]);
    }

    #[test]
    fn a_folder_swapped_for_a_link_while_walking_is_never_read_through() {
        // Another process flips a folder between itself and a link out: a
        // folder inside a skill, or the agent folder itself.
        for flipped in [".claude/skills/s/lib", ".claude/skills"] {
            let project = tempfile::tempdir().unwrap();
            let outside = tempfile::tempdir().unwrap();
            let root = project.path();
            write(&root.join(".claude/skills/s/SKILL.md"), "skill\n");
            write(&root.join(".claude/skills/s/lib/x.md"), "mine\n");
            write(&outside.path().join("secret.md"), "secret\n");
            write(&outside.path().join("s/SKILL.md"), "secret\n");
            let secret = blake3::hash(b"secret\n").to_hex().to_string();
            let flipper = crate::paths::Flipper::start(&root.join(flipped), outside.path());
            let roots = Roots::new(root.to_path_buf(), root.to_path_buf(), false);
            let mut read = 0;
            for _ in 0..3_000 {
                let walk = walk(&roots, Limits::default()).unwrap();
                for found in &walk.found {
                    assert!(
                        !found.files.values().any(|d| *d == secret),
                        "{flipped}: read through a link: {:?}",
                        found.files
                    );
                    read += found.files.contains_key("lib/x.md") as usize;
                }
            }
            drop(flipper);
            assert!(read > 0, "{flipped}: the folder was never there to read");
        }
    }

    #[test]
    fn a_folder_that_now_leads_out_is_not_as_installed_and_not_read() {
        // The walk found the skill; then its agent folder was swapped for a
        // link out, to a copy with the same bytes.
        let project = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = project.path();
        write(&outside.path().join("s/SKILL.md"), "skill\n");
        std::fs::create_dir_all(root.join(".claude")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join(".claude/skills")).unwrap();
        let digest = blake3::hash(b"skill\n").to_hex();
        let lock: LockFile = serde_yaml_ng::from_str(&format!(
            "lockfile_version: 1\nresolved_at: 2026-01-01T00:00:00Z\npackages:\n  kit:\n    version: 1.0.0\n    \
             source: local\n    source_name: /kit\n    checksum: c\n    platforms: [claude]\n    deployed:\n    \
             - {{platform: claude, type: skill, name: s, target: .claude/skills/s}}\n    file_checksums:\n      \
             .claude/skills/s/SKILL.md: {digest}\n"
        ))
        .unwrap();
        let found = Found {
            kind: ArtifactKind::Skill,
            name: "s".into(),
            location: Location::Project(".claude/skills/s".into()),
            platforms: vec![Platform::Claude],
            files: BTreeMap::new(),
            link: false,
        };
        let roots = Roots::new(root.to_path_buf(), root.to_path_buf(), false);
        assert_eq!(tracking(&roots, &lock, &found).unwrap(), Tracking::Edited("kit".into()));
    }

    #[test]
    fn the_walk_stops_at_its_limits_and_says_so() {
        let project = tempfile::tempdir().unwrap();
        let root = project.path();
        for i in 0..5 {
            write(&root.join(format!(".claude/skills/s{i}/SKILL.md")), "x\n");
            write(&root.join(format!(".claude/skills/s{i}/a/b/c.md")), "deep\n");
        }
        let roots = Roots::new(root.to_path_buf(), root.to_path_buf(), false);
        let limits = Limits {
            entries_per_folder: 3,
            files_per_artifact: 10,
            depth: 1,
            files: 100,
        };
        let walk = walk(&roots, limits).unwrap();
        assert!(walk.truncated);
        assert_eq!(walk.found.len(), 3);
        assert_eq!(walk.found[0].files.keys().collect::<Vec<_>>(), ["SKILL.md"]);
    }
}
