//! Every error a user can meet on the source commands: its code, its message and
//! hint, and that the catalog and cache are left exactly as they were.

use std::net::TcpListener;

use crate::support::{TestEnv, skill};

/// A home with one indexed source, so "unchanged" has something to compare.
fn seeded() -> (TestEnv, String) {
    let env = TestEnv::new();
    let repo = env.repo("seed");
    repo.write("skills/a/SKILL.md", skill("a", "A"));
    repo.commit("c1");
    env.json(&["source", "add", repo.path()]);
    let path = repo.path().to_string();
    (env, path)
}

/// Runs `args` expecting `code`, and checks nothing changed. Returns the error body.
fn fails_cleanly(env: &TestEnv, args: &[&str], code: &str) -> serde_json::Value {
    let before = env.state();
    let body = env.json_err(args, code);
    assert_eq!(before, env.state(), "`{args:?}` changed the catalog or cache");
    body
}

#[test]
fn malformed_specs_are_refused_with_the_accepted_forms() {
    let (env, _) = seeded();
    for spec in [
        "nonsense",
        "http://github.com/o/r",
        "ext::sh -c touch% /tmp/pwned",
        "git://host/o/r",
        "a/b/c",
        "-x",
    ] {
        let body = if spec == "-x" {
            fails_cleanly(&env, &["source", "add", "--", spec], "AAM_SOURCE_URL_INVALID")
        } else {
            fails_cleanly(&env, &["source", "add", spec], "AAM_SOURCE_URL_INVALID")
        };
        assert!(
            body["hint"].as_str().unwrap().contains("owner/repo@ref"),
            "{spec}: {body}"
        );
        assert_eq!(body["category"], "INVALID_INPUT");
    }
    let body = fails_cleanly(
        &env,
        &["source", "add", "http://github.com/o/r"],
        "AAM_SOURCE_URL_INVALID",
    );
    assert!(body["message"].as_str().unwrap().contains("plain `http://` is refused"));
}

#[test]
fn local_paths_that_are_not_repositories() {
    let (env, _) = seeded();
    std::fs::create_dir_all(env.path("plain-folder")).unwrap();
    let body = fails_cleanly(&env, &["source", "add", "./plain-folder"], "AAM_SOURCE_URL_INVALID");
    assert!(
        body["message"].as_str().unwrap().contains("is not a git repository"),
        "{body}"
    );
    let body = fails_cleanly(&env, &["source", "add", "./missing"], "AAM_SOURCE_URL_INVALID");
    assert!(body["message"].as_str().unwrap().contains("does not exist"), "{body}");
}

#[test]
fn duplicate_names_point_to_update() {
    let (env, path) = seeded();
    let body = fails_cleanly(&env, &["source", "add", &path], "AAM_SOURCE_ALREADY_EXISTS");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .starts_with("a source named `seed` already exists"),
        "{body}"
    );
    assert!(body["hint"].as_str().unwrap().contains("aam source update seed"));
    assert_eq!(body["category"], "CONFLICT");
}

#[test]
fn invalid_names_refs_and_paths() {
    let (env, path) = seeded();
    fails_cleanly(
        &env,
        &["source", "add", &path, "--name", "bad name"],
        "AAM_INVALID_ARGUMENT",
    );
    fails_cleanly(
        &env,
        &["source", "add", &path, "--ref", "a..b", "--name", "x"],
        "AAM_INVALID_ARGUMENT",
    );
    fails_cleanly(
        &env,
        &["source", "add", &path, "--path", "../up", "--name", "x"],
        "AAM_INVALID_ARGUMENT",
    );
}

#[test]
fn missing_refs_and_scope_paths_leave_no_cache_behind() {
    let env = TestEnv::new();
    let repo = env.repo("r");
    repo.write("skills/a/SKILL.md", skill("a", "A"));
    repo.commit("c1");
    let before = env.state();
    let body = env.json_err(
        &["source", "add", repo.path(), "--ref", "no-such-branch"],
        "AAM_GIT_REF_NOT_FOUND",
    );
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("`no-such-branch` is not a branch, tag or commit")
    );
    let body = env.json_err(
        &["source", "add", repo.path(), "--ref", "deadbeef00"],
        "AAM_GIT_REF_NOT_FOUND",
    );
    assert!(body["message"].as_str().unwrap().contains("deadbeef00"));
    let body = env.json_err(
        &["source", "add", repo.path(), "--path", "nope/folder"],
        "AAM_SOURCE_PATH_NOT_FOUND",
    );
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("`nope/folder` is not a folder"),
        "{body}"
    );
    let after = env.state();
    let cache_entries: Vec<&String> = after.keys().filter(|k| k.starts_with("cache ")).collect();
    assert!(
        cache_entries.is_empty(),
        "a failed first add removes the cache it made: {cache_entries:?}"
    );
    assert_eq!(before.keys().filter(|k| k.starts_with("table")).count(), 0);

    // With a cache already shared with another source, the failed add removes only its refs.
    env.json(&["source", "add", repo.path()]);
    fails_cleanly(
        &env,
        &["source", "add", repo.path(), "--name", "other", "--path", "nope"],
        "AAM_SOURCE_PATH_NOT_FOUND",
    );
}

#[test]
fn unknown_sources_list_the_registered_ones() {
    let (env, _) = seeded();
    for args in [
        vec!["source", "scan", "nope"],
        vec!["source", "update", "nope"],
        vec!["source", "diff", "nope"],
        vec!["source", "remove", "nope"],
    ] {
        let body = fails_cleanly(&env, &args, "AAM_SOURCE_NOT_FOUND");
        assert_eq!(body["message"], "no source named `nope`");
        assert!(body["hint"].as_str().unwrap().contains("`seed`"), "{body}");
    }
    let typo = fails_cleanly(&env, &["source", "remove", "sed"], "AAM_SOURCE_NOT_FOUND");
    assert!(
        typo["hint"].as_str().unwrap().starts_with("did you mean `seed`?"),
        "{typo}"
    );
    let empty = TestEnv::new();
    let body = empty.json_err(&["source", "scan", "nope"], "AAM_SOURCE_NOT_FOUND");
    assert!(body["hint"].as_str().unwrap().contains("aam source add"));
}

#[test]
fn bad_type_filter_names_the_valid_ones() {
    let (env, _) = seeded();
    let body = fails_cleanly(
        &env,
        &["source", "scan", "seed", "--type", "widget"],
        "AAM_INVALID_ARGUMENT",
    );
    assert!(
        body["hint"]
            .as_str()
            .unwrap()
            .contains("`skill`, `agent`, `prompt`, `instruction`")
    );
}

#[test]
fn usage_errors_exit_2() {
    let (env, _) = seeded();
    let run = env.aam(&["source", "update", "seed", "--all"]);
    assert_eq!(run.code, 2, "{run:?}");
    let run = env.aam(&["source", "frobnicate"]);
    assert_eq!(run.code, 2, "{run:?}");
    // They carry their code like every other error, then clap's usage and
    // suggestions; `verify` names `--all` beside the package.
    assert!(run.stderr.starts_with("error[AAM_INVALID_ARGUMENT]: "), "{run:?}");
    let run = env.aam(&["verify", "kit", "--all"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.starts_with("error[AAM_INVALID_ARGUMENT]: "), "{run:?}");
    assert!(run.stderr.contains("cannot be used with"), "{run:?}");
}

#[test]
fn unreachable_hosts_are_network_errors_after_retries() {
    let (env, _) = seeded();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    // Credentials in the URL are dropped before anything is fetched, stored or printed.
    let url = format!("https://user:s3cret-token@127.0.0.1:{port}/o/r.git");
    let started = std::time::Instant::now();
    let before = env.state();
    let run = env.aam(&["--json", "source", "add", &url]);
    let body = run.err("AAM_NETWORK_ERROR");
    assert_eq!(before, env.state());
    assert!(
        body["message"].as_str().unwrap().contains("after 3 attempt(s)"),
        "{body}"
    );
    assert!(
        started.elapsed() >= std::time::Duration::from_millis(1400),
        "backoff between the 3 tries"
    );
    let all_output = format!("{}{}", run.stdout, run.stderr);
    assert!(!all_output.contains("s3cret-token"), "secret leaked: {all_output}");
    assert!(
        run.stderr.contains("credentials in the URL were ignored"),
        "{}",
        run.stderr
    );
}

#[test]
fn credentials_in_refused_specs_are_never_printed() {
    let (env, _) = seeded();
    for (spec, secret) in [
        ("https://user:pa/ss@host/o/r", "pa/ss"),
        ("https://tok3n@github.com/o", "tok3n"),
        ("user:pw0rd@host:o", "pw0rd"),
        ("ssh://user:pw/0rd@host/o/r", "pw/0rd"),
        ("https://user:p%2Fss%40w0rd@github.com/o", "w0rd"),
    ] {
        for args in [vec!["source", "add", spec], vec!["--json", "source", "add", spec]] {
            let run = env.aam(&args);
            assert_eq!(run.code, 1, "{spec}: {run:?}");
            let all_output = format!("{}{}", run.stdout, run.stderr);
            assert!(all_output.contains("AAM_SOURCE_URL_INVALID"), "{spec}: {all_output}");
            assert!(!all_output.contains(secret), "{spec}: secret leaked: {all_output}");
        }
    }
}

#[test]
fn a_catalog_from_a_newer_aam_is_refused() {
    let (env, _) = seeded();
    let conn = rusqlite::Connection::open(env.home().join("catalog.db")).unwrap();
    conn.execute(
        "INSERT INTO refinery_schema_history (version, name, applied_on, checksum) VALUES (99, 'future', '', '0')",
        [],
    )
    .unwrap();
    drop(conn);
    let body = fails_cleanly(&env, &["source", "list"], "AAM_CATALOG_TOO_NEW");
    assert!(body["hint"].as_str().unwrap().contains("upgrade aam"));
}

#[test]
fn a_catalog_another_process_keeps_locked_is_a_timeout_to_retry() {
    let (env, _) = seeded();
    // Another writer holding the catalog's write lock past aam's 10-second wait.
    let other = rusqlite::Connection::open(env.home().join("catalog.db")).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let body = fails_cleanly(&env, &["source", "enable-defaults"], "AAM_CATALOG_BUSY");
    assert_eq!(body["category"], "TIMEOUT", "{body}");
    assert!(body["hint"].as_str().unwrap().contains("try again"), "{body}");
    other.execute_batch("ROLLBACK").unwrap();
    // Once the lock is gone the same command goes through.
    env.json(&["source", "enable-defaults"]);
}

#[test]
fn an_empty_repository_says_it_has_no_commits() {
    let env = TestEnv::new();
    let repo = env.repo("empty");
    let body = env.json_err(&["source", "add", repo.path()], "AAM_GIT_REF_NOT_FOUND");
    assert!(
        body["message"].as_str().unwrap().contains("has no commits yet"),
        "{body}"
    );
    assert_eq!(env.json(&["source", "list"]), serde_json::json!({"sources": []}));
    assert!(!env.home().join("cache").exists(), "no cache folders left behind");
}

#[test]
fn failed_fetches_of_missing_caches_leave_nothing_behind() {
    let env = TestEnv::new();
    let repo = env.repo("gone");
    repo.write("skills/a/SKILL.md", skill("a", "A"));
    repo.commit("c1");
    env.json(&["source", "add", repo.path()]);
    std::fs::remove_dir_all(env.home().join("cache")).unwrap();
    std::fs::remove_dir_all(&repo.dir).unwrap();
    fails_cleanly(&env, &["source", "update", "gone"], "AAM_GIT_FETCH_FAILED");
    fails_cleanly(&env, &["source", "diff", "gone"], "AAM_CACHE_CORRUPTED");
    assert!(
        !env.home().join("cache").exists(),
        "no empty cache repository or folders"
    );
}

/// A server on 127.0.0.1 that hands every connection to `answer` on its own thread;
/// returns its port. The threads end with the test process.
fn serve(answer: fn(std::net::TcpStream)) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || answer(stream));
        }
    });
    port
}

/// Reads the request head, so the client is past sending.
fn read_request(stream: &mut std::net::TcpStream) {
    use std::io::Read;
    let mut seen = Vec::new();
    let mut buf = [0u8; 1024];
    while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => seen.extend_from_slice(&buf[..n]),
        }
    }
}

const ADVERTISEMENT_HEAD: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: application/x-git-upload-pack-advertisement\r\nContent-Length: 4096\r\n\r\n001e# service=git-upload-pack\n0000";

#[test]
fn stalled_servers_end_within_the_time_limit() {
    let (env, _) = seeded();
    // One accepts and never answers; one answers a header, then stalls.
    let silent = serve(|stream| {
        std::thread::sleep(std::time::Duration::from_secs(120));
        drop(stream);
    });
    let stalling = serve(|mut stream| {
        use std::io::Write;
        read_request(&mut stream);
        let _ = stream.write_all(ADVERTISEMENT_HEAD);
        let _ = stream.flush();
        std::thread::sleep(std::time::Duration::from_secs(120));
    });
    for port in [silent, stalling] {
        let url = format!("http://127.0.0.1:{port}/repo.git");
        let started = std::time::Instant::now();
        let before = env.state();
        let run = env.aam_with(
            &env.path(""),
            &[("AAM_FETCH_TIMEOUT", "2")],
            &["--json", "source", "add", &url],
        );
        let body = run.err("AAM_TIMEOUT");
        assert_eq!(body["category"], "TIMEOUT", "{body}");
        assert!(body["hint"].as_str().unwrap().contains("AAM_FETCH_TIMEOUT"), "{body}");
        assert_eq!(before, env.state());
        // Returned at all, well before the servers give up (no tight timing).
        assert!(started.elapsed() < std::time::Duration::from_secs(60), "{url}");
    }
}

#[test]
fn a_stall_ends_the_attempt_long_before_the_whole_limit() {
    let (env, _) = seeded();
    let silent = serve(|stream| {
        std::thread::sleep(std::time::Duration::from_secs(300));
        drop(stream);
    });
    let stalling = serve(|mut stream| {
        use std::io::Write;
        read_request(&mut stream);
        let _ = stream.write_all(ADVERTISEMENT_HEAD);
        let _ = stream.flush();
        std::thread::sleep(std::time::Duration::from_secs(300));
    });
    // The whole operation may take 300 s; nothing may come for 1 s. Set as settings.
    env.json(&["config", "set", "fetch.timeout", "300"]);
    env.json(&["config", "set", "fetch.stall_timeout", "1"]);
    // Over https the silent server never answers the TLS handshake: the connect limit.
    for url in [
        format!("http://127.0.0.1:{silent}/repo.git"),
        format!("http://127.0.0.1:{stalling}/repo.git"),
        format!("https://127.0.0.1:{silent}/repo.git"),
    ] {
        let started = std::time::Instant::now();
        let run = env.aam(&["--json", "source", "add", &url]);
        assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
        let body = run.err("AAM_TIMEOUT");
        assert!(body["message"].as_str().unwrap().contains("1 s without data"), "{body}");
        assert!(body["hint"].as_str().unwrap().contains("fetch.stall_timeout"), "{body}");
        // Three attempts of a 1 s stall (or a 5 s connect) each, far below the 300 s bound.
        assert!(started.elapsed() < std::time::Duration::from_secs(120), "{url}");
    }
}

#[test]
fn a_trickle_that_never_stalls_still_ends_at_the_whole_limit() {
    let (env, _) = seeded();
    // A byte every 200 ms inside one long pkt-line: never a stall, never done.
    let trickling = serve(|mut stream| {
        use std::io::Write;
        read_request(&mut stream);
        let _ = stream.write_all(ADVERTISEMENT_HEAD);
        let _ = stream.write_all(b"fff0");
        for _ in 0..600 {
            if stream.write_all(b"a").and_then(|_| stream.flush()).is_err() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    });
    let url = format!("http://127.0.0.1:{trickling}/repo.git");
    let started = std::time::Instant::now();
    let run = env.aam_with(
        &env.path(""),
        &[("AAM_FETCH_TIMEOUT", "3"), ("AAM_FETCH_STALL_TIMEOUT", "60")],
        &["--json", "source", "add", &url],
    );
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    let body = run.err("AAM_TIMEOUT");
    assert!(body["message"].as_str().unwrap().contains("3 s in all"), "{body}");
    // The trickle lasts 120 s; the limit ends it long before (no tight timing).
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
}

#[test]
fn a_transfer_that_breaks_midway_is_a_clone_failure_not_a_network_error() {
    let (env, _) = seeded();
    let port = serve(|mut stream| {
        use std::io::Write;
        read_request(&mut stream);
        // Promises 4096 bytes, sends a few, then hangs up.
        let _ = stream.write_all(ADVERTISEMENT_HEAD);
        let _ = stream.flush();
    });
    let run = env.aam_with(
        &env.path(""),
        &[("AAM_FETCH_TIMEOUT", "10")],
        &["--json", "source", "add", &format!("http://127.0.0.1:{port}/repo.git")],
    );
    let body = run.err("AAM_GIT_CLONE_FAILED");
    assert_eq!(body["category"], "UPSTREAM_ERROR", "{body}");
    assert_aam_lines_only(&run.stderr);
    // Library logs (gix, reqwest through `log`, hyper) go through aam's subscriber and format too.
    let run = env.aam_with(
        &env.path(""),
        &[("AAM_FETCH_TIMEOUT", "10")],
        &[
            "-vv",
            "--json",
            "source",
            "add",
            &format!("http://127.0.0.1:{port}/repo.git"),
        ],
    );
    run.err("AAM_GIT_CLONE_FAILED");
    assert_aam_lines_only(&run.stderr);
}

/// Every stderr line is aam's: a log line with its level, an error or a hint.
fn assert_aam_lines_only(stderr: &str) {
    let ours = [
        "error: ",
        "warning: ",
        "info: ",
        "debug: ",
        "trace: ",
        "error[",
        "hint: ",
    ];
    for line in stderr.lines().filter(|l| !l.is_empty()) {
        assert!(
            ours.iter().any(|p| line.starts_with(p)),
            "a raw line on stderr: {line:?}\n{stderr}"
        );
    }
}

/// `openssl s_server` on 127.0.0.1 with a fresh self-signed certificate for
/// 127.0.0.1; returns the server, its port and the certificate's path.
fn tls_server(env: &TestEnv) -> Option<(std::process::Child, u16, std::path::PathBuf)> {
    use std::process::{Command, Stdio};
    let (cert, key) = crate::support::self_signed_cert(env)?;
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let server = Command::new("openssl")
        .args(["s_server", "-www", "-quiet", "-accept"])
        .arg(format!("127.0.0.1:{port}"))
        .arg("-cert")
        .arg(&cert)
        .arg("-key")
        .arg(&key)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Some((server, port, cert));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("openssl s_server did not start");
}

#[test]
fn untrusted_certificates_are_refused_at_once_with_their_own_code() {
    let (env, _) = seeded();
    let (mut server, port, cert) =
        tls_server(&env).expect("this test needs `openssl` on PATH (every machine of this project has it)");
    let url = format!("https://127.0.0.1:{port}/repo.git");
    let before = env.state();
    let run = env.aam_with(
        &env.path(""),
        &[("AAM_FETCH_TIMEOUT", "10"), ("SSL_CERT_FILE", "/dev/null")],
        &["--json", "source", "add", &url],
    );
    let refused = run.err("AAM_TLS_CERTIFICATE");
    assert!(
        refused["message"].as_str().unwrap().contains("unknown issuer"),
        "{refused}"
    );
    assert!(refused["hint"].as_str().unwrap().contains("SSL_CERT_FILE"), "{refused}");
    assert!(
        !run.stderr.contains("retrying"),
        "certificates are never retried: {}",
        run.stderr
    );
    assert_eq!(before, env.state());
    // Trusting the certificate gets past TLS (the server is no git server, so it fails later).
    let run = env.aam_with(
        &env.path(""),
        &[("AAM_FETCH_TIMEOUT", "10"), ("SSL_CERT_FILE", cert.to_str().unwrap())],
        &["--json", "source", "add", &url],
    );
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(run.code, 1, "{run:?}");
    assert_ne!(run.json()["error"]["code"], "AAM_TLS_CERTIFICATE", "{run:?}");
}
