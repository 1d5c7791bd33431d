//! Auditing what a project's agents read: every deployed file and section of
//! its installs, and files added to deployed skill folders, as they are on
//! disk now (the lock file's checksums come with the project, so they cannot
//! vouch for anything), read through `install::state` (checked keys, never
//! through a link) and run through the same rules as indexing.

use crate::audit::{FileInfo, Finding, SCAN_CAP, scan_file};
use crate::error::Result;
use crate::install::Roots;
use crate::install::keys::copy_dir;
use crate::install::state;
use crate::packages::lock::LockedPackage;
use crate::scan::ArtifactKind;

/// A finding in a file an install deployed.
#[derive(Debug, Clone)]
pub struct InstalledFinding {
    /// Artifact type.
    pub kind: ArtifactKind,
    /// Artifact name.
    pub artifact: String,
    /// Where it is deployed (`.claude/skills/pdf`, `CLAUDE.md#x instruction`).
    pub artifact_path: String,
    /// The file or section (a lock key).
    pub path: String,
    /// What the rule found.
    pub finding: Finding,
}

/// What agents read of one install, scanned as it is on disk now.
#[derive(Debug, Default)]
pub struct DeployedScan {
    /// Findings, in deployed files and sections and in files added to
    /// deployed skill folders.
    pub findings: Vec<InstalledFinding>,
    /// Deployed files that could not be scanned whole: links, folders,
    /// damaged sections, files over [`SCAN_CAP`], folders too large to walk.
    pub not_scanned: Vec<String>,
}

/// Scans every deployed file and section of `entry` (installed as `name`),
/// and every file added to its deployed skill folders, as they are now:
/// what agents read, whatever the lock file says (a change to the project can
/// edit it too). Which file is an artifact's main one comes from where it
/// lies, never from the lock's types; a key no deployment covers is scanned
/// as a main file. What cannot be scanned whole (a link, a folder, a damaged
/// section, a file over [`SCAN_CAP`], a skill folder too large to walk) is
/// listed instead. A project's lock may name files in the home folder (Codex
/// prompts): one is read only when an install here wrote the bytes the lock
/// records there (`written_here(key, digest)`), so a forged entry cannot
/// print a private file into a terminal or a CI log.
pub fn scan_deployed(
    roots: &Roots,
    name: &str,
    entry: &LockedPackage,
    written_here: impl Fn(&str, &str) -> bool,
) -> Result<DeployedScan> {
    let copy = format!("{}/", copy_dir(name));
    let mut keys: Vec<String> = entry
        .file_checksums
        .keys()
        .filter(|key| !key.starts_with(&copy))
        .cloned()
        .collect();
    let (untracked, complete) = state::untracked_walk(roots, name, entry)?;
    let mut out = DeployedScan::default();
    if !complete {
        out.not_scanned
            .push(format!("{name}: its folders hold too many files to walk"));
    }
    keys.extend(untracked.into_iter().filter(|key| !key.starts_with(&copy)));
    for key in keys {
        let digest = entry.file_checksums.get(&key).map_or("", String::as_str);
        if !roots.global && key.starts_with("~/") && !written_here(&key, digest) {
            out.not_scanned.push(format!(
                "{key} (in your home folder, and no install in this project wrote it)"
            ));
            continue;
        }
        let deployed = entry
            .deployed
            .iter()
            .find(|d| key == d.target || key.starts_with(&format!("{}/", d.target)));
        let Some((bytes, executable)) = state::current_contents(roots, &key)?.filter(|(b, _)| b.len() <= SCAN_CAP)
        else {
            // Gone (verify reports it), or nothing that can be scanned whole.
            if state::key_exists(roots, &key)? {
                out.not_scanned.push(key);
            }
            continue;
        };
        let main = deployed.is_none_or(|d| key == d.target) || key.ends_with("/SKILL.md");
        let info = FileInfo {
            path: &key,
            executable,
            main,
        };
        let found: Vec<Finding> = scan_file(info, &bytes);
        out.findings.extend(found.into_iter().map(|finding| InstalledFinding {
            kind: deployed.map_or(ArtifactKind::Skill, |d| d.kind),
            artifact: deployed.map_or_else(|| name.to_string(), |d| d.name.clone()),
            artifact_path: deployed.map_or_else(|| key.clone(), |d| d.target.clone()),
            path: key.clone(),
            finding,
        }));
    }
    Ok(out)
}
