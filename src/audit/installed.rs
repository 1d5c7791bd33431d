//! Auditing what a project's agents read: every deployed file and section of
//! its installs, and files added to deployed skill folders, as they are on
//! disk now (the lock file's checksums come with the project, so they cannot
//! vouch for anything), read through `install::state` (checked keys, never
//! through a link) and run through the same rules as indexing.

use crate::audit::{FileInfo, Finding, scan_file};
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
    /// Deployed files that could not be read as plain text to scan: links,
    /// folders, damaged sections, files over 4 MiB.
    pub not_scanned: Vec<String>,
}

/// Scans every deployed file and section of `entry` (installed as `name`),
/// and every file added to its deployed skill folders, as they are now:
/// what agents read, whatever the lock file's checksums say (a change to the
/// project can edit both).
pub fn scan_deployed(roots: &Roots, name: &str, entry: &LockedPackage) -> Result<DeployedScan> {
    let copy = format!("{}/", copy_dir(name));
    let mut keys: Vec<String> = entry
        .file_checksums
        .keys()
        .filter(|key| !key.starts_with(&copy))
        .cloned()
        .collect();
    keys.extend(
        state::untracked(roots, name, entry)?
            .into_iter()
            .filter(|key| !key.starts_with(&copy)),
    );
    let mut out = DeployedScan::default();
    for key in keys {
        let Some(deployed) = entry
            .deployed
            .iter()
            .find(|d| key == d.target || key.starts_with(&format!("{}/", d.target)))
        else {
            continue;
        };
        if state::current_digest(roots, &key)?.is_none() {
            // Gone (verify reports it), or nothing aam can read as it is.
            if state::key_exists(roots, &key)? {
                out.not_scanned.push(key);
            }
            continue;
        }
        let Some((bytes, executable)) = state::current_contents(roots, &key)? else {
            out.not_scanned.push(key);
            continue;
        };
        let main = deployed.kind != ArtifactKind::Skill || key.ends_with("/SKILL.md");
        let info = FileInfo {
            path: &key,
            executable,
            main,
        };
        let found: Vec<Finding> = scan_file(info, &bytes);
        out.findings.extend(found.into_iter().map(|finding| InstalledFinding {
            kind: deployed.kind,
            artifact: deployed.name.clone(),
            artifact_path: deployed.target.clone(),
            path: key.clone(),
            finding,
        }));
    }
    Ok(out)
}
