//! Streamable HTTP transport: stateless JSON replies at `/mcp`, a bearer token
//! on every request (compared in constant time), loopback-only unless told
//! otherwise, foreign `Origin`s refused, bodies capped at 1 MiB.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

use super::AamServer;
use crate::config::AamHome;
use crate::error::{Error, ErrorCode, Result};

/// Largest request body accepted.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// The environment variable that supplies the bearer token.
pub const TOKEN_ENV: &str = "AAM_MCP_TOKEN";

/// Where the HTTP server listens.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Host or IP address to bind.
    pub host: String,
    /// Port (0 picks a free one).
    pub port: u16,
    /// Allow binding a non-loopback address.
    pub allow_remote: bool,
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

    let mut hosts = vec!["localhost".to_string(), "127.0.0.1".to_string(), "::1".to_string()];
    let mut origins = vec![format!("http://127.0.0.1:{port}"), format!("http://localhost:{port}")];
    if !ip.is_loopback() {
        hosts.push(options.host.clone());
        origins.push(format!("http://{}:{port}", options.host));
    }
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_allowed_hosts(hosts)
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
        .layer(middleware::from_fn_with_state(Arc::<str>::from(token), require_bearer));

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

    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            shutdown_signal().await;
            shutdown.cancel();
        })
        .await
        .map_err(|e| Error::internal(format!("the HTTP server failed: {e}")))
}

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

/// The token from `AAM_MCP_TOKEN`, or a new random one saved to
/// `$AAM_HOME/mcp-token` (mode 0600).
fn token(home: &AamHome) -> Result<(String, TokenOrigin)> {
    if let Ok(token) = std::env::var(TOKEN_ENV)
        && !token.trim().is_empty()
    {
        return Ok((token.trim().to_string(), TokenOrigin::Environment));
    }
    let (token, path) = new_token(home)?;
    Ok((token, TokenOrigin::File(path)))
}

/// A new 256-bit random token, hex-encoded, saved to `$AAM_HOME/mcp-token`.
fn new_token(home: &AamHome) -> Result<(String, std::path::PathBuf)> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| Error::internal(format!("no randomness for a token: {e}")))?;
    let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let path = home.mcp_token_path();
    crate::atomic::write_file_with_mode(&path, format!("{token}\n").as_bytes(), 0o600)?;
    Ok((token, path))
}

async fn require_bearer(State(expected): State<Arc<str>>, request: Request, next: Next) -> Response {
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
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
