//! Checking packages before they are packed, published or installed: a package
//! folder (manifest, listed artifacts, checksums) or an archive (entries,
//! manifest, every checksum against what is inside), and packing a checked folder.

use std::path::Path;

use crate::error::{Error, ErrorCode, Result};
use crate::packages::archive;
use crate::packages::build::invalid_manifest;
use crate::packages::layout;
use crate::packages::manifest::{self, FileChecksums, Issue, MANIFEST_FILE, Manifest};
use crate::paths::Inside;
use crate::scan::ArtifactKind;

pub type Validation = (manifest::Checked, Vec<Issue>, Vec<Issue>);

fn issue(field: impl Into<String>, message: impl Into<String>) -> Issue {
    Issue {
        field: field.into(),
        message: message.into(),
    }
}

/// The manifest's text, read only from a plain file in `dir` (never through a
/// link, which could name any file the user may read, nor from a FIFO) and only
/// up to [`manifest::MAX_MANIFEST`] bytes.
fn read_manifest_text(dir: &Path) -> Result<String> {
    use std::io::Read;
    let path = dir.join(MANIFEST_FILE);
    let refused = |why: &str| {
        Error::new(ErrorCode::ManifestInvalid, format!("`{}` {why}", path.display())).with_hint(format!(
            "put the package's `{MANIFEST_FILE}` itself in its folder, as a UTF-8 file of at most 1 MiB"
        ))
    };
    let file = match crate::paths::open_inside(&path, dir).map_err(|e| Error::io("read", &path, e))? {
        Inside::File(file) => file,
        Inside::Missing => {
            return Err(Error::new(
                ErrorCode::ManifestInvalid,
                format!("`{}` has no `{MANIFEST_FILE}`", dir.display()),
            )
            .with_hint("create one with `aam pkg init` or `aam pkg create`"));
        }
        Inside::Link(_) | Inside::NotPlain | Inside::Outside => return Err(refused("is a link or not a plain file")),
    };
    let mut bytes = Vec::new();
    file.take(manifest::MAX_MANIFEST as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io("read", &path, e))?;
    if bytes.len() > manifest::MAX_MANIFEST {
        return Err(refused("is larger than 1 MiB"));
    }
    String::from_utf8(bytes).map_err(|_| refused("is not UTF-8 text"))
}

/// Checks a package folder: the manifest, that artifacts exist, and checksums.
pub fn validate_dir(dir: &Path) -> Result<Validation> {
    let checked = manifest::check(&read_manifest_text(dir)?);
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    if let Some(manifest) = &checked.manifest {
        if manifest.description == manifest::PLACEHOLDER_DESCRIPTION {
            warnings.push(issue(
                "description",
                "it is still the placeholder `aam pkg init` wrote: say what the package gives an agent",
            ));
        }
        let files = layout::package_files(dir)?;
        for (i, (kind, artifact)) in manifest.artifacts.all().enumerate() {
            let field = format!("artifacts.{}[{}].path", kind.plural(), position(manifest, kind, i));
            let path = dir.join(&artifact.path);
            match kind {
                ArtifactKind::Skill if !path.is_dir() => errors.push(issue(
                    field,
                    format!("`{}` is not a folder in the package", artifact.path),
                )),
                ArtifactKind::Skill if !path.join("SKILL.md").is_file() => {
                    warnings.push(issue(field, format!("`{}` has no SKILL.md", artifact.path)))
                }
                ArtifactKind::Skill => {
                    let main = format!("{}/SKILL.md", artifact.path);
                    if let Some(file) = files.iter().find(|f| f.path == main) {
                        let bytes = std::fs::read(&file.source).map_err(|e| Error::io("read", &file.source, e))?;
                        let text = String::from_utf8_lossy(&bytes);
                        for problem in skill_file_problems(&artifact.name, &text) {
                            warnings.push(issue(field.clone(), format!("`{main}`: {problem}")));
                        }
                    }
                }
                _ if !path.is_file() => errors.push(issue(
                    field,
                    format!("`{}` is not a file in the package", artifact.path),
                )),
                _ => {}
            }
        }
        let actual = layout::checksums(&files)?;
        if let Some(recorded) = &manifest.file_checksums {
            for (path, digest) in &recorded.files {
                match actual.get(path) {
                    None => warnings.push(issue(
                        format!("file_checksums.files.{path}"),
                        "the file is missing; `aam pkg pack` recomputes checksums",
                    )),
                    Some(now) if now != digest => warnings.push(issue(
                        format!("file_checksums.files.{path}"),
                        "the file changed since the checksum was recorded; `aam pkg pack` recomputes checksums",
                    )),
                    Some(_) => {}
                }
            }
            for path in actual.keys().filter(|p| !recorded.files.contains_key(*p)) {
                warnings.push(issue(
                    "file_checksums.files",
                    format!("`{path}` has no checksum yet; `aam pkg pack` adds it"),
                ));
            }
        }
    }
    Ok((checked, errors, warnings))
}

/// What agents need of a skill's `SKILL.md` that `text` lacks: frontmatter
/// that parses, with a `description` (agents choose skills by it) and a
/// `name` that is the skill's (`name`: the folder it is installed as).
fn skill_file_problems(name: &str, text: &str) -> Vec<String> {
    let parsed = crate::scan::frontmatter::parse(text.strip_prefix('\u{feff}').unwrap_or(text));
    let mut problems = parsed.warnings.clone();
    if parsed.fields.is_none() {
        if problems.is_empty() {
            problems.push("it has no frontmatter: agents read a skill's `name` and `description` there".to_string());
        }
        return problems;
    }
    match parsed.string("name") {
        None => problems.push(format!("its frontmatter has no `name` (the skill's, `{name}`)")),
        Some(found) if found != name => problems.push(format!(
            "its frontmatter names the skill `{found}`, but it is installed as `{name}`: agents expect them to match"
        )),
        Some(_) => {}
    }
    match parsed.string("description") {
        None => problems.push("its frontmatter has no `description`: agents choose skills by it".to_string()),
        Some(found) if found == manifest::PLACEHOLDER_SKILL_DESCRIPTION => problems.push(
            "its `description` is still the placeholder `aam pkg init` wrote: agents choose skills by it".to_string(),
        ),
        Some(_) => {}
    }
    problems
}

/// Checks an archive and returns its manifest; any problem is an error.
pub fn validate_archive_bytes(bytes: &[u8]) -> Result<Manifest> {
    let (checked, errors, _) = validate_archive(bytes)?;
    let all_errors: Vec<Issue> = checked.errors.iter().cloned().chain(errors).collect();
    if let Some(first) = all_errors.first() {
        return Err(invalid_manifest(&all_errors, first));
    }
    checked
        .manifest
        .ok_or_else(|| Error::internal("validated manifest missing"))
}

/// Checks an archive: entries, manifest, and that every checksum matches what is inside.
pub fn validate_archive(bytes: &[u8]) -> Result<Validation> {
    let checked = manifest::check(&archive::manifest_text(bytes)?);
    let mut errors = Vec::new();
    if let Some(manifest) = &checked.manifest {
        // Every entry, as install reads them: a file the folder walk of `pack`
        // leaves out (a name starting with `.`) is still checked here.
        let actual: std::collections::BTreeMap<String, String> = archive::files(bytes)?
            .into_iter()
            .filter(|(path, _, _)| path != MANIFEST_FILE)
            .map(|(path, bytes, _)| (path, blake3::hash(&bytes).to_hex().to_string()))
            .collect();
        let recorded = manifest
            .file_checksums
            .as_ref()
            .map(|c| c.files.clone())
            .unwrap_or_default();
        if recorded != actual {
            for (path, digest) in &actual {
                let why = match recorded.get(path) {
                    Some(listed) if listed == digest => continue,
                    Some(_) => "does not match the file in the archive",
                    None => "is not listed: the archive holds this file, which the manifest's checksums leave out",
                };
                errors.push(issue(format!("file_checksums.files.{path}"), why));
            }
            for path in recorded.keys().filter(|p| !actual.contains_key(*p)) {
                errors.push(issue(
                    format!("file_checksums.files.{path}"),
                    "names a file the archive does not contain",
                ));
            }
        }
        for (kind, artifact) in manifest.artifacts.all() {
            let present = match kind {
                ArtifactKind::Skill => actual.keys().any(|p| p.starts_with(&format!("{}/", artifact.path))),
                _ => actual.contains_key(&artifact.path),
            };
            if !present {
                errors.push(issue(
                    format!("artifacts.{}", kind.plural()),
                    format!("`{}` is not in the archive", artifact.path),
                ));
            }
        }
    }
    Ok((checked, errors, Vec::new()))
}

/// The index of the `i`-th artifact overall within its own type's list.
fn position(manifest: &Manifest, kind: ArtifactKind, overall: usize) -> usize {
    let before: usize = ArtifactKind::ALL
        .iter()
        .take_while(|k| **k != kind)
        .map(|k| manifest.artifacts.of(*k).len())
        .sum();
    overall - before
}

/// Validates a package folder and builds its archive in memory.
pub fn pack_dir(dir: &Path) -> Result<(Vec<u8>, Manifest, u64)> {
    let (checked, errors, _) = validate_dir(dir)?;
    let all_errors: Vec<Issue> = checked.errors.iter().cloned().chain(errors).collect();
    if let Some(first) = all_errors.first() {
        return Err(invalid_manifest(&all_errors, first));
    }
    let mut manifest = checked
        .manifest
        .ok_or_else(|| Error::internal("validated manifest missing"))?;
    let files = layout::package_files(dir)?;
    manifest.file_checksums = Some(FileChecksums {
        algorithm: "blake3".to_string(),
        files: layout::checksums(&files)?,
    });
    let file_count = files.iter().filter(|f| f.path != MANIFEST_FILE).count() as u64 + 1;
    let bytes = archive::pack(&files, &manifest::to_yaml(&manifest))?;
    Ok((bytes, manifest, file_count))
}

/// `name-1.0.0.aam`, `scope-name-1.0.0.aam` for `@scope/name`.
pub fn archive_file_name(manifest: &Manifest) -> String {
    let flat = manifest.name.trim_start_matches('@').replace('/', "-");
    format!("{flat}-{}.aam", manifest.version)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skill_file_agents_cannot_read_is_named() {
        let good = "---\nname: pdf\ndescription: Fill PDF forms\n---\nBody\n";
        assert!(skill_file_problems("pdf", good).is_empty());
        let none = skill_file_problems("pdf", "# PDF\nBody\n");
        assert!(none[0].contains("no frontmatter"), "{none:?}");
        let broken = skill_file_problems("pdf", "---\ndescription: [broken\n---\n");
        assert!(!broken.is_empty(), "{broken:?}");
        let other = skill_file_problems("pdf", "---\nname: pdf-tools\ndescription: d\n---\n");
        assert!(other[0].contains("`pdf-tools`"), "{other:?}");
        let bare = skill_file_problems("pdf", "---\nname: pdf\n---\n");
        assert!(bare[0].contains("no `description`"), "{bare:?}");
    }

    fn package(dir: &Path) {
        crate::packages::sample_package(dir, "pdf", &[]);
    }

    #[test]
    fn a_folder_without_a_manifest_says_how_to_make_one() {
        let dir = tempfile::tempdir().unwrap();
        let err = validate_dir(dir.path()).unwrap_err();
        assert_eq!(err.code(), ErrorCode::ManifestInvalid);
        assert!(err.hint().unwrap().contains("aam pkg init"));
    }

    #[test]
    fn a_manifest_is_read_only_from_a_plain_file_in_the_folder() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("creds.yaml");
        std::fs::write(&outside, "name: SECRET_TOKEN\nversion: HUNTER2\n").unwrap();
        let package = dir.path().join("pkg");
        std::fs::create_dir(&package).unwrap();
        std::os::unix::fs::symlink(&outside, package.join(MANIFEST_FILE)).unwrap();
        let err = validate_dir(&package).unwrap_err();
        assert_eq!(err.code(), ErrorCode::ManifestInvalid);
        assert!(!format!("{err:?}").contains("SECRET_TOKEN"), "{err:?}");
        std::fs::remove_file(package.join(MANIFEST_FILE)).unwrap();
        crate::paths::make_fifo(&package.join(MANIFEST_FILE));
        assert_eq!(validate_dir(&package).unwrap_err().code(), ErrorCode::ManifestInvalid);
        std::fs::remove_file(package.join(MANIFEST_FILE)).unwrap();
        std::fs::write(package.join(MANIFEST_FILE), vec![b'#'; manifest::MAX_MANIFEST + 1]).unwrap();
        assert_eq!(validate_dir(&package).unwrap_err().code(), ErrorCode::ManifestInvalid);
    }

    #[test]
    fn listed_artifacts_must_exist() {
        let dir = tempfile::tempdir().unwrap();
        package(dir.path());
        std::fs::remove_dir_all(dir.path().join("skills/pdf")).unwrap();
        let (_, errors, _) = validate_dir(dir.path()).unwrap();
        assert_eq!(errors[0].field, "artifacts.skills[0].path");
        assert_eq!(pack_dir(dir.path()).unwrap_err().code(), ErrorCode::ManifestInvalid);
    }

    #[test]
    fn packed_archives_are_reproducible_and_checked_against_their_checksums() {
        let dir = tempfile::tempdir().unwrap();
        package(dir.path());
        let (first, manifest, _) = pack_dir(dir.path()).unwrap();
        let (second, _, _) = pack_dir(dir.path()).unwrap();
        assert_eq!(first, second);
        assert_eq!(archive_file_name(&manifest), "kit-1.0.0.aam");
        assert_eq!(validate_archive_bytes(&first).unwrap().name, "kit");

        // A checksum that does not match what the archive holds is an error.
        let mut forged = manifest.clone();
        forged.file_checksums.as_mut().unwrap().files.insert(
            "skills/pdf/SKILL.md".to_string(),
            blake3::hash(b"other").to_hex().to_string(),
        );
        let files = layout::package_files(dir.path()).unwrap();
        let bytes = archive::pack(&files, &manifest::to_yaml(&forged)).unwrap();
        let (_, errors, _) = validate_archive(&bytes).unwrap();
        assert_eq!(errors[0].field, "file_checksums.files.skills/pdf/SKILL.md");
        assert_eq!(errors[0].message, "does not match the file in the archive");
        assert_eq!(
            validate_archive_bytes(&bytes).unwrap_err().code(),
            ErrorCode::ManifestInvalid
        );
        // A file the manifest does not list is called unlisted, not mismatched.
        forged
            .file_checksums
            .as_mut()
            .unwrap()
            .files
            .remove("skills/pdf/SKILL.md");
        let bytes = archive::pack(&files, &manifest::to_yaml(&forged)).unwrap();
        let (_, errors, _) = validate_archive(&bytes).unwrap();
        assert_eq!(errors[0].field, "file_checksums.files.skills/pdf/SKILL.md");
        assert!(errors[0].message.starts_with("is not listed"), "{:?}", errors[0]);

        // So is a file `pack` would leave out of a folder (a name starting
        // with `.`), put into the archive by hand: install would deploy it.
        let hidden = dir.path().join("skills/pdf/.hidden.md");
        std::fs::write(&hidden, "curl x | sh\n").unwrap();
        let mut with_hidden = files.clone();
        with_hidden.push(layout::PackageFile {
            path: "skills/pdf/.hidden.md".to_string(),
            source: hidden,
            executable: false,
        });
        let bytes = archive::pack(&with_hidden, &manifest::to_yaml(&manifest)).unwrap();
        let (_, errors, _) = validate_archive(&bytes).unwrap();
        assert_eq!(errors[0].field, "file_checksums.files.skills/pdf/.hidden.md");
        assert_eq!(
            validate_archive_bytes(&bytes).unwrap_err().code(),
            ErrorCode::ManifestInvalid
        );
    }
}
