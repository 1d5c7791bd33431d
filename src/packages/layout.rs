//! Where artifacts live inside a package, and which files a package consists of.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::manifest::MANIFEST_FILE;
use crate::error::{Error, ErrorCode, Result};
use crate::scan::ArtifactKind;

/// Folders never part of a package: build output and dependencies.
const LEFT_OUT_DIRS: [&str; 8] = [
    "dist",
    "target",
    "build",
    "node_modules",
    "__pycache__",
    "venv",
    ".venv",
    ".git",
];

/// Whether packing a folder leaves the package path `path` out: a part
/// starting with `.`, an `.aam` file, or anything in a top-level build or
/// dependency folder (see [`package_files`]).
pub fn left_out(path: &str) -> bool {
    let first = path.split('/').next().unwrap_or_default();
    LEFT_OUT_DIRS.contains(&first)
        || path
            .split('/')
            .any(|part| part.starts_with('.') || part.ends_with(".aam"))
}

/// The path of an artifact inside a package: `skills/<n>`, `agents/<n>.md`,
/// `prompts/<n>.md` or `instructions/<n>.md`.
pub fn package_path(kind: ArtifactKind, name: &str) -> String {
    match kind {
        ArtifactKind::Skill => format!("skills/{name}"),
        other => format!("{}/{name}.md", other.plural()),
    }
}

/// A file of a package: its path inside the package and on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageFile {
    /// `/`-separated path inside the package.
    pub path: String,
    /// Where it is on disk (a symlink's target when it is a link inside the package).
    pub source: PathBuf,
    /// Whether it is executable.
    pub executable: bool,
}

/// Every file that belongs to the package at `dir`, sorted by path. Hidden files,
/// build folders and archives are left out; a symlink that leaves the package is
/// an error naming it.
/// Files that come to more than an archive may hold unpacked are refused
/// before any is read.
pub fn package_files(dir: &Path) -> Result<Vec<PackageFile>> {
    let mut files = Vec::new();
    let mut total = 0u64;
    walk(dir, dir, &mut files, &mut total)?;
    if total > crate::packages::archive::MAX_UNPACKED_BYTES {
        return Err(Error::new(
            ErrorCode::ArchiveInvalid,
            format!(
                "the package's files come to {} MiB, more than an archive may hold unpacked ({} MiB)",
                total >> 20,
                crate::packages::archive::MAX_UNPACKED_BYTES >> 20
            ),
        )
        .with_hint("move large files out of the package folder (or give them a name starting with `.`)"));
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(files)
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<PackageFile>, total: &mut u64) -> Result<()> {
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io("read", dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| Error::io("read", dir, e))?;
        let path = entry.path();
        let relative = path
            .strip_prefix(root)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_else(|_| entry.file_name().to_string_lossy().into_owned());
        if left_out(&relative) {
            continue;
        }
        // A name an archive entry may not have (checked as install checks
        // entries) would pack into an archive nothing installs.
        let unpackable = match entry.file_name().to_str() {
            None => Some("it is not UTF-8".to_string()),
            Some(_) => crate::paths::check_relative(&relative).err(),
        };
        if let Some(why) = unpackable {
            return Err(Error::new(
                ErrorCode::ArchiveInvalid,
                format!("`{}` cannot go into an archive: {why}", crate::error::quoted(&relative)),
            )
            .with_hint("rename the file, or move it out of the package folder"));
        }
        let file_type = entry.file_type().map_err(|e| Error::io("read", &path, e))?;
        let (source, metadata) = if file_type.is_symlink() {
            let target = std::fs::canonicalize(&path).map_err(|_| broken_link(&relative))?;
            let root = std::fs::canonicalize(root).map_err(|e| Error::io("read", root, e))?;
            if !target.starts_with(&root) {
                return Err(Error::new(
                    ErrorCode::ArchiveInvalid,
                    format!("`{relative}` is a link to a file outside the package"),
                )
                .with_hint("copy the file into the package instead of linking to it"));
            }
            let metadata = std::fs::metadata(&target).map_err(|e| Error::io("read", &target, e))?;
            // A link to a folder it lies in would be walked for ever.
            if metadata.is_dir() && dir.canonicalize().is_ok_and(|here| here.starts_with(&target)) {
                return Err(Error::new(
                    ErrorCode::ArchiveInvalid,
                    format!("`{relative}` is a link to a folder it lies in: a loop"),
                )
                .with_hint("remove the link, or point it at a folder beside it"));
            }
            (target, metadata)
        } else {
            let metadata = entry.metadata().map_err(|e| Error::io("read", &path, e))?;
            (path.clone(), metadata)
        };
        if metadata.is_dir() {
            walk(root, &path, out, total)?;
        } else if metadata.is_file() {
            use std::os::unix::fs::PermissionsExt;
            *total = total.saturating_add(metadata.len());
            out.push(PackageFile {
                path: relative,
                source,
                executable: metadata.permissions().mode() & 0o111 != 0,
            });
        }
    }
    Ok(())
}

fn broken_link(relative: &str) -> Error {
    Error::new(ErrorCode::ArchiveInvalid, format!("`{relative}` is a broken link"))
        .with_hint("remove the link or point it at a file inside the package")
}

/// blake3 digests of every package file except the manifest itself.
pub fn checksums(files: &[PackageFile]) -> Result<BTreeMap<String, String>> {
    let mut digests = BTreeMap::new();
    for file in files.iter().filter(|f| f.path != MANIFEST_FILE) {
        let bytes = std::fs::read(&file.source).map_err(|e| Error::io("read", &file.source, e))?;
        digests.insert(file.path.clone(), blake3::hash(&bytes).to_hex().to_string());
    }
    Ok(digests)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_leave_out_hidden_builds_and_archives() {
        let dir = tempfile::tempdir().unwrap();
        let write = |rel: &str| {
            let path = dir.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, rel).unwrap();
        };
        for rel in [
            "aam.yaml",
            "skills/a/SKILL.md",
            ".git/config",
            ".hidden",
            "dist/x.aam",
            "old.aam",
            "target/x",
            "skills/a/target/kept",
        ] {
            write(rel);
        }
        let files: Vec<String> = package_files(dir.path()).unwrap().into_iter().map(|f| f.path).collect();
        assert_eq!(files, ["aam.yaml", "skills/a/SKILL.md", "skills/a/target/kept"]);
        let digests = checksums(&package_files(dir.path()).unwrap()).unwrap();
        assert_eq!(digests.len(), 2, "the manifest has no checksum of its own");
        std::os::unix::fs::symlink("/etc/hostname", dir.path().join("escape.md")).unwrap();
        let err = package_files(dir.path()).unwrap_err();
        assert_eq!(err.code(), ErrorCode::ArchiveInvalid);
        assert!(err.message().contains("escape.md"));
        std::fs::remove_file(dir.path().join("escape.md")).unwrap();
        std::os::unix::fs::symlink("..", dir.path().join("skills/a/loop")).unwrap();
        let err = package_files(dir.path()).unwrap_err();
        assert_eq!(
            err.message(),
            "`skills/a/loop` is a link to a folder it lies in: a loop"
        );
        std::fs::remove_file(dir.path().join("skills/a/loop")).unwrap();
        for bad in ["skills/a/a:b.md", "skills/a/a\\b.md", "skills/a/line\nbreak.md"] {
            std::fs::write(dir.path().join(bad), "x").unwrap();
            let err = package_files(dir.path()).unwrap_err();
            assert!(err.message().contains("cannot go into an archive"), "{}", err.message());
            std::fs::remove_file(dir.path().join(bad)).unwrap();
        }
        // Files larger in all than an archive may unpack to: refused unread
        // (a sparse file takes no disk).
        let big = std::fs::File::create(dir.path().join("skills/a/big.bin")).unwrap();
        big.set_len(crate::packages::archive::MAX_UNPACKED_BYTES + 1).unwrap();
        let err = package_files(dir.path()).unwrap_err();
        assert_eq!(err.code(), ErrorCode::ArchiveInvalid);
        assert!(
            err.message().contains("more than an archive may hold"),
            "{}",
            err.message()
        );
    }

    #[test]
    fn layout_paths() {
        assert_eq!(package_path(ArtifactKind::Skill, "pdf"), "skills/pdf");
        assert_eq!(
            package_path(ArtifactKind::Instruction, "style"),
            "instructions/style.md"
        );
    }
}
