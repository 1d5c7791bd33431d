//! Artifact tools: `aam_info` (one artifact in full, or the package a name means), `aam_list` (available
//! artifacts by source, paged) and `aam_source_candidates` (artifacts no package
//! holds yet, paged), all answered from the catalog. This module holds the paging
//! the listings share; each tool has its own file.

mod candidates;
mod info;
mod list;

pub use crate::paths::shell_word;
pub use candidates::{Candidate, CandidatesInput, CandidatesOutput, PROJECT_SOURCE, SourceCandidates, SourceType};
pub use info::{ArtifactInfo, Info, InfoFile, InfoInput, InfoOutput, InstallScope, InstalledAs};
pub use list::{AvailableArtifact, ListAvailable, ListInput, ListOutput, SourceGroup};

use crate::catalog::{Catalog, Keyset, ListFilter, ListedArtifact, SourceId};
use crate::error::{Error, ErrorCode, Result};
use crate::scan::ArtifactKind;

// ---------------------------------------------------------------- paging

/// Where the next page starts: in the project's own artifacts, or in the catalog.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Cursor {
    Project { kind: ArtifactKind, path: String },
    Catalog(Keyset),
}

impl Cursor {
    fn encode(&self) -> String {
        let text = match self {
            Cursor::Project { kind, path } => format!("p\t{}\t{path}", kind.as_str()),
            Cursor::Catalog(k) => format!("c\t{}\t{}\t{}", k.source_id, k.kind.as_str(), k.path),
        };
        faster_hex::hex_string(text.as_bytes())
    }

    fn decode(text: &str) -> Result<Self> {
        let invalid = || invalid_cursor(text);
        if !text.len().is_multiple_of(2) || !text.is_ascii() {
            return Err(invalid());
        }
        let bytes: Vec<u8> = (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16).map_err(|_| invalid()))
            .collect::<Result<_>>()?;
        let decoded = String::from_utf8(bytes).map_err(|_| invalid())?;
        let (tag, rest) = decoded.split_once('\t').ok_or_else(invalid)?;
        let parts: Vec<&str> = rest.splitn(if tag == "c" { 3 } else { 2 }, '\t').collect();
        match (tag, parts.as_slice()) {
            ("p", [kind, path]) => Ok(Cursor::Project {
                kind: ArtifactKind::parse(kind).ok_or_else(invalid)?,
                path: path.to_string(),
            }),
            ("c", [source_id, kind, path]) => Ok(Cursor::Catalog(Keyset {
                source_id: source_id.parse().map_err(|_| invalid())?,
                kind: ArtifactKind::parse(kind).ok_or_else(invalid)?,
                path: path.to_string(),
            })),
            _ => Err(invalid()),
        }
    }
}

/// The cursor that continues a catalog listing right after `keyset`.
pub fn cursor_after(keyset: &Keyset) -> String {
    Cursor::Catalog(keyset.clone()).encode()
}

fn invalid_cursor(text: &str) -> Error {
    Error::invalid_argument(format!("`{text}` is not a cursor from this command"))
        .with_hint("pass the `next_cursor` of the previous page, or no cursor for the first page")
}

fn check_limit(limit: u32) -> Result<usize> {
    if (1..=1000).contains(&limit) {
        Ok(limit as usize)
    } else {
        Err(
            Error::invalid_argument(format!("`--limit` (`limit`) must be between 1 and 1000, not {limit}"))
                .with_hint("pass a `limit` (`--limit`) from 1 to 1000; page with `cursor` (`--cursor`) set to the previous `next_cursor`"),
        )
    }
}

fn default_page() -> u32 {
    50
}

/// The ids of the named sources; an unknown name is an error listing the known ones.
fn source_ids(catalog: &Catalog, names: &[String]) -> Result<Vec<SourceId>> {
    let sources = catalog.list_sources()?;
    names
        .iter()
        .map(|name| {
            sources.iter().find(|s| &s.name == name).map(|s| s.id).ok_or_else(|| {
                let known: Vec<String> = sources.iter().map(|s| s.name.clone()).collect();
                Error::new(ErrorCode::SourceNotFound, format!("no source named `{name}`"))
                    .with_hint(super::registered_sources_hint(&known))
            })
        })
        .collect()
}

/// One catalog page after `after`, plus the cursor of the next page when there is one.
fn catalog_page(
    catalog: &Catalog,
    filter: &ListFilter,
    after: Option<&Keyset>,
    limit: usize,
) -> Result<(Vec<ListedArtifact>, Option<Keyset>)> {
    let mut rows = catalog.list_page(filter, after, limit + 1)?;
    let more = rows.len() > limit;
    rows.truncate(limit);
    let next = more.then(|| {
        rows.last().map(|r| Keyset {
            source_id: r.source_id,
            kind: r.kind,
            path: r.path.clone(),
        })
    });
    Ok((rows, next.flatten()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_reject_garbage() {
        let cursors = [
            Cursor::Project {
                kind: ArtifactKind::Skill,
                path: "skills/a b\tc".into(),
            },
            Cursor::Catalog(Keyset {
                source_id: SourceId(42),
                kind: ArtifactKind::Prompt,
                path: "prompts/é.md".into(),
            }),
        ];
        for cursor in cursors {
            assert_eq!(Cursor::decode(&cursor.encode()).unwrap(), cursor);
        }
        for bad in ["", "zz", "abc", "7009", &"x".repeat(10)] {
            assert_eq!(
                Cursor::decode(bad).unwrap_err().code(),
                ErrorCode::InvalidArgument,
                "{bad}"
            );
        }
    }

    #[test]
    fn shell_words_are_quoted_when_needed() {
        assert_eq!(shell_word("o/r:skills/pdf"), "o/r:skills/pdf");
        assert_eq!(shell_word("o/r/it's"), r"'o/r/it'\''s'");
    }
}
