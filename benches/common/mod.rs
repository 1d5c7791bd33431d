//! Helpers shared by the benchmarks: corpora from `../shared/bench/gen-corpus.sh`
//! turned into catalogs under `target/bench/` (kept between runs), and timing.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The release binary under test.
pub const AAM: &str = env!("CARGO_BIN_EXE_aam");

/// The work folder and the corpus generator, or `None` (with a message) when
/// the generator is absent.
pub fn setup() -> Option<(PathBuf, PathBuf)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let generator = root.join("../shared/bench/gen-corpus.sh");
    if !generator.exists() {
        eprintln!("skipping: {} is absent", generator.display());
        return None;
    }
    let work = root.join("target/bench");
    std::fs::create_dir_all(&work).unwrap();
    Some((work, generator))
}

/// A home holding the corpus of about `artifacts` artifacts, built once.
pub fn catalog(work: &Path, generator: &Path, artifacts: usize) -> PathBuf {
    let skills = (artifacts * 4 / 5).max(20);
    let corpus = work.join(format!("corpus-{skills}"));
    let home = work.join(format!("search-home-{artifacts}"));
    if home.join("catalog.db").exists() {
        return home;
    }
    if !corpus.join(".git").exists() {
        let _ = std::fs::remove_dir_all(&corpus);
        let status = Command::new("bash")
            .arg(generator)
            .arg(skills.to_string())
            .arg(&corpus)
            .status()
            .unwrap();
        assert!(status.success(), "gen-corpus failed");
    }
    let started = Instant::now();
    let status = Command::new(AAM)
        .args(["source", "add"])
        .arg(&corpus)
        .args(["--name", "bench"])
        .env("AAM_HOME", &home)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "aam source add failed");
    println!(
        "built a catalog of {artifacts} artifacts in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    home
}

/// Catalog sizes to measure: `AAM_BENCH_SIZES` (space-separated) or `default`.
pub fn sizes(default: &[usize]) -> Vec<usize> {
    std::env::var("AAM_BENCH_SIZES")
        .ok()
        .map(|s| s.split_whitespace().filter_map(|n| n.parse().ok()).collect())
        .unwrap_or_else(|| default.to_vec())
}

pub fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

pub fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}
