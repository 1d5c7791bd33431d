//! Installing packages into a project (or the home folder): what may be
//! touched, what a command will change, and changing it so that nothing is lost.
//!
//! - [`keys`]: the one check every path from a lock file, manifest, archive or
//!   journal passes before it is read, hashed, written or deleted.
//! - [`Roots`]: where an install lands, and the link check against the real
//!   file system.
//! - [`plan`]: the change list of one command (package copies, deployed files,
//!   shared sections, stale removals, the lock file), with conflicts and edits
//!   found before anything changes.
//! - [`state`]: how recorded files compare with what is on disk, read without
//!   following links and hashed as streams.
//! - [`journal`]: the project lock (one writer at a time) and the write-ahead
//!   journal that makes an interrupted command roll back or forward.
//! - [`restore`]: what `aam install` with no arguments does: each package the
//!   lock file records, made again from its origin and compared with the lock.
//! - [`decision`]: what one install does with each package it prepared (add,
//!   replace, merge, or leave it for its edits, with the packages depending on it).
//! - [`freshness`]: whether an installed package has newer content.
//! - [`package_info`]: one package by name, as installed here and as published.
//! - [`merge`]: upgrades that keep local edits, by a three-way merge per file.
//! - [`inventory`]: what the agents' folders hold, installed or copied by
//!   hand, the origin of a copy found by its files' digests, and adopting it.
//!
//! This module never parses arguments or prints; tools call it.

pub mod decision;
pub mod freshness;
pub mod inventory;
pub mod journal;
pub mod keys;
pub mod merge;
pub mod mirror;
pub mod package_info;
pub mod plan;
pub mod platforms;
pub mod restore;
pub mod specs;
pub mod state;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

use crate::error::{Error, ErrorCode, Result};
use crate::packages::lock::{LockFile, LockedPackage};
use crate::paths::Inside;
use keys::CheckedKey;

/// A check the caller's front end applies to every target (the MCP sandbox).
pub type Confine = Arc<dyn Fn(&Path, &str) -> Result<()> + Send + Sync>;

/// Where an install lands: the project (or home) root, and the home folder.
#[derive(Clone)]
pub struct Roots {
    /// Project root, or the home folder for global installs.
    pub root: PathBuf,
    /// The user's home folder.
    pub home: PathBuf,
    /// Whether this is a global (`-g`) install.
    pub global: bool,
    confine: Option<Confine>,
    /// aam's own folder on this machine (`AAM_HOME`), where the key that seals
    /// journals lives.
    state: Option<PathBuf>,
}

impl Roots {
    /// The roots of an install into `project` (or, `global`, into `home`).
    pub fn new(project: PathBuf, home: PathBuf, global: bool) -> Self {
        Self {
            root: if global { home.clone() } else { project },
            home,
            global,
            confine: None,
            state: None,
        }
    }

    /// The same roots, sealing journals with the key kept in `aam_home`.
    pub fn with_state(mut self, aam_home: PathBuf) -> Self {
        self.state = Some(aam_home);
        self
    }

    /// aam's own folder (`AAM_HOME`), when known.
    pub fn aam_home(&self) -> Option<&Path> {
        self.state.as_deref()
    }

    /// The key journals are sealed with: 32 random bytes kept in
    /// `AAM_HOME/journal.key` (made on first use), so a journal that came with
    /// a repository, or from another machine, is never acted on.
    pub fn journal_key(&self) -> Result<[u8; 32]> {
        let dir = self
            .state
            .as_ref()
            .ok_or_else(|| Error::internal("install roots without AAM_HOME cannot journal"))?;
        let path = dir.join("journal.key");
        if let Some(bytes) = crate::paths::read_plain(&path, 64).map_err(|e| Error::io("read", &path, e))?
            && let Ok(key) = <[u8; 32]>::try_from(bytes.as_slice())
        {
            return Ok(key);
        }
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).map_err(|e| Error::internal(format!("no randomness: {e}")))?;
        crate::atomic::write_file_with_mode(&path, &key, 0o600)?;
        Ok(key)
    }

    /// The same roots, with every target also passed through `confine`.
    pub fn confined(mut self, confine: Confine) -> Self {
        self.confine = Some(confine);
        self
    }

    /// The root as text (the catalog mirror's key).
    pub fn root_text(&self) -> String {
        self.root.display().to_string()
    }

    /// How the lock file records the package folder or archive at `path`:
    /// relative to the root (`./kit`) when it lies inside it, so the lock
    /// holds on every clone of the project; else the absolute path.
    pub fn recorded_path(&self, path: &str) -> String {
        let root = self.root.canonicalize().unwrap_or_else(|_| self.root.clone());
        match Path::new(path).strip_prefix(&root) {
            Ok(inside) if !inside.as_os_str().is_empty() => format!("./{}", inside.display()),
            _ => path.to_string(),
        }
    }

    /// Whether `path` lies below the root as written (no `..` part after it;
    /// the root itself is not below it): a place of the project's own.
    pub fn lies_below(&self, path: &Path) -> bool {
        let root = self.root.canonicalize().unwrap_or_else(|_| self.root.clone());
        path.strip_prefix(&root).is_ok_and(|rest| {
            rest.components().next().is_some()
                && rest.components().all(|c| matches!(c, std::path::Component::Normal(_)))
        })
    }

    /// Whether the package folder or archive the lock file records as
    /// `recorded` is the one at `path` (a canonical path, as packages are
    /// prepared with).
    pub fn records_place(&self, recorded: &str, path: &str) -> bool {
        self.recorded_location(recorded)
            .canonicalize()
            .is_ok_and(|place| place == Path::new(path))
    }

    /// Where a package folder or archive the lock file records lies: a `./`
    /// path is below the root (see [`Roots::recorded_path`]).
    pub fn recorded_location(&self, recorded: &str) -> PathBuf {
        match recorded.strip_prefix("./") {
            Some(inside) => self.root.join(inside),
            None => PathBuf::from(recorded),
        }
    }

    /// Checks a lock key (see [`keys::check`]).
    pub fn check_key(&self, key: &str) -> Result<CheckedKey> {
        keys::check(key, self.global).map_err(|why| unsafe_path(key, &why))
    }

    /// The absolute path of a whole-file key (a file key, a shared file or the
    /// lock file), after the key check and the link check.
    pub fn file_path(&self, key: &str) -> Result<PathBuf> {
        let location = keys::check_file(key, self.global).map_err(|why| unsafe_path(key, &why))?;
        self.resolve(&location, key)
    }

    /// The absolute path of the file a key lives in (the shared file for a
    /// section), after the key check and the link check.
    pub fn key_path(&self, key: &str) -> Result<PathBuf> {
        let checked = self.check_key(key)?;
        self.resolve(checked.file(), key)
    }

    /// `location` made absolute, to write or remove. Refused when a folder on
    /// the way is a link that leads out of its root (the project, or the home
    /// folder), or, in a project, anywhere but from one agent folder to another
    /// (`.claude/skills` to `.agents/skills` is followed): a `.claude/skills` a
    /// repository ships as a link to `.git` would have an install write hooks
    /// there, as git itself never writes beyond a link. A project's lock file,
    /// shared files and package copies are never reached through a link. Also
    /// refused when the front end's confinement refuses it. The last part
    /// itself is never followed: readers and writers treat a link there as not
    /// aam's.
    pub fn resolve(&self, location: &crate::deploy::Location, shown: &str) -> Result<PathBuf> {
        let (path, real, real_base) = self.inside_root(location, shown)?;
        if !self.lands_where_it_installs(location, &real, &real_base) {
            return Err(lands_elsewhere(shown, &real));
        }
        Ok(path)
    }

    /// The folder a whole-file `key` lands in, opened, with the file's name in
    /// it: the journal stages, renames and removes there by name. The checks
    /// of [`Roots::resolve`] are made again on where the open folder really is
    /// (the kernel's path of the descriptor), so a folder on the way swapped
    /// for a link after the first checks is not written through. Folders
    /// already in `open` are used again while they are still where they were
    /// checked to be.
    pub fn anchor(&self, key: &str, open: &mut OpenFolders) -> Result<Anchor> {
        let location = keys::check_file(key, self.global).map_err(|why| unsafe_path(key, &why))?;
        self.anchor_at(&location, key, open)
    }

    /// The folder holding the folder `dir` (a folder key, `~/` for the home
    /// folder), opened and checked like [`Roots::anchor`], with `dir`'s name in
    /// it: to make or remove that folder by name. Which folders a command may
    /// make or remove is the caller's check (folders on the way to the keys it
    /// writes, or [`keys::check_dir`]).
    pub fn anchor_dir(&self, dir: &str, open: &mut OpenFolders) -> Result<Anchor> {
        crate::paths::check_relative(dir.strip_prefix("~/").unwrap_or(dir)).map_err(|why| unsafe_path(dir, &why))?;
        self.anchor_at(&crate::deploy::Location::from_key(dir), dir, open)
    }

    fn anchor_at(&self, location: &crate::deploy::Location, key: &str, open: &mut OpenFolders) -> Result<Anchor> {
        let path = location.resolve(&self.root, &self.home);
        let (Some(folder), Some(name)) = (path.parent(), path.file_name()) else {
            return Err(unsafe_path(key, "it names no file"));
        };
        let name = name.to_os_string();
        // An open folder the kernel still places where it was checked to be is
        // that folder, whatever its path leads to now; only whether this file
        // may land there is left to check.
        if let Some(known) = open.by_path.get(folder)
            && crate::paths::where_open(&known.folder).as_ref() == Some(&known.real)
        {
            if !self.lands_where_it_installs(location, &known.real, &known.real_base) {
                return Err(lands_elsewhere(key, &known.real));
            }
            let folder = Rc::clone(&known.folder);
            return Ok(Anchor { folder, name });
        }
        let (_, real_then, real_base) = self.inside_root(location, key)?;
        if !self.lands_where_it_installs(location, &real_then, &real_base) {
            return Err(lands_elsewhere(key, &real_then));
        }
        let opened = rustix::fs::openat(
            rustix::fs::CWD,
            folder,
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )
        .map_err(|e| Error::io("open", folder, e.into()))?;
        let told = crate::paths::where_open(&opened);
        let real = told
            .clone()
            .or_else(|| crate::paths::resolve_links(folder))
            .ok_or_else(|| leads_out(key, &real_base))?;
        if !real.starts_with(&real_base) {
            return Err(leads_out(key, &real_base));
        }
        if !self.lands_where_it_installs(location, &real, &real_base) {
            return Err(lands_elsewhere(key, &real));
        }
        let opened = Rc::new(opened);
        // Used again only where the kernel can tell where the folder is later;
        // a few at a time, so a package of many folders stays well within the
        // open-file limit.
        if open.by_path.len() >= OpenFolders::MOST {
            open.by_path.clear();
        }
        if told.is_some() {
            let known = OpenFolder {
                folder: Rc::clone(&opened),
                real,
                real_base,
            };
            open.by_path.insert(folder.to_path_buf(), known);
        }
        Ok(Anchor { folder: opened, name })
    }

    /// The folder at `location` (an agent folder), opened and checked like the
    /// folders of [`Roots::anchor`], with where it really is: to list what it
    /// holds (`inventory`).
    pub fn open_folder(
        &self,
        location: &crate::deploy::Location,
        shown: &str,
    ) -> Result<(Rc<rustix::fd::OwnedFd>, PathBuf)> {
        let anchor = self.anchor_at(&location.join("x"), shown, &mut OpenFolders::default())?;
        let real = crate::paths::where_open(&anchor.folder)
            .or_else(|| crate::paths::resolve_links(&location.resolve(&self.root, &self.home)))
            .ok_or_else(|| unsafe_path(shown, "where it lies cannot be told"))?;
        Ok((anchor.folder, real))
    }

    /// `location` made absolute, to read (`verify`, `diff`, `inventory`):
    /// refused where [`Roots::resolve`] refuses to write. A link on the way
    /// that lands anywhere but where installs write (a skill folder linked to
    /// `.git`, or to the project's root to reach its `.env`) would have a diff
    /// print what aam never wrote.
    pub fn resolve_to_read(&self, location: &crate::deploy::Location, shown: &str) -> Result<PathBuf> {
        self.resolve(location, shown)
    }

    /// Opens the plain file at `location` to read, after the checks of
    /// [`Roots::resolve_to_read`], which are made again on the opened folder
    /// ([`crate::paths::open_inside`]): a folder swapped for a link leading out
    /// after the check is not read through. Returns the path beside what it found.
    /// A file beyond a link (see [`Roots::beyond_link`]) is [`Inside::Outside`]:
    /// nothing there is read, and what aam recorded there counts as changed.
    pub fn open_to_read(&self, location: &crate::deploy::Location, shown: &str) -> Result<(PathBuf, Inside)> {
        let (path, real, real_base) = self.locate(location);
        self.confine(&path, shown)?;
        if real.is_none_or(|real| !self.lands_where_it_installs(location, &real, &real_base)) {
            return Ok((path, Inside::Outside));
        }
        let found = crate::paths::open_inside(&path, &real_base).map_err(|e| Error::io("read", &path, e))?;
        Ok((path, found))
    }

    /// The path of `location`, the real folder it lands in and the real root,
    /// when that folder lies inside the root and confinement allows the path.
    fn inside_root(&self, location: &crate::deploy::Location, shown: &str) -> Result<(PathBuf, PathBuf, PathBuf)> {
        let (path, real, real_base) = self.locate(location);
        let Some(real) = real else {
            return Err(leads_out(shown, &real_base));
        };
        self.confine(&path, shown)?;
        Ok((path, real, real_base))
    }

    /// The path of `location`, the real folder it lands in when that lies
    /// inside its root (`None`: a link on the way leads out), and the real root.
    fn locate(&self, location: &crate::deploy::Location) -> (PathBuf, Option<PathBuf>, PathBuf) {
        let path = location.resolve(&self.root, &self.home);
        let base = match location {
            crate::deploy::Location::Project(_) => &self.root,
            crate::deploy::Location::Home(_) => &self.home,
        };
        let real_base = base.canonicalize().unwrap_or_else(|_| base.clone());
        let parent = path.parent().unwrap_or(base);
        let real = crate::paths::resolve_links(parent).filter(|real| real.starts_with(&real_base));
        (path, real, real_base)
    }

    /// Whether `location` lies beyond a link: a folder on the way is a link
    /// leading out of its root, or landing where installs never write.
    pub fn beyond_link(&self, location: &crate::deploy::Location) -> bool {
        let (_, real, real_base) = self.locate(location);
        real.is_none_or(|real| !self.lands_where_it_installs(location, &real, &real_base))
    }

    /// Whether the file a lock key lives in lies beyond a link (see
    /// [`Roots::beyond_link`]): never read, written or removed, forced or not.
    pub fn key_beyond_link(&self, key: &str) -> bool {
        self.check_key(key)
            .is_ok_and(|checked| self.beyond_link(checked.file()))
    }

    /// Refuses a path the front end's confinement refuses.
    fn confine(&self, path: &Path, shown: &str) -> Result<()> {
        match &self.confine {
            Some(confine) => confine(path, shown),
            None => Ok(()),
        }
    }

    /// Whether `location`, whose folder is `real_parent` on the real file
    /// system, lands where it was meant to. In a project: the same place when
    /// no link is on the way, else strictly inside a folder aam installs into
    /// (see [`keys::check`]), and only when `location` itself lies in one. In
    /// the home folder (global installs, Codex prompts) anywhere inside it: a
    /// repository cannot put links there, and dotfile managers link agent
    /// folders to where they keep them (`~/.claude` to `~/dotfiles/claude`).
    fn lands_where_it_installs(
        &self,
        location: &crate::deploy::Location,
        real_parent: &Path,
        real_base: &Path,
    ) -> bool {
        use crate::deploy::Location;
        if self.global || matches!(location, Location::Home(_)) {
            return true;
        }
        let Some(real_dir) = real_parent.strip_prefix(real_base).ok().and_then(relative_key) else {
            return false;
        };
        let written = match location {
            Location::Project(p) | Location::Home(p) => p,
        };
        let (dir, file) = written.rsplit_once('/').unwrap_or(("", written));
        if real_dir == dir {
            return true;
        }
        let real_path = if real_dir.is_empty() {
            file.to_string()
        } else {
            format!("{real_dir}/{file}")
        };
        let real_location = match location {
            Location::Project(_) => Location::Project(real_path),
            Location::Home(_) => Location::Home(real_path),
        };
        // aam's own folder (package copies) is reached only as it is.
        let aams = |l: &Location| matches!(l, Location::Project(p) if p.starts_with(".aam/"));
        let owned = |l: &Location| matches!(keys::check(&l.key(), self.global), Ok(CheckedKey::File(_))) && !aams(l);
        owned(location) && owned(&real_location)
    }

    /// The lock file under the root, every entry checked.
    pub fn read_lock(&self) -> Result<LockFile> {
        let lock = crate::packages::lock::read(&self.root)?;
        self.check_lock(&lock)?;
        Ok(lock)
    }

    /// Checks every key and target of a lock file (package names included),
    /// and that no file is named by two entries, naming the first bad entry.
    pub fn check_lock(&self, lock: &LockFile) -> Result<()> {
        let mut owners: std::collections::HashMap<&str, &str> = std::collections::HashMap::new();
        for (name, entry) in &lock.packages {
            self.check_entry(name, entry)
                .map_err(|e| self.global_lock_here(e, entry))?;
            for key in entry.file_checksums.keys() {
                if let Some(first) = owners.insert(key, name) {
                    // No install records a file another package has: a forged claim.
                    return Err(Error::new(
                        ErrorCode::LockInvalid,
                        format!("the lock entries of `{first}` and `{name}` both name `{key}`, which aam refuses: a file belongs to one package"),
                    )
                    .with_hint("the lock file may have been written by someone else: restore it from a trusted copy, or delete the entry that should not name it"));
                }
            }
        }
        Ok(())
    }

    /// `refused`, or what it means when the project is the home folder itself
    /// (no `.git` above the working directory) and `entry` was written by a
    /// `--global` install: both keep their lock file in `~/.aam/`.
    fn global_lock_here(&self, refused: Error, entry: &LockedPackage) -> Error {
        let same = |a: &Path, b: &Path| {
            a.canonicalize()
                .ok()
                .is_some_and(|a| b.canonicalize().is_ok_and(|b| a == b))
        };
        let global_keys = entry.file_checksums.keys().any(|key| key.starts_with("~/"));
        if self.global || !global_keys || !same(&self.root, &self.home) {
            return refused;
        }
        Error::new(
            ErrorCode::LockInvalid,
            "the project here is your home folder, whose `.aam/aam-lock.yaml` holds the installs made with `--global`",
        )
        .with_hint(
            "pass `--global` to work on those installs, or run the command in a project folder (one with `.git`)",
        )
    }

    /// Checks one lock entry: its name, every file key (package-copy keys must
    /// lie in this package's own copy folder) and every deployment target.
    pub fn check_entry(&self, name: &str, entry: &LockedPackage) -> Result<()> {
        let bad = |what: String, why: &str| {
            Error::new(
                ErrorCode::LockInvalid,
                format!("the lock entry of `{name}` names {what}, which aam refuses: {why}"),
            )
            .with_hint("the lock file may have been written by someone else: restore it from a trusted copy, or delete the entry and install the package again")
        };
        crate::packages::manifest::check_package_name(name).map_err(|why| bad(format!("package `{name}`"), &why))?;
        // Texts every command may print: a version of megabytes is no version.
        let texts = [
            ("version", Some(&entry.version), MAX_VERSION_CHARS),
            ("origin", Some(&entry.source_name), MAX_ORIGIN_CHARS),
            ("source URL", entry.source_url.as_ref(), MAX_ORIGIN_CHARS),
            ("request", entry.requested.as_ref(), MAX_ORIGIN_CHARS),
        ];
        for (what, text, most) in texts {
            if let Some(text) = text.filter(|t| t.chars().count() > most) {
                return Err(bad(
                    format!("a {what} of {} characters", text.chars().count()),
                    &format!("a {what} has at most {most}"),
                ));
            }
        }
        // A folder or archive recorded inside the root stays inside it.
        if matches!(
            entry.source,
            crate::packages::lock::Origin::Local | crate::packages::lock::Origin::Archive
        ) && let Some(inside) = entry.source_name.strip_prefix("./")
            && Path::new(inside)
                .components()
                .any(|c| !matches!(c, std::path::Component::Normal(_)))
        {
            return Err(bad(
                format!("package folder `{}`", entry.source_name),
                "a path recorded from the project root must stay below it",
            ));
        }
        let copy = format!("{}/", keys::copy_dir(name));
        for key in entry
            .file_checksums
            .keys()
            .chain(entry.deployed.iter().map(|d| &d.target))
        {
            keys::check(key, self.global).map_err(|why| bad(format!("`{key}`"), &why))?;
            if key.starts_with(&format!("{}/", keys::PACKAGES_DIR)) && !key.starts_with(&copy) {
                return Err(bad(format!("`{key}`"), "it lies in another package's copy"));
            }
        }
        for dir in &entry.created_dirs {
            keys::check_dir(dir, self.global).map_err(|why| bad(format!("folder `{dir}`"), &why))?;
        }
        Ok(())
    }

    /// Where the file or folder of a lock key (a file, or a deployed folder)
    /// really is, with every link on the way followed but its last part: two
    /// keys landing on one file (an agent folder the user linked to another,
    /// `.claude/skills` to `.agents/skills`) are one file. `None` when it cannot
    /// be told (a section key, a folder that cannot be resolved).
    pub fn real_place(&self, key: &str) -> Option<PathBuf> {
        let CheckedKey::File(location) = self.check_key(key).ok()? else {
            return None;
        };
        let path = location.resolve(&self.root, &self.home);
        let folder = crate::paths::resolve_links(path.parent()?)?;
        Some(folder.join(path.file_name()?))
    }

    /// Whether a link on the way to `key` leads elsewhere: its real place is
    /// not where the key reads (the root's real path joined with the key).
    pub fn reached_through_link(&self, key: &str) -> bool {
        let location = crate::deploy::Location::from_key(key);
        let (base, rest) = match &location {
            crate::deploy::Location::Project(rest) => (&self.root, rest),
            crate::deploy::Location::Home(rest) => (&self.home, rest),
        };
        let as_written = base.canonicalize().unwrap_or_else(|_| base.clone()).join(rest);
        self.real_place(key).is_some_and(|real| real != as_written)
    }

    /// The folders (as keys) on the way to `key` that do not exist yet, below
    /// its root, outermost last.
    pub fn missing_dirs(&self, key: &str) -> Vec<String> {
        let (prefix, rest) = match key.strip_prefix("~/") {
            Some(rest) => ("~/", rest),
            None => ("", key),
        };
        let mut out = Vec::new();
        let mut dir = rest;
        while let Some((parent, _)) = dir.rsplit_once('/') {
            let dir_key = format!("{prefix}{parent}");
            let location = crate::deploy::Location::from_key(&dir_key);
            if std::fs::symlink_metadata(location.resolve(&self.root, &self.home)).is_ok() {
                break;
            }
            out.push(dir_key);
            dir = parent;
        }
        out
    }
}

/// A path relative to a root as a `/`-separated key (`None` when a part is
/// not plain UTF-8).
fn relative_key(path: &Path) -> Option<String> {
    let parts: Option<Vec<&str>> = path
        .components()
        .map(|c| match c {
            std::path::Component::Normal(part) => part.to_str(),
            _ => None,
        })
        .collect();
    Some(parts?.join("/"))
}

/// A folder opened for the journal's writes, and the name of one file in it
/// (see [`Roots::anchor`]).
#[derive(Debug)]
pub struct Anchor {
    /// The folder, open.
    pub folder: Rc<rustix::fd::OwnedFd>,
    /// The file's name in it.
    pub name: std::ffi::OsString,
}

/// The folders one step of the journal opened and checked, by path, so the
/// files of a folder share one open folder instead of each resolving and
/// opening its path again (about 130 µs a file). An entry is used only while
/// the kernel still places the open folder where it was checked to be.
#[derive(Default)]
pub struct OpenFolders {
    by_path: HashMap<PathBuf, OpenFolder>,
}

impl OpenFolders {
    /// The most folders kept open: a journal's keys come sorted, so the files
    /// of one folder come together.
    const MOST: usize = 32;
}

/// One entry of [`OpenFolders`].
struct OpenFolder {
    folder: Rc<rustix::fd::OwnedFd>,
    /// Where the kernel placed it once checked.
    real: PathBuf,
    /// The real root it was checked against.
    real_base: PathBuf,
}

/// A path whose folder is reached through a link to a folder aam does not install into.
fn lands_elsewhere(shown: &str, real: &Path) -> Error {
    Error::new(
        ErrorCode::UnsafePath,
        format!("`{shown}` leads through a link to `{}`, which is not a folder aam installs into", real.display()),
    )
    .with_hint("like git, aam never writes or removes beyond a link to elsewhere in the project; remove the link if a repository shipped it, or, if you made it, point it at another agent folder (`.agents/skills`) or put the folder itself in its place")
}

/// The longest version a lock entry may record (semantic versions are short).
const MAX_VERSION_CHARS: usize = 256;

/// The longest origin (a path, a URL, a request) a lock entry may record.
const MAX_ORIGIN_CHARS: usize = 4096;

/// A path that leads out of `base` (the project or the home folder) through a link.
fn leads_out(shown: &str, base: &Path) -> Error {
    Error::new(
        ErrorCode::UnsafePath,
        format!("`{shown}` leads out of `{}` through a link", base.display()),
    )
    .with_hint("aam never writes or reads through a link that leaves the folder it installs into; remove the link, or install elsewhere")
}

pub fn unsafe_path(key: &str, why: &str) -> Error {
    Error::new(ErrorCode::UnsafePath, format!("`{key}` is not a path aam may touch: {why}"))
        .with_hint("aam only reads and writes inside the folders it installs into; the file naming it may have been written by someone else")
}

#[cfg(test)]
mod tests {
    /// A recorded place counts as the project's only when it lies below the
    /// root as written: `..` parts climb out, whatever they start with.
    #[test]
    fn only_a_path_below_the_root_as_written_is_the_projects() {
        let roots = Roots::new(PathBuf::from("/work/proj"), PathBuf::from("/home/u"), false);
        let cases = [
            ("/work/proj/kit", true),
            ("/work/proj/a/b.aam", true),
            ("/work/proj/./kit", true),
            ("/work/proj", false),
            ("/work/proj/../secret", false),
            ("/work/project-two/kit", false),
            ("/etc", false),
        ];
        for (path, below) in cases {
            assert_eq!(roots.lies_below(Path::new(path)), below, "{path}");
        }
    }

    use super::*;

    #[test]
    fn links_out_of_the_project_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("project");
        let outside = dir.path().join("outside");
        let home = dir.path().join("home");
        for d in [&project, &outside, &home] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::os::unix::fs::symlink(&outside, project.join(".claude")).unwrap();
        std::fs::create_dir_all(project.join(".cursor/skills")).unwrap();
        std::os::unix::fs::symlink(&outside, project.join(".cursor/skills/evil")).unwrap();
        let roots = Roots::new(project.clone(), home, false);
        let err = roots.key_path(".claude/skills/x/SKILL.md").unwrap_err();
        assert_eq!(err.code(), ErrorCode::UnsafePath);
        assert_eq!(
            roots.key_path(".cursor/skills/evil/SKILL.md").unwrap_err().code(),
            ErrorCode::UnsafePath
        );
        assert_eq!(
            roots.key_path(".cursor/skills/fine/SKILL.md").unwrap(),
            project.join(".cursor/skills/fine/SKILL.md")
        );
        assert_eq!(
            roots.key_path("../outside/x").unwrap_err().code(),
            ErrorCode::UnsafePath
        );
        // A link as the last part is not followed here; readers refuse it.
        assert!(roots.key_path(".cursor/skills/evil").is_ok());
    }

    #[test]
    fn links_inside_the_project_are_followed_only_between_agent_folders() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("project");
        let home = dir.path().join("home");
        for d in [
            ".git/hooks",
            ".agents/skills",
            ".claude",
            ".cursor",
            "team/alpha",
            "shared",
        ] {
            std::fs::create_dir_all(project.join(d)).unwrap();
        }
        std::fs::create_dir_all(&home).unwrap();
        let link = |target: &str, at: &str| std::os::unix::fs::symlink(target, project.join(at)).unwrap();
        // A repository can ship any of these links; only the last two stay in agent folders.
        link("../.git", ".claude/skills");
        link("../team", ".cursor/skills");
        link("shared", ".aam");
        link("../.agents/skills", ".cursor/rules");
        let roots = Roots::new(project.clone(), home, false);
        for key in [
            ".claude/skills/hooks/pre-commit",
            ".cursor/skills/alpha/SKILL.md",
            ".aam/packages/kit/aam.yaml",
        ] {
            let err = roots.key_path(key).unwrap_err();
            assert_eq!(err.code(), ErrorCode::UnsafePath, "{key}");
            assert!(
                err.message().contains("not a folder aam installs into"),
                "{}",
                err.message()
            );
        }
        assert_eq!(
            roots.file_path(keys::LOCK_KEY).unwrap_err().code(),
            ErrorCode::UnsafePath
        );
        assert_eq!(
            roots.key_path(".cursor/rules/style.mdc").unwrap(),
            project.join(".cursor/rules/style.mdc")
        );
        assert_eq!(roots.file_path("CLAUDE.md").unwrap(), project.join("CLAUDE.md"));
    }

    #[test]
    fn nothing_is_reached_through_a_link_to_where_installs_do_not_write() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("project");
        std::fs::create_dir_all(project.join(".aam/packages/pdf")).unwrap();
        std::fs::create_dir_all(project.join(".claude")).unwrap();
        std::fs::create_dir_all(project.join("config/cursor/skills")).unwrap();
        std::os::unix::fs::symlink("../.aam/packages", project.join(".claude/skills")).unwrap();
        std::os::unix::fs::symlink("config/cursor", project.join(".cursor")).unwrap();
        let roots = Roots::new(project.clone(), dir.path().join("home"), false);
        // Another package's copy, reached from an agent folder.
        let to_copy = crate::deploy::Location::Project(".claude/skills/pdf/aam.yaml".into());
        assert_eq!(roots.resolve(&to_copy, "x").unwrap_err().code(), ErrorCode::UnsafePath);
        // A link the user made inside the project, to a folder installs do not
        // write: nothing beyond it is written, removed or read (a skill folder
        // linked to `.git` had `diff` print its config).
        let mine = crate::deploy::Location::Project(".cursor/skills/pdf/SKILL.md".into());
        assert_eq!(roots.resolve(&mine, "x").unwrap_err().code(), ErrorCode::UnsafePath);
        assert_eq!(
            roots.resolve_to_read(&mine, "x").unwrap_err().code(),
            ErrorCode::UnsafePath
        );
        assert!(roots.beyond_link(&mine));
        std::fs::create_dir_all(project.join("config/cursor/skills/pdf")).unwrap();
        std::fs::write(project.join("config/cursor/skills/pdf/SKILL.md"), "x").unwrap();
        assert!(matches!(roots.open_to_read(&mine, "x").unwrap().1, Inside::Outside));
        let outside = crate::deploy::Location::Project("../x/SKILL.md".into());
        assert!(roots.resolve_to_read(&outside, "x").is_err());
    }

    #[test]
    fn links_a_user_made_in_the_home_folder_are_followed_inside_it() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir_all(home.join("dotfiles/claude")).unwrap();
        std::os::unix::fs::symlink("dotfiles/claude", home.join(".claude")).unwrap();
        let global = Roots::new(home.clone(), home.clone(), true);
        assert_eq!(
            global.key_path("~/.claude/skills/pdf/SKILL.md").unwrap(),
            home.join(".claude/skills/pdf/SKILL.md")
        );
        std::fs::create_dir_all(home.join("dotfiles/codex")).unwrap();
        std::os::unix::fs::symlink("dotfiles/codex", home.join(".codex")).unwrap();
        let project = Roots::new(dir.path().join("project"), home.clone(), false);
        assert_eq!(
            project.key_path("~/.codex/prompts/review.md").unwrap(),
            home.join(".codex/prompts/review.md")
        );
    }

    #[test]
    fn lock_entries_are_checked_with_their_package() {
        let dir = tempfile::tempdir().unwrap();
        let roots = Roots::new(dir.path().to_path_buf(), dir.path().join("home"), false);
        let entry = |keys: &[&str]| LockedPackage {
            version: "1.0.0".into(),
            source: crate::packages::lock::Origin::Registry,
            source_name: "r".into(),
            source_commit: None,
            source_url: None,
            checksum: "c".into(),
            dependencies: Default::default(),
            platforms: Vec::new(),
            requested: None,
            artifacts: Vec::new(),
            deployed: Vec::new(),
            file_checksums: keys.iter().map(|k| (k.to_string(), "0".repeat(64))).collect(),
            created_dirs: Vec::new(),
            allowed_findings: Vec::new(),
        };
        assert!(
            roots
                .check_entry("kit", &entry(&[".aam/packages/kit/aam.yaml"]))
                .is_ok()
        );
        for (name, key) in [
            ("kit", "../outside/x"),
            ("kit", "/abs/path"),
            ("kit", "~/.profile"),
            ("kit", ".aam/packages/other/aam.yaml"),
            ("../kit", ".aam/packages/../kit/aam.yaml"),
        ] {
            let err = roots.check_entry(name, &entry(&[key])).unwrap_err();
            assert_eq!(err.code(), ErrorCode::LockInvalid, "{key}");
            assert!(err.message().contains(name), "{}", err.message());
        }
        // A version of megabytes is refused without being quoted.
        let mut huge = entry(&[]);
        huge.version = format!("0.0.0+{}", "a".repeat(MAX_VERSION_CHARS));
        let err = roots.check_entry("kit", &huge).unwrap_err();
        assert_eq!(err.code(), ErrorCode::LockInvalid);
        assert!(err.message().len() < 200, "{}", err.message());
        huge.version = "1.0.0".into();
        huge.requested = Some("x".repeat(MAX_ORIGIN_CHARS + 1));
        assert_eq!(
            roots.check_entry("kit", &huge).unwrap_err().code(),
            ErrorCode::LockInvalid
        );
    }
}
