//! `aam mcp serve`: the tool registry as an MCP server (rmcp), over stdio or
//! Streamable HTTP.
//!
//! Tools are generated from [`crate::tools::registry`]: read tools are always
//! listed; write tools only with `--allow-write`, and even then `AAM_READ_ONLY=1`
//! refuses them. Each call runs on a blocking thread under a time limit, with the
//! paths it is given confined to the served project and `AAM_HOME`. Domain
//! failures are tool results (`isError`), never protocol errors.
//!
//! Every catalog skill that follows the Agent Skills rules is also served
//! through the Skills over MCP extension (`skills`); [`Surface::SkillsOnly`]
//! (`--skills-only`) serves nothing else.

pub mod clients;
pub mod http;
pub mod jsonrpc;
pub mod logging;
mod progress;
mod prompts;
mod resources;
pub mod skills;
mod stdio;

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetPromptRequestParams, GetPromptResponse,
    GetSkillRequestParams, GetSkillResult, Implementation, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListSkillsResult, ListToolsResult, MetaObject, PaginatedRequestParams,
    ReadResourceDirectoryRequestParams, ReadResourceDirectoryResult, ReadResourceRequestParams, ReadResourceResponse,
    ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;

use crate::error::{Error, ErrorCode, Result};
use crate::progress::Progress;
use crate::tools::{Context, Risk, ToolSpec, read_only_mode, registry};

/// Tools whose success changes `resources/list` (one resource per source).
const CHANGE_RESOURCE_LIST: &[&str] = &["aam_source_add", "aam_source_remove", "aam_source_enable_defaults"];

/// How long a tool's reply waits for its `list_changed` notice to be sent.
const NOTICE_WAIT: Duration = Duration::from_millis(200);

/// Default time limit of one tool call.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// How the server behaves, whatever the transport.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// Whether write tools are listed and callable.
    pub allow_write: bool,
    /// Whether write tool calls are refused (`AAM_READ_ONLY`).
    pub read_only: bool,
    /// Time limit of one tool call (`AAM_TOOL_TIMEOUT`).
    pub timeout: Duration,
    /// `stdio` or `http`, reported by `aam://server/info`.
    pub transport: &'static str,
}

impl ServerOptions {
    /// Options from the environment: `AAM_READ_ONLY`/`READ_ONLY` and
    /// `AAM_TOOL_TIMEOUT` (seconds, fractions allowed).
    pub fn from_env(allow_write: bool, transport: &'static str) -> Result<Self> {
        let timeout = match std::env::var("AAM_TOOL_TIMEOUT") {
            Ok(text) if !text.trim().is_empty() => parse_timeout(&text)?,
            _ => DEFAULT_TIMEOUT,
        };
        Ok(Self {
            allow_write,
            read_only: read_only_mode(),
            timeout,
            transport,
        })
    }
}

/// The longest `AAM_TOOL_TIMEOUT`, in seconds: a week.
const MAX_TIMEOUT_SECONDS: f64 = 7.0 * 86_400.0;

fn parse_timeout(text: &str) -> Result<Duration> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|s| *s > 0.0 && *s <= MAX_TIMEOUT_SECONDS)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| {
            Error::invalid_argument(format!(
                "`AAM_TOOL_TIMEOUT={text}` is not a number of seconds above 0 and at most {MAX_TIMEOUT_SECONDS}"
            ))
            .with_hint("set it to seconds, e.g. `AAM_TOOL_TIMEOUT=120` or `0.5`")
        })
}

/// What the server offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surface {
    /// Tools, resources, prompts, logging and the skills extension.
    Full,
    /// Only the skills extension (`skills/*`, `skill://` resources and their folders).
    SkillsOnly,
}

/// Which transport `aam mcp serve` speaks.
#[derive(Debug, Clone)]
pub enum Transport {
    /// JSON-RPC over stdin/stdout (the client starts the server).
    Stdio,
    /// Streamable HTTP.
    Http(http::HttpOptions),
}

/// Where and how the server logs (never to stdout).
#[derive(Debug, Clone)]
pub struct LogOptions {
    /// Append to this file instead of stderr.
    pub file: Option<std::path::PathBuf>,
    /// `error`, `warn`, `info`, `debug` or `trace`.
    pub level: String,
    /// One JSON object per line instead of text.
    pub json: bool,
}

/// How long a stopping server waits for its running calls to stop.
const STOP_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// How long a call past its time limit or cancelled is given to stop, so the
/// reply says whether it stopped or completed.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// Runs the server over `ctx` (working directory = the served project) until
/// the client disconnects (stdio) or the process is told to stop (HTTP).
pub fn serve(ctx: Context, allow_write: bool, surface: Surface, transport: Transport, log: &LogOptions) -> Result<()> {
    init_logging(log)?;
    let name = match transport {
        Transport::Stdio => "stdio",
        Transport::Http(_) => "http",
    };
    let options = ServerOptions::from_env(allow_write, name)?;
    let home = ctx.home.clone();
    // A long-lived process: watch the project instead of checking its files each
    // call, and answer the commands run in it (they skip their own check).
    let ctx = ctx.watching();
    let _answering = answer_commands(&ctx);
    let server = AamServer::with_surface(ctx, options, surface);
    let in_flight = server.in_flight();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::internal(format!("cannot start the async runtime: {e}")))?;
    let outcome = runtime.block_on(async move {
        match transport {
            // Clients stop a stdio server by closing stdin, then with SIGTERM:
            // the signal ends it as the end of input does, running calls
            // stopped below (it killed the process where it stood).
            Transport::Stdio => tokio::select! {
                outcome = server.serve_stdio() => outcome,
                () = shutdown_signal() => {
                    tracing::info!("stopping: SIGTERM or Ctrl-C");
                    Ok(())
                }
            },
            Transport::Http(options) => http::serve(server, &home, &options).await,
        }
    });
    // Calls still running (the client left, or SIGTERM) stop at their next
    // safe point and undo what they started before the process exits.
    let left = in_flight.stop_all(STOP_WAIT);
    if left > 0 {
        tracing::warn!(
            calls = left,
            "calls still running after {STOP_WAIT:?} were cut off by the exit"
        );
    }
    // Don't wait for a read of stdin that will never finish.
    runtime.shutdown_background();
    outcome
}

/// Completes when the process is told to stop: SIGTERM or Ctrl-C.
async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = ctrl_c => {}
                _ = term.recv() => {}
            }
        }
        Err(_) => {
            let _ = ctrl_c.await;
        }
    }
}

/// Answers the commands run in the served project from this server's watches
/// (see [`crate::project::ask`]), where the project can be watched.
fn answer_commands(ctx: &Context) -> Option<crate::project::ask::Listening> {
    match ctx.answer_commands() {
        Ok(Some(listening)) => Some(listening),
        Ok(None) => {
            tracing::info!("another aam process already answers the commands run in this project");
            None
        }
        Err(e) => {
            tracing::info!(
                "commands run in this project check its files themselves: {}",
                e.message()
            );
            None
        }
    }
}

fn init_logging(log: &LogOptions) -> Result<()> {
    use tracing_subscriber::Layer as _;
    // Clients' `logging/setLevel` chooses what they get, whatever the output's filter.
    let to_clients = logging::McpLogLayer
        .with_filter(tracing_subscriber::filter::filter_fn(logging::wanted))
        .boxed();
    crate::logging::init(crate::logging::Logging {
        default_filter: crate::logging::level_filter(&log.level)?,
        style: if log.json {
            crate::logging::Style::Json
        } else {
            crate::logging::Style::Text
        },
        file: log.file.clone(),
        extra: vec![to_clients],
    })
}

/// The MCP server: cheap to clone, one per session (HTTP) or per process (stdio).
#[derive(Clone)]
pub struct AamServer {
    inner: Arc<Inner>,
}

struct Inner {
    ctx: Context,
    options: ServerOptions,
    surface: Surface,
    /// The tools this server offers, with their MCP definitions.
    tools: Vec<(ToolSpec, Tool)>,
    /// The session's `logging/setLevel` subscription (stdio).
    log: logging::Session,
    /// The tool calls running now.
    in_flight: Arc<InFlight>,
}

/// The tool calls running on blocking threads, so that a server that stops
/// (stdin closed, SIGTERM) can ask each to stop and wait for it: a call cut
/// off by the process exiting could leave what it was making behind (the
/// cache of a source it was adding).
#[derive(Default)]
pub struct InFlight {
    calls: std::sync::Mutex<std::collections::HashMap<u64, crate::cancel::Cancel>>,
    next: std::sync::atomic::AtomicU64,
}

/// One running call; it leaves [`InFlight`] when dropped.
struct RunningCall {
    in_flight: Arc<InFlight>,
    id: u64,
}

impl Drop for RunningCall {
    fn drop(&mut self) {
        self.in_flight
            .calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.id);
    }
}

impl InFlight {
    fn start(self: &Arc<Self>, cancel: crate::cancel::Cancel) -> RunningCall {
        let id = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.calls.lock().unwrap_or_else(|e| e.into_inner()).insert(id, cancel);
        RunningCall {
            in_flight: Arc::clone(self),
            id,
        }
    }

    fn running(&self) -> usize {
        self.calls.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Asks every running call to stop (each stops at its next safe point,
    /// keeping nothing) and waits up to `limit` for them; returns how many
    /// are still running.
    pub fn stop_all(&self, limit: std::time::Duration) -> usize {
        for cancel in self.calls.lock().unwrap_or_else(|e| e.into_inner()).values() {
            cancel.raise();
        }
        let until = std::time::Instant::now() + limit;
        loop {
            let running = self.running();
            if running == 0 || std::time::Instant::now() >= until {
                return running;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

impl AamServer {
    /// A server over `ctx` (whose working directory is the served project).
    pub fn new(ctx: Context, options: ServerOptions) -> Self {
        Self::with_surface(ctx, options, Surface::Full)
    }

    /// A server offering `surface` over `ctx`.
    pub fn with_surface(ctx: Context, options: ServerOptions, surface: Surface) -> Self {
        let tools = registry()
            .into_iter()
            .filter(|_| surface == Surface::Full)
            .filter(|spec| options.allow_write || spec.risk == Risk::Read)
            .map(|spec| {
                let tool = describe(&spec);
                (spec, tool)
            })
            .collect();
        Self {
            inner: Arc::new(Inner {
                ctx,
                options,
                surface,
                tools,
                log: logging::Session::default(),
                in_flight: Arc::default(),
            }),
        }
    }

    /// The calls this server is running (shared: clones see the same calls).
    pub fn in_flight(&self) -> Arc<InFlight> {
        Arc::clone(&self.inner.in_flight)
    }

    /// Serves one client over stdin/stdout until stdin closes.
    pub async fn serve_stdio(self) -> Result<()> {
        stdio::serve(self).await
    }

    fn ctx(&self) -> &Context {
        &self.inner.ctx
    }

    fn options(&self) -> &ServerOptions {
        &self.inner.options
    }

    fn skills_only(&self) -> bool {
        self.inner.surface == Surface::SkillsOnly
    }

    /// Runs a blocking skills request over the context on a blocking thread.
    async fn skills<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Context) -> std::result::Result<T, ErrorData> + Send + 'static,
    ) -> std::result::Result<T, ErrorData> {
        let ctx = self.ctx().clone();
        tokio::task::spawn_blocking(move || work(&ctx))
            .await
            .map_err(|e| ErrorData::internal_error(format!("the skills request stopped unexpectedly: {e}"), None))?
    }

    /// Runs a registered tool on a blocking thread under the time limit,
    /// reporting progress to `progress` when given. When the limit passes or
    /// `cancelled` completes (the client cancelled), the call's flag is raised:
    /// the tool stops at its next safe point and keeps nothing, or, past its
    /// last one, completes; within [`STOP_GRACE`] the answer says which.
    async fn run_tool(
        &self,
        spec: &ToolSpec,
        input: Value,
        request_id: String,
        progress: Option<Arc<dyn Progress>>,
        cancelled: impl std::future::Future<Output = ()>,
    ) -> Result<Value> {
        let mut ctx = self.ctx().clone();
        if let Some(progress) = progress {
            ctx.progress = progress;
        }
        let cancel = crate::cancel::Cancel::new();
        ctx.cancel = cancel.clone();
        let (tool, read_only) = (*spec, self.options().read_only);
        let running = self.inner.in_flight.start(cancel.clone());
        let mut task = tokio::task::spawn_blocking(move || {
            let _running = running;
            crate::tools::call(&ctx, &tool, input, read_only, &request_id)
        });
        let stopped = tokio::select! {
            joined = &mut task => {
                return match joined {
                    Ok(result) => result,
                    Err(join) => Err(Error::internal(format!("`{}` stopped unexpectedly: {join}", spec.name))),
                };
            }
            _ = tokio::time::sleep(self.options().timeout) => Error::new(
                ErrorCode::Timeout,
                format!("`{}` did not finish within {:?}", spec.name, self.options().timeout),
            )
            .with_hint("it stopped and kept no change; raise `AAM_TOOL_TIMEOUT` for long work"),
            _ = cancelled => crate::cancel::cancelled(),
        };
        cancel.raise();
        let name = spec.name;
        // What the reply says must be what happened: a call past its last
        // safe point completes, and then its result is the answer.
        match tokio::time::timeout(STOP_GRACE, &mut task).await {
            Ok(Ok(Ok(value))) => {
                tracing::info!(tool = name, "cancelled call finished before it could stop");
                return Ok(value);
            }
            Ok(Ok(Err(e))) if e.code() != ErrorCode::Cancelled => return Err(e),
            Ok(_) => return Err(stopped),
            Err(_) => {}
        }
        let stopped = stopped.with_hint(
            "it was asked to stop at its next safe point: nothing is kept unless it had already passed the last one, so check before calling again (`aam_source_list`, `aam_verify`); raise `AAM_TOOL_TIMEOUT` for long work",
        );
        tokio::spawn(async move {
            let outcome = match task.await {
                Ok(Ok(_)) => "finished before it could stop".to_string(),
                Ok(Err(e)) => format!("stopped ({})", e.code()),
                Err(join) => format!("stopped unexpectedly ({join})"),
            };
            tracing::info!(tool = name, "cancelled call {outcome}");
        });
        Err(stopped)
    }

    /// Calls a read tool by name for a resource.
    async fn read_with(&self, tool: &str, input: Value) -> Result<Value> {
        let spec = registry()
            .into_iter()
            .find(|t| t.name == tool)
            .ok_or_else(|| Error::internal(format!("resource tool `{tool}` is not registered")))?;
        let request_id = crate::tools::next_request_id();
        self.run_tool(&spec, input, request_id, None, std::future::pending())
            .await
    }
}

/// The MCP definition of a registered tool.
fn describe(spec: &ToolSpec) -> Tool {
    let object = |schema: schemars::Schema| match serde_json::to_value(schema) {
        Ok(Value::Object(map)) => map,
        _ => serde_json::Map::new(),
    };
    let annotations = ToolAnnotations::with_title(spec.title)
        .read_only(spec.risk == Risk::Read)
        .destructive(spec.risk == Risk::Destructive)
        .idempotent(spec.idempotent)
        .open_world(spec.open_world);
    let mut input = object((spec.input_schema)());
    let mut output = object((spec.output_schema)());
    standard_formats(&mut input);
    standard_formats(&mut output);
    Tool::new(spec.name, spec.description, input)
        .with_title(spec.title)
        .with_raw_output_schema(Arc::new(output))
        .with_annotations(annotations)
}

/// `format` values defined by JSON Schema 2020-12; clients validating with
/// Ajv (the TypeScript SDK) warn about any other one on every schema compile.
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Keywords whose value is a schema, a list of schemas or a map of schemas;
/// `format` is only touched inside these (never in `properties` names,
/// `default`, `examples`, `const` or `enum`).
const SCHEMA_KEYWORDS: &[&str] = &[
    "items",
    "additionalProperties",
    "unevaluatedProperties",
    "unevaluatedItems",
    "propertyNames",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "prefixItems",
    "anyOf",
    "oneOf",
    "allOf",
];
const SCHEMA_MAP_KEYWORDS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];

/// A tool schema as the MCP server advertises it: `schema` with only
/// standard `format`s (see `standard_formats`).
pub fn advertised_schema(mut schema: Value) -> Value {
    if let Value::Object(map) = &mut schema {
        standard_formats(map);
    }
    schema
}

/// Drops non-standard `format`s (schemars' `uint64`, `int32`, `float`...) from
/// a schema an MCP client will see; unsigned integers keep `minimum: 0`.
fn standard_formats(schema: &mut serde_json::Map<String, Value>) {
    if let Some(Value::String(format)) = schema.get("format")
        && !STANDARD_FORMATS.contains(&format.as_str())
    {
        let unsigned = format.starts_with("uint");
        schema.remove("format");
        if unsigned && !schema.contains_key("minimum") && !schema.contains_key("exclusiveMinimum") {
            schema.insert("minimum".to_string(), Value::from(0));
        }
    }
    for (key, value) in schema.iter_mut() {
        let key = key.as_str();
        if SCHEMA_KEYWORDS.contains(&key) {
            match value {
                Value::Object(sub) => standard_formats(sub),
                Value::Array(list) => list.iter_mut().for_each(|v| {
                    if let Value::Object(sub) = v {
                        standard_formats(sub)
                    }
                }),
                _ => {}
            }
        } else if SCHEMA_MAP_KEYWORDS.contains(&key)
            && let Value::Object(map) = value
        {
            map.values_mut().for_each(|v| {
                if let Value::Object(sub) = v {
                    standard_formats(sub)
                }
            });
        }
    }
}

/// The `_meta` key of a failed call's structured error body.
pub const ERROR_META_KEY: &str = "aam/error";

/// A failed call as a tool result: `isError`, a text block `[AAM_CODE] message`
/// (and `hint: ...`), and the error body `{code, category, message, hint}` in
/// `_meta["aam/error"]`. No `structuredContent`: clients (the TypeScript SDK,
/// MCP Inspector) validate it against the tool's output schema even on errors.
fn error_result(error: &Error) -> CallToolResult {
    let body = serde_json::to_value(error.to_body()).unwrap_or(Value::Null);
    let mut text = format!("[{}] {}", error.code(), error.message());
    if let Some(hint) = error.hint() {
        text.push_str(&format!("\nhint: {hint}"));
    }
    let mut meta = serde_json::Map::new();
    meta.insert(ERROR_META_KEY.to_string(), body);
    CallToolResult::error(vec![ContentBlock::text(text)]).with_meta(Some(MetaObject(meta)))
}

impl ServerHandler for AamServer {
    #[expect(
        deprecated,
        reason = "MCP logging is deprecated (SEP-2577) but clients still call logging/setLevel"
    )]
    fn get_info(&self) -> ServerConfig {
        if self.skills_only() {
            let capabilities = ServerCapabilities::builder()
                .enable_resources()
                .enable_skills_with_directory_read()
                .build();
            return ServerConfig::new(capabilities)
                .with_server_info(Implementation::new(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION")))
                .with_instructions(
                    "aam serves the skills of its catalog (Skills over MCP): list them with `skills/list`, \
                     read any file with `resources/read`; every file carries its sha256 digest and size.",
                );
        }
        let capabilities = ServerCapabilities::builder()
            .enable_logging()
            .enable_tools()
            .enable_resources()
            .enable_resources_list_changed()
            .enable_prompts()
            .enable_skills_with_directory_read()
            .build();
        let mode = if !self.options().allow_write {
            "Read-only: write tools are not offered (start the server with `--allow-write` for them)."
        } else if self.options().read_only {
            "Write tools are listed but refused (AAM_READ_ONLY is set)."
        } else {
            "Write tools are enabled."
        };
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION")))
            .with_instructions(format!(
                "aam catalogs AI-agent artifacts (skills, agents, prompts, instructions) from git sources. \
                 Start with `aam_search` to find artifacts and `aam_info` to read one; `aam_list` shows what \
                 this project has installed. The prompts `find_artifacts`, `package_from_source` and \
                 `audit_installed` walk through common tasks. Every catalog skill that follows the Agent \
                 Skills rules is also served through the Skills extension (`skills/list`). {mode}"
            ))
    }

    #[expect(
        deprecated,
        reason = "MCP logging is deprecated (SEP-2577) but clients still call logging/setLevel"
    )]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<(), ErrorData> {
        // Stateless HTTP has no stream to send notifications on: accepted, nothing sent.
        if self.options().transport == "stdio" {
            logging::set_level(&self.inner.log, context.peer.clone(), request.level);
        }
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.inner.tools.iter().map(|(_, tool)| tool.clone()).collect(),
        ))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.inner
            .tools
            .iter()
            .find(|(spec, _)| spec.name == name)
            .map(|(_, tool)| tool.clone())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        let Some((spec, _)) = self.inner.tools.iter().find(|(spec, _)| spec.name == name) else {
            // A write tool this server hides says how to get it. A name no
            // tool has is quoted cut short: it may be a megabyte long.
            let hidden =
                !self.options().allow_write && registry().iter().any(|t| t.name == name && t.risk != Risk::Read);
            let shown = crate::error::quoted(&name);
            let message = match hidden {
                true => format!(
                    "tool not found: `{name}` changes things, and this server serves read tools only (start it with `--allow-write`)"
                ),
                false => format!("tool not found: `{shown}`"),
            };
            return Err(ErrorData::invalid_params(
                message,
                Some(serde_json::json!({ "name": shown })),
            ));
        };
        let input = Value::Object(request.arguments.unwrap_or_default());
        let request_id = context.id.to_string();
        let outcome = match context.meta.get_progress_token() {
            Some(token) => {
                let (progress, sending) = progress::McpProgress::start(context.peer.clone(), token);
                let outcome = self
                    .run_tool(spec, input, request_id, Some(progress), context.ct.cancelled())
                    .await;
                // Progress comes before the result (unless the call timed
                // out and still runs).
                let _ = tokio::time::timeout(Duration::from_secs(1), sending).await;
                outcome
            }
            None => {
                self.run_tool(spec, input, request_id, None, context.ct.cancelled())
                    .await
            }
        };
        if outcome.is_ok() && CHANGE_RESOURCE_LIST.contains(&name.as_str()) && self.options().transport == "stdio" {
            // Sent before the reply, but never in its way: once stdin has
            // closed, rmcp writes no notification, and waiting for this one
            // held the reply back until the shutdown gave up on it.
            let _ = tokio::time::timeout(NOTICE_WAIT, context.peer.notify_resource_list_changed()).await;
        }
        let result = match outcome {
            Ok(value) => CallToolResult::structured(value),
            Err(error) => error_result(&error),
        };
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListResourcesResult, ErrorData> {
        if self.skills_only() {
            // Skill files are found through `skills/list`, not listed one by one.
            return Ok(ListResourcesResult::with_all_items(Vec::new()));
        }
        Ok(ListResourcesResult::with_all_items(resources::list(self).await))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListResourceTemplatesResult, ErrorData> {
        if self.skills_only() {
            return Ok(ListResourceTemplatesResult::with_all_items(Vec::new()));
        }
        Ok(ListResourceTemplatesResult::with_all_items(resources::templates()))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ReadResourceResponse, ErrorData> {
        resources::check_length(&request.uri)?;
        if request.uri.starts_with(crate::skills::SCHEME) {
            let uri = request.uri.clone();
            let read = self.skills(move |ctx| skills::read(ctx, &uri)).await?;
            return match read {
                Some(result) => Ok(result.into()),
                None => Err(resources::not_found(&request.uri)),
            };
        }
        if self.skills_only() {
            return Err(resources::not_found(&request.uri));
        }
        resources::read(self, &request.uri).await.map(Into::into)
    }

    async fn list_skills(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListSkillsResult, ErrorData> {
        let cursor = request.and_then(|r| r.cursor);
        self.skills(move |ctx| skills::list(ctx, cursor.as_deref())).await
    }

    async fn get_skill(
        &self,
        request: GetSkillRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<GetSkillResult, ErrorData> {
        resources::check_length(&request.uri)?;
        self.skills(move |ctx| skills::get(ctx, &request.uri)).await
    }

    async fn read_resource_directory(
        &self,
        request: ReadResourceDirectoryRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ReadResourceDirectoryResult, ErrorData> {
        resources::check_length(&request.uri)?;
        self.skills(move |ctx| skills::directory(ctx, &request.uri)).await
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListPromptsResult, ErrorData> {
        if self.skills_only() {
            return Ok(ListPromptsResult::with_all_items(Vec::new()));
        }
        Ok(ListPromptsResult::with_all_items(prompts::list()))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<GetPromptResponse, ErrorData> {
        if self.skills_only() {
            return Err(ErrorData::invalid_params(
                format!(
                    "prompt not found: `{}` (this server serves skills only)",
                    crate::error::quoted(&request.name)
                ),
                None,
            ));
        }
        prompts::get(&request.name, request.arguments.as_ref(), self.options().allow_write).map(Into::into)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_are_positive_seconds_up_to_a_week() {
        assert_eq!(parse_timeout("2").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_timeout(" 0.25 ").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_timeout("604800").unwrap(), Duration::from_secs(604_800));
        for bad in [
            "0",
            "-1",
            "soon",
            "NaN",
            "inf",
            "604801",
            "2e19",
            "1e300",
            "18446744073709551615",
        ] {
            assert_eq!(
                parse_timeout(bad).unwrap_err().code(),
                ErrorCode::InvalidArgument,
                "{bad}"
            );
        }
    }

    /// Every `format` in a schema, with the schema that holds it.
    fn formats(schema: &serde_json::Map<String, Value>, out: &mut Vec<(String, serde_json::Map<String, Value>)>) {
        if let Some(Value::String(format)) = schema.get("format") {
            out.push((format.clone(), schema.clone()));
        }
        for (key, value) in schema {
            let subs: Vec<&Value> = if SCHEMA_KEYWORDS.contains(&key.as_str()) {
                match value {
                    Value::Array(list) => list.iter().collect(),
                    other => vec![other],
                }
            } else if SCHEMA_MAP_KEYWORDS.contains(&key.as_str()) {
                value.as_object().map(|m| m.values().collect()).unwrap_or_default()
            } else {
                vec![]
            };
            for sub in subs {
                if let Value::Object(sub) = sub {
                    formats(sub, out);
                }
            }
        }
    }

    #[test]
    fn advertised_schemas_use_only_standard_formats() {
        let mut raw = 0;
        for spec in registry() {
            let tool = describe(&spec);
            for (schema, advertised) in [
                (
                    serde_json::to_value((spec.output_schema)()).unwrap(),
                    tool.output_schema.as_deref().unwrap(),
                ),
                (
                    serde_json::to_value((spec.input_schema)()).unwrap(),
                    &*tool.input_schema,
                ),
            ] {
                let mut before = Vec::new();
                formats(schema.as_object().unwrap(), &mut before);
                raw += before.len();
                let mut after = Vec::new();
                formats(advertised, &mut after);
                for (format, _) in &after {
                    assert!(STANDARD_FORMATS.contains(&format.as_str()), "{}: {format}", spec.name);
                }
                let text = serde_json::to_string(advertised).unwrap();
                assert!(!text.contains("\"uint"), "{}: {text}", spec.name);
            }
        }
        assert!(
            raw > 0,
            "schemars emits non-standard formats, so the check has something to strip"
        );
        // Unsigned integers keep their lower bound, property names are untouched.
        let mut schema = serde_json::json!({"type": "object", "properties": {
            "format": {"type": "string", "default": "uint64"},
            "n": {"type": "integer", "format": "uint64"},
            "m": {"anyOf": [{"type": "integer", "format": "int32"}, {"type": "null"}]},
            "at": {"type": "string", "format": "date-time"}}});
        standard_formats(schema.as_object_mut().unwrap());
        assert_eq!(
            schema,
            serde_json::json!({"type": "object", "properties": {
                "format": {"type": "string", "default": "uint64"},
                "n": {"type": "integer", "minimum": 0},
                "m": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
                "at": {"type": "string", "format": "date-time"}}})
        );
    }

    #[test]
    fn every_tool_has_object_schemas_and_fitting_annotations() {
        for spec in registry() {
            let tool = describe(&spec);
            assert_eq!(
                tool.input_schema.get("type"),
                Some(&Value::from("object")),
                "{}",
                spec.name
            );
            let output = tool.output_schema.as_ref().unwrap();
            assert_eq!(output.get("type"), Some(&Value::from("object")), "{}", spec.name);
            let hints = tool.annotations.unwrap();
            assert_eq!(hints.read_only_hint, Some(spec.risk == Risk::Read), "{}", spec.name);
            assert_eq!(
                hints.destructive_hint,
                Some(spec.risk == Risk::Destructive),
                "{}",
                spec.name
            );
        }
    }
}
