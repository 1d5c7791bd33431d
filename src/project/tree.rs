//! The project's working tree as stat data: every folder with its mtime and every
//! file with size, mtime, inode and ctime, as the catalog records them (V10, V17).
//!
//! [`refresh`] brings a recorded tree up to date the way `git status` does with its
//! index: it lstat()s what was recorded and lists again only the folders whose mtime
//! moved (an entry was added, removed or renamed in them), walking folders that are
//! new. A change to an ignore file walks the whole tree again. Links are never
//! followed (a link is neither a file nor a folder here), `.aam/`, vendored folders,
//! ignored paths and the inside of package folders (holding an `aam.yaml`) are left
//! out, and a walk stops with `AAM_PROJECT_TOO_LARGE` past a bound. Stat data taken
//! within [`RACY_NS`] of now is recorded as unknown (`-1`) so an edit in the same
//! clock tick is still seen next call. A folder that cannot be listed for want of
//! permission is recorded empty with its mtime unknown, and an entry out of reach
//! has its folder listed again, so both are listed again until they can be read (a
//! change of permissions moves no mtime). This module reads; it writes nothing.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use crate::error::{Error, ErrorCode, Result};
use crate::packages::manifest::MANIFEST_FILE;
use crate::scan;

/// Files whose change can change what is ignored: the whole tree is walked again.
const IGNORE_FILES: [&str; 2] = [".gitignore", ".ignore"];

/// Stat data this close to now (2 s, coarser than any file system's clock) is not trusted.
pub const RACY_NS: i64 = 2_000_000_000;

/// The stat data that tells a file's edit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStat {
    /// Size in bytes.
    pub size: u64,
    /// Modification time in nanoseconds since the epoch; `-1` when too recent to trust.
    pub mtime_ns: i64,
    /// Inode number (a replaced file gets a new one).
    pub inode: u64,
    /// Inode change time in nanoseconds since the epoch (`-1` when unknown),
    /// compared as it is: an edit that keeps the size and puts the mtime back
    /// (`cp -p`, `touch -r`) still moves it, as git also checks.
    pub ctime_ns: i64,
}

impl FileStat {
    /// Stat data from its raw times (nanoseconds): an mtime too close to `now`
    /// is untrusted (`-1`), so the file is read again next time.
    fn new(size: u64, inode: u64, mtime_ns: i64, ctime_ns: i64, now: i64) -> Self {
        Self {
            size,
            mtime_ns: trusted(mtime_ns, now),
            inode,
            ctime_ns,
        }
    }
}

/// Folders (with their mtime, `-1` when too recent to trust) and files, by path
/// relative to the root (`""` is the root folder).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tree {
    /// Folders walked, and package folders (recorded, not walked into).
    pub dirs: BTreeMap<String, i64>,
    /// Files, with their stat data.
    pub files: BTreeMap<String, FileStat>,
}

impl Tree {
    /// Files and folders recorded.
    pub fn entries(&self) -> usize {
        self.dirs.len() + self.files.len()
    }
}

/// One recorded folder or file, as the catalog hands it back for a check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    /// A folder with its recorded mtime (`-1` when too recent to trust).
    Dir(i64),
    /// A file with its recorded stat data.
    File(FileStat),
}

impl Tree {
    /// The tree made of recorded entries.
    pub fn from_recorded(entries: Vec<(String, Recorded)>) -> Self {
        // Collected, not inserted one by one: the maps are built in bulk from
        // sorted runs (a path compared per level cost more than the read).
        let mut dirs = Vec::new();
        let mut files = Vec::new();
        for (path, entry) in entries {
            match entry {
                Recorded::Dir(mtime) => dirs.push((path, mtime)),
                Recorded::File(stat) => files.push((path, stat)),
            }
        }
        Tree {
            dirs: dirs.into_iter().collect(),
            files: files.into_iter().collect(),
        }
    }

    /// Records `entry` at `path`.
    pub fn insert(&mut self, path: String, entry: Recorded) {
        match entry {
            Recorded::Dir(mtime) => {
                self.dirs.insert(path, mtime);
            }
            Recorded::File(stat) => {
                self.files.insert(path, stat);
            }
        }
    }

    /// Whether a folder or file (as `entry` is) is recorded at `path`.
    pub fn holds(&self, path: &str, entry: &Recorded) -> bool {
        match entry {
            Recorded::Dir(_) => self.dirs.contains_key(path),
            Recorded::File(_) => self.files.contains_key(path),
        }
    }
}

/// A recorded entry whose disk state differs from its record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Moved {
    /// Its path relative to the root.
    pub path: String,
    /// What the record says.
    pub was: Recorded,
    /// What the disk holds there now (`None`: gone, or no longer the same kind of entry).
    pub now: Option<Recorded>,
}

/// The recorded entries that moved on disk: every entry lstat()ed (over all
/// cores, relative to the open root) and compared with its record, with no map
/// built. An entry recorded as too recent to trust is always reported. The
/// common call finds nothing and the caller stops there.
pub fn moved(root: &Path, entries: &[(String, Recorded)]) -> Result<Vec<Moved>> {
    let now = now_ns();
    let at = At::open(root)?;
    let check = |(path, was): &(String, Recorded)| {
        let (recorded_mtime, on_disk) = match *was {
            Recorded::Dir(mtime) => (mtime, at.dir_mtime(path, now).map(Recorded::Dir)),
            Recorded::File(stat) => (stat.mtime_ns, at.file_stat(path, now).map(Recorded::File)),
        };
        (recorded_mtime < 0 || on_disk != Some(*was)).then(|| Moved {
            path: path.clone(),
            was: *was,
            now: on_disk,
        })
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8);
    let chunk = entries.len().div_ceil(threads).max(4096);
    std::thread::scope(|scope| {
        let workers: Vec<_> = entries
            .chunks(chunk)
            .map(|part| scope.spawn(move || part.iter().filter_map(check).collect::<Vec<_>>()))
            .collect();
        let mut found = Vec::new();
        for worker in workers {
            found.extend(worker.join().map_err(|_| checking_failed())?);
        }
        Ok(found)
    })
}

/// The error of a check of the project's files that panicked.
pub fn checking_failed() -> Error {
    Error::new(ErrorCode::Internal, "checking the project's files failed")
        .with_hint("run the command again; if it persists, report it")
}

/// The new stat data of folders and files that moved in place.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InPlace {
    /// Folders with their new mtime.
    pub dirs: Vec<(String, i64)>,
    /// Files with their new stat data.
    pub files: Vec<(String, FileStat)>,
}

/// When what `moved` reports leaves every path in place (files edited, folders
/// whose listing still holds exactly the folders and files `recorded` in them, no
/// ignore file touched or refused), the new stat data of the moved folders and files; `None`
/// when a path may have come or gone, and [`apply`] must find out (with the
/// listings taken here, in `listings`).
pub fn restat_in_place(
    root: &Path,
    recorded: &[(String, Recorded)],
    moved: &[Moved],
    listings: &mut Listings,
) -> Option<InPlace> {
    let mut dirs = Vec::new();
    let mut files = Vec::new();
    for m in moved {
        match (m.was, m.now?) {
            (Recorded::Dir(_), Recorded::Dir(mtime)) => dirs.push((m.path.clone(), mtime)),
            (Recorded::File(_), Recorded::File(stat)) if !is_ignore_file(&m.path) => files.push((m.path.clone(), stat)),
            _ => return None,
        }
    }
    if !dirs.is_empty() {
        let mut children: HashMap<&str, Vec<(&str, bool)>> =
            dirs.iter().map(|(d, _)| (d.as_str(), Vec::new())).collect();
        for (path, entry) in recorded {
            if path.is_empty() {
                continue;
            }
            let (parent, name) = path.rsplit_once('/').unwrap_or(("", path));
            if let Some(listed) = children.get_mut(parent) {
                listed.push((name, matches!(entry, Recorded::Dir(_))));
            }
        }
        let now = now_ns();
        for (dir, mut expected) in children {
            // A link is no entry of a listing: one that came as an ignore
            // file leaves the folder out ([`Walker::relist`]).
            if refused_ignore_file(&root.join(dir)).is_some() {
                return None;
            }
            let listed = listings.get_or_list(root, dir, now)?;
            expected.retain(|(name, _)| listed.covers(name));
            let listed = &listed.entries;
            if listed.len() != expected.len() {
                return None;
            }
            expected.sort_unstable();
            if listed
                .iter()
                .zip(&expected)
                .any(|((n, d), (e, f))| (n.as_str(), *d) != (*e, *f))
            {
                return None;
            }
        }
    }
    Some(InPlace { dirs, files })
}

/// Folder listings taken once per refresh: [`restat_in_place`] lists the moved
/// folders and [`apply`] takes the same listings again. Each holds the folder's
/// mtime read before it was listed (a change after the listing moves it again)
/// and its entries in name order; `None` when the folder could not be listed.
#[derive(Debug, Default)]
pub struct Listings(HashMap<String, Option<Listed>>);

/// A folder's mtime and its entries (name, is a folder), by name.
#[derive(Debug)]
struct Listed {
    mtime: i64,
    entries: Vec<(String, bool)>,
    /// When only these names were listed (see [`Listings::list_named`]): the
    /// entries recorded under other names are taken as they are.
    only: Option<BTreeSet<String>>,
}

impl Listed {
    /// Whether the listing covers the entry `name`.
    fn covers(&self, name: &str) -> bool {
        self.only.as_ref().is_none_or(|only| only.contains(name))
    }
}

impl Listings {
    fn get_or_list(&mut self, root: &Path, dir: &str, now: i64) -> Option<&Listed> {
        self.0
            .entry(dir.to_string())
            .or_insert_with(|| list_now(root, dir, now))
            .as_ref()
    }

    fn take_or_list(&mut self, root: &Path, dir: &str, now: i64) -> Option<Listed> {
        self.0.remove(dir).unwrap_or_else(|| list_now(root, dir, now))
    }

    /// Takes the folder `dir` (relative) as listing only its entries `names`
    /// (each lstat()ed: the other entries are known unchanged), with its mtime
    /// unknown (`-1`).
    pub fn list_named(&mut self, root: &Path, dir: &str, names: &BTreeSet<String>) {
        let full = root.join(dir);
        let entries = names
            .iter()
            .filter_map(|name| {
                let kind = std::fs::symlink_metadata(full.join(name)).ok()?.file_type();
                (kind.is_dir() || kind.is_file()).then(|| (name.clone(), kind.is_dir()))
            })
            .collect();
        let only = Some(names.clone());
        self.0.insert(
            dir.to_string(),
            Some(Listed {
                mtime: -1,
                entries,
                only,
            }),
        );
    }
}

/// The folder `dir` (relative) as it is now: its mtime, then its entries.
fn list_now(root: &Path, dir: &str, now: i64) -> Option<Listed> {
    let full = root.join(dir);
    let mtime = dir_mtime(&full, now)?;
    let mut entries = listing(&full)?;
    entries.sort_unstable();
    Some(Listed {
        mtime,
        entries,
        only: None,
    })
}

/// The folders and plain files directly in `dir` (links, others and names that
/// are not UTF-8 left out, as the walk leaves them out), `None` when it cannot be
/// listed.
fn listing(dir: &Path) -> Option<Vec<(String, bool)>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).ok()? {
        let entry = entry.ok()?;
        let kind = entry.file_type().ok()?;
        // Names that are not UTF-8 are left out, as the walk leaves them out.
        if let (true, Ok(name)) = (kind.is_dir() || kind.is_file(), entry.file_name().into_string()) {
            out.push((name, kind.is_dir()));
        }
    }
    Some(out)
}

/// Whether a file recorded as `old` must be read again now that it is `new`.
pub fn changed(old: Option<&FileStat>, new: &FileStat) -> bool {
    old.is_none_or(|old| old.mtime_ns < 0 || new.mtime_ns < 0 || old != new)
}

/// The tree at `root` now: `previous` brought up to date, or `None` when
/// nothing moved (and nothing in it is too recent to trust). Fails with
/// `AAM_PROJECT_TOO_LARGE` past `max_entries`.
pub fn refresh(root: &Path, previous: &Tree, max_entries: usize) -> Result<Option<Tree>> {
    let dirs = previous.dirs.iter().map(|(p, m)| (p.clone(), Recorded::Dir(*m)));
    let files = previous.files.iter().map(|(p, f)| (p.clone(), Recorded::File(*f)));
    let entries: Vec<(String, Recorded)> = dirs.chain(files).collect();
    let moved = moved(root, &entries)?;
    if moved.is_empty() {
        return Ok(None);
    }
    match apply(root, previous.clone(), &moved, max_entries, Listings::default())? {
        Some(tree) => Ok(Some(tree)),
        None => walk(root, max_entries, Unreadable::LeaveOut).map(Some),
    }
}

/// `tree` brought up to date with what [`moved`] found: files take their new
/// stat data (or go), folders whose mtime moved are listed again (parents
/// first, each from its listing in `listings` when one was taken), new folders
/// walked. `tree` may hold only part of the record: the entries of the moved
/// folders and whatever the caller needs besides; the bound then counts what
/// it holds. `None` when an ignore file came, went or changed: the whole tree
/// must be walked again ([`walk`]).
pub fn apply(
    root: &Path,
    mut tree: Tree,
    moved: &[Moved],
    max_entries: usize,
    listings: Listings,
) -> Result<Option<Tree>> {
    let now = now_ns();
    let mut dirs = Vec::new();
    for m in moved {
        match (m.was, m.now) {
            (Recorded::File(_), _) if is_ignore_file(&m.path) => return Ok(None),
            (Recorded::File(_), Some(Recorded::File(stat))) => {
                tree.files.insert(m.path.clone(), stat);
            }
            // Gone, no longer a file, or out of reach (its folder made
            // unreadable, which moves no mtime): its folder is listed again.
            (Recorded::File(_), _) => {
                tree.files.remove(&m.path);
                dirs.push(parent_of(&m.path));
            }
            (Recorded::Dir(_), now) => {
                dirs.push(m.path.as_str());
                if now.is_none() && !m.path.is_empty() {
                    dirs.push(parent_of(&m.path));
                }
            }
        }
    }
    dirs.sort_unstable();
    dirs.dedup();
    let mut walker = Walker::new(root, max_entries, now, tree.entries());
    walker.listings = listings;
    for dir in dirs {
        if !tree.dirs.contains_key(dir) {
            continue; // removed with a parent listed before it
        }
        if walker.relist(&mut tree, dir)? {
            return Ok(None);
        }
    }
    Ok(Some(tree))
}

/// What a walk does with a folder inside the project it cannot list (its
/// permissions refuse it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unreadable {
    /// Fails the walk (packaging: a package must not silently miss files).
    Fail,
    /// Leaves it out with a warning, recorded empty with its mtime unknown so
    /// each refresh lists it again (the catalog's record).
    LeaveOut,
}

/// Every folder and file under `root`, from scratch.
pub fn walk(root: &Path, max_entries: usize, unreadable: Unreadable) -> Result<Tree> {
    let mut tree = Tree::default();
    Walker::new(root, max_entries, now_ns(), 0).walk_all(&mut tree, unreadable)?;
    Ok(tree)
}

/// The project folder, open: stat calls relative to it resolve a few path parts
/// instead of the whole absolute path (most of the cost of checking a tree).
struct At(rustix::fd::OwnedFd);

impl At {
    fn open(root: &Path) -> Result<Self> {
        use rustix::fs::{Mode, OFlags};
        rustix::fs::open(root, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
            .map(At)
            .map_err(|e| {
                Error::new(
                    ErrorCode::IoError,
                    format!("cannot open the project `{}`", root.display()),
                )
                .with_hint("check that the folder exists and is readable")
                .with_source(std::io::Error::from(e))
            })
    }

    fn stat(&self, relative: &str) -> Option<rustix::fs::Stat> {
        let path = if relative.is_empty() { "." } else { relative };
        rustix::fs::statat(&self.0, path, rustix::fs::AtFlags::SYMLINK_NOFOLLOW).ok()
    }

    /// Like [`file_stat`], for `relative` under the root.
    fn file_stat(&self, relative: &str, now: i64) -> Option<FileStat> {
        let stat = self.stat(relative)?;
        (rustix::fs::FileType::from_raw_mode(stat.st_mode) == rustix::fs::FileType::RegularFile).then(|| {
            FileStat::new(
                stat.st_size as u64,
                stat.st_ino,
                stat.st_mtime * 1_000_000_000 + stat.st_mtime_nsec as i64,
                stat.st_ctime * 1_000_000_000 + stat.st_ctime_nsec as i64,
                now,
            )
        })
    }

    /// Like [`dir_mtime`], for `relative` under the root.
    fn dir_mtime(&self, relative: &str, now: i64) -> Option<i64> {
        let stat = self.stat(relative)?;
        (rustix::fs::FileType::from_raw_mode(stat.st_mode) == rustix::fs::FileType::Directory)
            .then(|| trusted(stat.st_mtime * 1_000_000_000 + stat.st_mtime_nsec as i64, now))
    }
}

/// Walks and lists folders of one project with one set of rules and one bound.
struct Walker<'a> {
    root: &'a Path,
    max_entries: usize,
    now: i64,
    seen: usize,
    /// Listings already taken of folders to list again.
    listings: Listings,
}

impl<'a> Walker<'a> {
    fn new(root: &'a Path, max_entries: usize, now: i64, seen: usize) -> Self {
        Self {
            root,
            max_entries,
            now,
            seen,
            listings: Listings::default(),
        }
    }

    /// The walk over `dir` (relative), with the project's rules; package
    /// folders it meets are pushed to the returned list instead of entered.
    /// Of the entries of `dir` itself, only those in `only` (name, is a folder)
    /// are taken. The walk starts at the project root and goes down only the
    /// folders leading to `dir`, which the caller skips ([`levels`] of them
    /// above `dir`): their ignore files apply inside `dir` as git applies them,
    /// and none above the root is read.
    ///
    /// A folder whose ignore file the walk must not read ([`refused_ignore_file`])
    /// is not entered: it goes to the returned list too. The root's fails the walk.
    fn builder(&self, dir: &str, only: OnlyNames) -> Result<(ignore::WalkBuilder, Arc<Mutex<Met>>)> {
        if let Some(file) = refused_ignore_file(self.root) {
            return Err(refused_ignore_error(self.root, &file));
        }
        let met = Arc::new(Mutex::new(Met::default()));
        let found = Arc::clone(&met);
        let root = self.root.to_path_buf();
        let above = levels(dir);
        let dir = dir.to_string();
        let mut walk = ignore::WalkBuilder::new(self.root);
        walk.hidden(false).parents(false).follow_links(false);
        git_ignore_rules(&mut walk, self.root);
        walk.filter_entry(move |entry| {
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            let entered = if entry.depth() <= above {
                // Only the folders leading to `dir`, and `dir` itself.
                let Some(relative) = entry.path().strip_prefix(&root).ok().and_then(Path::to_str) else {
                    return false;
                };
                dir == relative
                    || dir.strip_prefix(relative).is_some_and(|rest| rest.starts_with('/'))
                    || relative.is_empty()
            } else {
                let name = entry.file_name().to_string_lossy();
                if entry.depth() == above + 1
                    && only
                        .as_ref()
                        .is_some_and(|only| !takes(only, entry.file_name(), is_dir))
                {
                    return false;
                }
                if is_dir
                    && (scan::IGNORED_DIRS.contains(&name.as_ref())
                        || name.starts_with(crate::packages::build::STAGING_PREFIX))
                {
                    return false;
                }
                // A package made from the project holds copies of its artifacts, not new ones.
                if is_dir && entry.path().join(MANIFEST_FILE).is_file() {
                    if let Ok(mut met) = found.lock() {
                        met.packages.push(entry.path().to_path_buf());
                    }
                    return false;
                }
                true
            };
            if entered && is_dir && refused_ignore_file(entry.path()).is_some() {
                if let Ok(mut met) = found.lock() {
                    met.refused.push(entry.path().to_path_buf());
                }
                return false;
            }
            entered
        });
        Ok((walk, met))
    }

    fn relative(&self, path: &Path) -> Option<String> {
        let rest = path.strip_prefix(self.root).ok()?.to_str()?;
        Some(rest.to_string())
    }

    fn count(&mut self) -> Result<()> {
        self.seen += 1;
        if self.seen > self.max_entries {
            return Err(too_large(self.root, self.max_entries));
        }
        Ok(())
    }

    /// Records everything in the project.
    fn walk_all(&mut self, tree: &mut Tree, then: Unreadable) -> Result<()> {
        let (walk, met) = self.builder("", None)?;
        let mut unreadable = Vec::new();
        for entry in walk.build() {
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) => match unreadable_folder(&e) {
                    Some(path)
                        if then == Unreadable::LeaveOut && self.relative(path).is_some_and(|r| !r.is_empty()) =>
                    {
                        unreadable.push(path.to_path_buf());
                        continue;
                    }
                    folder => {
                        let folder = folder.and_then(|p| self.relative(p)).filter(|r| !r.is_empty());
                        return Err(Error::new(
                            ErrorCode::IoError,
                            match folder {
                                Some(folder) => {
                                    format!("cannot read `{folder}` in the project `{}`", self.root.display())
                                }
                                None => format!("cannot read the project `{}`", self.root.display()),
                            },
                        )
                        .with_hint("check the permissions of the project folder")
                        .with_source(e));
                    }
                },
            };
            self.record(tree, entry.path(), entry.file_type())?;
        }
        for path in unreadable {
            let relative = self.relative(&path).unwrap_or_default();
            tracing::warn!(
                "cannot read the project's folder `{relative}` (permission denied): its artifacts are left out until it can be read"
            );
            self.record_unreadable(tree, relative);
        }
        self.record_met(tree, &met, then)
    }

    /// Records the folder `relative`, which cannot be listed, with its mtime
    /// unknown: each refresh lists it again (a change of its permissions
    /// moves no mtime), and nothing in it is recorded.
    fn record_unreadable(&self, tree: &mut Tree, relative: String) {
        remove_under(tree, &relative, false);
        tree.dirs.insert(relative, -1);
    }

    fn record(&mut self, tree: &mut Tree, path: &Path, file_type: Option<std::fs::FileType>) -> Result<()> {
        let Some(relative) = self.relative(path) else {
            return Ok(());
        };
        match file_type {
            Some(t) if t.is_dir() => {
                self.count()?;
                let mtime = dir_mtime(path, self.now).unwrap_or(-1);
                tree.dirs.insert(relative, mtime);
            }
            Some(t) if t.is_file() => {
                self.count()?;
                match file_stat(path, self.now) {
                    Some(stat) => {
                        tree.files.insert(relative, stat);
                    }
                    // Listed but out of reach (its folder cannot be searched):
                    // the folder is listed again at each refresh until it can.
                    None if unreachable(path) => forget_mtime_of_parent(tree, &relative),
                    None => {}
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Records what the walk's filter met: package folders (as folders, not
    /// entered), and folders left out for an ignore file it must not read
    /// (recorded empty; `then` says whether that fails the walk instead).
    fn record_met(&mut self, tree: &mut Tree, met: &Mutex<Met>, then: Unreadable) -> Result<()> {
        let met = met.lock().map(|m| m.clone()).unwrap_or_default();
        for path in met.packages {
            if let Some(relative) = self.relative(&path) {
                self.count()?;
                tree.dirs.insert(relative, dir_mtime(&path, self.now).unwrap_or(-1));
            }
        }
        for folder in met.refused {
            let file = refused_ignore_file(&folder).unwrap_or_else(|| folder.join(".gitignore"));
            if then == Unreadable::Fail {
                return Err(refused_ignore_error(self.root, &file));
            }
            let Some(relative) = self.relative(&folder) else {
                continue;
            };
            self.count()?;
            self.leave_out_refused(tree, relative, &file);
        }
        Ok(())
    }

    /// Leaves out what the folder `relative` holds, for `file`, an ignore
    /// file a walk must not read: the folder stays recorded (so it is
    /// watched) with its mtime unknown, so each refresh lists it again (a
    /// file shrunk in place moves no mtime of the folder).
    fn leave_out_refused(&self, tree: &mut Tree, relative: String, file: &Path) {
        tracing::warn!(
            "{}: the folder's artifacts are left out until that changes",
            refused_ignore_message(self.root, file)
        );
        remove_under(tree, &relative, false);
        tree.dirs.insert(relative, -1);
    }

    /// Lists `dir` again after its mtime moved; `true` when an ignore file came
    /// or went (the whole tree must be walked again).
    fn relist(&mut self, tree: &mut Tree, dir: &str) -> Result<bool> {
        let full = self.root.join(dir);
        // What the folder holds now against what was recorded in it, both by
        // name and in order: recorded entries still there are kept as they are
        // (their own checks cover them), gone ones are forgotten, and only new
        // names go through the walk's rules.
        let Some(listed) = self.listings.take_or_list(self.root, dir, self.now) else {
            if dir.is_empty() {
                return Err(Error::new(
                    ErrorCode::IoError,
                    format!("cannot read the project `{}`", self.root.display()),
                )
                .with_hint("check the permissions of the project folder"));
            }
            // A folder that cannot be listed (no permission) is kept, empty
            // and with its mtime unknown, so each refresh tries it again (a
            // change of its permissions moves no mtime); one out of reach
            // (its parent cannot be searched) has its parent listed again.
            match std::fs::symlink_metadata(&full) {
                Ok(meta) if meta.is_dir() => self.record_unreadable(tree, dir.to_string()),
                Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                    remove_under(tree, dir, true);
                    forget_mtime_of_parent(tree, dir);
                }
                _ => remove_under(tree, dir, true),
            }
            return Ok(false);
        };
        tree.dirs.insert(dir.to_string(), listed.mtime);
        if !dir.is_empty() && full.join(MANIFEST_FILE).is_file() {
            remove_under(tree, dir, false);
            return Ok(false);
        }
        // Not entered while its ignore file is one a walk must not read (a
        // link is not in the listing: the walk's filter never sees it here).
        if let Some(file) = refused_ignore_file(&full) {
            if dir.is_empty() {
                return Err(refused_ignore_error(self.root, &file));
            }
            self.leave_out_refused(tree, dir.to_string(), &file);
            return Ok(false);
        }
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        let mut recorded: Vec<(&str, bool)> = children(&tree.files, &prefix)
            .map(|p| (&p[prefix.len()..], false))
            .chain(children(&tree.dirs, &prefix).map(|p| (&p[prefix.len()..], true)))
            .filter(|(name, _)| listed.covers(name))
            .collect();
        recorded.sort_unstable();
        let present = listed.entries;
        // In name order, as the listing is.
        let mut new: Vec<(String, bool)> = Vec::new();
        let mut gone: Vec<(String, bool)> = Vec::new();
        let mut was = recorded.into_iter().peekable();
        for (name, is_dir) in &present {
            while let Some(old) = was.next_if(|old| *old < (name.as_str(), *is_dir)) {
                gone.push((format!("{prefix}{}", old.0), old.1));
            }
            if was.next_if(|old| *old == (name.as_str(), *is_dir)).is_none() {
                new.push((name.clone(), *is_dir));
            }
        }
        gone.extend(was.map(|(name, is_dir)| (format!("{prefix}{name}"), is_dir)));
        for (path, is_dir) in gone {
            if is_dir {
                remove_under(tree, &path, true);
            } else if is_ignore_file(&path) {
                return Ok(true);
            } else {
                tree.files.remove(&path);
            }
        }
        if new.is_empty() {
            return Ok(false);
        }
        // The sequential walker opens every folder it meets (walkdir reads each
        // one, even at the depth limit, before the walk's filter sees it); the
        // parallel one, on one thread, leaves the other names out before
        // opening anything, so a new skill in a folder of 100,000 opens one
        // folder. The same walk goes on into the new folders.
        let (walk, met) = self.builder(dir, Some(Arc::new(new)))?;
        let above = levels(dir);
        let (entries, unreadable) = listed_by(walk);
        for entry in entries {
            if entry.depth() <= above {
                continue;
            }
            let is_file = entry.file_type().is_some_and(|t| t.is_file());
            // A new ignore file here changes the rules over recorded entries too
            // (one inside a new folder was applied by this walk).
            if is_file && entry.depth() == above + 1 && is_ignore_file(&entry.file_name().to_string_lossy()) {
                return Ok(true);
            }
            self.record(tree, entry.path(), entry.file_type())?;
        }
        for path in unreadable {
            if let Some(relative) = self.relative(&path).filter(|r| !r.is_empty()) {
                self.record_unreadable(tree, relative);
            }
        }
        self.record_met(tree, &met, Unreadable::LeaveOut)?;
        Ok(false)
    }
}

/// What a walk's filter met besides the entries it yields.
#[derive(Debug, Clone, Default)]
struct Met {
    /// Package folders, recorded as folders and not entered.
    packages: Vec<PathBuf>,
    /// Folders not entered for an ignore file the walk must not read.
    refused: Vec<PathBuf>,
}

/// The largest ignore file a walk reads: real ones hold a few KiB, and the
/// `ignore` crate reads one whole.
const MAX_IGNORE_FILE_BYTES: u64 = 1 << 20;

/// The ignore file (`.gitignore`, `.ignore`) of the folder `dir` that a walk
/// must not read, when there is one: a link (git follows none either; one
/// can lead out of the project, or to a device that never ends), anything
/// else but a plain file, or a file over 1 MiB. The `ignore` crate opens the
/// ignore files of each folder it enters through links and reads them whole,
/// so a walk does not enter a folder holding one (see `Walker::builder`).
pub fn refused_ignore_file(dir: &Path) -> Option<PathBuf> {
    IGNORE_FILES.iter().map(|name| dir.join(name)).find(|file| {
        std::fs::symlink_metadata(file).is_ok_and(|meta| !meta.is_file() || meta.len() > MAX_IGNORE_FILE_BYTES)
    })
}

/// What is wrong with `file`, an ignore file [`refused_ignore_file`] found
/// under `root`.
fn refused_ignore_message(root: &Path, file: &Path) -> String {
    let shown = file.strip_prefix(root).unwrap_or(file).display();
    let what = match std::fs::symlink_metadata(file) {
        Ok(meta) if meta.file_type().is_symlink() => "is a link, which aam does not follow (git does not either)",
        Ok(meta) if meta.is_file() => "is larger than 1 MiB",
        _ => "is not a plain file",
    };
    format!("the ignore file `{shown}` in `{}` {what}", root.display())
}

/// The error of a walk that meets `file`, an ignore file it must not read.
fn refused_ignore_error(root: &Path, file: &Path) -> Error {
    Error::new(ErrorCode::IoError, refused_ignore_message(root, file))
        .with_hint("replace it with a plain file of the patterns it should hold, or delete it")
}

/// Makes `walk` (which starts at `root`, a project or a repository's work
/// tree) apply git's ignore rules, opening no file above `root`. The crate's
/// own git handling reads the ignore files of every folder above the walk's
/// start up to `/` (even with `parents(false)`, which only stops it applying
/// them): it is off, and each folder's `.gitignore` and `.ignore` (the latter
/// first) are read as the walk enters it, then `.git/info/exclude` (a plain
/// file only) and git's global excludes file, both anchored at `root`.
pub fn git_ignore_rules(walk: &mut ignore::WalkBuilder, root: &Path) {
    walk.git_ignore(false)
        .git_exclude(false)
        .git_global(false)
        .ignore(false)
        .add_custom_ignore_filename(".gitignore")
        .add_custom_ignore_filename(".ignore")
        .current_dir(root);
    // Missing files are no error.
    if let Some(global) = ignore::gitignore::gitconfig_excludes_path() {
        let _ = walk.add_ignore(global);
    }
    let exclude = root.join(".git/info/exclude");
    if std::fs::symlink_metadata(&exclude).is_ok_and(|m| m.is_file()) {
        let _ = walk.add_ignore(exclude);
    }
}

/// How many folders lie between the project root and `dir` (relative), the
/// root included and `dir` not: the depth of `dir` in a walk from the root.
fn levels(dir: &str) -> usize {
    if dir.is_empty() { 0 } else { dir.split('/').count() }
}

/// The entries `walk` yields, in no particular order, from a walk on one
/// thread, and the folders it could not list for want of permission.
fn listed_by(mut walk: ignore::WalkBuilder) -> (Vec<ignore::DirEntry>, Vec<PathBuf>) {
    let found = Mutex::new((Vec::new(), Vec::new()));
    walk.threads(1).build_parallel().run(|| {
        Box::new(|entry| {
            if let Ok(mut found) = found.lock() {
                match entry {
                    Ok(entry) => found.0.push(entry),
                    Err(e) => found.1.extend(unreadable_folder(&e).map(Path::to_path_buf)),
                }
            }
            ignore::WalkState::Continue
        })
    });
    found.into_inner().unwrap_or_default()
}

/// The folder holding `path` (relative; `""` for the root's entries).
fn parent_of(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(parent, _)| parent)
}

/// Whether `path` cannot be reached for want of permission (a folder above
/// it cannot be searched).
fn unreachable(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_err_and(|e| e.kind() == std::io::ErrorKind::PermissionDenied)
}

/// Makes the mtime of the folder holding `path` (relative) unknown, when it is
/// recorded, so the next refresh lists it again.
fn forget_mtime_of_parent(tree: &mut Tree, path: &str) {
    if let Some(mtime) = tree.dirs.get_mut(parent_of(path)) {
        *mtime = -1;
    }
}

/// The folder a walk's error says it could not list for want of permission.
fn unreadable_folder(e: &ignore::Error) -> Option<&Path> {
    /// Whether `e` is, under its depth, a refused permission.
    fn denied(e: &ignore::Error) -> bool {
        match e {
            ignore::Error::WithDepth { err, .. } => denied(err),
            ignore::Error::Io(io) => io.kind() == std::io::ErrorKind::PermissionDenied,
            _ => false,
        }
    }
    match e {
        ignore::Error::WithDepth { err, .. } => unreadable_folder(err),
        ignore::Error::WithPath { path, err } => denied(err).then_some(path.as_path()),
        _ => None,
    }
}

/// The only names (with whether each is a folder, in order) a walk takes from
/// the folder it starts in; `None` takes every name.
type OnlyNames = Option<Arc<Vec<(String, bool)>>>;

/// Whether `name` (a folder when `is_dir`) is among the sorted names `only`:
/// looked up in place, with no copy of the name (the walk asks for each of a
/// wide folder's entries).
fn takes(only: &[(String, bool)], name: &std::ffi::OsStr, is_dir: bool) -> bool {
    name.to_str().is_some_and(|name| {
        only.binary_search_by(|(n, d)| (n.as_str(), *d).cmp(&(name, is_dir)))
            .is_ok()
    })
}

/// The paths of `map` at or below `region` (a folder or file; `""` is all).
pub fn paths_within<'m, V>(map: &'m BTreeMap<String, V>, region: &'m str) -> impl Iterator<Item = &'m str> + 'm {
    map.range::<str, _>((std::ops::Bound::Included(region), std::ops::Bound::Unbounded))
        .map(|(k, _)| k.as_str())
        .take_while(move |k| k.starts_with(region))
        .filter(move |k| region.is_empty() || k.len() == region.len() || k.as_bytes()[region.len()] == b'/')
}

/// Direct children of the folder `prefix` (`""` or ending in `/`) among `map`'s keys.
fn children<'m, V>(map: &'m BTreeMap<String, V>, prefix: &'m str) -> impl Iterator<Item = &'m str> + 'm {
    map.range::<str, _>((std::ops::Bound::Included(prefix), std::ops::Bound::Unbounded))
        .map(|(k, _)| k.as_str())
        .take_while(move |k| k.starts_with(prefix))
        .filter(move |k| !k.is_empty() && !k[prefix.len()..].contains('/'))
}

/// Forgets everything below `dir`, and `dir` itself when `itself`.
fn remove_under(tree: &mut Tree, dir: &str, itself: bool) {
    if itself {
        tree.dirs.remove(dir);
    }
    let prefix = if dir.is_empty() {
        String::new()
    } else {
        format!("{dir}/")
    };
    let below = |k: &String| k.starts_with(&prefix) && !k.is_empty() && k.as_str() != dir;
    tree.dirs.retain(|k, _| !below(k));
    tree.files.retain(|k, _| !below(k));
}

/// Whether `path` names an ignore file the walk honors (its changes re-walk).
pub fn is_ignore_file(path: &str) -> bool {
    IGNORE_FILES.contains(&path.rsplit('/').next().unwrap_or(path))
}

fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

fn mtime_ns(meta: &std::fs::Metadata, now: i64) -> i64 {
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
        .map_or(-1, |d| d.as_nanos() as i64);
    trusted(mtime, now)
}

/// `mtime`, or `-1` when it is unknown or too close to `now` to trust.
fn trusted(mtime: i64, now: i64) -> i64 {
    if mtime < 0 || now - mtime < RACY_NS { -1 } else { mtime }
}

/// A folder's recorded mtime, `None` when it is gone or not a folder (a link is not).
fn dir_mtime(path: &Path, now: i64) -> Option<i64> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    meta.is_dir().then(|| mtime_ns(&meta, now))
}

/// A plain file's stat data, `None` when it is gone or not a plain file.
fn file_stat(path: &Path, now: i64) -> Option<FileStat> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(path).ok()?;
    meta.is_file().then(|| {
        FileStat::new(
            meta.len(),
            meta.ino(),
            meta.mtime() * 1_000_000_000 + meta.mtime_nsec(),
            meta.ctime() * 1_000_000_000 + meta.ctime_nsec(),
            now,
        )
    })
}

/// The error for a project folder past the walk's bound.
pub fn too_large(root: &Path, max_entries: usize) -> Error {
    Error::new(
        ErrorCode::ProjectTooLarge,
        format!(
            "`{}` holds more than {max_entries} files and folders, far more than a project",
            root.display()
        ),
    )
    .with_hint(
        "run aam inside your project folder, pass `--source <name>` to list only a source, \
         or pass `--large-project` (`large_project`) to index it anyway",
    )
}
