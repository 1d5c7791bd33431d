//! The built-in default sources and registering them without fetching, and the
//! one rule for "this repository, ref and folder is already registered".
//!
//! Registering writes source rows only; fetching and indexing is `update`'s.

use std::path::Path;

use crate::catalog::{Catalog, NewSource, SourceRecord};
use crate::error::Result;
use crate::sources::spec::SourceSpec;

/// The built-in default sources: name, GitHub repository, scope.
pub const DEFAULT_SOURCES: [(&str, &str, &str); 4] = [
    ("github/awesome-copilot", "github/awesome-copilot", "skills"),
    ("openai/skills:.curated", "openai/skills", "skills/.curated"),
    ("anthropics/skills", "anthropics/skills", "skills"),
    ("microsoft/skills", "microsoft/skills", ".github/skills"),
];

/// What registering the defaults did, by source name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Enabled {
    /// Defaults registered now (not fetched yet).
    pub added: Vec<String>,
    /// Defaults already registered, by the name of the source tracking them.
    pub already_present: Vec<String>,
    /// Defaults left out because the user removed them.
    pub dismissed: Vec<String>,
}

/// Registers the default sources no source tracks yet (`cwd` is where relative
/// specs would resolve); defaults the user removed only when `restore`.
pub fn enable(catalog: &mut Catalog, cwd: &Path, restore: bool) -> Result<Enabled> {
    let dismissed_names = catalog.dismissed_defaults()?;
    let mut out = Enabled {
        added: Vec::new(),
        already_present: Vec::new(),
        dismissed: Vec::new(),
    };
    for (name, repo, scope) in DEFAULT_SOURCES {
        let spec = SourceSpec::parse(repo, cwd)?.with_overrides(None, Some(scope))?;
        // The same repository, ref and folder under another name counts as present.
        if let Some(existing) = same_repository(catalog, &spec)? {
            out.already_present.push(existing.name);
            continue;
        }
        if catalog.find_source(name)?.is_some() {
            out.already_present.push(name.to_string());
            continue;
        }
        if dismissed_names.iter().any(|d| d == name) && !restore {
            out.dismissed.push(name.to_string());
            continue;
        }
        catalog.insert_unfetched_source(&NewSource {
            name,
            kind: spec.kind,
            url: &spec.url,
            cache_key: &spec.cache_key(),
            ref_name: None,
            scope_path: &spec.scope,
            is_default: true,
        })?;
        out.added.push(name.to_string());
    }
    Ok(out)
}

/// The registered source that fetches the same URL at the same ref and scope as
/// `spec`, if any. A source following the default branch matches a request for the
/// branch it resolved to.
pub fn same_repository(catalog: &Catalog, spec: &SourceSpec) -> Result<Option<SourceRecord>> {
    Ok(catalog.list_sources()?.into_iter().find(|s| {
        let same_ref = s.ref_name == spec.git_ref
            || (s.ref_name.is_none() && spec.git_ref.is_some() && s.resolved_ref == spec.git_ref);
        s.url == spec.url && s.scope_path == spec.scope && same_ref
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_registered_once_and_a_source_tracking_one_counts() {
        let dir = tempfile::tempdir().unwrap();
        let mut catalog = Catalog::open(&dir.path().join("catalog.db")).unwrap();
        let spec = SourceSpec::parse("anthropics/skills", dir.path())
            .unwrap()
            .with_overrides(None, Some("skills"))
            .unwrap();
        catalog
            .insert_unfetched_source(&NewSource {
                name: "mine",
                kind: spec.kind,
                url: &spec.url,
                cache_key: &spec.cache_key(),
                ref_name: None,
                scope_path: &spec.scope,
                is_default: false,
            })
            .unwrap();
        assert_eq!(
            same_repository(&catalog, &spec).unwrap().map(|s| s.name),
            Some("mine".to_string())
        );
        let first = enable(&mut catalog, dir.path(), false).unwrap();
        assert_eq!(first.already_present, ["mine"]);
        assert_eq!(first.added.len(), DEFAULT_SOURCES.len() - 1);
        assert!(first.dismissed.is_empty());
        let again = enable(&mut catalog, dir.path(), false).unwrap();
        assert!(again.added.is_empty());
        assert_eq!(again.already_present.len(), DEFAULT_SOURCES.len());
    }
}
