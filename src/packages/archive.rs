//! `.aam` archives: reproducible gzip tarballs, and their safe extraction.
//!
//! Packing sorts entries and fixes every piece of metadata (times, owners, modes,
//! the gzip header), so the same files always give the same bytes. Unpacking
//! refuses absolute paths, `..`, links and special files, and sizes over the
//! limits below, naming the offending entry; nothing is written until the whole
//! archive has been checked.

use std::io::{Read, Write};
use std::path::Path;

use super::layout::PackageFile;
use super::manifest::MANIFEST_FILE;
use crate::error::{Error, ErrorCode, Result};

/// Largest archive accepted.
pub const MAX_ARCHIVE_BYTES: u64 = 64 * 1024 * 1024;
/// Largest total of unpacked file sizes accepted.
pub const MAX_UNPACKED_BYTES: u64 = 256 * 1024 * 1024;
/// Most entries accepted.
pub const MAX_ENTRIES: usize = 20_000;
/// Largest header extension accepted (a GNU long name or link, a PAX record
/// set): paths are at most 4096 bytes, and the tar reader holds these whole.
const MAX_EXTENSION_BYTES: u64 = 64 * 1024;

/// Builds the archive of `files`, with `manifest` as the content of `aam.yaml`.
pub fn pack(files: &[PackageFile], manifest: &str) -> Result<Vec<u8>> {
    let gzip = flate2::GzBuilder::new()
        .mtime(0)
        .operating_system(255)
        .write(Vec::new(), flate2::Compression::default());
    let mut tar = tar::Builder::new(gzip);
    tar.mode(tar::HeaderMode::Deterministic);
    let mut entries: Vec<(&str, Vec<u8>, bool)> = vec![(MANIFEST_FILE, manifest.as_bytes().to_vec(), false)];
    for file in files.iter().filter(|f| f.path != MANIFEST_FILE) {
        let bytes = std::fs::read(&file.source).map_err(|e| Error::io("read", &file.source, e))?;
        entries.push((&file.path, bytes, file.executable));
    }
    entries.sort_by(|a, b| a.0.cmp(b.0));
    for (path, bytes, executable) in entries {
        let mut header = tar::Header::new_ustar();
        header.set_size(bytes.len() as u64);
        header.set_mode(if executable { 0o755 } else { 0o644 });
        header.set_mtime(0);
        header.set_uid(0);
        header.set_gid(0);
        header.set_entry_type(tar::EntryType::Regular);
        tar.append_data(&mut header, path, bytes.as_slice())
            .map_err(|e| archive_error(format!("cannot add `{path}` to the archive: {e}")))?;
    }
    let gzip = tar
        .into_inner()
        .map_err(|e| archive_error(format!("cannot finish the archive: {e}")))?;
    let bytes = gzip
        .finish()
        .map_err(|e| archive_error(format!("cannot compress the archive: {e}")))?;
    if bytes.len() as u64 > MAX_ARCHIVE_BYTES {
        return Err(archive_error(format!(
            "the archive is {} bytes, over the {} MiB limit",
            bytes.len(),
            MAX_ARCHIVE_BYTES / 1024 / 1024
        )));
    }
    Ok(bytes)
}

/// A checked archive entry.
struct Entry {
    path: String,
    bytes: Vec<u8>,
    executable: bool,
}

/// Reads and checks every entry of an archive without writing anything.
fn read_entries(archive: &[u8]) -> Result<Vec<Entry>> {
    if archive.len() as u64 > MAX_ARCHIVE_BYTES {
        return Err(archive_error(format!(
            "the archive is {} bytes, over the {} MiB limit",
            archive.len(),
            MAX_ARCHIVE_BYTES / 1024 / 1024
        )));
    }
    check_headers(archive)?;
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(archive));
    let mut entries = Vec::new();
    let iter = tar
        .entries()
        .map_err(|e| archive_error(format!("not a gzip tar archive: {e}")))?;
    for entry in iter {
        let mut entry = entry.map_err(|e| archive_error(format!("damaged archive: {e}")))?;
        let raw = entry.path_bytes().into_owned();
        let path = String::from_utf8(raw).map_err(|_| archive_error("an entry name is not UTF-8".to_string()))?;
        let path = path.trim_start_matches("./").to_string();
        // Folder entries end with `/`; their parts follow the same rules.
        check_entry_path(path.trim_end_matches('/'))?;
        match entry.header().entry_type() {
            tar::EntryType::Regular | tar::EntryType::Continuous if path.ends_with('/') => {
                return Err(entry_error(&path, "is a file named like a folder"));
            }
            tar::EntryType::Regular | tar::EntryType::Continuous => {}
            tar::EntryType::Directory => continue,
            tar::EntryType::Symlink | tar::EntryType::Link => {
                return Err(entry_error(&path, "is a link; packages hold regular files only"));
            }
            other => return Err(entry_error(&path, &format!("has unsupported type {other:?}"))),
        }
        let size = entry
            .header()
            .size()
            .map_err(|_| entry_error(&path, "has an unreadable size"))?;
        // `check_headers` kept the total of every declared size in bounds.
        if entries.len() >= MAX_ENTRIES {
            return Err(entry_error(
                &path,
                &format!("is past the limit of {MAX_ENTRIES} entries"),
            ));
        }
        let mode = entry.header().mode().unwrap_or(0o644);
        let mut bytes = Vec::with_capacity(size as usize);
        (&mut entry)
            .take(size + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| entry_error(&path, &format!("cannot be read: {e}")))?;
        if bytes.len() as u64 != size {
            return Err(entry_error(&path, "does not match its recorded size"));
        }
        if entries.iter().any(|e: &Entry| e.path == path) {
            return Err(entry_error(&path, "appears twice"));
        }
        entries.push(Entry {
            path,
            bytes,
            executable: mode & 0o111 != 0,
        });
    }
    if !entries.iter().any(|e| e.path == MANIFEST_FILE) {
        return Err(archive_error(format!("the archive has no `{MANIFEST_FILE}`")));
    }
    // A file cannot also be a folder holding another entry.
    let files: std::collections::HashSet<&str> = entries.iter().map(|e| e.path.as_str()).collect();
    for entry in &entries {
        let mut folder = entry.path.as_str();
        while let Some((parent, _)) = folder.rsplit_once('/') {
            if files.contains(parent) {
                return Err(entry_error(
                    &entry.path,
                    &format!("lies inside `{parent}`, which is a file"),
                ));
            }
            folder = parent;
        }
    }
    Ok(entries)
}

/// Checks the sizes every header declares before anything is read: the tar
/// reader holds a header extension (GNU long name or link, PAX records) whole
/// in memory, so a small archive declaring one of gigabytes ran aam out of
/// memory. Extensions over [`MAX_EXTENSION_BYTES`], more than twice
/// [`MAX_ENTRIES`] headers, or sizes past [`MAX_UNPACKED_BYTES`] are refused;
/// nothing but headers is kept.
fn check_headers(archive: &[u8]) -> Result<()> {
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(archive));
    let headers = tar
        .entries()
        .map_err(|e| archive_error(format!("not a gzip tar archive: {e}")))?
        .raw(true);
    let mut total = 0u64;
    for (count, entry) in headers.enumerate() {
        let entry = entry.map_err(|e| archive_error(format!("damaged archive: {e}")))?;
        if count >= 2 * MAX_ENTRIES {
            return Err(archive_error(format!("the archive has over {MAX_ENTRIES} entries")));
        }
        let header = entry.header();
        let size = header
            .entry_size()
            .map_err(|_| archive_error("an entry has an unreadable size".to_string()))?;
        let kind = header.entry_type();
        if (kind.is_gnu_longname()
            || kind.is_gnu_longlink()
            || kind.is_pax_local_extensions()
            || kind.is_pax_global_extensions())
            && size > MAX_EXTENSION_BYTES
        {
            return Err(archive_error(format!(
                "a header extension ({kind:?}) declares {size} bytes, over the {} KiB limit",
                MAX_EXTENSION_BYTES / 1024
            )));
        }
        total = total.saturating_add(size);
        if total > MAX_UNPACKED_BYTES {
            return Err(entry_error(
                &String::from_utf8_lossy(&entry.path_bytes()),
                &format!(
                    "takes the unpacked size over the {} MiB limit",
                    MAX_UNPACKED_BYTES / 1024 / 1024
                ),
            ));
        }
    }
    Ok(())
}

/// Every file of a checked archive: path, bytes, executable.
pub fn files(archive: &[u8]) -> Result<Vec<(String, Vec<u8>, bool)>> {
    Ok(read_entries(archive)?
        .into_iter()
        .map(|e| (e.path, e.bytes, e.executable))
        .collect())
}

/// The text of `aam.yaml` inside an archive (after checking every entry).
pub fn manifest_text(archive: &[u8]) -> Result<String> {
    let entries = read_entries(archive)?;
    let manifest = entries
        .into_iter()
        .find(|e| e.path == MANIFEST_FILE)
        .map(|e| e.bytes)
        .unwrap_or_default();
    String::from_utf8(manifest).map_err(|_| archive_error(format!("`{MANIFEST_FILE}` is not UTF-8")))
}

/// Refuses to write an archive at `path` (shown as `shown`) over anything but
/// an earlier `.aam` archive or an empty file: a folder, a link, or a file of
/// the user's (`--output aam.yaml` replaced the package's own manifest, and
/// over MCP an agent names the output).
pub fn check_replaceable(path: &Path, shown: &str) -> Result<()> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io("read", path, e)),
    };
    if meta.is_dir() {
        return Err(Error::invalid_argument(format!("`{shown}` is a folder"))
            .with_hint(format!("name a file in it, such as `{shown}/package.aam`")));
    }
    let earlier = meta.is_file()
        && (meta.len() == 0
            || (meta.len() <= MAX_ARCHIVE_BYTES && {
                let bytes = std::fs::read(path).map_err(|e| Error::io("read", path, e))?;
                read_entries(&bytes).is_ok_and(|entries| entries.iter().any(|e| e.path == MANIFEST_FILE))
            }));
    if !earlier {
        return Err(Error::new(
            ErrorCode::Conflict,
            format!("`{shown}` exists and is not an earlier package archive: packing replaces only an archive"),
        )
        .with_hint("name another file, or remove that one first"));
    }
    Ok(())
}

/// Writes an archive file (atomically) and reports its size and blake3.
pub fn write_archive(path: &Path, bytes: &[u8]) -> Result<(u64, String)> {
    crate::atomic::write_file(path, bytes)?;
    let mut hasher = blake3::Hasher::new();
    hasher.write_all(bytes).map_err(|e| Error::io("read", path, e))?;
    Ok((bytes.len() as u64, hasher.finalize().to_hex().to_string()))
}

fn check_entry_path(path: &str) -> Result<()> {
    crate::paths::check_relative(path).map_err(|why| entry_error(path, &format!("is refused: {why}")))
}

fn archive_error(message: String) -> Error {
    Error::new(ErrorCode::ArchiveInvalid, message)
        .with_hint("rebuild the archive with `aam pkg pack`, or ask its author for a clean one")
}

fn entry_error(path: &str, what: &str) -> Error {
    archive_error(format!("archive entry `{}` {what}", crate::error::quoted(path)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hostile(name: &str, kind: tar::EntryType, link: Option<&str>) -> Vec<u8> {
        let gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        let mut tar = tar::Builder::new(gzip);
        let mut manifest = tar::Header::new_gnu();
        manifest.set_size(2);
        manifest.set_mode(0o644);
        manifest.set_cksum();
        tar.append_data(&mut manifest, MANIFEST_FILE, &b"{}"[..]).unwrap();
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(kind);
        header.set_size(0);
        header.set_mode(0o644);
        {
            // Write the raw name so the tar crate's own path checks cannot clean it up.
            let raw = header.as_old_mut();
            raw.name[..name.len()].copy_from_slice(name.as_bytes());
        }
        if let Some(target) = link {
            header.set_link_name(target).unwrap();
        }
        header.set_cksum();
        tar.append(&header, &[][..]).unwrap();
        tar.into_inner().unwrap().finish().unwrap()
    }

    /// An archive whose second entry has a GNU long name of `length` bytes.
    fn long_named(length: usize) -> Vec<u8> {
        let gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        let mut tar = tar::Builder::new(gzip);
        let mut manifest = tar::Header::new_gnu();
        manifest.set_size(2);
        manifest.set_mode(0o644);
        manifest.set_cksum();
        tar.append_data(&mut manifest, MANIFEST_FILE, &b"{}"[..]).unwrap();
        let mut long = tar::Header::new_gnu();
        long.set_entry_type(tar::EntryType::GNULongName);
        long.set_size(length as u64);
        {
            let raw = long.as_old_mut();
            raw.name[..13].copy_from_slice(b"././@LongLink");
        }
        long.set_cksum();
        tar.append(&long, vec![b'a'; length].as_slice()).unwrap();
        let mut file = tar::Header::new_gnu();
        file.set_size(0);
        file.set_mode(0o644);
        file.set_cksum();
        tar.append(&file, &[][..]).unwrap();
        tar.into_inner().unwrap().finish().unwrap()
    }

    #[test]
    fn header_extensions_are_refused_by_their_declared_size_and_names_are_shown_cut() {
        // A long name of megabytes is refused before the tar reader holds it.
        let err = files(&long_named(1024 * 1024)).unwrap_err();
        assert_eq!(err.code(), ErrorCode::ArchiveInvalid);
        assert!(err.message().contains("header extension"), "{}", err.message());
        // One within the limit is read, refused for its length, and shown cut.
        let err = files(&long_named(5000)).unwrap_err();
        assert!(err.message().contains("4096 bytes"), "{}", err.message());
        assert!(err.message().len() < 400, "{}", err.message());
        // A name no file system takes is refused before anything is written.
        let err = files(&long_named(300)).unwrap_err();
        assert_eq!(err.code(), ErrorCode::ArchiveInvalid);
        assert!(err.message().contains("longer than 255 bytes"), "{}", err.message());
    }

    #[test]
    fn a_file_that_is_also_a_folder_is_refused() {
        let archive = |paths: &[&str]| {
            let gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            let mut tar = tar::Builder::new(gzip);
            for path in std::iter::once(&MANIFEST_FILE).chain(paths) {
                let mut header = tar::Header::new_gnu();
                header.set_size(2);
                header.set_mode(0o644);
                {
                    let raw = header.as_old_mut();
                    raw.name[..path.len()].copy_from_slice(path.as_bytes());
                }
                header.set_cksum();
                tar.append(&header, &b"{}"[..]).unwrap();
            }
            tar.into_inner().unwrap().finish().unwrap()
        };
        for paths in [&["skills/kit/a", "skills/kit/a/b"][..], &["skills/kit/SKILL.md/"]] {
            let err = files(&archive(paths)).unwrap_err();
            assert_eq!(err.code(), ErrorCode::ArchiveInvalid, "{paths:?}: {}", err.message());
        }
    }

    #[test]
    fn hostile_archives_are_refused_naming_the_entry() {
        let cases = [
            hostile("/etc/passwd", tar::EntryType::Regular, None),
            hostile("../escape.md", tar::EntryType::Regular, None),
            hostile("skills/../../x", tar::EntryType::Regular, None),
            hostile("link.md", tar::EntryType::Symlink, Some("/etc/passwd")),
            hostile("hard.md", tar::EntryType::Link, Some("aam.yaml")),
            hostile("dev", tar::EntryType::Char, None),
            hostile(".git/hooks/pre-commit", tar::EntryType::Regular, None),
            hostile("skills/x/.Git/config", tar::EntryType::Regular, None),
        ];
        for archive in cases {
            let err = files(&archive).unwrap_err();
            assert_eq!(err.code(), ErrorCode::ArchiveInvalid);
            assert!(err.message().contains("archive entry `"), "{}", err.message());
        }
        // A line break in a name is shown escaped: it cannot forge a line.
        let forged = hostile("x\nhint: run this/../../y", tar::EntryType::Regular, None);
        let err = files(&forged).unwrap_err();
        assert!(
            !err.message().contains('\n') && err.message().contains("x\\nhint"),
            "{}",
            err.message()
        );
        let err = files(b"not an archive").unwrap_err();
        assert_eq!(err.code(), ErrorCode::ArchiveInvalid);
    }

    #[test]
    fn oversized_entries_are_refused_before_reading_them() {
        let gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        let mut tar = tar::Builder::new(gzip);
        let mut header = tar::Header::new_gnu();
        header.set_size(MAX_UNPACKED_BYTES + 1);
        header.set_mode(0o644);
        header.set_path("bomb.bin").unwrap();
        header.set_cksum();
        // Only the header: the claimed size alone must stop extraction.
        tar.get_mut().write_all(header.as_bytes()).unwrap();
        let bytes = tar.into_inner().unwrap().finish().unwrap();
        let err = files(&bytes).unwrap_err();
        assert!(
            err.message()
                .contains("archive entry `bomb.bin` takes the unpacked size over"),
            "{}",
            err.message()
        );
    }

    #[test]
    fn packing_is_reproducible_and_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("skills/a")).unwrap();
        std::fs::write(dir.path().join("skills/a/SKILL.md"), "# a\n").unwrap();
        std::fs::write(dir.path().join("skills/a/run.sh"), "echo\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            dir.path().join("skills/a/run.sh"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        let files = super::super::layout::package_files(dir.path()).unwrap();
        let one = pack(&files, "name: x\n").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(1100));
        std::fs::write(dir.path().join("skills/a/SKILL.md"), "# a\n").unwrap();
        let two = pack(&super::super::layout::package_files(dir.path()).unwrap(), "name: x\n").unwrap();
        assert_eq!(one, two, "same input, same bytes");
        assert_eq!(manifest_text(&one).unwrap(), "name: x\n");
        let read: Vec<(String, bool)> = super::files(&one)
            .unwrap()
            .into_iter()
            .map(|(path, _, x)| (path, x))
            .collect();
        let expected = [
            ("aam.yaml", false),
            ("skills/a/SKILL.md", false),
            ("skills/a/run.sh", true),
        ];
        assert_eq!(read, expected.map(|(path, x)| (path.to_string(), x)));
    }
}
