//! Registry tools: init, add, list and remove local package registries.
//!
//! Registries are configured in the settings file; their packages are mirrored
//! into the catalog (and from there into the search index) whenever a registry
//! is added or a package is published to it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Context, Example, Expect, Risk, Tool, indexed_write, mirror_registry, with_fresh_registries};
use crate::catalog::Catalog;
use crate::config::{RegistrySetting, Settings};
use crate::error::{Error, ErrorCode, Result};
use crate::packages::registry::{Registry, url_to_path};
use crate::scan::ArtifactKind;
use crate::search::IndexChange;

/// One configured registry.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegistryEntry {
    /// Name.
    pub name: String,
    /// `file://` URL (credentials a hand-written URL holds shown as `***`).
    pub url: String,
    /// Whether commands use it when none is named.
    pub default: bool,
    /// Packages it holds (as mirrored in the catalog).
    pub package_count: u64,
}

fn entry(catalog: &Catalog, setting: &RegistrySetting) -> Result<RegistryEntry> {
    Ok(RegistryEntry {
        name: setting.name.clone(),
        url: setting.shown_url(),
        default: setting.default,
        package_count: catalog.registry_package_count(&setting.name)?,
    })
}

/// Adds a registry to the settings (and makes it the only default when asked).
fn register(ctx: &Context, name: &str, registry: &Registry, default: bool) -> Result<RegistryEntry> {
    crate::sources::spec::validate_name_of(name, "registry")?;
    // A registry whose index aam cannot use is refused before anything is configured.
    registry.checked_index()?;
    let mut settings = ctx.home.load_settings()?;
    if settings.registries.iter().any(|r| r.name == name) {
        return Err(Error::new(
            ErrorCode::RegistryExists,
            format!("a registry named `{name}` is already configured"),
        )
        .with_hint("pick another name, or remove the existing one with `aam registry remove`"));
    }
    let root = registry
        .root()
        .canonicalize()
        .map_err(|e| Error::io("read", registry.root(), e))?;
    let url = format!("file://{}", root.display());
    // One folder under two names would mirror each package twice, and a
    // publish to either would change what both serve.
    if let Some(other) = settings.registries.iter().find(|r| r.url == url) {
        return Err(Error::new(
            ErrorCode::RegistryExists,
            format!(
                "the registry at {} is already configured as `{}`",
                root.display(),
                other.name
            ),
        )
        .with_hint(format!(
            "use `{0}`, or remove it first with `aam registry remove {0}`",
            other.name
        )));
    }
    if default {
        settings.registries.iter_mut().for_each(|r| r.default = false);
    }
    let setting = RegistrySetting {
        name: name.to_string(),
        url,
        default,
    };
    settings.registries.push(setting.clone());
    let mut catalog = ctx.catalog()?;
    ctx.home.save_settings(&settings)?;
    mirror_registry(ctx, &mut catalog, name, registry)?;
    entry(&catalog, &setting)
}

// ---------------------------------------------------------------- init

/// Input of `aam_registry_init`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegistryInitInput {
    /// Folder to create the registry in.
    pub path: String,
    /// Name to configure it under (default: the folder's name).
    #[serde(default)]
    pub name: Option<String>,
    /// Use it when commands name no registry.
    #[serde(default)]
    pub default: bool,
    /// Create it even if the folder is not empty.
    #[serde(default)]
    pub force: bool,
}

/// Creates a local registry and configures it.
pub struct RegistryInit;

impl Tool for RegistryInit {
    const NAME: &'static str = "aam_registry_init";
    const TITLE: &'static str = "Create a registry";
    const DESCRIPTION: &'static str = "Create a local package registry in a folder and configure it (named after the folder unless `name` is given). An existing registry there is kept and configured. Next: `aam_publish` packages to it.";
    const RISK: Risk = Risk::Write;
    const IDEMPOTENT: bool = false;
    const ERRORS: &'static [ErrorCode] = &[ErrorCode::RegistryInvalid, ErrorCode::RegistryExists];
    const CONSTRAINTS: &'static [&'static str] = &[
        "the folder is never inside AAM_HOME (but under `exports/`), `.aam/`, an agent's folder or a file installs add sections to",
    ];
    const EXAMPLES: &'static [Example] = &[Example {
        title: "create and configure a registry",
        input: r#"{"path": "new-registry", "name": "new"}"#,
        expect: Expect::Output(r#"{"name": "new", "default": false, "package_count": 0}"#),
    }];
    type Input = RegistryInitInput;
    type Output = RegistryEntry;

    fn run(ctx: &Context, input: RegistryInitInput) -> Result<RegistryEntry> {
        let root = ctx.output_path(&input.path)?;
        let name = input.name.unwrap_or_else(|| {
            root.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "local".to_string())
        });
        crate::sources::spec::validate_name_of(&name, "registry")?;
        if let Some(existing) = ctx
            .home
            .load_settings()?
            .registries
            .into_iter()
            .find(|r| r.name == name)
        {
            let here = root
                .canonicalize()
                .is_ok_and(|real| existing.url == format!("file://{}", real.display()));
            let hint = match here {
                true => "nothing to do: `aam registry list` shows it".to_string(),
                false => "pass `--name` with another name".to_string(),
            };
            let message = match here {
                true => format!("this folder is already configured as the registry `{name}`"),
                false => format!("a registry named `{name}` is already configured"),
            };
            return Err(Error::new(ErrorCode::RegistryExists, message).with_hint(hint));
        }
        let registry = Registry::init(&root, input.force)?;
        register(ctx, &name, &registry, input.default)
    }
}

// ---------------------------------------------------------------- add

/// Input of `aam_registry_add`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegistryAddInput {
    /// Name to configure it under.
    pub name: String,
    /// `file:///abs/path` (or a path) of an existing local registry.
    pub url: String,
    /// Use it when commands name no registry.
    #[serde(default)]
    pub default: bool,
}

/// Configures an existing registry.
pub struct RegistryAdd;

impl Tool for RegistryAdd {
    const NAME: &'static str = "aam_registry_add";
    const TITLE: &'static str = "Add a registry";
    const DESCRIPTION: &'static str = "Configure an existing local registry under a name and mirror its packages into the catalog so search finds them. Next: `aam_search` or install from it.";
    const RISK: Risk = Risk::Write;
    const IDEMPOTENT: bool = false;
    const ERRORS: &'static [ErrorCode] = &[ErrorCode::RegistryInvalid, ErrorCode::RegistryExists];
    const CONSTRAINTS: &'static [&'static str] = &["only local (`file://`) registries"];
    const EXAMPLES: &'static [Example] = &[
        Example {
            title: "configure an existing registry folder",
            input: r#"{"name": "mirror", "url": "spare-registry"}"#,
            expect: Expect::Output(r#"{"name": "mirror", "default": false}"#),
        },
        Example {
            title: "a remote URL",
            input: r#"{"name": "web", "url": "https://example.com/registry"}"#,
            expect: Expect::Error(ErrorCode::InvalidArgument),
        },
    ];
    type Input = RegistryAddInput;
    type Output = RegistryEntry;

    fn run(ctx: &Context, input: RegistryAddInput) -> Result<RegistryEntry> {
        let path = ctx.path(&url_to_path(&input.url)?.to_string_lossy())?;
        let registry = Registry::open(&path)?;
        register(ctx, &input.name, &registry, input.default)
    }
}

// ---------------------------------------------------------------- list

/// Input of `aam_registry_list`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegistryListInput {}

/// Output of `aam_registry_list`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegistryListOutput {
    /// Every configured registry, in the order they were added.
    pub registries: Vec<RegistryEntry>,
}

/// Lists configured registries.
pub struct RegistryList;

impl Tool for RegistryList {
    const NAME: &'static str = "aam_registry_list";
    const TITLE: &'static str = "List registries";
    const DESCRIPTION: &'static str = "List the configured package registries with their URL, whether they are the default, and how many packages each holds.";
    const RISK: Risk = Risk::Read;
    const IDEMPOTENT: bool = true;
    const ERRORS: &'static [ErrorCode] = &[];
    const EXAMPLES: &'static [Example] = &[Example {
        title: "the configured registries",
        input: r#"{}"#,
        expect: Expect::Output(
            r#"{"registries": [{"name": "local", "default": true, "package_count": 1}, {"name": "extra-registry", "default": false, "package_count": 0}]}"#,
        ),
    }];
    type Input = RegistryListInput;
    type Output = RegistryListOutput;

    fn run(ctx: &Context, _input: RegistryListInput) -> Result<RegistryListOutput> {
        let settings: Settings = ctx.home.load_settings()?;
        let catalog = with_fresh_registries(ctx, &settings)?;
        let registries = settings
            .registries
            .iter()
            .map(|r| entry(&catalog, r))
            .collect::<Result<_>>()?;
        Ok(RegistryListOutput { registries })
    }
}

// ---------------------------------------------------------------- remove

/// Input of `aam_registry_remove`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegistryRemoveInput {
    /// Registry name.
    pub name: String,
}

/// Output of `aam_registry_remove`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegistryRemoveOutput {
    /// Name of the registry forgotten.
    pub removed: String,
    /// Whether it was the default.
    pub was_default: bool,
}

/// Forgets a registry (its folder is left alone).
pub struct RegistryRemove;

impl Tool for RegistryRemove {
    const NAME: &'static str = "aam_registry_remove";
    const TITLE: &'static str = "Remove a registry";
    const DESCRIPTION: &'static str = "Stop using a registry: remove it from the settings and its packages from the catalog and search. The registry folder and its archives are not touched.";
    const RISK: Risk = Risk::Destructive;
    const IDEMPOTENT: bool = false;
    const ERRORS: &'static [ErrorCode] = &[ErrorCode::RegistryNotFound];
    const CONSTRAINTS: &'static [&'static str] = &["the registry's files are kept"];
    const EXAMPLES: &'static [Example] = &[
        Example {
            title: "forget a registry",
            input: r#"{"name": "extra-registry"}"#,
            expect: Expect::Output(r#"{"removed": "extra-registry", "was_default": false}"#),
        },
        Example {
            title: "a registry that is not configured",
            input: r#"{"name": "ghost"}"#,
            expect: Expect::Error(ErrorCode::RegistryNotFound),
        },
    ];
    type Input = RegistryRemoveInput;
    type Output = RegistryRemoveOutput;

    fn run(ctx: &Context, input: RegistryRemoveInput) -> Result<RegistryRemoveOutput> {
        let mut settings = ctx.home.load_settings()?;
        let setting = settings.registry(Some(&input.name))?.clone();
        settings.registries.retain(|r| r.name != input.name);
        ctx.home.save_settings(&settings)?;
        let mut catalog = ctx.catalog()?;
        indexed_write(ctx, &mut catalog, |catalog| {
            let generation = catalog.remove_registry(&input.name)?;
            Ok(((), IndexChange::RegistryRemoved(input.name.clone()), generation))
        })?;
        Ok(RegistryRemoveOutput {
            removed: setting.name,
            was_default: setting.default,
        })
    }
}

/// Artifact types named in a package entry, for display.
pub fn type_list(types: &[ArtifactKind]) -> String {
    types.iter().map(|k| k.plural()).collect::<Vec<_>>().join(", ")
}
