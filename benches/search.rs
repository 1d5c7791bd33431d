//! Search, candidates and index-rebuild benchmarks on catalogs built from
//! `../shared/bench/gen-corpus.sh` (release build: `cargo bench --bench search`).
//!
//! Sizes are artifact counts (the generator makes 1.25 artifacts per skill). The
//! default run covers 1k, 10k and 100k for search and rebuild, and 1M for
//! candidates; `AAM_BENCH_SIZES="1000 10000"` picks others, and
//! `AAM_BENCH_CANDIDATES=0` skips the 1M catalog. The generator cannot make a
//! million-file repository in reasonable time (git fast-import slows down on one
//! folder of 800,000 entries), so the 1M catalog is written through the catalog's
//! own indexing transaction from synthetic records shaped like the generator's,
//! with one package holding every 20th artifact so the anti-join has work to do.
//! Catalogs are kept under `target/bench/` between runs.
//!
//! Targets (issue #3): `aam search review --json` as a process <= 50 ms at 100k
//! and <= 5 ms median in process; candidates pages <= 20 ms in process at 1M;
//! rebuild >= 20,000 artifacts/s with peak memory <= 300 MB at 100k.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use aam::catalog::Keyset;
use aam::config::AamHome;
use aam::scan::ArtifactKind;
use aam::search::{SearchIndex, SearchRequest, SortOrder};
use aam::tools::artifacts::{CandidatesInput, SourceCandidates, cursor_after};
use aam::tools::{Context, Tool};

mod common;

use common::{AAM, catalog, median, ms};

fn main() {
    let Some((work, generator)) = common::setup() else {
        return;
    };
    let sizes = common::sizes(&[1_000, 10_000, 100_000]);
    for artifacts in sizes {
        let home = catalog(&work, &generator, artifacts);
        search_figures(&home, artifacts);
        rebuild_figures(&home, artifacts);
    }
    if std::env::var("AAM_BENCH_CANDIDATES").as_deref() != Ok("0") {
        let home = synthetic_catalog(&work, 1_000_000);
        candidate_figures(&home, 1_000_000);
    }
}

/// A catalog of `artifacts` synthetic artifacts in one source, built once.
fn synthetic_catalog(work: &Path, artifacts: usize) -> PathBuf {
    use aam::catalog::{Catalog, CommitInfo, FileRecord, IndexedArtifact, NewPackage, NewSource, PackageMember};
    let home = work.join(format!("candidates-home-{artifacts}"));
    if home.join("catalog.db").exists() {
        return home;
    }
    let started = Instant::now();
    let mut catalog = Catalog::open(&home.join("catalog.db")).unwrap();
    let source = NewSource {
        name: "bench",
        kind: aam::sources::spec::SourceKind::Git,
        url: "https://example.invalid/bench.git",
        cache_key: "example.invalid/bench",
        ref_name: None,
        scope_path: "",
        is_default: false,
    };
    let commit = CommitInfo {
        sha: "0".repeat(40),
        tree_sha: "1".repeat(40),
        committed_at: None,
    };
    let record = |i: usize| {
        let (kind, path) = match i % 25 {
            0 => (
                ArtifactKind::Instruction,
                format!("instructions/rule-{i:07}.instructions.md"),
            ),
            1 | 2 => (ArtifactKind::Agent, format!("agents/agent-{i:07}.md")),
            3 | 4 => (ArtifactKind::Prompt, format!("prompts/prompt-{i:07}.md")),
            _ => (ArtifactKind::Skill, format!("skills/skill-{i:07}")),
        };
        let text = format!("---\nname: artifact-{i}\ndescription: Review helper number {i}\n---\n# Artifact {i}\n");
        Ok(IndexedArtifact {
            kind,
            name: format!("artifact-{i}"),
            description: Some(format!("Review helper number {i}")),
            platform: None,
            main_file: path.clone(),
            content_path: path.clone(),
            link_paths: Vec::new(),
            frontmatter_json: None,
            has_vendor_agent: false,
            warnings: Vec::new(),
            content_digest: blake3::hash(text.as_bytes()).to_hex().to_string(),
            main_size: text.len() as u64,
            main_sha256: None,
            files: vec![FileRecord {
                path: path.clone(),
                mode: aam::sources::git::FileMode::File,
                git_blob: format!("{i:040x}"),
                blake3: blake3::hash(text.as_bytes()).to_hex().to_string(),
                size: text.len() as u64,
                sha256: None,
                findings: Vec::new(),
            }],
            path,
            text,
            truncated: false,
        })
    };
    let (_, outcome) = catalog
        .add_indexed_source(&source, Some("main"), &commit, (0..artifacts).map(record), |_| {})
        .unwrap();
    let members: Vec<(aam::catalog::ArtifactId, String)> = outcome
        .written
        .iter()
        .step_by(20)
        .map(|&id| (id, format!("member-{id}")))
        .collect();
    let members: Vec<PackageMember> = members
        .iter()
        .map(|(id, name)| PackageMember {
            artifact_id: Some(*id),
            project_root: None,
            kind: ArtifactKind::Skill,
            name,
            path: name,
        })
        .collect();
    let package = NewPackage {
        name: "bench-kit",
        version: "1.0.0",
        description: None,
        manifest_json: "{}",
        origin: "source",
        provenance_json: None,
        archive_blake3: None,
    };
    catalog.record_package(&package, &members).unwrap();
    println!(
        "built a synthetic catalog of {artifacts} artifacts ({} packaged) in {:.1} s",
        members.len(),
        started.elapsed().as_secs_f64()
    );
    home
}

fn search_figures(home: &Path, artifacts: usize) {
    let aam_home = AamHome::at(home.to_path_buf());
    let index = SearchIndex::open(&aam_home).unwrap();
    let catalog = aam::catalog::Catalog::open(&aam_home.catalog_path()).unwrap();
    index.ensure_current(&catalog, &aam::progress::NoProgress).unwrap();
    for query in ["review", "quokka", "xylophonist", ""] {
        let request = SearchRequest {
            query,
            qualified: None,
            kinds: &[],
            sources: &[],
            platform: None,
            limit: 20,
            offset: 0,
            sort: SortOrder::Relevance,
        };
        let mut samples = Vec::new();
        let mut total = 0;
        for _ in 0..50 {
            let started = Instant::now();
            total = index.search(&request).unwrap().total;
            samples.push(started.elapsed());
        }
        println!(
            "search in process   n={artifacts:<8} query={:<12} median {:>9}  ({total} matches)",
            format!("{query:?}"),
            ms(median(samples))
        );
    }
    let mut samples = Vec::new();
    for _ in 0..20 {
        let started = Instant::now();
        let out = Command::new(AAM)
            .args(["--json", "search", "review"])
            .env("AAM_HOME", home)
            .output()
            .unwrap();
        samples.push(started.elapsed());
        assert!(out.status.success());
    }
    println!(
        "search as a process n={artifacts:<8} query=\"review\"     median {:>9}",
        ms(median(samples))
    );
}

fn rebuild_figures(home: &Path, artifacts: usize) {
    let out = Command::new("/usr/bin/time")
        .args(["-f", "%M"])
        .arg(AAM)
        .args(["--json", "catalog", "reindex"])
        .env("AAM_HOME", home)
        .output();
    let Ok(out) = out else {
        println!("rebuild: /usr/bin/time is missing; skipped");
        return;
    };
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let peak_kb: u64 = String::from_utf8_lossy(&out.stderr)
        .trim()
        .lines()
        .last()
        .unwrap_or("0")
        .parse()
        .unwrap_or(0);
    let docs = report["documents"].as_u64().unwrap();
    let elapsed = report["elapsed_ms"].as_u64().unwrap().max(1);
    println!(
        "rebuild             n={artifacts:<8} {docs} documents in {elapsed} ms = {} artifacts/s, peak {} MB",
        docs * 1000 / elapsed,
        peak_kb / 1024
    );
}

fn candidate_figures(home: &Path, artifacts: usize) {
    let empty_project = tempfile::tempdir().unwrap();
    let ctx = Context::new(AamHome::at(home.to_path_buf()), empty_project.path().to_path_buf());
    let deep = cursor_after(&Keyset {
        source_id: aam::catalog::SourceId(1),
        kind: ArtifactKind::Skill,
        path: format!("skills/skill-{:07}", artifacts / 2),
    });
    for (label, cursor) in [("first page", None), ("deep page", Some(deep))] {
        let mut samples = Vec::new();
        let mut total = 0;
        for _ in 0..30 {
            let input = CandidatesInput {
                source: None,
                kind: None,
                limit: 50,
                cursor: cursor.clone(),
                large_project: false,
            };
            let started = Instant::now();
            let page = SourceCandidates::run(&ctx, input).unwrap();
            samples.push(started.elapsed());
            assert_eq!(page.candidates.len(), 50);
            total = page.total;
        }
        println!(
            "candidates          n={artifacts:<8} {label:<10} --limit 50 median {:>9}  (total {total})",
            ms(median(samples))
        );
    }
}
