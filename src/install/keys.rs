//! The one check every path named by a lock file, a manifest, an archive or a
//! journal goes through before anything reads, hashes, writes or deletes it.
//!
//! A *key* is how the lock file names a file aam wrote: a `/`-separated path
//! relative to the project root (or, with a `~/` prefix, to the home folder),
//! or `FILE#name type` for a section inside a shared file. A key is accepted
//! only when it is a plain relative path (no `..`, no `.`, no empty, absolute,
//! `~user`, drive-letter, backslash, NUL or control-character parts) that lies
//! strictly inside a folder the agent table (`crate::agents`) owns
//! (`.aam/packages/`, `.claude/skills/`, `.agents/skills/`, `~/.codex/prompts/`
//! ...), or names one of the shared files sections live in. Home keys (`~/...`) are accepted in a project lock
//! only where a project install really writes to the home folder (Codex
//! prompts). Links are checked separately, against the real file system, by
//! [`super::Roots::resolve`]. The part-by-part rules are [`crate::paths`]'s,
//! shared with archive entries.

use std::sync::LazyLock;

use crate::deploy::{self, Location, Target};
use crate::packages::manifest::check_artifact_name;
use crate::scan::{ArtifactKind, Platform};

/// Where installed package copies live, relative to the root.
pub const PACKAGES_DIR: &str = ".aam/packages";

/// The lock file's key, relative to the root.
pub const LOCK_KEY: &str = ".aam/aam-lock.yaml";

/// A key that passed the check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckedKey {
    /// A whole file.
    File(Location),
    /// A section of a shared file.
    Section {
        /// The shared file.
        file: Location,
        /// Section name.
        name: String,
        /// Section type.
        kind: ArtifactKind,
    },
}

impl CheckedKey {
    /// The file it lives in.
    pub fn file(&self) -> &Location {
        match self {
            CheckedKey::File(location) | CheckedKey::Section { file: location, .. } => location,
        }
    }
}

/// Why a key was refused, in words (the caller names the entry).
pub type Refusal = String;

/// Checks a lock key for an install whose root is the project (`global` false)
/// or the home folder (`global` true).
pub fn check(key: &str, global: bool) -> Result<CheckedKey, Refusal> {
    // A `#` names a section only after a shared file; elsewhere it is part of a file name.
    let section = key
        .split_once('#')
        .filter(|(file, _)| plain(file, global).is_ok_and(|l| shared_files(global).contains(&l)));
    match section {
        Some((file, section)) => {
            let location = plain(file, global)?;
            let (name, kind) = section
                .rsplit_once(' ')
                .ok_or_else(|| "a section key must read `FILE#name type`".to_string())?;
            let kind = ArtifactKind::parse(kind)
                .filter(|k| k.as_str() == kind)
                .ok_or_else(|| format!("`{kind}` is not an artifact type"))?;
            check_artifact_name(name)?;
            Ok(CheckedKey::Section {
                file: location,
                name: name.to_string(),
                kind,
            })
        }
        None => {
            let location = plain(key, global)?;
            let inside = owned_folders(global)
                .iter()
                .any(|folder| strictly_inside(&location, folder));
            if inside {
                Ok(CheckedKey::File(location))
            } else {
                Err("it is not inside a folder aam installs into".to_string())
            }
        }
    }
}

/// Checks a path aam writes as a whole file during an install: a key, a
/// shared file, or the lock file itself.
pub fn check_file(key: &str, global: bool) -> Result<Location, Refusal> {
    if key == LOCK_KEY {
        return Ok(Location::Project(LOCK_KEY.to_string()));
    }
    let location = plain(key, global)?;
    if shared_files(global).contains(&location) {
        return Ok(location);
    }
    match check(key, global)? {
        CheckedKey::File(location) => Ok(location),
        CheckedKey::Section { .. } => Err("a section is not a file".to_string()),
    }
}

/// Whether aam manages the file at `key` (relative to a project root, or to
/// the home folder when `global`): anything under `.aam/`, a file inside a
/// folder installs write into, a shared file sections live in. What other
/// commands make for the user (exports, archives, new packages) never lands
/// there, where it would replace an installed file, its edits or the lock.
pub fn managed(key: &str, global: bool) -> bool {
    key == ".aam" || key.starts_with(".aam/") || check_file(key, global).is_ok()
}

/// Files agents read as instructions wherever they are in a project.
const INSTRUCTION_FILE_NAMES: &[&str] = &["agents.md", "claude.md", "gemini.md"];

/// Files at a project's root agents read as rules or instructions.
const ROOT_INSTRUCTION_FILES: &[&str] = &[
    ".cursorrules",
    ".windsurfrules",
    ".clinerules",
    ".github/copilot-instructions.md",
];

/// Whether a file at `key` (as [`managed`] takes it) is in an agent's
/// territory, where a file aam makes for the user (an export, an archive)
/// would be read by an agent as its settings or instructions, or replace
/// what installs keep: what [`managed`] says, and anything inside an agent's
/// own folder (`.claude/settings.json`, `.cursor/...`), an instruction file
/// (`AGENTS.md`, `CLAUDE.md` in any folder; `.cursorrules` at the root). Case
/// does not matter: on a file system that ignores it (macOS's), `.Claude` is
/// `.claude`.
pub fn agent_territory(key: &str, global: bool) -> bool {
    let key = key.to_lowercase();
    if managed(&key, global) {
        return true;
    }
    let (rest, in_home) = match key.strip_prefix("~/") {
        Some(rest) => (rest, true),
        None => (key.as_str(), false),
    };
    let top = rest.split('/').next().unwrap_or_default();
    // An agent's own dot-folder, but `.github`, which holds more than agents' files.
    let agent_folder = top.starts_with('.')
        && top != ".github"
        && owned_folders(global).iter().any(|folder| match folder {
            Location::Project(p) => (global || !in_home) && p.split('/').next() == Some(top),
            Location::Home(p) => (global || in_home) && p.split('/').next() == Some(top),
        });
    let name = rest.rsplit('/').next().unwrap_or_default();
    agent_folder || ROOT_INSTRUCTION_FILES.contains(&rest) || INSTRUCTION_FILE_NAMES.contains(&name)
}

/// Checks a folder key aam may remove when it is empty: a plain relative path
/// on the way to, or inside, a folder the layouts own (`.claude`,
/// `.claude/skills/x`, `~/.codex` ...).
pub fn check_dir(key: &str, global: bool) -> Result<Location, Refusal> {
    let location = match key.strip_prefix("~/") {
        Some(rest) => {
            crate::paths::check_relative(rest)?;
            Location::Home(rest.to_string())
        }
        None => {
            crate::paths::check_relative(key)?;
            Location::Project(key.to_string())
        }
    };
    let related = |a: &str, b: &str| a == b || a.starts_with(&format!("{b}/")) || b.starts_with(&format!("{a}/"));
    // The folders aam installs into, and those holding the shared files
    // (`~/.config/amp` for amp's `AGENTS.md`); in a global install the root is
    // the home folder, so `~/x` and `x` are one place.
    let shared_folders = shared_files(global).iter().filter_map(|file| match file {
        Location::Project(p) => p.rsplit_once('/').map(|(dir, _)| Location::Project(dir.to_string())),
        Location::Home(p) => p.rsplit_once('/').map(|(dir, _)| Location::Home(dir.to_string())),
    });
    let ok = owned_folders(global)
        .iter()
        .cloned()
        .chain(shared_folders)
        .any(|folder| match (&location, &folder) {
            (Location::Project(d), Location::Project(f)) | (Location::Home(d), Location::Home(f)) => related(d, f),
            (Location::Home(d), Location::Project(f)) | (Location::Project(d), Location::Home(f)) => {
                global && related(d, f)
            }
        });
    if ok {
        Ok(location)
    } else {
        Err("it is not a folder on the way to where aam installs".to_string())
    }
}

/// The key of a package's copy folder.
pub fn copy_dir(package: &str) -> String {
    format!("{PACKAGES_DIR}/{package}")
}

/// A `/`-separated relative path with an optional `~/` prefix, part by part.
fn plain(key: &str, global: bool) -> Result<Location, Refusal> {
    let (location, rest) = match key.strip_prefix("~/") {
        Some(rest) => (Location::Home(rest.to_string()), rest),
        None => (Location::Project(key.to_string()), key),
    };
    crate::paths::check_relative(rest)?;
    if matches!(location, Location::Home(_)) && !global && !home_allowed_in_project(&location) {
        return Err("a project install never writes there in the home folder".to_string());
    }
    Ok(location)
}

/// Whether `location` is one of the home-folder places a project install writes.
fn home_allowed_in_project(location: &Location) -> bool {
    owned_folders(false)
        .iter()
        .filter(|f| matches!(f, Location::Home(_)))
        .any(|folder| strictly_inside(location, folder))
}

fn strictly_inside(location: &Location, folder: &Location) -> bool {
    match (location, folder) {
        (Location::Project(p), Location::Project(f)) | (Location::Home(p), Location::Home(f)) => {
            p.strip_prefix(f.as_str()).is_some_and(|rest| rest.starts_with('/'))
        }
        _ => false,
    }
}

/// Every folder the agent table deploys into (for project installs, or for
/// `global` ones), plus the package copies' folder: exactly these, nothing else.
pub fn owned_folders(global: bool) -> &'static [Location] {
    static PROJECT: LazyLock<Vec<Location>> = LazyLock::new(|| table_folders(false));
    static GLOBAL: LazyLock<Vec<Location>> = LazyLock::new(|| table_folders(true));
    if global { &GLOBAL } else { &PROJECT }
}

/// The shared files sections live in (`CLAUDE.md`, `AGENTS.md`, `GEMINI.md` ...), as the agent table says.
pub fn shared_files(global: bool) -> &'static [Location] {
    static PROJECT: LazyLock<Vec<Location>> = LazyLock::new(|| table_shared_files(false));
    static GLOBAL: LazyLock<Vec<Location>> = LazyLock::new(|| table_shared_files(true));
    if global { &GLOBAL } else { &PROJECT }
}

/// Where the agent table deploys an artifact named `x`, on every platform,
/// for every type: where it goes now, and where earlier versions of aam put
/// it ([`crate::agents::FORMER_PLACES`]: lock files still record those).
fn table_targets(global: bool) -> impl Iterator<Item = Target> {
    ArtifactKind::ALL.into_iter().flat_map(move |kind| {
        Platform::ALL.iter().flat_map(move |&platform| {
            [
                deploy::target(kind, "x", platform, global),
                deploy::former_target(kind, "x", platform, global),
            ]
            .into_iter()
            .flatten()
        })
    })
}

/// [`owned_folders`], read from the agent table.
fn table_folders(global: bool) -> Vec<Location> {
    let mut out = vec![Location::Project(PACKAGES_DIR.to_string())];
    for target in table_targets(global) {
        let location = match target {
            Target::Dir(location) | Target::File(location) => location,
            Target::Section { .. } => continue,
        };
        let parent = |p: &str| p.rsplit_once('/').map(|(dir, _)| dir.to_string());
        let folder = match &location {
            Location::Project(p) => parent(p).map(Location::Project),
            Location::Home(p) => parent(p).map(Location::Home),
        };
        if let Some(folder) = folder
            && !out.contains(&folder)
        {
            out.push(folder);
        }
    }
    out
}

/// [`shared_files`], read from the agent table.
fn table_shared_files(global: bool) -> Vec<Location> {
    let mut out = Vec::new();
    for target in table_targets(global) {
        if let Target::Section { file, .. } = target
            && !out.contains(&file)
        {
            out.push(file);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[test]
    fn folders_on_the_way_to_shared_files_are_aams_to_make() {
        // amp keeps its global `AGENTS.md` in `~/.config/amp`: a killed global
        // install's journal naming that folder must be usable by the next command.
        assert!(check_dir("~/.config/amp", true).is_ok());
        assert!(check_dir("~/.ssh", true).is_err());
        assert!(check_dir("src", false).is_err());
    }

    #[rstest]
    #[case(".claude/skills/pdf/SKILL.md")]
    #[case(".aam/packages/kit/aam.yaml")]
    #[case(".aam/packages/@scope/kit/skills/x/SKILL.md")]
    #[case(".cursor/rules/style.mdc")]
    #[case(".github/instructions/rs.instructions.md")]
    #[case("~/.codex/prompts/review.md")]
    #[case("CLAUDE.md#style instruction")]
    #[case(".claude/skills/x/notes#1.md")]
    #[case("AGENTS.md#helper agent")]
    #[case(".codex/agents/helper.toml")]
    // Where earlier versions of aam put Codex skills: lock files record it.
    #[case(".codex/skills/pdf/SKILL.md")]
    fn project_keys_that_are_fine(#[case] key: &str) {
        assert!(check(key, false).is_ok(), "{key}: {:?}", check(key, false));
    }

    #[rstest]
    #[case("../outside/x", "`..`")]
    #[case(".claude/skills/../../../etc/passwd", "`..`")]
    #[case(".claude/skills/./x", "`.`")]
    #[case("/etc/passwd", "absolute")]
    #[case("~/.profile", "home folder")]
    #[case("~/.ssh/id_rsa", "home folder")]
    #[case("~root/.profile", "`~`")]
    #[case("~", "`~`")]
    #[case("C:/Windows/x", "`:`")]
    #[case(".claude/skills/C:x", "`:`")]
    #[case(".claude\\skills\\x", "backslash")]
    #[case(".claude/skills/a\0b", "control")]
    #[case(".claude/skills/a\nb", "control")]
    #[case(".claude/skills//x", "empty")]
    #[case(".claude/skills/x/.git/hooks/pre-commit", "`.git`")]
    #[case(".aam/packages/kit/.GIT/config", "`.git`")]
    #[case("", "empty")]
    #[case(".claude/skills", "not inside")]
    #[case(".claude/settings.json", "not inside")]
    #[case("src/main.rs", "not inside")]
    #[case(".git/config", "`.git`")]
    #[case(".aam/aam-lock.yaml", "not inside")]
    #[case("README.md#x instruction", "not inside")]
    #[case("CLAUDE.md.bak#x instruction", "not inside")]
    #[case("../CLAUDE.md#x instruction", "`..`")]
    #[case("CLAUDE.md#x", "FILE#name type")]
    #[case("CLAUDE.md#x potion", "not an artifact type")]
    #[case("CLAUDE.md#../x instruction", "artifact name")]
    #[case("CLAUDE.md#x --> instruction", "artifact name")]
    fn hostile_project_keys_are_refused(#[case] key: &str, #[case] why: &str) {
        let refusal = check(key, false).expect_err(key);
        assert!(refusal.contains(why), "{key}: {refusal}");
    }

    /// What other commands never write over: aam's folder, files in agents'
    /// folders and shared section files, in a project or the home folder.
    #[test]
    fn managed_places_in_a_project_and_the_home_folder() {
        for key in [".aam", ".aam/aam-lock.yaml", ".claude/skills/x/SKILL.md", "AGENTS.md"] {
            assert!(managed(key, false), "{key}");
        }
        for key in ["~/.claude/skills/x/SKILL.md", "~/.codex/prompts/x.md"] {
            assert!(managed(key, true), "{key}");
        }
        for key in ["audit.csv", "kit/skills/x/SKILL.md", ".claude/notes.md"] {
            assert!(!managed(key, false), "{key}");
        }
        assert!(!managed("~/notes/x.md", true));
    }

    /// Where a file made for the user would be read by an agent: more than
    /// installs own, and in any case.
    #[test]
    fn agent_territory_holds_agents_folders_and_instruction_files_in_any_case() {
        for key in [
            ".AAM/x.db",
            ".Claude/Skills/x.db",
            ".claude/x.db",
            ".claude/settings.json",
            ".cursor/x.csv",
            ".cursorrules",
            ".github/copilot-instructions.md",
            "docs/CLAUDE.md",
            "AGENTS.md",
        ] {
            assert!(agent_territory(key, false), "{key}");
        }
        for key in ["~/.claude/x.db", "~/.Codex/notes.csv"] {
            assert!(agent_territory(key, true), "{key}");
        }
        for key in [
            "audit.csv",
            "exports/.cursorrules-notes",
            ".github/workflows/x.csv",
            "docs/agents.csv",
        ] {
            assert!(!agent_territory(key, false), "{key}");
        }
    }

    #[test]
    fn global_installs_own_home_folders_only() {
        assert!(check("~/.claude/skills/x/SKILL.md", true).is_ok());
        assert!(check("~/.claude/CLAUDE.md#x instruction", true).is_ok());
        assert!(check(".aam/packages/kit/aam.yaml", true).is_ok());
        assert!(check("~/.profile", true).is_err());
        assert!(check("~/.claude/settings.json", true).is_err());
        assert!(
            check("CLAUDE.md#x instruction", true).is_err(),
            "the project file is not the home one"
        );
    }

    #[test]
    fn folders_on_the_way_may_be_pruned() {
        for ok in [
            ".claude",
            ".claude/skills",
            ".claude/skills/x/scripts",
            ".aam",
            "~/.codex",
            ".github",
        ] {
            assert!(check_dir(ok, false).is_ok(), "{ok}");
        }
        for bad in ["src", "..", ".claude/../src", "~", "~/.ssh", "/etc", ".git/hooks"] {
            assert!(check_dir(bad, false).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_table_owns_exactly_its_folders_and_files() {
        use crate::agents::{AGENTS, FORMER_PLACES, Place};
        for global in [false, true] {
            let mut folders = vec![Location::Project(PACKAGES_DIR.to_string())];
            let mut files = Vec::new();
            // Where each agent puts each type, and where earlier versions put it.
            let slots = AGENTS
                .iter()
                .flat_map(|agent| ArtifactKind::ALL.map(|kind| (agent, agent.slot(kind), kind)))
                .chain(
                    FORMER_PLACES
                        .iter()
                        .map(|(platform, kind, slot)| (platform.agent(), Some(*slot), *kind)),
                );
            for (agent, slot, kind) in slots {
                let Some(place) = slot.and_then(|s| s.place(global)) else {
                    continue;
                };
                let location = Location::from_key(place.root());
                let list = if matches!(place, Place::Section(_)) {
                    &mut files
                } else {
                    &mut folders
                };
                if !list.contains(&location) {
                    list.push(location.clone());
                }
                let inside = location.join("x/SKILL.md").key();
                match place {
                    Place::Section(_) => {
                        let key = format!("{}#x {}", place.root(), kind.as_str());
                        assert!(check(&key, global).is_ok(), "{}: {key}", agent.id);
                        assert!(check(&inside, global).is_err(), "{}: {inside}", agent.id);
                    }
                    _ => assert!(check(&inside, global).is_ok(), "{}: {inside}", agent.id),
                }
            }
            for folder in &folders {
                // The folder itself is no key, unless it lies in another (`.clinerules/workflows`).
                let nested = folders.iter().any(|other| strictly_inside(folder, other));
                assert_eq!(check(&folder.key(), global).is_ok(), nested, "{folder:?}");
            }
            let sorted = |mut v: Vec<Location>| {
                v.sort();
                v
            };
            assert_eq!(
                sorted(owned_folders(global).to_vec()),
                sorted(folders),
                "global {global}"
            );
            assert_eq!(sorted(shared_files(global).to_vec()), sorted(files), "global {global}");
        }
    }

    #[rstest]
    #[case(".agents/other/x", false)]
    #[case(".agents/skills", false)]
    #[case(".gemini/settings.json", false)]
    #[case(".windsurf/mcp.json", false)]
    #[case(".kiro/settings/mcp.json", false)]
    #[case("GEMINI.md.bak#x instruction", false)]
    #[case("~/.agents/skills/x/SKILL.md", false)]
    #[case("~/.gemini/settings.json", true)]
    #[case("~/.config/opencode/opencode.json", true)]
    #[case("~/.config/x/SKILL.md", true)]
    #[case("~/.agents/x", true)]
    #[case("~/.codeium/windsurf/mcp_config.json", true)]
    #[case("~/.codeium/windsurf/memories/other.md", true)]
    fn places_next_to_the_tables_are_refused(#[case] key: &str, #[case] global: bool) {
        assert!(check(key, global).is_err(), "{key}: {:?}", check(key, global));
    }

    #[test]
    fn whole_files_include_the_shared_files_and_the_lock() {
        assert!(check_file("CLAUDE.md", false).is_ok());
        assert!(check_file(LOCK_KEY, false).is_ok());
        assert!(check_file("~/.codex/AGENTS.md", true).is_ok());
        assert!(check_file("README.md", false).is_err());
        assert!(check_file("CLAUDE.md#x instruction", false).is_err());
    }
}
