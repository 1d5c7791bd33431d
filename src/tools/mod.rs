//! The tool registry: every operation aam offers, defined once.
//!
//! A tool is a type implementing [`Tool`]: a stable `aam_*` name, a description
//! written for an agent, typed input and output (serde + schemars), a risk level
//! and a function over a [`Context`]. The CLI calls tools by type and renders their
//! output; machine front ends go through [`registry`], which erases the types to
//! JSON in and JSON out with the same validation. Nothing here parses arguments
//! or prints: front ends do that.

pub mod agents;
pub mod artifacts;
pub mod audit;
pub mod catalog;
pub mod config;
mod context;
pub mod doctor;
pub mod install;
pub mod packages;
pub mod registries;
pub mod search;
pub mod sources;

use schemars::{JsonSchema, Schema};
use serde::Serialize;
use serde::de::DeserializeOwned;

pub use crate::sources::{qualified_name, registered_sources_hint, split_qualified, unknown_source};
pub use context::{Context, PooledCatalog};

use crate::catalog::{Catalog, SearchRow};
use crate::error::{Error, ErrorCode, Result};
use crate::packages::registry::Registry;
use crate::search::IndexChange;

/// How much a tool can change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Risk {
    /// Reads only.
    Read,
    /// Adds or updates state.
    Write,
    /// Removes state.
    Destructive,
}

/// Runs a catalog write while holding the search index's writer lock, then
/// brings the index along. `write` returns its value, what changed, and the
/// generation after the write. The catalog is the truth: when the index cannot be
/// opened or updated the write still stands, and the next search rebuilds the index.
pub(crate) fn indexed_write<T>(
    ctx: &Context,
    catalog: &mut Catalog,
    write: impl FnOnce(&mut Catalog) -> Result<(T, IndexChange, u64)>,
) -> Result<T> {
    // The last point a cancelled call can stop with nothing written.
    ctx.cancel.check()?;
    let warn = |e: Error| tracing::warn!("search index not updated ({e}); the next search rebuilds it");
    let index = ctx.search_index().map_err(warn).ok();
    let updater = index.as_ref().and_then(|i| i.writer().map_err(warn).ok());
    let before = catalog.generation()?;
    let (value, change, after) = write(catalog)?;
    if let Some(updater) = updater
        && let Err(e) = updater.apply(catalog, &change, before, after)
    {
        warn(e);
    }
    Ok(value)
}

/// [`indexed_write`] for a write that hands over each artifact's search row as it
/// writes it (a new source): the rows go to the index writer while the catalog
/// transaction runs, so tantivy indexes beside SQLite instead of after it. The
/// index commits only after the catalog did, and is rolled back when the catalog
/// write fails. When the index is not at the catalog's generation beforehand, the
/// rows are dropped and the index is brought along afterwards (a rebuild).
pub(crate) fn streamed_write<T>(
    ctx: &Context,
    catalog: &mut Catalog,
    write: impl FnOnce(&mut Catalog, &mut dyn FnMut(SearchRow)) -> Result<(T, IndexChange, u64)>,
) -> Result<T> {
    ctx.cancel.check()?;
    let warn = |e: Error| tracing::warn!("search index not updated ({e}); the next search rebuilds it");
    let index = ctx.search_index().map_err(warn).ok();
    let updater = index.as_ref().and_then(|i| i.writer().map_err(warn).ok());
    let before = catalog.generation()?;
    let Some(updater) = updater else {
        return write(catalog, &mut |_| {}).map(|(value, _, _)| value);
    };
    if !updater.follows(catalog, before).map_err(warn).unwrap_or(false) {
        let (value, change, after) = write(catalog, &mut |_| {})?;
        updater.apply(catalog, &change, before, after).map_err(warn).ok();
        return Ok(value);
    }
    // An index error stops the feeding but not the catalog write, which stands alone.
    let mut failed = None;
    let written = write(catalog, &mut |row| {
        if failed.is_none()
            && let Err(e) = updater.add(row)
        {
            failed = Some(e);
        }
    });
    let outcome = match (written, failed) {
        (Ok((value, _, after)), None) => {
            updater.commit_at(after).map_err(warn).ok();
            return Ok(value);
        }
        (Ok((value, _, _)), Some(e)) => {
            warn(e);
            Ok(value)
        }
        (Err(e), _) => Err(e),
    };
    updater.rollback().map_err(warn).ok();
    outcome
}

/// Mirrors every package of `registry` (configured as `name`) into the catalog
/// and the search index.
pub(crate) fn mirror_registry(ctx: &Context, catalog: &mut Catalog, name: &str, registry: &Registry) -> Result<()> {
    let records = registry.catalog_records()?;
    indexed_write(ctx, catalog, |catalog| {
        let generation = catalog.sync_registry(name, &records)?;
        Ok(((), IndexChange::RegistrySynced(name.to_string()), generation))
    })
}

/// One operation: typed input and output plus what an agent needs to know about it.
pub trait Tool {
    /// Stable snake_case name (`aam_source_add`).
    const NAME: &'static str;
    /// Short human title.
    const TITLE: &'static str;
    /// What it returns, when to use it, what to call next.
    const DESCRIPTION: &'static str;
    /// How much it can change.
    const RISK: Risk;
    /// Whether calling it twice with the same input has the effect of calling it once.
    const IDEMPOTENT: bool;
    /// Whether it may reach other machines (fetching from git remotes).
    const OPEN_WORLD: bool = false;
    /// Error codes particular to it (every tool may also fail with the codes in
    /// [`COMMON_ERRORS`]).
    const ERRORS: &'static [ErrorCode] = &[];
    /// Limits on its input or effects, in words.
    const CONSTRAINTS: &'static [&'static str] = &[];
    /// Documented calls, runnable against the fixture world (see [`Example`]).
    const EXAMPLES: &'static [Example];
    /// Request type.
    type Input: DeserializeOwned + JsonSchema;
    /// Response type.
    type Output: Serialize + JsonSchema;

    /// Runs the operation.
    fn run(ctx: &Context, input: Self::Input) -> Result<Self::Output>;
}

/// Codes any tool may fail with: bad input, local failures, and what the call
/// path itself enforces (read-only mode and confinement, time limits,
/// cancellation, a catalog written by a newer aam).
pub const COMMON_ERRORS: &[ErrorCode] = &[
    ErrorCode::InvalidArgument,
    ErrorCode::CatalogError,
    ErrorCode::CatalogTooNew,
    ErrorCode::IoError,
    ErrorCode::Forbidden,
    ErrorCode::Timeout,
    ErrorCode::Cancelled,
    ErrorCode::Internal,
];

/// Whether `code` is one `T` declares (its own [`Tool::ERRORS`] or a common one).
pub fn declares<T: Tool>(code: ErrorCode) -> bool {
    T::ERRORS.contains(&code) || COMMON_ERRORS.contains(&code)
}

/// `T::run` with the error contract held: in debug builds (every test run) a
/// code the tool does not declare is a bug, so the manifest, the MCP tool list
/// and the docs can never promise less than a tool returns.
fn run_declared<T: Tool>(ctx: &Context, input: T::Input) -> Result<T::Output> {
    let result = T::run(ctx, input);
    if let Err(e) = &result {
        debug_assert!(
            declares::<T>(e.code()),
            "`{}` returned {} which is not in its ERRORS: {}",
            T::NAME,
            e.code(),
            e.message()
        );
    }
    result
}

/// A documented call of a tool.
///
/// Examples double as contract tests: `tests/it/contract.rs` builds the fixture
/// world (source `sample` from `fixtures/sample`; registry `local`, the default,
/// with `review-kit` 1.0.0 and 1.1.0; `review-kit@1.0.0` installed for claude in
/// the project; an unpublished package folder `team-rules`; a second registry
/// folder `extra-registry`) and runs every example through the registry: read
/// tools first, then write tools, then destructive ones, each group by name.
pub struct Example {
    /// What it shows.
    pub title: &'static str,
    /// The input, as JSON text.
    pub input: &'static str,
    /// What the call produces.
    pub expect: Expect,
}

/// The outcome of an [`Example`].
pub enum Expect {
    /// Part of the output, as JSON text: every key given must be in the output
    /// with that value; arrays match element by element from the start (an empty
    /// array matches only an empty one).
    Output(&'static str),
    /// The call fails with this code.
    Error(ErrorCode),
}

/// A tool with its types erased, for machine front ends.
#[derive(Clone, Copy)]
pub struct ToolSpec {
    /// Stable name.
    pub name: &'static str,
    /// Short human title.
    pub title: &'static str,
    /// Description for agents.
    pub description: &'static str,
    /// How much it can change.
    pub risk: Risk,
    /// Idempotency.
    pub idempotent: bool,
    /// Whether it may reach other machines.
    pub open_world: bool,
    /// Error codes particular to it.
    pub errors: &'static [ErrorCode],
    /// Limits, in words.
    pub constraints: &'static [&'static str],
    /// Documented calls.
    pub examples: &'static [Example],
    /// JSON Schema of the input.
    pub input_schema: fn() -> Schema,
    /// JSON Schema of the output.
    pub output_schema: fn() -> Schema,
    /// Runs it on JSON input, returning JSON output.
    pub call: fn(&Context, serde_json::Value) -> Result<serde_json::Value>,
}

/// Runs a tool by type (as the CLI does), logging the call like every front end.
pub fn invoke<T: Tool>(ctx: &Context, input: T::Input) -> Result<T::Output> {
    let request_id = next_request_id();
    logged(&request_id, T::NAME, || run_declared::<T>(ctx, input))
}

/// The one call path of the machine front ends (`aam tool call`, MCP tools and
/// MCP resources): refuses a write in read-only mode, validates the JSON input,
/// holds the error contract, and logs the call once. Time limits and
/// cancellation reach the tool through `ctx.cancel`.
pub fn call(
    ctx: &Context,
    spec: &ToolSpec,
    input: serde_json::Value,
    read_only: bool,
    request_id: &str,
) -> Result<serde_json::Value> {
    logged(request_id, spec.name, || {
        if spec.risk != Risk::Read && read_only {
            return Err(read_only_refusal(spec.name));
        }
        (spec.call)(ctx, input)
    })
}

/// Runs `call` for `tool`, then logs the request id, tool, duration, status and
/// error code at info level (stderr, or the server's log file).
pub fn logged<T>(request_id: &str, tool: &str, call: impl FnOnce() -> Result<T>) -> Result<T> {
    let started = std::time::Instant::now();
    let result = call();
    log_call(request_id, tool, started, &result);
    result
}

/// Logs one finished call: request id, tool, duration, status and error code.
fn log_call<T>(request_id: &str, tool: &str, started: std::time::Instant, result: &Result<T>) {
    let duration_ms = started.elapsed().as_micros() as f64 / 1000.0;
    match result {
        Ok(_) => tracing::info!(request_id, tool, duration_ms, status = "ok", "tool call"),
        Err(e) => tracing::info!(
            request_id,
            tool,
            duration_ms,
            status = "error",
            code = e.code().as_str(),
            "tool call"
        ),
    }
}

/// Whether `AAM_READ_ONLY` (or `READ_ONLY`) is set to a true value: machine
/// front ends then refuse every tool that is not a read.
pub fn read_only_mode() -> bool {
    ["AAM_READ_ONLY", "READ_ONLY"].iter().any(|name| {
        std::env::var(name).is_ok_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on"))
    })
}

/// The refusal of a write tool in read-only mode.
pub fn read_only_refusal(tool: &str) -> Error {
    Error::new(
        ErrorCode::Forbidden,
        format!("`{tool}` changes state and read-only mode is on"),
    )
    .with_hint("unset `AAM_READ_ONLY` (and `READ_ONLY`) to allow writes")
}

/// A request id unique within this process: `<pid>-<n>`.
pub fn next_request_id() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{}-{n}", std::process::id())
}

/// `value` without object members that are `null`: strict function-calling
/// modes send every optional field, as `null` when unset, which means absent.
fn without_nulls(value: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, without_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(without_nulls).collect()),
        other => other,
    }
}

fn call_json<T: Tool>(ctx: &Context, input: serde_json::Value) -> Result<serde_json::Value> {
    let input: T::Input = serde_path_to_error::deserialize(without_nulls(input)).map_err(|e| {
        let field = e.path().to_string();
        let problem = e.into_inner();
        let message = if field == "." {
            format!("invalid input for `{}`: {problem}", T::NAME)
        } else {
            format!("invalid `{field}` for `{}`: {problem}", T::NAME)
        };
        Error::invalid_argument(message).with_hint(format!("see the input schema of `{}`", T::NAME))
    })?;
    let output = run_declared::<T>(ctx, input)?;
    serde_json::to_value(output).map_err(|e| Error::internal(format!("cannot encode the output of `{}`: {e}", T::NAME)))
}

fn spec<T: Tool>() -> ToolSpec {
    ToolSpec {
        name: T::NAME,
        title: T::TITLE,
        description: T::DESCRIPTION,
        risk: T::RISK,
        idempotent: T::IDEMPOTENT,
        open_world: T::OPEN_WORLD,
        errors: T::ERRORS,
        constraints: T::CONSTRAINTS,
        examples: T::EXAMPLES,
        input_schema: || schemars::schema_for!(T::Input),
        output_schema: || schemars::schema_for!(T::Output),
        call: call_json::<T>,
    }
}

/// Every registered tool, sorted by name.
pub fn registry() -> Vec<ToolSpec> {
    let mut tools = vec![
        spec::<sources::SourceAdd>(),
        spec::<sources::SourceList>(),
        spec::<sources::SourceScan>(),
        spec::<sources::SourceUpdate>(),
        spec::<sources::SourceDiff>(),
        spec::<sources::SourceRemove>(),
        spec::<sources::SourceEnableDefaults>(),
        spec::<artifacts::SourceCandidates>(),
        spec::<search::Search>(),
        spec::<artifacts::Info>(),
        spec::<artifacts::ListAvailable>(),
        spec::<audit::Audit>(),
        spec::<catalog::Reindex>(),
        spec::<packages::PkgInit>(),
        spec::<packages::PkgCreate>(),
        spec::<packages::PkgValidate>(),
        spec::<packages::PkgPack>(),
        spec::<packages::PkgPublish>(),
        spec::<registries::RegistryInit>(),
        spec::<registries::RegistryAdd>(),
        spec::<registries::RegistryList>(),
        spec::<registries::RegistryRemove>(),
        spec::<install::Install>(),
        spec::<install::Uninstall>(),
        spec::<install::Verify>(),
        spec::<install::VerifyAll>(),
        spec::<install::Diff>(),
        spec::<install::ListInstalled>(),
        spec::<install::Outdated>(),
        spec::<install::Upgrade>(),
        spec::<install::PackageInfo>(),
        spec::<install::Inventory>(),
        spec::<install::Adopt>(),
        spec::<config::ConfigGet>(),
        spec::<config::ConfigSet>(),
        spec::<config::Init>(),
        spec::<catalog::Export>(),
        spec::<catalog::Stats>(),
        spec::<catalog::Check>(),
        spec::<catalog::Repair>(),
        spec::<doctor::Doctor>(),
        spec::<agents::Agents>(),
    ];
    tools.sort_by_key(|t| t.name);
    tools
}

/// Finds a registered tool by name.
pub fn find(name: &str) -> Option<ToolSpec> {
    registry().into_iter().find(|t| t.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::AamHome;

    #[test]
    fn names_are_unique_prefixed_and_schemas_build() {
        let tools = registry();
        let mut names: Vec<_> = tools.iter().map(|t| t.name).collect();
        names.dedup();
        assert_eq!(names.len(), tools.len());
        for tool in &tools {
            assert!(tool.name.starts_with("aam_"), "{}", tool.name);
            assert!(!tool.description.is_empty());
            let input = serde_json::to_value((tool.input_schema)()).unwrap();
            assert_eq!(input["type"], "object", "{}", tool.name);
            serde_json::to_value((tool.output_schema)()).unwrap();
        }
        assert!(find("aam_source_add").is_some());
        assert!(find("aam_nope").is_none());
    }

    #[test]
    fn json_calls_validate_input() {
        let home = tempfile::tempdir().unwrap();
        let ctx = Context::new(AamHome::at(home.path().to_path_buf()), home.path().to_path_buf());
        let list = find("aam_source_list").unwrap();
        assert_eq!(
            (list.call)(&ctx, serde_json::json!({})).unwrap(),
            serde_json::json!({"sources": []})
        );
        let err = (list.call)(&ctx, serde_json::json!({"bogus": 1})).unwrap_err();
        assert_eq!(err.code(), crate::error::ErrorCode::InvalidArgument);
        assert!(err.message().contains("bogus"), "{}", err.message());
        // A wrong type names the field it is in.
        let search = find("aam_search").unwrap();
        let err = (search.call)(&ctx, serde_json::json!({"query": "x", "limit": "many"})).unwrap_err();
        assert!(
            err.message().starts_with("invalid `limit` for `aam_search`"),
            "{}",
            err.message()
        );
    }

    /// Tools never import each other: what two tools share lives on `Catalog`,
    /// `Context` or a domain module, so each tool file can move or change alone.
    #[test]
    fn tool_modules_do_not_import_each_other() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/tools");
        let tools: Vec<String> = std::fs::read_dir(&root)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.file_name().is_some_and(|n| n != "mod.rs" && n != "context.rs"))
            .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
            .collect();
        assert!(tools.contains(&"sources".to_string()), "{tools:?}");
        let mut files = vec![];
        let mut stack = vec![root.clone()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    files.push(path);
                }
            }
        }
        for file in files {
            let rel = file.strip_prefix(&root).unwrap();
            let Some(own) = rel.iter().next().map(|c| {
                let c = std::path::Path::new(c);
                c.file_stem().unwrap().to_string_lossy().into_owned()
            }) else {
                continue;
            };
            let up = match rel.components().count() {
                1 => "super::".to_string(),
                n => "super::".repeat(n),
            };
            let text = std::fs::read_to_string(&file).unwrap();
            for other in tools.iter().filter(|t| **t != own) {
                for form in [format!("{up}{other}::"), format!("crate::tools::{other}::")] {
                    assert!(
                        !text.contains(&form),
                        "{} imports the tool module `{other}` ({form})",
                        rel.display()
                    );
                }
            }
        }
    }
}
