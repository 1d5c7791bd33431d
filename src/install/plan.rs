//! What one install, upgrade or uninstall will change, worked out completely
//! before anything is touched.
//!
//! A [`Plan`] starts from the lock file and takes packages one by one: each
//! one's copy under `.aam/packages/`, its deployments on every platform,
//! shared-file sections (kept in memory until the end, so several packages can
//! add to one `CLAUDE.md`), and the removal of what an earlier version wrote
//! and the new one does not. Conflicts (a target another package owns, a file
//! aam did not write, a damaged section, an artifact whose text forges a
//! section marker) are errors here, so a command that fails has changed
//! nothing. [`Plan::execute`] hands the result to the journal.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::Roots;
use super::journal::{self, FileChange, MirrorOp};
use super::keys::{self, CheckedKey, LOCK_KEY};
use super::mirror::WrittenHere;
use super::state::{self, FileState};
use crate::agents::Format;
use crate::deploy::sections::{self, Section};
use crate::deploy::{self, Location, Target};
use crate::error::{Error, ErrorCode, Result};
use crate::packages::lock::{self, Deployment, LockFile, LockedArtifact, LockedPackage, Origin, section_key};
use crate::packages::manifest::Manifest;
use crate::packages::store::ObjectStore;
use crate::scan::{ArtifactKind, Platform};

/// The largest shared file (`CLAUDE.md`, `AGENTS.md` ...) aam reads to keep
/// sections in: far above any real one, and it is read whole.
pub const MAX_SHARED_FILE: u64 = 16 << 20;

/// File contents, shared between a package's copy, its deployments and the
/// object store instead of copied for each (a big file is held once).
pub type Bytes = std::sync::Arc<[u8]>;

/// One artifact a package holds, as the catalog mirror records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    /// The catalog artifact, for artifacts taken from a source.
    pub artifact_id: Option<crate::catalog::ArtifactId>,
    /// Type.
    pub kind: ArtifactKind,
    /// Name inside the package.
    pub name: String,
    /// Path in the package, or in the source repository.
    pub path: String,
}

/// A package ready to install: its manifest, its files and where it came from.
pub struct Prepared {
    /// The manifest.
    pub manifest: Manifest,
    /// Package files (the manifest included): path to (bytes, executable).
    pub files: BTreeMap<String, (Bytes, bool)>,
    /// Where it came from.
    pub origin: Origin,
    /// Registry name, source name, or path.
    pub source_name: String,
    /// Commit its files were read at (source artifacts).
    pub source_commit: Option<String>,
    /// The source's repository URL, without credentials (source artifacts).
    pub source_url: Option<String>,
    /// blake3 of the archive (or the manifest, for source artifacts).
    pub checksum: String,
    /// What was asked for.
    pub requested: Option<String>,
    /// Source artifacts it was made from.
    pub artifacts: Vec<LockedArtifact>,
    /// What it holds, for the catalog mirror.
    pub members: Vec<Member>,
    /// The blocking audit findings in it that were let through (asked for,
    /// or recorded by its install): the lock keeps them, so an upgrade or a
    /// restore that brings no new one need not be told again.
    pub allowed_findings: Vec<crate::packages::lock::AllowedFinding>,
    /// Installed over an entry whose commit its source no longer has in its
    /// history (see `aam outdated`): written even when the files are the
    /// same, so the lock records a commit a clone's restore can fetch.
    pub replaces_lost_commit: bool,
}

impl Prepared {
    /// The platforms among `platforms` that take none of its artifact types
    /// (in a project, or the home folder when `global`): nothing deploys there.
    pub fn platforms_taking_none(&self, platforms: &[Platform], global: bool) -> Vec<Platform> {
        platforms
            .iter()
            .copied()
            .filter(|&platform| {
                !self
                    .manifest
                    .artifacts
                    .all()
                    .any(|(kind, artifact)| deploy::target(kind, &artifact.name, platform, global).is_some())
            })
            .collect()
    }
}

/// Everything a command will change, built package by package against an
/// in-memory view of shared files.
pub struct Plan<'r> {
    roots: &'r Roots,
    lock: LockFile,
    /// Shared files (`AGENTS.md`, `CLAUDE.md`) by key: (original text, new text).
    shared: BTreeMap<String, (Option<String>, String)>,
    /// blake3 of each shared file's bytes as read (its text may be decoded lossily).
    shared_read: BTreeMap<String, String>,
    changes: Vec<FileChange>,
    /// Bytes to keep in the object store for `aam diff`.
    originals: Vec<Bytes>,
    /// Target key to the package that claims it in this command.
    claimed: BTreeMap<String, String>,
    /// Folders the package being added will create.
    creating: std::collections::BTreeSet<String>,
    /// Folders to remove after the change when they are empty.
    prune: Vec<String>,
    /// What aam wrote at the lock's keys (see [`WrittenHere`]): a file a lock
    /// names but aam never wrote there is never removed (the lock may have
    /// come from elsewhere, or been forged).
    written_here: WrittenHere,
    /// Replace home-folder files other installs share even with other content
    /// (`upgrade --force`).
    replacing_shared: bool,
    /// Save files and sections aam did not install that are where a package
    /// deploys, then replace them (else they are a conflict, unless forced).
    saving_unowned: bool,
    /// The edited files this command replaces are saved first (`--backup`).
    backing_up_edits: bool,
    /// Those found so far (see [`Plan::take_in_the_way`]).
    in_the_way: Vec<String>,
    /// Home-folder files left in place because other installs on this
    /// machine record them too (see [`WrittenHere::shared_with`]).
    kept_shared: Vec<String>,
    /// Home-folder files a project's lock names that hold bytes no install on
    /// this machine wrote there: never removed on that lock's word, forced or not.
    kept_unrecorded: Vec<String>,
    force: bool,
    /// Adopting a copy the user made: deployed files already on disk are
    /// recorded with the package's digests and left as they are.
    adopting: bool,
    /// Edited files the command replaces as decided (see [`Plan::replacing_edits`]).
    replacing_edits: std::collections::BTreeSet<String>,
    /// A restore: what the lock records is deployed as recorded (see
    /// [`Plan::keeping_recorded_places`]).
    keeping_places: bool,
    /// Where the files this command writes and removes really are (see
    /// [`Roots::real_place`]): a key landing on a file written here is not
    /// removed, and one file is removed once, whatever keys lead to it.
    writing_places: std::collections::BTreeSet<PathBuf>,
    removing_places: std::collections::BTreeSet<PathBuf>,
    /// What a file written under a new name must still hold when it is
    /// replaced: the digests its package records for it under its other name.
    expected_elsewhere: BTreeMap<String, Vec<String>>,
    /// Where each key looked up so far really is (see [`Plan::same_place`]):
    /// resolved once per plan, however many keys it is compared with.
    real_places: std::cell::RefCell<BTreeMap<String, Option<PathBuf>>>,
    /// Files left in place because another package records them under
    /// another name (see [`Plan::kept_for_other_packages`]).
    kept_for_others: Vec<String>,
}

impl<'r> Plan<'r> {
    /// A plan over the lock file under the roots (every entry checked first).
    pub fn new(roots: &'r Roots, force: bool) -> Result<Self> {
        let lock = lock::read(&roots.root)?;
        roots.check_lock(&lock)?;
        Ok(Self::over(roots, lock, force))
    }

    /// A scratch plan over the lock file this one started from (read and
    /// checked once), to work out what a package would write without planning
    /// it here.
    pub fn scratch(&self, force: bool) -> Self {
        Self::over(self.roots, self.lock.clone(), force)
    }

    fn over(roots: &'r Roots, lock: LockFile, force: bool) -> Self {
        Self {
            lock,
            roots,
            shared: BTreeMap::new(),
            shared_read: BTreeMap::new(),
            changes: Vec::new(),
            originals: Vec::new(),
            claimed: BTreeMap::new(),
            creating: Default::default(),
            prune: Vec::new(),
            written_here: WrittenHere::default(),
            kept_shared: Vec::new(),
            kept_unrecorded: Vec::new(),
            replacing_shared: false,
            saving_unowned: false,
            backing_up_edits: false,
            in_the_way: Vec::new(),
            force,
            adopting: false,
            replacing_edits: Default::default(),
            keeping_places: false,
            writing_places: Default::default(),
            removing_places: Default::default(),
            expected_elsewhere: BTreeMap::new(),
            real_places: Default::default(),
            kept_for_others: Vec::new(),
        }
    }

    /// A restore's plan, where what the lock file records is deployed as an
    /// earlier aam recorded it, so a committed lock restores as it is: at a
    /// former place ([`crate::agents::FORMER_PLACES`]) in the format it had
    /// ([`crate::agents::FORMER_FORMATS`] too), a shared copy under the agent
    /// the lock names, and nothing where an agent gained a place since
    /// ([`crate::agents::ADDED_PLACES`]). An install or an upgrade deploys
    /// where the agent table says now.
    pub fn keeping_recorded_places(mut self) -> Self {
        self.keeping_places = true;
        self
    }

    /// The order `platforms` take `artifact` of package `package` in: by name,
    /// so that of the agents sharing a folder or a file (which get one copy,
    /// recorded once) the first by name records it, whatever order they were
    /// asked for in; for a restore, the agents the lock records it for first,
    /// so a lock an older aam wrote in another order restores as it is.
    fn deploy_order(&self, package: &str, kind: ArtifactKind, artifact: &str, platforms: &[Platform]) -> Vec<Platform> {
        let mut order = platforms.to_vec();
        order.sort_by_key(|p| p.as_str());
        order.dedup();
        if self.keeping_places {
            order.sort_by_key(|&p| self.recorded_targets(package, p, kind, artifact).is_empty());
        }
        order
    }

    /// Where the lock file deploys `artifact` of package `package` on `platform`.
    fn recorded_targets(&self, package: &str, platform: Platform, kind: ArtifactKind, artifact: &str) -> Vec<&str> {
        self.lock.packages.get(package).map_or_else(Vec::new, |entry| {
            entry
                .deployed
                .iter()
                .filter(|d| d.platform == platform && d.kind == kind && d.name == artifact)
                .map(|d| d.target.as_str())
                .collect()
        })
    }

    /// Where `artifact` of package `package` goes on `platform`: where the
    /// agent table says, or, for a restore, the former place the lock
    /// records it at; with the format that place takes.
    fn target(
        &self,
        package: &str,
        kind: ArtifactKind,
        artifact: &str,
        platform: Platform,
    ) -> Option<(Target, Format)> {
        let global = self.roots.global;
        // An agent that took no artifact of a type when the lock was written
        // gets none from a restore (the lock would change).
        let recorded = || self.recorded_targets(package, platform, kind, artifact);
        if self.keeping_places && platform.gained_place(kind, global) && recorded().is_empty() {
            return None;
        }
        if self.keeping_places
            && let Some(former) = deploy::former_target(kind, artifact, platform, global)
            && recorded().contains(&target_key(&former).as_str())
        {
            return Some((former, platform.former_slot(kind)?.format));
        }
        let format = platform.agent().slot(kind)?.format;
        Some((deploy::target(kind, artifact, platform, global)?, format))
    }

    /// Marks `keys` as edited files this command replaces as the user decided
    /// (saved to a backup first, forced, or merged): at the end their old
    /// versions are deleted as they are, and a package added after this call
    /// removes those it no longer writes. Every other file replaced or removed
    /// is deleted only while it still holds bytes aam wrote there (what the
    /// lock records, or what the catalog says aam wrote at that path on this
    /// machine), so an edit saved while the command runs is kept (see
    /// [`FileChange::expected`]).
    pub fn replacing_edits<'k>(&mut self, keys: impl IntoIterator<Item = &'k String>) {
        self.replacing_edits.extend(keys.into_iter().cloned());
    }

    /// Sets what aam wrote in this project (see `written_here`); a plan
    /// without it removes no file unless forced.
    pub fn with_ownership(mut self, written_here: WrittenHere) -> Self {
        self.written_here = written_here;
        self
    }

    /// Replaces home-folder files other installs share even when they hold
    /// other content, for all of them (`upgrade --force`).
    pub fn replacing_shared_files(mut self) -> Self {
        self.replacing_shared = true;
        self
    }

    /// Replaces files and sections aam did not install where a package
    /// deploys, after the caller saved them ([`Plan::take_in_the_way`] names
    /// them), instead of refusing them (`--backup`).
    pub fn saving_what_is_in_the_way(mut self) -> Self {
        self.saving_unowned = true;
        self.backing_up_edits = true;
        self
    }

    /// Says the caller saves the edited files it replaces first (a restore's
    /// `--backup`): a home-folder file of the user's among them may then be
    /// replaced (see [`Plan::foreign_in_home`]).
    pub fn backing_up_edits(mut self) -> Self {
        self.backing_up_edits = true;
        self
    }

    /// The files and sections aam did not install that the packages planned
    /// since the last call replace: what to save before the plan runs.
    pub fn take_in_the_way(&mut self) -> Vec<String> {
        std::mem::take(&mut self.in_the_way)
    }

    /// The home-folder files this plan leaves because other installs on this
    /// machine use them too.
    pub fn kept_shared(&self) -> &[String] {
        &self.kept_shared
    }

    /// The home-folder files this plan leaves because they hold what no
    /// install on this machine wrote there (a project's lock file names them).
    pub fn kept_unrecorded(&self) -> &[String] {
        &self.kept_unrecorded
    }

    /// Whether `key` is a home-folder file a project's lock names that holds
    /// bytes no install on this machine wrote there (and, with `package`,
    /// not what that package's lock entry records either: a restore in a
    /// fresh `AAM_HOME`). A lock file comes with a repository and may name a
    /// file of the user's there (`~/.codex/prompts/notes.md`), or one the
    /// user edited since aam wrote it: neither is aam's to replace or remove
    /// on that lock's word, forced or not.
    fn foreign_in_home(&self, key: &str, package: Option<&str>) -> Result<bool> {
        if self.roots.global || !key.starts_with("~/") {
            return Ok(false);
        }
        let Some(digest) = state::current_digest(self.roots, key)? else {
            // Nothing there is nobody's; a link or a folder there is the user's.
            return state::key_exists(self.roots, key);
        };
        let recorded = package
            .and_then(|p| self.lock.packages.get(p))
            .and_then(|p| p.file_checksums.get(key));
        Ok(!self.written_here.wrote(key, &digest) && recorded != Some(&digest))
    }

    /// Whether aam wrote `digest`'s bytes at `key` on this machine.
    pub fn written_here(&self, key: &str, digest: &str) -> bool {
        self.written_here.wrote(key, digest)
    }

    /// Whether the file or section at `key` holds bytes aam wrote at that
    /// very place on this machine: nobody's work to protect, though no lock
    /// records it any more (the lock file was lost, or the last install
    /// sharing a home-folder file is gone), so an install replaces it.
    fn holds_own_bytes(&self, key: &str) -> Result<bool> {
        Ok(state::current_digest(self.roots, key)?.is_some_and(|digest| self.written_here(key, &digest)))
    }

    /// Whether aam wrote only other bytes than `digest`'s at `key` on this
    /// machine (see [`WrittenHere::wrote_only_others`]).
    pub fn written_from_another_version(&self, key: &str, digest: &str) -> bool {
        self.written_here.wrote_only_others(key, digest)
    }

    /// The project or home folder the plan writes in.
    pub fn roots(&self) -> &'r Roots {
        self.roots
    }

    /// The lock file as the plan has it so far.
    pub fn lock(&self) -> &LockFile {
        &self.lock
    }

    /// The text a shared file will have (read on first use, from the file as
    /// opened in its folder as checked: never through a link, never a FIFO).
    fn shared_text(&mut self, key: &str) -> Result<String> {
        use std::io::Read;
        if let Some((_, text)) = self.shared.get(key) {
            return Ok(text.clone());
        }
        let location = keys::check_file(key, self.roots.global).map_err(|why| super::unsafe_path(key, &why))?;
        // Where it will be written must be a place aam writes.
        self.roots.resolve(&location, key)?;
        let (path, found) = self.roots.open_to_read(&location, key)?;
        let text = match found {
            crate::paths::Inside::File(file) => {
                let mut bytes = Vec::new();
                file.take(MAX_SHARED_FILE + 1)
                    .read_to_end(&mut bytes)
                    .map_err(|e| Error::io("read", &path, e))?;
                if bytes.len() as u64 > MAX_SHARED_FILE {
                    return Err(Error::new(
                        ErrorCode::Conflict,
                        format!(
                            "`{key}` is over {} MiB; aam keeps its sections only in a smaller file",
                            MAX_SHARED_FILE >> 20
                        ),
                    )
                    .with_hint(format!("shorten `{key}`, or install without the platform that uses it")));
                }
                let digest = blake3::hash(&bytes).to_hex().to_string();
                // Written back whole: a byte that is no UTF-8 would be lost.
                let text = String::from_utf8(bytes).map_err(|_| {
                    Error::new(
                        ErrorCode::Conflict,
                        format!("`{key}` is not UTF-8 text; aam keeps its sections only in a UTF-8 file"),
                    )
                    .with_hint(format!(
                        "convert `{key}` to UTF-8 (for example `iconv -f LATIN1 -t UTF-8`), or install without the platform that uses it"
                    ))
                })?;
                self.shared_read.insert(key.to_string(), digest);
                Some(text)
            }
            crate::paths::Inside::Missing => None,
            crate::paths::Inside::Link(_) | crate::paths::Inside::NotPlain | crate::paths::Inside::Outside => {
                return Err(Error::new(
                    ErrorCode::UnsafePath,
                    format!(
                        "`{key}` is a link, a folder or a special file; aam keeps its sections only in a plain file"
                    ),
                )
                .with_hint(format!(
                    "replace `{key}` with a regular file, or install without the platform that uses it"
                )));
            }
        };
        let current = text.clone().unwrap_or_default();
        self.shared.insert(key.to_string(), (text, current.clone()));
        Ok(current)
    }

    fn set_shared_text(&mut self, key: &str, text: String) {
        if let Some((_, current)) = self.shared.get_mut(key) {
            *current = text;
        }
    }

    /// The files this plan leaves in place because another installed package
    /// records them under another name (an agent folder linked to another).
    pub fn kept_for_other_packages(&self) -> &[String] {
        &self.kept_for_others
    }

    /// Which package (other than `except`) deployed `key`, under that name or
    /// under another one a link joins to it (`.claude/skills` linked to
    /// `.agents/skills` shows one file under both).
    fn owner(&self, key: &str, except: &str) -> Option<String> {
        let others = || self.lock.packages.iter().filter(|(name, _)| *name != except);
        let claims = |p: &LockedPackage, same: &dyn Fn(&str) -> bool| {
            p.deployed.iter().any(|d| same(&d.target)) || p.file_checksums.keys().any(|k| same(k))
        };
        let literal = |k: &str| k == key;
        if let Some(owner) = self.claimed.get(key).filter(|o| *o != except) {
            return Some(owner.clone());
        }
        if let Some((name, _)) = others().find(|(_, p)| claims(p, &literal)) {
            return Some(name.clone());
        }
        let linked = |k: &str| self.same_place(k, key);
        if let Some((_, owner)) = self.claimed.iter().find(|(k, o)| *o != except && linked(k)) {
            return Some(owner.clone());
        }
        others().find(|(_, p)| claims(p, &linked)).map(|(name, _)| name.clone())
    }

    /// Whether the keys `a` and `b` lead to one file or folder: the same key,
    /// or the same name in folders a link joins (a section is only itself).
    /// Each key is resolved once per plan, and only keys of the same file
    /// name are compared.
    fn same_place(&self, a: &str, b: &str) -> bool {
        if a == b || a.rsplit('/').next() != b.rsplit('/').next() {
            return a == b;
        }
        let mut places = self.real_places.borrow_mut();
        let mut place = |k: &str| {
            places
                .entry(k.to_string())
                .or_insert_with(|| self.roots.real_place(k))
                .clone()
        };
        let first = place(a);
        first.is_some() && first == place(b)
    }

    /// The digests `package`'s entry records for the file `key` under another
    /// name: an agent folder the user linked to another one (`.claude/skills`
    /// to `.agents/skills`) shows one install under both. Only a recorded file
    /// a link joins to `key` that still holds what the entry records counts: a
    /// lock file cannot make a file of the user's the package's by naming it twice.
    fn recorded_under_another_name(&self, package: &str, key: &str) -> Option<Vec<String>> {
        let real = self.roots.real_place(key)?;
        let entry = self.lock.packages.get(package)?;
        let linked = self.roots.reached_through_link(key);
        let digests: Vec<String> = entry
            .file_checksums
            .iter()
            .filter(|(k, _)| *k != key && (linked || self.roots.reached_through_link(k)))
            .filter(|(k, _)| self.roots.real_place(k).as_ref() == Some(&real))
            .filter(|(k, digest)| state::key_state(self.roots, k, digest).is_ok_and(|s| s == FileState::Ok))
            .map(|(_, digest)| digest.clone())
            .collect();
        (!digests.is_empty()).then_some(digests)
    }

    fn conflict(&self, key: &str, package: &str) -> Result<()> {
        if let Some(owner) = self.owner(key, package) {
            return Err(Error::new(
                ErrorCode::Conflict,
                format!("`{key}` is already deployed by package `{owner}`"),
            )
            .with_hint(format!(
                "uninstall `{owner}` first, or install without the platform that clashes"
            )));
        }
        Ok(())
    }

    /// Refuses `key` when something aam did not install exists there, unless
    /// forced; `Ok(true)` when it is to be saved first and replaced
    /// ([`Plan::saving_what_is_in_the_way`]).
    fn unowned_exists(&self, key: &str, package: &str, exists: bool) -> Result<bool> {
        let ours = self.lock.packages.get(package).is_some_and(|p| {
            p.deployed.iter().any(|d| d.target == key)
                || p.file_checksums
                    .keys()
                    .any(|k| k == key || k.starts_with(&format!("{key}/")))
        });
        let saved_edit = self.backing_up_edits && self.replacing_edits.contains(key);
        if exists && !saved_edit && self.foreign_in_home(key, Some(package))? {
            return match self.saving_unowned {
                true => Ok(true),
                false => Err(foreign_home_file(key)),
            };
        }
        // A home-folder file other installs share is checked by content when written.
        let shared = !self.written_here.shared_with(key).is_empty();
        if exists && !ours && !shared && !self.force && !self.holds_own_bytes(key)? {
            if self.saving_unowned {
                return Ok(true);
            }
            return Err(not_installed(key));
        }
        Ok(false)
    }

    /// Writes `bytes` at the file `key` for `package`. A file another
    /// package's lock entry records is that package's (`AAM_CONFLICT`), even
    /// inside a folder this one deploys; one on disk that this package's entry
    /// does not record is not aam's to replace ([`not_installed`]).
    fn write(
        &mut self,
        key: &str,
        package: &str,
        bytes: Bytes,
        executable: bool,
        checksums: &mut BTreeMap<String, String>,
    ) -> Result<()> {
        match self.roots.check_key(key)? {
            CheckedKey::File(_) => {}
            CheckedKey::Section { .. } => return Err(keys_error(key)),
        }
        let path = self.roots.key_path(key)?;
        let in_copy = key.starts_with(&format!("{}/", keys::PACKAGES_DIR));
        if self.adopting && !in_copy {
            // The user's copy stays as it is (a file it lacks is not added):
            // the lock records what the package holds, so `verify` reports
            // where the copy differs.
            checksums.insert(key.to_string(), blake3::hash(&bytes).to_hex().to_string());
            self.originals.push(bytes);
            return Ok(());
        }
        // A file of a package's copy no lock entry records (the lock file was
        // lost or merged away) that already holds these bytes is a stale copy:
        // writing it again changes nothing.
        self.conflict(key, package)?;
        let saved_edit = self.backing_up_edits && self.replacing_edits.contains(key);
        if !saved_edit && self.foreign_in_home(key, Some(package))? {
            match self.saving_unowned {
                true if !self.in_the_way.iter().any(|k| k == key) => self.in_the_way.push(key.to_string()),
                true => {}
                false => return Err(foreign_home_file(key)),
            }
        }
        let ours = self
            .lock
            .packages
            .get(package)
            .is_some_and(|p| p.file_checksums.contains_key(key))
            || (in_copy && state::current_bytes(self.roots, key)?.is_some_and(|now| now == bytes[..]));
        let others = self.written_here.shared_with(key);
        let replace_shared = self.force || self.replacing_shared;
        if !replace_shared && !others.is_empty() && std::fs::symlink_metadata(&path).is_ok() {
            // A home-folder file other installs share: written only when it
            // is already these bytes, as aam wrote them, or once saved (`--backup`).
            let digest = blake3::hash(&bytes).to_hex().to_string();
            let same = self.written_here(key, &digest) && state::key_state(self.roots, key, &digest)? == FileState::Ok;
            if !same && !saved_edit {
                if !self.saving_unowned {
                    return Err(self.shared_file_differs(key, others));
                }
                if !self.in_the_way.iter().any(|k| k == key) {
                    self.in_the_way.push(key.to_string());
                }
            }
        } else if !self.force && !ours && std::fs::symlink_metadata(&path).is_ok() && !self.holds_own_bytes(key)? {
            if let Some(digests) = self.recorded_under_another_name(package, key) {
                // Replaced only while it still holds what the entry records there.
                self.expected_elsewhere.insert(key.to_string(), digests);
            } else if self.saving_unowned {
                self.in_the_way.push(key.to_string());
            } else {
                return Err(not_installed(key));
            }
        }
        self.creating.extend(self.roots.missing_dirs(key));
        self.writing_places.extend(self.roots.real_place(key));
        checksums.insert(key.to_string(), blake3::hash(&bytes).to_hex().to_string());
        self.originals.push(bytes.clone());
        self.changes.push(FileChange {
            key: key.to_string(),
            content: Some((bytes, executable)),
            expected: Vec::new(),
        });
        Ok(())
    }

    /// `AAM_CONFLICT`: the home-folder file `key`, which the installs `others`
    /// share, holds other bytes than this install writes: another version aam
    /// wrote there, or the user's edits.
    fn shared_file_differs(&self, key: &str, others: &[String]) -> Error {
        let now = state::current_digest(self.roots, key).ok().flatten();
        let what = match now.is_some_and(|digest| self.written_here(key, &digest)) {
            true => "another version aam wrote there",
            false => "edits of yours",
        };
        Error::new(
            ErrorCode::Conflict,
            format!(
                "`{key}` is in your home folder, shared with {}, and holds {what}",
                others.join(", ")
            ),
        )
        .with_hint("every project that installs it uses that one file: pass `--backup` to save what it holds in `$AAM_HOME/backups/` and replace it for all of them, or `--force` to replace it without a copy; or install the same version everywhere, or uninstall it there first")
    }

    /// How the lock records where `package` (named `name`) comes from. A
    /// folder or archive inside the root is recorded relative to it (see
    /// [`Roots::recorded_path`]), unless the lock already names that place
    /// otherwise (an older lock's absolute path is kept, so a restore leaves
    /// the lock file as it is).
    fn recorded_origin(&self, name: &str, package: &Prepared) -> String {
        if !matches!(package.origin, Origin::Local | Origin::Archive) {
            return package.source_name.clone();
        }
        match self.lock.packages.get(name) {
            Some(previous)
                if matches!(previous.source, Origin::Local | Origin::Archive)
                    && self.roots.records_place(&previous.source_name, &package.source_name) =>
            {
                previous.source_name.clone()
            }
            _ => self.roots.recorded_path(&package.source_name),
        }
    }

    /// Plans one package: its copy under `.aam/packages/`, its deployments, and
    /// the removal of whatever an earlier version deployed that this one does not.
    pub fn add(&mut self, package: &Prepared, platforms: &[Platform]) -> Result<LockedPackage> {
        let name = package.manifest.name.clone();
        crate::packages::manifest::check_package_name(&name)
            .map_err(|why| super::unsafe_path(&keys::copy_dir(&name), &why))?;
        let mut checksums = BTreeMap::new();
        let mut deployed = Vec::new();
        self.creating.clear();
        let copy = keys::copy_dir(&name);
        for (path, (bytes, executable)) in &package.files {
            self.write(
                &format!("{copy}/{path}"),
                &name,
                bytes.clone(),
                *executable,
                &mut checksums,
            )?;
        }
        let mut section_keys = Vec::new();
        for (kind, artifact) in package.manifest.artifacts.all() {
            let main = match kind {
                ArtifactKind::Skill => format!("{}/SKILL.md", artifact.path),
                _ => artifact.path.clone(),
            };
            let text = package
                .files
                .get(&main)
                .map(|(b, _)| String::from_utf8_lossy(b).into_owned())
                .unwrap_or_default();
            // Agents sharing a folder (`.agents/skills`) or a file get one copy,
            // recorded once; so do agent folders the user linked to one
            // another, unless a restore finds the lock recording both.
            let mut written = std::collections::BTreeSet::new();
            let mut written_places = std::collections::BTreeSet::new();
            for platform in self.deploy_order(&name, kind, &artifact.name, platforms) {
                let Some((target, format)) = self.target(&name, kind, &artifact.name, platform) else {
                    continue; // the agent takes no artifact of this type here
                };
                if let Target::Dir(location) | Target::File(location) = &target {
                    let key = location.key();
                    let recorded = || {
                        self.recorded_targets(&name, platform, kind, &artifact.name)
                            .contains(&key.as_str())
                    };
                    let place = self.roots.real_place(&key);
                    let same_place = place.is_some_and(|p| !written_places.insert(p));
                    if !written.insert(key.clone()) || (same_place && !(self.keeping_places && recorded())) {
                        continue;
                    }
                }
                match target {
                    Target::Dir(location) => {
                        let key = location.key();
                        self.claim_path(&key, &name, &location, true)?;
                        let prefix = format!("{}/", artifact.path);
                        for (path, (bytes, executable)) in &package.files {
                            if let Some(rel) = path.strip_prefix(&prefix) {
                                let key = location.join(rel).key();
                                self.write(&key, &name, bytes.clone(), *executable, &mut checksums)?;
                            }
                        }
                        deployed.push(deployment(platform, kind, &artifact.name, key));
                    }
                    Target::File(location) => {
                        let key = location.key();
                        self.claim_path(&key, &name, &location, false)?;
                        let recorded = self.lock.packages.get(&name).and_then(|p| p.file_checksums.get(&key));
                        let rendered = rendered_as_recorded(
                            format,
                            (platform, kind),
                            artifact,
                            &text,
                            recorded,
                            self.keeping_places,
                        );
                        self.write(&key, &name, Bytes::from(rendered.into_bytes()), false, &mut checksums)?;
                        deployed.push(deployment(platform, kind, &artifact.name, key));
                    }
                    Target::Section {
                        file,
                        name: section,
                        kind,
                    } => {
                        let key = section_key(&file.key(), &section, kind);
                        if self.claimed.get(&key).is_some_and(|o| *o == name) {
                            continue; // agents sharing a file (`AGENTS.md`) get one section: the same key is the same section
                        }
                        self.conflict(&key, &name)?;
                        self.roots.check_key(&key)?;
                        let body = deploy::section_text(kind, &artifact.name, &text);
                        if sections::forges_marker(&body) {
                            return Err(Error::new(
                                ErrorCode::ArtifactRejected,
                                format!(
                                    "`{}` of package `{name}` has a line that looks like an aam section marker",
                                    artifact.name
                                ),
                            )
                            .with_hint(format!(
                                "such a line could cut another section or your text out of `{}`; remove `<!-- BEGIN AAM: ... -->`/`<!-- END AAM: ... -->` lines from the artifact, or install without the platform that uses sections",
                                file.key()
                            )));
                        }
                        let file_key = file.key();
                        let current = self.shared_text(&file_key)?;
                        let exists = match sections::read(&current, &section, kind.as_str()) {
                            Section::Absent => false,
                            Section::Present(_) => true,
                            Section::Damaged => return Err(damaged(&key)),
                        };
                        if self.unowned_exists(&key, &name, exists)? {
                            self.in_the_way.push(key.clone());
                        }
                        let mut updated = sections::upsert(&current, &section, kind.as_str(), &body);
                        if self.keeping_places
                            && let Some(recorded) =
                                self.lock.packages.get(&name).and_then(|p| p.file_checksums.get(&key))
                        {
                            // A restore writes a rule as the lock records it,
                            // without its scope's sentence when an earlier aam wrote none.
                            let digest = |text: &str| {
                                let content = sections::get(text, &section, kind.as_str()).unwrap_or_default();
                                blake3::hash(content.as_bytes()).to_hex().to_string()
                            };
                            let unscoped =
                                sections::upsert(&current, &section, kind.as_str(), &deploy::section_body(&text));
                            if digest(&updated) != *recorded && digest(&unscoped) == *recorded {
                                updated = unscoped;
                            }
                        }
                        self.set_shared_text(&file_key, updated);
                        self.claimed.insert(key.clone(), name.clone());
                        section_keys.push((key.clone(), file_key, section.clone(), kind));
                        deployed.push(deployment(platform, kind, &artifact.name, key));
                    }
                }
            }
        }
        for (key, file_key, section, kind) in section_keys {
            let text = self.shared_text(&file_key)?;
            let content = sections::get(&text, &section, kind.as_str())
                .unwrap_or_default()
                .to_string();
            checksums.insert(key, blake3::hash(content.as_bytes()).to_hex().to_string());
            self.originals.push(Bytes::from(content.into_bytes()));
        }
        let mut created_dirs: std::collections::BTreeSet<String> = std::mem::take(&mut self.creating);
        if let Some(previous) = self.lock.packages.get(&name).cloned() {
            for (key, digest) in previous
                .file_checksums
                .iter()
                .filter(|(k, _)| !checksums.contains_key(*k))
            {
                if self.force || self.replacing_edits.contains(key) || self.written_here(key, digest) {
                    self.remove_key(key, &name)?;
                }
            }
            self.prune.extend(prunable_dirs(&previous));
            created_dirs.extend(previous.created_dirs);
        }
        let mut platforms = platforms.to_vec();
        platforms.sort_by_key(|p| p.as_str());
        platforms.dedup();
        let entry = LockedPackage {
            version: package.manifest.version.clone(),
            source: package.origin,
            source_name: self.recorded_origin(&name, package),
            source_commit: package.source_commit.clone(),
            source_url: package.source_url.clone(),
            allowed_findings: package.allowed_findings.clone(),
            checksum: package.checksum.clone(),
            dependencies: package.manifest.dependencies.clone(),
            platforms,
            requested: package.requested.clone(),
            artifacts: package.artifacts.clone(),
            deployed,
            file_checksums: checksums,
            created_dirs: created_dirs.into_iter().collect(),
        };
        self.lock.packages.insert(name, entry.clone());
        Ok(entry)
    }

    /// Plans a package whose deployed files the user already copied into
    /// place (`aam adopt`): like [`Plan::add`], but files on disk where the
    /// package deploys are kept as they are (missing ones are not added) and
    /// recorded with the digests of the package's bytes; only the package's
    /// copy is written.
    pub fn add_existing(&mut self, package: &Prepared, platforms: &[Platform]) -> Result<LockedPackage> {
        self.adopting = true;
        let entry = self.add(package, platforms);
        self.adopting = false;
        entry
    }

    /// Records `dirs` as the folders the install of `name` created, in place
    /// of what this plan worked out (a restore keeps what the lock recorded).
    pub fn set_created_dirs(&mut self, name: &str, dirs: Vec<String>) {
        if let Some(entry) = self.lock.packages.get_mut(name) {
            entry.created_dirs = dirs;
        }
    }

    /// Keeps the order the lock file lists `name`'s deployments in when the
    /// plan deploys the same ones (a restore then leaves the lock as it is).
    pub fn keep_deployment_order(&mut self, name: &str, recorded: &[Deployment]) {
        if let Some(entry) = self.lock.packages.get_mut(name) {
            let order = |d: &Deployment| (d.target.clone(), d.platform.as_str(), d.kind.as_str(), d.name.clone());
            let (mut planned, mut wanted) = (entry.deployed.clone(), recorded.to_vec());
            planned.sort_by_key(order);
            wanted.sort_by_key(order);
            if planned == wanted {
                entry.deployed = recorded.to_vec();
            }
        }
    }

    /// The bytes the plan puts at `key` (a file, or a section's content), if
    /// it writes it.
    pub fn planned(&mut self, key: &str) -> Result<Option<Bytes>> {
        match self.roots.check_key(key)? {
            CheckedKey::Section { file, name, kind } => {
                let text = self.shared_text(&file.key())?;
                let claimed = self.claimed.contains_key(key);
                Ok(claimed
                    .then(|| sections::get(&text, &name, kind.as_str()))
                    .flatten()
                    .map(|content| Bytes::from(content.as_bytes())))
            }
            CheckedKey::File(_) => Ok(self
                .changes
                .iter()
                .rev()
                .find(|change| change.key == key)
                .and_then(|change| change.content.as_ref())
                .map(|(bytes, _)| bytes.clone())),
        }
    }

    /// Puts `bytes` at `key` instead of what the plan writes there (a merged
    /// edit); the lock keeps the checksum of the planned bytes, so the file
    /// reads as edited on top of the new version.
    pub fn replace_planned(&mut self, key: &str, bytes: &[u8]) -> Result<()> {
        match self.roots.check_key(key)? {
            CheckedKey::Section { file, name, kind } => {
                let file_key = file.key();
                let current = self.shared_text(&file_key)?;
                let content = String::from_utf8_lossy(bytes);
                self.set_shared_text(&file_key, sections::upsert(&current, &name, kind.as_str(), &content));
            }
            CheckedKey::File(_) => {
                for change in self.changes.iter_mut().filter(|c| c.key == key) {
                    if let Some((content, _)) = &mut change.content {
                        *content = Bytes::from(bytes);
                    }
                }
            }
        }
        Ok(())
    }

    /// Leaves `key` as it is on disk instead of writing what the plan has
    /// there (an edit a restore keeps): the lock keeps the checksum of the
    /// planned bytes, so it reads as edited. A file is not touched; a
    /// section's text, read again now, is put back into its shared file.
    pub fn leave_as_is(&mut self, key: &str) -> Result<()> {
        match self.roots.check_key(key)? {
            CheckedKey::Section { .. } => match state::current_bytes(self.roots, key)? {
                Some(current) => self.replace_planned(key, &current),
                None => Err(Error::new(
                    ErrorCode::Conflict,
                    format!("`{key}` changed while the command ran: it is no longer a section aam can keep as it is"),
                )
                .with_hint("run the command again")),
            },
            CheckedKey::File(_) => {
                self.changes.retain(|change| change.key != key);
                Ok(())
            }
        }
    }

    /// Claims a file or `folder` target for `package`, refusing one another
    /// package owns or that exists without being aam's. A folder already
    /// there keeps what it holds: each file the package writes into it is
    /// checked on its own (one of yours there is a conflict), so only
    /// something that is no folder stands in the way of a folder target.
    fn claim_path(&mut self, key: &str, package: &str, location: &Location, folder: bool) -> Result<()> {
        self.conflict(key, package)?;
        let path = self.roots.resolve(location, key)?;
        let exists = std::fs::symlink_metadata(&path).is_ok_and(|m| !(folder && m.is_dir())) && !self.adopting;
        // What is in the way is saved file by file, as written.
        self.unowned_exists(key, package, exists)?;
        self.claimed.insert(key.to_string(), package.to_string());
        Ok(())
    }

    /// Removes one recorded file or section. A damaged section (markers doubled
    /// or moved) cannot be cut out safely: that is `AAM_CONFLICT`, as for an
    /// install, rather than a removal reported while the section stays.
    fn remove_key(&mut self, key: &str, package: &str) -> Result<()> {
        if !self.written_here.shared_with(key).is_empty() {
            self.kept_shared.push(key.to_string());
            return Ok(());
        }
        if self.foreign_in_home(key, None)? {
            self.kept_unrecorded.push(key.to_string());
            return Ok(());
        }
        match self.roots.check_key(key)? {
            CheckedKey::Section { file, name, kind } => {
                let file_key = file.key();
                let current = self.shared_text(&file_key)?;
                if matches!(sections::read(&current, &name, kind.as_str()), Section::Damaged) {
                    return Err(damaged(key));
                }
                self.set_shared_text(&file_key, sections::remove(&current, &name, kind.as_str()));
            }
            CheckedKey::File(_) => {
                self.roots.key_path(key)?;
                if self.owner(key, package).is_some() {
                    self.kept_for_others.push(key.to_string());
                    return Ok(());
                }
                // The file is written here under another name, or removed already.
                if let Some(place) = self.roots.real_place(key)
                    && (self.writing_places.contains(&place) || !self.removing_places.insert(place))
                {
                    return Ok(());
                }
                self.changes.push(FileChange {
                    key: key.to_string(),
                    content: None,
                    expected: Vec::new(),
                });
            }
        }
        Ok(())
    }

    /// Forgets a package: removes the files and sections in `keys`.
    pub fn remove_package(&mut self, name: &str, keys: &[String]) -> Result<()> {
        for key in keys {
            self.remove_key(key, name)?;
        }
        if let Some(entry) = self.lock.packages.remove(name) {
            self.prune.extend(prunable_dirs(&entry));
        }
        Ok(())
    }

    /// The final change list: file changes, shared files, then the lock file
    /// when its content changed.
    fn finish(mut self) -> Result<Finished> {
        let old = lock::read(&self.roots.root)?;
        // The bytes aam wrote at each key a file of this command replaces or
        // removes (the lock's, and the catalog's record of this machine),
        // unless the user decided to replace an edit there.
        let mut wrote: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for (key, digest) in old.packages.values().flat_map(|entry| &entry.file_checksums) {
            wrote.entry(key.as_str()).or_default().push(digest.clone());
        }
        for change in &mut self.changes {
            if self.replacing_edits.contains(&change.key) {
                continue;
            }
            let mut expected = wrote
                .get(change.key.as_str())
                .or(self.expected_elsewhere.get(&change.key))
                .cloned()
                .unwrap_or_default();
            if !expected.is_empty() {
                expected.extend(self.written_here.digests_at(&change.key).cloned());
                expected.sort();
                expected.dedup();
            }
            change.expected = expected;
        }
        for (key, (before, after)) in std::mem::take(&mut self.shared) {
            if before.as_deref() == Some(after.as_str()) {
                continue;
            }
            // The text read is carried over: the file moved aside must still hold it.
            let expected: Vec<String> = self.shared_read.get(&key).cloned().into_iter().collect();
            if after.is_empty() && before.is_some() {
                self.changes.push(FileChange {
                    key,
                    content: None,
                    expected,
                });
            } else if !after.is_empty() {
                self.changes.push(FileChange {
                    key,
                    content: Some((Bytes::from(after.into_bytes()), false)),
                    expected,
                });
            }
        }
        let mut new = self.lock;
        new.lockfile_version = lock::LOCKFILE_VERSION;
        let written = std::fs::symlink_metadata(lock::lock_path(&self.roots.root)).is_ok();
        if new.packages != old.packages || !written {
            new.resolved_at = String::new();
            self.changes.push(FileChange {
                key: LOCK_KEY.to_string(),
                content: Some((Bytes::from(lock::to_text(&new).into_bytes()), false)),
                expected: Vec::new(),
            });
        } else {
            new.resolved_at = old.resolved_at;
        }
        Ok(Finished {
            changes: self.changes,
            lock: new,
            originals: self.originals,
            prune: self.prune,
        })
    }

    /// Applies the plan through the journal: originals kept in the store first,
    /// then every file change, then `mirror` (the catalog, replayed by recovery
    /// if the process dies after the files are in place).
    pub fn execute(
        self,
        store: &ObjectStore,
        mirror: Vec<MirrorOp>,
        cancel: &crate::cancel::Cancel,
        apply_mirror: impl FnOnce(&[MirrorOp]) -> Result<()>,
    ) -> Result<LockFile> {
        let roots = self.roots;
        let finished = self.finish()?;
        for bytes in &finished.originals {
            store.put(bytes)?;
        }
        journal::apply(roots, finished.changes, finished.prune, mirror, cancel, apply_mirror)?;
        Ok(finished.lock)
    }
}

/// A plan turned into what the journal applies.
struct Finished {
    changes: Vec<FileChange>,
    lock: LockFile,
    /// Bytes to keep in the object store.
    originals: Vec<Bytes>,
    /// Folders to remove when empty.
    prune: Vec<String>,
}

fn keys_error(key: &str) -> Error {
    super::unsafe_path(key, "a section key cannot name a whole file")
}

/// The text deployed for `artifact` (main file `text`) in `format`, on
/// `platform`: as it is rendered now, or, when the lock records (`recorded`)
/// what an earlier aam rendered instead, that: aam 0.1 wrote the frontmatter
/// again (kept by every install, so the same package reinstalls as recorded),
/// and, for a restore (`restoring`), a rule without the scope other agents'
/// keys give it or a format the place had then
/// ([`crate::agents::FORMER_FORMATS`]; an install writes what is right now).
fn rendered_as_recorded(
    format: Format,
    (platform, kind): (Platform, ArtifactKind),
    artifact: &crate::packages::manifest::ManifestArtifact,
    text: &str,
    recorded: Option<&String>,
    restoring: bool,
) -> String {
    let description = artifact.description.as_deref();
    let rendered = deploy::render_described(format, &artifact.name, description, text);
    let digest = |text: &str| blake3::hash(text.as_bytes()).to_hex().to_string();
    let Some(recorded) = recorded.filter(|recorded| **recorded != digest(&rendered)) else {
        return rendered;
    };
    let former = crate::agents::FORMER_FORMATS
        .iter()
        .filter(|&&(p, k, _)| restoring && p == platform && k == kind)
        .flat_map(|&(_, _, former)| {
            [
                deploy::render_described(former, &artifact.name, description, text),
                deploy::render_rewritten(former, &artifact.name, description, text),
            ]
        });
    let before_scopes = restoring.then(|| deploy::render_before_scopes(format, &artifact.name, description, text));
    std::iter::once(deploy::render_rewritten(format, &artifact.name, description, text))
        .chain(before_scopes)
        .chain(former)
        .find(|text| digest(text) == *recorded)
        .unwrap_or(rendered)
}

/// The lock file's name for where `target` is: a folder, a file, or a section.
fn target_key(target: &Target) -> String {
    match target {
        Target::Dir(location) | Target::File(location) => location.key(),
        Target::Section { file, name, kind } => section_key(&file.key(), name, *kind),
    }
}

/// Whether `entry` deploys the artifacts of `manifest` on `platforms` where
/// the agent table says now. Not when an earlier aam put one where its agent
/// no longer reads it ([`crate::agents::FORMER_PLACES`]), or an agent took no
/// artifact of a type then and takes them now: such a package is not
/// "already installed", an install moves or adds what differs. Of agent
/// folders linked to one another, the first agent by name records the copy,
/// as [`Plan::add`] deploys it.
pub fn deployed_as_the_table_says(
    entry: &LockedPackage,
    manifest: &Manifest,
    platforms: &[Platform],
    roots: &Roots,
) -> bool {
    let mut by_name = platforms.to_vec();
    by_name.sort_by_key(|p| p.as_str());
    let mut wanted = std::collections::BTreeSet::new();
    for (kind, artifact) in manifest.artifacts.all() {
        let mut places = std::collections::BTreeSet::new();
        for &platform in &by_name {
            let Some(target) = deploy::target(kind, &artifact.name, platform, roots.global) else {
                continue;
            };
            let key = target_key(&target);
            let linked_again = matches!(target, Target::Dir(_) | Target::File(_))
                && roots.real_place(&key).is_some_and(|place| !places.insert(place))
                && !wanted.contains(&key);
            if !linked_again {
                wanted.insert(key);
            }
        }
    }
    let recorded: std::collections::BTreeSet<String> = entry.deployed.iter().map(|d| d.target.clone()).collect();
    wanted == recorded
}

/// Something aam did not install is where a package deploys.
fn foreign_home_file(key: &str) -> Error {
    Error::new(
        ErrorCode::Conflict,
        format!("`{key}` is in your home folder and holds what no install on this machine wrote there (yours, or edited since)"),
    )
    .with_hint("a project's lock file cannot have it replaced, even with `--force`: move it away, or pass `--backup` to save it to $AAM_HOME/backups and replace it")
}

fn not_installed(key: &str) -> Error {
    // A section lives in a shared file with the user's text: it goes by its marker lines.
    let (what, away) = match key.contains('#') {
        true => (
            "section",
            "delete the section (its `<!-- BEGIN AAM: ... -->` and `<!-- END AAM: ... -->` lines and what is between them) or rename it in its marker lines",
        ),
        false => ("file", "move it away"),
    };
    Error::new(
        ErrorCode::Conflict,
        format!("`{key}` exists, and no installed package records it (a {what} of yours, or one an uninstall kept because you had edited it)"),
    )
    .with_hint(format!("{away}, pass `--backup` to save it to $AAM_HOME/backups and replace it, or `--force` to overwrite it"))
}

fn damaged(key: &str) -> Error {
    Error::new(
        ErrorCode::Conflict,
        format!("the aam section `{key}` is damaged: its marker lines are doubled, moved or enclose another marker"),
    )
    .with_hint("fix the `<!-- BEGIN AAM: ... -->`/`<!-- END AAM: ... -->` lines by hand so each appears once, or remove the section")
}

fn deployment(platform: Platform, kind: ArtifactKind, name: &str, target: String) -> Deployment {
    Deployment {
        platform,
        kind,
        name: name.to_string(),
        target,
    }
}

/// Refuses to replace an installed package with a same-named one from
/// elsewhere (another source, a registry instead of a folder...). Package
/// folders and archives count as one place: a new version may be unpacked or
/// packed anywhere. Of one source, the package must be
/// the same artifact: sharing an artifact path with the installed one, or
/// replacing one that is no longer in the source (`live` says whether a
/// recorded artifact still is: it moved or was renamed upstream). Two
/// commands named `setup` in two plugins of a repository are two packages.
pub fn same_origin(
    name: &str,
    existing: &LockedPackage,
    package: &Prepared,
    live: impl Fn(&LockedArtifact) -> bool,
) -> Result<()> {
    let origin = package.origin;
    let files = |o: Origin| matches!(o, Origin::Local | Origin::Archive);
    let same_artifact = || {
        existing.artifacts.is_empty()
            || existing
                .artifacts
                .iter()
                .any(|a| package.artifacts.iter().any(|b| a.kind == b.kind && a.path == b.path))
            || !existing.artifacts.iter().any(&live)
    };
    // One repository may be registered under another name than the lock
    // records (removed and added again, a teammate's name): it is the same source.
    let same_source = existing.source_name == package.source_name
        || (origin == Origin::Source
            && existing
                .source_url
                .as_deref()
                .zip(package.source_url.as_deref())
                .is_some_and(|(a, b)| crate::sources::spec::same_repository(a, b)));
    let same = existing.checksum == package.checksum
        || (existing.source == Origin::Registry
            && origin == Origin::Registry
            && existing.source_name == package.source_name)
        || (files(existing.source) && files(origin))
        || (existing.source == origin && same_source && (origin != Origin::Source || same_artifact()));
    if same {
        return Ok(());
    }
    let from = |origin: Origin, source: &str, artifacts: &[LockedArtifact]| match (origin, artifacts.is_empty()) {
        (Origin::Source, false) => {
            let paths: Vec<&str> = artifacts.iter().map(|a| a.path.as_str()).collect();
            format!("source `{source}` ({})", paths.join(", "))
        }
        _ => format!("{} `{source}`", origin.as_str()),
    };
    Err(Error::new(
        ErrorCode::Conflict,
        format!(
            "`{name}` is installed from {}; this one comes from {}",
            from(existing.source, &existing.source_name, &existing.artifacts),
            from(origin, &package.source_name, &package.artifacts)
        ),
    )
    .with_hint(format!(
        "uninstall `{name}` first (`aam uninstall {name}`), or pass `--force` to replace it"
    )))
}

/// The folders `entry` records creating that hold a file or target it
/// records: only those are removed when empty. A lock file can name any
/// folder on the way to where installs write (`~/.codex/prompts/mine`),
/// which no install of it made.
fn prunable_dirs(entry: &LockedPackage) -> Vec<String> {
    let file = |key: &str| -> String { key.split_once('#').map_or(key, |(file, _)| file).to_string() };
    let recorded: Vec<String> = entry
        .file_checksums
        .keys()
        .map(|key| file(key))
        .chain(entry.deployed.iter().map(|d| file(&d.target)))
        .collect();
    entry
        .created_dirs
        .iter()
        .filter(|dir| recorded.iter().any(|key| key.starts_with(&format!("{dir}/"))))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A section in the way is no file to move away: the hint says how to
    /// take it out of the shared file.
    #[test]
    fn what_is_in_the_way_is_moved_or_taken_out_by_its_markers() {
        let section = not_installed("CLAUDE.md#review agent");
        assert!(
            section.message().contains("a section of yours"),
            "{}",
            section.message()
        );
        assert!(section.hint().is_some_and(|h| h.contains("BEGIN AAM")), "{section:?}");
        let file = not_installed(".claude/agents/review.md");
        assert!(file.hint().is_some_and(|h| h.starts_with("move it away")), "{file:?}");
    }

    /// A package arriving from `origin` `source`, with `checksum`, asked for as
    /// `requested` and made of the skills at `paths`.
    fn arriving(origin: Origin, source: &str, checksum: &str, requested: Option<&str>, paths: &[&str]) -> Prepared {
        Prepared {
            manifest: serde_json::from_value(serde_json::json!({
                "name": "kit", "version": "1.0.0", "description": "d", "artifacts": {}
            }))
            .unwrap(),
            files: Default::default(),
            origin,
            source_name: source.to_string(),
            source_commit: None,
            source_url: None,
            checksum: checksum.to_string(),
            requested: requested.map(str::to_string),
            artifacts: paths
                .iter()
                .map(|path| LockedArtifact {
                    kind: ArtifactKind::Skill,
                    path: path.to_string(),
                    digest: "d".into(),
                })
                .collect(),
            members: Vec::new(),
            allowed_findings: Vec::new(),
            replaces_lost_commit: false,
        }
    }

    #[test]
    fn only_folders_holding_what_an_entry_records_are_pruned() {
        let mut entry: LockedPackage = serde_json::from_value(serde_json::json!({
            "version": "1.0.0", "source": "local", "source_name": "./kit", "checksum": "c",
            "file_checksums": {
                ".claude/skills/pdf/scripts/fill.sh": "a",
                "~/.codex/prompts/sum.md": "b",
                "AGENTS.md#kit-rules instruction": "c"
            },
            "created_dirs": [
                ".claude", ".claude/skills/pdf", ".claude/skills/pdf/scripts",
                "~/.codex/prompts", "~/.codex/prompts/victim", ".claude/skills/other"
            ]
        }))
        .unwrap();
        assert_eq!(
            prunable_dirs(&entry),
            [
                ".claude",
                ".claude/skills/pdf",
                ".claude/skills/pdf/scripts",
                "~/.codex/prompts"
            ]
        );
        entry.file_checksums.clear();
        assert!(prunable_dirs(&entry).is_empty());
    }

    #[test]
    fn a_package_replaces_one_only_from_the_same_place() {
        let installed = |origin: &str, name: &str| -> LockedPackage {
            serde_json::from_value(serde_json::json!({
                "version": "1.0.0", "source": origin, "source_name": name, "checksum": "c1"
            }))
            .unwrap()
        };
        let registry = installed("registry", "main");
        assert!(
            same_origin(
                "kit",
                &registry,
                &arriving(Origin::Registry, "main", "c2", None, &[]),
                |_| true
            )
            .is_ok()
        );
        let err = same_origin(
            "kit",
            &registry,
            &arriving(Origin::Registry, "other", "c2", None, &[]),
            |_| true,
        )
        .unwrap_err();
        assert_eq!(err.code(), crate::error::ErrorCode::Conflict);
        assert!(err.message().contains("registry `main`"), "{}", err.message());
        // The same content is the same package wherever it comes from.
        assert!(
            same_origin(
                "kit",
                &registry,
                &arriving(Origin::Source, "s", "c1", None, &[]),
                |_| true
            )
            .is_ok()
        );
        // A folder and its archives count as one place.
        let folder = installed("local", "./kit");
        assert!(
            same_origin(
                "kit",
                &folder,
                &arriving(Origin::Archive, "kit.tgz", "c2", None, &[]),
                |_| true
            )
            .is_ok()
        );
        let source = installed("source", "s");
        assert!(
            same_origin("kit", &source, &arriving(Origin::Source, "s", "c2", None, &[]), |_| {
                true
            })
            .is_ok()
        );
        assert!(
            same_origin("kit", &source, &arriving(Origin::Source, "t", "c2", None, &[]), |_| {
                true
            })
            .is_err()
        );
    }

    #[test]
    fn of_one_source_a_package_replaces_only_the_same_artifact() {
        let mut installed: LockedPackage = serde_json::from_value(serde_json::json!({
            "version": "1.0.0", "source": "source", "source_name": "s", "checksum": "c1",
            "requested": "s/a/setup", "artifacts": [{"type": "skill", "path": "a/setup", "digest": "d"}]
        }))
        .unwrap();
        let still_there = |_: &LockedArtifact| true;
        // A new version of it, however it is asked for.
        let again = arriving(Origin::Source, "s", "c2", Some("s/setup"), &["a/setup"]);
        assert!(same_origin("setup", &installed, &again, still_there).is_ok());
        // Another artifact of the same name in the same source.
        let other = arriving(Origin::Source, "s", "c2", Some("s/b/setup"), &["b/setup"]);
        let err = same_origin("setup", &installed, &other, still_there).unwrap_err();
        assert_eq!(err.code(), crate::error::ErrorCode::Conflict);
        assert!(
            err.message().contains("(a/setup)") && err.message().contains("(b/setup)"),
            "{}",
            err.message()
        );
        // The installed one moved upstream: the new path is the same package.
        assert!(same_origin("setup", &installed, &other, |_| false).is_ok());
        // A lock entry from before artifacts were recorded goes by the source alone.
        installed.artifacts.clear();
        assert!(same_origin("setup", &installed, &other, still_there).is_ok());
    }
}
