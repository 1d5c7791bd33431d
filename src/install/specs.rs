//! Turning install specs (`name@^1`, `source/artifact`, a folder, an archive)
//! into packages ready to install, with dependencies resolved from registries
//! the same way whatever the spec named.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::Path;

use crate::catalog::Catalog;
use crate::config::Settings;
use crate::error::{Error, ErrorCode, Result};
use crate::install::freshness::registry_for;
use crate::install::plan::{Bytes, Member, Prepared};
use crate::packages::archive;
use crate::packages::build::{Selection, assemble, gather_from_source};
use crate::packages::lock::{LockedArtifact, Origin};
use crate::packages::manifest::{self, MANIFEST_FILE, Manifest, artifact_file_name};
use crate::packages::registry::Registry;
use crate::packages::registry::VersionEntry;
use crate::packages::resolve::{Candidate, YOUR_REQUEST, resolve_asked};
use crate::packages::validate::{pack_dir, validate_archive_bytes};
use crate::sources::{qualified_name, split_qualified};

/// Where specs are read from.
pub struct SpecEnv<'a> {
    /// The folder relative paths start from.
    pub cwd: &'a Path,
    /// The home's git cache folder (source artifacts are read from it).
    pub caches: &'a Path,
    /// Lock files of the cached repositories (see `sources::cache::lock`).
    pub locks: &'a Path,
    /// The settings (registries).
    pub settings: &'a Settings,
    /// Refuses a path the caller may not read (a machine front end's
    /// confinement); given the path and how the user wrote it.
    pub allow_path: &'a dyn Fn(&Path, &str) -> Result<()>,
    /// The folders a fetch may read a local repository's objects from (a
    /// machine front end's confinement); `None`: anywhere.
    pub local_within: Option<Vec<std::path::PathBuf>>,
    /// Qualified names of artifacts close to a name no package or artifact
    /// has, for its error's "did you mean" (none when they cannot be told).
    pub close_artifacts: &'a dyn Fn(&str) -> Vec<String>,
}

/// The registry each named package keeps coming from while that registry still
/// has it (the lock's, for installs and upgrades), so a package installed from
/// one registry is not replaced by another registry's package of the same name.
pub type KeptRegistries = BTreeMap<String, String>;

/// Turns install specs into packages ready to deploy (registry packages with
/// their dependencies resolved transitively; the dependencies of folders and
/// archives too). A registry package named in `kept` comes from the registry
/// given there while that registry still has it; others (and new
/// dependencies) come from the first registry holding them, the default first.
pub fn prepare_specs(
    env: &SpecEnv<'_>,
    catalog: &Catalog,
    specs: &[String],
    kept: &KeptRegistries,
) -> Result<Vec<Prepared>> {
    let settings = env.settings;
    let source_names = catalog.source_names()?;
    let mut prepared = Vec::new();
    let mut registry_requests: Vec<(String, String, String)> = Vec::new();
    // Explicit paths first, then registry packages, then package folders, then
    // source artifacts: a package's own folder next to you does not hide the
    // published package of the same name.
    for spec in specs {
        let path = env.cwd.join(spec);
        let is_folder = || path.join(MANIFEST_FILE).is_file();
        if spec.starts_with('.') || spec.starts_with('/') || spec.ends_with(".aam") {
            prepared.push(prepare_path(env, &path, spec)?);
            continue;
        }
        if let Some(rest) = spec.strip_prefix('@') {
            let (name, constraint) = split_version(rest);
            registry_requests.push((
                format!("@{name}"),
                constraint.unwrap_or("*").to_string(),
                YOUR_REQUEST.to_string(),
            ));
            continue;
        }
        if spec.contains('/') {
            if is_folder() {
                prepared.push(prepare_path(env, &path, spec)?);
                continue;
            }
            let Some((source, rest)) = split_qualified(spec, &source_names) else {
                let (message, hint) = match crate::sources::unknown_source(spec, &source_names) {
                    Some(source) => (
                        format!("`{spec}` names no source artifact: no source is named `{source}`"),
                        crate::sources::registered_sources_hint(&source_names),
                    ),
                    None => (
                        format!("`{spec}` names no source artifact"),
                        "qualified names are `<source>/<artifact>`; find them with `aam search`".to_string(),
                    ),
                };
                return Err(Error::new(ErrorCode::ArtifactNotFound, message).with_hint(hint));
            };
            match prepare_source_artifact(env, catalog, source, rest, spec) {
                Ok(artifact) => prepared.push(artifact),
                // `source/artifact@2.0`: a version asked of what has none.
                Err(e) if e.code() == ErrorCode::ArtifactNotFound => match split_version(rest) {
                    (name, Some(constraint)) if prepare_source_artifact(env, catalog, source, name, spec).is_ok() => {
                        return Err(unversioned(&format!("{source}/{name}"), constraint));
                    }
                    _ => return Err(e),
                },
                Err(e) => return Err(e),
            }
            continue;
        }
        let (name, constraint) = split_version(spec);
        let name = name.to_string();
        if !catalog.registries_with(&name)?.is_empty() {
            registry_requests.push((name, constraint.unwrap_or("*").to_string(), YOUR_REQUEST.to_string()));
            continue;
        }
        if is_folder() {
            prepared.push(prepare_path(env, &path, spec)?);
            continue;
        }
        let matches = catalog.artifacts_named(None, &name)?;
        match matches.as_slice() {
            [one] => {
                let spec = qualified_name(&one.source, &one.path);
                if let Some(constraint) = constraint {
                    return Err(unversioned(&spec, constraint));
                }
                prepared.push(prepare_source_artifact(env, catalog, &one.source, &one.path, &spec)?);
            }
            [] => {
                let hint = if source_names.contains(&name) {
                    format!(
                        "`{name}` is a source: install its artifacts as `{name}/<artifact>` (list them with `aam source scan {name}`), or all of them as one package made with `aam pkg create --from-source {name} --all`"
                    )
                } else {
                    let close = (env.close_artifacts)(&name);
                    if close.is_empty() {
                        "find one with `aam search`, or add the registry or source that has it".to_string()
                    } else {
                        let close: Vec<String> = close.iter().map(|c| format!("`{c}`")).collect();
                        format!("did you mean {}?", close.join(", "))
                    }
                };
                return Err(Error::new(
                    ErrorCode::PackageNotFound,
                    format!("no package or artifact named `{name}`"),
                )
                .with_hint(hint));
            }
            many => {
                let choices = crate::sources::qualified_choices(many);
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
    // A folder's or archive's dependencies come from registries, like a
    // registry package's (unless this command installs them by path too).
    let by_path: Vec<String> = prepared.iter().map(|p| p.manifest.name.clone()).collect();
    for package in &prepared {
        for (dependency, constraint) in &package.manifest.dependencies {
            if !by_path.contains(dependency) {
                registry_requests.push((
                    dependency.clone(),
                    constraint.clone(),
                    format!("`{}@{}`", package.manifest.name, package.manifest.version),
                ));
            }
        }
    }
    if !registry_requests.is_empty() {
        prepared.extend(prepare_registry(catalog, settings, kept, &registry_requests)?);
    }
    Ok(prepared)
}

/// A version asked of a source artifact, which has none: it is what its
/// source holds at the indexed commit.
fn unversioned(qualified: &str, constraint: &str) -> Error {
    Error::invalid_argument(format!(
        "`{qualified}` is an artifact of a source, which has no versions to match `@{}`",
        crate::error::quoted(constraint)
    ))
    .with_hint(format!(
        "install `{qualified}` without a version: it is what its source holds now (`aam source update` moves it along); versions are for registry packages"
    ))
}

/// `name@constraint`: the name and what follows its last `@` (the `@` of a
/// scope is not a separator); an install takes no constraint as `*`.
pub fn split_version(text: &str) -> (&str, Option<&str>) {
    match text.rfind('@').filter(|&i| i > 0) {
        Some(i) => (&text[..i], Some(&text[i + 1..])),
        None => (text, None),
    }
}

fn files_map(entries: Vec<(String, Vec<u8>, bool)>) -> BTreeMap<String, (Bytes, bool)> {
    entries.into_iter().map(|(p, b, x)| (p, (Bytes::from(b), x))).collect()
}

pub(super) fn prepare_path(env: &SpecEnv<'_>, path: &Path, spec: &str) -> Result<Prepared> {
    (env.allow_path)(path, spec)?;
    if !path.exists() {
        return Err(Error::new(
            ErrorCode::PackageNotFound,
            format!("no package folder or `.aam` archive at `{spec}`"),
        )
        .with_hint("check the path; package names and `source/artifact` names do not start with `.` or `/`"));
    }
    let (bytes, origin) = if path.is_dir() {
        (pack_dir(path)?.0, Origin::Local)
    } else {
        (read_archive(path, spec)?, Origin::Archive)
    };
    let manifest = validate_archive_bytes(&bytes)?;
    Ok(Prepared {
        files: files_map(archive::files(&bytes)?),
        origin,
        source_name: path.canonicalize().unwrap_or(path.to_path_buf()).display().to_string(),
        source_commit: None,
        source_url: None,
        checksum: blake3::hash(&bytes).to_hex().to_string(),
        requested: Some(spec.to_string()),
        artifacts: Vec::new(),
        members: members_of(&manifest),
        manifest,
        allowed_findings: Vec::new(),
        replaces_lost_commit: false,
    })
}

/// An archive's bytes, read only from a plain file (a link to one is
/// followed; a FIFO or device is refused without blocking) of at most
/// [`archive::MAX_ARCHIVE_BYTES`]: a lock entry can name any path.
fn read_archive(path: &Path, spec: &str) -> Result<Vec<u8>> {
    match crate::paths::read_bounded(path, archive::MAX_ARCHIVE_BYTES) {
        Ok(Some(bytes)) => Ok(bytes),
        Ok(None) => Err(Error::new(
            ErrorCode::PackageNotFound,
            format!("no package folder or `.aam` archive at `{spec}`"),
        )
        .with_hint("check the path")),
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => Err(Error::new(
            ErrorCode::ArchiveInvalid,
            format!("`{spec}` is not a package archive aam reads: {e}"),
        )
        .with_hint("name a `.aam` archive made by `aam pkg pack` (at most 64 MiB), or a package folder")),
        Err(e) => Err(Error::io("read", path, e)),
    }
}

fn members_of(manifest: &Manifest) -> Vec<Member> {
    manifest
        .artifacts
        .all()
        .map(|(kind, a)| Member {
            artifact_id: None,
            kind,
            name: a.name.clone(),
            path: a.path.clone(),
        })
        .collect()
}

fn prepare_source_artifact(
    env: &SpecEnv<'_>,
    catalog: &Catalog,
    source: &str,
    rest: &str,
    spec: &str,
) -> Result<Prepared> {
    let selection = Selection {
        artifacts: vec![rest.to_string()],
        ..Default::default()
    };
    let gathered = gather_from_source(catalog, env.caches, source, &selection)?;
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
    let source_record = catalog.source_named(source)?;
    let digests = catalog.live_artifacts_in(source_record.id, std::slice::from_ref(&chosen.source_path), &[])?;
    let artifacts = digests
        .into_iter()
        .filter(|a| a.path == chosen.source_path)
        .map(|a| LockedArtifact {
            kind: a.kind,
            path: a.path,
            digest: a.content_digest,
        })
        .collect();
    let commit = gathered.provenance.source_commit.clone().unwrap_or_default();
    source_package(gathered, source, &source_record.url, &commit, artifacts)
}

/// The package one source artifact makes (`gathered` holds exactly one),
/// the same wherever its files were read: its manifest names only the
/// repository and the commit, so a restore from the lock file on another
/// machine makes it again byte for byte.
pub(super) fn source_package(
    mut gathered: crate::packages::build::Gathered,
    source: &str,
    url: &str,
    commit: &str,
    artifacts: Vec<LockedArtifact>,
) -> Result<Prepared> {
    gathered.provenance = crate::packages::manifest::Provenance::remote_git_at(url, commit);
    let chosen = &gathered.chosen[0];
    let version = format!("0.0.0+{}", crate::sources::short_id(commit));
    let built = assemble(&gathered, &artifact_file_name(&chosen.name), &version, None, Vec::new())?;
    let manifest_text = manifest::to_yaml(&built.manifest);
    let mut files: BTreeMap<String, (Bytes, bool)> = built
        .files
        .into_iter()
        .map(|(path, (bytes, executable))| (path, (Bytes::from(bytes), executable)))
        .collect();
    files.insert(
        MANIFEST_FILE.to_string(),
        (Bytes::from(manifest_text.clone().into_bytes()), false),
    );
    Ok(Prepared {
        artifacts,
        members: vec![Member {
            artifact_id: chosen.artifact_id,
            kind: chosen.kind,
            name: chosen.name.clone(),
            path: chosen.source_path.clone(),
        }],
        manifest: built.manifest,
        files,
        origin: Origin::Source,
        source_name: source.to_string(),
        source_commit: Some(commit.to_string()),
        source_url: Some(url.to_string()),
        checksum: blake3::hash(manifest_text.as_bytes()).to_hex().to_string(),
        requested: Some(qualified_name(source, &chosen.source_path)),
        allowed_findings: Vec::new(),
        replaces_lost_commit: false,
    })
}

fn prepare_registry(
    catalog: &Catalog,
    settings: &Settings,
    kept: &KeptRegistries,
    requests: &[(String, String, String)],
) -> Result<Vec<Prepared>> {
    // A dependency comes from the registry of the package that depends on
    // it when that registry has it, never from whichever registry comes first
    // (a public registry's `base` stood in for a team registry's own, as in a
    // dependency-confusion attack). What is installed stays with its registry,
    // and what you ask for comes from the default one first.
    let by_dependents: RefCell<BTreeMap<String, String>> = RefCell::default();
    let registry_of = |name: &str| -> Result<Option<String>> {
        if let Some(registry) = kept.get(name)
            && catalog.registries_with(name)?.contains(registry)
        {
            return Ok(Some(registry.clone()));
        }
        if let Some(registry) = by_dependents.borrow().get(name) {
            return Ok(Some(registry.clone()));
        }
        registry_for(catalog, settings, name)
    };
    for (name, _, _) in requests {
        if let Some(registry) = registry_of(name)? {
            by_dependents.borrow_mut().insert(name.clone(), registry);
        }
    }
    // Each published version, and the one the `latest` dist-tag names.
    type Published = (Vec<(semver::Version, VersionEntry)>, Option<String>);
    let entries = |name: &str| -> Result<Published> {
        let Some(registry) = registry_of(name)? else {
            return Ok((Vec::new(), None));
        };
        let versions = catalog.registry_versions(&registry, name)?;
        // Each dependency name once, however many versions name it.
        let unplaced: std::collections::BTreeSet<&String> = versions
            .iter()
            .flat_map(|(_, entry)| entry.dependencies.keys())
            .filter(|dependency| !by_dependents.borrow().contains_key(*dependency))
            .collect();
        for dependency in unplaced {
            if catalog.registries_with(dependency)?.contains(&registry) {
                by_dependents.borrow_mut().insert(dependency.clone(), registry.clone());
            }
        }
        Ok((versions, catalog.registry_tag(&registry, name, "latest")?))
    };
    // A dist-tag (`kit@next`) names one version: asked for as exactly that
    // version (`=2.1.0-rc.1`, which the lock records). `latest` asks what no
    // constraint does (the version that tag names, which the resolver takes
    // first): recorded as `*`, so an upgrade follows the tag (it pinned the
    // version the tag named that day).
    let mut asked = Vec::with_capacity(requests.len());
    for (name, text, by) in requests {
        let Err(why) = manifest::parse_constraint(text) else {
            asked.push((name.clone(), text.clone(), by.clone()));
            continue;
        };
        if text == "latest" {
            asked.push((name.clone(), "*".to_string(), by.clone()));
            continue;
        }
        let Some(registry) = registry_of(name)? else {
            // Not published anywhere: the resolver says so.
            asked.push((name.clone(), "*".to_string(), by.clone()));
            continue;
        };
        match catalog.registry_tag(&registry, name, text)? {
            Some(version) => asked.push((name.clone(), format!("={version}"), by.clone())),
            None => {
                let tags: Vec<String> = catalog
                    .registry_tags(&registry, name)?
                    .into_iter()
                    .map(|(t, _)| t)
                    .collect();
                return Err(Error::invalid_argument(format!(
                    "`{name}@{text}` names no version, range or dist-tag of `{name}` ({why})"
                ))
                .with_hint(format!(
                    "write a version (`{name}@1.2.0`), a range (`{name}@^1`) or one of its dist-tags: {}",
                    tags.join(", ")
                )));
            }
        }
    }
    let resolved = resolve_asked(&asked, |name| {
        let (versions, latest) = entries(name)?;
        Ok(versions
            .into_iter()
            .map(|(version, e)| Candidate {
                tagged_latest: latest.as_deref() == Some(version.to_string().as_str()),
                version,
                dependencies: e.dependencies,
            })
            .collect())
    })?;
    let mut out = Vec::new();
    for (name, resolved) in resolved {
        let version = resolved.candidate.version.clone();
        let registry_name = registry_of(&name)?.unwrap_or_default();
        let setting = settings.registry(Some(&registry_name))?;
        let registry = Registry::configured(setting)?;
        let (_, entry) = entries(&name)?
            .0
            .into_iter()
            .find(|(v, _)| *v == version)
            .ok_or_else(|| Error::internal(format!("resolved `{name}@{version}` vanished")))?;
        let bytes = registry.archive(&entry)?;
        out.push(registry_package(
            &bytes,
            (&name, &version.to_string()),
            &registry_name,
            &entry,
            resolved.constraint,
        )?);
    }
    Ok(out)
}

/// The package a registry archive holds (its bytes already checked against
/// the checksum of `filed`, its index entry), which must be the `name` and
/// `version` the registry's index filed it under, with the dependencies the
/// index gave the resolver: an index can point any entry at any archive, and
/// say any dependencies.
pub(super) fn registry_package(
    bytes: &[u8],
    (name, version): (&str, &str),
    registry: &str,
    filed: &VersionEntry,
    requested: String,
) -> Result<Prepared> {
    let manifest = validate_archive_bytes(bytes)?;
    let hint =
        "the registry's index was changed by hand or is not one aam made; restore it, or publish the package again";
    if manifest.name != name || manifest.version != version {
        return Err(Error::new(
            ErrorCode::RegistryInvalid,
            format!(
                "registry `{registry}` files `{name}@{version}` under an archive of `{}@{}`",
                manifest.name, manifest.version
            ),
        )
        .with_hint(hint));
    }
    if manifest.dependencies != filed.dependencies {
        let shown = |deps: &std::collections::BTreeMap<String, String>| match deps.is_empty() {
            true => "none".to_string(),
            false => deps
                .iter()
                .map(|(n, c)| format!("{n} {c}"))
                .collect::<Vec<_>>()
                .join(", "),
        };
        return Err(Error::new(
            ErrorCode::RegistryInvalid,
            format!(
                "registry `{registry}` gives `{name}@{version}` the dependencies {}, its archive {}",
                shown(&filed.dependencies),
                shown(&manifest.dependencies)
            ),
        )
        .with_hint(hint));
    }
    Ok(Prepared {
        files: files_map(archive::files(bytes)?),
        origin: Origin::Registry,
        source_name: registry.to_string(),
        source_commit: None,
        source_url: None,
        checksum: filed.checksum.clone(),
        requested: Some(requested),
        artifacts: Vec::new(),
        members: members_of(&manifest),
        manifest,
        allowed_findings: Vec::new(),
        replaces_lost_commit: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A package folder `kit` 1.0.0 with one skill, under `dir`.
    fn package(dir: &Path) {
        crate::packages::sample_package(&dir.join("kit"), "pdf", &[]);
    }

    #[test]
    fn a_registry_archive_must_be_the_package_its_index_entry_names() {
        let dir = tempfile::tempdir().unwrap();
        package(dir.path());
        let (bytes, manifest, _) = crate::packages::validate::pack_dir(&dir.path().join("kit")).unwrap();
        let mut entry = VersionEntry {
            archive: "packages/kit/1.0.0/package.aam".into(),
            checksum: blake3::hash(&bytes).to_hex().to_string(),
            size: bytes.len() as u64,
            description: String::new(),
            artifact_types: Vec::new(),
            artifacts: manifest.artifacts.clone(),
            dependencies: manifest.dependencies.clone(),
            published_at: String::new(),
        };
        let filed = |name: &str, version: &str, entry: &VersionEntry| {
            registry_package(&bytes, (name, version), "reg", entry, "*".into())
        };
        assert_eq!(
            filed(&manifest.name, &manifest.version, &entry).unwrap().manifest.name,
            manifest.name
        );
        for (name, version) in [("other", manifest.version.as_str()), (manifest.name.as_str(), "9.9.9")] {
            let err = filed(name, version, &entry).err().unwrap();
            assert_eq!(err.code(), ErrorCode::RegistryInvalid, "{name}@{version}");
        }
        // Dependencies the index says and the archive does not (or the other
        // way round) would steer the resolver: refused too.
        entry.dependencies.insert("extra".into(), "^1".into());
        let err = filed(&manifest.name, &manifest.version, &entry).err().unwrap();
        assert_eq!(err.code(), ErrorCode::RegistryInvalid);
        assert!(
            err.message().contains("the dependencies extra ^1, its archive none"),
            "{}",
            err.message()
        );
    }

    fn prepare(dir: &Path, allow: &dyn Fn(&Path, &str) -> Result<()>, specs: &[&str]) -> Result<Vec<Prepared>> {
        let catalog = Catalog::open(&dir.join("catalog.db")).unwrap();
        let settings = Settings::default();
        let caches = dir.join("cache");
        let env = SpecEnv {
            cwd: dir,
            caches: &caches,
            locks: &dir.join("locks"),
            settings: &settings,
            allow_path: allow,
            local_within: None,
            close_artifacts: &|_| Vec::new(),
        };
        let specs: Vec<String> = specs.iter().map(|s| s.to_string()).collect();
        prepare_specs(&env, &catalog, &specs, &KeptRegistries::new())
    }

    #[test]
    fn versions_split_at_the_last_at_sign_but_not_a_scope() {
        assert_eq!(split_version("kit@^1"), ("kit", Some("^1")));
        assert_eq!(split_version("@team/kit@1.2"), ("@team/kit", Some("1.2")));
        assert_eq!(split_version("@team/kit"), ("@team/kit", None));
    }

    #[test]
    fn a_package_folder_is_packed_and_checked_like_an_archive() {
        let dir = tempfile::tempdir().unwrap();
        package(dir.path());
        let prepared = prepare(dir.path(), &|_, _| Ok(()), &["./kit"]).unwrap();
        assert_eq!(prepared.len(), 1);
        let kit = &prepared[0];
        assert_eq!((kit.manifest.name.as_str(), kit.origin), ("kit", Origin::Local));
        assert!(kit.files.contains_key("skills/pdf/SKILL.md"), "{:?}", kit.files.keys());
        assert_eq!(kit.requested.as_deref(), Some("./kit"));
    }

    #[test]
    fn a_path_the_front_end_may_not_read_is_refused_before_reading() {
        let dir = tempfile::tempdir().unwrap();
        package(dir.path());
        let refuse = |_: &Path, shown: &str| Err(Error::new(ErrorCode::Forbidden, format!("`{shown}` is outside")));
        let code = |r: Result<Vec<Prepared>>| r.err().map(|e| e.code());
        assert_eq!(
            code(prepare(dir.path(), &refuse, &["./kit"])),
            Some(ErrorCode::Forbidden)
        );
        let found = prepare(dir.path(), &|_, _| Ok(()), &["./nowhere"]);
        assert_eq!(code(found), Some(ErrorCode::PackageNotFound));
    }
}
