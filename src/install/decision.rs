//! What one install does with each package it prepared: add it (new, or
//! replacing the installed version, edits merged or replaced as asked) or leave
//! it as it is (already installed, or kept for its edits, or depending on a
//! package kept for its edits).
//!
//! Decisions are made before anything is planned for real: a merge is worked
//! out on a scratch [`Plan`], and nothing here writes.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::merge::{self, FileConflict, Resolution};
use super::plan::{Plan, Prepared};
use super::state::{self, FileState};
use crate::error::Result;
use crate::packages::lock::LockedPackage;
use crate::packages::manifest::Manifest;
use crate::packages::store::ObjectStore;
use crate::scan::Platform;

/// What to do with files and sections edited since install when a package is
/// replaced (upgraded, or installed again).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OnEdited {
    /// Leave the package as it is and report the edited files.
    #[default]
    Skip,
    /// Copy the edited files to `$AAM_HOME/backups/<pkg>--<timestamp>/`, then replace them.
    Backup,
    /// Replace them.
    Force,
    /// Merge each edit with the new version (three-way); on a conflict, leave the package as it is and report it.
    Merge,
    /// Merge, writing overlapping changes with conflict markers.
    #[serde(rename = "merge_markers")]
    MergeMarkers,
}

impl OnEdited {
    /// Whether edits are merged with the new version.
    pub fn merges(self) -> bool {
        matches!(self, Self::Merge | Self::MergeMarkers)
    }

    /// What `force` and `backup` flags ask for (`force` wins; neither: skip).
    pub fn from_flags(force: bool, backup: bool) -> Self {
        match (force, backup) {
            (true, _) => Self::Force,
            (false, true) => Self::Backup,
            (false, false) => Self::Skip,
        }
    }
}

/// Why a package was left as it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    /// The same version is installed and every file is as installed.
    AlreadyInstalled,
    /// Files or sections were edited since install (pass `backup` or `force`).
    EditedFiles,
    /// Edits overlap changes of the new version (see `conflicts`).
    MergeConflicts,
    /// A restore found every file and section it records, some edited since
    /// install: they stay as they are (not a failure: nothing was missing).
    EditsKept,
    /// A restore found files edited since aam installed another version of
    /// them here than the lock file records (a teammate's upgrade pulled):
    /// they stay as they are, without that version's changes.
    EditsOnAnotherVersion,
}

impl SkipReason {
    /// Whether the package was left alone to keep local edits, not at the
    /// version asked for.
    pub fn kept_edits(self) -> bool {
        matches!(
            self,
            Self::EditedFiles | Self::MergeConflicts | Self::EditsOnAnotherVersion
        )
    }
}

/// A package left as it was.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SkippedPackage {
    /// Name.
    pub name: String,
    /// Version already there.
    pub version: String,
    /// Version it would have become.
    pub wanted_version: String,
    /// Why.
    pub reason: SkipReason,
    /// The edited files and sections that stopped it.
    pub modified_files: Vec<String>,
    /// The edits that did not merge, per file, with both sides.
    pub conflicts: Vec<FileConflict>,
}

impl SkippedPackage {
    /// `package` left at the installed `existing` version.
    pub fn new(existing: &LockedPackage, package: &Manifest, reason: SkipReason, modified: Vec<String>) -> Self {
        Self {
            name: package.name.clone(),
            version: existing.version.clone(),
            wanted_version: package.version.clone(),
            reason,
            modified_files: modified,
            conflicts: Vec::new(),
        }
    }
}

/// What one command does with one prepared package.
#[derive(Debug)]
pub enum Decision {
    /// Plan it.
    Add {
        /// Platforms to deploy to.
        platforms: Vec<Platform>,
        /// The installed version it replaces.
        existing: Option<Box<LockedPackage>>,
        /// Edited files and sections it replaces (saved first with `backup`).
        modified: Vec<String>,
        /// Edits merged with the new version, written over its files.
        merged: Resolution,
    },
    /// Leave it as it is.
    Skip(SkippedPackage),
}

/// The platforms a package deploys to: none with `no_deploy`, else the ones
/// asked for, else the ones the installed version uses, else `default` (asked
/// for only when needed).
pub fn platforms_for(
    no_deploy: bool,
    asked: &[Platform],
    existing: Option<&LockedPackage>,
    default: impl FnOnce() -> Result<Vec<Platform>>,
) -> Result<Vec<Platform>> {
    match existing {
        _ if no_deploy => Ok(Vec::new()),
        _ if !asked.is_empty() => Ok(asked.to_vec()),
        Some(existing) => Ok(existing.platforms.clone()),
        None => default(),
    }
}

/// Decides what to do with `package` against its installed version
/// (`existing`): skip it when it is installed as it would be, or when its
/// edits are to be kept (or do not merge); otherwise add it. `force` replaces
/// even an identical install.
pub fn decide(
    plan: &Plan<'_>,
    store: &ObjectStore,
    existing: Option<&LockedPackage>,
    package: &Prepared,
    platforms: Vec<Platform>,
    force: bool,
    on_edited: OnEdited,
) -> Result<Decision> {
    let Some(existing) = existing else {
        return Ok(Decision::Add {
            platforms,
            existing: None,
            modified: Vec::new(),
            merged: Resolution::default(),
        });
    };
    let roots = plan.roots();
    let status = state::file_status(roots, existing)?;
    let modified = state::edited_keys(roots, &status, |key, digest| plan.written_here(key, digest))?;
    let manifest = &package.manifest;
    let same_version = existing.version == manifest.version && existing.checksum == package.checksum;
    let same = !force
        && (same_version || same_source_content(existing, package))
        && same_platforms(&existing.platforms, &platforms)
        && super::plan::deployed_as_the_table_says(existing, manifest, &platforms, roots)
        && writes_what_is_recorded(plan, existing, package, &platforms, same_version);
    // What is installed is what was asked for: left as it is, lock entry included.
    let kept = |reason, modified| {
        Decision::Skip(SkippedPackage {
            wanted_version: existing.version.clone(),
            ..SkippedPackage::new(existing, manifest, reason, modified)
        })
    };
    if same && status.values().all(|s| *s == FileState::Ok) {
        return Ok(kept(SkipReason::AlreadyInstalled, Vec::new()));
    }
    // Edited, nothing missing or out of date: nothing new to bring in over the
    // edits (a file holding what aam wrote for another version is no edit).
    let only_edited = status
        .iter()
        .all(|(key, s)| *s == FileState::Ok || *s == FileState::Modified && modified.contains(key));
    if same && only_edited && !modified.is_empty() && (on_edited == OnEdited::Skip || on_edited.merges()) {
        return Ok(kept(SkipReason::EditsKept, modified));
    }
    if !modified.is_empty() && on_edited == OnEdited::Skip {
        let skipped = SkippedPackage::new(existing, manifest, SkipReason::EditedFiles, modified);
        return Ok(Decision::Skip(skipped));
    }
    if !modified.is_empty() && on_edited.merges() {
        // What the new version writes, worked out on a scratch plan.
        let mut preview = plan.scratch(force);
        preview.add(package, &platforms)?;
        let upstream = |key: &str| preview.planned(key);
        let markers = on_edited == OnEdited::MergeMarkers;
        let merged = merge::resolve(roots, store, existing, &modified, upstream, markers)?;
        if !merged.conflicts.is_empty() {
            return Ok(Decision::Skip(SkippedPackage {
                conflicts: merged.conflicts,
                ..SkippedPackage::new(existing, manifest, SkipReason::MergeConflicts, modified)
            }));
        }
        return Ok(Decision::Add {
            platforms,
            existing: Some(Box::new(existing.clone())),
            modified: Vec::new(),
            merged,
        });
    }
    Ok(Decision::Add {
        platforms,
        existing: Some(Box::new(existing.clone())),
        modified,
        merged: Resolution::default(),
    })
}

/// Turns `Add` into `Skip` for every package that depends (directly or not)
/// on one kept for its edits: it would otherwise run against the old version.
/// `packages[i]` is the manifest `decisions[i]` was made for.
pub fn keep_dependents_of_kept(packages: &[&Manifest], decisions: &mut [Decision]) {
    loop {
        let kept: BTreeMap<String, Vec<String>> = decisions
            .iter()
            .filter_map(|d| match d {
                Decision::Skip(s) if s.reason.kept_edits() => Some((s.name.clone(), s.modified_files.clone())),
                _ => None,
            })
            .collect();
        let mut changed = false;
        for (package, decision) in packages.iter().zip(decisions.iter_mut()) {
            let Decision::Add { existing, .. } = decision else {
                continue;
            };
            let Some(files) = package.dependencies.keys().find_map(|d| kept.get(d)) else {
                continue;
            };
            *decision = Decision::Skip(SkippedPackage {
                name: package.name.clone(),
                version: existing.as_ref().map(|e| e.version.clone()).unwrap_or_default(),
                wanted_version: package.version.clone(),
                reason: SkipReason::EditedFiles,
                modified_files: files.clone(),
                conflicts: Vec::new(),
            });
            changed = true;
        }
        if !changed {
            return;
        }
    }
}

/// Whether installing `package` would write at exactly the keys `existing`
/// records, the same bytes (the package copy's `aam.yaml` aside, which names
/// the commit, when only the content is the same): a lock entry is a claim, and
/// one recording less than the package writes (a forged entry leaving out the
/// deployed files, so a file put there stays) is no install of it. What is on
/// disk is not judged here (the preview takes it as `--force` would): when the
/// preview cannot be made at all (a shared file aam cannot edit, such as a
/// `CLAUDE.md` that is not UTF-8), the same version counts as before.
fn writes_what_is_recorded(
    plan: &Plan<'_>,
    existing: &LockedPackage,
    package: &Prepared,
    platforms: &[Platform],
    same_version: bool,
) -> bool {
    let planned = plan.scratch(true).add(package, platforms);
    let Ok(planned) = planned else {
        return same_version;
    };
    let manifest_key = format!(
        "{}/{}",
        super::keys::copy_dir(&package.manifest.name),
        crate::packages::manifest::MANIFEST_FILE
    );
    let compared = |checksums: &BTreeMap<String, String>| -> BTreeMap<String, String> {
        checksums
            .iter()
            .filter(|(key, _)| same_version || **key != manifest_key)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    let (recorded, planned) = (compared(&existing.file_checksums), compared(&planned.file_checksums));
    recorded == planned && (same_version || existing.file_checksums.contains_key(&manifest_key))
}

/// Whether `package`, taken from a source, holds the very artifacts `existing`
/// was installed from (same repository, paths and content digests), read at
/// another commit: a commit that changed nothing of it makes no new version
/// to install, as `aam outdated` says.
fn same_source_content(existing: &LockedPackage, package: &Prepared) -> bool {
    use crate::packages::lock::Origin;
    !package.replaces_lost_commit
        && existing.source == Origin::Source
        && package.origin == Origin::Source
        && existing.source_url.is_some()
        && existing.source_url == package.source_url
        && !existing.artifacts.is_empty()
        && existing.artifacts == package.artifacts
}

/// Whether two platform lists name the same platforms (order and repeats aside).
pub fn same_platforms(a: &[Platform], b: &[Platform]) -> bool {
    let sorted = |platforms: &[Platform]| {
        let mut out = platforms.to_vec();
        out.sort_by_key(|p| p.as_str());
        out.dedup();
        out
    };
    sorted(a) == sorted(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(name: &str, dependencies: &[&str]) -> Manifest {
        serde_json::from_value(serde_json::json!({
            "name": name,
            "version": "2.0.0",
            "description": "d",
            "artifacts": {},
            "dependencies": dependencies.iter().map(|d| (d.to_string(), "*")).collect::<BTreeMap<_, _>>(),
        }))
        .unwrap()
    }

    fn add() -> Decision {
        Decision::Add {
            platforms: Vec::new(),
            existing: None,
            modified: Vec::new(),
            merged: Resolution::default(),
        }
    }

    fn skip(name: &str, reason: SkipReason) -> Decision {
        Decision::Skip(SkippedPackage {
            name: name.to_string(),
            version: "1.0.0".to_string(),
            wanted_version: "2.0.0".to_string(),
            reason,
            modified_files: vec![format!("{name}.md")],
            conflicts: Vec::new(),
        })
    }

    fn skipped(decision: &Decision) -> Option<(&str, SkipReason, &[String])> {
        match decision {
            Decision::Skip(s) => Some((s.name.as_str(), s.reason, s.modified_files.as_slice())),
            Decision::Add { .. } => None,
        }
    }

    #[test]
    fn dependents_of_a_package_kept_for_its_edits_are_kept_too() {
        // c depends on b, b on a; a is kept for its edits; d depends on nothing kept.
        let manifests = [
            manifest("c", &["b"]),
            manifest("b", &["a"]),
            manifest("a", &[]),
            manifest("d", &["e"]),
            manifest("e", &[]),
        ];
        let refs: Vec<&Manifest> = manifests.iter().collect();
        let mut decisions = vec![add(), add(), skip("a", SkipReason::MergeConflicts), add(), add()];
        keep_dependents_of_kept(&refs, &mut decisions);
        let a_files = ["a.md".to_string()];
        assert_eq!(
            skipped(&decisions[0]),
            Some(("c", SkipReason::EditedFiles, &a_files[..]))
        );
        assert_eq!(
            skipped(&decisions[1]),
            Some(("b", SkipReason::EditedFiles, &a_files[..]))
        );
        assert!(skipped(&decisions[3]).is_none());
        assert!(skipped(&decisions[4]).is_none());
    }

    #[test]
    fn a_package_already_installed_keeps_no_dependent() {
        let manifests = [manifest("b", &["a"]), manifest("a", &[])];
        let refs: Vec<&Manifest> = manifests.iter().collect();
        let mut decisions = vec![add(), skip("a", SkipReason::AlreadyInstalled)];
        keep_dependents_of_kept(&refs, &mut decisions);
        assert!(skipped(&decisions[0]).is_none());
    }

    #[test]
    fn platform_lists_compare_as_sets() {
        let (claude, cursor) = (Platform::parse("claude").unwrap(), Platform::parse("cursor").unwrap());
        assert!(same_platforms(&[claude, cursor], &[cursor, claude, claude]));
        assert!(!same_platforms(&[claude], &[claude, cursor]));
        assert!(same_platforms(&[], &[]));
    }

    #[test]
    fn platforms_come_from_the_request_then_the_install_then_the_default() {
        let claude = Platform::parse("claude").unwrap();
        let cursor = Platform::parse("cursor").unwrap();
        let existing: LockedPackage = serde_json::from_value(serde_json::json!({
            "version": "1.0.0", "source": "registry", "source_name": "main", "checksum": "c",
            "platforms": ["cursor"]
        }))
        .unwrap();
        let unused = || -> Result<Vec<Platform>> { panic!("the default is not needed") };
        assert!(
            platforms_for(true, &[claude], Some(&existing), unused)
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            platforms_for(false, &[claude], Some(&existing), unused).unwrap(),
            [claude]
        );
        assert_eq!(platforms_for(false, &[], Some(&existing), unused).unwrap(), [cursor]);
        assert_eq!(platforms_for(false, &[], None, || Ok(vec![claude])).unwrap(), [claude]);
    }

    #[test]
    fn force_wins_over_backup() {
        assert_eq!(OnEdited::from_flags(true, true), OnEdited::Force);
        assert_eq!(OnEdited::from_flags(false, true), OnEdited::Backup);
        assert_eq!(OnEdited::from_flags(false, false), OnEdited::Skip);
        assert!(OnEdited::MergeMarkers.merges() && !OnEdited::Backup.merges());
    }
}
