//! Auditing what is installed without a catalog record of its content: the
//! files of an installed package's copy (`.aam/packages/<name>/`), and the
//! deployed files and sections edited since install (what agents read now),
//! read through `install::state` (checked keys, never through a link) and run
//! through the same rules as indexing. Source installs whose artifacts the
//! catalog holds as installed are audited from the catalog instead.

use crate::audit::{FileInfo, Finding, scan_file};
use crate::error::Result;
use crate::install::Roots;
use crate::install::keys::copy_dir;
use crate::install::state::{self, FileState};
use crate::packages::lock::LockedPackage;
use crate::scan::ArtifactKind;

/// A finding in a file of an installed package's copy.
#[derive(Debug, Clone)]
pub struct InstalledFinding {
    /// Artifact type, from the package layout.
    pub kind: ArtifactKind,
    /// Artifact name inside the package.
    pub artifact: String,
    /// Artifact path inside the package (`skills/pdf`, `agents/x.md`).
    pub artifact_path: String,
    /// File path inside the package.
    pub path: String,
    /// What the rule found.
    pub finding: Finding,
}

/// Every finding in the files `entry` (installed as `name`) recorded for its copy.
pub fn scan_installed(roots: &Roots, name: &str, entry: &LockedPackage) -> Result<Vec<InstalledFinding>> {
    let prefix = format!("{}/", copy_dir(name));
    let mut out = Vec::new();
    for key in entry.file_checksums.keys() {
        let Some(relative) = key.strip_prefix(&prefix) else {
            continue;
        };
        let Some((kind, artifact, artifact_path)) = artifact_of(relative) else {
            continue;
        };
        let Some((bytes, executable)) = state::current_contents(roots, key)? else {
            continue;
        };
        let main = kind != ArtifactKind::Skill || relative == format!("{artifact_path}/SKILL.md");
        let info = FileInfo {
            path: relative,
            executable,
            main,
        };
        out.extend(scan_file(info, &bytes).into_iter().map(|finding| InstalledFinding {
            kind,
            artifact: artifact.clone(),
            artifact_path: artifact_path.clone(),
            path: relative.to_string(),
            finding,
        }));
    }
    Ok(out)
}

/// Every finding in the deployed files and sections of `entry` (installed as
/// `name`) that differ from what it recorded: edits made since install, which
/// no catalog record or package copy holds.
pub fn scan_edited_deployments(roots: &Roots, name: &str, entry: &LockedPackage) -> Result<Vec<InstalledFinding>> {
    let copy = format!("{}/", copy_dir(name));
    let mut out = Vec::new();
    for (key, digest) in &entry.file_checksums {
        if key.starts_with(&copy) || state::key_state(roots, key, digest)? != FileState::Modified {
            continue;
        }
        let Some(deployed) = entry
            .deployed
            .iter()
            .find(|d| *key == d.target || key.starts_with(&format!("{}/", d.target)))
        else {
            continue;
        };
        let Some((bytes, executable)) = state::current_contents(roots, key)? else {
            continue;
        };
        let main = deployed.kind != ArtifactKind::Skill || key.ends_with("/SKILL.md");
        let info = FileInfo {
            path: key,
            executable,
            main,
        };
        out.extend(scan_file(info, &bytes).into_iter().map(|finding| InstalledFinding {
            kind: deployed.kind,
            artifact: deployed.name.clone(),
            artifact_path: deployed.target.clone(),
            path: key.clone(),
            finding,
        }));
    }
    Ok(out)
}

/// The artifact a package file belongs to, by the package layout:
/// (type, name, artifact path). The manifest and other files belong to none.
fn artifact_of(relative: &str) -> Option<(ArtifactKind, String, String)> {
    let (top, rest) = relative.split_once('/')?;
    let kind = ArtifactKind::ALL.iter().copied().find(|k| k.plural() == top)?;
    match kind {
        ArtifactKind::Skill => {
            let name = rest.split('/').next().filter(|n| !n.is_empty())?;
            Some((kind, name.to_string(), format!("skills/{name}")))
        }
        _ => {
            let name = rest.strip_suffix(".md").filter(|n| !n.is_empty() && !n.contains('/'))?;
            Some((kind, name.to_string(), relative.to_string()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn package_files_belong_to_the_artifact_their_layout_names() {
        let skill = artifact_of("skills/pdf/scripts/run.sh").unwrap();
        assert_eq!(skill, (ArtifactKind::Skill, "pdf".into(), "skills/pdf".into()));
        let agent = artifact_of("agents/reviewer.md").unwrap();
        assert_eq!(
            agent,
            (ArtifactKind::Agent, "reviewer".into(), "agents/reviewer.md".into())
        );
        assert_eq!(artifact_of("aam.yaml"), None);
        assert_eq!(artifact_of("agents/deep/x.md"), None);
        assert_eq!(artifact_of("docs/readme.md"), None);
    }
}
