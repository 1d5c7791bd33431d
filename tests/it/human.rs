//! Snapshots of the human-readable output of the main commands (what a person
//! sees without `--json`), so a change in wording or layout shows up in review.
//! Temporary paths, commit ids, durations and sizes are normalized.

use crate::support::{Run, TestEnv, skill};

/// Runs `aam` without `--json`, asserting success, and snapshots its stdout.
fn snapshot(env: &TestEnv, name: &str, args: &[&str]) {
    let run = env.aam(args);
    assert_eq!(run.code, 0, "`aam {}` failed: {run:?}", args.join(" "));
    assert_human(env, name, &run);
}

fn assert_human(env: &TestEnv, name: &str, run: &Run) {
    let tmp = regex_escape(&env.root.path().canonicalize().unwrap().display().to_string());
    insta::with_settings!({
        filters => vec![
            (tmp.as_str(), "<tmp>"),
            (r"\b[0-9a-f]{40}\b", "<sha>"),
            (r"\b[0-9a-f]{64}\b", "<blake3>"),
            (r"\b[0-9a-f]{7,12}\b", "<short-sha>"),
            // Migrations move the schema version; the layout is what is under review.
            (r"schema( version)? \d+", "schema$1 <n>"),
            (r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", "<time>"),
            // A backup folder's name spells the time without colons.
            (r"\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ", "<time>"),
            (r"\b\d+(\.\d+)? ?(ms|s)\b", "<duration>"),
            (r"\b\d+(\.\d+)? ?(B|KiB|MiB|GiB|kB|MB|GB)\b", "<size>"),
        ],
        prepend_module_to_snapshot => true,
    }, {
        insta::assert_snapshot!(name, &run.stdout);
    });
}

fn regex_escape(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            let special = "\\.+*?()|[]{}^$#&-~".contains(c);
            special.then_some('\\').into_iter().chain(std::iter::once(c))
        })
        .collect()
}

#[test]
fn human_output_of_the_main_commands() {
    let env = TestEnv::new();
    let repo = env.repo("team");
    repo.write(
        "skills/pdf-tools/SKILL.md",
        skill("pdf-tools", "Fill and merge PDF forms"),
    )
    .write("skills/review/SKILL.md", skill("review", "Review a pull request"))
    .write(
        "agents/auditor.md",
        "---\nname: auditor\ndescription: Audits code\n---\nAudit.\n",
    );
    repo.commit("c1");
    snapshot(&env, "source_add", &["source", "add", repo.path(), "--name", "team"]);
    snapshot(&env, "source_list", &["source", "list"]);
    snapshot(&env, "search", &["search", "pdf"]);
    snapshot(&env, "info", &["info", "team/pdf-tools"]);
    snapshot(&env, "install", &["install", "team/pdf-tools", "--platform", "claude"]);
    snapshot(&env, "list", &["list"]);
    std::fs::write(env.path(".claude/skills/pdf-tools/SKILL.md"), "edited\n").unwrap();
    let verify = env.aam(&["verify", "--all"]);
    assert_eq!(verify.code, 1, "an edited install fails verify: {verify:?}");
    assert_human(&env, "verify_edited", &verify);
    snapshot(&env, "diff", &["diff", "pdf-tools"]);
    repo.write(
        "skills/review/SKILL.md",
        skill("review", "Review a pull request, twice"),
    );
    repo.commit("c2");
    snapshot(&env, "source_update", &["source", "update"]);
    snapshot(&env, "stats", &["catalog", "stats"]);
    snapshot(&env, "doctor", &["doctor"]);
    snapshot(&env, "uninstall", &["uninstall", "pdf-tools", "--force"]);
}

/// Tables fit the terminal's width (`COLUMNS` here): the description is cut,
/// never the names a user types; without a width, lines stay whole.
#[test]
fn tables_fit_the_terminal_width() {
    let env = TestEnv::new();
    let repo = env.repo("team");
    let long = "Fill, merge, split, stamp and sign PDF forms with every field kept as it was";
    repo.write("skills/pdf-form-filler/SKILL.md", skill("pdf-form-filler", long));
    repo.commit("c1");
    env.json(&["source", "add", repo.path(), "--name", "team"]);
    for args in [&["search", "pdf"][..], &["list", "--available"][..]] {
        let narrow = env.aam_with(env.root.path(), &[("COLUMNS", "70")], args);
        assert_eq!(narrow.code, 0, "{narrow:?}");
        assert!(
            narrow.stdout.lines().all(|l| l.chars().count() <= 70),
            "{args:?}: {}",
            narrow.stdout
        );
        assert!(narrow.stdout.contains("pdf-form-filler"), "{}", narrow.stdout);
        assert!(narrow.stdout.contains('…'), "{}", narrow.stdout);
        let whole = env.aam(args);
        assert!(whole.stdout.lines().any(|l| l.chars().count() > 70), "{}", whole.stdout);
    }
}
