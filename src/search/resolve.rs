//! Resolving the name a user gives an artifact (`source/name`, `source/path`, a
//! bare name) to the one catalog artifact it means, with suggestions from the
//! index when it means none.

use std::sync::Arc;

use super::{SearchIndex, SearchRequest, SortOrder};
use crate::catalog::{Catalog, ListedArtifact};
use crate::error::{Error, ErrorCode, Result};
use crate::progress::Progress;
use crate::sources::{qualified_name, registered_sources_hint, split_qualified, unknown_source};

/// Finds the one artifact `text` names: `source/name`, `source/path`, or a bare name.
/// The search `index` is opened only to suggest names when none matches.
pub fn resolve_artifact(
    catalog: &Catalog,
    text: &str,
    index: impl FnOnce() -> Result<Arc<SearchIndex>>,
    progress: &dyn Progress,
) -> Result<ListedArtifact> {
    let sources = catalog.list_sources()?;
    let names: Vec<String> = sources.iter().map(|s| s.name.clone()).collect();
    let matches = match split_qualified(text, &names) {
        Some((source_name, rest)) => {
            let source_id = sources.iter().find(|s| s.name == source_name).map(|s| s.id);
            match catalog.artifact_at(source_id.unwrap_or_default(), rest)? {
                Some(at_path) => vec![at_path],
                None => catalog.artifacts_named(source_id, rest)?,
            }
        }
        None => catalog.artifacts_named(None, text)?,
    };
    match matches.len() {
        1 => Ok(matches.into_iter().next().unwrap_or_else(|| unreachable!())),
        0 => {
            // A registered source never fetched holds nothing yet: fetching it may find it.
            if let Some((source_name, _)) = split_qualified(text, &names)
                && sources.iter().any(|s| s.name == source_name && s.head_commit.is_none())
            {
                return Err(crate::sources::not_indexed(source_name));
            }
            if let Some(source) = unknown_source(text, &names) {
                return Err(Error::new(
                    ErrorCode::SourceNotFound,
                    format!("no artifact named `{text}`: no source is named `{source}`"),
                )
                .with_hint(registered_sources_hint(&names)));
            }
            Err(artifact_not_found(
                text,
                close_artifacts(&*index()?, catalog, progress, text)?,
            ))
        }
        _ => {
            let choices = crate::sources::qualified_choices(&matches);
            Err(Error::new(
                ErrorCode::ArtifactAmbiguous,
                format!("`{text}` names {} artifacts", matches.len()),
            )
            .with_hint(format!("name one of them: {}", choices.join(", "))))
        }
    }
}

/// Qualified names of up to three artifacts whose names are close to `text`
/// (or to its last part, after a `/`), from the search index: the "did you
/// mean" of a name no artifact has.
pub fn close_artifacts(
    index: &SearchIndex,
    catalog: &Catalog,
    progress: &dyn Progress,
    text: &str,
) -> Result<Vec<String>> {
    let name = text.rsplit('/').next().unwrap_or(text);
    // No name is that long: nothing to look for.
    if name.chars().count() > super::MAX_QUERY_CHARS {
        return Ok(Vec::new());
    }
    index.ensure_current(catalog, progress)?;
    let found = index.search(&SearchRequest {
        query: name,
        qualified: None,
        kinds: &[],
        sources: &[],
        platform: None,
        limit: 10,
        offset: 0,
        sort: SortOrder::Relevance,
    })?;
    // Hits whose name looks like the one asked for: a hit for a word in some
    // artifact's text is no answer to a mistyped name.
    // The closest first: `review-kti` means the package `review-kit` before
    // an artifact `review` whose name it holds. A package is named alone.
    let wanted = name.to_lowercase();
    let mut alike: Vec<(f64, String)> = found
        .hits
        .iter()
        .filter_map(|h| {
            let theirs = h.name.to_lowercase();
            let score = strsim::jaro_winkler(&wanted, &theirs);
            (theirs.contains(&wanted) || wanted.contains(&theirs) || score >= 0.85).then(|| {
                let shown = match h.kind {
                    super::ResultKind::Package => h.name.clone(),
                    _ => qualified_name(&h.source, &h.name),
                };
                (score, shown)
            })
        })
        .collect();
    // A name suggested from the vocabulary that a registry publishes is a package.
    for suggested in &found.suggestions {
        if !catalog.registries_with(suggested)?.is_empty() {
            alike.push((
                strsim::jaro_winkler(&wanted, &suggested.to_lowercase()),
                suggested.clone(),
            ));
        }
    }
    alike.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut alike: Vec<String> = alike.into_iter().map(|(_, shown)| shown).collect();
    alike.dedup();
    alike.truncate(3);
    if !alike.is_empty() {
        return Ok(alike);
    }
    let mut qualified = Vec::new();
    for name in &found.suggestions {
        for artifact in catalog.artifacts_named(None, name)? {
            qualified.push(qualified_name(&artifact.source, &artifact.name));
        }
    }
    qualified.truncate(3);
    Ok(qualified)
}

/// The error for a name no artifact has, with `suggestions` as a hint.
pub fn artifact_not_found(text: &str, suggestions: Vec<String>) -> Error {
    let hint = if suggestions.is_empty() {
        "find artifacts with `aam search <words>`".to_string()
    } else {
        format!(
            "did you mean {}?",
            suggestions
                .iter()
                .map(|s| format!("`{s}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    Error::new(
        ErrorCode::ArtifactNotFound,
        format!("no artifact named `{}`", crate::error::quoted(text)),
    )
    .with_hint(hint)
}
