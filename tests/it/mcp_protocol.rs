//! JSON-RPC conformance of the real binary: raw lines on stdio, raw HTTP
//! requests. These are the messages real clients (the TypeScript SDK, MCP
//! Inspector, hand-written scripts) send that rmcp alone answered wrongly.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rstest::rstest;
use serde_json::{Value, json};

use crate::mcp::{TOKEN, initialize, start_http_with, world};
use crate::support::TestEnv;

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
const CALL: &str =
    r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"aam_source_list","arguments":{}}}"#;
const WAIT: Duration = Duration::from_secs(30);

/// `aam mcp serve` over stdio, spoken to line by line.
struct RawStdio {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    /// Forwards stdout's lines; ends at its end of file.
    reader: std::thread::JoinHandle<()>,
    stderr: std::thread::JoinHandle<String>,
}

impl RawStdio {
    fn start(env: &TestEnv, extra: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_aam"))
            .args(["mcp", "serve"])
            .args(extra)
            .current_dir(env.root.path())
            .env("AAM_HOME", env.home())
            .env("HOME", env.user_home())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (send, lines) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        let mut stderr = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            text
        });
        Self {
            stdin: child.stdin.take(),
            child,
            lines,
            reader,
            stderr,
        }
    }

    /// Writes `text` as is (add the newline yourself).
    fn write(&mut self, text: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(text.as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    fn send(&mut self, line: &str) {
        self.write(&format!("{line}\n"));
    }

    /// The next line on stdout, as JSON (every line must be JSON).
    fn next(&self) -> Value {
        let line = self.lines.recv_timeout(WAIT).expect("a reply on stdout");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("stdout holds only JSON-RPC: {e}: {line}"))
    }

    /// The reply with this `id`, skipping notifications and other replies.
    fn reply(&self, id: Value) -> Value {
        let deadline = Instant::now() + WAIT;
        while Instant::now() < deadline {
            let message = self.next();
            if message.get("id") == Some(&id) && message.get("method").is_none() {
                return message;
            }
        }
        panic!("no reply with id {id}");
    }

    /// Messages up to and including the reply with this `id`.
    fn until_reply(&self, id: Value) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let message = self.next();
            let done = message.get("id") == Some(&id) && message.get("method").is_none();
            seen.push(message);
            if done {
                return seen;
            }
        }
    }

    /// Closes stdin and waits for the exit; returns the status, what was
    /// left on stdout, and stderr.
    fn close(mut self) -> (ExitStatus, Vec<Value>, String) {
        drop(self.stdin.take());
        let deadline = Instant::now() + WAIT;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("the server did not exit after stdin closed");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        // Every line the server wrote before it exited has reached the channel.
        let _ = self.reader.join();
        let rest = self
            .lines
            .try_iter()
            .map(|l| serde_json::from_str(&l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect();
        (status, rest, self.stderr.join().unwrap())
    }
}

fn error_of(reply: &Value) -> (i64, Value) {
    assert_eq!(reply["jsonrpc"], "2.0", "{reply}");
    let code = reply["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("an error: {reply}"));
    assert!(reply["error"]["message"].is_string(), "{reply}");
    (code, reply["id"].clone())
}

#[test]
fn stdio_answers_protocol_errors_with_their_codes_and_ids() {
    let env = world();
    let mut server = RawStdio::start(&env, &[]);
    // Before the handshake too.
    server.send("{not json");
    assert_eq!(error_of(&server.next()), (-32700, Value::Null));
    server.send(INIT);
    assert_eq!(server.reply(json!(1))["result"]["serverInfo"]["name"], "aam");
    server.send(INITIALIZED);
    for (line, code, id) in [
        ("{not json", -32700, Value::Null),
        ("[]", -32600, Value::Null),
        (r#"{"jsonrpc":"2.0","id":7}"#, -32600, json!(7)),
        (r#"{"jsonrpc":"2.0","id":"s","method":5}"#, -32600, json!("s")),
        (
            r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{}}"#,
            -32602,
            json!(8),
        ),
        (
            r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"arguments":{}}}"#,
            -32602,
            json!(9),
        ),
        (
            r#"{"jsonrpc":"2.0","id":10,"method":"no/such/method"}"#,
            -32601,
            json!(10),
        ),
        // An id past 64 signed bits passed and got rmcp's -32602 for `ping`.
        (
            r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"ping"}"#,
            -32600,
            Value::Null,
        ),
    ] {
        server.send(line);
        assert_eq!(error_of(&server.next()), (code, id), "{line}");
    }
    // A line of 1 MiB or more (the HTTP body cap) is a parse error, unread.
    let long = format!(
        r#"{{"jsonrpc":"2.0","id":11,"method":"ping","params":{{"x":"{}"}}}}"#,
        "y".repeat(1 << 20)
    );
    server.send(&long);
    assert_eq!(error_of(&server.next()), (-32700, Value::Null));
    // The session goes on.
    server.send(CALL);
    let reply = server.reply(json!(2));
    assert_eq!(reply["result"]["structuredContent"]["sources"][0]["name"], "upstream");
    let (status, _, stderr) = server.close();
    assert_eq!(status.code(), Some(0), "{stderr}");
}

/// Closing stdin at any point ends the server with 0 and no complaint.
#[rstest]
#[case::before_anything(&[], "")]
#[case::after_a_parse_error(&["{not json"], "")]
#[case::mid_line(&[], r#"{"jsonrpc":"2.0","id":1,"meth"#)]
#[case::after_initialize(&[INIT], "")]
#[case::after_initialized(&[INIT, INITIALIZED], "")]
#[case::during_a_call(&[INIT, INITIALIZED, CALL], "")]
fn closing_stdin_at_any_point_exits_0(#[case] lines: &[&str], #[case] partial: &str) {
    let env = TestEnv::new();
    let mut server = RawStdio::start(&env, &[]);
    for line in lines {
        server.send(line);
    }
    server.write(partial);
    let (status, replies, stderr) = server.close();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("bug"), "{stderr}");
    assert!(!stderr.contains("error["), "{stderr}");
    if lines.first() == Some(&"{not json") || !partial.is_empty() {
        // The broken message is answered before the exit.
        assert_eq!(error_of(&replies[0]), (-32700, Value::Null), "{replies:?}");
    }
}

/// A call that changes the resource list, still running when stdin closes,
/// gets its reply before the exit (the change was kept and the reply lost).
#[test]
fn a_source_add_running_when_stdin_closes_is_answered() {
    let env = TestEnv::new();
    let repo = env.repo("team");
    repo.write("skills/pdf/SKILL.md", crate::support::skill("pdf", "PDF"));
    repo.commit("c1");
    let mut server = RawStdio::start(&env, &["--allow-write"]);
    server.send(INIT);
    server.send(INITIALIZED);
    server.send(r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"aam_source_add","arguments":{"spec":"./team"}}}"#);
    let started = Instant::now();
    let (status, replies, stderr) = server.close();
    assert_eq!(status.code(), Some(0), "{stderr}");
    let reply = replies
        .iter()
        .find(|m| m["id"] == json!(5))
        .unwrap_or_else(|| panic!("the add is answered: {replies:?}\n{stderr}"));
    assert_eq!(reply["result"]["structuredContent"]["name"], "team", "{reply}");
    assert!(!stderr.contains("timed out draining"), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(4), "{:?}", started.elapsed());
}

/// POSTs `body` to `url` with the token in `authorization` (verbatim) and an
/// optional `Host`.
async fn post(url: &str, authorization: &str, host: Option<&str>, body: &str) -> (u16, String) {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .header("authorization", authorization)
        .body(body.to_string());
    if let Some(host) = host {
        request = request.header("host", host);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_answers_protocol_errors_and_any_case_bearer() {
    let env = world();
    let server = start_http_with(&env, &["--allow-write"]);
    let bearer = format!("Bearer {TOKEN}");
    for (body, status, code, id) in [
        ("{not json", 400, -32700, Value::Null),
        (r#"{"jsonrpc":"2.0","id":7}"#, 400, -32600, json!(7)),
        (
            r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{}}"#,
            200,
            -32602,
            json!(8),
        ),
    ] {
        let (got, text) = post(&server.url, &bearer, None, body).await;
        assert_eq!(got, status, "{body}: {text}");
        let reply: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{body}: {e}: {text}"));
        assert_eq!(error_of(&reply), (code, id), "{body}");
    }
    // The scheme is case-insensitive; the token is not.
    let init = initialize().to_string();
    for scheme in ["bearer", "BEARER", "Bearer"] {
        let (status, text) = post(&server.url, &format!("{scheme} {TOKEN}"), None, &init).await;
        assert_eq!(status, 200, "{scheme}: {text}");
        assert!(text.contains("\"serverInfo\""), "{text}");
    }
    let (status, _) = post(&server.url, &format!("bearer {}", TOKEN.to_uppercase()), None, &init).await;
    assert_eq!(status, 401);
    let (status, _) = post(&server.url, &format!("Basic {TOKEN}"), None, &init).await;
    assert_eq!(status, 401);

    // Progress asked for over HTTP comes as an event stream ending with the result.
    let call = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
        "name": "aam_catalog_reindex", "arguments": {}, "_meta": {"progressToken": "h-5"}}});
    let (status, text) = post(&server.url, &bearer, None, &call.to_string()).await;
    assert_eq!(status, 200, "{text}");
    let events: Vec<Value> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter(|d| !d.trim().is_empty())
        .map(|d| serde_json::from_str(d.trim()).unwrap())
        .collect();
    let last = events.last().unwrap_or_else(|| panic!("an event stream: {text}"));
    assert_eq!(last["id"], 5, "{text}");
    assert!(
        events[..events.len() - 1]
            .iter()
            .any(|e| e["method"] == "notifications/progress" && e["params"]["progressToken"] == "h-5"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_on_all_addresses_answers_remote_hosts() {
    let env = world();
    let server = start_http_with(
        &env,
        &["--host", "0.0.0.0", "--allow-remote", "--allow-host", "aam.test"],
    );
    let port = server
        .url
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches("/mcp")
        .to_string();
    let local = format!("http://127.0.0.1:{port}/mcp");
    let bearer = format!("Bearer {TOKEN}");
    let init = initialize().to_string();
    // A client on another machine names this one by an address or a listed name.
    for host in [
        format!("192.0.2.10:{port}"),
        format!("10.1.2.3:{port}"),
        format!("aam.test:{port}"),
        format!("AAM.TEST.:{port}"),
        format!("localhost:{port}"),
    ] {
        let (status, text) = post(&local, &bearer, Some(&host), &init).await;
        assert_eq!(status, 200, "Host {host}: {text}");
    }
    // Other names are DNS rebinding: refused, token or not.
    for host in [format!("evil.example:{port}"), format!("aam.test.evil.example:{port}")] {
        let (status, _) = post(&local, &bearer, Some(&host), &init).await;
        assert_eq!(status, 403, "Host {host}");
    }
    // Requests stay on loopback: the Host header plays the remote client.
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_on_loopback_refuses_other_hosts() {
    let env = TestEnv::new();
    let server = start_http_with(&env, &[]);
    let port = server
        .url
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches("/mcp")
        .to_string();
    let bearer = format!("Bearer {TOKEN}");
    let init = initialize().to_string();
    for host in [format!("192.0.2.10:{port}"), format!("evil.example:{port}")] {
        let (status, _) = post(&server.url, &bearer, Some(&host), &init).await;
        assert_eq!(status, 403, "Host {host}");
    }
    let (status, _) = post(&server.url, &bearer, Some(&format!("localhost:{port}")), &init).await;
    assert_eq!(status, 200);
}

fn log_messages(messages: &[Value]) -> Vec<Value> {
    messages
        .iter()
        .filter(|m| m["method"] == "notifications/message")
        .map(|m| m["params"].clone())
        .collect()
}

fn call_line(id: u64) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "aam_source_list", "arguments": {}}})
    .to_string()
}

fn set_level_line(id: u64, level: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "logging/setLevel", "params": {"level": level}}).to_string()
}

#[test]
fn stdio_sends_log_messages_at_or_above_the_set_level() {
    let env = world();
    let mut server = RawStdio::start(&env, &[]);
    server.send(INIT);
    let init = server.reply(json!(1));
    assert!(init["result"]["capabilities"]["logging"].is_object(), "{init}");
    server.send(INITIALIZED);

    // Nothing before the client asks.
    server.send(&call_line(2));
    assert_eq!(log_messages(&server.until_reply(json!(2))), Vec::<Value>::new());

    server.send(&set_level_line(3, "info"));
    assert_eq!(server.reply(json!(3))["result"], json!({}));
    server.send(&call_line(4));
    let mut seen = server.until_reply(json!(4));
    let is_call_4 = |m: &Value| m["data"]["request_id"] == "4";
    while !log_messages(&seen).iter().any(is_call_4) {
        seen.push(server.next()); // the notification may follow the reply
    }
    let logged = log_messages(&seen).into_iter().find(is_call_4).unwrap();
    assert_eq!(logged["level"], "info", "{logged}");
    assert_eq!(logged["logger"], "aam::tools", "{logged}");
    assert_eq!(logged["data"]["tool"], "aam_source_list", "{logged}");
    assert_eq!(logged["data"]["status"], "ok", "{logged}");
    // Warnings are above info: a refused line is logged to the client too.
    server.send("{not json");
    // Notifications of earlier work may still arrive before the reply.
    let mut seen = Vec::new();
    let refused = loop {
        let message = server.next();
        if message.get("method").is_none() {
            break message;
        }
        seen.push(message);
    };
    assert_eq!(error_of(&refused), (-32700, Value::Null));
    let is_warning = |m: &Value| m["level"] == "warning";
    while !log_messages(&seen).iter().any(is_warning) {
        seen.push(server.next());
    }
    let warning = log_messages(&seen).into_iter().find(is_warning).unwrap();
    assert!(
        warning["data"]["message"].as_str().unwrap().contains("refused"),
        "{warning}"
    );

    // At `error`, neither the info line nor the warning is sent.
    server.send(&set_level_line(5, "error"));
    server.reply(json!(5));
    server.send(&call_line(6));
    server.send("{not json");
    server.send(r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#);
    let mut seen = server.until_reply(json!(7));
    if !seen.iter().any(|m| m["id"] == 6) {
        seen.extend(server.until_reply(json!(6)));
    }
    assert_eq!(log_messages(&seen), Vec::<Value>::new());
    let (status, rest, stderr) = server.close();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert_eq!(log_messages(&rest), Vec::<Value>::new());
}

#[test]
fn stdio_reports_progress_only_to_calls_with_a_token() {
    let env = world();
    let mut server = RawStdio::start(&env, &["--allow-write"]);
    server.send(INIT);
    server.reply(json!(1));
    server.send(INITIALIZED);
    let reindex = |id: u64, meta: Option<Value>| {
        let mut params = json!({"name": "aam_catalog_reindex", "arguments": {}});
        if let Some(meta) = meta {
            params["_meta"] = meta;
        }
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}).to_string()
    };
    let progress = |messages: &[Value]| -> Vec<Value> {
        messages
            .iter()
            .filter(|m| m["method"] == "notifications/progress")
            .map(|m| m["params"].clone())
            .collect()
    };
    server.send(&reindex(2, None));
    let seen = server.until_reply(json!(2));
    assert_eq!(progress(&seen), Vec::<Value>::new());
    server.send(&reindex(3, Some(json!({"progressToken": "t-3"}))));
    let seen = server.until_reply(json!(3));
    let reported = progress(&seen);
    assert!(reported.len() >= 2, "progress comes before the result: {seen:?}");
    assert!(reported.iter().all(|p| p["progressToken"] == "t-3"), "{reported:?}");
    let values: Vec<f64> = reported.iter().map(|p| p["progress"].as_f64().unwrap()).collect();
    assert!(values.windows(2).all(|w| w[0] < w[1]), "{values:?}");
    assert_eq!(reported[0]["message"], "indexing");
    let (status, rest, stderr) = server.close();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert_eq!(progress(&rest), Vec::<Value>::new(), "nothing after the result");
}

/// One JSON-RPC `body` POSTed to `/mcp` at `address` over a plain socket, with
/// the bearer token; the whole reply, status line first (empty when the server
/// closed the connection without one).
fn raw_post(address: &str, body: &str) -> String {
    let mut client = std::net::TcpStream::connect(address).unwrap();
    let _ = write!(
        client,
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut reply = String::new();
    let _ = client.read_to_string(&mut reply);
    reply
}

#[test]
fn http_closes_connections_that_never_finish_their_headers() {
    let env = world();
    let server = start_http_with(&env, &[]);
    let address = server.address();
    // A client that connects, starts a request and says no more: without a
    // limit it held its connection (and a file descriptor) for good.
    let mut idle = std::net::TcpStream::connect(&address).unwrap();
    idle.write_all(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\n").unwrap();
    idle.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut rest = Vec::new();
    let closed = idle.read_to_end(&mut rest);
    assert!(closed.is_ok(), "the server kept the connection open: {closed:?}");
    // The server goes on answering whole requests.
    let reply = raw_post(&address, &initialize().to_string());
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
}

#[test]
fn http_refuses_a_declared_body_over_the_cap_at_once_and_a_stalled_one_in_time() {
    let env = world();
    let server = start_http_with(&env, &[]);
    let address = server.address();
    let send_headers = |length: u64| {
        let mut client = std::net::TcpStream::connect(&address).unwrap();
        write!(
            client,
            "POST /mcp HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {length}\r\n\r\n{{\"jsonrpc\""
        )
        .unwrap();
        client.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        client
    };
    // A length far over the cap with no body: it was read for good (the
    // connection held); now it is 413 before anything is read.
    let started = std::time::Instant::now();
    let mut reply = String::new();
    let _ = send_headers(99_999_999_999).read_to_string(&mut reply);
    assert!(reply.starts_with("HTTP/1.1 413"), "{reply}");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    // A client still uploading when refused gets the 413, not a reset
    // connection: the server reads and drops the rest before closing.
    let mut client = send_headers(2 << 20);
    std::thread::sleep(Duration::from_millis(300));
    client
        .write_all(&vec![b' '; 2 << 20])
        .expect("the upload is read, not cut off");
    let mut reply = String::new();
    let _ = client.read_to_string(&mut reply);
    assert!(reply.starts_with("HTTP/1.1 413"), "{reply}");
    // A body that stops arriving: 408 once its time is up.
    let mut reply = String::new();
    let _ = send_headers(500).read_to_string(&mut reply);
    assert!(reply.starts_with("HTTP/1.1 408"), "{reply}");
    // The server goes on answering whole requests.
    let reply = raw_post(&address, &initialize().to_string());
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
}

#[test]
fn a_stopped_http_server_lets_a_running_add_stop_and_keep_nothing() {
    let env = TestEnv::new();
    let repo = env.repo("big");
    repo.write_skills((0..4000).map(|i| format!("skill-{i}")), "Big");
    repo.commit("c1");
    let mut server = start_http_with(&env, &["--allow-write"]);
    let address = server.address();
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "aam_source_add", "arguments": {"spec": repo.path(), "name": "big"}}})
    .to_string();
    let caller = std::thread::spawn(move || raw_post(&address, &body));
    // The add is under way once its cache exists; then the server is told to stop.
    let caches = env.home().join("cache/git/_local");
    let deadline = Instant::now() + WAIT;
    while !caches.exists() {
        assert!(Instant::now() < deadline, "the add never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    let status = server.terminate();
    assert!(status.success() || status.code().is_some(), "{status:?}");
    let _ = caller.join();
    // It stopped at its next safe point and undid its cache, instead of being
    // cut off by the exit halfway.
    assert_eq!(env.json(&["source", "list"])["sources"], json!([]));
    let left: Vec<_> = std::fs::read_dir(env.home().join("cache/git"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}
