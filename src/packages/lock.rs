//! `.aam/aam-lock.yaml`: what a project (or the home folder, for global installs)
//! has installed, with a checksum for every byte aam wrote.
//!
//! Keys are sorted and the file is only rewritten when its content changes, so an
//! install that changes nothing leaves no diff.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorCode, Result};
use crate::scan::{ArtifactKind, Platform};

/// Where an installed package came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// A published version in a registry.
    Registry,
    /// Artifacts of a registered source, read at its indexed commit.
    Source,
    /// A package folder.
    Local,
    /// A `.aam` archive file.
    Archive,
}

impl Origin {
    /// Lowercase name, as in the lock file.
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Registry => "registry",
            Origin::Source => "source",
            Origin::Local => "local",
            Origin::Archive => "archive",
        }
    }
}

/// The lock file's path under a project (or home) root.
pub fn lock_path(root: &Path) -> PathBuf {
    root.join(".aam").join("aam-lock.yaml")
}

/// Current lock file layout.
pub const LOCKFILE_VERSION: u32 = 1;

/// The whole lock file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LockFile {
    /// Layout version.
    pub lockfile_version: u32,
    /// When the set of packages last changed, as an older aam recorded it:
    /// kept while the packages stay the same, dropped when they change (a
    /// timestamp made every two branches' installs conflict in a merge).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resolved_at: String,
    /// Installed packages by name.
    #[serde(default, deserialize_with = "unique_keys")]
    pub packages: BTreeMap<String, LockedPackage>,
}

impl Default for LockFile {
    fn default() -> Self {
        Self {
            lockfile_version: LOCKFILE_VERSION,
            resolved_at: String::new(),
            packages: BTreeMap::new(),
        }
    }
}

impl LockFile {
    /// The installed packages made from the artifact at `path` (of `kind`) of
    /// the source called `source`, with their names.
    pub fn made_from<'a>(
        &'a self,
        source: &'a str,
        kind: ArtifactKind,
        path: &'a str,
    ) -> impl Iterator<Item = (&'a str, &'a LockedPackage)> + 'a {
        self.packages
            .iter()
            .filter(move |(_, entry)| {
                entry.source == Origin::Source
                    && entry.source_name == source
                    && entry.artifacts.iter().any(|a| a.kind == kind && a.path == path)
            })
            .map(|(name, entry)| (name.as_str(), entry))
    }

    /// The installed package `given` names, with its name: a package name,
    /// or the `source/artifact` (by name or path) a source install was made
    /// from. `AAM_PACKAGE_NOT_INSTALLED` when none, naming the closest
    /// installed names, else what is installed.
    pub fn installed(&self, given: &str) -> Result<(&str, &LockedPackage)> {
        if let Some((name, entry)) = self.packages.get_key_value(given) {
            return Ok((name, entry));
        }
        let from_source = |(name, entry): &(&String, &LockedPackage)| {
            entry.source == Origin::Source
                && (entry.requested.as_deref() == Some(given)
                    || given
                        .strip_prefix(&format!("{}/", entry.source_name))
                        .is_some_and(|rest| rest == name.as_str() || entry.artifacts.iter().any(|a| a.path == rest)))
        };
        let mut found = self.packages.iter().filter(from_source);
        if let (Some((name, entry)), None) = (found.next(), found.next()) {
            return Ok((name, entry));
        }
        let names: Vec<&str> = self.packages.keys().map(String::as_str).collect();
        let wanted = given.rsplit('/').next().unwrap_or(given);
        let close: Vec<String> = names
            .iter()
            .filter(|n| strsim::osa_distance(wanted, n) <= 1 || strsim::jaro_winkler(wanted, n) >= 0.85)
            .map(|n| format!("`{n}`"))
            .collect();
        let hint = match (names.is_empty(), close.is_empty()) {
            (true, _) => "nothing is installed here; install with `aam install <package>`".to_string(),
            (false, false) => format!(
                "did you mean {}? (`aam list` shows what is installed)",
                close.join(", ")
            ),
            (false, true) if names.len() <= 10 => {
                let names: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
                format!("installed packages: {}", names.join(", "))
            }
            (false, true) => format!("`aam list` shows the {} installed packages", names.len()),
        };
        Err(Error::new(
            ErrorCode::PackageNotInstalled,
            format!("`{}` is not installed here", crate::error::quoted(given)),
        )
        .with_hint(hint))
    }
}

/// One installed package.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct LockedPackage {
    /// Installed version.
    pub version: String,
    /// `registry`, `source`, `local` (a folder) or `archive`.
    pub source: Origin,
    /// Registry name, source name, or path.
    pub source_name: String,
    /// Commit the files were read at (source installs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_commit: Option<String>,
    /// The source's repository URL, without credentials (source installs): where
    /// a restore on another machine fetches `source_commit` from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_url: Option<String>,
    /// blake3 of the package content (archive, or the files for source installs).
    pub checksum: String,
    /// Its dependencies: name to constraint.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "unique_keys"
    )]
    pub dependencies: BTreeMap<String, String>,
    /// Platforms it was deployed to.
    #[serde(default)]
    pub platforms: Vec<Platform>,
    /// What was asked for (`^1.2`, a source artifact...), for `outdated` and `upgrade`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested: Option<String>,
    /// Source artifacts it was made from, with the digest they had (source installs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<LockedArtifact>,
    /// Where each artifact went.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deployed: Vec<Deployment>,
    /// blake3 of every file written: the package copy and every deployed file;
    /// `FILE#name type` keys hold a section's content.
    #[serde(default, deserialize_with = "unique_keys")]
    pub file_checksums: BTreeMap<String, String>,
    /// Folders its install created (removed on uninstall when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub created_dirs: Vec<String>,
    /// The blocking audit findings in it that were let through
    /// (`--allow-finding`): upgrades, reinstalls and restores let these
    /// through again, not another finding of the same rule.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_findings: Vec<AllowedFinding>,
}

/// An audit finding an install let through, as its lock entry records it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum AllowedFinding {
    /// One finding: its rule, the file it is in (a repository path for a
    /// source artifact, else a path in the package) and its excerpt. A
    /// later version's new finding of the rule (a second `curl | sh`) is
    /// not covered.
    Finding {
        /// Rule id.
        rule: String,
        /// The file it is in.
        file: String,
        /// The excerpt `aam audit` shows.
        excerpt: String,
    },
    /// A bare rule id, as earlier versions of aam recorded: it covers that
    /// rule's findings only in a restore of the content the lock records.
    Rule(String),
}

impl AllowedFinding {
    /// Whether it lets through a finding of `rule` in `file` showing `excerpt`
    /// (a bare rule: any finding of it).
    pub fn covers(&self, rule: &str, file: &str, excerpt: &str) -> bool {
        match self {
            Self::Finding {
                rule: r,
                file: f,
                excerpt: e,
            } => r == rule && f == file && e == excerpt,
            Self::Rule(r) => r == rule,
        }
    }
}

impl LockedPackage {
    /// The targets it deploys to, each once, sorted: folders, files and
    /// `FILE#name type` sections.
    pub fn targets(&self) -> Vec<String> {
        let mut targets: Vec<String> = self.deployed.iter().map(|d| d.target.clone()).collect();
        targets.sort();
        targets.dedup();
        targets
    }
}

/// A source artifact a package was made from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct LockedArtifact {
    /// Artifact type.
    #[serde(rename = "type")]
    pub kind: ArtifactKind,
    /// Repository path.
    pub path: String,
    /// Its content digest in the catalog when installed.
    pub digest: String,
}

/// One artifact deployed to one platform.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Deployment {
    /// Platform.
    pub platform: Platform,
    /// Artifact type.
    #[serde(rename = "type")]
    pub kind: ArtifactKind,
    /// Artifact name.
    pub name: String,
    /// Where: a folder, a file, or `FILE#name type` for a section.
    pub target: String,
}

/// Reads the lock file under `root`; a missing one is empty. The file comes
/// with cloned repositories: it is never read through a link, is bounded before
/// parsing, and a parse error names a line, never the text it found.
pub fn read(root: &Path) -> Result<LockFile> {
    let path = lock_path(root);
    let invalid = |why: String| {
        Error::new(
            ErrorCode::LockInvalid,
            format!("the lock file `{}` is invalid: {why}", path.display()),
        )
        .with_hint("restore it from version control or a backup; or delete it, then run `aam adopt --all` (`-g` for the home folder's) to record the copies already in the agent folders, which `aam install` would refuse as files it did not write")
    };
    let bytes = match crate::paths::read_plain(&path, MAX_LOCK_BYTES as u64) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Ok(LockFile::default()),
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => return Err(invalid(e.to_string())),
        Err(e) => return Err(Error::io("read", &path, e)),
    };
    let text = String::from_utf8(bytes).map_err(|_| invalid("it is not UTF-8 text".to_string()))?;
    if text.trim().is_empty() {
        return Err(invalid("it is empty".to_string()));
    }
    crate::yaml::check(&text, MAX_LOCK_BYTES).map_err(|refusal| invalid(format!("it {refusal}")))?;
    let lock: LockFile = serde_yaml_ng::from_str(&text).map_err(|e| {
        // The parser's own words may quote the text; only ours, and the name
        // of a field the layout requires, are passed on.
        let said = e.to_string();
        let missing = said
            .split_once("missing field `")
            .and_then(|(_, rest)| rest.split_once('`'))
            .map(|(field, _)| field)
            .filter(|field| field.chars().all(|c| c.is_ascii_lowercase() || c == '_'));
        let why = match (said.contains(KEY_TWICE), missing) {
            (true, _) => KEY_TWICE.to_string(),
            (false, Some("lockfile_version")) => "it lacks its `lockfile_version`".to_string(),
            (false, Some(field)) => format!("an entry lacks its `{field}`"),
            (false, None) => "it does not have the lock file's layout".to_string(),
        };
        // A key given twice is reported where its mapping starts.
        let at = match why == KEY_TWICE {
            true => "in the mapping at line",
            false => "line",
        };
        invalid(match e.location() {
            Some(place) => format!("{why} ({at} {}, column {})", place.line(), place.column()),
            None => why,
        })
    })?;
    // A newer aam's layout read as this one's would be written back without
    // what this aam does not know.
    if lock.lockfile_version > LOCKFILE_VERSION {
        return Err(Error::new(
            ErrorCode::LockInvalid,
            format!(
                "the lock file `{}` has layout version {}, written by a newer aam (this one reads version {LOCKFILE_VERSION})",
                path.display(),
                lock.lockfile_version
            ),
        )
        .with_hint("upgrade aam to the version the project uses"));
    }
    Ok(lock)
}

/// What a key given twice is refused with (YAML itself keeps the last one).
const KEY_TWICE: &str = "a key is given twice";

/// Reads a map, refusing a key given twice: YAML would keep the last value, so
/// a reviewer reading the first would see another checksum than aam uses.
fn unique_keys<'de, D, V>(deserializer: D) -> std::result::Result<BTreeMap<String, V>, D::Error>
where
    D: serde::Deserializer<'de>,
    V: Deserialize<'de>,
{
    struct Unique<V>(std::marker::PhantomData<V>);
    impl<'de, V: Deserialize<'de>> serde::de::Visitor<'de> for Unique<V> {
        type Value = BTreeMap<String, V>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a map")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> std::result::Result<Self::Value, A::Error> {
            let mut out = BTreeMap::new();
            while let Some((key, value)) = map.next_entry::<String, V>()? {
                if out.insert(key, value).is_some() {
                    return Err(serde::de::Error::custom(KEY_TWICE));
                }
            }
            Ok(out)
        }
    }
    deserializer.deserialize_map(Unique(std::marker::PhantomData))
}

/// Largest lock file handed to the YAML parser, in bytes.
const MAX_LOCK_BYTES: usize = 64 * 1024 * 1024;

/// The lock file's text, keys sorted.
pub fn to_text(lock: &LockFile) -> String {
    serde_yaml_ng::to_string(lock).unwrap_or_default()
}

/// A section's key in `file_checksums` and `deployed`.
pub fn section_key(file: &str, name: &str, kind: ArtifactKind) -> String {
    format!("{file}#{name} {}", kind.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_with_sorted_keys() {
        let mut lock = LockFile {
            resolved_at: "2026-01-01T00:00:00Z".into(),
            ..Default::default()
        };
        for name in ["zeta", "alpha"] {
            lock.packages.insert(
                name.into(),
                LockedPackage {
                    version: "1.0.0".into(),
                    source: Origin::Registry,
                    source_name: "reg".into(),
                    source_commit: None,
                    source_url: None,
                    checksum: "c".into(),
                    dependencies: BTreeMap::new(),
                    platforms: vec![Platform::Claude],
                    requested: None,
                    artifacts: Vec::new(),
                    deployed: Vec::new(),
                    file_checksums: BTreeMap::from([("b".into(), "2".into()), ("a".into(), "1".into())]),
                    created_dirs: Vec::new(),
                    allowed_findings: Vec::new(),
                },
            );
        }
        let text = to_text(&lock);
        assert!(text.find("alpha").unwrap() < text.find("zeta").unwrap());
        assert!(text.find("a: '1'").unwrap() < text.find("b: '2'").unwrap(), "{text}");
        let dir = tempfile::tempdir().unwrap();
        crate::atomic::write_file(&lock_path(dir.path()), text.as_bytes()).unwrap();
        assert_eq!(read(dir.path()).unwrap(), lock);
        assert_eq!(read(&dir.path().join("none")).unwrap(), LockFile::default());
        let deep = format!("packages: {}", "[".repeat(100_000));
        crate::atomic::write_file(&lock_path(dir.path()), deep.as_bytes()).unwrap();
        assert_eq!(read(dir.path()).unwrap_err().code(), ErrorCode::LockInvalid);
        assert_eq!(section_key("AGENTS.md", "x", ArtifactKind::Agent), "AGENTS.md#x agent");
    }

    #[test]
    fn a_key_given_twice_is_refused_with_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let entry = |name: &str, files: &str| {
            format!(
                "  {name}:\n    version: 1.0.0\n    source: local\n    source_name: /x\n    checksum: c\n    \
                 file_checksums:\n{files}"
            )
        };
        let one = "      .claude/skills/a/SKILL.md: '1111'\n";
        let twice = "      .claude/skills/a/SKILL.md: '1111'\n      .claude/skills/a/SKILL.md: '2222'\n";
        let head = "lockfile_version: 1\nresolved_at: '2026-01-01T00:00:00Z'\npackages:\n";
        for text in [
            format!("{head}{}", entry("kit", twice)),
            format!("{head}{}{}", entry("kit", one), entry("kit", one)),
        ] {
            crate::atomic::write_file(&lock_path(dir.path()), text.as_bytes()).unwrap();
            let err = read(dir.path()).unwrap_err();
            assert_eq!(err.code(), ErrorCode::LockInvalid);
            assert!(
                err.message().contains("a key is given twice (in the mapping at line"),
                "{}",
                err.message()
            );
            assert!(!err.message().contains("2222"), "{}", err.message());
        }
        let single = format!("{head}{}", entry("kit", one));
        crate::atomic::write_file(&lock_path(dir.path()), single.as_bytes()).unwrap();
        assert_eq!(read(dir.path()).unwrap().packages["kit"].file_checksums.len(), 1);

        // A missing field is named; a newer layout is refused, not rewritten.
        let no_checksum = single.replace("    checksum: c\n", "");
        assert_ne!(no_checksum, single);
        crate::atomic::write_file(&lock_path(dir.path()), no_checksum.as_bytes()).unwrap();
        let err = read(dir.path()).unwrap_err();
        assert!(
            err.message().contains("an entry lacks its `checksum` (line"),
            "{}",
            err.message()
        );
        // A lock without its version, or empty, says so (it said "an entry
        // lacks its `lockfile_version`"), and the hint names `adopt`.
        for (text, said) in [
            (
                single.replace("lockfile_version: 1\n", ""),
                "it lacks its `lockfile_version`",
            ),
            (" \n".to_string(), "it is empty"),
        ] {
            crate::atomic::write_file(&lock_path(dir.path()), text.as_bytes()).unwrap();
            let err = read(dir.path()).unwrap_err();
            assert!(err.message().contains(said), "{}", err.message());
            assert!(err.hint().is_some_and(|h| h.contains("aam adopt --all")), "{err:?}");
        }
        let newer = single.replace("lockfile_version: 1", "lockfile_version: 2");
        crate::atomic::write_file(&lock_path(dir.path()), newer.as_bytes()).unwrap();
        let err = read(dir.path()).unwrap_err();
        assert_eq!(err.code(), ErrorCode::LockInvalid);
        assert!(
            err.message().contains("layout version 2, written by a newer aam"),
            "{}",
            err.message()
        );
    }
}
