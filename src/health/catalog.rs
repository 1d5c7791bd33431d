//! The catalog's checks: SQLite integrity, migrations, the search index against
//! the catalog's generation, each source's git cache, stored originals, and caches
//! no source uses.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::SystemTime;

use super::HealthCheck;
use super::record::{self, CheckKind, Fingerprint};
use crate::catalog::{Catalog, RestoredCommit, SourceRecord};
use crate::config::AamHome;
use crate::error::{Error, ErrorCode};
use crate::packages::store::ObjectStore;
use crate::search::{IndexState, SearchIndex};

/// Names of the checks `aam_catalog_repair` can fix.
pub const INDEX_CHECK: &str = "index";
pub const CACHES_CHECK: &str = "caches";
pub const OBJECTS_CHECK: &str = "objects";
pub const FILES_CHECK: &str = "files";
pub const VERSIONS_CHECK: &str = "versions";

/// Every catalog check; a catalog that cannot be opened is one failed check.
/// Unless `full`, SQLite's integrity is checked quickly (every page and row,
/// not that each index matches its table), and not at all while the catalog's
/// files are unchanged since a check that passed (see `record`); the passes over
/// every row (`foreign_keys`, `rows`, `versions`: damage aam's transactions cannot leave,
/// only a damaged file or another writer) are left out. So the default checks
/// take a few milliseconds while nothing changes, and a fraction of a second at
/// 100,000 artifacts after a write.
pub fn catalog_checks(home: &AamHome, catalog: std::result::Result<&Catalog, &Error>, full: bool) -> Vec<HealthCheck> {
    let catalog = match catalog {
        Ok(catalog) => catalog,
        Err(e) => {
            let name = if e.code() == ErrorCode::CatalogTooNew {
                "migrations"
            } else {
                "catalog"
            };
            return vec![HealthCheck::fail(
                name,
                format!("the catalog cannot be opened: {}", e.message()),
                e.hint().unwrap_or("check `AAM_HOME`").to_string(),
            )];
        }
    };
    let mut checks = Vec::new();
    checks.push(integrity_check(home, catalog, full, SystemTime::now()));
    if full {
        checks.push(match catalog.foreign_key_violations() {
            Ok(found) if found.is_empty() => HealthCheck::pass("foreign_keys", "every reference points at a row"),
            Ok(found) => HealthCheck::fail(
                "foreign_keys",
                format!("{} rows point at nothing: {}", found.len(), listed(&found)),
                "remove and re-add the affected sources (`aam source remove`, `aam source add`)",
            ),
            Err(e) => HealthCheck::fail("foreign_keys", e.message().to_string(), "the catalog file is damaged"),
        });
    }
    checks.push(match catalog.schema_versions() {
        Ok((applied, latest)) if applied == latest => {
            HealthCheck::pass("migrations", format!("schema version {applied} is current"))
        }
        Ok((applied, latest)) => HealthCheck::fail(
            "migrations",
            format!("schema version {applied}, but this aam expects {latest}"),
            "run any aam command with write access to migrate it, or use the aam that wrote it",
        ),
        Err(e) => HealthCheck::fail("migrations", e.message().to_string(), "the catalog file is damaged"),
    });
    checks.push(match catalog.generation() {
        Ok(generation) => index_check(home, generation),
        Err(e) => HealthCheck::fail(INDEX_CHECK, e.message().to_string(), "the catalog file is damaged"),
    });
    let sources = catalog.list_sources();
    checks.push(match &sources {
        Ok(sources) => caches_check(home, sources),
        Err(e) => HealthCheck::fail(CACHES_CHECK, e.message().to_string(), "the catalog file is damaged"),
    });
    if full {
        checks.push(match catalog.orphan_rows() {
            Ok(orphans) if orphans.is_empty() => {
                HealthCheck::pass("rows", "every live artifact has its file rows and text")
            }
            Ok(orphans) => {
                let shown: Vec<String> = orphans.iter().map(|o| format!("{} lacks {}", o.row, o.lacks)).collect();
                HealthCheck::fail(
                    "rows",
                    format!("{} artifact rows are incomplete: {}", orphans.len(), listed(&shown)),
                    "remove and re-add the sources named (`aam source remove NAME`, then `aam source add`)",
                )
            }
            Err(e) => HealthCheck::fail("rows", e.message().to_string(), "the catalog file is damaged"),
        });
        checks.push(versions_check(catalog));
    }
    let known: Vec<String> = sources
        .map(|s| s.into_iter().map(|s| s.cache_key).collect())
        .unwrap_or_default();
    let unused = unused_caches(home, &known);
    let restores = review_restores(home, catalog).map(|review| review.unused);
    checks.push(match catalog.installed_digests() {
        Ok(digests) => objects_check(home, &digests),
        Err(e) => HealthCheck::fail(OBJECTS_CHECK, e.message().to_string(), "the catalog file is damaged"),
    });
    checks.push(match restores {
        Err(e) => HealthCheck::fail(FILES_CHECK, e.message().to_string(), "the catalog file is damaged"),
        Ok(restores) if unused.is_empty() && restores.is_empty() => HealthCheck::pass(
            FILES_CHECK,
            "every cache on disk belongs to a source or keeps commits a lock file names",
        ),
        Ok(restores) => {
            let mut found = Vec::new();
            if !unused.is_empty() {
                found.push(format!("{} caches belong to no source: {}", unused.len(), listed(&unused)));
            }
            if !restores.is_empty() {
                let named: Vec<String> = restores
                    .iter()
                    .map(|r| format!("{} of {}", crate::sources::short_id(&r.commit), r.cache_key))
                    .collect();
                found.push(format!(
                    "{} commits restored for lock files that no longer name them are kept in the git cache: {}",
                    restores.len(),
                    listed(&named)
                ));
            }
            HealthCheck::warn(
                FILES_CHECK,
                found.join("; "),
                "`aam catalog check --repair` deletes them (`source remove` without `--purge-cache` keeps a source's cache, so adding it again is quick; a killed `source add` or purge leaves one too; a restore keeps the commits its lock file names)",
            )
        }
    });
    checks
}

/// A commit a restore took from the git cache that no lock file names any more.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct UnusedRestore {
    /// The cache keeping it (`cache/git/<cache_key>`).
    pub cache_key: String,
    /// The commit, 40 hex digits.
    pub commit: String,
}

/// The record of restored commits against the lock files that want them.
#[derive(Debug, Default)]
pub struct RestoreReview {
    /// Commits no lock file names any more, still kept in the git cache.
    pub unused: Vec<UnusedRestore>,
    /// Records of projects whose lock file names their commit no more, or
    /// of a commit the cache no longer keeps: what a repair forgets.
    pub stale: Vec<RestoredCommit>,
}

/// Which commits restores took from the git cache (each kept under
/// `refs/aam/locked/<commit>`) no lock file names any more. A commit is
/// wanted while the lock file of a project that restored it, or of any
/// project an install recorded it for (restores by an aam older than the
/// record of restores among them), names it or cannot be read. A project
/// whose folder is gone (deleted, or on a disk not mounted now) names
/// nothing; a commit no restore recorded is kept.
pub fn review_restores(home: &AamHome, catalog: &Catalog) -> crate::error::Result<RestoreReview> {
    let mut restored: BTreeMap<UnusedRestore, Vec<RestoredCommit>> = BTreeMap::new();
    for row in catalog.restored_commits()? {
        let restore = UnusedRestore {
            cache_key: row.cache_key.clone(),
            commit: row.commit.clone(),
        };
        restored.entry(restore).or_default().push(row);
    }
    if restored.is_empty() {
        return Ok(RestoreReview::default());
    }
    let mut installed: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (root, commit) in catalog.installed_commits()? {
        installed.entry(commit).or_default().push(root);
    }
    // Each project's lock file is read once: the commits it names, or `None`
    // when it cannot be read (a missing one names nothing).
    let mut named: BTreeMap<String, Option<BTreeSet<String>>> = BTreeMap::new();
    let mut wants = |root: &str, commit: &str| -> bool {
        let commits = named.entry(root.to_string()).or_insert_with(|| {
            let lock = crate::packages::lock::read(Path::new(root)).ok()?;
            Some(lock.packages.into_values().filter_map(|p| p.source_commit).collect())
        });
        commits.as_ref().is_none_or(|commits| commits.contains(commit))
    };
    let caches = home.git_cache_dir();
    let mut review = RestoreReview::default();
    for (restore, rows) in restored {
        let (wanting, not): (Vec<RestoredCommit>, Vec<RestoredCommit>) = rows
            .into_iter()
            .partition(|row| wants(&row.project_root, &restore.commit));
        let installs = installed.get(&restore.commit).map(Vec::as_slice).unwrap_or_default();
        let wanted = !wanting.is_empty() || installs.iter().any(|root| wants(root, &restore.commit));
        let kept = crate::sources::cache::keeps_locked_commit(&caches.join(&restore.cache_key), &restore.commit);
        match (wanted, kept) {
            (false, true) => review.unused.push(restore),
            (false, false) => review.stale.extend(not),
            (true, _) => review.stale.extend(not),
        }
    }
    Ok(review)
}

/// The digest lookup `aam inventory` finds a copy's origin with, against the
/// digests each version keeps (the lookup has no foreign key: it is derived).
fn versions_check(catalog: &Catalog) -> HealthCheck {
    match catalog.digest_row_mismatches() {
        Ok(found) if found.is_empty() => HealthCheck::pass(
            VERSIONS_CHECK,
            "the digest lookup holds the digests of every version, and nothing else",
        ),
        Ok(found) => {
            let ids = |ids: &[i64]| listed(&ids.iter().map(i64::to_string).collect::<Vec<_>>());
            let (mut problems, mut fixes) = (Vec::new(), Vec::new());
            if !found.versions.is_empty() {
                problems.push(format!(
                    "the digest lookup disagrees with the versions (rows of versions that are gone: {}; rows of \
                     digests a version does not keep: {}; digests of versions without their row: {}; versions {})",
                    found.rows_of_gone_versions,
                    found.rows_not_kept,
                    found.missing_rows,
                    ids(&found.versions)
                ));
                fixes.push("`aam catalog check --full --repair` brings the lookup back in step with the versions");
            }
            if !found.damaged_versions.is_empty() {
                problems.push(format!(
                    "{} versions keep damaged digests, not one per distinct file (versions {})",
                    found.damaged_versions.len(),
                    ids(&found.damaged_versions)
                ));
                fixes.push(
                    "remove and re-add the sources of the damaged versions (`aam source remove NAME`, then \
                     `aam source add`); a repair leaves their lookup rows as they are",
                );
            }
            HealthCheck::fail(VERSIONS_CHECK, problems.join("; "), fixes.join("; "))
        }
        Err(e) => HealthCheck::fail(VERSIONS_CHECK, e.message().to_string(), "the catalog file is damaged"),
    }
}

/// SQLite's integrity check: the complete one when `full`, else the quick one,
/// unless a recorded pass still stands for the catalog as it is at `now`. A pass
/// is recorded, a failure forgets any record.
fn integrity_check(home: &AamHome, catalog: &Catalog, full: bool, now: SystemTime) -> HealthCheck {
    let record_path = record::path(home);
    let fingerprint = || {
        catalog
            .generation()
            .ok()
            .and_then(|generation| Fingerprint::take(&home.catalog_path(), generation))
    };
    let before = fingerprint();
    if !full && let Some(standing) = before.as_ref().and_then(|f| record::standing(&record_path, f, now)) {
        let which = match standing.check {
            CheckKind::Quick => "SQLite's quick check",
            CheckKind::Full => "SQLite's complete integrity check",
        };
        return HealthCheck::pass(
            "integrity",
            format!(
                "the catalog is unchanged since {which} at {}, which passed (`--full` checks again, completely)",
                standing.at_text()
            ),
        );
    }
    let kind = if full { CheckKind::Full } else { CheckKind::Quick };
    match catalog.integrity_problems(full) {
        Ok(problems) if problems.is_empty() => {
            if let Some(before) = &before {
                record::remember(&record_path, kind, before, fingerprint().as_ref(), now);
            }
            if full {
                HealthCheck::pass("integrity", "SQLite's complete integrity check passed")
            } else {
                HealthCheck::pass(
                    "integrity",
                    "SQLite's quick check passed (`--full` runs the complete checks)",
                )
            }
        }
        Ok(problems) => {
            record::forget(&record_path);
            HealthCheck::fail(
                "integrity",
                format!("SQLite reports damage: {}", listed(&problems)),
                "export what can be read with `aam catalog export --format jsonl`, then move catalog.db aside together with its catalog.db-wal and catalog.db-shm, and re-add the sources",
            )
        }
        Err(e) => {
            record::forget(&record_path);
            HealthCheck::fail(
                "integrity",
                format!("SQLite's integrity check could not finish: {}", e.message()),
                "the catalog file is damaged; move it aside together with its catalog.db-wal and catalog.db-shm, and re-add the sources",
            )
        }
    }
}

/// Up to five items joined by `; `, with how many more there are.
fn listed(items: &[String]) -> String {
    let mut text = items.iter().take(5).cloned().collect::<Vec<_>>().join("; ");
    if items.len() > 5 {
        text.push_str(&format!("; and {} more", items.len() - 5));
    }
    text
}

fn index_check(home: &AamHome, generation: u64) -> HealthCheck {
    let repair = "run `aam catalog check --repair` (or `aam catalog reindex`)";
    match SearchIndex::inspect(home) {
        IndexState::Missing => HealthCheck::warn(
            INDEX_CHECK,
            "the search index has not been built yet (the next search builds it)",
            repair,
        ),
        IndexState::Unreadable(why) => {
            HealthCheck::fail(INDEX_CHECK, format!("the search index is unreadable: {why}"), repair)
        }
        IndexState::Readable {
            generation: Some(indexed),
            documents,
        } if indexed == generation => HealthCheck::pass(
            INDEX_CHECK,
            format!("the search index is at the catalog's generation {generation} ({documents} documents)"),
        ),
        IndexState::Readable {
            generation: indexed, ..
        } => HealthCheck::warn(
            INDEX_CHECK,
            format!(
                "the search index reflects generation {}, the catalog is at {generation} (a write was interrupted or is under way); the next search or source command brings it up to date",
                indexed.map_or("none".to_string(), |g| g.to_string())
            ),
            "nothing to do; `aam catalog reindex` brings it up to date now",
        ),
    }
}

fn caches_check(home: &AamHome, sources: &[SourceRecord]) -> HealthCheck {
    let broken: Vec<String> = sources
        .iter()
        .filter(|s| crate::sources::cache::holds_head(&home.git_cache_dir(), s) == Some(false))
        .map(|s| s.name.clone())
        .collect();
    if broken.is_empty() {
        let fetched = sources.iter().filter(|s| s.head_commit.is_some()).count();
        let held = match fetched {
            1 => "the cache of the 1 fetched source holds its indexed commit".to_string(),
            n => format!("the caches of all {n} fetched sources hold their indexed commits"),
        };
        let unfetched: Vec<&str> = sources
            .iter()
            .filter(|s| s.head_commit.is_none())
            .map(|s| s.name.as_str())
            .collect();
        let held = match unfetched.len() {
            0 => held,
            _ => format!(
                "{held}; never fetched, so not searched yet: {} (`aam source update --all` fetches them)",
                unfetched.join(", ")
            ),
        };
        // The cache still serves a local source whose folder is gone, but its
        // next update fails: said here rather than at that update.
        let gone: Vec<(&str, &Path)> = sources
            .iter()
            .filter_map(|s| Some((s.name.as_str(), s.local_folder()?)))
            .filter(|(_, folder)| !folder.is_dir())
            .collect();
        match gone.as_slice() {
            [] => HealthCheck::pass(CACHES_CHECK, held),
            _ => {
                let named: Vec<String> = gone
                    .iter()
                    .map(|(name, folder)| format!("`{name}` ({})", folder.display()))
                    .collect();
                let remove = match gone.as_slice() {
                    [(name, _)] => format!("`aam source remove {}`", crate::paths::shell_word(name)),
                    _ => "`aam source remove NAME`".to_string(),
                };
                HealthCheck::warn(
                    CACHES_CHECK,
                    format!(
                        "{held}; the folder of {} is gone: what was indexed stays searchable, but `aam source update` fails",
                        named.join(", ")
                    ),
                    format!("put the repository back at that path, or {remove} if you no longer use it"),
                )
            }
        }
    } else {
        HealthCheck::fail(
            CACHES_CHECK,
            format!(
                "{} of {} sources lack their indexed commit in their git cache: {}",
                broken.len(),
                sources.len(),
                broken.join(", ")
            ),
            "run `aam catalog check --repair` to fetch them again",
        )
    }
}

/// `1 original`, `3 originals`.
pub fn originals(n: usize) -> String {
    if n == 1 {
        "1 original".to_string()
    } else {
        format!("{n} originals")
    }
}

/// The originals `aam diff` compares installed files with: every file an
/// install wrote has one, and none is kept that no install wrote.
fn objects_check(home: &AamHome, installed: &BTreeSet<String>) -> HealthCheck {
    let store = ObjectStore::new(home.root().join("objects"));
    let stored = store.digests();
    let missing = installed.difference(&stored).count();
    // Those stored in the last ten minutes are no finding: a repair keeps them
    // (an install may still be recording them), so after an uninstall the
    // check said to run a repair that answered "not yet". A killed write's
    // temporary file counts as an original no install uses.
    let (recent, unused): (Vec<&String>, Vec<&String>) =
        stored.difference(installed).partition(|digest| store.is_recent(digest));
    let unused = unused.len() + store.stale_temporaries().len();
    match (missing, unused) {
        (0, 0) if recent.is_empty() => HealthCheck::pass(
            OBJECTS_CHECK,
            format!("{} of installed files, none missing or unused", originals(stored.len())),
        ),
        (0, 0) => HealthCheck::pass(
            OBJECTS_CHECK,
            format!(
                "{} of installed files, none missing; {} no install uses, stored in the last ten minutes, can be deleted after that",
                originals(stored.len() - recent.len()),
                originals(recent.len())
            ),
        ),
        (0, unused) => HealthCheck::warn(
            OBJECTS_CHECK,
            format!(
                "{} stored {} to no install",
                originals(unused),
                if unused == 1 { "belongs" } else { "belong" }
            ),
            "run `aam catalog check --repair` to delete them",
        ),
        (missing, _) => HealthCheck::warn(
            OBJECTS_CHECK,
            format!("{missing} installed files have no stored original, so `aam diff` cannot show their changes"),
            "reinstall the packages concerned (`aam install --force NAME`) to store them again",
        ),
    }
}

/// The cached repositories (cache keys) on disk that none of `known` names and
/// that keep no commit a lock file names (a restore's, which an offline
/// restore needs again).
pub fn unused_caches(home: &AamHome, known: &[String]) -> Vec<String> {
    let caches = home.git_cache_dir();
    cached_repositories(&caches)
        .into_iter()
        .filter(|key| !known.contains(key) && !crate::sources::cache::keeps_locked_commits(&caches.join(key)))
        .collect()
}

/// Cache keys (`host/path`) of the git repositories under `root`.
fn cached_repositories(root: &Path) -> Vec<String> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<String>) {
        if crate::sources::cache::is_cache(dir) {
            // A cache key is UTF-8: a folder named otherwise is no cache of aam's.
            if let Some(rel) = dir.strip_prefix(root).ok().and_then(|rel| rel.to_str()) {
                out.push(rel.to_string());
            }
            return;
        }
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                walk(&entry.path(), root, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cached_repositories_are_the_folders_holding_a_bare_repository() {
        let dir = tempfile::tempdir().unwrap();
        for repo in ["github.com/a/b", "example.org/c"] {
            let path = dir.path().join(repo);
            std::fs::create_dir_all(path.join("objects")).unwrap();
            std::fs::write(path.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        }
        std::fs::create_dir_all(dir.path().join("github.com/empty/objects")).unwrap();
        assert_eq!(cached_repositories(dir.path()), ["example.org/c", "github.com/a/b"]);
        assert!(cached_repositories(&dir.path().join("absent")).is_empty());
    }

    #[test]
    fn originals_are_counted_in_words() {
        assert_eq!(originals(1), "1 original");
        assert_eq!(originals(3), "3 originals");
    }
}
