//! Snapshots of every `--json` shape, so any change to an output contract shows
//! up in review. Commit ids, times and temporary paths are normalized.

use crate::support::{TestEnv, normalize, skill};

#[test]
fn json_output_contracts() {
    let env = TestEnv::new();
    let repo = env.repo("shapes");
    repo.write("skills/a/SKILL.md", skill("a", "A"))
        .write("agents/b.md", "---\nname: b\n---\n");
    repo.commit("c1");
    let snap = |name: &str, args: &[&str]| {
        insta::assert_json_snapshot!(name, normalize(env.json(args), &env));
    };
    snap("add", &["source", "add", repo.path()]);
    snap("list", &["source", "list"]);
    snap("scan", &["source", "scan", "shapes"]);
    repo.write("skills/c/SKILL.md", skill("c", "C")).remove("agents/b.md");
    repo.commit("c2");
    snap("diff", &["source", "diff", "shapes"]);
    snap("update_dry_run", &["source", "update", "--dry-run"]);
    snap("update", &["source", "update", "shapes"]);
    snap("search", &["search", "a"]);
    snap("info", &["info", "shapes/a"]);
    snap("list_available", &["list", "--available"]);
    snap("candidates", &["source", "candidates", "--source", "shapes"]);
    let mut reindex = env.json(&["catalog", "reindex"]);
    reindex["elapsed_ms"] = 0.into();
    insta::assert_json_snapshot!("reindex", reindex);
    snap(
        "pkg_create",
        &[
            "pkg",
            "create",
            "--from-source",
            "shapes",
            "--all",
            "--name",
            "shapes-kit",
        ],
    );
    snap("pkg_validate", &["pkg", "validate", "shapes-kit"]);
    snap("pkg_pack", &["pkg", "pack", "shapes-kit"]);
    snap("registry_init", &["registry", "init", "reg", "--default"]);
    snap("pkg_publish", &["pkg", "publish", "shapes-kit"]);
    snap("registry_list", &["registry", "list"]);
    snap("install", &["install", "shapes-kit", "--platform", "claude"]);
    snap("list_installed", &["list"]);
    std::fs::write(env.path(".claude/skills/a/SKILL.md"), "edited\n").unwrap();
    let verify = env.aam(&["--json", "verify", "shapes-kit"]);
    insta::assert_json_snapshot!("verify", normalize(verify.json(), &env));
    snap("diff_installed", &["diff", "shapes-kit"]);
    snap("outdated", &["outdated"]);
    snap("upgrade", &["upgrade"]);
    snap("package_info", &["info", "shapes-kit"]);
    snap("uninstall", &["uninstall", "shapes-kit"]);
    snap("pkg_init", &["pkg", "init", "fresh", "--yes"]);
    snap("registry_remove", &["registry", "remove", "reg"]);
    snap("enable_defaults", &["source", "enable-defaults"]);
    snap("remove", &["source", "remove", "shapes", "--purge-cache"]);
    insta::assert_json_snapshot!("error", env.aam(&["--json", "source", "scan", "nope"]).json());
}
