//! `aam_pkg_pack`: pack a package folder into a checked archive.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use std::path::{Path, PathBuf};

use crate::error::{Error, ErrorCode, Result};
use crate::packages::archive;
use crate::packages::validate::{archive_file_name, pack_dir};
use crate::tools::{Context, Example, Expect, Risk, Tool};

/// Input of `aam_pack`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PkgPackInput {
    /// Package folder (default: the current folder).
    #[serde(default)]
    pub path: Option<String>,
    /// Archive to write (default: `dist/<name>-<version>.aam` in the package folder).
    #[serde(default)]
    pub output: Option<String>,
}

/// Output of `aam_pack`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PkgPackOutput {
    /// The archive written.
    pub archive: String,
    /// Package name.
    pub package_name: String,
    /// Version.
    pub version: String,
    /// Archive size in bytes.
    pub size: u64,
    /// blake3 of the archive (hex).
    pub blake3: String,
    /// Files in the archive, the manifest included.
    pub file_count: u64,
}

/// Packs a package folder into a reproducible archive.
pub struct PkgPack;

impl Tool for PkgPack {
    const NAME: &'static str = "aam_pack";
    const TITLE: &'static str = "Pack a package";
    const DESCRIPTION: &'static str = "Pack a valid package folder into a reproducible `.aam` archive (sorted entries, fixed metadata: the same files give the same bytes), with checksums recomputed over exactly what the archive holds. Hidden files, build folders and earlier archives are left out. Returns the archive path, size and blake3. Next: `aam_publish`.";
    const RISK: Risk = Risk::Write;
    const IDEMPOTENT: bool = true;
    const ERRORS: &'static [ErrorCode] = &[
        ErrorCode::ManifestInvalid,
        ErrorCode::ArchiveInvalid,
        ErrorCode::Conflict,
        ErrorCode::UnsafePath,
    ];
    const CONSTRAINTS: &'static [&'static str] = &[
        "archives are reproducible: same files, same bytes",
        "at most 64 MiB and 20,000 entries",
        "a folder that is, holds or lies in AAM_HOME is never packed",
        "`output` is never inside AAM_HOME (but under `exports/`), `.aam/`, an agent's folder or a file installs add sections to",
        "`output` replaces only an earlier archive: never a folder, a link or another file",
        "the default output is refused when the package's `dist` is a link",
    ];
    const EXAMPLES: &'static [Example] = &[Example {
        title: "pack a package folder",
        input: r#"{"path": "team-rules"}"#,
        expect: Expect::Output(r#"{"package_name": "team-rules", "version": "0.1.0", "file_count": 2}"#),
    }];
    type Input = PkgPackInput;
    type Output = PkgPackOutput;

    fn run(ctx: &Context, input: PkgPackInput) -> Result<PkgPackOutput> {
        let given = input.path.as_deref().unwrap_or(".");
        let dir = ctx.path(given)?;
        ctx.refuse_holding_home(&dir, given)?;
        let (bytes, manifest, file_count) = pack_dir(&dir)?;
        let output = match &input.output {
            Some(out) => ctx.output_path(out)?,
            None => default_output(&dir, &archive_file_name(&manifest))?,
        };
        let shown = output.display().to_string();
        ctx.refuse_managed(&output, &shown)?;
        archive::check_replaceable(&output, &shown)?;
        ctx.cancel.check()?;
        let (size, blake3) = archive::write_archive(&output, &bytes)?;
        Ok(PkgPackOutput {
            archive: output.display().to_string(),
            package_name: manifest.name,
            version: manifest.version,
            size,
            blake3,
            file_count,
        })
    }
}

/// `dist/<file_name>` in the package folder `dir`. A `dist` that is a link
/// (a cloned package can ship one to anywhere) is refused: the archive would
/// land wherever it leads.
fn default_output(dir: &Path, file_name: &str) -> Result<PathBuf> {
    let dist = dir.join("dist");
    if std::fs::symlink_metadata(&dist).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(Error::new(
            ErrorCode::UnsafePath,
            format!(
                "`{}` is a link: the archive would be written wherever it leads",
                dist.display()
            ),
        )
        .with_hint("remove the link, or name the archive with `--output`"));
    }
    Ok(dist.join(file_name))
}
