//! What every tool call runs against: the home, the user's home folder, the
//! working directory, progress reporting, connections shared by every call of a process, and (for machine
//! front ends) the folders paths may point into.

use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::cancel::Cancel;
use crate::catalog::{Catalog, ProjectId};
use crate::config::AamHome;
use crate::error::{Error, ErrorCode, Result};
use crate::progress::{NoProgress, Progress};
use crate::search::SearchIndex;

/// What every tool call runs against.
#[derive(Clone)]
pub struct Context {
    /// Where the catalog and caches live.
    pub home: AamHome,
    /// The directory relative paths are resolved against.
    pub cwd: PathBuf,
    /// The user's home folder (`HOME`): where global installs go and agents are detected.
    user_home: Option<PathBuf>,
    /// Where long operations report progress.
    pub progress: Arc<dyn Progress>,
    /// Raised when the call should stop (client cancel, time limit).
    pub cancel: Cancel,
    shared: Arc<Shared>,
    sandbox: Option<Arc<Sandbox>>,
    watches: Option<Arc<crate::project::watch::Watches>>,
    starts_watchers: bool,
}

/// Connections kept for the life of the process: idle catalog connections and
/// the search index with its reader.
#[derive(Default)]
struct Shared {
    idle: Mutex<Vec<Catalog>>,
    index: Mutex<Option<Arc<SearchIndex>>>,
}

/// The folders (canonical) that paths given to tools must resolve into.
struct Sandbox {
    allowed: Vec<PathBuf>,
    /// The folder calls are confined to, as given: the project is never above it.
    top: PathBuf,
}

impl Context {
    /// A context without progress reporting or path restrictions.
    pub fn new(home: AamHome, cwd: PathBuf) -> Self {
        Self {
            home,
            cwd,
            user_home: std::env::home_dir(),
            progress: Arc::new(NoProgress),
            cancel: Cancel::new(),
            shared: Arc::default(),
            sandbox: None,
            watches: None,
            starts_watchers: false,
        }
    }

    /// Takes `dir` as the user's home folder instead of `HOME` (an in-process
    /// caller that must not see the real one).
    pub fn with_user_home(mut self, dir: PathBuf) -> Self {
        self.user_home = Some(dir);
        self
    }

    /// The user's home folder, if known.
    pub fn user_home(&self) -> Option<&Path> {
        self.user_home.as_deref()
    }

    /// Starts a watcher in the background when a call had to check a large
    /// project's files itself ([`crate::project::spawn`]), for the command
    /// line, whose executable is aam's own.
    pub fn starting_watchers(mut self) -> Self {
        self.starts_watchers = true;
        self
    }

    /// Keeps the projects' records current by watching their folders, for a
    /// process that serves many calls (the MCP server): a call with no change
    /// since the last one skips the check of every recorded file.
    pub fn watching(mut self) -> Self {
        self.watches = Some(Arc::default());
        self
    }

    /// The catalog's record of the project at `root`, brought up to date:
    /// through the process's watches when it has them, else through the
    /// process that watches the project when one answers (its version must
    /// still be the catalog's), else by checking the recorded files
    /// ([`crate::project::refresh`]), after which a command may leave a
    /// watcher running for the next ones ([`Self::starting_watchers`]).
    pub fn current_project(&self, catalog: &mut Catalog, root: &Path, large: bool) -> Result<ProjectId> {
        if let Some(watches) = &self.watches {
            return watches.current(catalog, root, large);
        }
        let key = crate::project::key(root);
        // `AAM_PROJECT_WATCH=0` turns watching off, asking a watcher included.
        let vouch = match crate::project::watch::supported() {
            true => crate::project::ask::vouch(&self.home, &key),
            false => crate::project::ask::Vouch::NoProcess,
        };
        if let Some(vouched) = vouch.version()
            && let Some((id, version)) = catalog.project_head(&key)?
            && version == vouched
        {
            return Ok(id);
        }
        let refreshed = crate::project::refresh(catalog, root, large)?;
        // A watcher that listens but could not vouch is left to recover.
        if self.starts_watchers && !large && vouch == crate::project::ask::Vouch::NoProcess {
            self.start_watcher(root, &key, &refreshed);
        }
        Ok(refreshed.id)
    }

    /// Starts a watcher for the project at `root` in the background when the
    /// check that `refreshed` it covered at least `project.auto_watch` folders
    /// and files, and its folders leave at least half of the inotify watches
    /// or fanotify marks to other tools; a failure is logged, never the call's.
    fn start_watcher(&self, root: &Path, key: &str, refreshed: &crate::project::Refreshed) {
        use crate::project::spawn;
        // Read-only mode starts no process that writes the catalog.
        if !crate::project::watch::supported() || crate::tools::read_only_mode() {
            return;
        }
        let setting = match self.home.load_settings() {
            Ok(settings) => settings.project.auto_watch,
            Err(e) => {
                tracing::debug!("not starting a watcher: {}", e.message());
                return;
            }
        };
        if spawn::threshold(setting).is_none_or(|from| (refreshed.checked as u64) < from) {
            return;
        }
        if crate::project::watch::backend_for(refreshed.folders).is_none() {
            tracing::debug!(
                "not starting a watcher: {} folders would take most of the inotify watches and fanotify marks",
                refreshed.folders
            );
            return;
        }
        let started = std::env::current_exe()
            .map_err(|e| Error::internal(format!("cannot find aam's own executable: {e}")))
            .and_then(|exe| spawn::start(&self.home, &exe, root, key));
        // The command does not need it: a failure is no warning on every call.
        if let Err(e) = started {
            tracing::debug!("could not start a watcher for the project: {}", e.message());
        }
    }

    /// Answers, for the life of the process, the commands run in this
    /// context's project from its watches ([`crate::project::ask::listen`]);
    /// needs [`Self::watching`]. `Ok(None)` when another process already answers.
    pub fn answer_commands(&self) -> Result<Option<crate::project::ask::Listening>> {
        if self.watches.is_none() || !crate::project::watch::supported() {
            return Err(Error::invalid_argument(format!(
                "this process cannot watch projects (watching needs Linux, and `{}` not `0`)",
                crate::project::watch::WATCH_ENV
            ))
            .with_hint("commands run in the project check its files themselves"));
        }
        let root = self.project_root();
        crate::project::check_root(&root)
            .map_err(|e| e.with_hint("run `aam watch` in your project folder, or pass `--root <project folder>`"))?;
        let key = crate::project::key(&root);
        let ctx = self.clone();
        // Opened (made, in a new home) before its identity is taken.
        drop(self.catalog()?);
        let catalog = self.home.catalog_identity();
        let asked_about = key.clone();
        crate::project::ask::listen(&self.home, &key, move || {
            // The socket answers for the folder the root named at the start; a
            // link on the root's path changed since names another (whose
            // record this process now keeps): its version is no answer.
            if crate::project::key(&root) != asked_about {
                return Err(Error::new(
                    ErrorCode::Conflict,
                    "the project's path now names another folder than the one this process answers for",
                )
                .with_hint("the command checks the project itself"));
            }
            // A catalog file made again at the path is not the one this
            // process keeps open: its versions tell nothing about that one.
            if ctx.home.catalog_identity() != catalog {
                return Err(
                    Error::new(ErrorCode::Conflict, "the catalog this process opened was replaced")
                        .with_hint("the command checks the project itself; the watcher stops"),
                );
            }
            ctx.current_project_version(&root)
        })
    }

    /// The version of the catalog's record of the project at `root` once
    /// [`Self::current_project`] brought it up to date: what this process
    /// vouches for when another asks (see [`crate::project::ask`]).
    fn current_project_version(&self, root: &Path) -> Result<i64> {
        let mut catalog = self.catalog()?;
        self.current_project(&mut catalog, root, false)?;
        let head = catalog.project_head(&crate::project::key(root))?;
        head.map(|(_, version)| version)
            .ok_or_else(|| Error::internal("the project's record vanished after its refresh"))
    }

    /// Restricts every path a tool is given, and every file an install writes,
    /// to the working directory's project and `AAM_HOME` (after following links).
    pub fn sandboxed(mut self, project_root: &Path) -> Result<Self> {
        let mut allowed = Vec::new();
        for dir in [project_root, self.home.root()] {
            std::fs::create_dir_all(dir).map_err(|e| Error::io("create", dir, e))?;
            allowed.push(dir.canonicalize().map_err(|e| Error::io("resolve", dir, e))?);
        }
        self.sandbox = Some(Arc::new(Sandbox {
            allowed,
            top: project_root.to_path_buf(),
        }));
        Ok(self)
    }

    /// The project the working directory is in: the nearest folder up from it
    /// with a `.git`, else the working directory; with a sandbox, never above
    /// the folder it confines calls to (served with `--root P/sub` inside a
    /// repository `P`, the project is `P/sub`: the rest of `P` is outside).
    pub fn project_root(&self) -> PathBuf {
        match &self.sandbox {
            Some(sandbox) => crate::project::root_within(&self.cwd, &sandbox.top),
            None => crate::project::root(&self.cwd),
        }
    }

    /// A catalog connection: an idle one of this process when there is one,
    /// else a new one (opened and migrated). It goes back to the pool when dropped.
    pub fn catalog(&self) -> Result<PooledCatalog> {
        let idle = self.shared.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let catalog = match idle {
            Some(catalog) => catalog,
            None => Catalog::open(&self.home.catalog_path())?,
        };
        Ok(PooledCatalog {
            catalog: Some(catalog),
            shared: self.shared.clone(),
        })
    }

    /// The search index, opened once per process.
    pub fn search_index(&self) -> Result<Arc<SearchIndex>> {
        let mut slot = self.shared.index.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(index) = slot.as_ref() {
            return Ok(index.clone());
        }
        let index = Arc::new(SearchIndex::open(&self.home)?);
        *slot = Some(index.clone());
        Ok(index)
    }

    /// `given` resolved against the working directory, without its `.`
    /// parts. Under a sandbox it must lead, after following links, into the
    /// project or `AAM_HOME`.
    pub fn path(&self, given: &str) -> Result<PathBuf> {
        let path: PathBuf = self.cwd.join(given).components().collect();
        self.check_path(&path, given)?;
        Ok(path)
    }

    /// `given` as a file or folder a tool makes for the user (an export, an
    /// archive, a new package): checked as [`Self::path`] checks, then refused
    /// where aam keeps its own files (see [`Self::refuse_managed`]).
    pub fn output_path(&self, given: &str) -> Result<PathBuf> {
        let path = self.path(given)?;
        self.refuse_managed(&path, given)?;
        Ok(path)
    }

    /// Refuses `path` (shown as `shown`), after following links, inside
    /// AAM_HOME (but under its `exports/`), in any `.aam/` or `.git` folder, or where
    /// installs keep what they own: an agent's folder or a shared file
    /// sections live in, for any project above `path` (a folder holding `.git`
    /// or `.aam`), the working directory's project, or the home folder.
    /// Writing there would replace the catalog, the MCP token, a lock file, or
    /// an installed file with its edits. A path whose missing part climbs with
    /// `..` is refused: where it lands cannot be told before it is made.
    pub fn refuse_managed(&self, path: &Path, shown: &str) -> Result<()> {
        let forbidden = |why: &str, hint: &str| {
            Error::new(ErrorCode::Forbidden, format!("`{shown}` {why}")).with_hint(hint.to_string())
        };
        let Some(target) = crate::paths::resolve_links(path) else {
            return Err(unplaceable(path, shown));
        };
        let real = |p: &Path| crate::paths::resolve_links(p).unwrap_or_else(|| p.to_path_buf());
        let home = real(self.home.root());
        if target.starts_with(home.join("exports")) {
            return Ok(());
        }
        if target.starts_with(&home) {
            return Err(forbidden(
                "is inside AAM_HOME, where aam keeps its own files",
                &format!(
                    "write it into the project or another folder, or under {}",
                    home.join("exports").display()
                ),
            ));
        }
        let key_under = |root: &Path| -> Option<String> {
            let relative = target.strip_prefix(root).ok()?;
            let parts: Option<Vec<&str>> = relative.iter().map(|part| part.to_str()).collect();
            Some(parts?.join("/"))
        };
        let working_project = real(&self.project_root());
        let in_a_project = target
            .ancestors()
            .skip(1)
            .filter(|dir| *dir == working_project || dir.join(".git").exists() || dir.join(".aam").exists())
            .any(|root| key_under(root).is_some_and(|key| crate::install::keys::agent_territory(&key, false)));
        let in_home = self
            .user_home()
            .and_then(|dir| key_under(&real(dir)))
            .is_some_and(|key| crate::install::keys::agent_territory(&format!("~/{key}"), true));
        // A repository's own folder: `HEAD`, `config` or a hook written there
        // breaks the repository or runs at the next commit.
        if target.iter().any(|part| part.eq_ignore_ascii_case(".git")) {
            return Err(forbidden(
                "is inside a `.git` folder, which is git's own",
                "write it elsewhere in the project, outside `.git`",
            ));
        }
        if in_a_project || in_home || target.iter().any(|part| part.eq_ignore_ascii_case(".aam")) {
            return Err(forbidden(
                "is where aam keeps installed files or a lock file, or where agents read their settings or instructions",
                "write it outside `.aam/`, the agents' folders (`.claude/`, `.agents/skills`...) and their instruction files (`AGENTS.md`, `CLAUDE.md`, `.cursorrules`...)",
            ));
        }
        Ok(())
    }

    /// Refuses filling the folder `dir` with `files` (paths relative to it)
    /// when one of them lands in an agent's folder as seen from a folder above
    /// `dir`: a package made in `.claude` would put its skills where Claude
    /// reads them, past the install's audit and with no lock entry. Hidden
    /// agent folders (`.claude`, `.agents`...) count under any folder, a
    /// project or not; a plain one (OpenClaw's `skills/`) under a project's
    /// root. The package's own layout below `dir` is the package itself.
    pub fn refuse_managed_files<'f>(&self, dir: &Path, files: impl IntoIterator<Item = &'f str>) -> Result<()> {
        let real_dir = crate::paths::resolve_links(dir).unwrap_or_else(|| dir.to_path_buf());
        let user_home = self.user_home().and_then(crate::paths::resolve_links);
        let working_project = crate::paths::resolve_links(&self.project_root());
        let is_project = |dir: &Path| {
            working_project.as_deref() == Some(dir) || dir.join(".git").exists() || dir.join(".aam").exists()
        };
        for file in files {
            let path = real_dir.join(file);
            for above in real_dir.ancestors().skip(1) {
                let Some(key) = path.strip_prefix(above).ok().and_then(|k| k.to_str()) else {
                    continue;
                };
                let in_home =
                    user_home.as_deref() == Some(above) && crate::install::keys::managed(&format!("~/{key}"), true);
                let counts = key.starts_with('.') || is_project(above);
                if in_home || (counts && crate::install::keys::managed(key, false)) {
                    return Err(Error::new(
                        ErrorCode::Forbidden,
                        format!("`{}` would land in an agent's folder (`{key}` under `{}`)", dir.join(file).display(), above.display()),
                    )
                    .with_hint("make the package in a folder of its own, outside the agents' folders (`.claude`, `.agents`, `.github`...)"));
                }
            }
        }
        Ok(())
    }

    /// Refuses a folder (shown as `shown`) whose files a tool reads whole, such
    /// as a package folder to pack, when it is AAM_HOME, lies in it or holds
    /// it: the archive would carry the catalog, the caches and the MCP token.
    pub fn refuse_holding_home(&self, dir: &Path, shown: &str) -> Result<()> {
        let real = |p: &Path| crate::paths::resolve_links(p).unwrap_or_else(|| p.to_path_buf());
        let (dir, home) = (real(dir), real(self.home.root()));
        if dir.starts_with(&home) || home.starts_with(&dir) {
            return Err(Error::new(
                ErrorCode::Forbidden,
                format!("`{shown}` holds AAM_HOME ({}), aam's own files", home.display()),
            )
            .with_hint("keep packages in a folder of their own, outside AAM_HOME"));
        }
        Ok(())
    }

    /// The install roots of a call: the working directory's project (or the
    /// home folder), confined like every other path of the call.
    pub fn install_roots(&self, global: bool) -> Result<crate::install::Roots> {
        let home = self
            .user_home
            .clone()
            .ok_or_else(|| Error::invalid_argument("cannot find the home folder").with_hint("set `HOME`"))?;
        if global {
            self.check_path(&home, "~")?;
        }
        let confine = self.clone();
        Ok(crate::install::Roots::new(self.project_root(), home, global)
            .with_state(self.home.root().to_path_buf())
            .confined(Arc::new(move |path, shown| confine.check_path(path, shown))))
    }

    /// The audit policy: the project's `.aam/config.yaml` (unless `global`),
    /// then `$AAM_HOME/config.yaml`, then the defaults (block `high`, warn `warn`).
    pub fn audit_policy(&self, global: bool) -> Result<crate::audit::Policy> {
        Ok(self.audit_policies(global)?.0)
    }

    /// [`Self::audit_policy`] beside the policy of the home's settings alone,
    /// read once: what a project's `.aam/config.yaml` (which comes with the
    /// repository) is held against.
    fn audit_policies(&self, global: bool) -> Result<(crate::audit::Policy, crate::audit::Policy)> {
        let home = self.home.load_settings()?;
        let project = match global {
            true => None,
            false => Some(crate::config::read_settings(&crate::config::project_settings_path(
                &self.project_root(),
            ))?),
        };
        let policy = crate::audit::gate::policy(&home, project.as_ref())?;
        let home_only = match project {
            Some(_) => crate::audit::gate::policy(&home, None)?,
            None => policy,
        };
        Ok((policy, home_only))
    }

    /// [`Self::audit_policy`] for an install, warning (on stderr and in the
    /// log) when the project's `.aam/config.yaml` makes it laxer than the
    /// home's settings alone: that file comes with the repository.
    pub fn install_audit_policy(&self, global: bool) -> Result<crate::audit::Policy> {
        let (policy, home) = self.audit_policies(global)?;
        for key in policy.laxer_than(&home) {
            tracing::warn!(
                "this project's `.aam/config.yaml` sets `{key}` laxer than your own settings: installs here let through what yours would stop (`aam config get {key}` shows where it comes from)"
            );
        }
        Ok(policy)
    }

    /// The audit policy of what the MCP server hands an agent unasked (Skills
    /// over MCP): [`Self::audit_policy`], but never laxer than the home's
    /// settings alone. A project's `.aam/config.yaml` comes with its
    /// repository, and nobody would see a warning that it turned serving's gate off.
    pub fn serving_audit_policy(&self) -> Result<crate::audit::Policy> {
        let (mut policy, home) = self.audit_policies(false)?;
        if policy.block.laxer_than(home.block) {
            policy.block = home.block;
        }
        Ok(policy)
    }

    /// The time limits of remote fetches: `$AAM_HOME/config.yaml`'s `fetch.*`, each
    /// overridden by its environment variable, then the defaults.
    pub fn fetch_limits(&self) -> Result<crate::sources::git::FetchLimits> {
        let fetch = self.home.load_settings()?.fetch;
        Ok(crate::sources::git::FetchLimits::resolve(
            fetch.timeout,
            fetch.stall_timeout,
        ))
    }

    /// Refuses a local repository (shown to the user as `shown`) when a sandbox
    /// is set and its folder, the git folder it really reads (a `.git` that
    /// is a link, or a `gitdir:` file, can point anywhere), or anything a link
    /// inside that git folder leads to (`objects/` linked to another
    /// repository's) resolves outside it.
    pub fn check_repository(&self, path: &Path, shown: &str) -> Result<()> {
        self.check_path(path, shown)?;
        if self.sandbox.is_none() {
            return Ok(());
        }
        let outside = |dir: &Path| {
            Error::new(
                ErrorCode::Forbidden,
                format!(
                    "`{shown}` keeps its git data in `{}`, outside the project and AAM_HOME",
                    dir.display()
                ),
            )
            .with_hint("a local source served over MCP must keep its git folder inside the project, with no link out of it (a worktree or submodule of a repository elsewhere does not); add it with the CLI instead")
        };
        for dir in crate::sources::git::repository_dirs(path) {
            if self.check_path(&dir, shown).is_err() {
                return Err(outside(&dir));
            }
        }
        let Some(links) = crate::sources::git::repository_links(path) else {
            return Err(Error::new(
                ErrorCode::Forbidden,
                format!(
                    "`{shown}` has more than {} entries in its git folder to check",
                    crate::sources::git::MAX_GIT_DIR_ENTRIES
                ),
            )
            .with_hint("run `git gc` in it to pack its objects, or add it with the CLI instead"));
        };
        for link in links {
            if self.check_path(&link, shown).is_err() {
                return Err(outside(&crate::paths::resolve_links(&link).unwrap_or(link)));
            }
        }
        Ok(())
    }

    /// Where a fetch from `source` may read a local repository's objects,
    /// after checking it. Served over MCP, a local repository inside the
    /// project is checked again before every fetch (it, or its git folder, may
    /// have been linked out since the add; one outside, the user added with the
    /// CLI), and what is read must lie inside too, not only the path checked:
    /// the sandbox's folders. `None`: no bound.
    pub fn local_fetch_bounds(&self, source: &crate::catalog::SourceRecord) -> Result<Option<Vec<PathBuf>>> {
        let local_inside = source
            .url
            .strip_prefix("file://")
            .map(Path::new)
            .filter(|path| self.written_inside(path));
        let Some(path) = local_inside else {
            return Ok(None);
        };
        self.check_repository(path, &source.name)?;
        Ok(self.sandbox_folders())
    }

    /// Whether a tool call made this context (MCP or `aam tool call`, both
    /// sandboxed), not a command a person typed.
    pub fn is_tool_call(&self) -> bool {
        self.sandbox.is_some()
    }

    /// The folders a sandbox allows (the project and AAM_HOME), if set.
    pub fn sandbox_folders(&self) -> Option<Vec<PathBuf>> {
        self.sandbox.as_ref().map(|sandbox| sandbox.allowed.clone())
    }

    /// Whether `path`, as written (links not followed), lies in a folder a
    /// sandbox allows; always, without one.
    pub fn written_inside(&self, path: &Path) -> bool {
        self.sandbox
            .as_ref()
            .is_none_or(|sandbox| sandbox.allowed.iter().any(|a| path.starts_with(a)))
    }

    /// Refuses `path` (shown to the user as `shown`) when a sandbox is set and
    /// it resolves outside it.
    pub fn check_path(&self, path: &Path, shown: &str) -> Result<()> {
        let Some(sandbox) = &self.sandbox else {
            return Ok(());
        };
        let Some(real) = crate::paths::resolve_links(path) else {
            return Err(unplaceable(path, shown));
        };
        if sandbox.allowed.iter().any(|a| real.starts_with(a)) {
            return Ok(());
        }
        Err(Error::new(
            ErrorCode::Forbidden,
            format!("`{shown}` is outside the project and AAM_HOME"),
        )
        .with_hint("only paths inside the project being served (`--root`, or the current folder for `aam tool call`) and AAM_HOME are allowed"))
    }
}

/// `path` (shown as `shown`), whose real place cannot be told: it climbs with
/// `..` through folders that do not exist, or a link on its way points nowhere
/// (or a folder cannot be read).
fn unplaceable(path: &Path, shown: &str) -> Error {
    let (why, hint) = match path.components().any(|c| c == std::path::Component::ParentDir) {
        true => (
            "climbs with `..` through folders that do not exist",
            "name the path without `..`, through folders that exist",
        ),
        false => (
            "is reached through a link that points nowhere, or a folder that cannot be read",
            "remove the dangling link, or name another path",
        ),
    };
    Error::new(ErrorCode::Forbidden, format!("`{shown}` cannot be placed: it {why}")).with_hint(hint)
}

/// A catalog connection that returns to its context's pool when dropped.
pub struct PooledCatalog {
    catalog: Option<Catalog>,
    shared: Arc<Shared>,
}

impl Deref for PooledCatalog {
    type Target = Catalog;

    fn deref(&self) -> &Catalog {
        self.catalog.as_ref().expect("present until dropped")
    }
}

impl DerefMut for PooledCatalog {
    fn deref_mut(&mut self) -> &mut Catalog {
        self.catalog.as_mut().expect("present until dropped")
    }
}

impl Drop for PooledCatalog {
    fn drop(&mut self) {
        if let Some(catalog) = self.catalog.take() {
            self.shared.idle.lock().unwrap_or_else(|e| e.into_inner()).push(catalog);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sandboxed_paths_stay_inside_after_links() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("project");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(project.join("sub")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, project.join("escape")).unwrap();
        let ctx = Context::new(AamHome::at(dir.path().join("home")), project.clone())
            .sandboxed(&project)
            .unwrap();
        assert!(ctx.path("sub/new-file").is_ok());
        assert!(ctx.path("not-yet/deeper").is_ok(), "paths that do not exist yet");
        assert!(ctx.path(dir.path().join("home/registry").to_str().unwrap()).is_ok());
        for bad in ["../outside", "escape/x", "escape", "/etc/passwd", "sub/../../outside"] {
            let err = ctx.path(bad).unwrap_err();
            assert_eq!(err.code(), ErrorCode::Forbidden, "{bad}");
            assert!(err.message().contains(bad), "{bad}");
        }
        // Climbing out of a folder not made yet is not called "outside" (it
        // may land inside): it cannot be told where it lands.
        let home_exports = dir.path().join("home/exports/../mcp-token");
        let err = ctx.path(home_exports.to_str().unwrap()).unwrap_err();
        assert_eq!(err.code(), ErrorCode::Forbidden);
        assert!(err.message().contains("climbs with `..`"), "{}", err.message());
        let open = Context::new(AamHome::at(dir.path().join("home")), project);
        assert!(open.path("../outside").is_ok(), "no sandbox, no restriction");
    }

    #[test]
    fn catalog_connections_are_reused() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = Context::new(AamHome::at(dir.path().to_path_buf()), dir.path().to_path_buf());
        let first = ctx.catalog().unwrap();
        let second = ctx.catalog().unwrap();
        drop(first);
        drop(second);
        assert_eq!(ctx.shared.idle.lock().unwrap().len(), 2);
        let _again = ctx.catalog().unwrap();
        assert_eq!(ctx.shared.idle.lock().unwrap().len(), 1, "taken from the pool");
    }
}
