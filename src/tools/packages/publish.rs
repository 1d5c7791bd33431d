//! `aam_pkg_publish`: publish an archive to a registry and mirror the registry into the
//! catalog.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorCode, Result};
use crate::packages::registry::Registry;
use crate::packages::validate::{pack_dir, validate_archive_bytes};
use crate::scan::ArtifactKind;
use crate::tools::{Context, Example, Expect, Risk, Tool, mirror_registry};

/// Input of `aam_publish`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PkgPublishInput {
    /// A `.aam` archive, or a package folder to pack first (default: the current folder).
    #[serde(default)]
    pub archive: Option<String>,
    /// Registry name (default: the default registry).
    #[serde(default)]
    pub registry: Option<String>,
    /// Dist-tag to point at this version (default `latest`).
    #[serde(default)]
    pub tag: Option<String>,
    /// Check everything, publish nothing.
    #[serde(default)]
    pub dry_run: bool,
}

/// Output of `aam_publish`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PkgPublishOutput {
    /// Package name.
    pub package_name: String,
    /// Version.
    pub version: String,
    /// Registry it went to.
    pub registry: String,
    /// Dist-tag set.
    pub tag: String,
    /// Archive path inside the registry.
    pub archive: String,
    /// blake3 of the archive (hex).
    pub checksum: String,
    /// Archive size in bytes.
    pub size: u64,
    /// Artifact types it holds.
    pub artifact_types: Vec<ArtifactKind>,
    /// Whether nothing was published.
    pub dry_run: bool,
}

/// Publishes a package version to a registry.
pub struct PkgPublish;

impl Tool for PkgPublish {
    const NAME: &'static str = "aam_publish";
    const TITLE: &'static str = "Publish a package";
    const DESCRIPTION: &'static str = "Publish a `.aam` archive (or a package folder, packed first) to a registry. Versions are immutable: publishing one that exists fails with AAM_VERSION_EXISTS. Sets a dist-tag (default `latest`) and makes the package searchable. Returns the stored archive's path, checksum and size.";
    const RISK: Risk = Risk::Write;
    const IDEMPOTENT: bool = false;
    const ERRORS: &'static [ErrorCode] = &[
        ErrorCode::VersionExists,
        ErrorCode::RegistryNotFound,
        ErrorCode::RegistryInvalid,
        ErrorCode::ManifestInvalid,
        ErrorCode::ArchiveInvalid,
        ErrorCode::UnsafePath,
    ];
    const CONSTRAINTS: &'static [&'static str] = &["versions are immutable"];
    const EXAMPLES: &'static [Example] = &[
        Example {
            title: "publish a package folder",
            input: r#"{"archive": "team-rules"}"#,
            expect: Expect::Output(r#"{"package_name": "team-rules", "version": "0.1.0", "tag": "latest"}"#),
        },
        Example {
            title: "a version that is already published",
            input: r#"{"archive": "review-kit"}"#,
            expect: Expect::Error(ErrorCode::VersionExists),
        },
    ];
    type Input = PkgPublishInput;
    type Output = PkgPublishOutput;

    fn run(ctx: &Context, input: PkgPublishInput) -> Result<PkgPublishOutput> {
        let given = input.archive.as_deref().unwrap_or(".");
        let target = ctx.path(given)?;
        let bytes = if target.is_dir() {
            ctx.refuse_holding_home(&target, given)?;
            pack_dir(&target)?.0
        } else {
            std::fs::read(&target).map_err(|e| Error::io("read", &target, e))?
        };
        let manifest = validate_archive_bytes(&bytes)?;
        let tag = input.tag.unwrap_or_else(|| "latest".to_string());
        crate::packages::registry::check_tag(&tag).map_err(|why| {
            Error::invalid_argument(format!("`{}` {why}", crate::error::quoted(&tag)))
                .with_hint("name tags with words, such as `next` or `beta`")
        })?;
        let settings = ctx.home.load_settings()?;
        let setting = settings.registry(input.registry.as_deref())?.clone();
        let registry = Registry::configured(&setting)?;
        ctx.cancel.check()?;
        let entry = registry.publish(&bytes, &manifest, &tag, input.dry_run)?;
        if !input.dry_run {
            let mut catalog = ctx.catalog()?;
            mirror_registry(ctx, &mut catalog, &setting.name, &registry)?;
        }
        Ok(PkgPublishOutput {
            package_name: manifest.name,
            version: manifest.version,
            registry: setting.name,
            tag,
            archive: entry.archive,
            checksum: entry.checksum,
            size: entry.size,
            artifact_types: entry.artifact_types,
            dry_run: input.dry_run,
        })
    }
}
