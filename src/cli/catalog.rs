//! `aam catalog ...`: the arguments of each catalog maintenance command, the tool
//! input each becomes, and how its output reads for people.
//!
//! Each command's `Args` struct converts into its tool input with one `From`; the
//! match in [`run`] only picks the tool and the renderer. `--output -` (an export
//! printed to stdout) is a front-end matter: the tool writes a file, the CLI copies
//! it out.

use std::io::Write;

use super::Output;
use super::render::{health, health_report, plural, table};
use crate::error::{Error, Result};
use crate::sources::short_id;
use crate::tools::catalog::{
    Check, CheckInput, Export, ExportFormat, ExportInput, ExportOutput, Reindex, ReindexInput, ReindexOutput, Repair,
    RepairInput, RepairOutput, Stats, StatsInput, StatsOutput, TypeCounts,
};
use crate::tools::{Context, invoke};

/// The `aam catalog` subcommands.
#[derive(Debug, clap::Subcommand)]
pub(super) enum CatalogCommand {
    /// Rebuild the search index from the catalog.
    Reindex,
    /// Write the catalog to one file for offline audits (a consistent snapshot, even while aam writes).
    Export(CatalogExportArgs),
    /// Counts per source and type, sizes on disk, index generation, last update times.
    Stats,
    /// Check integrity, foreign keys, migrations, the index, the caches and rows (exit 1 on a failure).
    Check(CatalogCheckArgs),
}

/// Runs one `aam catalog` command and returns its exit code.
pub(super) fn run(ctx: &Context, out: &Output, command: CatalogCommand) -> Result<i32> {
    match command {
        CatalogCommand::Reindex => out.emit(&invoke::<Reindex>(ctx, ReindexInput {})?, reindexed),
        CatalogCommand::Export(args) => export(ctx, out, args),
        CatalogCommand::Stats => out.emit(&invoke::<Stats>(ctx, StatsInput {})?, stats),
        CatalogCommand::Check(args) => check(ctx, out, args),
    }
}

/// `aam catalog export`.
#[derive(Debug, clap::Args)]
pub(super) struct CatalogExportArgs {
    /// sqlite (every table), jsonl (a record per artifact, then sources, commits, packages, installs) or csv (artifacts); default: what `--output`'s extension says (`.csv`, `.jsonl`, `.db`), else sqlite.
    #[arg(long, value_enum)]
    format: Option<ExportFormat>,
    /// File to write (default `aam-catalog.<db|jsonl|csv>`); `-` prints jsonl or csv to stdout. An existing file is replaced only when it is an earlier export.
    #[arg(long, short, value_name = "PATH")]
    output: Option<String>,
}

impl From<CatalogExportArgs> for ExportInput {
    fn from(a: CatalogExportArgs) -> Self {
        Self {
            format: a.format,
            output: a.output,
        }
    }
}

/// Exports to a file, or with `--output -` through a temporary file to stdout.
fn export(ctx: &Context, out: &Output, args: CatalogExportArgs) -> Result<i32> {
    if args.output.as_deref() != Some("-") {
        return out.emit(&invoke::<Export>(ctx, args.into())?, exported);
    }
    let format = ExportFormat::chosen(args.format, None);
    if format == ExportFormat::Sqlite {
        return Err(Error::invalid_argument("a SQLite export cannot go to stdout")
            .with_hint("pass `--output FILE`, or `--format jsonl` or `--format csv` for stdout"));
    }
    let dir = tempfile::tempdir().map_err(|e| Error::io("create", &std::env::temp_dir(), e))?;
    let file = dir.path().join(format!("export.{}", format.extension()));
    let input = ExportInput {
        format: Some(format),
        output: Some(file.display().to_string()),
    };
    invoke::<Export>(ctx, input)?;
    let mut reader = std::fs::File::open(&file).map_err(|e| Error::io("read", &file, e))?;
    let mut stdout = std::io::stdout().lock();
    match std::io::copy(&mut reader, &mut stdout).and_then(|_| stdout.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Error::io("write", std::path::Path::new("<stdout>"), e))
        }
        _ => Ok(0),
    }
}

/// `aam catalog check`.
#[derive(Debug, clap::Args)]
pub(super) struct CatalogCheckArgs {
    /// Rebuild the index and fetch missing cache objects again, then check again.
    #[arg(long)]
    repair: bool,
    /// Run the complete checks (seconds on a large catalog): SQLite's integrity check, which also compares every index with its table, instead of the quick check, and the passes over every row (foreign keys, artifact rows).
    #[arg(long)]
    full: bool,
}

impl From<CatalogCheckArgs> for CheckInput {
    fn from(a: CatalogCheckArgs) -> Self {
        Self { full: a.full }
    }
}

impl From<CatalogCheckArgs> for RepairInput {
    fn from(a: CatalogCheckArgs) -> Self {
        Self { full: a.full }
    }
}

/// Checks (or with `--repair` repairs, then checks) and exits 1 when unhealthy.
fn check(ctx: &Context, out: &Output, args: CatalogCheckArgs) -> Result<i32> {
    let healthy = if args.repair {
        let output = invoke::<Repair>(ctx, args.into())?;
        out.emit(&output, repaired)?;
        output.healthy
    } else {
        let output = invoke::<Check>(ctx, args.into())?;
        out.emit(&output, health_report)?;
        output.healthy
    };
    Ok(if healthy { 0 } else { 1 })
}

/// `aam catalog reindex`.
fn reindexed(o: &ReindexOutput) -> String {
    format!(
        "Rebuilt the search index: {} documents at catalog generation {} in {} ms\n",
        o.documents, o.generation, o.elapsed_ms
    )
}

/// `aam catalog export`.
fn exported(o: &ExportOutput) -> String {
    let r = &o.records;
    if o.format == ExportFormat::Csv {
        return format!(
            "Exported {} to {} (csv, {}, {} ms)\n",
            plural(r.artifacts, "artifact"),
            o.path,
            bytes(o.bytes),
            o.elapsed_ms
        );
    }
    format!(
        "Exported {}, {}, {}, {} and {} to {} ({}, {}, {} ms)\n",
        plural(r.artifacts, "artifact"),
        plural(r.sources, "source"),
        plural(r.commits, "commit"),
        plural(r.packages, "package"),
        plural(r.installs, "install"),
        o.path,
        o.format.as_str(),
        bytes(o.bytes),
        o.elapsed_ms
    )
}

/// The per-type columns of a stats row: skill, agent, prompt, instruction, total.
fn type_counts(c: &TypeCounts) -> Vec<String> {
    [c.skill, c.agent, c.prompt, c.instruction, c.total]
        .iter()
        .map(|n| n.to_string())
        .collect()
}

/// A size for people: `512 B`, `1.5 KiB`, `3.0 MiB`.
fn bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 30 => format!("{:.1} GiB", n as f64 / f64::from(1u32 << 30)),
        n if n >= 1 << 20 => format!("{:.1} MiB", n as f64 / f64::from(1u32 << 20)),
        n if n >= 1 << 10 => format!("{:.1} KiB", n as f64 / 1024.0),
        n => format!("{n} B"),
    }
}

/// `aam catalog stats`.
fn stats(o: &StatsOutput) -> String {
    let mut rows: Vec<Vec<String>> = o
        .sources
        .iter()
        .map(|s| {
            let mut row = vec![s.name.clone()];
            row.extend(type_counts(&s.artifacts));
            row.push(s.commit.as_deref().map(short_id).unwrap_or("-").to_string());
            row.push(s.fetched_at.clone().unwrap_or_else(|| "never".into()));
            row.push(bytes(s.cache_bytes));
            row
        })
        .collect();
    let mut total = vec!["(all)".to_string()];
    total.extend(type_counts(&o.artifacts));
    total.extend(["".into(), o.last_fetched_at.clone().unwrap_or_default(), "".into()]);
    rows.push(total);
    let mut out = table(
        &[
            "SOURCE",
            "SKILLS",
            "AGENTS",
            "PROMPTS",
            "INSTRUCTIONS",
            "TOTAL",
            "COMMIT",
            "FETCHED",
            "CACHE",
        ],
        &rows,
    );
    out.push_str(&format!(
        "\nCatalog: schema {}, generation {}, {} ever, {}, {}, {}, {}\n",
        o.schema_version,
        o.generation,
        plural(o.artifacts_ever, "artifact"),
        plural(o.commits, "commit"),
        plural(o.packages, "package"),
        plural(o.registry_packages, "registry package"),
        plural(o.installs, "install")
    ));
    out.push_str(&format!(
        "Index: {}{}{}\n",
        o.index.status,
        o.index
            .generation
            .map(|g| format!(", generation {g}"))
            .unwrap_or_default(),
        o.index
            .documents
            .map(|d| format!(", {d} documents"))
            .unwrap_or_default()
    ));
    out.push_str(&format!("MCP skills: {} served", o.mcp_skills.served));
    for left in &o.mcp_skills.left_out {
        out.push_str(&format!(", {} left out ({})", left.count, left.reason));
    }
    out.push('\n');
    out.push_str(&format!(
        "Disk: catalog {}, index {}, caches {}, installed originals {} (in {})\n",
        bytes(o.disk.catalog),
        bytes(o.disk.index),
        bytes(o.disk.caches),
        bytes(o.disk.objects),
        o.home
    ));
    if let Some(at) = &o.last_indexed_at {
        out.push_str(&format!("Last indexed: {at}\n"));
    }
    out
}

/// `aam catalog check --repair`.
fn repaired(o: &RepairOutput) -> String {
    let mut out = String::new();
    if o.actions.is_empty() {
        out.push_str("Nothing to repair.\n\n");
    }
    for action in &o.actions {
        match (&action.error, action.ok) {
            (None, true) => out.push_str(&format!("repaired  {}: {}\n", action.check, action.action)),
            (None, false) => out.push_str(&format!("not yet   {}: {}\n", action.check, action.action)),
            (Some(error), _) => out.push_str(&format!("failed    {}: {} ({error})\n", action.check, action.action)),
        }
    }
    if !o.actions.is_empty() {
        out.push('\n');
    }
    out + &health(&o.checks, &o.summary)
}
