//! Git sources: spec parsing, the bare-repository cache and indexing commits.
//!
//! `spec` turns user input into a validated, credential-free [`spec::SourceSpec`];
//! `git` owns every gix call (fetch, trees, blobs, diffs); `index` combines git
//! with the `scan` rules to produce catalog records, fully or incrementally.

pub mod cache;
pub mod git;
pub mod index;
pub mod spec;
pub mod update;

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
