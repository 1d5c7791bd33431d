//! The catalog's mirror of a project's installs: what one installed package
//! records there (written to the journal first, see [`super::journal`]), and
//! applying those records to the catalog once the files landed.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use super::Roots;
use super::journal::{InstallMirror, MirrorOp, MirrorOrigin};
use super::plan::Prepared;
use crate::catalog::{Catalog, InstallPlace, InstallRecord, NewPackage, PackageMember, PlaceKind};
use crate::error::Result;
use crate::packages::lock::{LockFile, LockedPackage, Origin};
use crate::sources::spec::SourceSpec;

/// What the catalog records of `prepared`, installed under `roots` as `entry`.
pub fn record_of(roots: &Roots, entry: &LockedPackage, prepared: &Prepared) -> MirrorOp {
    MirrorOp::Record(Box::new(InstallMirror {
        project_root: roots.root_text(),
        name: prepared.manifest.name.clone(),
        version: entry.version.clone(),
        description: prepared.manifest.description.clone(),
        manifest_json: serde_json::to_string(&prepared.manifest).unwrap_or_default(),
        origin: MirrorOrigin::from(prepared.origin),
        checksum: entry.checksum.clone(),
        members: prepared.members.clone(),
        platforms: entry.platforms.clone(),
        source_commit: entry.source_commit.clone(),
        source_url: match prepared.origin {
            Origin::Source => prepared.source_url.clone(),
            _ => None,
        },
        files: entry
            .file_checksums
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        found_in_place: Vec::new(),
        place: place_of(roots, entry, prepared),
    }))
}

/// The place outside the project `prepared` was read from, when the user
/// named it: the package folder or archive of an install whose lock entry
/// records the very path it was read from (a restore that followed a link
/// reads another, and one below the root is the project's own, which a pull
/// can turn into a link), or the repository of a local source. What lets a
/// later restore read there again (see [`super::restore`]).
pub fn place_of(roots: &Roots, entry: &LockedPackage, prepared: &Prepared) -> Option<InstallPlace> {
    let (path, kind) = match prepared.origin {
        Origin::Local | Origin::Archive => {
            let named = entry.source_name == prepared.source_name;
            if !named || roots.lies_below(Path::new(&entry.source_name)) {
                return None;
            }
            let kind = match prepared.origin {
                Origin::Local => PlaceKind::Folder,
                _ => PlaceKind::Archive,
            };
            (prepared.source_name.clone(), kind)
        }
        Origin::Source => (
            SourceSpec::recorded_local_path(prepared.source_url.as_deref()?)?,
            PlaceKind::Repository,
        ),
        Origin::Registry => return None,
    };
    Some(InstallPlace { path, kind })
}

/// Like [`record_of`], for an adoption: aam wrote only the package's copy,
/// the deployed files are the user's copies found in place. Recorded as aam's
/// writes, they would prove a hand-made file in the home folder aam's to
/// remove on any later lock's word.
pub fn adoption_of(roots: &Roots, entry: &LockedPackage, prepared: &Prepared) -> MirrorOp {
    let mut op = record_of(roots, entry, prepared);
    if let MirrorOp::Record(record) = &mut op {
        let copy = format!("{}/", super::keys::copy_dir(&record.name));
        record.found_in_place = record
            .files
            .iter()
            .map(|(key, _)| key.clone())
            .filter(|key| !key.starts_with(&copy))
            .collect();
    }
    op
}

/// What aam wrote on this machine at the keys of a lock file: each key's
/// digests, as the catalog records every install's files once they landed,
/// in any project, kept after the install goes (`written_files`). A lock
/// entry only claims; this shows a file is aam's to remove: aam wrote those
/// bytes at that path (in this project, a clone of it, or before a branch
/// switch brought an older lock back). Bytes alone are no proof: any package
/// can bring a copy of a user's file into the object store.
///
/// Files in the home folder can be shared: Codex reads prompts only from
/// `~/.codex/prompts`, so every project installing one writes the same file,
/// as a `-g` install does. Such a file is also known with the other installs
/// on this machine that record it ([`WrittenHere::shared_with`]).
#[derive(Debug, Default)]
pub struct WrittenHere {
    digests: HashMap<String, HashSet<String>>,
    shared: HashMap<String, Vec<String>>,
}

impl WrittenHere {
    /// What the catalog records aam wrote at each file key of `lock` (the lock
    /// of `roots`) and at every key in the home folder, and which other
    /// installs record the home folder's files.
    pub fn of(catalog: &Catalog, roots: &Roots, lock: &LockFile) -> Result<Self> {
        let mut digests: HashMap<String, HashSet<String>> = HashMap::new();
        for key in lock.packages.values().flat_map(|entry| entry.file_checksums.keys()) {
            if !digests.contains_key(key) {
                digests.insert(key.clone(), catalog.digests_written_at(key)?.into_iter().collect());
            }
        }
        // Project and `-g` locks alike name home-folder files `~/...`.
        for (key, digest) in catalog.home_files_written()? {
            digests.entry(key).or_default().insert(digest);
        }
        let mut shared: HashMap<String, Vec<String>> = HashMap::new();
        let home = roots.home.display().to_string();
        for (key, root, package) in catalog.home_files_installed_elsewhere(&roots.root_text())? {
            // An install whose project is gone holds nothing: it can never be uninstalled.
            if root != home && !Path::new(&root).is_dir() {
                continue;
            }
            let whose = match root == home {
                true => format!("`{package}` (installed with -g)"),
                false => format!("`{package}` in `{root}`"),
            };
            shared.entry(key).or_default().push(whose);
        }
        Ok(Self { digests, shared })
    }

    /// The digests of what aam wrote at `key` on this machine.
    pub fn digests_at(&self, key: &str) -> impl Iterator<Item = &String> {
        self.digests.get(key).into_iter().flatten()
    }

    /// Whether aam wrote the bytes of `digest` at `key` on this machine.
    pub fn wrote(&self, key: &str, digest: &str) -> bool {
        self.digests.get(key).is_some_and(|written| written.contains(digest))
    }

    /// Whether aam wrote other bytes at `key` on this machine, never those of
    /// `digest`: a file there was installed from another version than the
    /// one `digest` is of.
    pub fn wrote_only_others(&self, key: &str, digest: &str) -> bool {
        self.digests
            .get(key)
            .is_some_and(|written| !written.is_empty() && !written.contains(digest))
    }

    /// The other installs on this machine that record the home-folder file
    /// at `key` (`pkg` in `/project`), none for any other key.
    pub fn shared_with(&self, key: &str) -> &[String] {
        self.shared.get(key).map_or(&[], Vec::as_slice)
    }
}

/// Applies mirror operations to the catalog, in order.
pub fn apply(catalog: &mut Catalog, ops: &[MirrorOp]) -> Result<()> {
    for op in ops {
        match op {
            MirrorOp::Record(record) => record_install(catalog, record)?,
            MirrorOp::Remove { project_root, package } => catalog.remove_install(project_root, package)?,
        }
    }
    Ok(())
}

fn record_install(catalog: &mut Catalog, record: &InstallMirror) -> Result<()> {
    let members: Vec<PackageMember> = record
        .members
        .iter()
        .map(|m| PackageMember {
            artifact_id: m.artifact_id,
            project_root: None,
            kind: m.kind,
            name: &m.name,
            path: &m.path,
        })
        .collect();
    let platforms: Vec<String> = record.platforms.iter().map(|p| p.as_str().to_string()).collect();
    catalog.record_install(&InstallRecord {
        project_root: &record.project_root,
        package: NewPackage {
            name: &record.name,
            version: &record.version,
            description: Some(&record.description),
            manifest_json: &record.manifest_json,
            origin: record.origin.as_str(),
            provenance_json: None,
            archive_blake3: Some(&record.checksum),
        },
        members: &members,
        platforms: &platforms,
        source_commit: record.source_commit.as_deref(),
        source_url: record.source_url.as_deref(),
        files: &record.files,
        found_in_place: &record.found_in_place,
        place: record.place.as_ref(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Journals written before the type read the same: the catalog keeps
    /// `registry` or `source`, folders and archives counting as sources.
    #[test]
    fn folders_and_archives_are_mirrored_as_sources_under_the_old_names() {
        let cases = [
            (Origin::Registry, "registry"),
            (Origin::Source, "source"),
            (Origin::Local, "source"),
            (Origin::Archive, "source"),
        ];
        for (origin, name) in cases {
            let mirrored = MirrorOrigin::from(origin);
            assert_eq!(mirrored.as_str(), name);
            assert_eq!(serde_json::to_value(mirrored).unwrap(), name);
            assert_eq!(serde_json::from_value::<MirrorOrigin>(name.into()).unwrap(), mirrored);
        }
    }
}
