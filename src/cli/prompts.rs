//! Questions asked on a terminal when flags leave something open.

use dialoguer::{Confirm, Input, MultiSelect, Select};

use crate::deploy::detect_platforms;
use crate::error::{Error, Result};
use crate::scan::Platform;
use crate::tools::artifacts::{CandidatesInput, SourceCandidates};
use crate::tools::config::InitInput;
use crate::tools::install::{Diff, OnEdited, UpgradeReport, VerifyInput};
use crate::tools::packages::{PkgCreateInput, PkgInitInput};
use crate::tools::sources::{SourceScan, SourceScanInput};
use crate::tools::{Context, invoke};

fn cancelled(e: dialoguer::Error) -> Error {
    Error::invalid_argument(format!("no answer: {e}")).with_hint("pass the values as flags, or `--yes` for defaults")
}

fn ask(prompt: &str, current: &mut Option<String>, default: &str) -> Result<()> {
    let mut question = Input::<String>::new()
        .with_prompt(prompt)
        .allow_empty(default.is_empty());
    let initial = current.clone().unwrap_or_else(|| default.to_string());
    if !initial.is_empty() {
        question = question.default(initial);
    }
    let answer = question.interact_text().map_err(cancelled)?;
    *current = Some(answer).filter(|a| !a.trim().is_empty());
    Ok(())
}

/// Asks for the manifest fields `aam pkg init` was not given.
pub fn init(input: &mut PkgInitInput) -> Result<()> {
    ask("Package name", &mut input.name, "")?;
    ask("Version", &mut input.version, "0.1.0")?;
    ask("Description", &mut input.description, "")?;
    ask("Author", &mut input.author, "")?;
    ask("License", &mut input.license, "MIT")?;
    Ok(())
}

/// Lets the user tick the artifacts to package; returns their paths.
pub fn choose_artifacts(ctx: &Context, input: &PkgCreateInput) -> Result<Vec<String>> {
    let items: Vec<(String, String)> = match &input.from_source {
        Some(source) => {
            let scan = invoke::<SourceScan>(
                ctx,
                SourceScanInput {
                    name: source.clone(),
                    kind: None,
                },
            )?;
            let a = &scan.artifacts;
            [
                ("skill", &a.skills),
                ("agent", &a.agents),
                ("prompt", &a.prompts),
                ("instruction", &a.instructions),
            ]
            .into_iter()
            .flat_map(|(kind, list)| {
                list.iter()
                    .map(move |x| (format!("{kind:<11} {}  ({})", x.name, x.path), x.path.clone()))
            })
            .collect()
        }
        None => {
            let local = invoke::<SourceCandidates>(
                ctx,
                CandidatesInput {
                    source: Some("local".to_string()),
                    kind: None,
                    limit: 1000,
                    cursor: None,
                    large_project: false,
                },
            )?;
            local
                .candidates
                .into_iter()
                .map(|c| (format!("{:<11} {}  ({})", c.kind.as_str(), c.name, c.path), c.path))
                .collect()
        }
    };
    if items.is_empty() {
        return Err(Error::invalid_argument("there are no artifacts to choose from")
            .with_hint("add skills, agents, prompts or instructions first"));
    }
    let labels: Vec<&str> = items.iter().map(|(label, _)| label.as_str()).collect();
    let picked = MultiSelect::new()
        .with_prompt("Artifacts to package (space to tick, enter to confirm)")
        .items(&labels)
        .interact()
        .map_err(cancelled)?;
    if picked.is_empty() {
        return Err(Error::invalid_argument("no artifacts chosen").with_hint("tick at least one, or pass `--all`"));
    }
    Ok(picked.into_iter().map(|i| items[i].1.clone()).collect())
}

/// Asks what to do with files edited since install before an upgrade overwrites them.
pub fn on_edited(ctx: &Context, report: &UpgradeReport, global: bool) -> Result<OnEdited> {
    eprintln!(
        "`{}` {} -> {} would overwrite files you edited:",
        report.name, report.from, report.to
    );
    for file in &report.modified_files {
        eprintln!("  {file}");
    }
    loop {
        let choice = Select::new()
            .with_prompt("What should happen to them?")
            .items([
                "back them up, then upgrade",
                "merge my edits with the new version",
                "skip this package",
                "show the diff",
                "overwrite them",
            ])
            .default(0)
            .interact()
            .map_err(cancelled)?;
        match choice {
            0 => return Ok(OnEdited::Backup),
            1 => return Ok(OnEdited::Merge),
            2 => return Ok(OnEdited::Skip),
            3 => {
                let diff = invoke::<Diff>(
                    ctx,
                    VerifyInput {
                        package: report.name.clone(),
                        global,
                    },
                )?;
                for file in diff.modified_files {
                    eprintln!("{}", file.diff);
                }
            }
            _ => return Ok(OnEdited::Force),
        }
    }
}

/// Asks `aam init` which platforms to deploy to (the detected ones ticked) and
/// whether to register the default sources.
pub fn setup(ctx: &Context, input: &mut InitInput) -> Result<()> {
    let root = ctx.project_root();
    // The project's setting when set (a team's committed choice), else what it uses.
    let set = crate::config::read_settings(&crate::config::project_settings_path(&root))?.default_platforms;
    let ticked_now: Vec<Platform> = match set.is_empty() {
        true => detect_platforms(&root).into_iter().map(|(p, _)| p).collect(),
        false => set.iter().filter_map(|name| Platform::parse(name)).collect(),
    };
    if input.platforms.is_empty() {
        let all = Platform::ALL;
        let ticked: Vec<bool> = all.iter().map(|p| ticked_now.contains(p)).collect();
        let labels: Vec<String> = all.iter().map(|p| format!("{} ({})", p.agent().name, p.id())).collect();
        let chosen = MultiSelect::new()
            .with_prompt("Platforms to install into by default (space ticks, enter accepts)")
            .items(&labels)
            .defaults(&ticked)
            .interact()
            .map_err(cancelled)?;
        input.platforms = chosen.into_iter().map(|i| all[i]).collect();
    }
    input.add_default_sources = Confirm::new()
        .with_prompt("Register the built-in default sources (fetched on `aam source update`)?")
        .default(true)
        .interact()
        .map_err(cancelled)?;
    Ok(())
}
