//! `aam_doctor`: one look at everything aam depends on, each finding with a
//! suggestion.

use std::os::unix::fs::PermissionsExt;

use schemars::JsonSchema;
use serde::Deserialize;

use super::{Context, Example, Expect, Risk, Tool};
use crate::config::{project_settings_path, read_settings};
use crate::deploy::detect_platforms;
use crate::error::Result;
use crate::health::{HealthCheck, HealthReport, catalog_checks};
use crate::install::state::{self, FileState};
use crate::packages::lock;

/// Input of `aam_doctor`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DoctorInput {
    /// Run the complete checks (seconds on a large catalog): SQLite's integrity check, which also compares every index with its table, instead of the quick check (which is skipped while the catalog is unchanged since a check that passed), and the passes over every row (foreign keys, artifact rows).
    #[serde(default)]
    pub full: bool,
}

/// Checks the whole installation.
pub struct Doctor;

impl Tool for Doctor {
    const NAME: &'static str = "aam_doctor";
    const TITLE: &'static str = "Check aam's health";
    const DESCRIPTION: &'static str = "Check everything aam depends on and say what to do about each problem: settings readable, the catalog checks (integrity: quick, and skipped while the catalog is unchanged since a check passed, unless `full`; migrations, search index, git caches; with `full` also foreign keys and rows), platform folders in the current project, installed packages against their lock file checksums, and the MCP token file's permissions. Each check passes, warns or fails with a suggestion; `healthy` is false when any fails. Changes nothing. Next: `aam_catalog_repair` for index and cache failures.";
    const RISK: Risk = Risk::Read;
    const IDEMPOTENT: bool = true;
    const EXAMPLES: &'static [Example] = &[Example {
        title: "a healthy setup",
        input: r#"{}"#,
        expect: Expect::Output(
            r#"{"healthy": true, "checks": [{"name": "settings", "status": "pass"}, {"name": "integrity", "status": "pass"}]}"#,
        ),
    }];
    type Input = DoctorInput;
    type Output = HealthReport;

    fn run(ctx: &Context, input: DoctorInput) -> Result<HealthReport> {
        let mut checks = vec![settings_check(ctx)];
        checks.extend(catalog_checks(&ctx.home, ctx.catalog().as_deref(), input.full));
        checks.push(platforms_check(ctx));
        checks.push(installs_check(ctx));
        checks.push(token_check(ctx));
        Ok(HealthReport::of(checks))
    }
}

fn settings_check(ctx: &Context) -> HealthCheck {
    let project = project_settings_path(&ctx.project_root());
    let mut valid = Vec::new();
    let mut unknown = Vec::new();
    let home = ctx.home.settings_path();
    for (path, read) in [
        (home, ctx.home.load_settings()),
        (project.clone(), read_settings(&project)),
    ] {
        match read {
            Ok(settings) if path.exists() => {
                let keys = settings.unknown_keys();
                if !keys.is_empty() {
                    unknown.push(format!("{} in {}", keys.join(", "), path.display()));
                }
                valid.push(path.display().to_string());
            }
            Ok(_) => {}
            Err(e) => {
                return HealthCheck::fail(
                    "settings",
                    e.message().to_string(),
                    e.hint().unwrap_or("fix or delete the settings file").to_string(),
                );
            }
        }
    }
    // Values the commands that use them refuse: said here, with the file.
    let home_settings = ctx.home.load_settings().unwrap_or_default();
    let project_settings = read_settings(&project).unwrap_or_default();
    for (path, settings) in [
        (ctx.home.settings_path(), &home_settings),
        (project.clone(), &project_settings),
    ] {
        if let Some(name) = settings
            .default_platforms
            .iter()
            .find(|name| crate::scan::Platform::parse(name).is_none())
        {
            return HealthCheck::fail(
                "settings",
                format!(
                    "`default_platforms` in {} names {}, which is not a platform",
                    path.display(),
                    crate::config::shown_value(name)
                ),
                crate::agents::unknown_hint(name),
            );
        }
    }
    if let Err(e) = crate::audit::gate::policy(&home_settings, Some(&project_settings)) {
        return HealthCheck::fail(
            "settings",
            e.message().to_string(),
            e.hint().unwrap_or("fix the settings file").to_string(),
        );
    }
    if !unknown.is_empty() {
        HealthCheck::warn(
            "settings",
            format!("unknown keys (kept, not used): {}", unknown.join("; ")),
            "fix a misspelt key (`aam config list` shows the known ones); a newer aam's keys can stay",
        )
    } else if valid.is_empty() {
        HealthCheck::pass("settings", "no settings files: defaults apply")
    } else {
        HealthCheck::pass("settings", format!("valid: {}", valid.join(", ")))
    }
}

fn platforms_check(ctx: &Context) -> HealthCheck {
    let root = ctx.project_root();
    let found = detect_platforms(&root);
    if found.is_empty() {
        return HealthCheck::warn(
            "platforms",
            format!("no platform folder in {}", root.display()),
            "run `aam init --platform <cursor|claude|copilot|codex>` or pass `--platform` to `aam install`",
        );
    }
    let names: Vec<String> = found
        .iter()
        .map(|(platform, marker)| format!("{} ({marker})", platform.as_str()))
        .collect();
    HealthCheck::pass("platforms", format!("found {}", names.join(", ")))
}

fn installs_check(ctx: &Context) -> HealthCheck {
    if crate::install::journal::pending(&ctx.project_root()) {
        return HealthCheck::fail(
            "installs",
            "an interrupted install, upgrade or uninstall is pending in this project".to_string(),
            "run any aam command that may write (e.g. `aam list` without AAM_READ_ONLY) to finish or undo it"
                .to_string(),
        );
    }
    let checked = ctx.install_roots(false).and_then(|roots| {
        let lock = lock::read(&roots.root)?;
        roots.check_lock(&lock)?;
        Ok((roots, lock))
    });
    let (roots, lock) = match checked {
        Ok(checked) => checked,
        Err(e) => {
            return HealthCheck::fail(
                "installs",
                e.message().to_string(),
                e.hint().unwrap_or("fix the lock file").to_string(),
            );
        }
    };
    if lock.packages.is_empty() {
        return HealthCheck::pass("installs", "no packages installed in this project");
    }
    let (mut modified, mut missing, mut conflicted) = (Vec::new(), Vec::new(), Vec::new());
    for (name, entry) in &lock.packages {
        // What `aam verify` reports: files missing, edited (some with an
        // upgrade's conflict markers left), or added to a deployed folder
        // (doctor said "as installed" where verify failed).
        let checked = state::file_status(&roots, entry).and_then(|status| {
            let edited = state::keys_in(&status, FileState::Modified);
            let marked = state::conflicted_keys(&roots, &edited)?;
            Ok((status, edited, marked, state::untracked(&roots, name, entry)?))
        });
        match checked {
            Ok((status, ..)) if !state::keys_in(&status, FileState::Missing).is_empty() => missing.push(name.clone()),
            Ok((_, _, marked, _)) if !marked.is_empty() => conflicted.push(name.clone()),
            Ok((_, edited, _, added)) if !edited.is_empty() || !added.is_empty() => modified.push(name.clone()),
            Ok(_) => {}
            Err(e) => {
                return HealthCheck::fail(
                    "installs",
                    format!("`{name}` cannot be verified: {}", e.message()),
                    e.hint()
                        .unwrap_or("reinstall it with `aam install --force`")
                        .to_string(),
                );
            }
        }
    }
    let count = match lock.packages.len() {
        1 => "1 package".to_string(),
        n => format!("{n} packages"),
    };
    if !missing.is_empty() {
        HealthCheck::fail(
            "installs",
            format!("{count} installed; files missing from {}", missing.join(", ")),
            format!(
                "see `aam verify {}`; `aam install` restores missing files from the lock file and keeps your edits",
                missing[0]
            ),
        )
    } else if !conflicted.is_empty() {
        HealthCheck::fail(
            "installs",
            format!(
                "{count} installed; an upgrade's conflict markers are left to resolve in {}",
                conflicted.join(", ")
            ),
            format!(
                "resolve the `<<<<<<< yours` … `>>>>>>> upstream` hunks of the files `aam verify {}` lists as conflicts",
                conflicted[0]
            ),
        )
    } else if !modified.is_empty() {
        HealthCheck::warn(
            "installs",
            format!("{count} installed; files edited or added in {}", modified.join(", ")),
            format!("see them with `aam verify {0}` and `aam diff {0}`", modified[0]),
        )
    } else {
        HealthCheck::pass("installs", format!("{count} installed, every file as installed"))
    }
}

fn token_check(ctx: &Context) -> HealthCheck {
    let path = ctx.home.mcp_token_path();
    match std::fs::metadata(&path) {
        Err(_) => HealthCheck::pass("mcp_token", "no MCP token file"),
        Ok(meta) if meta.permissions().mode() & 0o077 == 0 => {
            HealthCheck::pass("mcp_token", format!("{} is private to its owner", path.display()))
        }
        Ok(meta) => HealthCheck::fail(
            "mcp_token",
            format!(
                "{} can be read by others (mode {:o})",
                path.display(),
                meta.permissions().mode() & 0o777
            ),
            format!("run `chmod 600 {}`, or delete it to get a new token", path.display()),
        ),
    }
}
