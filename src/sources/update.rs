//! Planning a source update: fetch (or take a pinned commit already cached),
//! find the paths that changed since the indexed commit, and work out which
//! artifacts are new, modified or removed, reading only the changed regions.

use crate::cancel::Cancel;
use crate::catalog::{Catalog, CommitInfo, SourceChanges, SourceRecord};
use crate::error::Result;
use crate::progress::Progress;
use crate::sources::git::{FetchLimits, Fetched, GitCache, Oid, RefWant};
use crate::sources::index::Snapshot;
use crate::sources::short_id;

/// What an update would do.
pub struct UpdatePlan {
    /// The commit fetched and the ref it was resolved from.
    pub fetched: Fetched,
    /// The commit as the catalog records it.
    pub commit: CommitInfo,
    /// `None` when already at the newest commit.
    pub changes: Option<SourceChanges>,
}

/// Fetches a source into `target` and works out the changes against the catalog.
pub fn plan(
    catalog: &Catalog,
    cache: &GitCache,
    source: &SourceRecord,
    target: &str,
    limits: FetchLimits,
    progress: &dyn Progress,
    cancel: &Cancel,
) -> Result<UpdatePlan> {
    let started = std::time::Instant::now();
    let old = source
        .head_commit
        .as_deref()
        .and_then(|sha| Oid::from_hex(sha.as_bytes()).ok());
    let fetched = match pinned_commit(cache, source) {
        Some(fetched) => {
            cache.set_ref(target, fetched.commit)?;
            fetched
        }
        None => {
            progress.start(&format!("fetching {}", source.name), None);
            let fetched = cache.fetch(
                &source.url,
                &RefWant::from_ref(source.ref_name.as_deref()),
                target,
                old.is_none(),
                limits,
                cancel,
            );
            progress.finish();
            fetched?
        }
    };
    tracing::debug!(elapsed = ?started.elapsed(), "fetched `{}`", source.name);
    let (new_root, committed_at) = cache.commit_tree(fetched.commit)?;
    let snapshot = Snapshot::new(
        cache,
        new_root,
        &source.scope_path,
        &root_name(&source.url, &source.scope_path),
    );
    let scope_tree = match snapshot.scope_tree()? {
        Some(tree) => tree,
        None => {
            tracing::warn!(
                "`{}` no longer exists in `{}` at {}; its artifacts are recorded as removed",
                source.scope_path,
                source.name,
                short_id(&fetched.commit.to_string())
            );
            Oid::empty_tree(gix::hash::Kind::Sha1)
        }
    };
    let commit = CommitInfo {
        sha: fetched.commit.to_string(),
        tree_sha: scope_tree.to_string(),
        committed_at,
    };
    if old == Some(fetched.commit) {
        return Ok(UpdatePlan {
            fetched,
            commit,
            changes: None,
        });
    }
    let changes = catalog.reading(|catalog| changes_since(catalog, cache, source, &snapshot, old, new_root, cancel))?;
    tracing::debug!(
        elapsed = ?started.elapsed(),
        "{} new, {} modified, {} removed",
        changes.added.len(),
        changes.modified.len(),
        changes.removed.len()
    );
    Ok(UpdatePlan {
        fetched,
        commit,
        changes: Some(changes),
    })
}

/// The artifacts new, modified or removed in the tree `new_root` against what
/// the catalog records of `source` (indexed at `old`, when the cache still holds it).
fn changes_since(
    catalog: &Catalog,
    cache: &GitCache,
    source: &SourceRecord,
    snapshot: &Snapshot,
    old: Option<Oid>,
    new_root: Oid,
    cancel: &Cancel,
) -> Result<SourceChanges> {
    let regions = match old.filter(|id| cache.has_commit(*id)) {
        Some(old) => {
            let (old_root, _) = cache.commit_tree(old)?;
            let changed = cache.changed_paths(old_root, new_root)?;
            tracing::debug!("{} paths changed", changed.len());
            let by_content: Vec<String> = catalog
                .live_artifacts_in(source.id, &[], &changed)?
                .into_iter()
                .map(|a| a.path)
                .collect();
            snapshot.regions_for(&changed, &by_content)?
        }
        None => vec![source.scope_path.clone()],
    };
    tracing::debug!("{} regions to index", regions.len());
    let before = catalog.live_artifacts_in(source.id, &regions, &[])?;
    snapshot.changes(&regions, before, |id| catalog.known_blobs(id), cancel)
}

/// A source pinned to a commit id (full or abbreviated) already in the cache needs no fetch.
fn pinned_commit(cache: &GitCache, source: &SourceRecord) -> Option<Fetched> {
    let requested = source.ref_name.as_deref()?;
    let resolved = source.resolved_ref.as_deref()?;
    let pinned = resolved.len() == 40 && resolved.starts_with(&requested.to_ascii_lowercase());
    let id = pinned.then(|| Oid::from_hex(resolved.as_bytes()).ok()).flatten()?;
    cache.has_commit(id).then(|| Fetched {
        commit: id,
        resolved_ref: resolved.to_string(),
    })
}

/// The name of a skill whose `SKILL.md` sits at the scope root.
pub fn root_name(url: &str, scope: &str) -> String {
    let last = |s: &str| {
        s.trim_end_matches('/')
            .rsplit(['/', ':'])
            .next()
            .unwrap_or("")
            .to_string()
    };
    if scope.is_empty() {
        let repo = last(url);
        repo.strip_suffix(".git").unwrap_or(&repo).to_string()
    } else {
        last(scope)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_root_skill_is_named_after_its_scope_or_repository() {
        assert_eq!(root_name("https://github.com/o/pdf-skill.git", ""), "pdf-skill");
        assert_eq!(root_name("git@github.com:o/pdf", ""), "pdf");
        assert_eq!(root_name("https://github.com/o/r", "skills/pdf/"), "pdf");
    }
}
