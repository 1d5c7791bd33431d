//! The call path every front end shares: typed calls from the CLI
//! ([`invoke`]) and JSON calls from the machine front ends ([`call`]) both hold
//! the error contract and log one line per call; [`call`] also refuses writes in
//! read-only mode and validates JSON input, naming the failing field.

use super::{Context, Risk, Tool, ToolSpec, declares};
use crate::error::{Error, ErrorCode, Result};

/// `T::run` with the error contract held: in debug builds (every test run) a
/// code the tool does not declare is a bug, so the manifest, the MCP tool list
/// and the docs can never promise less than a tool returns.
pub(super) fn run_declared<T: Tool>(ctx: &Context, input: T::Input) -> Result<T::Output> {
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

/// The target call lines are logged under (what `AAM_LOG=aam::tools=info` and
/// MCP clients see as the logger), wherever this file sits.
const TARGET: &str = "aam::tools";

/// Logs one finished call: request id, tool, duration, status and error code.
fn log_call<T>(request_id: &str, tool: &str, started: std::time::Instant, result: &Result<T>) {
    let duration_ms = started.elapsed().as_micros() as f64 / 1000.0;
    match result {
        Ok(_) => tracing::info!(target: TARGET, request_id, tool, duration_ms, status = "ok", "tool call"),
        Err(e) => tracing::info!(
            target: TARGET,
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

pub(super) fn call_json<T: Tool>(ctx: &Context, input: serde_json::Value) -> Result<serde_json::Value> {
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
