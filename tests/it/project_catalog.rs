//! The project's own artifacts kept in the catalog (V10): indexed once, then
//! kept current from stat data, so `source candidates` never walks the tree
//! again. Real git repositories and plain folders, the real binary and catalog.

use std::path::Path;
use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::support::{Repo, TestEnv, skill};

/// `source candidates --source local` in `project`: `type path name` rows and the total.
fn local(env: &TestEnv, project: &Path) -> (Vec<String>, u64) {
    let page = env
        .aam_in(project, &["--json", "source", "candidates", "--source", "local"])
        .ok_json();
    (rows(&page), page["total"].as_u64().unwrap())
}

fn rows(page: &Value) -> Vec<String> {
    page["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            format!(
                "{} {} {} {}",
                c["source"].as_str().unwrap(),
                c["type"].as_str().unwrap(),
                c["path"].as_str().unwrap(),
                c["name"].as_str().unwrap()
            )
        })
        .collect()
}

/// Sets the mtime of every file and folder under `dir` an hour back, so the
/// recorded stat data is trusted (not within the racy window of a fresh write).
fn age(dir: &Path) {
    let past = SystemTime::now() - Duration::from_secs(3600);
    for entry in walk(dir) {
        let file = std::fs::File::open(&entry).unwrap();
        file.set_modified(past).unwrap();
    }
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = vec![dir.to_path_buf()];
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let kind = entry.file_type().unwrap();
        if kind.is_dir() && entry.file_name() != ".git" {
            out.extend(walk(&entry.path()));
        } else if kind.is_file() {
            out.push(entry.path());
        }
    }
    out
}

fn project(env: &TestEnv) -> Repo {
    let project = env.repo("project");
    project
        .write("skills/alpha/SKILL.md", skill("alpha", "First"))
        .write("skills/beta/SKILL.md", skill("beta", "Second"))
        .write(".claude/agents/helper.md", "---\nname: helper\n---\n")
        .write("src/main.rs", "fn main() {}\n");
    project
}

#[test]
fn edits_additions_and_deletions_are_seen_and_unchanged_files_are_not_read() {
    let env = TestEnv::new();
    let project = project(&env);
    project.commit("c1");
    age(&project.dir);
    let (first, total) = local(&env, &project.dir);
    assert_eq!(
        first,
        [
            "local agent .claude/agents/helper.md helper",
            "local skill skills/alpha alpha",
            "local skill skills/beta beta",
        ]
    );
    assert_eq!(total, 3);

    // An edit that keeps size and inode and puts the mtime back (`cp -p`,
    // `touch -r`) still moves the inode change time, as git checks too.
    let alpha = project.dir.join("skills/alpha/SKILL.md");
    let recorded = std::fs::metadata(&alpha).unwrap().modified().unwrap();
    std::fs::write(&alpha, skill("ALPHA", "First")).unwrap();
    std::fs::File::open(&alpha).unwrap().set_modified(recorded).unwrap();
    assert_eq!(local(&env, &project.dir).0[1], "local skill skills/alpha ALPHA");

    // A real edit is seen on the next call.
    project.write("skills/beta/SKILL.md", skill("beta-renamed", "Second, edited"));
    let (after_edit, _) = local(&env, &project.dir);
    assert_eq!(after_edit[2], "local skill skills/beta beta-renamed");

    // Additions and deletions, in folders old and new.
    project.write("skills/gamma/SKILL.md", skill("gamma", "Third"));
    project.write("prompts/deep/new.prompt.md", "# New\n");
    project.remove("skills/alpha");
    let (changed, total) = local(&env, &project.dir);
    assert_eq!(
        changed,
        [
            "local agent .claude/agents/helper.md helper",
            "local prompt prompts/deep/new.prompt.md new",
            "local skill skills/beta beta-renamed",
            "local skill skills/gamma gamma",
        ]
    );
    assert_eq!(total, 4);

    // A new ignore rule walks the tree again and drops what it ignores.
    project.write(".gitignore", "skills/gamma/\n");
    let (ignored, _) = local(&env, &project.dir);
    assert!(!ignored.iter().any(|r| r.contains("gamma")), "{ignored:?}");
    age(&project.dir);
    local(&env, &project.dir);
    project.remove(".gitignore");
    age(&project.dir);
    assert!(local(&env, &project.dir).0.iter().any(|r| r.contains("gamma")));

    // A folder that becomes a package holds copies: its inside stops counting.
    project.write("skills/aam.yaml", "name: kit\n");
    assert_eq!(local(&env, &project.dir).1, 2);
    project.remove("skills/aam.yaml");
    assert_eq!(local(&env, &project.dir).1, 4);

    // The catalog holds one row per artifact, keyed by the canonical root.
    let root = project.dir.canonicalize().unwrap();
    let counted = env.query(
        "SELECT CAST(COUNT(*) AS TEXT) FROM project_artifacts a JOIN projects p ON p.id = a.project_id WHERE p.root = ?1",
        &[root.to_str().unwrap()],
    );
    assert_eq!(counted, ["4"]);
}

#[test]
fn a_plain_folder_is_a_project_too() {
    let env = TestEnv::new();
    let dir = env.path("plain");
    let folder = Repo { dir: dir.clone() };
    folder
        .write("skills/one/SKILL.md", skill("one", "One"))
        .write("node_modules/dep/skills/two/SKILL.md", skill("two", "Vendored"))
        .write(".aam/packages/x/skills/copy/SKILL.md", skill("copy", "Installed copy"));
    age(&dir);
    assert_eq!(local(&env, &dir).0, ["local skill skills/one one"]);
    folder.write("skills/one/SKILL.md", skill("uno", "One, renamed"));
    folder.write("agents/a.md", "---\nname: a\n---\n");
    assert_eq!(
        local(&env, &dir).0,
        ["local agent agents/a.md a", "local skill skills/one uno"]
    );
}

#[test]
fn links_out_of_the_project_are_never_followed() {
    let env = TestEnv::new();
    let outside = Repo {
        dir: env.path("outside"),
    };
    outside
        .write("skills/secret/SKILL.md", skill("secret", "Outside"))
        .write("agents/secret.md", "---\nname: secret-agent\n---\n");
    let project = project(&env);
    project
        .symlink("linked", outside.path())
        .symlink("skills/linked-skill", &format!("{}/skills/secret", outside.path()))
        .symlink("agents/linked.md", &format!("{}/agents/secret.md", outside.path()))
        .symlink(
            "skills/alias/SKILL.md",
            &format!("{}/skills/secret/SKILL.md", outside.path()),
        );
    let (found, _) = local(&env, &project.dir);
    assert!(
        !found.iter().any(|r| r.contains("secret") || r.contains("linked")),
        "{found:?}"
    );
    assert!(!found.iter().any(|r| r.contains("alias")), "{found:?}");
    assert_eq!(found.len(), 3);
}

#[test]
fn folders_far_larger_than_a_project_are_refused_unless_asked() {
    let env = TestEnv::new();
    let project = project(&env);
    let args = ["--json", "source", "candidates"];
    let refused = env.aam_with(&project.dir, &[("AAM_PROJECT_MAX_ENTRIES", "5")], &args);
    let body = refused.err("AAM_PROJECT_TOO_LARGE");
    assert!(body["hint"].as_str().unwrap().contains("--large-project"), "{body}");
    let forced = env.aam_with(
        &project.dir,
        &[("AAM_PROJECT_MAX_ENTRIES", "5")],
        &["--json", "source", "candidates", "--large-project"],
    );
    assert_eq!(forced.ok_json()["total"], 3);
    // Another source's candidates need no walk of the project.
    let other = env.aam_with(
        &project.dir,
        &[("AAM_PROJECT_MAX_ENTRIES", "5")],
        &["--json", "source", "candidates", "--source", "nope"],
    );
    other.err("AAM_SOURCE_NOT_FOUND");

    // The home folder is no project, however small.
    let home = env.user_home();
    std::fs::create_dir_all(home.join("skills/x")).unwrap();
    std::fs::write(home.join("skills/x/SKILL.md"), skill("x", "X")).unwrap();
    env.aam_in(&home, &args).err("AAM_PROJECT_TOO_LARGE");
    let forced = env.aam_in(&home, &["--json", "source", "candidates", "--large-project"]);
    assert_eq!(forced.ok_json()["total"], 1);
}

#[test]
fn a_project_registered_as_a_source_is_counted_once() {
    let env = TestEnv::new();
    let project = project(&env);
    project.commit("c1");
    env.aam_in(&project.dir, &["--json", "source", "add", "."]).ok_json();
    // Not yet committed: only the working tree has it.
    project.write("skills/fresh/SKILL.md", skill("fresh", "Uncommitted"));
    let page = env.aam_in(&project.dir, &["--json", "source", "candidates"]).ok_json();
    assert_eq!(
        rows(&page),
        [
            "local skill skills/fresh fresh",
            "project agent .claude/agents/helper.md helper",
            "project skill skills/alpha alpha",
            "project skill skills/beta beta",
        ]
    );
    assert_eq!(page["total"], 4);
    assert_eq!(local(&env, &project.dir).1, 1);
}

#[test]
fn concurrent_calls_agree_and_leave_the_catalog_consistent() {
    let env = TestEnv::new();
    let project = project(&env);
    for i in 0..40 {
        project.write(&format!("skills/s{i:02}/SKILL.md"), skill(&format!("s{i:02}"), "Many"));
    }
    let expected = 43;
    std::thread::scope(|scope| {
        let calls: Vec<_> = (0..4).map(|_| scope.spawn(|| local(&env, &project.dir))).collect();
        for call in calls {
            let (found, total) = call.join().unwrap();
            assert_eq!((found.len() as u64, total), (expected, expected));
        }
    });
    project.remove("skills/s00");
    project.write("skills/s01/SKILL.md", skill("renamed", "Edited"));
    std::thread::scope(|scope| {
        let calls: Vec<_> = (0..4).map(|_| scope.spawn(|| local(&env, &project.dir))).collect();
        for call in calls {
            let (found, total) = call.join().unwrap();
            assert_eq!(total, expected - 1);
            assert!(
                found.contains(&"local skill skills/s01 renamed".to_string()),
                "{found:?}"
            );
        }
    });
    let rows = env.query("SELECT CAST(COUNT(*) AS TEXT) FROM project_artifacts", &[]);
    assert_eq!(rows, [(expected - 1).to_string()]);
    let projects = env.query("SELECT CAST(COUNT(*) AS TEXT) FROM projects", &[]);
    assert_eq!(projects, ["1"]);
}

/// Kills a watcher if the test fails before stopping it.
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `aam watch --root <root>` and waits until it watches.
fn start_watcher(env: &TestEnv, root: &Path) -> Reaped {
    use std::io::{BufRead, BufReader};
    let mut watcher = Reaped(
        std::process::Command::new(env!("CARGO_BIN_EXE_aam"))
            .args(["watch", "--root"])
            .arg(root)
            .current_dir(env.root.path())
            .env("AAM_HOME", env.home())
            .env("HOME", env.user_home())
            .env_remove("AAM_PROJECT_WATCH")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut started = String::new();
    BufReader::new(watcher.0.stdout.take().unwrap())
        .read_line(&mut started)
        .unwrap();
    assert!(started.starts_with("watching `"), "{started}");
    watcher
}

/// `aam watch` answers the commands run in its project from its watches until a
/// real `SIGTERM` stops it; a second watcher of the same project is refused
/// while the first runs; commands check the files themselves once it is gone.
#[test]
fn a_watcher_answers_the_commands_run_in_its_project_until_stopped() {
    let env = TestEnv::new();
    let repo = project(&env);
    let dir = Path::new(repo.path()).to_path_buf();
    let mut watcher = start_watcher(&env, &dir);
    let asked = |project: &Path| {
        let run = env.aam_with(
            project,
            &[("AAM_LOG", "aam=debug")],
            &["--json", "source", "candidates", "--source", "local"],
        );
        (rows(&run.ok_json()), run.stderr.contains("vouches for its record"))
    };
    let (before, vouched) = asked(&dir);
    assert!(vouched);
    let unwatched = env.aam_with(
        &dir,
        &[("AAM_LOG", "aam=debug"), ("AAM_PROJECT_WATCH", "0")],
        &["--json", "source", "candidates", "--source", "local"],
    );
    assert_eq!(rows(&unwatched.ok_json()), before);
    assert!(
        !unwatched.stderr.contains("vouches for its record"),
        "watching off asks no watcher"
    );
    std::fs::create_dir_all(dir.join("skills/added")).unwrap();
    std::fs::write(dir.join("skills/added/SKILL.md"), skill("added", "New")).unwrap();
    let (after, vouched) = asked(&dir);
    assert!(vouched);
    assert_eq!(after.len(), before.len() + 1, "{after:?}");
    assert!(after.iter().any(|row| row.ends_with("skills/added added")), "{after:?}");

    let second = env.aam_in(&dir, &["--json", "watch"]);
    second.err("AAM_CONFLICT");

    let pid = watcher.0.id().to_string();
    assert!(
        std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    assert!(watcher.0.wait().unwrap().success(), "SIGTERM stops it cleanly");
    assert_eq!(
        std::fs::read_dir(env.home().join("run")).unwrap().count(),
        0,
        "its socket is gone"
    );
    std::fs::remove_dir_all(dir.join("skills/added")).unwrap();
    let (last, vouched) = asked(&dir);
    assert!(!vouched);
    assert_eq!(last, before);
}

/// A watcher started through a link answers for the folder the link named
/// then: once the link names another project, it vouches for neither, so a
/// command in the first project sees its changes.
#[test]
fn a_watcher_whose_root_link_was_retargeted_vouches_for_no_project() {
    let env = TestEnv::new();
    let first = Path::new(project(&env).path()).to_path_buf();
    let second = Path::new(
        env.repo("second")
            .write("skills/other/SKILL.md", skill("other", "O"))
            .path(),
    )
    .to_path_buf();
    let link = env.path("current");
    std::os::unix::fs::symlink(&first, &link).unwrap();
    let _watcher = start_watcher(&env, &link);
    let asked = || {
        let run = env.aam_with(
            &first,
            &[("AAM_LOG", "aam=debug")],
            &["--json", "source", "candidates", "--source", "local"],
        );
        (rows(&run.ok_json()), run.stderr.contains("vouches for its record"))
    };
    let (before, vouched) = asked();
    assert!(vouched);
    std::fs::remove_file(&link).unwrap();
    std::os::unix::fs::symlink(&second, &link).unwrap();
    std::fs::create_dir_all(first.join("skills/added")).unwrap();
    std::fs::write(first.join("skills/added/SKILL.md"), skill("added", "New")).unwrap();
    let (after, vouched) = asked();
    assert!(!vouched, "a watcher of another folder vouched");
    assert_eq!(after.len(), before.len() + 1, "{after:?}");
}

/// A watcher whose project folder is deleted stops by itself.
#[test]
fn a_watcher_stops_when_its_project_folder_is_deleted() {
    let env = TestEnv::new();
    let dir = Path::new(project(&env).path()).to_path_buf();
    let mut watcher = start_watcher(&env, &dir);
    std::fs::remove_dir_all(&dir).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while watcher.0.try_wait().unwrap().is_none() {
        assert!(std::time::Instant::now() < deadline, "the watcher still runs");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(
        std::fs::read_dir(env.home().join("run")).unwrap().count(),
        0,
        "its socket is gone"
    );
}

/// Stops a watcher started in the background if a test fails before it stops by itself.
struct Stopped(u32);

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill").arg(self.0.to_string()).status();
    }
}

/// Whether process `pid` still runs (a zombie waiting for its reaper has stopped).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| stat.rsplit_once(") ").is_some_and(|(_, rest)| !rest.starts_with('Z')))
}

/// Polls `done` every 100 ms for up to 20 s.
fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(std::time::Instant::now() < deadline, "{what}: not within 20 s");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The files of `AAM_HOME/run/` with extension `ext`.
fn run_files(env: &TestEnv, ext: &str) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(env.home().join("run")) else {
        return Vec::new();
    };
    entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect()
}

/// A command that checked at least `project.auto_watch` folders and files of
/// its project leaves `aam watch` running behind it: the command itself
/// returns at once (the watcher holds none of its output), the next commands
/// are answered by the watcher, `aam watch --stop` stops it, and no second
/// one starts before the retry delay.
#[cfg(target_os = "linux")]
#[test]
fn a_large_project_leaves_a_watcher_behind_for_the_next_commands() {
    use std::process::{Command, Stdio};
    let env = TestEnv::new();
    let repo = project(&env);
    let dir = repo.dir.clone();
    let candidates = |vars: &[(&str, &str)]| {
        let mut all = vec![("AAM_LOG", "aam=debug")];
        all.extend_from_slice(vars);
        env.aam_with(&dir, &all, &["--json", "source", "candidates", "--source", "local"])
    };
    // The command's output is read to its end on another thread: a watcher
    // holding the command's stdout or stderr, or another descriptor the
    // command was given (here 7 and 8, copies of them), would keep it from ending.
    let mut first = Command::new("bash");
    first
        .args(["-c", "exec \"$0\" --json source candidates --source local 7>&1 8>&2"])
        .arg(env!("CARGO_BIN_EXE_aam"))
        .current_dir(&dir)
        .env("AAM_HOME", env.home())
        .env("HOME", env.user_home())
        .env_remove("AAM_PROJECT_WATCH")
        .env("AAM_PROJECT_AUTO_WATCH", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = first.spawn().unwrap();
    let (sender, ended) = std::sync::mpsc::channel();
    std::thread::spawn(move || sender.send(child.wait_with_output().unwrap()));
    let output = ended
        .recv_timeout(Duration::from_secs(60))
        .expect("the command ended; its watcher holds its output open");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let markers = run_files(&env, "started");
    assert_eq!(markers.len(), 1, "one watcher started");
    let pid: u32 = std::fs::read_to_string(&markers[0]).unwrap().trim().parse().unwrap();
    let _stopped = Stopped(pid);
    assert!(running(pid), "the watcher outlives the command that started it");

    eventually("the watcher answers", || {
        candidates(&[("AAM_PROJECT_AUTO_WATCH", "1")])
            .stderr
            .contains("vouches for its record")
    });
    std::fs::create_dir_all(dir.join("skills/added")).unwrap();
    std::fs::write(dir.join("skills/added/SKILL.md"), skill("added", "New")).unwrap();
    let run = candidates(&[("AAM_PROJECT_AUTO_WATCH", "1")]);
    assert!(run.stderr.contains("vouches for its record"), "{}", run.stderr);
    assert!(
        rows(&run.ok_json()).contains(&"local skill skills/added added".to_string()),
        "{}",
        run.stdout
    );

    // `watch --stop` removes its socket: no command can reach it, so it
    // stops, and the marker keeps the next command from starting another at once.
    let stopped = env.aam_in(&dir, &["--json", "watch", "--stop"]).ok_json();
    assert_eq!(stopped["stopped"], true, "{stopped}");
    eventually("the watcher stops", || !running(pid));
    let again = env.aam_in(&dir, &["--json", "watch", "--stop"]).ok_json();
    assert_eq!(again["stopped"], false, "{again}");
    let run = candidates(&[("AAM_PROJECT_AUTO_WATCH", "1")]);
    assert!(!run.stderr.contains("vouches for its record"), "{}", run.stderr);
    assert!(!run.stderr.contains("started a watcher"), "{}", run.stderr);
    assert!(run_files(&env, "sock").is_empty());
}

/// A project whose folders would take more than half of the user's inotify
/// watches gets its watcher through fanotify (named here with
/// `AAM_PROJECT_WATCH=fanotify`, as a project of 100,000 folders chooses it
/// on this machine): the watcher says so in its log, answers the next
/// commands, and an edit and a new skill made after it started show in them.
#[cfg(target_os = "linux")]
#[test]
fn a_watcher_through_fanotify_answers_the_next_commands() {
    let env = TestEnv::new();
    let repo = project(&env);
    let dir = repo.dir.clone();
    let vars = [
        ("AAM_LOG", "aam=debug"),
        ("AAM_PROJECT_AUTO_WATCH", "1"),
        ("AAM_PROJECT_WATCH", "fanotify"),
    ];
    let candidates = || env.aam_with(&dir, &vars, &["--json", "source", "candidates", "--source", "local"]);
    let first = candidates();
    assert!(first.stderr.contains("started a watcher"), "{}", first.stderr);
    let markers = run_files(&env, "started");
    eventually("the watcher writes its pid", || {
        std::fs::read_to_string(&markers[0]).is_ok_and(|text| text.trim().parse::<u32>().is_ok())
    });
    let pid: u32 = std::fs::read_to_string(&markers[0]).unwrap().trim().parse().unwrap();
    let _stopped = Stopped(pid);
    eventually("the watcher answers", || {
        candidates().stderr.contains("vouches for its record")
    });
    let log = std::fs::read_to_string(&run_files(&env, "log")[0]).unwrap();
    assert!(log.contains("folders through fanotify"), "{log}");

    std::fs::write(dir.join("skills/alpha/SKILL.md"), skill("renamed", "Edited")).unwrap();
    std::fs::create_dir_all(dir.join("skills/added")).unwrap();
    std::fs::write(dir.join("skills/added/SKILL.md"), skill("added", "New")).unwrap();
    let run = candidates();
    assert!(run.stderr.contains("vouches for its record"), "{}", run.stderr);
    let listed = rows(&run.ok_json());
    assert!(
        listed.contains(&"local skill skills/added added".to_string()),
        "{listed:?}"
    );
    assert!(
        listed.contains(&"local skill skills/alpha renamed".to_string()),
        "{listed:?}"
    );
    env.aam_in(&dir, &["--json", "watch", "--stop"]).ok_json();
    eventually("the watcher stops", || !running(pid));
}

/// A process that listens for the project but cannot vouch (here one that
/// fails every question) is a watcher in trouble, not a missing one: the
/// command checks the project itself, answers right, and starts no second
/// watcher beside it.
#[cfg(target_os = "linux")]
#[test]
fn a_listening_watcher_that_cannot_vouch_gets_no_second_one_beside_it() {
    let env = TestEnv::new();
    let repo = project(&env);
    let home = aam::config::AamHome::at(env.home().to_path_buf());
    let key = aam::project::key(&repo.dir);
    let failing = aam::project::ask::listen(&home, &key, || {
        Err(aam::error::Error::invalid_argument("the watcher lost its catalog"))
    })
    .unwrap()
    .expect("nothing else listens for the project");
    let run = env.aam_with(
        &repo.dir,
        &[("AAM_PROJECT_AUTO_WATCH", "1"), ("AAM_LOG", "aam=debug")],
        &["--json", "source", "candidates", "--source", "local"],
    );
    assert!(
        run.stderr.contains("no answer from the project's watcher"),
        "{}",
        run.stderr
    );
    assert_eq!(run.ok_json()["total"], 3, "the command checked the project itself");
    assert!(run_files(&env, "started").is_empty(), "no second watcher was started");
    // The same command with no process listening starts one.
    drop(failing);
    env.aam_with(
        &repo.dir,
        &[("AAM_PROJECT_AUTO_WATCH", "1")],
        &["--json", "source", "candidates", "--source", "local"],
    )
    .ok_json();
    let markers = run_files(&env, "started");
    assert_eq!(
        markers.len(),
        1,
        "with no process listening, the command starts a watcher"
    );
    let pid: u32 = std::fs::read_to_string(&markers[0]).unwrap().trim().parse().unwrap();
    let _stopped = Stopped(pid);
}

/// Below `project.auto_watch`, with it set to 0, or with watching turned off,
/// a command checks the project itself and starts nothing; the setting
/// starts one, the environment overrides it. A watcher whose catalog file was
/// replaced vouches for nothing and stops.
#[cfg(target_os = "linux")]
#[test]
fn a_small_project_or_auto_watch_off_starts_no_watcher() {
    let env = TestEnv::new();
    let repo = project(&env);
    for vars in [
        &[][..],
        &[("AAM_PROJECT_AUTO_WATCH", "0")],
        &[("AAM_PROJECT_AUTO_WATCH", "1"), ("AAM_PROJECT_WATCH", "0")],
    ] {
        let run = env.aam_with(
            &repo.dir,
            vars,
            &["--json", "source", "candidates", "--source", "local"],
        );
        run.ok_json();
        assert!(run_files(&env, "started").is_empty(), "{vars:?}");
        assert!(run_files(&env, "sock").is_empty(), "{vars:?}");
    }
    // The setting is the home's; the environment overrides it.
    env.json(&["config", "set", "project.auto_watch", "0"]);
    let candidates = |vars: &[(&str, &str)]| {
        env.aam_with(
            &repo.dir,
            vars,
            &["--json", "source", "candidates", "--source", "local"],
        )
        .ok_json()
    };
    candidates(&[]);
    assert!(run_files(&env, "started").is_empty());
    env.json(&["config", "set", "project.auto_watch", "1"]);
    candidates(&[("AAM_PROJECT_AUTO_WATCH", "0")]);
    assert!(run_files(&env, "started").is_empty(), "the environment wins");
    candidates(&[]);
    let markers = run_files(&env, "started");
    assert_eq!(markers.len(), 1, "the setting starts one");
    let pid: u32 = std::fs::read_to_string(&markers[0]).unwrap().trim().parse().unwrap();
    let _stopped = Stopped(pid);
    eventually("the watcher answers", || {
        env.aam_with(
            &repo.dir,
            &[("AAM_LOG", "aam=debug")],
            &["--json", "source", "candidates"],
        )
        .stderr
        .contains("vouches for its record")
    });
    // A catalog made again at its path is not the one the watcher keeps
    // open: it vouches for nothing there, and stops.
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(env.home().join(format!("catalog.db{suffix}")));
    }
    let run = env.aam_with(
        &repo.dir,
        &[("AAM_LOG", "aam=debug")],
        &["--json", "source", "candidates"],
    );
    assert!(!run.stderr.contains("vouches for its record"), "{}", run.stderr);
    assert_eq!(run.ok_json()["total"], 3);
    eventually("the watcher stops", || !running(pid));
    let refused = env.json_err(&["config", "set", "project.auto_watch", "many"], "AAM_INVALID_ARGUMENT");
    assert!(refused.to_string().contains("whole number"), "{refused}");
}

/// `aam watch --idle-timeout` stops by itself once no command asked for that
/// long, and removes its socket.
#[cfg(target_os = "linux")]
#[test]
fn a_watcher_stops_by_itself_after_its_idle_timeout() {
    use std::io::{BufRead, BufReader};
    let env = TestEnv::new();
    let repo = project(&env);
    let mut watcher = std::process::Command::new(env!("CARGO_BIN_EXE_aam"))
        .args(["watch", "--idle-timeout", "1", "--root"])
        .arg(&repo.dir)
        .env("AAM_HOME", env.home())
        .env("HOME", env.user_home())
        .env("AAM_LOG", "info")
        .env_remove("AAM_PROJECT_WATCH")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut started = String::new();
    BufReader::new(watcher.stdout.take().unwrap())
        .read_line(&mut started)
        .unwrap();
    assert!(started.starts_with("watching `"), "{started}");
    let pid = watcher.id();
    eventually("the idle watcher stops", || !running(pid));
    let output = watcher.wait_with_output().unwrap();
    assert!(output.status.success());
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(log.contains("no command asked within the idle timeout"), "{log}");
    assert!(run_files(&env, "sock").is_empty(), "its socket is gone");
}
