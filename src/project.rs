//! The user's project: its root folder and its own artifacts, detected on the fly
//! from the working tree with the same rules as sources.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::packages::manifest::MANIFEST_FILE;
use crate::scan::{self, ArtifactKind};

/// Folders of a project never searched for its own artifacts: aam's own state
/// (installed package copies live there) besides the usual dependency folders, and
/// package folders (those holding an `aam.yaml`).
const PROJECT_IGNORED: [&str; 1] = [".aam"];

/// An artifact in the project's working tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectArtifact {
    /// Kind.
    pub kind: ArtifactKind,
    /// Display name.
    pub name: String,
    /// Path relative to the project root, `/`-separated.
    pub path: String,
    /// One-line description.
    pub description: Option<String>,
    /// A skill with vendor agent metadata.
    pub has_vendor_agent: bool,
    /// The file its name and text come from, relative to the project root.
    pub main_file: String,
    /// Every file that makes it up, relative to the project root.
    pub files: Vec<String>,
}

/// The project containing `cwd`: the nearest folder with a `.git`, else `cwd`.
pub fn root(cwd: &Path) -> PathBuf {
    cwd.ancestors()
        .find(|dir| dir.join(".git").exists())
        .unwrap_or(cwd)
        .to_path_buf()
}

/// Every artifact in the project at `root`, by kind then path. Honors
/// `.gitignore`; never follows symlinks.
pub fn artifacts(root: &Path) -> Result<Vec<ProjectArtifact>> {
    let mut files: Vec<(String, PathBuf)> = Vec::new();
    let walker = ignore::WalkBuilder::new(root)
        .hidden(false)
        .follow_links(false)
        .require_git(false)
        .filter_entry(|entry| {
            let name = entry.file_name().to_string_lossy();
            let ignored = scan::IGNORED_DIRS.contains(&name.as_ref()) || PROJECT_IGNORED.contains(&name.as_ref());
            // A package made from the project holds copies of its artifacts, not new ones.
            let package = entry.depth() > 0
                && entry.file_type().is_some_and(|t| t.is_dir())
                && entry.path().join(MANIFEST_FILE).is_file();
            !(ignored || package)
        })
        .build();
    for entry in walker {
        let entry = entry.map_err(|e| Error::invalid_argument(format!("cannot read the project: {e}")))?;
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Ok(relative) = entry.path().strip_prefix(root) else {
            continue;
        };
        let Some(relative) = relative.to_str() else {
            continue;
        };
        files.push((relative.replace('\\', "/"), entry.path().to_path_buf()));
    }
    files.sort();
    let paths: Vec<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
    let root_name = root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut out = Vec::new();
    for found in scan::detect(&paths, &BTreeMap::new(), &root_name) {
        let main = root.join(&found.main_file);
        let bytes = std::fs::read(&main).map_err(|e| Error::io("read", &main, e))?;
        let analysis = scan::analyze(&found, Some(&bytes));
        out.push(ProjectArtifact {
            kind: found.kind,
            name: analysis.name,
            description: analysis.description,
            has_vendor_agent: found.has_vendor_agent,
            files: found.files.iter().map(|&i| paths[i].to_string()).collect(),
            main_file: found.main_file,
            path: found.path,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_project_artifacts_and_skips_aam_state() {
        let dir = tempfile::tempdir().unwrap();
        let write = |rel: &str, text: &str| {
            let path = dir.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write(".cursor/rules/style.mdc", "---\ndescription: Style\n---\n");
        write(".claude/agents/helper.md", "---\nname: helper\n---\n");
        write("CLAUDE.md", "# Project notes\n");
        write(".aam/packages/x/skills/copied/SKILL.md", "# copied\n");
        write("my-package/aam.yaml", "name: my-package\n");
        write("my-package/agents/copy.md", "# a copy\n");
        write("node_modules/p/agents/a.md", "# dep\n");
        write("ignored/agents/b.md", "# ignored\n");
        write(".gitignore", "ignored/\n");
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        let found: Vec<String> = artifacts(dir.path())
            .unwrap()
            .into_iter()
            .map(|a| format!("{} {} {}", a.kind.as_str(), a.path, a.name))
            .collect();
        assert_eq!(
            found,
            [
                "agent .claude/agents/helper.md helper",
                "instruction .cursor/rules/style.mdc style",
                "instruction CLAUDE.md claude-instructions"
            ]
        );
        let nested = dir.path().join("src/deep");
        std::fs::create_dir_all(&nested).unwrap();
        assert_eq!(root(&nested), dir.path());
    }
}
