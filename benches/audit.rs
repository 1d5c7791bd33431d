//! Offline-audit figures: `aam catalog export` in each format, `catalog stats`,
//! `catalog check` and `doctor`, run as whole processes on catalogs of 10k and
//! 100k artifacts (`AAM_BENCH_SIZES` overrides).

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{AAM, catalog, median, ms};

const RUNS: usize = 3;

fn main() {
    let Some((work, generator)) = common::setup() else {
        return;
    };
    let sizes = common::sizes(&[10_000, 100_000]);
    for artifacts in sizes {
        let home = catalog(&work, &generator, artifacts);
        let out = work.join(format!("audit-out-{artifacts}"));
        std::fs::create_dir_all(&out).unwrap();
        println!("\n== {artifacts} artifacts");
        for format in ["sqlite", "jsonl", "csv"] {
            let file = out.join(format!("catalog.{format}"));
            let args = [
                "catalog",
                "export",
                "--format",
                format,
                "--output",
                file.to_str().unwrap(),
            ];
            let took = time(&home, &out, &args);
            let bytes = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
            println!(
                "export {format:<6} {:>10} median  {:>9.0} artifacts/s  {:>6.1} MiB",
                ms(took),
                artifacts as f64 / took.as_secs_f64(),
                bytes as f64 / 1048576.0
            );
        }
        // The warm-up run of `catalog check` records its pass (the catalog was last
        // written seconds ago), so `check` and `doctor` are timed on an unchanged
        // catalog; benches/sources.sh times the first check after a write too.
        for (label, args) in [
            ("catalog stats", &["--json", "catalog", "stats"][..]),
            ("catalog check", &["--json", "catalog", "check"][..]),
            ("doctor", &["--json", "doctor"][..]),
            ("check --full", &["--json", "catalog", "check", "--full"][..]),
        ] {
            println!("{label:<13} {:>10} median", ms(time(&home, &out, args)));
        }
    }
}

/// Median wall time of `aam args` over `RUNS` runs (after one warm-up run).
fn time(home: &Path, cwd: &Path, args: &[&str]) -> Duration {
    let run = || {
        let started = Instant::now();
        let status = Command::new(AAM)
            .args(args)
            .current_dir(cwd)
            .env("AAM_HOME", home)
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success() || args.contains(&"doctor"), "aam {args:?} failed");
        started.elapsed()
    };
    run();
    median((0..RUNS).map(|_| run()).collect())
}
