//! MCP server latency over stdio, measured against the release binary as a client
//! sees it (`cargo bench --bench mcp`).
//!
//! - Start-up: from spawning `aam mcp serve` to the answer of the first
//!   `tools/list` (initialize, initialized and tools/list are written at once).
//! - Read calls: round trips of `aam_search`, `aam_source_list` and `aam_info`
//!   on a catalog of 10,000 artifacts (`AAM_BENCH_SIZES` picks other sizes).
//! - Skills over MCP: every `skills/list` page from the first to the last, and
//!   `skills/get` of skills spread over the catalog, with a `tools/list` round
//!   trip measured in the same session as the floor of any request.
//!   `AAM_BENCH_SIZES=125000` gives a catalog of 100,000 skills.
//!
//! Targets (issue #6): first `tools/list` within 50 ms of process start; a read
//! tool call within 10 ms over stdio at 10k artifacts. Issue #14: a
//! `skills/list` page within 20 ms at 100,000 skills.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use common::{AAM, catalog, median, ms};
use serde_json::{Value, json};

const RUNS: usize = 30;

fn main() {
    let Some((work, generator)) = common::setup() else {
        return;
    };
    let sizes = common::sizes(&[10_000]);
    for artifacts in sizes {
        let home = catalog(&work, &generator, artifacts);
        startup_figures(&home, artifacts);
        call_figures(&home, artifacts);
        skills_figures(&home);
    }
}

/// A server process with line-based JSON-RPC over its stdin/stdout.
struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Server {
    fn spawn(home: &Path) -> Self {
        let mut child = Command::new(AAM)
            .args(["mcp", "serve", "--log-level", "warn"])
            .env("AAM_HOME", home)
            .current_dir(home)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Self {
            child,
            stdin,
            stdout,
            next_id: 1,
        }
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Sends a request and returns its response (skipping notifications).
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.response(id)
    }

    fn response(&mut self, id: u64) -> Value {
        let mut line = String::new();
        loop {
            line.clear();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "the server closed stdout"
            );
            let message: Value = serde_json::from_str(&line).expect("stdout carries only JSON-RPC");
            if message["id"] == id {
                return message;
            }
        }
    }

    /// Initializes the session (protocol 2025-11-25).
    fn initialize(&mut self) {
        let reply = self.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "bench", "version": "1"}}),
        );
        assert!(reply["result"]["serverInfo"].is_object(), "{reply}");
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn startup_figures(home: &Path, artifacts: usize) {
    let mut samples = Vec::new();
    for _ in 0..RUNS {
        let started = Instant::now();
        let mut server = Server::spawn(home);
        // Everything a client sends on connecting, without waiting in between.
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}});
        server.send(&init);
        server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        server.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
        let listed = server.response(2);
        samples.push(started.elapsed());
        assert!(
            listed["result"]["tools"].as_array().is_some_and(|t| !t.is_empty()),
            "{listed}"
        );
    }
    let worst = *samples.iter().max().unwrap();
    println!(
        "mcp start-up to first tools/list ({artifacts} artifacts, {RUNS} runs): median {}, max {} (target <= 50 ms)",
        ms(median(samples)),
        ms(worst)
    );
}

fn call_figures(home: &Path, artifacts: usize) {
    let mut server = Server::spawn(home);
    server.initialize();
    let info_target = {
        let found = server.request(
            "tools/call",
            json!({"name": "aam_search", "arguments": {"query": "review", "limit": 1}}),
        );
        found["result"]["structuredContent"]["results"][0]["qualified_name"]
            .as_str()
            .expect("the corpus has a review artifact")
            .to_string()
    };
    for (tool, arguments) in [
        ("aam_search", json!({"query": "review"})),
        ("aam_source_list", json!({})),
        ("aam_info", json!({"name": info_target})),
    ] {
        // The first call opens the catalog and the index; the figures are for the calls after.
        let warm = Instant::now();
        let first = server.request("tools/call", json!({"name": tool, "arguments": arguments}));
        let first_ms = warm.elapsed();
        assert_ne!(first["result"]["isError"], true, "{first}");
        let mut samples: Vec<Duration> = Vec::new();
        for _ in 0..RUNS {
            let started = Instant::now();
            let reply = server.request("tools/call", json!({"name": tool, "arguments": arguments}));
            samples.push(started.elapsed());
            assert_ne!(reply["result"]["isError"], true, "{reply}");
        }
        samples.sort();
        let p95 = samples[samples.len() * 95 / 100];
        println!(
            "mcp {tool} over stdio ({artifacts} artifacts): first {}, median {}, p95 {} (target <= 10 ms)",
            ms(first_ms),
            ms(median(samples)),
            ms(p95)
        );
    }
}

fn skills_figures(home: &Path) {
    let mut server = Server::spawn(home);
    server.initialize();
    let mut floor = Vec::new();
    for _ in 0..RUNS {
        let started = Instant::now();
        let reply = server.request("tools/list", json!({}));
        floor.push(started.elapsed());
        assert!(reply["result"]["tools"].is_array(), "{reply}");
    }
    // Every page, first to last.
    let mut pages = Vec::new();
    let mut uris = Vec::new();
    let mut cursor: Option<String> = None;
    let walk = Instant::now();
    loop {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let started = Instant::now();
        let reply = server.request("skills/list", params);
        pages.push(started.elapsed());
        let result = &reply["result"];
        let skills = result["skills"].as_array().unwrap_or_else(|| panic!("{reply}"));
        uris.extend(skills.iter().map(|s| s["uri"].as_str().unwrap().to_string()));
        match result["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => break,
        }
    }
    let walked = walk.elapsed();
    let first = pages[0];
    let count = pages.len();
    pages.sort();
    let p95 = pages[count * 95 / 100];
    let worst = pages[count - 1];
    println!(
        "mcp skills/list ({} skills, {count} pages): first page {}, median {}, p95 {}, max {}, all pages {:.2} s (target <= 20 ms per page)",
        uris.len(),
        ms(first),
        ms(median(pages.clone())),
        ms(p95),
        ms(worst),
        walked.as_secs_f64()
    );
    let step = (uris.len() / 200).max(1);
    let mut gets = Vec::new();
    for uri in uris.iter().step_by(step) {
        let started = Instant::now();
        let reply = server.request("skills/get", json!({"uri": uri}));
        gets.push(started.elapsed());
        assert_eq!(reply["result"]["skill"]["uri"], uri.as_str(), "{reply}");
    }
    let count = gets.len();
    gets.sort();
    println!(
        "mcp skills/get ({} skills, {count} spread over the catalog): median {}, p95 {}; tools/list in the same session: median {}",
        uris.len(),
        ms(median(gets.clone())),
        ms(gets[count * 95 / 100]),
        ms(median(floor))
    );
}
