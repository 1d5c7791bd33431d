//! Git sources: spec parsing, the bare-repository cache and indexing commits.
//!
//! `spec` turns user input into a validated, credential-free [`spec::SourceSpec`];
//! `git` owns every gix call (fetch, trees, blobs, diffs), `folder` finds names in
//! one tree object's bytes; `index` combines git
//! with the `scan` rules to produce catalog records, fully or incrementally.

pub mod cache;
pub mod defaults;
pub mod folder;
pub mod git;
pub mod head;
pub mod index;
pub mod spec;
pub mod update;

/// The display form of an artifact's identity: `source/name`.
pub fn qualified_name(source: &str, name: &str) -> String {
    format!("{source}/{name}")
}

/// What to type to name each of several same-named artifacts, quoted:
/// `source/name`, or `source/path` where its source holds that name twice (as
/// search's `qualified_name`).
pub fn qualified_choices(many: &[crate::catalog::ListedArtifact]) -> Vec<String> {
    many.iter()
        .map(|m| {
            let twice = many.iter().filter(|o| o.source == m.source && o.name == m.name).count() > 1;
            match twice {
                true => format!("`{}`", qualified_name(&m.source, &m.path)),
                false => format!("`{}`", qualified_name(&m.source, &m.name)),
            }
        })
        .collect()
}

/// Reads `text` as `source/rest` when a registered source name is a prefix of it
/// (the longest such name wins, since source names may contain `/`).
pub fn split_qualified<'t>(text: &'t str, source_names: &[String]) -> Option<(&'t str, &'t str)> {
    text.match_indices('/')
        .map(|(i, _)| (&text[..i], &text[i + 1..]))
        .filter(|(source, rest)| !rest.is_empty() && source_names.iter().any(|n| n == source))
        .max_by_key(|(source, _)| source.len())
}

/// A hint naming the registered sources, for a name that is none of them.
pub fn registered_sources_hint(source_names: &[String]) -> String {
    if source_names.is_empty() {
        return "no source is registered; add one with `aam source add`".to_string();
    }
    let known: Vec<String> = source_names.iter().map(|n| format!("`{n}`")).collect();
    format!("registered sources: {}", known.join(", "))
}

/// The source part of `text` (before its first `/`) when `text` looks like
/// `source/artifact` but names no registered source.
pub fn unknown_source<'t>(text: &'t str, source_names: &[String]) -> Option<&'t str> {
    let (source, rest) = text.split_once('/')?;
    let known = source_names
        .iter()
        .any(|n| n == source || text.starts_with(&format!("{n}/")));
    (!source.is_empty() && !rest.is_empty() && !text.starts_with('@') && !known).then_some(source)
}

/// A commit id (or digest) shortened for people: its first 12 characters.
pub fn short_id(id: &str) -> &str {
    &id[..id.len().min(12)]
}

/// The error for a source that is registered but has never been fetched.
pub fn not_indexed(name: &str) -> crate::error::Error {
    crate::error::Error::new(
        crate::error::ErrorCode::SourceNotIndexed,
        format!("source `{name}` has not been fetched yet"),
    )
    .with_hint(format!("run `aam source update {name}` to fetch and index it"))
}

/// The error for a scope that is no folder of the fetched commit.
pub fn path_not_found(scope: &str, fetched: &git::Fetched) -> crate::error::Error {
    crate::error::Error::new(
        crate::error::ErrorCode::SourcePathNotFound,
        format!(
            "`{scope}` is not a folder at `{}` ({})",
            fetched.resolved_ref,
            short_id(&fetched.commit.to_string())
        ),
    )
    .with_hint("check the folder name; paths are case-sensitive and relative to the repository root")
}

/// Refuses a local path that is not the root of a git repository. A folder
/// inside one is pointed at the repository and `--path`, when the repository
/// lies where the caller may look (`may_look`: a confined call learns nothing
/// of the folders above its own).
pub fn ensure_git_repository(
    path: &std::path::Path,
    may_look: impl Fn(&std::path::Path) -> bool,
) -> crate::error::Result<()> {
    if git::is_repository(path) {
        return Ok(());
    }
    let error = crate::error::Error::new(
        crate::error::ErrorCode::SourceUrlInvalid,
        format!("`{}` is not a git repository", path.display()),
    );
    let enclosing = path
        .ancestors()
        .skip(1)
        .take_while(|dir| may_look(dir))
        .find_map(|repository| {
            let inside = path.strip_prefix(repository).ok()?.to_str()?;
            git::is_repository(repository).then(|| (repository.to_str(), inside))
        });
    Err(match enclosing {
        Some((Some(repository), inside)) => error.with_hint(format!(
            "it is a folder of the repository `{repository}`: add that with `aam source add {} --path {}`",
            crate::paths::shell_word(repository),
            crate::paths::shell_word(inside)
        )),
        _ => error
            .with_hint("pass the root folder of a git repository (one with a `.git` folder), or run `git init` there"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualified_names_split_on_the_longest_source() {
        let sources = vec!["o/r".to_string(), "o/r:skills".to_string(), "solo".to_string()];
        assert_eq!(split_qualified("o/r/pdf", &sources), Some(("o/r", "pdf")));
        assert_eq!(split_qualified("o/r:skills/pdf", &sources), Some(("o/r:skills", "pdf")));
        assert_eq!(split_qualified("solo/skills/x", &sources), Some(("solo", "skills/x")));
        assert_eq!(split_qualified("pdf", &sources), None);
        assert_eq!(split_qualified("o/r/", &sources), None);
        assert_eq!(split_qualified("other/x", &sources), None);
    }

    #[test]
    fn unknown_sources_are_named_and_hinted() {
        let sources = vec!["o/r".to_string(), "solo".to_string()];
        assert_eq!(unknown_source("ghost/pdf", &sources), Some("ghost"));
        assert_eq!(unknown_source("o/r/pdf", &sources), None);
        assert_eq!(unknown_source("@scope/pkg", &sources), None);
        assert_eq!(unknown_source("pdf", &sources), None);
        assert_eq!(registered_sources_hint(&sources), "registered sources: `o/r`, `solo`");
        assert!(registered_sources_hint(&[]).contains("aam source add"));
    }

    #[test]
    fn only_a_repository_root_is_a_local_source() {
        let dir = tempfile::tempdir().unwrap();
        let err = ensure_git_repository(dir.path(), |_| true).unwrap_err();
        assert_eq!(err.code(), crate::error::ErrorCode::SourceUrlInvalid);
        assert!(err.hint().unwrap().contains("git init"), "{err:?}");
        // A folder inside a repository points at the repository and `--path`.
        let repo = dir.path().join("my repo");
        gix::init(&repo).unwrap();
        std::fs::create_dir_all(repo.join("skills/pdf")).unwrap();
        let err = ensure_git_repository(&repo.join("skills/pdf"), |_| true).unwrap_err();
        let hint = err.hint().unwrap();
        let command = format!("aam source add '{}' --path skills/pdf", repo.display());
        assert!(hint.contains(&command), "{hint}");
        // Never above the folders the caller may look in.
        let confined = |dir: &std::path::Path| dir.starts_with(repo.join("skills"));
        let err = ensure_git_repository(&repo.join("skills/pdf"), confined).unwrap_err();
        assert!(err.hint().unwrap().contains("git init"), "{err:?}");
    }
}
