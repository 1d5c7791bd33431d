//! `aam_catalog_export`: write the catalog out as JSON lines or CSV, never over aam's
//! own files.

use std::io::Write;
use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::catalog::{ExportCounts, ExportRecord};
use crate::error::{Error, ErrorCode, Result};
use crate::tools::{Context, Example, Expect, Risk, Tool};

/// Formats `aam_catalog_export` writes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum ExportFormat {
    /// A SQLite database: the whole catalog, every table.
    #[default]
    Sqlite,
    /// JSON lines: one self-contained record per artifact, then sources, commits, packages and installs.
    Jsonl,
    /// A flat table of artifacts with a header row.
    Csv,
}

impl ExportFormat {
    /// The format's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Sqlite => "sqlite",
            Self::Jsonl => "jsonl",
            Self::Csv => "csv",
        }
    }

    /// The file extension of the format.
    pub fn extension(self) -> &'static str {
        match self {
            Self::Sqlite => "db",
            Self::Jsonl => "jsonl",
            Self::Csv => "csv",
        }
    }

    /// The format a file name's extension says (`.csv`, `.jsonl` or
    /// `.ndjson`, `.db`, `.sqlite` or `.sqlite3`), when it says one.
    pub fn of_file(name: &str) -> Option<Self> {
        let extension = name.rsplit_once('.')?.1.to_ascii_lowercase();
        match extension.as_str() {
            "csv" => Some(Self::Csv),
            "jsonl" | "ndjson" => Some(Self::Jsonl),
            "db" | "sqlite" | "sqlite3" => Some(Self::Sqlite),
            _ => None,
        }
    }

    /// The format asked for, else the one `output`'s name says, else SQLite.
    pub fn chosen(asked: Option<Self>, output: Option<&str>) -> Self {
        asked.or_else(|| output.and_then(Self::of_file)).unwrap_or_default()
    }
}

/// Input of `aam_catalog_export`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExportInput {
    /// Format (default: the one `output`'s extension names, `.csv`, `.jsonl` or `.db`; else `sqlite`).
    #[serde(default)]
    pub format: Option<ExportFormat>,
    /// File to write (default `aam-catalog.<db|jsonl|csv>` in the current folder). An existing file is replaced, atomically, only when it is empty or an earlier export in this format.
    #[serde(default)]
    pub output: Option<String>,
}

/// Output of `aam_catalog_export`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExportOutput {
    /// Format written.
    pub format: ExportFormat,
    /// File written.
    pub path: String,
    /// Records of each kind in the export.
    pub records: ExportCounts,
    /// Size of the file in bytes.
    pub bytes: u64,
    /// Wall time in milliseconds.
    pub elapsed_ms: u64,
}

/// The columns of the CSV export, in order.
pub const CSV_COLUMNS: [&str; 17] = [
    "source",
    "source_url",
    "ref",
    "commit",
    "type",
    "name",
    "path",
    "description",
    "platform",
    "main_file",
    "content_digest",
    "file_count",
    "total_size",
    "files",
    "finding_count",
    "max_severity",
    "findings",
];

/// Exports the catalog for offline audits.
pub struct Export;

impl Tool for Export {
    const NAME: &'static str = "aam_catalog_export";
    const TITLE: &'static str = "Export the catalog";
    const DESCRIPTION: &'static str = "Write the catalog to one file for offline audits, as a consistent snapshot even while other aam processes write: `sqlite` (every table; open it with any SQLite tool), `jsonl` (one self-contained record per artifact with source URL, ref, commit, path, type, name, description and every file's size and blake3 and its content-audit findings, then sources, commits, packages and installs; each record names its kind in `record`) or `csv` (a flat artifacts table with finding count, highest severity and findings as JSON). Returns the path, record counts and size.";
    const RISK: Risk = Risk::Write;
    const IDEMPOTENT: bool = true;
    const ERRORS: &'static [ErrorCode] = &[
        ErrorCode::IoError,
        ErrorCode::CatalogError,
        ErrorCode::Forbidden,
        ErrorCode::Conflict,
        ErrorCode::InvalidArgument,
    ];
    const CONSTRAINTS: &'static [&'static str] = &[
        "`output` must lie inside the project or AAM_HOME when called over MCP or `aam tool call`",
        "inside AAM_HOME, `output` may only be under `exports/`; never in `.aam/`, an agent's folder or a file installs add sections to: aam's own files and installed files are never replaced",
        "an existing `output` is replaced only when it is empty or an earlier export in the same format; any other file, a link or a folder is refused",
    ];
    const EXAMPLES: &'static [Example] = &[
        Example {
            title: "export every artifact as JSON lines",
            input: r#"{"format": "jsonl", "output": "audit/catalog.jsonl"}"#,
            expect: Expect::Output(
                r#"{"format": "jsonl", "records": {"artifacts": 8, "sources": 1, "packages": 1, "installs": 1}}"#,
            ),
        },
        Example {
            title: "a SQLite snapshot for any SQLite tool",
            input: r#"{"format": "sqlite", "output": "audit/catalog.db"}"#,
            expect: Expect::Output(r#"{"format": "sqlite", "records": {"artifacts": 8}}"#),
        },
        Example {
            title: "a format that does not exist",
            input: r#"{"format": "xml"}"#,
            expect: Expect::Error(ErrorCode::InvalidArgument),
        },
    ];
    type Input = ExportInput;
    type Output = ExportOutput;

    fn run(ctx: &Context, input: ExportInput) -> Result<ExportOutput> {
        let started = std::time::Instant::now();
        let format = ExportFormat::chosen(input.format, input.output.as_deref());
        let given = input
            .output
            .unwrap_or_else(|| format!("aam-catalog.{}", format.extension()));
        match given.as_str() {
            "" => return Err(Error::invalid_argument("`output` is empty").with_hint("name the file to write")),
            "-" => {
                return Err(Error::invalid_argument("`-` (standard output) is for the command line")
                    .with_hint("name the file to write, or run `aam catalog export --output -`"));
            }
            _ => {}
        }
        let path = ctx.output_path(&given)?;
        refuse_replacing_others(&path, format, &given)?;
        let catalog = ctx.catalog()?;
        let records = crate::atomic::write_with(&path, |temp| match format {
            ExportFormat::Sqlite => {
                ctx.progress.start("writing a snapshot of the catalog", None);
                let counts = catalog.snapshot_into(temp, EXPORT_APPLICATION_ID);
                ctx.progress.finish();
                counts
            }
            ExportFormat::Jsonl => {
                let mut out = std::io::BufWriter::new(create(temp)?);
                let counts = catalog.export_records(ctx.progress.as_ref(), &mut |record| {
                    ctx.cancel.check()?;
                    serde_json::to_writer(&mut out, &record).map_err(|e| write_error(temp, e.into()))?;
                    out.write_all(b"\n").map_err(|e| write_error(temp, e))
                })?;
                out.flush().map_err(|e| write_error(temp, e))?;
                Ok(counts)
            }
            ExportFormat::Csv => {
                let mut out = csv::Writer::from_writer(std::io::BufWriter::new(create(temp)?));
                out.write_record(CSV_COLUMNS).map_err(|e| write_error(temp, e.into()))?;
                let counts = catalog.export_records(ctx.progress.as_ref(), &mut |record| {
                    ctx.cancel.check()?;
                    let ExportRecord::Artifact(a) = record else {
                        return Ok(());
                    };
                    let files = serde_json::to_string(&a.files).unwrap_or_default();
                    let findings = serde_json::to_string(&a.findings).unwrap_or_default();
                    let max_severity = ["high", "warn", "info"]
                        .into_iter()
                        .find(|s| a.findings.iter().any(|f| f.severity == *s))
                        .unwrap_or_default();
                    let size: i64 = a.files.iter().map(|f| f.size).sum();
                    let cells = [
                        a.source.as_str(),
                        &a.source_url,
                        a.git_ref.as_deref().unwrap_or_default(),
                        a.commit.as_deref().unwrap_or_default(),
                        &a.kind,
                        &a.name,
                        &a.path,
                        a.description.as_deref().unwrap_or_default(),
                        a.platform.as_deref().unwrap_or_default(),
                        &a.main_file,
                        &a.content_digest,
                        &a.files.len().to_string(),
                        &size.to_string(),
                        &files,
                        &a.findings.len().to_string(),
                        max_severity,
                        &findings,
                    ];
                    out.write_record(cells.map(|cell| spreadsheet_safe(cell).into_owned()))
                        .map_err(|e| write_error(temp, e.into()))
                })?;
                out.flush().map_err(|e| write_error(temp, e))?;
                Ok(ExportCounts {
                    artifacts: counts.artifacts,
                    findings: counts.findings,
                    ..ExportCounts::default()
                })
            }
        })?;
        let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        Ok(ExportOutput {
            format,
            path: path.display().to_string(),
            records,
            bytes,
            elapsed_ms: started.elapsed().as_millis() as u64,
        })
    }
}

/// Refuses an output that holds something other than an earlier export of
/// `format`: a folder, a link, or a file of the user's (over MCP an agent
/// names the output, and `NOTES.md` or `.mcp.json` must not become a CSV).
fn refuse_replacing_others(path: &Path, format: ExportFormat, shown: &str) -> Result<()> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io("read", path, e)),
    };
    if meta.is_dir() {
        return Err(
            Error::invalid_argument(format!("`{shown}` is a folder")).with_hint(format!(
                "name a file in it, such as `{}/aam-catalog.{}`",
                shown.trim_end_matches('/'),
                format.extension()
            )),
        );
    }
    let earlier = meta.is_file() && is_earlier_export(path, format).map_err(|e| Error::io("read", path, e))?;
    if !earlier {
        return Err(Error::new(
            ErrorCode::Conflict,
            format!(
                "`{shown}` exists and is not an earlier {} export: an export replaces only what an export wrote",
                format.as_str()
            ),
        )
        .with_hint("name another file, or remove that one first"));
    }
    Ok(())
}

/// The longest first line read to tell an earlier export.
const MAX_FIRST_LINE: u64 = 16 * 1024 * 1024;

/// The application id a SQLite export carries in its header (`aamc`), which
/// tells an earlier export from another database.
const EXPORT_APPLICATION_ID: i32 = 0x6161_6d63;

/// Whether the plain file at `path` is empty or starts as an export of
/// `format` does: a SQLite database with aam's application id, JSON lines
/// whose first record names its kind, a CSV with the export's header.
fn is_earlier_export(path: &Path, format: ExportFormat) -> std::io::Result<bool> {
    use std::io::{BufRead, Read};
    // The first line, whole: an artifact record with many files runs long.
    let mut head = Vec::new();
    std::io::BufReader::new(std::fs::File::open(path)?.take(MAX_FIRST_LINE)).read_until(b'\n', &mut head)?;
    if head.is_empty() {
        return Ok(true);
    }
    let first_line = head.strip_suffix(b"\n").unwrap_or(&head);
    Ok(match format {
        ExportFormat::Sqlite => {
            head.len() >= 72
                && head.starts_with(b"SQLite format 3\0")
                && head[68..72] == EXPORT_APPLICATION_ID.to_be_bytes()
        }
        ExportFormat::Jsonl => serde_json::from_slice::<serde_json::Value>(first_line).is_ok_and(|record| match record
            .get("record")
            .and_then(serde_json::Value::as_str)
        {
            Some("artifact") => record.get("content_digest").is_some() && record.get("source_url").is_some(),
            Some(kind) => ["source", "commit", "package", "install"].contains(&kind),
            None => false,
        }),
        ExportFormat::Csv => first_line.strip_suffix(b"\r").unwrap_or(first_line) == CSV_COLUMNS.join(",").as_bytes(),
    })
}

fn create(path: &Path) -> Result<std::fs::File> {
    std::fs::File::create(path).map_err(|e| write_error(path, e))
}

fn write_error(path: &Path, e: std::io::Error) -> Error {
    Error::io("write", path, e)
}
/// `cell` as a spreadsheet shows it, never runs it: text a repository wrote
/// (a name, a description) that starts like a formula (`=`, `+`, `-`, `@`, a
/// tab or a carriage return) gets a leading `'`, as OWASP advises for CSV.
fn spreadsheet_safe(cell: &str) -> std::borrow::Cow<'_, str> {
    match cell.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        true => format!("'{cell}").into(),
        false => cell.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_empty_file_or_an_export_of_the_format_counts_as_an_earlier_export() {
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str, bytes: &[u8]| {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).unwrap();
            path
        };
        let csv = file("a.csv", format!("{}\r\nteam,...\r\n", CSV_COLUMNS.join(",")).as_bytes());
        let long = format!(
            "{{\"record\":\"artifact\",\"source_url\":\"u\",\"content_digest\":\"d\",\"files\":\"{}\"}}\n",
            "x".repeat(200_000)
        );
        let jsonl = file("a.jsonl", long.as_bytes());
        let customers = file("customers.jsonl", b"{\"record\":\"cust-0001\",\"name\":\"Alice\"}\n");
        let empty = file("empty", b"");
        let mut sqlite = b"SQLite format 3\0".to_vec();
        sqlite.resize(100, 0);
        sqlite[68..72].copy_from_slice(&EXPORT_APPLICATION_ID.to_be_bytes());
        let sqlite_export = file("a.db", &sqlite);
        sqlite[68..72].copy_from_slice(&0i32.to_be_bytes());
        let other_db = file("other.db", &sqlite);
        let notes = file("notes.md", b"# notes\n");
        let other_json = file("other.jsonl", b"{\"kind\":\"x\"}\n");
        let shorter_csv = file("b.csv", b"source,source_url\n");
        let cases = [
            (&csv, ExportFormat::Csv, true),
            (&jsonl, ExportFormat::Jsonl, true),
            (&sqlite_export, ExportFormat::Sqlite, true),
            (&empty, ExportFormat::Sqlite, true),
            (&csv, ExportFormat::Jsonl, false),
            (&jsonl, ExportFormat::Csv, false),
            (&other_db, ExportFormat::Sqlite, false),
            (&notes, ExportFormat::Csv, false),
            (&other_json, ExportFormat::Jsonl, false),
            (&customers, ExportFormat::Jsonl, false),
            (&shorter_csv, ExportFormat::Csv, false),
        ];
        for (path, format, expected) in cases {
            assert_eq!(
                is_earlier_export(path, format).unwrap(),
                expected,
                "{} as {format:?}",
                path.display()
            );
        }
    }

    #[test]
    fn cells_that_start_like_formulas_are_shown_not_run() {
        for formula in ["=cmd|' /C calc'!A0", "@SUM(1+1)*cmd|x", "+plus", "-2+3", "\tx", "\rx"] {
            assert_eq!(spreadsheet_safe(formula), format!("'{formula}"));
        }
        for plain in ["pdf-forms", "Fill PDF forms", "3", "", "a=b", "[]"] {
            assert_eq!(spreadsheet_safe(plain), plain);
        }
    }
}
