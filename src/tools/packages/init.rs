//! `aam_pkg_init`: start a package folder with a manifest.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::DEFAULT_VERSION;
use super::create::invalid_manifest_field;
use crate::error::{Error, ErrorCode, Result};
use crate::packages::build::{check_manifest, folder_package_name};
use crate::packages::layout::package_path;
use crate::packages::manifest::{
    self, MANIFEST_FILE, Manifest, ManifestArtifact, ManifestArtifacts, artifact_file_name, check_package_name,
};
use crate::scan::ArtifactKind;
use crate::tools::{Context, Example, Expect, Risk, Tool};

/// Input of `aam_init_package`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PkgInitInput {
    /// Package name (`name` or `@scope/name`); default: the folder's name.
    #[serde(default)]
    pub name: Option<String>,
    /// Folder to create the package in; default: `./<name>` when a name is given, else the current folder.
    #[serde(default)]
    pub dir: Option<String>,
    /// Version (default `0.1.0`).
    #[serde(default)]
    pub version: Option<String>,
    /// Description (default: a placeholder to edit).
    #[serde(default)]
    pub description: Option<String>,
    /// Author.
    #[serde(default)]
    pub author: Option<String>,
    /// License (SPDX).
    #[serde(default)]
    pub license: Option<String>,
}

/// Output of `aam_init_package`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PkgInitOutput {
    /// The manifest written.
    pub manifest_path: String,
    /// Package name.
    pub package_name: String,
    /// Version.
    pub version: String,
    /// Files created, relative to the package folder.
    pub files: Vec<String>,
}

/// Scaffolds a new package with one example skill.
pub struct PkgInit;

impl Tool for PkgInit {
    const NAME: &'static str = "aam_init_package";
    const TITLE: &'static str = "Scaffold a package";
    const DESCRIPTION: &'static str = "Create a new package folder: an `aam.yaml` manifest and one example skill to edit. Fails if the folder already has an `aam.yaml` or the example skill's file. Next: add artifacts, then `aam_validate`, pack and publish.";
    const RISK: Risk = Risk::Write;
    const IDEMPOTENT: bool = false;
    const ERRORS: &'static [ErrorCode] = &[ErrorCode::ManifestInvalid, ErrorCode::Conflict, ErrorCode::UnsafePath];
    const CONSTRAINTS: &'static [&'static str] = &[
        "writes only new files: an existing `aam.yaml` or example skill is a conflict",
        "the folder is never inside AAM_HOME (but under `exports/`) or `.aam/`, no file lands in an agent's folder (a package made in `.claude` would put its skill in `.claude/skills`), and the skill is not written beyond a link",
    ];
    const EXAMPLES: &'static [Example] = &[
        Example {
            title: "scaffold a package",
            input: r#"{"name": "starter-kit"}"#,
            expect: Expect::Output(
                r#"{"package_name": "starter-kit", "files": ["aam.yaml", "skills/starter-kit/SKILL.md"]}"#,
            ),
        },
        Example {
            title: "a name that is not valid",
            input: r#"{"name": "Bad_Name"}"#,
            expect: Expect::Error(ErrorCode::ManifestInvalid),
        },
    ];
    type Input = PkgInitInput;
    type Output = PkgInitOutput;

    fn run(ctx: &Context, input: PkgInitInput) -> Result<PkgInitOutput> {
        let dir = match (&input.dir, &input.name) {
            (Some(dir), _) => ctx.output_path(dir)?,
            (None, Some(name)) => ctx.output_path(name.rsplit('/').next().unwrap_or(name))?,
            // `components` drops the `.`: the files show as `kit/aam.yaml`, not `kit/./aam.yaml`.
            (None, None) => ctx.output_path(".")?.components().collect(),
        };
        let name = match input.name {
            Some(name) => name,
            None => folder_package_name(&dir),
        };
        check_package_name(&name).map_err(invalid_manifest_field)?;
        let version = input.version.unwrap_or_else(|| DEFAULT_VERSION.to_string());
        crate::packages::manifest::published_version(&version).map_err(Error::invalid_argument)?;
        let manifest_path = dir.join(MANIFEST_FILE);
        let skill = artifact_file_name(name.rsplit('/').next().unwrap_or(&name));
        let skill_path = package_path(ArtifactKind::Skill, &skill);
        let skill_file = format!("{skill_path}/SKILL.md");
        let skill_text = format!(
            "---\nname: {skill}\ndescription: {}\n---\n\n# {skill}\n\nWrite the instructions here.\n",
            crate::packages::manifest::PLACEHOLDER_SKILL_DESCRIPTION
        );
        // The example skill exactly as this writes it, with no manifest: an
        // init killed between its two writes, which this one finishes.
        let skill_written = !manifest_path.exists()
            && crate::paths::read_plain(&dir.join(&skill_file), skill_text.len() as u64)
                .ok()
                .flatten()
                .is_some_and(|bytes| bytes == skill_text.as_bytes());
        // Nothing of the user's is replaced, and nothing is written through a
        // link: each file is new, in the folder it is shown in.
        for path in [&manifest_path, &dir.join(&skill_file)] {
            let finished_here = skill_written && *path == dir.join(&skill_file);
            if !finished_here && std::fs::symlink_metadata(path).is_ok() {
                return Err(
                    Error::new(ErrorCode::Conflict, format!("`{}` already exists", path.display()))
                        .with_hint("edit it, or pass another folder"),
                );
            }
            ctx.check_path(path, &path.display().to_string())?;
        }
        ctx.refuse_managed_files(&dir, [MANIFEST_FILE, skill_file.as_str()])?;
        let real_dir = crate::paths::resolve_links(&dir);
        if real_dir.as_ref().map(|d| d.join(&skill_file)) != crate::paths::resolve_links(&dir.join(&skill_file)) {
            return Err(Error::new(
                ErrorCode::UnsafePath,
                format!("`{}` lies beyond a link", dir.join(&skill_path).display()),
            )
            .with_hint("remove the link, or pass another folder"));
        }
        let manifest = Manifest {
            name: name.clone(),
            version: version.clone(),
            description: input
                .description
                .unwrap_or_else(|| crate::packages::manifest::PLACEHOLDER_DESCRIPTION.to_string()),
            author: input.author,
            license: input.license,
            repository: None,
            homepage: None,
            keywords: Vec::new(),
            artifacts: ManifestArtifacts {
                skills: vec![ManifestArtifact {
                    name: skill.clone(),
                    path: skill_path.clone(),
                    description: Some("An example skill to edit or replace".to_string()),
                }],
                ..Default::default()
            },
            dependencies: BTreeMap::new(),
            platforms: Vec::new(),
            provenance: None,
            file_checksums: None,
        };
        check_manifest(&manifest)?;
        if !skill_written {
            crate::atomic::write_file(&dir.join(&skill_file), skill_text.as_bytes())?;
        }
        crate::atomic::write_file(&manifest_path, manifest::to_yaml(&manifest).as_bytes())?;
        Ok(PkgInitOutput {
            manifest_path: manifest_path.display().to_string(),
            package_name: name,
            version,
            files: vec![MANIFEST_FILE.to_string(), skill_file],
        })
    }
}
