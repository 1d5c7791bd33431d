//! Installing packages into a project (or the home folder): resolution,
//! deployment to each platform's layout, the lock file and the catalog mirror.
//!
//! Every install is one unit: all file changes of a command (package copies,
//! deployed files, shared `AGENTS.md`/`CLAUDE.md` sections, the lock file) are
//! applied together and undone together if any of them, or the catalog mirror,
//! fails.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::packages::{Selection, assemble, gather_from_source, validate_archive_bytes};
use super::registries::open_registry;
use super::{Context, Example, Expect, Risk, Tool, qualified_name, split_qualified};
use crate::catalog::{Catalog, InstallRecord, NewPackage, PackageMember, now_timestamp};
use crate::config::Settings;
use crate::deploy::apply::{self, Applied, Change};
use crate::deploy::{self, Location, Target, sections};
use crate::error::{Error, ErrorCode, Result};
use crate::packages::archive;
use crate::packages::lock::{self, Deployment, LockFile, LockedArtifact, LockedPackage, section_key};
use crate::packages::manifest::{self, MANIFEST_FILE, Manifest, artifact_file_name};
use crate::packages::registry::VersionEntry;
use crate::packages::resolve::{Candidate, resolve};
use crate::packages::store::ObjectStore;
use crate::scan::{ArtifactKind, Platform};

// ---------------------------------------------------------------- roots

/// Where an install lands: the project (or home) root, and the home folder.
pub(crate) struct Roots {
    /// Project root, or the home folder for global installs.
    pub root: PathBuf,
    /// The user's home folder.
    pub home: PathBuf,
    /// Whether this is a global (`-g`) install.
    pub global: bool,
    /// The calling context, whose sandbox (if any) every target must respect.
    ctx: Context,
}

impl Roots {
    pub(crate) fn new(ctx: &Context, global: bool) -> Result<Self> {
        let home = std::env::home_dir()
            .ok_or_else(|| Error::invalid_argument("cannot find the home folder").with_hint("set `HOME`"))?;
        let root = if global {
            ctx.check_path(&home, "~")?;
            home.clone()
        } else {
            crate::project::root(&ctx.cwd)
        };
        Ok(Self {
            root,
            home,
            global,
            ctx: ctx.clone(),
        })
    }

    /// Refuses a target outside the caller's sandbox.
    fn check(&self, key: &str) -> Result<()> {
        self.ctx.check_path(&self.path(key), key)
    }

    fn path(&self, key: &str) -> PathBuf {
        match lock::parse_section_key(key) {
            Some((file, _, _)) => Location::from_key(file).resolve(&self.root, &self.home),
            None => Location::from_key(key).resolve(&self.root, &self.home),
        }
    }

    fn root_text(&self) -> String {
        self.root.display().to_string()
    }
}

/// Where a package's copy lives, relative to the root.
fn copy_dir(name: &str) -> String {
    format!(".aam/packages/{name}")
}

// ---------------------------------------------------------------- specs

/// A package ready to install.
pub(crate) struct Prepared {
    pub manifest: Manifest,
    /// Package files (the manifest included): path to (bytes, executable).
    pub files: BTreeMap<String, (Vec<u8>, bool)>,
    pub source: &'static str,
    pub source_name: String,
    pub source_commit: Option<String>,
    pub checksum: String,
    pub requested: Option<String>,
    pub artifacts: Vec<LockedArtifact>,
    members: Vec<(Option<i64>, ArtifactKind, String, String)>,
}

/// Turns install specs into packages ready to deploy (registry packages with
/// their dependencies resolved transitively).
pub(crate) fn prepare_specs(ctx: &Context, catalog: &Catalog, specs: &[String]) -> Result<Vec<Prepared>> {
    let settings = ctx.home.load_settings()?;
    let source_names = catalog.source_names()?;
    let mut prepared = Vec::new();
    let mut registry_requests: Vec<(String, String)> = Vec::new();
    // Explicit paths first, then registry packages, then package folders, then
    // source artifacts: a package's own folder next to you does not hide the
    // published package of the same name.
    for spec in specs {
        let path = ctx.cwd.join(spec);
        let is_folder = || path.join(MANIFEST_FILE).is_file();
        if spec.starts_with('.') || spec.starts_with('/') || spec.ends_with(".aam") {
            prepared.push(prepare_path(ctx, &path, spec)?);
            continue;
        }
        if let Some(rest) = spec.strip_prefix('@') {
            let (name, constraint) = split_version(rest);
            registry_requests.push((format!("@{name}"), constraint));
            continue;
        }
        if spec.contains('/') {
            if is_folder() {
                prepared.push(prepare_path(ctx, &path, spec)?);
                continue;
            }
            let Some((source, rest)) = split_qualified(spec, &source_names) else {
                return Err(Error::new(
                    ErrorCode::ArtifactNotFound,
                    format!("`{spec}` names no source artifact"),
                )
                .with_hint("qualified names are `<source>/<artifact>`; find them with `aam search`"));
            };
            prepared.push(prepare_source_artifact(ctx, catalog, source, rest, spec)?);
            continue;
        }
        let (name, constraint) = split_version(spec);
        if !catalog.registries_with(&name)?.is_empty() {
            registry_requests.push((name, constraint));
            continue;
        }
        if is_folder() {
            prepared.push(prepare_path(ctx, &path, spec)?);
            continue;
        }
        let matches = catalog.artifacts_named(None, &name)?;
        match matches.as_slice() {
            [one] => {
                let spec = qualified_name(&one.source, &one.path);
                prepared.push(prepare_source_artifact(ctx, catalog, &one.source, &one.path, &spec)?);
            }
            [] => {
                return Err(Error::new(
                    ErrorCode::PackageNotFound,
                    format!("no package or artifact named `{name}`"),
                )
                .with_hint("find one with `aam search`, or add the registry or source that has it"));
            }
            many => {
                let choices: Vec<String> = many.iter().map(|m| format!("`{}/{}`", m.source, m.name)).collect();
                return Err(Error::new(
                    ErrorCode::ArtifactAmbiguous,
                    format!("`{name}` names {} artifacts", many.len()),
                )
                .with_hint(format!(
                    "install one of them by its qualified name: {}",
                    choices.join(", ")
                )));
            }
        }
    }
    if !registry_requests.is_empty() {
        prepared.extend(prepare_registry(catalog, &settings, &registry_requests)?);
    }
    Ok(prepared)
}

/// `name@constraint` (the `@` of a scope is not a separator); no constraint is `*`.
fn split_version(text: &str) -> (String, String) {
    match text.rfind('@').filter(|&i| i > 0) {
        Some(i) => (text[..i].to_string(), text[i + 1..].to_string()),
        None => (text.to_string(), "*".to_string()),
    }
}

fn files_map(entries: Vec<(String, Vec<u8>, bool)>) -> BTreeMap<String, (Vec<u8>, bool)> {
    entries.into_iter().map(|(p, b, x)| (p, (b, x))).collect()
}

fn prepare_path(ctx: &Context, path: &Path, spec: &str) -> Result<Prepared> {
    ctx.check_path(path, spec)?;
    if !path.exists() {
        return Err(Error::new(
            ErrorCode::PackageNotFound,
            format!("no package folder or `.aam` archive at `{spec}`"),
        )
        .with_hint("check the path; package names and `source/artifact` names do not start with `.` or `/`"));
    }
    let (bytes, source) = if path.is_dir() {
        (super::packages::pack_dir(path)?.0, "local")
    } else {
        (std::fs::read(path).map_err(|e| Error::io("read", path, e))?, "archive")
    };
    let manifest = validate_archive_bytes(&bytes)?;
    Ok(Prepared {
        files: files_map(archive::files(&bytes)?),
        source,
        source_name: path.canonicalize().unwrap_or(path.to_path_buf()).display().to_string(),
        source_commit: None,
        checksum: blake3::hash(&bytes).to_hex().to_string(),
        requested: Some(spec.to_string()),
        artifacts: Vec::new(),
        members: members_of(&manifest),
        manifest,
    })
}

fn members_of(manifest: &Manifest) -> Vec<(Option<i64>, ArtifactKind, String, String)> {
    manifest
        .artifacts
        .all()
        .map(|(k, a)| (None, k, a.name.clone(), a.path.clone()))
        .collect()
}

fn prepare_source_artifact(ctx: &Context, catalog: &Catalog, source: &str, rest: &str, spec: &str) -> Result<Prepared> {
    let selection = Selection {
        artifacts: vec![rest.to_string()],
        ..Default::default()
    };
    let gathered = gather_from_source(ctx, catalog, source, &selection)?;
    if gathered.chosen.len() != 1 {
        let paths: Vec<String> = gathered
            .chosen
            .iter()
            .map(|c| format!("`{source}/{}`", c.source_path))
            .collect();
        return Err(Error::new(
            ErrorCode::ArtifactAmbiguous,
            format!("`{spec}` names {} artifacts", paths.len()),
        )
        .with_hint(format!("name one by its path: {}", paths.join(", "))));
    }
    let chosen = &gathered.chosen[0];
    let commit = gathered.provenance.source_commit.clone().unwrap_or_default();
    let version = format!("0.0.0+{}", &commit[..commit.len().min(12)]);
    let built = assemble(&gathered, &artifact_file_name(&chosen.name), &version, None, Vec::new())?;
    let manifest_text = manifest::to_yaml(&built.manifest);
    let mut files = built.files;
    files.insert(MANIFEST_FILE.to_string(), (manifest_text.clone().into_bytes(), false));
    let source_record = super::sources::find_source(catalog, source)?;
    let digests = catalog.live_artifacts_in(source_record.id, std::slice::from_ref(&chosen.source_path), &[])?;
    Ok(Prepared {
        artifacts: digests
            .into_iter()
            .filter(|a| a.path == chosen.source_path)
            .map(|a| LockedArtifact {
                kind: a.kind,
                path: a.path,
                digest: a.content_digest,
            })
            .collect(),
        members: vec![(
            chosen.artifact_id,
            chosen.kind,
            chosen.name.clone(),
            chosen.source_path.clone(),
        )],
        manifest: built.manifest,
        files,
        source: "source",
        source_name: source.to_string(),
        source_commit: Some(commit),
        checksum: blake3::hash(manifest_text.as_bytes()).to_hex().to_string(),
        requested: Some(qualified_name(source, &chosen.source_path)),
    })
}

/// The registry a package is taken from: the default one when it has it, else
/// the first configured one that does.
fn registry_for(catalog: &Catalog, settings: &Settings, name: &str) -> Result<Option<String>> {
    let holding = catalog.registries_with(name)?;
    let mut ordered: Vec<&crate::config::RegistrySetting> = settings.registries.iter().collect();
    ordered.sort_by_key(|r| !r.default);
    Ok(ordered
        .into_iter()
        .find(|r| holding.contains(&r.name))
        .map(|r| r.name.clone()))
}

fn prepare_registry(catalog: &Catalog, settings: &Settings, requests: &[(String, String)]) -> Result<Vec<Prepared>> {
    let entries = |name: &str| -> Result<Vec<(String, VersionEntry)>> {
        let Some(registry) = registry_for(catalog, settings, name)? else {
            return Ok(Vec::new());
        };
        catalog
            .registry_versions(&registry, name)?
            .into_iter()
            .map(|(v, json)| {
                serde_json::from_str::<VersionEntry>(&json)
                    .map(|e| (v, e))
                    .map_err(|e| Error::internal(format!("registry entry of `{name}@`: {e}")))
            })
            .collect()
    };
    let resolved = resolve(requests, |name| {
        Ok(entries(name)?
            .into_iter()
            .filter_map(|(v, e)| {
                semver::Version::parse(&v).ok().map(|version| Candidate {
                    version,
                    dependencies: e.dependencies,
                })
            })
            .collect())
    })?;
    let mut out = Vec::new();
    for (name, resolved) in resolved {
        let version = resolved.candidate.version.to_string();
        let registry_name = registry_for(catalog, settings, &name)?.unwrap_or_default();
        let setting = settings.registry(Some(&registry_name))?;
        let registry = open_registry(setting)?;
        let (_, entry) = entries(&name)?
            .into_iter()
            .find(|(v, _)| *v == version)
            .ok_or_else(|| Error::internal(format!("resolved `{name}@{version}` vanished")))?;
        let bytes = registry.archive(&entry)?;
        let manifest = validate_archive_bytes(&bytes)?;
        out.push(Prepared {
            files: files_map(archive::files(&bytes)?),
            source: "registry",
            source_name: registry_name,
            source_commit: None,
            checksum: entry.checksum.clone(),
            requested: Some(resolved.constraint),
            artifacts: Vec::new(),
            members: members_of(&manifest),
            manifest,
        });
    }
    Ok(out)
}

// ---------------------------------------------------------------- planning

/// The platforms to deploy to: the ones asked for, else the project's settings
/// (`aam init`), else the home's, else the ones the project already uses.
pub(crate) fn platforms(ctx: &Context, roots: &Roots, asked: &[Platform], no_deploy: bool) -> Result<Vec<Platform>> {
    if no_deploy {
        return Ok(Vec::new());
    }
    let mut chosen: Vec<Platform> = asked.to_vec();
    let mut configured = Vec::new();
    if chosen.is_empty() && !roots.global {
        configured =
            crate::config::read_settings(&crate::config::project_settings_path(&roots.root))?.default_platforms;
    }
    if chosen.is_empty() && configured.is_empty() {
        configured = ctx.home.load_settings()?.default_platforms;
    }
    if chosen.is_empty() {
        for name in configured {
            chosen.push(deploy::parse_platform(&name).ok_or_else(|| {
                Error::new(
                    ErrorCode::SettingsInvalid,
                    format!("`default_platforms` names `{name}`, which is not a platform"),
                )
                .with_hint(
                    "fix it with `aam config set default_platforms cursor,claude` (cursor, claude, copilot, codex)",
                )
            })?);
        }
    }
    if chosen.is_empty() {
        chosen = deploy::detect_platforms(&roots.root)
            .into_iter()
            .map(|(p, _)| p)
            .collect();
    }
    if chosen.is_empty() {
        return Err(Error::invalid_argument("no platform to deploy to")
            .with_hint("name platforms (`--platform`: cursor, claude, copilot, codex), set `default_platforms` with `aam config set`, or skip deploying (`--no-deploy`)"));
    }
    chosen.sort_by_key(|p| p.as_str());
    chosen.dedup();
    Ok(chosen)
}

/// Everything a command will change, built package by package against an
/// in-memory view of shared files.
pub(crate) struct Plan<'r> {
    roots: &'r Roots,
    lock: LockFile,
    /// Shared files (`AGENTS.md`, `CLAUDE.md`): path to (original text, new text).
    shared: BTreeMap<PathBuf, (Option<String>, String)>,
    changes: Vec<Change>,
    /// Bytes to keep in the object store for `aam diff`.
    originals: Vec<Vec<u8>>,
    /// Target key to the package that claims it in this command.
    claimed: BTreeMap<String, String>,
    force: bool,
}

impl<'r> Plan<'r> {
    pub(crate) fn new(roots: &'r Roots, force: bool) -> Result<Self> {
        Ok(Self {
            lock: lock::read(&roots.root)?,
            roots,
            shared: BTreeMap::new(),
            changes: Vec::new(),
            originals: Vec::new(),
            claimed: BTreeMap::new(),
            force,
        })
    }

    pub(crate) fn lock(&self) -> &LockFile {
        &self.lock
    }

    /// The text a shared file will have (read on first use).
    fn shared_text(&mut self, path: &Path) -> Result<String> {
        if let Some((_, text)) = self.shared.get(path) {
            return Ok(text.clone());
        }
        let text = match std::fs::read_to_string(path) {
            Ok(t) => Some(t),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(Error::io("read", path, e)),
        };
        let current = text.clone().unwrap_or_default();
        self.shared.insert(path.to_path_buf(), (text, current.clone()));
        Ok(current)
    }

    fn set_shared_text(&mut self, path: &Path, text: String) {
        if let Some((_, current)) = self.shared.get_mut(path) {
            *current = text;
        }
    }

    /// Which package (other than `except`) deployed `key`.
    fn owner(&self, key: &str, except: &str) -> Option<String> {
        if let Some(owner) = self.claimed.get(key).filter(|o| *o != except) {
            return Some(owner.clone());
        }
        self.lock
            .packages
            .iter()
            .filter(|(name, _)| *name != except)
            .find(|(_, p)| p.deployed.iter().any(|d| d.target == key) || p.file_checksums.contains_key(key))
            .map(|(name, _)| name.clone())
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

    fn unowned_exists(&self, key: &str, package: &str, exists: bool) -> Result<()> {
        let ours = self.lock.packages.get(package).is_some_and(|p| {
            p.deployed.iter().any(|d| d.target == key)
                || p.file_checksums
                    .keys()
                    .any(|k| k == key || k.starts_with(&format!("{key}/")))
        });
        if exists && !ours && !self.force {
            return Err(Error::new(
                ErrorCode::Conflict,
                format!("`{key}` exists and was not installed by aam"),
            )
            .with_hint("move it away, or install with `force` (`--force`) to overwrite it"));
        }
        Ok(())
    }

    fn write(
        &mut self,
        key: &str,
        bytes: Vec<u8>,
        executable: bool,
        checksums: &mut BTreeMap<String, String>,
    ) -> Result<()> {
        self.roots.check(key)?;
        checksums.insert(key.to_string(), blake3::hash(&bytes).to_hex().to_string());
        self.originals.push(bytes.clone());
        self.changes.push(Change::Write {
            path: self.roots.path(key),
            bytes,
            executable,
        });
        Ok(())
    }

    /// Plans one package: its copy under `.aam/packages/`, its deployments, and
    /// the removal of whatever an earlier version deployed that this one does not.
    pub(crate) fn add(&mut self, package: &Prepared, platforms: &[Platform]) -> Result<LockedPackage> {
        let name = package.manifest.name.clone();
        let mut checksums = BTreeMap::new();
        let mut deployed = Vec::new();
        let copy = copy_dir(&name);
        for (path, (bytes, executable)) in &package.files {
            self.write(&format!("{copy}/{path}"), bytes.clone(), *executable, &mut checksums)?;
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
            for &platform in platforms {
                match deploy::target(kind, &artifact.name, platform, self.roots.global) {
                    Target::Dir(location) => {
                        let key = location.key();
                        self.conflict(&key, &name)?;
                        let exists = location.resolve(&self.roots.root, &self.roots.home).exists();
                        self.unowned_exists(&key, &name, exists)?;
                        self.claimed.insert(key.clone(), name.clone());
                        let prefix = format!("{}/", artifact.path);
                        for (path, (bytes, executable)) in &package.files {
                            if let Some(rel) = path.strip_prefix(&prefix) {
                                self.write(&location.join(rel).key(), bytes.clone(), *executable, &mut checksums)?;
                            }
                        }
                        deployed.push(deployment(platform, kind, &artifact.name, key));
                    }
                    Target::File(location) => {
                        let key = location.key();
                        self.conflict(&key, &name)?;
                        let exists = location.resolve(&self.roots.root, &self.roots.home).exists();
                        self.unowned_exists(&key, &name, exists)?;
                        self.claimed.insert(key.clone(), name.clone());
                        let rendered = deploy::render(kind, platform, &artifact.name, &text, false);
                        self.write(&key, rendered.into_bytes(), false, &mut checksums)?;
                        deployed.push(deployment(platform, kind, &artifact.name, key));
                    }
                    Target::Section {
                        file,
                        name: section,
                        kind,
                    } => {
                        let key = section_key(&file.key(), &section, kind);
                        if self.claimed.get(&key).is_some_and(|o| *o == name) {
                            continue; // codex agent and instruction of one name share nothing; same key is the same section
                        }
                        self.conflict(&key, &name)?;
                        self.roots.check(&file.key())?;
                        let path = file.resolve(&self.roots.root, &self.roots.home);
                        let body = deploy::render(kind, platform, &section, &text, true);
                        let current = self.shared_text(&path)?;
                        let exists = sections::get(&current, &section, kind.as_str()).is_some();
                        self.unowned_exists(&key, &name, exists)?;
                        self.set_shared_text(&path, sections::upsert(&current, &section, kind.as_str(), &body));
                        self.claimed.insert(key.clone(), name.clone());
                        section_keys.push((key.clone(), path, section.clone(), kind));
                        deployed.push(deployment(platform, kind, &artifact.name, key));
                    }
                }
            }
        }
        for (key, path, section, kind) in section_keys {
            let text = self.shared_text(&path)?;
            let content = sections::get(&text, &section, kind.as_str())
                .unwrap_or_default()
                .to_string();
            checksums.insert(key, blake3::hash(content.as_bytes()).to_hex().to_string());
            self.originals.push(content.into_bytes());
        }
        if let Some(previous) = self.lock.packages.get(&name).cloned() {
            self.remove_stale(&previous, &checksums)?;
        }
        let mut platforms: Vec<String> = platforms.iter().map(|p| p.as_str().to_string()).collect();
        platforms.sort();
        let entry = LockedPackage {
            version: package.manifest.version.clone(),
            source: package.source.to_string(),
            source_name: package.source_name.clone(),
            source_commit: package.source_commit.clone(),
            checksum: package.checksum.clone(),
            dependencies: package.manifest.dependencies.clone(),
            platforms,
            requested: package.requested.clone(),
            artifacts: package.artifacts.clone(),
            deployed,
            file_checksums: checksums,
        };
        self.lock.packages.insert(name, entry.clone());
        Ok(entry)
    }

    /// Removes what `previous` wrote and the new version no longer writes.
    fn remove_stale(&mut self, previous: &LockedPackage, keep: &BTreeMap<String, String>) -> Result<()> {
        for key in previous.file_checksums.keys().filter(|k| !keep.contains_key(*k)) {
            self.remove_key(key)?;
        }
        Ok(())
    }

    /// Removes one recorded file or section.
    fn remove_key(&mut self, key: &str) -> Result<()> {
        self.roots.check(key)?;
        match lock::parse_section_key(key) {
            Some((file, section, kind)) => {
                let path = Location::from_key(file).resolve(&self.roots.root, &self.roots.home);
                let current = self.shared_text(&path)?;
                self.set_shared_text(&path, sections::remove(&current, section, kind));
            }
            None => self.changes.push(Change::Remove {
                path: self.roots.path(key),
            }),
        }
        Ok(())
    }

    /// Forgets a package: removes the files and sections in `keys`.
    pub(crate) fn remove_package(&mut self, name: &str, keys: &[String]) -> Result<()> {
        for key in keys {
            self.remove_key(key)?;
        }
        self.lock.packages.remove(name);
        Ok(())
    }

    /// The final change list: file changes, shared files, then the lock file when
    /// its content changed. Keeps originals in the store.
    fn finish(mut self, store: &ObjectStore) -> Result<(Vec<Change>, LockFile)> {
        for bytes in &self.originals {
            store.put(bytes)?;
        }
        for (path, (before, after)) in std::mem::take(&mut self.shared) {
            if before.as_deref() == Some(after.as_str()) {
                continue;
            }
            if after.is_empty() && before.is_some() {
                self.changes.push(Change::Remove { path });
            } else if !after.is_empty() {
                self.changes.push(Change::Write {
                    path,
                    bytes: after.into_bytes(),
                    executable: false,
                });
            }
        }
        let old = lock::read(&self.roots.root)?;
        let mut new = self.lock;
        new.lockfile_version = lock::LOCKFILE_VERSION;
        if new.packages != old.packages || old.resolved_at.is_empty() {
            new.resolved_at = now_timestamp();
            self.changes.push(Change::Write {
                path: lock::lock_path(&self.roots.root),
                bytes: lock::to_text(&new).into_bytes(),
                executable: false,
            });
        } else {
            new.resolved_at = old.resolved_at;
        }
        Ok((self.changes, new))
    }

    /// Applies the plan; `mirror` runs after the files are in place and, when it
    /// fails, every change is undone.
    pub(crate) fn execute(self, store: &ObjectStore, mirror: impl FnOnce(&LockFile) -> Result<()>) -> Result<LockFile> {
        let (changes, lock) = self.finish(store)?;
        let applied: Applied = apply::apply(&changes)?;
        if let Err(e) = mirror(&lock) {
            applied.rollback();
            return Err(e);
        }
        applied.commit();
        Ok(lock)
    }
}

fn deployment(platform: Platform, kind: ArtifactKind, name: &str, target: String) -> Deployment {
    Deployment {
        platform: platform.as_str().to_string(),
        kind,
        name: name.to_string(),
        target,
    }
}

/// Mirrors one lock entry into the catalog.
fn mirror_install(
    catalog: &mut Catalog,
    roots: &Roots,
    name: &str,
    entry: &LockedPackage,
    prepared: &Prepared,
) -> Result<()> {
    let manifest_json = serde_json::to_string(&prepared.manifest).unwrap_or_default();
    let members: Vec<PackageMember> = prepared
        .members
        .iter()
        .map(|(id, kind, n, path)| PackageMember {
            artifact_id: *id,
            project_root: None,
            kind: *kind,
            name: n,
            path,
        })
        .collect();
    let files: Vec<(String, String)> = entry
        .file_checksums
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let root = roots.root_text();
    catalog.record_install(&InstallRecord {
        project_root: &root,
        package: NewPackage {
            name,
            version: &entry.version,
            description: Some(&prepared.manifest.description),
            manifest_json: &manifest_json,
            origin: if prepared.source == "registry" {
                "registry"
            } else {
                "source"
            },
            provenance_json: None,
            archive_blake3: Some(&entry.checksum),
        },
        members: &members,
        platforms: &entry.platforms,
        source_commit: entry.source_commit.as_deref(),
        files: &files,
    })
}

fn object_store(ctx: &Context) -> ObjectStore {
    ObjectStore::new(ctx.home.root().join("objects"))
}

// ---------------------------------------------------------------- install

/// Input of `aam_install`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InstallInput {
    /// What to install: `name`, `name@constraint`, `@scope/name@1.2`, `source/artifact`, an artifact name, a folder or a `.aam` archive.
    pub specs: Vec<String>,
    /// Platforms to deploy to (default: settings, else the platforms the project uses).
    #[serde(default)]
    pub platforms: Vec<Platform>,
    /// Only keep the package copy and lock entry; deploy nothing.
    #[serde(default)]
    pub no_deploy: bool,
    /// Install again even when installed; overwrite files aam did not write.
    #[serde(default)]
    pub force: bool,
    /// Work out everything, change nothing.
    #[serde(default)]
    pub dry_run: bool,
    /// Install into the home folder instead of the project.
    #[serde(default)]
    pub global: bool,
}

/// One package installed.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InstalledPackage {
    /// Name.
    pub name: String,
    /// Version.
    pub version: String,
    /// `registry`, `source`, `local` or `archive`.
    pub source: String,
    /// Registry, source or path it came from.
    pub source_name: String,
    /// Platforms it was deployed to.
    pub platforms: Vec<String>,
    /// Files and sections written (package copy included).
    pub files_written: u64,
}

/// A package left as it was.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SkippedPackage {
    /// Name.
    pub name: String,
    /// Version already there.
    pub version: String,
    /// Why.
    pub reason: String,
}

/// Output of `aam_install`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InstallOutput {
    /// Packages installed (or that would be, on a dry run).
    pub installed: Vec<InstalledPackage>,
    /// Packages already installed.
    pub skipped: Vec<SkippedPackage>,
    /// The project (or home) root.
    pub root: String,
    /// Whether nothing was changed.
    pub dry_run: bool,
}

/// Installs packages and deploys their artifacts.
pub struct Install;

impl Tool for Install {
    const NAME: &'static str = "aam_install";
    const TITLE: &'static str = "Install packages";
    const DESCRIPTION: &'static str = "Install packages (from registries, with dependencies resolved transitively), source artifacts (`source/artifact`, read from cached git objects at the indexed commit), folders or `.aam` archives, and deploy their artifacts where each platform (cursor, claude, copilot, codex) reads them. Writes `.aam/aam-lock.yaml` with a checksum for every file. All-or-nothing: a failure leaves everything as it was. Next: `aam_verify`.";
    const RISK: Risk = Risk::Write;
    const IDEMPOTENT: bool = true;
    const ERRORS: &'static [ErrorCode] = &[
        ErrorCode::PackageNotFound,
        ErrorCode::ArtifactNotFound,
        ErrorCode::ArtifactAmbiguous,
        ErrorCode::DependencyConflict,
        ErrorCode::Conflict,
        ErrorCode::ManifestInvalid,
        ErrorCode::ArchiveInvalid,
        ErrorCode::Forbidden,
        ErrorCode::LockInvalid,
    ];
    const CONSTRAINTS: &'static [&'static str] = &[
        "all-or-nothing: a failure leaves every file as it was",
        "machine front ends refuse targets outside the project and AAM_HOME (global installs, Codex prompts)",
    ];
    const EXAMPLES: &'static [Example] = &[
        Example {
            title: "one source artifact for claude",
            input: r#"{"specs": ["sample/test-planner"], "platforms": ["claude"]}"#,
            expect: Expect::Output(
                r#"{"installed": [{"name": "test-planner", "source": "source", "source_name": "sample", "platforms": ["claude"]}], "skipped": []}"#,
            ),
        },
        Example {
            title: "something nobody has",
            input: r#"{"specs": ["ghost"], "platforms": ["claude"]}"#,
            expect: Expect::Error(ErrorCode::PackageNotFound),
        },
    ];
    type Input = InstallInput;
    type Output = InstallOutput;

    fn run(ctx: &Context, input: InstallInput) -> Result<InstallOutput> {
        if input.specs.is_empty() {
            return Err(Error::invalid_argument("nothing to install")
                .with_hint("name a package, an artifact, a folder or an archive"));
        }
        let roots = Roots::new(ctx, input.global)?;
        let mut catalog = ctx.catalog()?;
        let prepared = prepare_specs(ctx, &catalog, &input.specs)?;
        let platforms = platforms(ctx, &roots, &input.platforms, input.no_deploy)?;
        let mut plan = Plan::new(&roots, input.force)?;
        let mut installed = Vec::new();
        let mut skipped = Vec::new();
        let mut todo = Vec::new();
        for package in &prepared {
            let name = &package.manifest.name;
            let same = plan
                .lock()
                .packages
                .get(name)
                .filter(|p| p.version == package.manifest.version && p.checksum == package.checksum);
            if let Some(existing) = same.filter(|_| !input.force) {
                skipped.push(SkippedPackage {
                    name: name.clone(),
                    version: existing.version.clone(),
                    reason: "already installed".to_string(),
                });
                continue;
            }
            let entry = plan.add(package, &platforms)?;
            installed.push(InstalledPackage {
                name: name.clone(),
                version: entry.version.clone(),
                source: entry.source.clone(),
                source_name: entry.source_name.clone(),
                platforms: entry.platforms.clone(),
                files_written: entry.file_checksums.len() as u64,
            });
            todo.push((package, entry));
        }
        if !input.dry_run && !todo.is_empty() {
            plan.execute(&object_store(ctx), |_| {
                for (package, entry) in &todo {
                    mirror_install(&mut catalog, &roots, &package.manifest.name, entry, package)?;
                }
                Ok(())
            })?;
        }
        Ok(InstallOutput {
            installed,
            skipped,
            root: roots.root_text(),
            dry_run: input.dry_run,
        })
    }
}

// ---------------------------------------------------------------- uninstall

/// Input of `aam_uninstall`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UninstallInput {
    /// Package name.
    pub package: String,
    /// Remove files even when they were edited since install.
    #[serde(default)]
    pub force: bool,
    /// Uninstall from the home folder.
    #[serde(default)]
    pub global: bool,
}

/// Output of `aam_uninstall`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UninstallOutput {
    /// Package removed.
    pub removed: String,
    /// Its version.
    pub version: String,
    /// Files and sections removed.
    pub removed_files: Vec<String>,
    /// Files and sections kept because they were edited (pass `force` to remove them).
    pub kept_modified: Vec<String>,
    /// Files already gone.
    pub missing_files: Vec<String>,
    /// Installed packages that depend on it.
    pub dependents: Vec<String>,
}

/// Removes an installed package.
pub struct Uninstall;

impl Tool for Uninstall {
    const NAME: &'static str = "aam_uninstall";
    const TITLE: &'static str = "Uninstall a package";
    const DESCRIPTION: &'static str = "Remove an installed package: undeploy it from every platform it was deployed to and delete its copy, removing only files it wrote that are unchanged; edited files are kept and reported unless `force`. Reports installed packages that depend on it.";
    const RISK: Risk = Risk::Destructive;
    const IDEMPOTENT: bool = false;
    const ERRORS: &'static [ErrorCode] = &[
        ErrorCode::PackageNotInstalled,
        ErrorCode::LockInvalid,
        ErrorCode::Forbidden,
    ];
    const CONSTRAINTS: &'static [&'static str] = &["files edited since install are kept unless `force`"];
    const EXAMPLES: &'static [Example] = &[
        Example {
            title: "remove an installed package",
            input: r#"{"package": "review-kit"}"#,
            expect: Expect::Output(r#"{"removed": "review-kit", "kept_modified": []}"#),
        },
        Example {
            title: "a package that is not installed",
            input: r#"{"package": "ghost"}"#,
            expect: Expect::Error(ErrorCode::PackageNotInstalled),
        },
    ];
    type Input = UninstallInput;
    type Output = UninstallOutput;

    fn run(ctx: &Context, input: UninstallInput) -> Result<UninstallOutput> {
        let roots = Roots::new(ctx, input.global)?;
        let mut plan = Plan::new(&roots, input.force)?;
        let entry = installed(plan.lock(), &input.package)?.clone();
        let dependents: Vec<String> = plan
            .lock()
            .packages
            .iter()
            .filter(|(_, p)| p.dependencies.contains_key(&input.package))
            .map(|(n, _)| n.clone())
            .collect();
        let status = file_status(&roots, &entry)?;
        let mut remove = Vec::new();
        let mut kept = Vec::new();
        for (key, state) in &status {
            match state {
                FileState::Ok => remove.push(key.clone()),
                FileState::Modified if input.force => remove.push(key.clone()),
                FileState::Modified => kept.push(key.clone()),
                FileState::Missing => {}
            }
        }
        plan.remove_package(&input.package, &remove)?;
        let mut catalog = ctx.catalog()?;
        let root = roots.root_text();
        plan.execute(&object_store(ctx), |_| catalog.remove_install(&root, &input.package))?;
        Ok(UninstallOutput {
            removed: input.package,
            version: entry.version,
            removed_files: remove,
            kept_modified: kept,
            missing_files: status
                .iter()
                .filter(|(_, s)| **s == FileState::Missing)
                .map(|(k, _)| k.clone())
                .collect(),
            dependents,
        })
    }
}

fn installed<'l>(lock: &'l LockFile, name: &str) -> Result<&'l LockedPackage> {
    lock.packages.get(name).ok_or_else(|| {
        let names: Vec<String> = lock.packages.keys().map(|n| format!("`{n}`")).collect();
        let hint = if names.is_empty() {
            "nothing is installed here; install with `aam install <package>`".to_string()
        } else {
            format!("installed packages: {}", names.join(", "))
        };
        Error::new(
            ErrorCode::PackageNotInstalled,
            format!("`{name}` is not installed here"),
        )
        .with_hint(hint)
    })
}

// ---------------------------------------------------------------- verify

/// How a recorded file compares with what is on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileState {
    Ok,
    Modified,
    Missing,
}

/// The current bytes of a recorded file or section, `None` when gone.
fn current_bytes(roots: &Roots, key: &str) -> Result<Option<Vec<u8>>> {
    let path = roots.path(key);
    let read = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io("read", &path, e)),
    };
    Ok(match lock::parse_section_key(key) {
        Some((_, name, kind)) => {
            let text = String::from_utf8_lossy(&read).into_owned();
            sections::get(&text, name, kind).map(|s| s.as_bytes().to_vec())
        }
        None => Some(read),
    })
}

pub(crate) fn file_status(roots: &Roots, entry: &LockedPackage) -> Result<BTreeMap<String, FileState>> {
    let mut out = BTreeMap::new();
    for (key, digest) in &entry.file_checksums {
        let state = match current_bytes(roots, key)? {
            None => FileState::Missing,
            Some(bytes) if blake3::hash(&bytes).to_hex().as_str() == digest => FileState::Ok,
            Some(_) => FileState::Modified,
        };
        out.insert(key.clone(), state);
    }
    Ok(out)
}

/// Files in folders a package owns (its copy, deployed skill folders) that it did not write.
fn untracked(roots: &Roots, name: &str, entry: &LockedPackage) -> Vec<String> {
    let mut dirs = vec![copy_dir(name)];
    dirs.extend(
        entry
            .deployed
            .iter()
            .filter(|d| d.kind == ArtifactKind::Skill)
            .map(|d| d.target.clone()),
    );
    let mut out = BTreeSet::new();
    for dir in dirs {
        let base = roots.path(&dir);
        for file in walk_files(&base) {
            let rel = file
                .strip_prefix(&base)
                .map(|p| p.to_string_lossy().replace('\\', "/"))
                .unwrap_or_default();
            let key = format!("{dir}/{rel}");
            if !entry.file_checksums.contains_key(&key) {
                out.insert(key);
            }
        }
    }
    out.into_iter().collect()
}

fn walk_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                out.extend(walk_files(&path));
            } else {
                out.push(path);
            }
        }
    }
    out
}

/// Input of `aam_verify`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VerifyInput {
    /// Installed package name.
    pub package: String,
    /// Check the home-folder install.
    #[serde(default)]
    pub global: bool,
}

/// Output of `aam_verify`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VerifyOutput {
    /// Package name.
    pub package_name: String,
    /// Installed version.
    pub version: String,
    /// Files and sections as installed.
    pub ok_files: Vec<String>,
    /// Files and sections changed since install.
    pub modified_files: Vec<String>,
    /// Files and sections gone.
    pub missing_files: Vec<String>,
    /// Files in the package's folders that it did not install.
    pub untracked_files: Vec<String>,
    /// Whether the lock entry records checksums at all.
    pub has_checksums: bool,
    /// No modified, missing or untracked files.
    pub is_clean: bool,
}

/// Checks an installed package file by file against its lock entry.
pub struct Verify;

impl Tool for Verify {
    const NAME: &'static str = "aam_verify";
    const TITLE: &'static str = "Verify an installed package";
    const DESCRIPTION: &'static str = "Compare every file an installed package wrote (its copy and each deployed file or section) with the checksum recorded in the lock file: which are unchanged, modified or missing, and which files appeared in its folders. Next: `aam_diff` to see the changes.";
    const RISK: Risk = Risk::Read;
    const IDEMPOTENT: bool = true;
    const ERRORS: &'static [ErrorCode] = &[ErrorCode::PackageNotInstalled, ErrorCode::LockInvalid];
    const EXAMPLES: &'static [Example] = &[Example {
        title: "an untouched install",
        input: r#"{"package": "review-kit"}"#,
        expect: Expect::Output(
            r#"{"package_name": "review-kit", "is_clean": true, "has_checksums": true, "modified_files": []}"#,
        ),
    }];
    type Input = VerifyInput;
    type Output = VerifyOutput;

    fn run(ctx: &Context, input: VerifyInput) -> Result<VerifyOutput> {
        let roots = Roots::new(ctx, input.global)?;
        let lock = lock::read(&roots.root)?;
        let entry = installed(&lock, &input.package)?;
        let status = file_status(&roots, entry)?;
        let pick = |state: FileState| {
            status
                .iter()
                .filter(|(_, s)| **s == state)
                .map(|(k, _)| k.clone())
                .collect::<Vec<_>>()
        };
        let untracked_files = untracked(&roots, &input.package, entry);
        let (ok_files, modified_files, missing_files) =
            (pick(FileState::Ok), pick(FileState::Modified), pick(FileState::Missing));
        Ok(VerifyOutput {
            package_name: input.package,
            version: entry.version.clone(),
            is_clean: modified_files.is_empty() && missing_files.is_empty() && untracked_files.is_empty(),
            has_checksums: !entry.file_checksums.is_empty(),
            ok_files,
            modified_files,
            missing_files,
            untracked_files,
        })
    }
}

// ---------------------------------------------------------------- diff

/// One modified file.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileDiff {
    /// Lock key of the file (or `FILE#name type` section).
    pub path: String,
    /// Unified diff from the installed original to the current content.
    pub diff: String,
}

/// Output of `aam_diff`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiffOutput {
    /// Package name.
    pub package_name: String,
    /// Installed version.
    pub version: String,
    /// Changed files with their diffs.
    pub modified_files: Vec<FileDiff>,
    /// Files in its folders it did not install.
    pub untracked_files: Vec<String>,
    /// Files gone.
    pub missing_files: Vec<String>,
}

/// Shows what changed in an installed package's files.
pub struct Diff;

impl Tool for Diff {
    const NAME: &'static str = "aam_diff";
    const TITLE: &'static str = "Diff an installed package";
    const DESCRIPTION: &'static str = "Show a unified diff of every file of an installed package that was edited since install, against the installed original, plus untracked and missing files. Next: keep the edits, or `aam_upgrade`/`aam_install` with force to restore.";
    const RISK: Risk = Risk::Read;
    const IDEMPOTENT: bool = true;
    const ERRORS: &'static [ErrorCode] = &[ErrorCode::PackageNotInstalled, ErrorCode::LockInvalid];
    const EXAMPLES: &'static [Example] = &[
        Example {
            title: "an installed package without edits",
            input: r#"{"package": "review-kit"}"#,
            expect: Expect::Output(r#"{"package_name": "review-kit", "modified_files": [], "missing_files": []}"#),
        },
        Example {
            title: "a package that is not installed",
            input: r#"{"package": "ghost"}"#,
            expect: Expect::Error(ErrorCode::PackageNotInstalled),
        },
    ];
    type Input = VerifyInput;
    type Output = DiffOutput;

    fn run(ctx: &Context, input: VerifyInput) -> Result<DiffOutput> {
        let roots = Roots::new(ctx, input.global)?;
        let lock = lock::read(&roots.root)?;
        let entry = installed(&lock, &input.package)?;
        let store = object_store(ctx);
        let status = file_status(&roots, entry)?;
        let mut modified = Vec::new();
        for (key, _) in status.iter().filter(|(_, s)| **s == FileState::Modified) {
            let original = store.get(&entry.file_checksums[key])?;
            let current = current_bytes(&roots, key)?.unwrap_or_default();
            let diff = match original {
                Some(original) => unified_diff(key, &original, &current),
                None => format!("(the installed original of `{key}` is no longer stored)\n"),
            };
            modified.push(FileDiff {
                path: key.clone(),
                diff,
            });
        }
        Ok(DiffOutput {
            package_name: input.package.clone(),
            version: entry.version.clone(),
            modified_files: modified,
            untracked_files: untracked(&roots, &input.package, entry),
            missing_files: status
                .iter()
                .filter(|(_, s)| **s == FileState::Missing)
                .map(|(k, _)| k.clone())
                .collect(),
        })
    }
}

fn unified_diff(path: &str, old: &[u8], new: &[u8]) -> String {
    let old = String::from_utf8_lossy(old);
    let new = String::from_utf8_lossy(new);
    similar::TextDiff::from_lines(old.as_ref(), new.as_ref())
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string()
}

// ---------------------------------------------------------------- list

/// Input of `aam_list`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListInstalledInput {
    /// List the home-folder installs.
    #[serde(default)]
    pub global: bool,
}

/// One installed package.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListedPackage {
    /// Name.
    pub name: String,
    /// Version.
    pub version: String,
    /// `registry`, `source`, `local` or `archive`.
    pub source: String,
    /// Where it came from.
    pub source_name: String,
    /// Platforms deployed to.
    pub platforms: Vec<String>,
    /// Its dependencies: name to constraint.
    pub dependencies: BTreeMap<String, String>,
    /// Whether another installed package depends on it.
    pub is_dependency: bool,
}

/// Output of `aam_list`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListInstalledOutput {
    /// The project (or home) root.
    pub root: String,
    /// Installed packages, by name.
    pub packages: Vec<ListedPackage>,
}

/// Lists installed packages.
pub struct ListInstalled;

impl Tool for ListInstalled {
    const NAME: &'static str = "aam_list";
    const TITLE: &'static str = "List installed packages";
    const DESCRIPTION: &'static str = "List the packages installed in the current project (or the home folder) from its lock file: version, where each came from, platforms and dependencies. Next: `aam_verify` or `aam_outdated`.";
    const RISK: Risk = Risk::Read;
    const IDEMPOTENT: bool = true;
    const ERRORS: &'static [ErrorCode] = &[ErrorCode::LockInvalid];
    const EXAMPLES: &'static [Example] = &[Example {
        title: "what the project has installed",
        input: r#"{}"#,
        expect: Expect::Output(
            r#"{"packages": [{"name": "review-kit", "version": "1.0.0", "source": "registry", "platforms": ["claude"]}]}"#,
        ),
    }];
    type Input = ListInstalledInput;
    type Output = ListInstalledOutput;

    fn run(ctx: &Context, input: ListInstalledInput) -> Result<ListInstalledOutput> {
        let roots = Roots::new(ctx, input.global)?;
        let lock = lock::read(&roots.root)?;
        let depended: BTreeSet<&String> = lock.packages.values().flat_map(|p| p.dependencies.keys()).collect();
        Ok(ListInstalledOutput {
            root: roots.root_text(),
            packages: lock
                .packages
                .iter()
                .map(|(name, p)| ListedPackage {
                    name: name.clone(),
                    version: p.version.clone(),
                    source: p.source.clone(),
                    source_name: p.source_name.clone(),
                    platforms: p.platforms.clone(),
                    dependencies: p.dependencies.clone(),
                    is_dependency: depended.contains(name),
                })
                .collect(),
        })
    }
}

// ---------------------------------------------------------------- outdated

/// Input of `aam_outdated`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutdatedInput {
    /// Check the home-folder installs.
    #[serde(default)]
    pub global: bool,
}

/// One installed package's freshness.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutdatedPackage {
    /// Name.
    pub name: String,
    /// Installed version.
    pub current: String,
    /// Newest version its constraint allows (registry packages).
    pub wanted: Option<String>,
    /// Newest published version (registry packages).
    pub latest: Option<String>,
    /// `registry`, `source`, `local` or `archive`.
    pub source: String,
    /// Whether an upgrade would change it.
    pub outdated: bool,
    /// Why, in words.
    pub reason: String,
}

/// Output of `aam_outdated`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutdatedOutput {
    /// Every installed package.
    pub packages: Vec<OutdatedPackage>,
}

/// Tells which installed packages have newer content or versions.
pub struct Outdated;

impl Tool for Outdated {
    const NAME: &'static str = "aam_outdated";
    const TITLE: &'static str = "Find outdated packages";
    const DESCRIPTION: &'static str = "For each installed package: whether its source artifacts changed at the source's indexed commit (a new commit that does not touch them does not count), or a newer registry version satisfies its constraint. Answered from the catalog; run `aam_source_update` first for fresh sources. Next: `aam_upgrade`.";
    const RISK: Risk = Risk::Read;
    const IDEMPOTENT: bool = true;
    const ERRORS: &'static [ErrorCode] = &[ErrorCode::LockInvalid];
    const CONSTRAINTS: &'static [&'static str] = &["answers from the catalog: update sources first for fresh results"];
    const EXAMPLES: &'static [Example] = &[Example {
        title: "a newer version satisfies the constraint",
        input: r#"{}"#,
        expect: Expect::Output(
            r#"{"packages": [{"name": "review-kit", "current": "1.0.0", "wanted": "1.1.0", "latest": "1.1.0", "outdated": true}]}"#,
        ),
    }];
    type Input = OutdatedInput;
    type Output = OutdatedOutput;

    fn run(ctx: &Context, input: OutdatedInput) -> Result<OutdatedOutput> {
        let roots = Roots::new(ctx, input.global)?;
        let lock = lock::read(&roots.root)?;
        let catalog = ctx.catalog()?;
        let settings = ctx.home.load_settings()?;
        let mut packages = Vec::new();
        for (name, entry) in &lock.packages {
            packages.push(freshness(&catalog, &settings, name, entry)?);
        }
        Ok(OutdatedOutput { packages })
    }
}

pub(crate) fn freshness(
    catalog: &Catalog,
    settings: &Settings,
    name: &str,
    entry: &LockedPackage,
) -> Result<OutdatedPackage> {
    let mut out = OutdatedPackage {
        name: name.to_string(),
        current: entry.version.clone(),
        wanted: None,
        latest: None,
        source: entry.source.clone(),
        outdated: false,
        reason: "up to date".to_string(),
    };
    match entry.source.as_str() {
        "registry" => {
            let registry = registry_for(catalog, settings, name)?.unwrap_or_else(|| entry.source_name.clone());
            let mut versions: Vec<semver::Version> = catalog
                .registry_versions(&registry, name)?
                .into_iter()
                .filter_map(|(v, _)| semver::Version::parse(&v).ok())
                .collect();
            versions.sort();
            let req = manifest::parse_constraint(entry.requested.as_deref().unwrap_or("*"))
                .unwrap_or(semver::VersionReq::STAR);
            let current = semver::Version::parse(&entry.version).ok();
            out.latest = catalog
                .registry_tag(&registry, name, "latest")?
                .or(versions.last().map(|v| v.to_string()));
            let wanted = versions.iter().rev().find(|v| req.matches(v)).cloned();
            out.wanted = wanted.as_ref().map(|v| v.to_string());
            if let (Some(wanted), Some(current)) = (wanted, current)
                && wanted > current
            {
                out.outdated = true;
                out.reason = format!("{wanted} satisfies `{}`", entry.requested.as_deref().unwrap_or("*"));
            }
        }
        "source" => {
            let Some(source) = catalog.find_source(&entry.source_name)? else {
                out.reason = format!("source `{}` is no longer registered", entry.source_name);
                return Ok(out);
            };
            let paths: Vec<String> = entry.artifacts.iter().map(|a| a.path.clone()).collect();
            let live = catalog.live_artifacts_in(source.id, &paths, &[])?;
            for artifact in &entry.artifacts {
                let now = live.iter().find(|l| l.kind == artifact.kind && l.path == artifact.path);
                let changed = match now {
                    None => Some(format!("`{}` was removed upstream", artifact.path)),
                    Some(l) if l.content_digest != artifact.digest => Some(format!(
                        "`{}` changed at {}",
                        artifact.path,
                        &source.head_commit.clone().unwrap_or_default()
                            [..12.min(source.head_commit.as_ref().map_or(0, String::len))]
                    )),
                    Some(_) => None,
                };
                if let Some(reason) = changed {
                    out.outdated = true;
                    out.reason = reason;
                }
            }
        }
        other => out.reason = format!("installed from a {other}; nothing to compare with"),
    }
    Ok(out)
}

// ---------------------------------------------------------------- upgrade

/// What to do with files edited since install.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OnEdited {
    /// Leave the package as it is.
    #[default]
    Skip,
    /// Copy the edited files to `$AAM_HOME/backups/<pkg>--<timestamp>/`, then upgrade.
    Backup,
    /// Overwrite them.
    Force,
}

/// Input of `aam_upgrade`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpgradeInput {
    /// Package to upgrade (default: every outdated one).
    #[serde(default)]
    pub package: Option<String>,
    /// What to do when files were edited since install.
    #[serde(default)]
    pub on_edited: OnEdited,
    /// Report what would change, change nothing.
    #[serde(default)]
    pub dry_run: bool,
    /// Upgrade the home-folder installs.
    #[serde(default)]
    pub global: bool,
}

/// One package's upgrade.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpgradeReport {
    /// Name.
    pub name: String,
    /// Version before.
    pub from: String,
    /// Version after (or that would be installed).
    pub to: String,
    /// `upgraded`, `would_upgrade`, `up_to_date`, `skipped` or `failed`.
    pub status: String,
    /// Files edited since install.
    pub modified_files: Vec<String>,
    /// Where edited files were copied.
    pub backup_dir: Option<String>,
    /// Why it was skipped or failed.
    pub message: Option<String>,
}

impl UpgradeReport {
    fn fail(&mut self, error: &Error) {
        self.status = "failed".to_string();
        self.message = Some(format!("[{}] {}", error.code(), error.message()));
    }
}

/// Output of `aam_upgrade`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpgradeOutput {
    /// One report per package considered.
    pub packages: Vec<UpgradeReport>,
}

/// Upgrades installed packages, protecting local edits.
pub struct Upgrade;

impl Tool for Upgrade {
    const NAME: &'static str = "aam_upgrade";
    const TITLE: &'static str = "Upgrade packages";
    const DESCRIPTION: &'static str = "Upgrade outdated installed packages (or one) to the newest version their constraint allows, or the source's current content. Files edited since install are never overwritten silently: `on_edited` skips the package (default), backs the files up first, or forces. Reports each package's status.";
    const RISK: Risk = Risk::Write;
    const IDEMPOTENT: bool = true;
    const ERRORS: &'static [ErrorCode] = &[ErrorCode::PackageNotInstalled, ErrorCode::LockInvalid];
    const CONSTRAINTS: &'static [&'static str] =
        &["edited files are never overwritten silently: `on_edited` skips (default), backs up or forces"];
    const EXAMPLES: &'static [Example] = &[Example {
        title: "upgrade within the constraint",
        input: r#"{"package": "review-kit"}"#,
        expect: Expect::Output(
            r#"{"packages": [{"name": "review-kit", "from": "1.0.0", "to": "1.1.0", "status": "upgraded"}]}"#,
        ),
    }];
    type Input = UpgradeInput;
    type Output = UpgradeOutput;

    fn run(ctx: &Context, input: UpgradeInput) -> Result<UpgradeOutput> {
        let roots = Roots::new(ctx, input.global)?;
        let lock = lock::read(&roots.root)?;
        let catalog = ctx.catalog()?;
        let settings = ctx.home.load_settings()?;
        let names: Vec<String> = match &input.package {
            Some(name) => {
                installed(&lock, name)?;
                vec![name.clone()]
            }
            None => lock.packages.keys().cloned().collect(),
        };
        let mut reports = Vec::new();
        for name in names {
            // Earlier upgrades in this run may have moved this one along.
            let lock = lock::read(&roots.root)?;
            let Some(entry) = lock.packages.get(&name) else {
                continue;
            };
            let fresh = freshness(&catalog, &settings, &name, entry)?;
            let mut report = UpgradeReport {
                name: name.clone(),
                from: entry.version.clone(),
                to: fresh.wanted.clone().unwrap_or_else(|| entry.version.clone()),
                status: "up_to_date".to_string(),
                modified_files: Vec::new(),
                backup_dir: None,
                message: None,
            };
            if !fresh.outdated {
                reports.push(report);
                continue;
            }
            let spec = match entry.source.as_str() {
                "registry" => format!("{name}@{}", entry.requested.as_deref().unwrap_or("*")),
                _ => entry.requested.clone().unwrap_or_else(|| name.clone()),
            };
            let install = |dry_run| {
                Install::run(
                    ctx,
                    InstallInput {
                        specs: vec![spec.clone()],
                        platforms: entry
                            .platforms
                            .iter()
                            .filter_map(|p| deploy::parse_platform(p))
                            .collect(),
                        no_deploy: entry.platforms.is_empty(),
                        force: false,
                        dry_run,
                        global: input.global,
                    },
                )
            };
            // What the upgrade would replace: this package and any dependency it moves.
            let planned = match install(true) {
                Ok(planned) => planned,
                Err(e) => {
                    report.fail(&e);
                    reports.push(report);
                    continue;
                }
            };
            if let Some(next) = planned.installed.iter().find(|p| p.name == name) {
                report.to = next.version.clone();
            }
            for replaced in planned.installed.iter().filter_map(|p| lock.packages.get(&p.name)) {
                report.modified_files.extend(
                    file_status(&roots, replaced)?
                        .into_iter()
                        .filter(|(_, s)| *s == FileState::Modified)
                        .map(|(k, _)| k),
                );
            }
            if input.dry_run {
                report.status = "would_upgrade".to_string();
                reports.push(report);
                continue;
            }
            if !report.modified_files.is_empty() {
                match input.on_edited {
                    OnEdited::Skip => {
                        report.status = "skipped".to_string();
                        report.message = Some("files were edited since install; choose backup or force".to_string());
                        reports.push(report);
                        continue;
                    }
                    OnEdited::Backup => report.backup_dir = Some(backup(ctx, &roots, &name, &report.modified_files)?),
                    OnEdited::Force => {}
                }
            }
            match install(false) {
                Ok(_) => report.status = "upgraded".to_string(),
                Err(e) => report.fail(&e),
            }
            reports.push(report);
        }
        Ok(UpgradeOutput { packages: reports })
    }
}

/// Copies edited files to `$AAM_HOME/backups/<pkg>--<timestamp>/`.
fn backup(ctx: &Context, roots: &Roots, name: &str, keys: &[String]) -> Result<String> {
    let stamp = now_timestamp().replace(':', "-");
    let dir = ctx
        .home
        .root()
        .join("backups")
        .join(format!("{}--{stamp}", name.replace('/', "-")));
    for key in keys {
        if let Some(bytes) = current_bytes(roots, key)? {
            let file = key.replace("~/", "home/").replace('#', "--");
            crate::atomic::write_file(&dir.join(file), &bytes)?;
        }
    }
    Ok(dir.display().to_string())
}

// ---------------------------------------------------------------- package info

/// Input of `aam_package_info`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PackageInfoInput {
    /// Package name.
    pub name: String,
    /// Look at the home-folder installs.
    #[serde(default)]
    pub global: bool,
}

/// Output of `aam_package_info`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PackageInfoOutput {
    /// Name.
    pub name: String,
    /// Description.
    pub description: Option<String>,
    /// Version installed here, if any.
    pub installed_version: Option<String>,
    /// Where the installed version came from.
    pub source: Option<String>,
    /// Platforms it is deployed to here.
    pub platforms: Vec<String>,
    /// Registry that publishes it, if any.
    pub registry: Option<String>,
    /// Published versions, oldest first.
    pub versions: Vec<String>,
    /// Dist-tags.
    pub dist_tags: BTreeMap<String, String>,
    /// Artifacts of the installed (else latest) version: `type/name`.
    pub artifacts: Vec<String>,
    /// Dependencies of the installed (else latest) version.
    pub dependencies: BTreeMap<String, String>,
}

/// Shows one package: installed state and published versions.
pub struct PackageInfo;

impl Tool for PackageInfo {
    const NAME: &'static str = "aam_package_info";
    const TITLE: &'static str = "Show a package";
    const DESCRIPTION: &'static str = "Show a package: the version installed here (with its source and platforms) and what its registry publishes (versions, dist-tags, artifacts, dependencies). Next: `aam_install` or `aam_upgrade`.";
    const RISK: Risk = Risk::Read;
    const IDEMPOTENT: bool = true;
    const ERRORS: &'static [ErrorCode] = &[ErrorCode::PackageNotFound];
    const EXAMPLES: &'static [Example] = &[
        Example {
            title: "an installed registry package",
            input: r#"{"name": "review-kit"}"#,
            expect: Expect::Output(
                r#"{"name": "review-kit", "installed_version": "1.0.0", "versions": ["1.0.0", "1.1.0"], "artifacts": ["skill/code-review"]}"#,
            ),
        },
        Example {
            title: "a package nobody has",
            input: r#"{"name": "ghost"}"#,
            expect: Expect::Error(ErrorCode::PackageNotFound),
        },
    ];
    type Input = PackageInfoInput;
    type Output = PackageInfoOutput;

    fn run(ctx: &Context, input: PackageInfoInput) -> Result<PackageInfoOutput> {
        let roots = Roots::new(ctx, input.global)?;
        let lock = lock::read(&roots.root)?;
        let catalog = ctx.catalog()?;
        let settings = ctx.home.load_settings()?;
        let entry = lock.packages.get(&input.name);
        let registry = registry_for(&catalog, &settings, &input.name)?;
        if entry.is_none() && registry.is_none() {
            return Err(
                Error::new(ErrorCode::PackageNotFound, format!("no package named `{}`", input.name)).with_hint(
                    "list installed packages with `aam list`, or find packages with `aam search --type package`",
                ),
            );
        }
        let mut published: Vec<(semver::Version, VersionEntry)> = match &registry {
            Some(r) => catalog
                .registry_versions(r, &input.name)?
                .into_iter()
                .filter_map(|(v, json)| Some((semver::Version::parse(&v).ok()?, serde_json::from_str(&json).ok()?)))
                .collect(),
            None => Vec::new(),
        };
        published.sort_by(|a, b| a.0.cmp(&b.0));
        let dist_tags: BTreeMap<String, String> = match &registry {
            Some(r) => catalog.registry_tags(r, &input.name)?.into_iter().collect(),
            None => BTreeMap::new(),
        };
        let shown = entry
            .and_then(|e| published.iter().find(|(v, _)| v.to_string() == e.version))
            .or(published.last())
            .map(|(_, e)| e.clone());
        let installed_manifest = entry.and_then(|_| {
            let path = roots.root.join(copy_dir(&input.name)).join(MANIFEST_FILE);
            std::fs::read_to_string(path)
                .ok()
                .and_then(|t| manifest::check(&t).manifest)
        });
        let artifacts = match (&installed_manifest, &shown) {
            (Some(m), _) => m
                .artifacts
                .all()
                .map(|(k, a)| format!("{}/{}", k.as_str(), a.name))
                .collect(),
            (None, Some(e)) => e
                .artifacts
                .all()
                .map(|(k, a)| format!("{}/{}", k.as_str(), a.name))
                .collect(),
            _ => Vec::new(),
        };
        Ok(PackageInfoOutput {
            description: installed_manifest
                .as_ref()
                .map(|m| m.description.clone())
                .or(shown.as_ref().map(|e| e.description.clone())),
            installed_version: entry.map(|e| e.version.clone()),
            source: entry.map(|e| format!("{} {}", e.source, e.source_name)),
            platforms: entry.map(|e| e.platforms.clone()).unwrap_or_default(),
            registry,
            versions: published.iter().map(|(v, _)| v.to_string()).collect(),
            dist_tags,
            artifacts,
            dependencies: entry
                .map(|e| e.dependencies.clone())
                .or(shown.map(|e| e.dependencies))
                .unwrap_or_default(),
            name: input.name,
        })
    }
}
