//! `aam_info`: one artifact in full, or the package a plain name means.
//!
//! A `source/artifact` form is an artifact; any other name is the package by
//! that name installed here or published ([`crate::install::package_info`]),
//! else an artifact.

use crate::tools::with_fresh_registries;
use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

use crate::audit::report::{AuditFinding, SeverityCounts, finding};
use crate::catalog::FindingFilter;
use crate::error::{ErrorCode, Result};
use crate::install::package_info::{self, PackageDetails};
use crate::paths::shell_word;
use crate::scan::{ArtifactKind, Platform};
use crate::search::{artifact_not_found, resolve_artifact};
use crate::tools::{Context, Example, Expect, Risk, Tool, qualified_name};

/// Characters of the main file shown as a preview.
const PREVIEW_CHARS: usize = 2000;

// ---------------------------------------------------------------- info

/// Input of `aam_info`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InfoInput {
    /// `source/name`, `source/path`, a name that only one source has, or a package name (installed here or published; it wins over an artifact of that name), optionally with `@` and a version, constraint or dist-tag to show (`kit@1.2.0`, `kit@^1`, `kit@latest`).
    pub name: String,
    /// Return the whole main file as `preview`, not just its beginning.
    #[serde(default)]
    pub full: bool,
}

/// One file of an artifact.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InfoFile {
    /// Repository path.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// blake3 of the bytes (hex).
    pub blake3: String,
}

/// Output of `aam_info`: an artifact, or the package a plain name means (then
/// it is what `aam_package_info` returns).
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum InfoOutput {
    /// An artifact (it has `qualified_name`).
    Artifact(Box<ArtifactInfo>),
    /// A package (it has `versions`).
    Package(Box<PackageDetails>),
}

impl JsonSchema for InfoOutput {
    fn schema_name() -> Cow<'static, str> {
        "InfoOutput".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "object",
            "description": "Output of `aam_info`: an artifact (with `qualified_name`), or the package a name without a source means (with `versions`, as `aam_package_info` returns it).",
            "oneOf": [
                generator.subschema_for::<ArtifactInfo>(),
                generator.subschema_for::<PackageDetails>(),
            ],
        })
    }
}

/// One artifact in full.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArtifactInfo {
    /// Display name.
    pub name: String,
    /// `source/name`.
    pub qualified_name: String,
    /// Artifact type.
    #[serde(rename = "type")]
    pub kind: ArtifactKind,
    /// Source name.
    pub source: String,
    /// Source URL.
    pub source_url: String,
    /// Commit the artifact was last changed at in the catalog.
    pub commit: Option<String>,
    /// Repository path.
    pub path: String,
    /// The file its name and text come from.
    pub main_file: String,
    /// One-line description.
    pub description: Option<String>,
    /// Platform its location implies.
    pub platform: Option<Platform>,
    /// A skill with vendor agent metadata.
    pub has_vendor_agent: bool,
    /// YAML frontmatter as JSON.
    pub frontmatter: Option<serde_json::Value>,
    /// Every file, with size and blake3.
    pub files: Vec<InfoFile>,
    /// The start of the main file.
    pub preview: String,
    /// Whether the preview is shorter than the file.
    pub preview_truncated: bool,
    /// Problems recorded when it was indexed.
    pub warnings: Vec<String>,
    /// Content-audit findings, counted by severity.
    pub finding_counts: SeverityCounts,
    /// The content-audit findings themselves (first 50; `aam_audit` lists all).
    pub findings: Vec<AuditFinding>,
    /// The command that installs it.
    pub install_command: String,
    /// The installed packages made from it, in this project and globally.
    pub installed_here: Vec<InstalledAs>,
}

/// An installed package made from the artifact.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InstalledAs {
    /// Package name in the lock file.
    pub package: String,
    /// Installed version.
    pub version: String,
    /// Where the lock file is: `project` or `global`.
    pub scope: InstallScope,
    /// Platforms it was deployed to.
    pub platforms: Vec<Platform>,
}

/// Which lock file records an install.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum InstallScope {
    /// The project's `.aam/aam-lock.yaml`.
    Project,
    /// The home folder's.
    Global,
}

/// Shows one artifact in full, or the package a name means.
pub struct Info;

impl Tool for Info {
    const NAME: &'static str = "aam_info";
    const TITLE: &'static str = "Show an artifact or a package";
    const DESCRIPTION: &'static str = "Show one artifact: type, source and commit, frontmatter, every file with size and blake3, a preview of its main file, warnings recorded when it was indexed, and the command that installs it. Accepts `source/name`, `source/path`, or a name only one source has. A name without a source that a package has (installed here or published) shows that package instead, as `aam_package_info` does (the output then has `versions` instead of `qualified_name`); `name@version` (or a constraint or dist-tag) shows that version's artifacts and dependencies. Next: install it, or `aam_search` for similar ones.";
    const RISK: Risk = Risk::Read;
    const IDEMPOTENT: bool = true;
    const ERRORS: &'static [ErrorCode] = &[
        ErrorCode::ArtifactNotFound,
        ErrorCode::ArtifactAmbiguous,
        ErrorCode::PackageNotFound,
        ErrorCode::SourceNotFound,
        ErrorCode::SourceNotIndexed,
        ErrorCode::LockInvalid,
        ErrorCode::UnsafePath,
    ];
    const EXAMPLES: &'static [Example] = &[
        Example {
            title: "a skill by qualified name",
            input: r#"{"name": "sample/code-review"}"#,
            expect: Expect::Output(
                r#"{"name": "code-review", "type": "skill", "source": "sample", "path": "skills/code-review"}"#,
            ),
        },
        Example {
            title: "a name no source has",
            input: r#"{"name": "sample/ghost"}"#,
            expect: Expect::Error(ErrorCode::ArtifactNotFound),
        },
        Example {
            title: "a package installed here",
            input: r#"{"name": "review-kit"}"#,
            expect: Expect::Output(r#"{"name": "review-kit", "installed_version": "1.0.0", "registry": "local"}"#),
        },
    ];
    type Input = InfoInput;
    type Output = InfoOutput;

    fn run(ctx: &Context, input: InfoInput) -> Result<InfoOutput> {
        if package_info::may_name_package(&input.name) {
            let roots = ctx.install_roots(false)?;
            let lock = roots.read_lock()?;
            let settings = ctx.home.load_settings()?;
            let catalog = with_fresh_registries(ctx, &settings)?;
            if let Some(package) = package_info::describe(&catalog, &settings, &roots, &lock, &input.name)? {
                return Ok(InfoOutput::Package(Box::new(package)));
            }
        }
        let name = input.name.clone();
        artifact(ctx, input)
            .map(|a| InfoOutput::Artifact(Box::new(a)))
            .map_err(|e| match versionless(&name) {
                Some(package) if e.code() == ErrorCode::ArtifactNotFound => package_info::package_not_found(package),
                _ => e,
            })
    }
}

/// The package name in `name@version` (`@scope/name@1.0` included), when
/// `name` is written so: such a name that no package has is no artifact either.
fn versionless(name: &str) -> Option<&str> {
    let (package, Some(version)) = crate::install::specs::split_version(name) else {
        return None;
    };
    let is_version = version
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_digit() || "^~=<>".contains(c));
    (is_version && !package.is_empty() && package != "@").then_some(package)
}

/// The artifact `input` names, in full.
fn artifact(ctx: &Context, input: InfoInput) -> Result<ArtifactInfo> {
    let catalog = ctx.catalog()?;
    let found = resolve_artifact(&catalog, &input.name, || ctx.search_index(), ctx.progress.as_ref())?;
    let detail = catalog
        .artifact_detail(found.id)?
        .ok_or_else(|| artifact_not_found(&input.name, Vec::new()))?;
    let rows = catalog.findings(&FindingFilter {
        artifact_ids: Some(vec![found.id]),
        ..Default::default()
    })?;
    let mut finding_counts = SeverityCounts::default();
    for row in &rows {
        finding_counts.add(row.severity);
    }
    let findings = rows.into_iter().take(50).map(finding).collect();
    let preview_end = match input.full {
        true => None,
        false => detail.body.char_indices().nth(PREVIEW_CHARS).map(|(i, _)| i),
    };
    // A name another artifact of the source shares does not name this one.
    // (A skill at the source's root has no path to name it by.)
    let qualified = match detail.path.is_empty() || catalog.sharing_a_name(&[found.id])?.is_empty() {
        true => qualified_name(&detail.source, &detail.name),
        false => qualified_name(&detail.source, &detail.path),
    };
    let mut installed_here = Vec::new();
    // The global lock is not looked at where a sandbox keeps calls out of the
    // home folder.
    let roots = [
        (InstallScope::Project, Some(ctx.install_roots(false)?)),
        (InstallScope::Global, ctx.install_roots(true).ok()),
    ];
    for (scope, roots) in roots {
        let Some(roots) = roots else { continue };
        let lock = roots.read_lock()?;
        installed_here.extend(
            lock.made_from(&detail.source, detail.kind, &detail.path)
                .map(|(package, entry)| InstalledAs {
                    package: package.to_string(),
                    version: entry.version.clone(),
                    scope,
                    platforms: entry.platforms.clone(),
                }),
        );
    }
    Ok(ArtifactInfo {
        installed_here,
        finding_counts,
        findings,
        install_command: format!("aam install {}", shell_word(&qualified)),
        qualified_name: qualified,
        preview: detail.body[..preview_end.unwrap_or(detail.body.len())].to_string(),
        preview_truncated: preview_end.is_some() || detail.truncated,
        warnings: detail
            .warnings_json
            .as_deref()
            .and_then(|w| serde_json::from_str(w).ok())
            .unwrap_or_default(),
        frontmatter: detail
            .frontmatter_json
            .as_deref()
            .and_then(|f| serde_json::from_str(f).ok()),
        files: detail
            .files
            .into_iter()
            .map(|(path, size, blake3)| InfoFile { path, size, blake3 })
            .collect(),
        name: detail.name,
        kind: detail.kind,
        source: detail.source,
        source_url: detail.source_url,
        commit: detail.commit,
        path: detail.path,
        main_file: detail.main_file,
        description: detail.description,
        platform: detail.platform,
        has_vendor_agent: detail.has_vendor_agent,
    })
}

#[cfg(test)]
mod tests {
    use super::versionless;

    #[test]
    fn a_versioned_package_name_is_told_apart() {
        assert_eq!(versionless("kit@1.0.0"), Some("kit"));
        assert_eq!(versionless("@team/kit@^2"), Some("@team/kit"));
        for name in ["kit", "@team/kit", "skills/a@b", "@1.0", "team/kit@latest"] {
            assert_eq!(versionless(name), None, "{name}");
        }
    }
}
