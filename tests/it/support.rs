//! Shared test setup: a temporary `AAM_HOME`, real git repositories built with the
//! git CLI, and a runner for the real `aam` binary.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// A temporary home plus a scratch folder for repositories.
pub struct TestEnv {
    pub root: tempfile::TempDir,
}

/// What one `aam` run produced.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// The stdout parsed as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self:?}"))
    }

    /// Asserts success and returns the JSON output.
    pub fn ok_json(&self) -> Value {
        assert_eq!(self.code, 0, "expected success: {self:?}");
        self.json()
    }

    /// Asserts a failure with `code`, returning the error body.
    pub fn err(&self, code: &str) -> Value {
        assert_eq!(self.code, 1, "expected exit 1: {self:?}");
        assert!(
            self.stderr.contains(&format!("error[{code}]: ")),
            "expected {code} on stderr: {self:?}"
        );
        assert!(self.stderr.contains("\nhint: "), "expected a hint: {self:?}");
        let body = self.json()["error"].clone();
        assert_eq!(body["code"], code, "{self:?}");
        body
    }
}

impl TestEnv {
    pub fn new() -> Self {
        Self {
            root: tempfile::tempdir().expect("tempdir"),
        }
    }

    pub fn home(&self) -> PathBuf {
        self.root.path().join("home")
    }

    /// The user's home folder (`HOME`) the binary sees: global installs and
    /// `~/.codex/prompts` land here, never in the real one.
    pub fn user_home(&self) -> PathBuf {
        self.root.path().join("user")
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.path().join(rel)
    }

    /// An in-process tool context like the machine front ends' (sandboxed to
    /// `root`, canonical), over this world's homes, never the real ones.
    pub fn context(&self, root: &Path) -> aam::tools::Context {
        aam::tools::Context::new(aam::config::AamHome::at(self.home()), root.to_path_buf())
            .with_user_home(self.user_home())
            .sandboxed(root)
            .unwrap()
    }

    /// Runs `aam` with `args` in the scratch folder.
    pub fn aam(&self, args: &[&str]) -> Run {
        self.aam_in(self.root.path(), args)
    }

    /// Runs `aam` with `args` in `cwd`.
    pub fn aam_in(&self, cwd: &Path, args: &[&str]) -> Run {
        self.aam_with(cwd, &[], args)
    }

    /// Runs `aam` with `args` in `cwd` and the extra environment `vars`.
    pub fn aam_with(&self, cwd: &Path, vars: &[(&str, &str)], args: &[&str]) -> Run {
        let output = Command::new(env!("CARGO_BIN_EXE_aam"))
            .args(args)
            .current_dir(cwd)
            .env("AAM_HOME", self.home())
            .env("HOME", self.user_home())
            .env_remove("AAM_LOG")
            .env_remove("GH_TOKEN")
            .env_remove("GITHUB_TOKEN")
            .env_remove("AAM_FETCH_TIMEOUT")
            .env_remove("AAM_READ_ONLY")
            .env_remove("READ_ONLY")
            .env_remove("AAM_PROJECT_WATCH")
            .env_remove("AAM_PROJECT_AUTO_WATCH")
            .env_remove("COLUMNS")
            .envs(vars.iter().copied())
            .output()
            .expect("run aam");
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// `aam --json <args>`, asserting success.
    pub fn json(&self, args: &[&str]) -> Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        self.aam(&all).ok_json()
    }

    /// `aam --json <args>`, expecting the error `code`.
    pub fn json_err(&self, args: &[&str], code: &str) -> Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        self.aam(&all).err(code)
    }

    /// A new git repository at `rel` with a first commit of `files`.
    pub fn repo(&self, rel: &str) -> Repo {
        let dir = self.path(rel);
        std::fs::create_dir_all(&dir).unwrap();
        let repo = Repo { dir };
        repo.git(&["init", "-q", "-b", "main"]);
        repo.git(&["config", "core.autocrlf", "false"]);
        repo
    }

    /// Everything observable about the home: every catalog row and every cache file.
    pub fn state(&self) -> BTreeMap<String, String> {
        let mut state = BTreeMap::new();
        let db = self.home().join("catalog.db");
        if db.exists() {
            let conn = rusqlite::Connection::open(&db).unwrap();
            let tables: Vec<String> = conn
                .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
                .unwrap()
                .query_map([], |r| r.get(0))
                .unwrap()
                .map(Result::unwrap)
                .collect();
            for table in tables {
                let mut stmt = conn.prepare(&format!("SELECT * FROM {table}")).unwrap();
                let columns = stmt.column_count();
                let mut rows: Vec<String> = stmt
                    .query_map([], |r| {
                        let cells: Vec<String> = (0..columns).map(|i| format!("{:?}", r.get_ref(i).unwrap())).collect();
                        Ok(cells.join("|"))
                    })
                    .unwrap()
                    .map(Result::unwrap)
                    .collect();
                rows.sort();
                state.insert(format!("table {table}"), rows.join("\n"));
            }
        }
        let cache = self.home().join("cache");
        if cache.exists() {
            for entry in walk(&cache) {
                let rel = entry.strip_prefix(&cache).unwrap().display().to_string();
                let content = if entry.is_file() {
                    blake3::hash(&std::fs::read(&entry).unwrap()).to_hex().to_string()
                } else {
                    "dir".to_string()
                };
                state.insert(format!("cache {rel}"), content);
            }
        }
        state
    }

    /// Live artifacts of a source as `(kind, path, name, description, digest, vendor, warnings)` rows.
    pub fn artifacts(&self, source: &str) -> Vec<String> {
        self.query(
            "SELECT a.kind || ' ' || a.path || ' ' || a.name || ' ' || COALESCE(a.description, '-') || ' '
                    || a.content_digest || ' ' || a.has_vendor_agent || ' ' || COALESCE(a.warnings_json, '-')
             FROM artifacts a JOIN sources s ON s.id = a.source_id
             WHERE s.name = ?1 AND a.removed_commit_id IS NULL ORDER BY a.kind, a.path",
            &[source],
        )
    }

    /// Asserts every source's stored artifact count matches its live artifacts.
    pub fn assert_counts_consistent(&self) {
        let drifted = self.query(
            "SELECT s.name || ' ' || k.kind FROM sources s
                 JOIN (SELECT 'skill' AS kind UNION ALL SELECT 'agent' UNION ALL SELECT 'prompt' UNION ALL SELECT 'instruction') k
                 WHERE CASE k.kind WHEN 'skill' THEN s.skill_count WHEN 'agent' THEN s.agent_count
                                   WHEN 'prompt' THEN s.prompt_count ELSE s.instruction_count END
                    <> (SELECT COUNT(*) FROM artifacts a
                        WHERE a.source_id = s.id AND a.kind = k.kind AND a.removed_commit_id IS NULL)",
            &[],
        );
        assert!(drifted.is_empty(), "artifact counts drifted for {drifted:?}");
        let packaged = self.query(
            "SELECT s.name || ' ' || k.kind FROM sources s
                 JOIN (SELECT 'skill' AS kind UNION ALL SELECT 'agent' UNION ALL SELECT 'prompt' UNION ALL SELECT 'instruction') k
                 WHERE CASE k.kind WHEN 'skill' THEN s.packaged_skill_count WHEN 'agent' THEN s.packaged_agent_count
                                   WHEN 'prompt' THEN s.packaged_prompt_count ELSE s.packaged_instruction_count END
                    <> (SELECT COUNT(*) FROM artifacts a
                        WHERE a.source_id = s.id AND a.kind = k.kind AND a.removed_commit_id IS NULL
                          AND EXISTS (SELECT 1 FROM package_artifacts pa WHERE pa.artifact_id = a.id))",
            &[],
        );
        assert!(packaged.is_empty(), "packaged counts drifted for {packaged:?}");
    }

    /// Runs a one-column query against the catalog.
    pub fn query(&self, sql: &str, params: &[&str]) -> Vec<String> {
        let conn = rusqlite::Connection::open(self.home().join("catalog.db")).unwrap();
        let mut stmt = conn.prepare(sql).unwrap();
        stmt.query_map(rusqlite::params_from_iter(params), |r| r.get::<_, String>(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        out.push(path.clone());
        if path.is_dir() && !path.is_symlink() {
            out.extend(walk(&path));
        }
    }
    out
}

/// A git repository made with the git CLI (test setup only).
pub struct Repo {
    pub dir: PathBuf,
}

impl Repo {
    /// Runs git with a fixed identity and clock, returning stdout.
    pub fn git(&self, args: &[&str]) -> String {
        let output = Command::new("git")
            .args(args)
            .current_dir(&self.dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_NAME", "Test")
            .env("GIT_AUTHOR_EMAIL", "test@example.invalid")
            .env("GIT_COMMITTER_NAME", "Test")
            .env("GIT_COMMITTER_EMAIL", "test@example.invalid")
            .env("GIT_AUTHOR_DATE", "1700000000 +0000")
            .env("GIT_COMMITTER_DATE", "1700000000 +0000")
            .output()
            .expect("run git");
        assert!(
            output.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    }

    /// Writes a file (creating folders).
    pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) -> &Self {
        let path = self.dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
        self
    }

    /// Writes a skill `skills/<name>/SKILL.md` for each name, all with `description`.
    pub fn write_skills(&self, names: impl IntoIterator<Item = String>, description: &str) -> &Self {
        for name in names {
            self.write(&format!("skills/{name}/SKILL.md"), skill(&name, description));
        }
        self
    }

    /// Creates a symlink at `rel` pointing to `target`.
    pub fn symlink(&self, rel: &str, target: &str) -> &Self {
        let path = self.dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, path).unwrap();
        self
    }

    /// Removes a file or folder.
    pub fn remove(&self, rel: &str) -> &Self {
        let path = self.dir.join(rel);
        if path.is_dir() {
            std::fs::remove_dir_all(path).unwrap();
        } else {
            std::fs::remove_file(path).unwrap();
        }
        self
    }

    /// Stages everything and commits, returning the commit id.
    pub fn commit(&self, message: &str) -> String {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "--allow-empty", "-m", message]);
        self.git(&["rev-parse", "HEAD"])
    }

    /// The repository path as a string.
    pub fn path(&self) -> &str {
        self.dir.to_str().unwrap()
    }
}

/// A skill file with frontmatter.
pub fn skill(name: &str, description: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\n\n# {name}\n\nBody of {name}.\n")
}

/// Replaces values that differ between runs: commit ids, blake3 digests, times,
/// temporary paths, and archive sizes (their compressed bytes include times).
pub fn normalize(value: Value, env: &TestEnv) -> Value {
    match value {
        Value::String(s) => {
            let tmp = env.root.path().canonicalize().unwrap().display().to_string();
            let s = s.replace(&tmp, "<tmp>");
            let hex = s.chars().all(|c| c.is_ascii_hexdigit());
            let is_time = s.len() == 20 && s.ends_with('Z') && s.as_bytes().get(10) == Some(&b'T');
            Value::String(match s.len() {
                40 if hex => "<sha>".into(),
                64 if hex => "<blake3>".into(),
                _ if is_time => "<time>".into(),
                _ => s,
            })
        }
        Value::Array(items) => Value::Array(items.into_iter().map(|v| normalize(v, env)).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    let v = match k.as_str() {
                        "size" | "bytes" | "cache_bytes" => Value::from("<size>"),
                        // Sizes on disk vary with compression of timestamped objects.
                        "disk" => Value::Object(
                            v.as_object()
                                .into_iter()
                                .flatten()
                                .map(|(k, _)| (k.clone(), Value::from("<size>")))
                                .collect(),
                        ),
                        "elapsed_ms" => Value::from("<ms>"),
                        _ => normalize(v, env),
                    };
                    (k, v)
                })
                .collect(),
        ),
        other => other,
    }
}

/// A fresh self-signed certificate for `127.0.0.1` and its key, made with
/// `openssl`; `None` when openssl is not installed.
pub fn self_signed_cert(env: &TestEnv) -> Option<(PathBuf, PathBuf)> {
    use std::process::Stdio;
    let (cert, key) = (env.path("tls-cert.pem"), env.path("tls-key.pem"));
    let made = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=127.0.0.1",
        ])
        .args([
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-addext",
            "basicConstraints=critical,CA:FALSE",
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .ok()?;
    assert!(made.success(), "openssl req failed");
    Some((cert, key))
}

/// Copies `from` (a folder or file) to `to`, folders whole.
pub fn copy_tree(from: &Path, to: &Path) {
    if from.is_dir() {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            copy_tree(&entry.path(), &to.join(entry.file_name()));
        }
    } else {
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(from, to).unwrap();
    }
}
