//! `aam_package_info`: one package, installed here and published (worked out
//! by [`crate::install::package_info`]).

use crate::tools::with_fresh_registries;
use schemars::JsonSchema;
use serde::Deserialize;

use super::super::{Context, Example, Expect, Risk, Tool};
use super::roots;
use crate::error::{ErrorCode, Result};
use crate::install::package_info::{self, PackageDetails as PackageInfoOutput, package_not_found};

/// Input of `aam_package_info`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PackageInfoInput {
    /// Package name, optionally with `@` and a version, constraint or dist-tag whose artifacts and dependencies to show (`kit@1.2.0`, `kit@^1`, `kit@latest`).
    pub name: String,
    /// Look at the home-folder installs.
    #[serde(default)]
    pub global: bool,
}

/// Shows one package: installed state and published versions.
pub struct PackageInfo;

impl Tool for PackageInfo {
    const NAME: &'static str = "aam_package_info";
    const TITLE: &'static str = "Show a package";
    const DESCRIPTION: &'static str = "Show a package: the version installed here (with its source and platforms) and what its registry publishes (versions, dist-tags, and the artifacts and dependencies of the version shown: the one asked for as `name@version`, else the installed one, else the latest). Next: `aam_install` or `aam_upgrade`.";
    const RISK: Risk = Risk::Read;
    const IDEMPOTENT: bool = true;
    const ERRORS: &'static [ErrorCode] = &[
        ErrorCode::PackageNotFound,
        ErrorCode::LockInvalid,
        ErrorCode::UnsafePath,
    ];
    const EXAMPLES: &'static [Example] = &[
        Example {
            title: "an installed registry package",
            input: r#"{"name": "review-kit"}"#,
            expect: Expect::Output(
                r#"{"name": "review-kit", "installed_version": "1.0.0", "versions": ["1.0.0", "1.1.0"], "artifacts": ["skill/code-review"]}"#,
            ),
        },
        Example {
            title: "a package nobody has",
            input: r#"{"name": "ghost"}"#,
            expect: Expect::Error(ErrorCode::PackageNotFound),
        },
    ];
    type Input = PackageInfoInput;
    type Output = PackageInfoOutput;

    fn run(ctx: &Context, input: PackageInfoInput) -> Result<PackageInfoOutput> {
        let roots = roots(ctx, input.global)?;
        let lock = roots.read_lock()?;
        let settings = ctx.home.load_settings()?;
        let catalog = with_fresh_registries(ctx, &settings)?;
        package_info::describe(&catalog, &settings, &roots, &lock, &input.name)?
            .ok_or_else(|| package_not_found(package_info::package_name(&input.name)))
    }
}
