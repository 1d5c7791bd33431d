//! The README's quick start: this checkout, scoped to `fixtures/sample`, as a source.

use std::path::Path;

use crate::support::{TestEnv, skill};

#[test]
fn the_checkout_scoped_to_the_sample_fixtures() {
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR"));
    assert!(
        checkout.join(".git").exists(),
        "{} is not a git checkout: the quick start indexes the checkout itself",
        checkout.display()
    );
    let env = TestEnv::new();
    let checkout = checkout.to_str().unwrap();
    let added = env.json(&[
        "source",
        "add",
        checkout,
        "--path",
        "fixtures/sample",
        "--name",
        "sample",
    ]);
    assert_eq!(added["path"], "fixtures/sample");
    let mut scan = env.json(&["source", "scan", "sample"]);
    scan["commit"] = "<commit>".into();
    insta::assert_json_snapshot!("sample_scan", scan);
}

/// The commands of README's "Quick start on a real repository" block, one per
/// `&&`-separated part of a line, comments dropped.
fn readme_quick_start() -> Vec<String> {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let section = &readme[readme
        .find("## Quick start on a real repository")
        .expect("the quick start section")..];
    let block = &section[section.find("```sh\n").unwrap() + 6..];
    let block = &block[..block.find("```").unwrap()];
    block
        .lines()
        .map(|line| line.split(" # ").next().unwrap().trim())
        .filter(|line| !line.is_empty())
        .flat_map(|line| line.split(" && ").map(|c| c.trim().to_string()).collect::<Vec<_>>())
        .collect()
}

/// Splits a command line into words: spaces separate, single quotes group.
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (mut word, mut quoted, mut any) = (String::new(), false, false);
    for c in line.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                any = true;
            }
            ' ' if !quoted => {
                if any || !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
                any = false;
            }
            c => word.push(c),
        }
    }
    if any || !word.is_empty() {
        out.push(word);
    }
    out
}

#[test]
fn readme_quick_start_runs_line_by_line_after_init() {
    let env = TestEnv::new();
    // Local stand-ins for the default sources, with the same folders.
    let defaults = [
        ("github/awesome-copilot", "awesome-copilot", "skills", "skills/review"),
        (
            "openai/skills:.curated",
            "openai-skills",
            "skills/.curated",
            "skills/.curated/notes",
        ),
        ("anthropics/skills", "anthropics-skills", "skills", "skills/pdf"),
        (
            "microsoft/skills",
            "microsoft-skills",
            ".github/skills",
            ".github/skills/azure",
        ),
    ];
    for (_, dir, _, skill_dir) in defaults {
        let repo = env.repo(dir);
        let name = skill_dir.rsplit('/').next().unwrap();
        repo.write(
            &format!("{skill_dir}/SKILL.md"),
            skill(name, &format!("Work with {name} files")),
        );
        if dir == "anthropics-skills" {
            repo.write("skills/docx/SKILL.md", skill("docx", "Work with docx files"));
        }
        repo.commit("c1");
    }
    let proj = env.repo("proj");
    proj.write("CLAUDE.md", "# Project\n");
    proj.commit("c1");
    let team = env.repo("proj/my-team-prompts");
    team.write(".github/prompts/triage.prompt.md", "Triage the issue.\n");
    team.commit("c1");
    let local = |dir: &str| env.path(dir).to_str().unwrap().to_string();

    let commands = readme_quick_start();
    assert_eq!(
        commands[0], "aam init --yes",
        "the quick start begins with `aam init --yes`"
    );
    for command in &commands {
        let mut args = words(command);
        assert_eq!(args.remove(0), "aam", "`{command}` is not an aam command");
        if args[..] == ["mcp", "serve", "--transport", "http"] {
            continue; // a server: runs until stopped
        }
        // Remote specs become their local stand-ins; `~` is the test's home.
        let mut mapped = Vec::new();
        for arg in args {
            match arg.as_str() {
                "anthropics/skills" if mapped[..] == ["source", "add"] => mapped.push(local("anthropics-skills")),
                "https://github.com/openai/skills/tree/main/skills/.curated" => {
                    mapped.extend([local("openai-skills"), "--ref".into(), "main".into()]);
                    mapped.extend(["--path".into(), "skills/.curated".into()]);
                }
                _ if arg.starts_with("~/") => {
                    mapped.push(env.user_home().join(&arg[2..]).to_str().unwrap().to_string())
                }
                _ => mapped.push(arg),
            }
        }
        if mapped.len() > 2 && mapped[..2] == ["source", "add"] {
            let spec = &mapped[2];
            assert!(
                spec.starts_with('/') || spec.starts_with("./"),
                "README adds `{spec}`: map it to a local repository here (tests never touch the network)"
            );
        }
        let args: Vec<&str> = mapped.iter().map(String::as_str).collect();
        let run = env.aam_in(&proj.dir, &args);
        assert_eq!(run.code, 0, "README's `{command}` failed: {run:?}");
        if args[0] == "init" {
            // What `init --yes` registered, now backed by the local stand-ins.
            let listed = env.json(&["source", "list"]);
            let names: Vec<&str> = listed["sources"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["name"].as_str().unwrap())
                .collect();
            assert_eq!(names.len(), defaults.len(), "{listed}");
            for (name, dir, scope, _) in defaults {
                env.json(&["source", "remove", name]);
                env.json(&["source", "add", &local(dir), "--path", scope, "--name", name]);
            }
        }
        if command.contains("--if-missing") {
            assert!(
                run.stdout.contains("already tracks") && run.stdout.contains("nothing changed"),
                "{run:?}"
            );
        }
    }
    let listed = env.json(&["source", "list"]);
    assert_eq!(
        listed["sources"].as_array().unwrap().len(),
        defaults.len(),
        "one source per repository: {listed}"
    );
}
