//! `aam_pkg_validate`: check a package folder or archive (see `packages::validate`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorCode, Result};
use crate::packages::manifest::Issue;
use crate::packages::validate::{validate_archive, validate_dir};
use crate::tools::{Context, Example, Expect, Risk, Tool};

/// Input of `aam_validate`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PkgValidateInput {
    /// A package folder, its `aam.yaml`, or a `.aam` archive (default: the current folder).
    #[serde(default)]
    pub path: Option<String>,
}

/// Output of `aam_validate`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PkgValidateOutput {
    /// Whether there are no errors.
    pub valid: bool,
    /// Name, when readable.
    pub package_name: Option<String>,
    /// Version, when readable.
    pub package_version: Option<String>,
    /// Every problem that makes it invalid, with its field.
    pub errors: Vec<Issue>,
    /// Problems worth fixing that do not make it invalid.
    pub warnings: Vec<Issue>,
    /// Artifacts listed.
    pub artifact_count: u64,
}

/// Checks a package and reports every problem at once.
pub struct PkgValidate;

impl Tool for PkgValidate {
    const NAME: &'static str = "aam_validate";
    const TITLE: &'static str = "Validate a package";
    const DESCRIPTION: &'static str = "Check a package folder, its aam.yaml or a .aam archive: every manifest field, that listed artifacts exist, and that file checksums match. Returns all errors and warnings at once, each with its field path; `valid` is false when there is any error. Next: fix and run again, then pack.";
    const RISK: Risk = Risk::Read;
    const IDEMPOTENT: bool = true;
    const ERRORS: &'static [ErrorCode] = &[ErrorCode::ManifestInvalid, ErrorCode::ArchiveInvalid];
    const CONSTRAINTS: &'static [&'static str] =
        &["paths must be inside the project or AAM_HOME when called by a machine front end"];
    const EXAMPLES: &'static [Example] = &[
        Example {
            title: "a package folder",
            input: r#"{"path": "review-kit"}"#,
            expect: Expect::Output(r#"{"valid": true, "package_name": "review-kit", "errors": []}"#),
        },
        Example {
            title: "a path that does not exist",
            input: r#"{"path": "nowhere"}"#,
            expect: Expect::Error(ErrorCode::InvalidArgument),
        },
    ];
    type Input = PkgValidateInput;
    type Output = PkgValidateOutput;

    fn run(ctx: &Context, input: PkgValidateInput) -> Result<PkgValidateOutput> {
        let path = ctx.path(input.path.as_deref().unwrap_or("."))?;
        if !path.exists() {
            return Err(Error::invalid_argument(format!("`{}` does not exist", path.display()))
                .with_hint("pass a package folder, its aam.yaml or a .aam archive"));
        }
        let (checked, extra_errors, extra_warnings) = if path.is_file() && path.extension().is_some_and(|e| e == "aam")
        {
            validate_archive(&std::fs::read(&path).map_err(|e| Error::io("read", &path, e))?)?
        } else {
            let dir = if path.is_file() {
                path.parent().unwrap_or(&path).to_path_buf()
            } else {
                path.clone()
            };
            validate_dir(&dir)?
        };
        let mut errors = checked.errors;
        errors.extend(extra_errors);
        let mut warnings = checked.warnings;
        warnings.extend(extra_warnings);
        Ok(PkgValidateOutput {
            valid: errors.is_empty(),
            package_name: checked.name,
            package_version: checked.version,
            errors,
            warnings,
            artifact_count: checked.artifact_count as u64,
        })
    }
}
