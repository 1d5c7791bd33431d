//! The user's project: its root folder and its own artifacts, detected in the
//! working tree with the same rules as sources. [`tree`] keeps the tree's stat
//! data current; [`changes`] turns a refreshed tree into the catalog rows that
//! moved, reading only main files that are new or changed; [`current`] brings
//! the catalog's record up to date through them.

pub mod ask;
pub mod spawn;
pub mod tree;
pub mod watch;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::catalog::{Catalog, ProjectArtifactRow, ProjectChanges, ProjectId};
use crate::error::{Error, ErrorCode, Result};
use crate::packages::manifest::MANIFEST_FILE;
use crate::scan::{self, ArtifactKind};
use tree::Tree;

/// Files and folders a project may hold before its walk is refused (the
/// 100,000-skill benchmark project holds about 225,000).
pub const MAX_ENTRIES: usize = 1_000_000;

/// Most folders a refresh reads the record around (see [`record_around`]);
/// past them it reads the whole record at once.
const AROUND_FOLDERS: usize = 1_000;

/// Largest main file read for its name and description.
const MAX_MAIN_BYTES: u64 = 16 * 1024 * 1024;

/// An artifact in the project's working tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectArtifact {
    /// Kind.
    pub kind: ArtifactKind,
    /// Display name.
    pub name: String,
    /// Path relative to the project root, `/`-separated.
    pub path: String,
    /// One-line description.
    pub description: Option<String>,
    /// A skill with vendor agent metadata.
    pub has_vendor_agent: bool,
    /// The file its name and text come from, relative to the project root.
    pub main_file: String,
    /// Every file that makes it up, relative to the project root.
    pub files: Vec<String>,
}

/// The project containing `cwd`: the nearest folder with a `.git`, else `cwd`.
pub fn root(cwd: &Path) -> PathBuf {
    cwd.ancestors()
        .find(|dir| dir.join(".git").exists())
        .unwrap_or(cwd)
        .to_path_buf()
}

/// The project containing `cwd` as [`root`] finds it, looking no higher than
/// `top`: a repository above `top` is not this project (a sandbox confined to
/// `top` keeps its other files out).
pub fn root_within(cwd: &Path, top: &Path) -> PathBuf {
    cwd.ancestors()
        .take_while(|dir| dir.starts_with(top))
        .find(|dir| dir.join(".git").exists())
        .unwrap_or(cwd)
        .to_path_buf()
}

/// Every artifact in the project at `root`, by kind then path, with its files.
/// Honors `.gitignore`; never follows symlinks. (Packaging reads the tree
/// directly; listings answer from the catalog, see [`changes`].)
pub fn artifacts(root: &Path) -> Result<Vec<ProjectArtifact>> {
    let tree = tree::walk(root, usize::MAX, tree::Unreadable::Fail)?;
    let paths: Vec<&str> = tree.files.keys().map(String::as_str).collect();
    let mut out = Vec::new();
    for found in scan::detect(&paths, &BTreeMap::new(), &root_name(root)) {
        let analysis = scan::analyze(&found, read_main(root, &found.main_file).as_deref());
        out.push(ProjectArtifact {
            kind: found.kind,
            name: analysis.name,
            description: analysis.description,
            has_vendor_agent: found.has_vendor_agent,
            files: found.files.iter().map(|&i| paths[i].to_string()).collect(),
            main_file: found.main_file,
            path: found.path,
        });
    }
    Ok(out)
}

/// The catalog's key for the project at `root`: its canonical path.
pub fn key(root: &Path) -> String {
    root.canonicalize()
        .unwrap_or_else(|_| root.to_path_buf())
        .to_string_lossy()
        .into_owned()
}

/// How many files and folders a project may hold before its walk is refused:
/// `AAM_PROJECT_MAX_ENTRIES`, else [`MAX_ENTRIES`].
pub fn max_entries() -> usize {
    std::env::var("AAM_PROJECT_MAX_ENTRIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(MAX_ENTRIES)
}

/// Refuses, with `AAM_PROJECT_TOO_LARGE`, a project root that is a disk root or
/// the home folder (or above it): no project, and a walk of everything.
pub fn check_root(root: &Path) -> Result<()> {
    let canonical = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .and_then(|h| h.canonicalize().ok());
    let is_home_or_above = home.is_some_and(|h| h.starts_with(&canonical));
    if canonical.parent().is_none() || is_home_or_above {
        return Err(Error::new(
            ErrorCode::ProjectTooLarge,
            format!("`{}` is a disk root or home folder, not a project", canonical.display()),
        )
        .with_hint(
            "run aam inside your project folder, pass `--source <name>` to list only a source, \
             or pass `--large-project` (`large_project`) to index it anyway",
        ));
    }
    Ok(())
}

/// The catalog's record of the project at `root`, brought up to date first and
/// its row id returned (see [`refresh`]).
pub fn current(catalog: &mut Catalog, root: &Path, large: bool) -> Result<ProjectId> {
    refresh(catalog, root, large).map(|r| r.id)
}

/// What [`refresh`] left the catalog's record of a project at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refreshed {
    /// The project's row id.
    pub id: ProjectId,
    /// The record's version this refresh wrote or found current; `None` when
    /// another process's refresh won the race to write it.
    pub version: Option<i64>,
    /// What [`refresh`] cost: the recorded folders and files it compared with
    /// the disk (when there was no record, the folders and main files a later
    /// refresh compares); the narrower refreshes of a watcher count what they
    /// compared, or 0.
    pub checked: usize,
    /// The folders recorded, as far as [`refresh`] read them (a watcher sets
    /// one watch per folder); 0 from the narrower refreshes.
    pub folders: usize,
}

/// The catalog's record of the project at `root`, brought up to date first:
/// it then holds every change made before this call began. The recorded folders, main files and ignore files are
/// checked against the disk (other files matter by their paths only, which their
/// folders' mtimes tell); when something moved, only what moved is read again and
/// the changes are written in one transaction. Refuses a disk root or the home folder, and a tree past the
/// bound, unless `large`.
pub fn refresh(catalog: &mut Catalog, root: &Path, large: bool) -> Result<Refreshed> {
    if !large {
        check_root(root)?;
    }
    let key = key(root);
    let max_entries = if large { usize::MAX } else { max_entries() };
    let Some((id, version)) = catalog.project_head(&key)? else {
        let tree = tree::walk(root, max_entries, tree::Unreadable::LeaveOut)?;
        let changes = changes(root, None, &tree, &[]);
        let refreshed = written(catalog.record_project(&key, None, &changes)?)?;
        return Ok(Refreshed {
            checked: tree.dirs.len() + changes.artifacts_set.len(),
            folders: tree.dirs.len(),
            ..refreshed
        });
    };
    let (moved, checked, folders) = recorded_moved(catalog, root, id)?;
    let refreshed = refresh_moved(catalog, root, (id, version), &moved, max_entries)?;
    Ok(Refreshed {
        checked,
        folders,
        ..refreshed
    })
}

/// The record at `version` brought up to date with what `moved` on disk.
fn refresh_moved(
    catalog: &mut Catalog,
    root: &Path,
    (id, version): (ProjectId, i64),
    moved: &[tree::Moved],
    max_entries: usize,
) -> Result<Refreshed> {
    let key = key(root);
    if moved.is_empty() {
        return Ok(Refreshed {
            id,
            version: Some(version),
            checked: 0,
            folders: 0,
        });
    }
    // The folders whose entries a change touched: those that moved, those of
    // the files that moved, and those holding a folder that went (or went out
    // of reach: its permissions changed, which moves no mtime). Past a
    // thousand (a checkout of another branch) the whole record is read at once.
    let dirs: BTreeSet<String> = moved
        .iter()
        .flat_map(|m| match (m.was, m.now) {
            (tree::Recorded::Dir(_), None) if !m.path.is_empty() => {
                vec![m.path.clone(), parent(&m.path).to_string()]
            }
            (tree::Recorded::Dir(_), _) => vec![m.path.clone()],
            (tree::Recorded::File(_), _) => vec![parent(&m.path).to_string()],
        })
        .collect();
    if dirs.len() <= AROUND_FOLDERS {
        let whole = dirs.iter().map(|dir| (dir.clone(), Touched::Whole)).collect();
        let recorded = entries_in(catalog, id, &whole)?;
        let mut listings = tree::Listings::default();
        if let Some(refreshed) = record_in_place(catalog, root, (id, version), &recorded, moved, &mut listings)? {
            return Ok(refreshed);
        }
        let around = Around {
            dirs: &dirs,
            recorded,
            moved,
        };
        if let Some(within) = record_around(catalog, root, (id, version), around, listings, max_entries)? {
            return Ok(within.refreshed);
        }
    }
    let recorded = catalog.project_entries(id)?;
    let mut listings = tree::Listings::default();
    if let Some(refreshed) = record_in_place(catalog, root, (id, version), &recorded, moved, &mut listings)? {
        return Ok(refreshed);
    }
    let recorded = Tree::from_recorded(recorded);
    let now = match tree::apply(root, recorded.clone(), moved, max_entries, listings)? {
        Some(now) => now,
        None => tree::walk(root, max_entries, tree::Unreadable::LeaveOut)?,
    };
    // Only the regions a path came, went or changed in are detected again.
    let mut changes = tree_changes(&recorded, &now);
    let regions = changed_regions(&recorded, &changes);
    let known = catalog.project_artifacts_within(id, &regions)?;
    detect_within(root, &recorded, &now, &known, &regions, &mut changes);
    written(catalog.record_project(&key, Some(version), &changes)?)
}

/// What moved on disk among the recorded folders, main files and ignore files
/// of project `id`, how many were checked and how many of them are folders:
/// the folders are checked while the files are read from the catalog, so the
/// disk and the catalog are read at once.
fn recorded_moved(catalog: &Catalog, root: &Path, id: ProjectId) -> Result<(Vec<tree::Moved>, usize, usize)> {
    let dirs = catalog.project_dir_entries(id)?;
    std::thread::scope(|scope| {
        let dirs_moved = scope.spawn(|| tree::moved(root, &dirs));
        let files = catalog.project_checked_files(id)?;
        let files_moved = tree::moved(root, &files);
        let mut moved = dirs_moved.join().map_err(|_| tree::checking_failed())??;
        moved.extend(files_moved?);
        Ok((moved, dirs.len() + files.len(), dirs.len()))
    })
}

/// What [`refresh_within`] left: the record, and the folders that came and
/// went in it (a watcher starts and stops watching them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Within {
    /// The record this refresh wrote or found current.
    pub refreshed: Refreshed,
    /// Folders recorded now that were not before.
    pub dirs_came: Vec<String>,
    /// Folders recorded before that are gone.
    pub dirs_went: Vec<String>,
    /// The folders asked to check that are recorded now.
    pub dirs_kept: Vec<String>,
}

/// What a watcher's events tell changed directly in one folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Touched {
    /// Anything: every entry recorded there is checked, the folder listed again.
    Whole,
    /// Only the entries with these names; every other one raised no event, so
    /// it is as recorded.
    Named(BTreeSet<String>),
}

impl Touched {
    /// The names the folder can be checked by alone; `None` when it is
    /// checked whole, as it is when a package manifest came or went there
    /// (that changes what the whole folder holds for the project).
    pub fn names_alone(&self) -> Option<&BTreeSet<String>> {
        match self {
            Touched::Named(names) if !names.contains(MANIFEST_FILE) => Some(names),
            _ => None,
        }
    }

    /// What `self` and `other` tell together.
    pub fn merge(&mut self, other: Touched) {
        match (self, other) {
            (Touched::Named(names), Touched::Named(more)) => names.extend(more),
            (this @ Touched::Named(_), Touched::Whole) => *this = Touched::Whole,
            (Touched::Whole, _) => {}
        }
    }
}

/// The catalog's record at `version`, brought up to date when only the
/// folders `dirs` can have changed since it was written (a watcher's events
/// name them, and every other folder, itself watched, reported nothing): each
/// of them is checked, with the files directly in it, all of them or only
/// those its events named ([`Touched`]). When paths came or went there, only
/// those folders are listed again (by the names alone when they were named)
/// and only the regions the change touched are read from the catalog and
/// detected again (see [`changed_regions`]); the walk's bound then counts the
/// entries read. A folder listed by names is recorded with its mtime unknown
/// (a name that changed after the events were read is in its mtime but not in
/// the record), so a check without a watcher lists it whole once. `None` when
/// the whole tree must be checked: an ignore file moved, or a change reaches
/// the project root's own skill.
pub fn refresh_within(
    catalog: &mut Catalog,
    root: &Path,
    (id, version): (ProjectId, i64),
    dirs: &BTreeMap<String, Touched>,
    max_entries: usize,
) -> Result<Option<Within>> {
    let recorded = entries_in(catalog, id, dirs)?;
    // A folder inside one of `dirs` is checked only when named: its own
    // watch reports its changes.
    let checked: Vec<_> = recorded
        .iter()
        .filter(|(path, entry)| matches!(entry, tree::Recorded::File(_)) || dirs.contains_key(path))
        .cloned()
        .collect();
    let mut moved = tree::moved(root, &checked)?;
    let dir_paths: BTreeSet<String> = dirs.keys().cloned().collect();
    if moved.is_empty() {
        return Ok(Some(Within {
            refreshed: Refreshed {
                id,
                version: Some(version),
                checked: checked.len(),
                folders: 0,
            },
            dirs_came: Vec::new(),
            dirs_went: Vec::new(),
            dirs_kept: dirs_kept(&dir_paths, &recorded),
        }));
    }
    let mut listings = tree::Listings::default();
    for m in &mut moved {
        if let (Some(names), Some(tree::Recorded::Dir(_))) = (dirs.get(&m.path).and_then(Touched::names_alone), m.now) {
            m.now = Some(tree::Recorded::Dir(-1));
            listings.list_named(root, &m.path, names);
        }
    }
    if let Some(refreshed) = record_in_place(catalog, root, (id, version), &recorded, &moved, &mut listings)? {
        return Ok(Some(Within {
            refreshed,
            dirs_came: Vec::new(),
            dirs_went: Vec::new(),
            dirs_kept: dirs_kept(&dir_paths, &recorded),
        }));
    }
    let around = Around {
        dirs: &dir_paths,
        recorded,
        moved: &moved,
    };
    record_around(catalog, root, (id, version), around, listings, max_entries)
}

/// The folders of `dirs` among the `recorded` entries.
fn dirs_kept(dirs: &BTreeSet<String>, recorded: &[(String, tree::Recorded)]) -> Vec<String> {
    recorded
        .iter()
        .filter(|(path, entry)| matches!(entry, tree::Recorded::Dir(_)) && dirs.contains(path))
        .map(|(path, _)| path.clone())
        .collect()
}

/// The recorded entries of project `id` in the folders `dirs` (each folder and
/// what is directly in it, all of it or the entries named), in path order.
fn entries_in(
    catalog: &Catalog,
    id: ProjectId,
    dirs: &BTreeMap<String, Touched>,
) -> Result<Vec<(String, tree::Recorded)>> {
    let mut recorded = Vec::new();
    for (dir, touched) in dirs {
        match touched.names_alone() {
            Some(names) => recorded.extend(catalog.project_entries_named(id, dir, names)?),
            None => recorded.extend(catalog.project_entries_in(id, dir)?),
        }
    }
    // A folder named with the one holding it is read twice.
    recorded.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    recorded.dedup_by(|a, b| a.0 == b.0);
    Ok(recorded)
}

/// The part of a project's record a refresh reads when paths came or went in
/// the folders `dirs`: their `recorded` entries (each folder and what is
/// directly in it) and what `moved` among them on disk.
struct Around<'a> {
    dirs: &'a BTreeSet<String>,
    recorded: Vec<(String, tree::Recorded)>,
    moved: &'a [tree::Moved],
}

/// Brings the record at `version` up to date when paths came or went in the
/// folders of `around` and nothing moved elsewhere: only those folders are
/// listed again (new folders walked), and only the regions the change touched
/// are read from the catalog and detected again (see [`changed_regions`]),
/// with the skill files of the folders above (a skill there owns what
/// changed); the walk's bound then counts the entries read. `None` when the
/// whole tree must be walked: an ignore file moved, or a change reaches the
/// project root's own skill.
fn record_around(
    catalog: &mut Catalog,
    root: &Path,
    (id, version): (ProjectId, i64),
    around: Around<'_>,
    listings: tree::Listings,
    max_entries: usize,
) -> Result<Option<Within>> {
    let mut old = Tree::from_recorded(around.recorded);
    add_skill_files_at_and_above(catalog, id, around.dirs, &mut old)?;
    let Some(mut now) = tree::apply(root, old.clone(), around.moved, max_entries, listings)? else {
        return Ok(None);
    };
    let first = tree_changes(&old, &now);
    let regions = changed_regions(&old, &first);
    if regions.iter().any(String::is_empty) {
        return Ok(None);
    }
    add_regions(catalog, id, &regions, &first.dirs_removed, &mut old, &mut now)?;
    let mut changes = tree_changes(&old, &now);
    let known = catalog.project_artifacts_within(id, &regions)?;
    detect_within(root, &old, &now, &known, &regions, &mut changes);
    let dirs_came = changes
        .dirs_set
        .iter()
        .filter(|(path, _)| !old.dirs.contains_key(path))
        .map(|(path, _)| path.clone())
        .collect();
    let dirs_went = changes.dirs_removed.clone();
    let dirs_kept = around
        .dirs
        .iter()
        .filter(|dir| now.dirs.contains_key(*dir))
        .cloned()
        .collect();
    let refreshed = written(catalog.record_project(&key(root), Some(version), &changes)?)?;
    Ok(Some(Within {
        refreshed,
        dirs_came,
        dirs_went,
        dirs_kept,
    }))
}

/// Adds to `old` the recorded skill files of the folders `dirs` and of every
/// folder above them (a skill there owns what changed in them; a folder read
/// by names alone may not hold its own skill file yet).
fn add_skill_files_at_and_above(
    catalog: &Catalog,
    id: ProjectId,
    dirs: &BTreeSet<String>,
    old: &mut Tree,
) -> Result<()> {
    let mut above = BTreeSet::new();
    for dir in dirs {
        let mut at = dir.as_str();
        above.insert(at);
        while !at.is_empty() {
            at = parent(at);
            above.insert(at);
        }
    }
    for dir in above {
        for (path, entry) in catalog.project_skill_files_in(id, dir)? {
            old.insert(path, entry);
        }
    }
    Ok(())
}

/// Completes the partial trees `old` and `now` (the second brought up to date
/// from the first) with the rest of the record within `regions`: what they
/// lack there did not change, so it goes into both, except below a folder
/// that `went`.
fn add_regions(
    catalog: &Catalog,
    id: ProjectId,
    regions: &[String],
    went: &[String],
    old: &mut Tree,
    now: &mut Tree,
) -> Result<()> {
    let went: HashSet<&str> = went.iter().map(String::as_str).collect();
    let below_went = |path: &str| {
        let mut at = path;
        while !at.is_empty() {
            at = parent(at);
            if went.contains(at) {
                return true;
            }
        }
        false
    };
    for region in regions {
        for (path, entry) in catalog.project_entries_within(id, region)? {
            if old.holds(&path, &entry) {
                continue;
            }
            if !below_went(&path) {
                now.insert(path.clone(), entry);
            }
            old.insert(path, entry);
        }
    }
    Ok(())
}

/// When what `moved` reports left every path in place (see
/// [`tree::restat_in_place`]), writes the new stat data and the artifacts of
/// the edited main files over the record at `version`; `None` otherwise (the
/// folders listed to find out are kept in `listings`).
fn record_in_place(
    catalog: &mut Catalog,
    root: &Path,
    (id, version): (ProjectId, i64),
    recorded: &[(String, tree::Recorded)],
    moved: &[tree::Moved],
    listings: &mut tree::Listings,
) -> Result<Option<Refreshed>> {
    let Some(in_place) = tree::restat_in_place(root, recorded, moved, listings) else {
        return Ok(None);
    };
    let main_files: Vec<&str> = in_place.files.iter().map(|(path, _)| path.as_str()).collect();
    let edited = catalog.project_artifacts_with_main(id, &main_files)?;
    let Some(artifacts_set) = reread_in_place(root, &edited) else {
        return Ok(None);
    };
    let changes = ProjectChanges {
        dirs_set: in_place.dirs,
        files_set: in_place.files,
        artifacts_set,
        ..ProjectChanges::default()
    };
    written(catalog.record_project(&key(root), Some(version), &changes)?).map(Some)
}

fn written((id, version): (ProjectId, Option<i64>)) -> Result<Refreshed> {
    Ok(Refreshed {
        id,
        version,
        checked: 0,
        folders: 0,
    })
}

/// The `known` artifacts read again from their edited main files, when no path
/// came or went: detection over the main file alone must find each where it was
/// (then kind, path and files are as recorded), else `None` and detection runs
/// over the regions the change touched.
fn reread_in_place(root: &Path, known: &[ProjectArtifactRow]) -> Option<Vec<ProjectArtifactRow>> {
    let root_name = root_name(root);
    known
        .iter()
        .map(|k| {
            let found = scan::detect(&[k.main_file.as_str()], &BTreeMap::new(), &root_name)
                .into_iter()
                .find(|f| f.kind == k.kind && f.path == k.path && f.main_file == k.main_file)?;
            let analysis = scan::analyze(&found, read_main(root, &found.main_file).as_deref());
            Some(ProjectArtifactRow {
                name: analysis.name,
                description: analysis.description,
                ..k.clone()
            })
        })
        .collect()
}

/// What brings the catalog's record of the project at `root` from `old` (with
/// its `known` artifacts) to `new`: the tree rows that moved, and the artifacts
/// detected in `new` whose main file is new or changed (only those are read).
pub fn changes(root: &Path, old: Option<&Tree>, new: &Tree, known: &[ProjectArtifactRow]) -> ProjectChanges {
    let empty = Tree::default();
    let old = old.unwrap_or(&empty);
    let mut out = tree_changes(old, new);
    detect_within(root, old, new, known, &[String::new()], &mut out);
    out
}

/// The tree rows that differ between `old` and `new`: both walked once, side
/// by side in path order.
fn tree_changes(old: &Tree, new: &Tree) -> ProjectChanges {
    let mut out = ProjectChanges::default();
    for (path, was, now) in side_by_side(&old.dirs, &new.dirs) {
        match now {
            Some(&mtime) if mtime < 0 || was != Some(&mtime) => out.dirs_set.push((path.clone(), mtime)),
            Some(_) => {}
            None => out.dirs_removed.push(path.clone()),
        }
    }
    for (path, was, now) in side_by_side(&old.files, &new.files) {
        match now {
            Some(stat) if tree::changed(was, stat) => out.files_set.push((path.clone(), *stat)),
            Some(_) => {}
            None => out.files_removed.push(path.clone()),
        }
    }
    out
}

/// Every key of `old` and `new` in order, with its value in each.
fn side_by_side<'a, V>(
    old: &'a BTreeMap<String, V>,
    new: &'a BTreeMap<String, V>,
) -> impl Iterator<Item = (&'a String, Option<&'a V>, Option<&'a V>)> {
    let mut old = old.iter().peekable();
    let mut new = new.iter().peekable();
    std::iter::from_fn(move || match (old.peek(), new.peek()) {
        (Some((a, _)), Some((b, _))) if a < b => old.next().map(|(k, v)| (k, Some(v), None)),
        (Some((a, _)), Some((b, _))) if a > b => new.next().map(|(k, v)| (k, None, Some(v))),
        (Some(_), Some(_)) => {
            let (k, v) = old.next()?;
            Some((k, Some(v), new.next().map(|(_, n)| n)))
        }
        (Some(_), None) => old.next().map(|(k, v)| (k, Some(v), None)),
        (None, Some(_)) => new.next().map(|(k, v)| (k, None, Some(v))),
        (None, None) => None,
    })
}

/// The parts of the project whose artifacts the tree changes `diff` (from
/// `old` to `new`) can touch, outermost only: for each path that came, went
/// or changed, the nearest skill at or above its folder in either tree (the
/// skill owns it), else the path itself; for a skill file, whose folder
/// becomes or stops being a skill, the nearest skill above that folder, else
/// the folder. Detection inside a region needs no path outside it, and no
/// artifact outside one can change. `""` is the whole project.
fn changed_regions(old: &Tree, diff: &ProjectChanges) -> Vec<String> {
    // Folders holding a skill file before or after: those of `new` that `old`
    // lacks are among the files the diff sets.
    let roots: HashSet<&str> = old
        .files
        .keys()
        .chain(diff.files_set.iter().map(|(path, _)| path))
        .filter_map(|path| scan::skill_file_folder(path))
        .collect();
    let nearest_root = |dir| nearest_in(&roots, dir);
    let added_dirs = diff
        .dirs_set
        .iter()
        .map(|(p, _)| p)
        .filter(|p| !old.dirs.contains_key(*p));
    let files = diff.files_set.iter().map(|(p, _)| p).chain(&diff.files_removed);
    let mut regions: Vec<&str> = added_dirs
        .chain(&diff.dirs_removed)
        .map(|dir| nearest_root(parent(dir)).unwrap_or(dir))
        .collect();
    for file in files {
        let region = match scan::skill_file_folder(file).filter(|dir| scan::counts_as_skill_root(dir)) {
            Some("") => "",
            Some(dir) => nearest_root(parent(dir)).unwrap_or(dir),
            None => nearest_root(parent(file)).unwrap_or(file),
        };
        regions.push(region);
    }
    // By path parts, so a folder's regions follow it before any name that
    // sorts between (`a/b`, `a/b/c`, `a/b-c`).
    regions.sort_unstable_by(|a, b| a.split('/').cmp(b.split('/')));
    let mut outermost: Vec<String> = Vec::new();
    for region in regions {
        let inside_last = outermost.last().is_some_and(|last| {
            last.is_empty() || region == last || region.strip_prefix(last.as_str()).is_some_and(|r| r.starts_with('/'))
        });
        if !inside_last {
            outermost.push(region.to_string());
        }
    }
    outermost
}

/// The nearest skill root at or above the folder `dir`, among the folders
/// `roots` that hold a skill file.
fn nearest_in<'a>(roots: &HashSet<&str>, mut dir: &'a str) -> Option<&'a str> {
    loop {
        if roots.contains(dir) && scan::counts_as_skill_root(dir) {
            return Some(dir);
        }
        if dir.is_empty() {
            return None;
        }
        dir = parent(dir);
    }
}

/// The folder holding `path` (`""` at the root).
fn parent(path: &str) -> &str {
    path.rfind('/').map_or("", |i| &path[..i])
}

/// Adds to `out` the artifacts detected in `new` within `regions` whose main
/// file is new or changed since `old` (only those are read), and the `known`
/// artifacts (those recorded within `regions`) no longer found.
fn detect_within(
    root: &Path,
    old: &Tree,
    new: &Tree,
    known: &[ProjectArtifactRow],
    regions: &[String],
    out: &mut ProjectChanges,
) {
    let known: HashMap<(ArtifactKind, &str), &ProjectArtifactRow> =
        known.iter().map(|a| ((a.kind, a.path.as_str()), a)).collect();
    let mut seen = HashSet::new();
    let paths: Vec<&str> = regions
        .iter()
        .flat_map(|region| tree::paths_within(&new.files, region))
        .collect();
    for found in scan::detect(&paths, &BTreeMap::new(), &root_name(root)) {
        seen.insert((found.kind, found.path.clone()));
        let unchanged = known.get(&(found.kind, found.path.as_str())).is_some_and(|k| {
            k.main_file == found.main_file
                && k.has_vendor_agent == found.has_vendor_agent
                && new
                    .files
                    .get(&found.main_file)
                    .is_some_and(|stat| !tree::changed(old.files.get(&found.main_file), stat))
        });
        if unchanged {
            continue;
        }
        let analysis = scan::analyze(&found, read_main(root, &found.main_file).as_deref());
        out.artifacts_set.push(ProjectArtifactRow {
            kind: found.kind,
            path: found.path,
            name: analysis.name,
            description: analysis.description,
            main_file: found.main_file,
            has_vendor_agent: found.has_vendor_agent,
        });
    }
    out.artifacts_removed = known
        .keys()
        .filter(|(kind, path)| !seen.contains(&(*kind, path.to_string())))
        .map(|(kind, path)| (*kind, path.to_string()))
        .collect();
}

/// A main file's bytes: its relative path checked part by part, read only when
/// it and its folder are no links, `None` when refused, missing or over 16 MiB.
fn read_main(root: &Path, relative: &str) -> Option<Vec<u8>> {
    crate::paths::check_relative(relative).ok()?;
    crate::paths::read_plain(&root.join(relative), MAX_MAIN_BYTES)
        .ok()
        .flatten()
}

/// The name a skill whose `SKILL.md` sits at the project's root takes: its folder's.
pub fn root_name(root: &Path) -> String {
    root.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `text` to the file `rel` below `root`, making its folders.
    fn write_in(root: &Path, rel: &str, text: &str) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// While held, the calling thread (and threads it starts) is refused what
    /// file permissions refuse, as a user without privileges is, even when
    /// the tests run as root (capabilities are per thread).
    pub(super) struct PermissionsApply(rustix::thread::CapabilitySets);

    impl PermissionsApply {
        pub(super) fn new() -> Self {
            use rustix::thread::CapabilitySet;
            let held = rustix::thread::capabilities(None).unwrap();
            let mut sets = held;
            sets.effective -= CapabilitySet::DAC_OVERRIDE | CapabilitySet::DAC_READ_SEARCH;
            rustix::thread::set_capabilities(None, sets).unwrap();
            PermissionsApply(held)
        }
    }

    impl Drop for PermissionsApply {
        fn drop(&mut self) {
            let _ = rustix::thread::set_capabilities(None, self.0);
        }
    }

    /// A folder that cannot be listed (no permission) leaves its artifacts
    /// out of the catalog's record without failing the check (packaging
    /// fails instead), and they come back once it can be
    /// listed again, though a change of permissions moves no mtime: on the
    /// first walk, and on a refresh after the folder was read before.
    #[test]
    fn a_folder_that_cannot_be_read_is_listed_again_once_it_can() {
        use std::os::unix::fs::PermissionsExt;
        let _permissions = PermissionsApply::new();
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("project");
        write_in(&root, "skills/a/SKILL.md", "---\nname: a\n---\n");
        write_in(&root, "skills/x/SKILL.md", "---\nname: x\n---\n");
        // Old enough to be trusted, so the record keeps every mtime.
        let past = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        for path in [
            "skills/a/SKILL.md",
            "skills/x/SKILL.md",
            "skills/a",
            "skills/x",
            "skills",
            "",
        ] {
            std::fs::File::open(root.join(path))
                .unwrap()
                .set_modified(past)
                .unwrap();
        }
        let mode =
            |mode: u32| std::fs::set_permissions(root.join("skills/x"), std::fs::Permissions::from_mode(mode)).unwrap();
        let mut catalog = Catalog::open(&dir.path().join("catalog.db")).unwrap();
        let paths = |catalog: &mut Catalog| -> Vec<String> {
            let id = current(catalog, &root, false).unwrap();
            catalog
                .project_artifacts(id)
                .unwrap()
                .into_iter()
                .map(|a| a.path)
                .collect()
        };
        mode(0o000);
        // Packaging must not miss files: its walk fails, naming the folder.
        let refused = tree::walk(&root, 100, tree::Unreadable::Fail).unwrap_err();
        assert_eq!(refused.code(), ErrorCode::IoError);
        assert!(refused.message().contains("`skills/x`"), "{}", refused.message());
        assert_eq!(paths(&mut catalog), ["skills/a"], "a first walk");
        mode(0o755);
        assert_eq!(paths(&mut catalog), ["skills/a", "skills/x"]);
        mode(0o000);
        assert_eq!(paths(&mut catalog), ["skills/a"], "a refresh");
        mode(0o755);
        assert_eq!(paths(&mut catalog), ["skills/a", "skills/x"]);
        // Readable but not searchable: its files are out of reach.
        mode(0o400);
        assert_eq!(paths(&mut catalog), ["skills/a"], "not searchable");
        mode(0o755);
        assert_eq!(paths(&mut catalog), ["skills/a", "skills/x"]);
        // The folder holding the skills: they are out of reach, it unreadable.
        let holder =
            |mode: u32| std::fs::set_permissions(root.join("skills"), std::fs::Permissions::from_mode(mode)).unwrap();
        holder(0o000);
        assert_eq!(paths(&mut catalog), Vec::<String>::new(), "the holder");
        holder(0o755);
        assert_eq!(paths(&mut catalog), ["skills/a", "skills/x"]);
        // The root itself: an error, not an empty project.
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o000)).unwrap();
        let refused = current(&mut catalog, &root, false);
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(refused.unwrap_err().code(), ErrorCode::IoError);
        assert_eq!(paths(&mut catalog), ["skills/a", "skills/x"]);
    }

    #[test]
    fn finds_project_artifacts_and_skips_aam_state() {
        let dir = tempfile::tempdir().unwrap();
        let write = |rel: &str, text: &str| write_in(dir.path(), rel, text);
        write(".cursor/rules/style.mdc", "---\ndescription: Style\n---\n");
        write(".claude/agents/helper.md", "---\nname: helper\n---\n");
        write("CLAUDE.md", "# Project notes\n");
        write(".aam/packages/x/skills/copied/SKILL.md", "# copied\n");
        write("my-package/aam.yaml", "name: my-package\n");
        write("my-package/agents/copy.md", "# a copy\n");
        write("node_modules/p/agents/a.md", "# dep\n");
        write(".aam-create-Ab12/skills/half/SKILL.md", "---\nname: half\n---\n");
        write("ignored/agents/b.md", "# ignored\n");
        write(".gitignore", "ignored/\n");
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        let found: Vec<String> = artifacts(dir.path())
            .unwrap()
            .into_iter()
            .map(|a| format!("{} {} {}", a.kind.as_str(), a.path, a.name))
            .collect();
        assert_eq!(
            found,
            [
                "agent .claude/agents/helper.md helper",
                "instruction .cursor/rules/style.mdc style",
                "instruction CLAUDE.md claude-instructions"
            ]
        );
        let nested = dir.path().join("src/deep");
        std::fs::create_dir_all(&nested).unwrap();
        assert_eq!(root(&nested), dir.path());
    }

    /// A call checks every recorded folder and, of the files, the main files
    /// and ignore files only (a file whose name merely ends like one is not).
    #[test]
    fn a_refresh_checks_folders_main_files_and_ignore_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("project");
        for rel in [
            "skills/a/SKILL.md",
            "skills/a/refs/x.md",
            "skills/a/.ignore",
            "skills/b/SKILL.md",
            ".gitignore",
            "notes.gitignore",
            ".claude/agents/helper.md",
        ] {
            let path = root.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "---\nname: n\n---\n").unwrap();
        }
        let mut catalog = Catalog::open(&dir.path().join("catalog.db")).unwrap();
        let id = current(&mut catalog, &root, false).unwrap();
        let mut files: Vec<String> = catalog
            .project_checked_files(id)
            .unwrap()
            .into_iter()
            .map(|(path, _)| path)
            .collect();
        files.sort();
        assert_eq!(
            files,
            [
                ".claude/agents/helper.md",
                ".gitignore",
                "skills/a/.ignore",
                "skills/a/SKILL.md",
                "skills/b/SKILL.md"
            ]
        );
        let mut dirs: Vec<String> = catalog
            .project_dir_entries(id)
            .unwrap()
            .into_iter()
            .map(|(path, _)| path)
            .collect();
        dirs.sort();
        assert_eq!(
            dirs,
            [
                "",
                ".claude",
                ".claude/agents",
                "skills",
                "skills/a",
                "skills/a/refs",
                "skills/b"
            ]
        );
    }

    #[test]
    fn a_folder_s_entries_are_itself_and_what_is_directly_in_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("project");
        for rel in [
            "skills/a/SKILL.md",
            "skills/a/refs/x.md",
            "skills/a-b/SKILL.md",
            "skills0/SKILL.md",
            "top.md",
        ] {
            let path = root.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "---\nname: n\n---\n").unwrap();
        }
        let mut catalog = Catalog::open(&dir.path().join("catalog.db")).unwrap();
        let id = current(&mut catalog, &root, false).unwrap();
        let within = |dir: &str| {
            let mut paths: Vec<String> = catalog
                .project_entries_in(id, dir)
                .unwrap()
                .into_iter()
                .map(|(path, entry)| {
                    format!(
                        "{path}{}",
                        if matches!(entry, tree::Recorded::Dir(_)) {
                            "/"
                        } else {
                            ""
                        }
                    )
                })
                .collect();
            paths.sort();
            paths
        };
        assert_eq!(within("skills/a"), ["skills/a/", "skills/a/SKILL.md", "skills/a/refs/"]);
        assert_eq!(within("skills"), ["skills/", "skills/a-b/", "skills/a/"]);
        assert_eq!(within(""), ["/", "skills/", "skills0/", "top.md"]);
        assert!(within("gone").is_empty());
    }

    /// After every kind of change, the record `current` keeps equals the record
    /// of a fresh walk: in-place edits, saves by rename, new and removed skills.
    #[test]
    fn the_kept_record_equals_a_fresh_walk() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("project");
        let write = |rel: &str, text: &str| write_in(&root, rel, text);
        write("skills/a/SKILL.md", "---\nname: a\ndescription: first\n---\n");
        write("skills/b/SKILL.md", "---\nname: b\n---\n");
        write(".claude/agents/helper.md", "---\nname: helper\n---\n");
        write("skills/b/notes", "a file that becomes a folder\n");
        write(".gitignore", "*.log\n");
        let mut kept = Catalog::open(&dir.path().join("kept.db")).unwrap();
        let record = |catalog: &mut Catalog| {
            let id = current(catalog, &root, false).unwrap();
            recorded(catalog, id)
        };
        let fresh = || fresh_record(&root, &dir.path().join("fresh.db"));
        let steps: [(&str, &dyn Fn()); 14] = [
            ("nothing", &|| {}),
            ("edit in place", &|| {
                write("skills/a/SKILL.md", "---\nname: a2\ndescription: second\n---\n")
            }),
            ("save by rename", &|| {
                write("skills/b/tmp", "---\nname: b2\n---\n");
                std::fs::rename(root.join("skills/b/tmp"), root.join("skills/b/SKILL.md")).unwrap();
            }),
            ("new skill", &|| write("skills/c/SKILL.md", "---\nname: c\n---\n")),
            ("removed agent", &|| {
                std::fs::remove_file(root.join(".claude/agents/helper.md")).unwrap()
            }),
            ("ignored file", &|| write("skills/c/debug.log", "ignored\n")),
            ("file becomes a folder", &|| {
                std::fs::remove_file(root.join("skills/b/notes")).unwrap();
                write("skills/b/notes/one.md", "a note\n");
            }),
            ("vendor agent file in a skill", &|| {
                write("skills/a/agents/openai.yaml", "interface: {}\n")
            }),
            ("skill made in a skill's agents folder", &|| {
                write("skills/a/agents/SKILL.md", "---\nname: inner\n---\n")
            }),
            ("that skill file removed", &|| {
                std::fs::remove_file(root.join("skills/a/agents/SKILL.md")).unwrap()
            }),
            ("agent in a folder that becomes a skill", &|| {
                write("tools/agents/x.md", "---\nname: x\n---\n");
                age(&root);
                current(&mut Catalog::open(&dir.path().join("kept.db")).unwrap(), &root, false).unwrap();
                write("tools/skill.md", "---\nname: tools\n---\n");
            }),
            ("that skill file removed, the agent back", &|| {
                std::fs::remove_file(root.join("tools/skill.md")).unwrap()
            }),
            ("new package folder", &|| {
                write("skills/pkg/aam.yaml", "name: pkg\n");
                write("skills/pkg/skills/copy/SKILL.md", "---\nname: copy\n---\n");
            }),
            ("folder becomes a package", &|| write("skills/a/aam.yaml", "name: a\n")),
        ];
        for (step, change) in steps {
            age(&root);
            record(&mut kept);
            change();
            let now = record(&mut kept);
            assert_eq!(now.2, now.0.len() as u64, "count after: {step}");
            assert_eq!(now, fresh(), "after: {step}");
        }
        let names: Vec<String> = record(&mut kept).0.into_iter().map(|a| a.name).collect();
        assert_eq!(names, ["x", "b2", "c"]);
    }

    /// A refresh told which folders changed (as a watcher tells it) reads
    /// only the part of the record around them, and leaves the record a fresh
    /// walk makes: a folder removed with everything in it when only the
    /// folder holding it is named, a file added deep in a skill, a folder
    /// becoming a skill over the agents in it.
    #[test]
    fn a_refresh_within_named_folders_equals_a_fresh_walk() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("project");
        let write = |rel: &str, text: &str| write_in(&root, rel, text);
        write("skills/a/SKILL.md", "---\nname: a\n---\n");
        write("skills/a/references/one.md", "one\n");
        write("deep/skills/d/SKILL.md", "---\nname: d\n---\n");
        write("deep/skills/d/scripts/run.sh", "true\n");
        write("tools/agents/x.md", "---\nname: x\n---\n");
        let fresh = || fresh_record(&root, &dir.path().join("fresh.db"));
        let mut kept = Catalog::open(&dir.path().join("kept.db")).unwrap();
        current(&mut kept, &root, false).unwrap();
        // What changes, the folders named, and the change.
        type Step<'a> = (&'a str, &'a [&'a str], &'a dyn Fn());
        let steps: [Step; 5] = [
            ("a folder of skills removed, the root named", &[""], &|| {
                std::fs::remove_dir_all(root.join("deep")).unwrap()
            }),
            ("a skill with a subfolder added", &["skills"], &|| {
                write("skills/b/SKILL.md", "---\nname: b\n---\n");
                write("skills/b/references/two.md", "two\n");
            }),
            ("a file added deep in a skill", &["skills/a/references"], &|| {
                write("skills/a/references/three.md", "three\n")
            }),
            ("a folder becomes a skill over its agents", &["tools"], &|| {
                write("tools/SKILL.md", "---\nname: tools\n---\n")
            }),
            ("a skill's subfolder removed", &["skills/b"], &|| {
                std::fs::remove_dir_all(root.join("skills/b/references")).unwrap()
            }),
        ];
        for (step, named, change) in steps {
            age(&root);
            let id = current(&mut kept, &root, false).unwrap();
            let head = kept.project_head(&key(&root)).unwrap().unwrap();
            change();
            let named = named.iter().map(|d| (d.to_string(), Touched::Whole)).collect();
            let within = refresh_within(&mut kept, &root, head, &named, usize::MAX)
                .unwrap()
                .unwrap_or_else(|| panic!("the whole tree was checked after: {step}"));
            assert!(within.refreshed.version.is_some(), "after: {step}");
            assert_eq!(recorded(&kept, id), fresh(), "after: {step}");
        }
        let id = current(&mut kept, &root, false).unwrap();
        let names: Vec<String> = recorded(&kept, id).0.into_iter().map(|a| a.name).collect();
        assert_eq!(names, ["a", "b", "tools"]);
    }

    /// A folder checked by the names its events gave reads and compares only
    /// those entries: what they name is recorded as a fresh walk records it;
    /// a change no name covers is not seen then, and the folder's mtime is
    /// recorded unknown, so the next check without a watcher lists it whole
    /// and sees that change too.
    #[test]
    fn a_folder_checked_by_names_reads_only_those_entries() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("project");
        let write = |rel: &str, text: &str| {
            let path = root.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        for name in ["a", "b", "c"] {
            write(&format!("skills/{name}/SKILL.md"), &format!("---\nname: {name}\n---\n"));
        }
        let fresh = || fresh_record(&root, &dir.path().join("fresh.db"));
        let mut kept = Catalog::open(&dir.path().join("kept.db")).unwrap();
        let named = |dir: &str, names: &[&str]| {
            let names = names.iter().map(|n| n.to_string()).collect();
            BTreeMap::from([(dir.to_string(), Touched::Named(names))])
        };
        type Step<'a> = (&'a str, BTreeMap<String, Touched>, &'a dyn Fn());
        let steps: [Step; 5] = [
            ("a skill added", named("skills", &["d"]), &|| {
                write("skills/d/SKILL.md", "---\nname: d\n---\n")
            }),
            ("a skill removed", named("skills", &["b"]), &|| {
                std::fs::remove_dir_all(root.join("skills/b")).unwrap()
            }),
            (
                "a skill file edited, with a name that changed nothing",
                named("skills/a", &["SKILL.md", "gone"]),
                &|| write("skills/a/SKILL.md", "---\nname: a\ndescription: edited\n---\n"),
            ),
            ("a file beside a skill file", named("skills/c", &["notes.md"]), &|| {
                write("skills/c/notes.md", "notes\n")
            }),
            ("a skill folder replaced by a file", named("skills", &["c"]), &|| {
                std::fs::remove_dir_all(root.join("skills/c")).unwrap();
                write("skills/c", "a file now\n");
            }),
        ];
        for (step, touched, change) in steps {
            age(&root);
            let id = current(&mut kept, &root, false).unwrap();
            let head = kept.project_head(&key(&root)).unwrap().unwrap();
            change();
            let within = refresh_within(&mut kept, &root, head, &touched, usize::MAX)
                .unwrap()
                .unwrap_or_else(|| panic!("the whole tree was checked after: {step}"));
            assert!(within.refreshed.version.is_some(), "after: {step}");
            assert_eq!(recorded(&kept, id), fresh(), "after: {step}");
        }
        // Two skills added, one named: only that one is seen.
        age(&root);
        let id = current(&mut kept, &root, false).unwrap();
        let head = kept.project_head(&key(&root)).unwrap().unwrap();
        write("skills/e/SKILL.md", "---\nname: e\n---\n");
        write("skills/f/SKILL.md", "---\nname: f\n---\n");
        age(&root);
        refresh_within(&mut kept, &root, head, &named("skills", &["e"]), usize::MAX)
            .unwrap()
            .unwrap();
        let names = |catalog: &Catalog| -> Vec<String> {
            catalog
                .project_artifacts(id)
                .unwrap()
                .into_iter()
                .map(|a| a.name)
                .collect()
        };
        assert_eq!(names(&kept), ["a", "d", "e"]);
        let skills = kept.project_entries_named(id, "skills", &BTreeSet::new()).unwrap();
        assert_eq!(skills, [("skills".to_string(), tree::Recorded::Dir(-1))]);
        current(&mut kept, &root, false).unwrap();
        assert_eq!(names(&kept), ["a", "d", "e", "f"]);
        assert_eq!(recorded(&kept, id), fresh());
    }

    /// What the catalog records of project `id`: its artifacts, its paths
    /// with whether each is a folder (stat data of files that are no main
    /// file is not kept current, by design) and its kept artifact count.
    fn recorded(catalog: &Catalog, id: ProjectId) -> (Vec<ProjectArtifactRow>, Vec<(String, bool)>, u64) {
        let mut paths: Vec<(String, bool)> = catalog
            .project_entries(id)
            .unwrap()
            .into_iter()
            .map(|(path, entry)| (path, matches!(entry, tree::Recorded::Dir(_))))
            .collect();
        paths.sort();
        let count = catalog.project_artifact_count(id).unwrap();
        (catalog.project_artifacts(id).unwrap(), paths, count)
    }

    /// What a fresh walk of `root` records, in a new catalog at `db`.
    fn fresh_record(root: &Path, db: &Path) -> (Vec<ProjectArtifactRow>, Vec<(String, bool)>, u64) {
        let _ = std::fs::remove_file(db);
        let mut catalog = Catalog::open(db).unwrap();
        let id = current(&mut catalog, root, false).unwrap();
        recorded(&catalog, id)
    }

    /// A change is detected again only where it can move an artifact: the
    /// skill that owns the changed path, else the path itself; a skill file
    /// counts for the skill around its folder, else that folder.
    #[test]
    fn only_the_regions_a_change_touches_are_detected_again() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("project");
        let write = |rel: &str| {
            let path = root.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "---\nname: n\n---\n").unwrap();
        };
        let remove = |rel: &str| std::fs::remove_file(root.join(rel)).unwrap();
        for rel in [
            "skills/a/SKILL.md",
            "skills/a/refs/x.md",
            "skills/b/SKILL.md",
            "agents/old.md",
            "docs/keep.md",
        ] {
            write(rel);
        }
        age(&root);
        let regions_after = |change: &dyn Fn()| {
            let old = tree::walk(&root, 100, tree::Unreadable::Fail).unwrap();
            change();
            let new = tree::walk(&root, 100, tree::Unreadable::Fail).unwrap();
            let regions = changed_regions(&old, &tree_changes(&old, &new));
            age(&root);
            regions
        };
        type Case<'a> = (&'a str, &'a dyn Fn(), &'a [&'a str]);
        let cases: [Case; 8] = [
            ("new skill", &|| write("skills/c/SKILL.md"), &["skills/c"]),
            ("file in a skill", &|| write("skills/a/refs/deep/y.md"), &["skills/a"]),
            ("skill in a skill", &|| write("skills/a/refs/SKILL.md"), &["skills/a"]),
            ("skill file gone", &|| remove("skills/b/SKILL.md"), &["skills/b"]),
            (
                "agents added and removed",
                &|| {
                    write("agents/new.md");
                    remove("agents/old.md");
                },
                &["agents/new.md", "agents/old.md"],
            ),
            (
                "new folder of skills",
                &|| {
                    write("more/x/SKILL.md");
                    write("more/y/SKILL.md");
                },
                &["more"],
            ),
            (
                "a folder, one inside it and one whose name sorts between",
                &|| {
                    write("docs/b/x.md");
                    write("docs/b-c/y.md");
                    write("docs/b/c/z.md");
                },
                &["docs/b", "docs/b-c"],
            ),
            ("the project becomes a skill", &|| write("SKILL.md"), &[""]),
        ];
        for (case, change, expected) in cases {
            assert_eq!(regions_after(change), expected, "{case}");
        }
    }

    /// The walk applies the project's ignore files as git does:
    /// `.git/info/exclude` anchored at the root, each folder's `.gitignore`
    /// for what is below it, and `.ignore` over `.gitignore`.
    #[test]
    fn the_walk_applies_the_project_s_ignore_files() {
        let dir = tempfile::tempdir().unwrap();
        let write = |rel: &str, text: &str| write_in(dir.path(), rel, text);
        write(".git/info/exclude", "/drafts/\n");
        write(".gitignore", "*.log\n");
        write(".ignore", "!keep.log\n");
        write("skills/a/.gitignore", "scratch.md\n");
        for file in [
            "drafts/agents/x.md",
            "nested/drafts/agents/y.md",
            "skills/a/other.log",
            "skills/a/keep.log",
            "skills/a/scratch.md",
            "skills/b/scratch.md",
        ] {
            write(file, "text\n");
        }
        let tree = tree::walk(dir.path(), 100, tree::Unreadable::Fail).unwrap();
        let files: Vec<&str> = tree
            .files
            .keys()
            .map(String::as_str)
            .filter(|path| !path.starts_with(".git/"))
            .collect();
        assert_eq!(
            files,
            [
                ".gitignore",
                ".ignore",
                "nested/drafts/agents/y.md",
                "skills/a/.gitignore",
                "skills/a/keep.log",
                "skills/b/scratch.md"
            ]
        );
    }

    /// An ignore file is never read through a link (the `ignore` crate would
    /// open `/dev/zero` and read until memory runs out), nor when it is not a
    /// plain file or is over 1 MiB: the root's fails the walk, a folder's is
    /// left out of the catalog's record (packaging fails instead) until the
    /// file is replaced, on a refresh too.
    #[test]
    fn an_ignore_file_that_is_a_link_or_too_large_is_never_read() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("project");
        write_in(&root, "skills/a/SKILL.md", "---\nname: a\n---\n");
        write_in(&root, "skills/x/SKILL.md", "---\nname: x\n---\n");
        write_in(dir.path(), "elsewhere", "*.md\n");
        age(&root);
        let mut catalog = Catalog::open(&dir.path().join("catalog.db")).unwrap();
        let paths = |catalog: &mut Catalog| -> Vec<String> {
            let id = current(catalog, &root, false).unwrap();
            let artifacts = catalog.project_artifacts(id).unwrap().into_iter();
            artifacts.map(|a| a.path).collect()
        };
        assert_eq!(paths(&mut catalog), ["skills/a", "skills/x"]);
        let link = root.join("skills/x/.gitignore");
        for target in ["/dev/zero", dir.path().join("elsewhere").to_str().unwrap()] {
            std::os::unix::fs::symlink(target, &link).unwrap();
            let refused = tree::walk(&root, 100, tree::Unreadable::Fail).unwrap_err();
            assert_eq!(refused.code(), ErrorCode::IoError);
            assert!(
                refused.message().contains("`skills/x/.gitignore`") && refused.message().contains("is a link"),
                "{}",
                refused.message()
            );
            assert_eq!(paths(&mut catalog), ["skills/a"], "a refresh: {target}");
            std::fs::remove_file(&link).unwrap();
            assert_eq!(paths(&mut catalog), ["skills/a", "skills/x"]);
        }
        std::fs::create_dir(root.join("skills/x/.ignore")).unwrap();
        assert_eq!(paths(&mut catalog), ["skills/a"], "a folder");
        std::fs::remove_dir(root.join("skills/x/.ignore")).unwrap();
        std::fs::write(&link, "#".repeat((1 << 20) + 1)).unwrap();
        age(&root);
        let refused = tree::walk(&root, 100, tree::Unreadable::Fail).unwrap_err();
        assert!(refused.message().contains("larger than 1 MiB"), "{}", refused.message());
        assert_eq!(paths(&mut catalog), ["skills/a"], "too large");
        // Shrunk in place: the folder's mtime stays, and it is listed again.
        std::fs::OpenOptions::new()
            .write(true)
            .open(&link)
            .unwrap()
            .set_len(2)
            .unwrap();
        assert_eq!(paths(&mut catalog), ["skills/a", "skills/x"]);
        // The root's: an error, not an empty project.
        std::os::unix::fs::symlink("/dev/zero", root.join(".gitignore")).unwrap();
        let refused = current(&mut catalog, &root, false).unwrap_err();
        assert_eq!(refused.code(), ErrorCode::IoError);
        assert!(refused.message().contains("`.gitignore`"), "{}", refused.message());
        assert!(refused.hint().unwrap().contains("plain file"), "{refused:?}");
    }

    /// Sets every mtime under `dir` an hour back, out of the racy window.
    fn age(dir: &Path) {
        let past = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        let mut stack = vec![dir.to_path_buf()];
        while let Some(path) = stack.pop() {
            if path.is_dir() {
                stack.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            }
            std::fs::File::open(&path).unwrap().set_modified(past).unwrap();
        }
    }

    #[test]
    fn a_refresh_reads_only_what_moved() {
        let dir = tempfile::tempdir().unwrap();
        let write = |rel: &str, text: &str| write_in(dir.path(), rel, text);
        write("skills/a/SKILL.md", "---\nname: a\n---\n");
        write("skills/b/SKILL.md", "---\nname: b\n---\n");
        age(dir.path());
        let first = tree::walk(dir.path(), 100, tree::Unreadable::Fail).unwrap();
        assert_eq!(first.files.len(), 2);
        assert!(
            first.files.values().all(|f| f.mtime_ns > 0),
            "aged stat data is trusted"
        );
        let added = changes(dir.path(), None, &first, &[]);
        assert_eq!(added.artifacts_set.len(), 2);
        assert_eq!(added.files_set.len(), 2);
        assert_eq!(tree::refresh(dir.path(), &first, 100).unwrap(), None, "nothing moved");

        // Rewritten in place with as many bytes and its mtime put back (`cp -p`,
        // `touch -r`): the inode change time still tells.
        let main = dir.path().join("skills/a/SKILL.md");
        let mtime = std::fs::metadata(&main).unwrap().modified().unwrap();
        std::fs::write(&main, "---\nname: z\n---\n").unwrap();
        std::fs::File::options()
            .write(true)
            .open(&main)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
        let rewritten = tree::refresh(dir.path(), &first, 100)
            .unwrap()
            .expect("the rewrite is seen");
        let read = changes(dir.path(), Some(&first), &rewritten, &added.artifacts_set);
        assert_eq!(read.artifacts_set[0].name, "z");
        write("skills/a/SKILL.md", "---\nname: a\n---\n");
        age(dir.path());
        let first = tree::walk(dir.path(), 100, tree::Unreadable::Fail).unwrap();

        write("skills/b/SKILL.md", "---\nname: b2\n---\n");
        write("skills/c/SKILL.md", "---\nname: c\n---\n");
        let second = tree::refresh(dir.path(), &first, 100).unwrap().unwrap();
        let moved = changes(dir.path(), Some(&first), &second, &added.artifacts_set);
        let read: Vec<(&str, &str)> = moved
            .artifacts_set
            .iter()
            .map(|a| (a.path.as_str(), a.name.as_str()))
            .collect();
        assert_eq!(read, [("skills/b", "b2"), ("skills/c", "c")], "`a` is not read again");
        assert!(moved.artifacts_removed.is_empty());

        std::fs::remove_dir_all(dir.path().join("skills/a")).unwrap();
        let third = tree::refresh(dir.path(), &second, 100).unwrap().unwrap();
        assert!(!third.dirs.contains_key("skills/a") && !third.files.contains_key("skills/a/SKILL.md"));
        let gone = changes(dir.path(), Some(&second), &third, &added.artifacts_set);
        assert_eq!(gone.artifacts_removed, [(ArtifactKind::Skill, "skills/a".to_string())]);

        let entries = |t: &Tree| -> Vec<(String, tree::Recorded)> {
            let dirs = t.dirs.iter().map(|(p, m)| (p.clone(), tree::Recorded::Dir(*m)));
            let files = t.files.iter().map(|(p, f)| (p.clone(), tree::Recorded::File(*f)));
            dirs.chain(files).collect()
        };
        age(dir.path());
        let settled = tree::walk(dir.path(), 100, tree::Unreadable::Fail).unwrap();
        assert_eq!(Tree::from_recorded(entries(&settled)), settled);
        assert!(
            tree::moved(dir.path(), &entries(&settled)).unwrap().is_empty(),
            "nothing moved"
        );
        std::fs::write(dir.path().join("skills/b/SKILL.md"), "---\nname: b3\n---\n").unwrap();
        let edit = tree::moved(dir.path(), &entries(&settled)).unwrap();
        assert_eq!(edit.len(), 1, "an edit in place: {edit:?}");
        let in_place =
            tree::restat_in_place(dir.path(), &entries(&settled), &edit, &mut tree::Listings::default()).unwrap();
        assert!(in_place.dirs.is_empty());
        assert_eq!(in_place.files[0].0, "skills/b/SKILL.md");
        age(dir.path());
        let settled = tree::walk(dir.path(), 100, tree::Unreadable::Fail).unwrap();
        std::fs::create_dir(dir.path().join("skills/d")).unwrap();
        let added = tree::moved(dir.path(), &entries(&settled)).unwrap();
        assert_eq!(added.len(), 1, "the folder holding a new one: {added:?}");
        assert_eq!(
            tree::restat_in_place(dir.path(), &entries(&settled), &added, &mut tree::Listings::default()),
            None,
            "a path came: detection must run where it came"
        );
        age(dir.path());
        let settled = tree::walk(dir.path(), 100, tree::Unreadable::Fail).unwrap();
        let file = dir.path().join("skills/b/SKILL.md");
        std::fs::write(dir.path().join("skills/b/new.tmp"), "---\nname: b4\n---\n").unwrap();
        std::fs::rename(dir.path().join("skills/b/new.tmp"), &file).unwrap();
        let saved = tree::moved(dir.path(), &entries(&settled)).unwrap();
        assert_eq!(saved.len(), 2, "saved by rename: the file and its folder: {saved:?}");
        let in_place =
            tree::restat_in_place(dir.path(), &entries(&settled), &saved, &mut tree::Listings::default()).unwrap();
        assert_eq!(
            (in_place.dirs[0].0.as_str(), in_place.files[0].0.as_str()),
            ("skills/b", "skills/b/SKILL.md")
        );

        let err = tree::walk(dir.path(), 3, tree::Unreadable::Fail).unwrap_err();
        assert_eq!(err.code(), ErrorCode::ProjectTooLarge);
    }
}
