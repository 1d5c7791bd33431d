//! Streamable HTTP transport: stateless JSON replies at `/mcp`, a bearer token
//! on every request (compared in constant time), loopback-only unless told
//! otherwise, foreign `Origin`s refused, bodies capped at 1 MiB (a larger
//! declared length is refused at once) and given [`BODY_TIMEOUT`] to arrive.
//!
//! In front of rmcp, in this order: the `Host` check ([`HostPolicy`], DNS
//! rebinding), the bearer token, and the JSON-RPC screen
//! ([`super::jsonrpc`]: a body that is not JSON is 400 with `-32700`).
//! Before any of them, at most [`MAX_CONNECTIONS`] connections are served at
//! once and each must send a request's headers within [`HEADER_TIMEOUT`], so
//! clients that connect and say nothing cannot use up the server.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

use super::AamServer;
use super::jsonrpc::{self, Screened};
use crate::config::AamHome;
use crate::error::{Error, ErrorCode, Result};

/// Most connections served at once; more wait in the kernel's queue until one ends.
const MAX_CONNECTIONS: usize = 256;

/// How long a connection may take to send a request's headers, and may stay
/// idle between requests; then it is closed.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// Largest request body accepted.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// How long a request's body may take to arrive once its headers did.
const BODY_TIMEOUT: Duration = Duration::from_secs(10);

/// How long, and how much of, a refused body is still read and dropped after
/// the 413 is sent. A client still sending then gets the answer; a connection
/// closed under its upload would reach it as a reset instead of the 413.
const LINGER: Duration = Duration::from_secs(2);
const LINGER_BYTES: usize = 16 * MAX_BODY_BYTES;

/// The environment variable that supplies the bearer token.
pub const TOKEN_ENV: &str = "AAM_MCP_TOKEN";

/// The fewest characters a token from the environment may have.
const MIN_TOKEN_CHARS: usize = 32;

/// Where the HTTP server listens.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Host or IP address to bind.
    pub host: String,
    /// Port (0 picks a free one).
    pub port: u16,
    /// Allow binding a non-loopback address.
    pub allow_remote: bool,
    /// More `Host` names to accept (`--allow-host`), e.g. a DNS name of the machine.
    pub allowed_hosts: Vec<String>,
}

/// Which `Host` headers the server answers (anything else is 403, against DNS
/// rebinding): loopback names and addresses always; the bound address; with
/// an unspecified bind (`0.0.0.0`, `::`) any IP address literal (IPv4 only
/// for `0.0.0.0`), since the machine may be reached on any of its addresses;
/// for a non-loopback bind, the machine's host name; and every
/// `--allow-host` name. DNS names are compared without case and without a
/// trailing dot; the port is not checked.
#[derive(Debug, Clone)]
pub struct HostPolicy {
    bound: IpAddr,
    names: Vec<String>,
}

impl HostPolicy {
    /// The policy for a server bound to `bound`.
    pub fn new(bound: IpAddr, extra: &[String]) -> Self {
        let mut names = vec!["localhost".to_string()];
        if !bound.is_loopback()
            && let Ok(name) = std::fs::read_to_string("/proc/sys/kernel/hostname")
            && !name.trim().is_empty()
        {
            names.push(name.trim().to_ascii_lowercase());
        }
        names.extend(extra.iter().map(|n| normal_name(n)));
        Self { bound, names }
    }

    /// Whether a request with this `Host` header is answered.
    pub fn allows(&self, host: &str) -> bool {
        let host = host.trim();
        let name = if let Some(rest) = host.strip_prefix('[') {
            // `[v6]` or `[v6]:port`, nothing else after the bracket.
            match rest.split_once(']') {
                Some((ip, "")) => ip,
                Some((ip, port))
                    if port
                        .strip_prefix(':')
                        .is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit())) =>
                {
                    ip
                }
                _ => return false,
            }
        } else {
            match host.rsplit_once(':') {
                Some((name, port)) if !name.contains(':') && port.bytes().all(|b| b.is_ascii_digit()) => name,
                _ => host,
            }
        };
        match name.parse::<IpAddr>() {
            Ok(ip) => {
                ip.is_loopback()
                    || ip == self.bound
                    || (self.bound.is_unspecified() && (self.bound.is_ipv6() || ip.is_ipv4()))
            }
            Err(_) => !name.is_empty() && self.names.contains(&normal_name(name)),
        }
    }
}

fn normal_name(name: &str) -> String {
    name.trim().trim_end_matches('.').to_ascii_lowercase()
}

/// Where the token came from, for the connection line.
enum TokenOrigin {
    Environment,
    File(std::path::PathBuf),
}

/// Serves `server` over Streamable HTTP until Ctrl-C or SIGTERM.
pub async fn serve(server: AamServer, home: &AamHome, options: &HttpOptions) -> Result<()> {
    let ip: IpAddr = match options.host.as_str() {
        "localhost" => IpAddr::from([127, 0, 0, 1]),
        host => host.parse().map_err(|_| {
            Error::invalid_argument(format!("`{host}` is not an IP address"))
                .with_hint("use 127.0.0.1, ::1 or localhost")
        })?,
    };
    if !ip.is_loopback() && !options.allow_remote {
        return Err(Error::new(
            ErrorCode::Forbidden,
            format!("`{}` is not a loopback address", options.host),
        )
        .with_hint("pass `--allow-remote` to serve other machines (every request still needs the token)"));
    }
    let (token, origin) = token(home)?;
    let listener = tokio::net::TcpListener::bind(SocketAddr::new(ip, options.port))
        .await
        .map_err(|e| {
            Error::new(
                ErrorCode::IoError,
                format!("cannot listen on {}:{}: {e}", options.host, options.port),
            )
            .with_hint("pick another `--port`, or stop what is using this one")
        })?;
    let port = listener
        .local_addr()
        .map_err(|e| Error::internal(format!("no local address: {e}")))?
        .port();

    let hosts = HostPolicy::new(ip, &options.allowed_hosts);
    let mut origins = vec![format!("http://127.0.0.1:{port}"), format!("http://localhost:{port}")];
    if !ip.is_loopback() && !ip.is_unspecified() {
        origins.push(format!("http://{}:{port}", options.host));
    }
    // rmcp's Host check only knows exact names; `HostPolicy` runs in front instead.
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .disable_allowed_hosts()
        .with_allowed_origins(origins)
        .enforce_origin_validation()
        .with_max_request_body_bytes(MAX_BODY_BYTES);
    let shutdown = config.cancellation_token.clone();
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        LocalSessionManager::default().into(),
        config,
    );
    let app = axum::Router::new()
        .route_service("/mcp", service)
        .layer(middleware::from_fn(screen_body))
        .layer(middleware::from_fn_with_state(Arc::<str>::from(token), require_bearer))
        .layer(middleware::from_fn_with_state(Arc::new(hosts), check_host));

    let shown_host = if ip.is_ipv6() {
        format!("[{ip}]")
    } else {
        ip.to_string()
    };
    let where_token = match origin {
        TokenOrigin::Environment => format!("the bearer token is `{TOKEN_ENV}`"),
        TokenOrigin::File(path) => format!("bearer token in {}", path.display()),
    };
    eprintln!("aam MCP server listening on http://{shown_host}:{port}/mcp ({where_token})");
    tracing::info!(port, "MCP server listening");

    let signalled = shutdown.clone();
    tokio::spawn(async move {
        super::shutdown_signal().await;
        signalled.cancel();
    });
    serve_connections(listener, app, shutdown).await;
    Ok(())
}

/// Accepts connections until `shutdown`, at most [`MAX_CONNECTIONS`] at once,
/// each served over HTTP/1.1 with [`HEADER_TIMEOUT`] for a request's headers.
/// On shutdown no new connection is taken and open ones are asked to close
/// after the request they are on; calls still running then are cut off when
/// the process exits (a write tool's journal or transaction undoes them).
async fn serve_connections(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    shutdown: tokio_util::sync::CancellationToken,
) {
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot,
            _ = shutdown.cancelled() => break,
        };
        let Ok(slot) = slot else { break };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file descriptors, say: wait a moment, keep serving.
                    tracing::warn!("could not accept a connection: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = shutdown.cancelled() => break,
        };
        let service = hyper_util::service::TowerToHyperService::new(app.clone());
        let shutdown = shutdown.clone();
        connections.spawn(async move {
            let _slot = slot;
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            tokio::pin!(connection);
            tokio::select! {
                _ = connection.as_mut() => {}
                _ = shutdown.cancelled() => {
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.await;
                }
            }
        });
        while connections.try_join_next().is_some() {}
    }
    while connections.join_next().await.is_some() {}
}

/// The token from `AAM_MCP_TOKEN`, or a new random one saved to
/// `$AAM_HOME/mcp-token` (mode 0600).
/// Refused when shorter than [`MIN_TOKEN_CHARS`]: a short token can be guessed.
fn token(home: &AamHome) -> Result<(String, TokenOrigin)> {
    if let Ok(token) = std::env::var(TOKEN_ENV)
        && !token.trim().is_empty()
    {
        let token = token.trim();
        if token.chars().count() < MIN_TOKEN_CHARS {
            return Err(Error::invalid_argument(format!(
                "`{TOKEN_ENV}` is shorter than {MIN_TOKEN_CHARS} characters: anyone who can reach the port could guess it"
            ))
            .with_hint(format!(
                "set it to a random value of at least {MIN_TOKEN_CHARS} characters (`openssl rand -hex 32`), or unset it and the server makes one"
            )));
        }
        return Ok((token.to_string(), TokenOrigin::Environment));
    }
    let (token, path) = new_token(home)?;
    Ok((token, TokenOrigin::File(path)))
}

/// A new 256-bit random token, hex-encoded, saved to `$AAM_HOME/mcp-token`.
fn new_token(home: &AamHome) -> Result<(String, std::path::PathBuf)> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| Error::internal(format!("no randomness for a token: {e}")))?;
    let token = faster_hex::hex_string(&bytes);
    let path = home.mcp_token_path();
    crate::atomic::write_file_with_mode(&path, format!("{token}\n").as_bytes(), 0o600)?;
    Ok((token, path))
}

/// Refuses `Host` headers the policy does not allow (403), and requests
/// without one (400).
async fn check_host(State(policy): State<Arc<HostPolicy>>, request: Request, next: Next) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .or_else(|| request.uri().authority().map(|a| a.to_string()));
    match host {
        Some(host) if policy.allows(&host) => next.run(request).await,
        Some(host) => {
            tracing::warn!(host, "MCP request refused: Host not allowed (possible DNS rebinding)");
            (
                StatusCode::FORBIDDEN,
                format!("Host `{host}` is not allowed; start the server with `--allow-host NAME` to accept a name\n"),
            )
                .into_response()
        }
        None => (StatusCode::BAD_REQUEST, "a `Host` header is required\n").into_response(),
    }
}

/// Answers JSON bodies that are not JSON-RPC messages rmcp can read: 400 with
/// `-32700`/`-32600`, 200 with `-32602` (as rmcp does for its own `-32602`).
async fn screen_body(request: Request, next: Next) -> Response {
    let is_json = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if request.method() != Method::POST || !is_json {
        return next.run(request).await; // rmcp answers 405 / 415
    }
    // A declared length over the cap is refused before anything is kept.
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let (parts, mut body) = request.into_parts();
    if declared.is_some_and(|length| length > MAX_BODY_BYTES as u64) {
        return refuse_too_large(body);
    }
    let mut bytes = Vec::new();
    let arrived = tokio::time::timeout(BODY_TIMEOUT, async {
        while let Some(frame) = body.frame().await {
            let Ok(chunk) = frame.map_err(|_| ())?.into_data() else {
                continue; // trailers
            };
            if bytes.len() + chunk.len() > MAX_BODY_BYTES {
                return Err(());
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(())
    })
    .await;
    match arrived {
        Ok(Ok(())) => {}
        Ok(Err(())) => return refuse_too_large(body),
        Err(_) => {
            return (
                StatusCode::REQUEST_TIMEOUT,
                [(header::CONNECTION, "close")],
                format!("the request body did not arrive within {} s\n", BODY_TIMEOUT.as_secs()),
            )
                .into_response();
        }
    }
    let bytes = axum::body::Bytes::from(bytes);
    match jsonrpc::screen(&bytes) {
        Screened::Pass => next.run(Request::from_parts(parts, Body::from(bytes))).await,
        Screened::Reject(rejection) => {
            let status = if rejection.code == jsonrpc::INVALID_PARAMS {
                StatusCode::OK
            } else {
                StatusCode::BAD_REQUEST
            };
            tracing::warn!(code = rejection.code, "JSON-RPC message refused");
            let body = serde_json::to_vec(&rejection.reply).unwrap_or_default();
            (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
        }
        Screened::Drop(why) => {
            tracing::warn!("{why}");
            StatusCode::ACCEPTED.into_response()
        }
    }
}

/// 413 with `Connection: close`; the rest of the body is read and dropped in
/// the background for at most [`LINGER`] and [`LINGER_BYTES`], so the client
/// is not reset while it is still sending.
fn refuse_too_large(mut rest: Body) -> Response {
    tokio::spawn(async move {
        let mut left = LINGER_BYTES;
        let _ = tokio::time::timeout(LINGER, async {
            while let Some(Ok(frame)) = rest.frame().await {
                let size = frame.data_ref().map_or(0, |chunk| chunk.len());
                left = left.saturating_sub(size);
                if left == 0 {
                    break;
                }
            }
        })
        .await;
    });
    (
        StatusCode::PAYLOAD_TOO_LARGE,
        [(header::CONNECTION, "close")],
        format!("the request body is over {MAX_BODY_BYTES} bytes (or could not be read)\n"),
    )
        .into_response()
}

/// Accepts `Authorization: Bearer <token>`, the scheme in any case (RFC 9110).
async fn require_bearer(State(expected): State<Arc<str>>, request: Request, next: Next) -> Response {
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim());
    if given.is_some_and(|t| same(t.as_bytes(), expected.as_bytes())) {
        return next.run(request).await;
    }
    tracing::warn!("MCP request refused: missing or wrong bearer token");
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Bearer")],
        "a valid `Authorization: Bearer <token>` header is required\n",
    )
        .into_response()
}

/// Compares in time that depends only on the lengths.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_whole() {
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd"));
        assert!(!same(b"abc", b"abcd"));
        assert!(!same(b"", b"a"));
    }

    #[test]
    fn host_names_of_the_bound_address() {
        let loopback = HostPolicy::new(IpAddr::from([127, 0, 0, 1]), &[]);
        for ok in [
            "localhost",
            "localhost:8765",
            "127.0.0.1:8765",
            "[::1]:80",
            "LOCALHOST.",
            "127.0.0.2",
        ] {
            assert!(loopback.allows(ok), "{ok}");
        }
        for refused in [
            "evil.example",
            "evil.example:8765",
            "10.0.0.5:8765",
            "",
            "localhost.evil.example",
            "[::1]evil.example",
            "[::1]:80evil",
            "[::1",
        ] {
            assert!(!loopback.allows(refused), "{refused}");
        }
        let any4 = HostPolicy::new(IpAddr::from([0, 0, 0, 0]), &["Box.Lan".to_string()]);
        for ok in ["10.0.0.5:8765", "192.168.1.20", "box.lan:8765", "localhost"] {
            assert!(any4.allows(ok), "{ok}");
        }
        for refused in ["evil.example", "[fe80::1]:8765"] {
            assert!(!any4.allows(refused), "{refused}");
        }
        let any6: IpAddr = "::".parse().unwrap();
        assert!(HostPolicy::new(any6, &[]).allows("[fe80::1]:8765"));
        let one = HostPolicy::new(IpAddr::from([10, 0, 0, 5]), &[]);
        assert!(one.allows("10.0.0.5:8765"));
        assert!(!one.allows("10.0.0.6:8765"));
    }

    #[test]
    fn generated_tokens_are_private_and_fresh() {
        let dir = tempfile::tempdir().unwrap();
        let home = AamHome::at(dir.path().to_path_buf());
        let (first, _) = new_token(&home).unwrap();
        let (second, path) = new_token(&home).unwrap();
        assert_eq!(first.len(), 64, "256 bits, hex");
        assert_ne!(first, second);
        assert_eq!(path, dir.path().join("mcp-token"));
        assert_eq!(std::fs::read_to_string(&path).unwrap().trim(), second);
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    }
}
