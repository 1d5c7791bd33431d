//! `aam_list`: the packages the lock file records.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::super::{Context, Example, Expect, Risk, Tool};
use super::roots;
use crate::error::{ErrorCode, Result};
use crate::packages::lock::Origin;
use crate::scan::Platform;

/// Input of `aam_list`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListInstalledInput {
    /// List the home-folder installs.
    #[serde(default)]
    pub global: bool,
}

/// One installed package.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListedPackage {
    /// Name.
    pub name: String,
    /// Version.
    pub version: String,
    /// Where it came from.
    pub source: Origin,
    /// Registry, source or path it came from.
    pub source_name: String,
    /// Platforms deployed to.
    pub platforms: Vec<Platform>,
    /// Its dependencies: name to constraint.
    pub dependencies: BTreeMap<String, String>,
    /// Whether another installed package depends on it.
    pub is_dependency: bool,
}

/// Output of `aam_list`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListInstalledOutput {
    /// The project (or home) root.
    pub root: String,
    /// Installed packages, by name.
    pub packages: Vec<ListedPackage>,
}

/// Lists installed packages.
pub struct ListInstalled;

impl Tool for ListInstalled {
    const NAME: &'static str = "aam_list";
    const TITLE: &'static str = "List installed packages";
    const DESCRIPTION: &'static str = "List the packages installed in the current project (or the home folder) from its lock file: version, where each came from, platforms and dependencies. Next: `aam_verify` or `aam_outdated`.";
    const RISK: Risk = Risk::Read;
    const IDEMPOTENT: bool = true;
    const ERRORS: &'static [ErrorCode] = &[ErrorCode::LockInvalid, ErrorCode::UnsafePath];
    const EXAMPLES: &'static [Example] = &[Example {
        title: "what the project has installed",
        input: r#"{}"#,
        expect: Expect::Output(
            r#"{"packages": [{"name": "review-kit", "version": "1.0.0", "source": "registry", "platforms": ["claude"]}]}"#,
        ),
    }];
    type Input = ListInstalledInput;
    type Output = ListInstalledOutput;

    fn run(ctx: &Context, input: ListInstalledInput) -> Result<ListInstalledOutput> {
        let roots = roots(ctx, input.global)?;
        let lock = roots.read_lock()?;
        let depended: BTreeSet<&String> = lock.packages.values().flat_map(|p| p.dependencies.keys()).collect();
        Ok(ListInstalledOutput {
            root: roots.root_text(),
            packages: lock
                .packages
                .iter()
                .map(|(name, p)| ListedPackage {
                    name: name.clone(),
                    version: p.version.clone(),
                    source: p.source,
                    source_name: p.source_name.clone(),
                    platforms: p.platforms.clone(),
                    dependencies: p.dependencies.clone(),
                    is_dependency: depended.contains(name),
                })
                .collect(),
        })
    }
}
