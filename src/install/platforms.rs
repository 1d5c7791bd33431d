//! Which platforms (agents of the table in `crate::agents`) an install deploys to.

use super::Roots;
use crate::config::{Settings, project_settings_path, read_settings};
use crate::deploy;
use crate::error::{Error, ErrorCode, Result};
use crate::scan::Platform;

/// The platforms to deploy to: the ones asked for, else the project's settings
/// (`aam init`), else the home's, else the ones the project already uses.
pub fn choose(roots: &Roots, home_settings: &Settings, asked: &[Platform]) -> Result<Vec<Platform>> {
    let mut chosen: Vec<Platform> = asked.to_vec();
    let mut configured = Vec::new();
    // Where the value came from: the project's file wins over the home's, so
    // only an edit of that file mends it.
    let mut fix = "fix it with `aam config set default_platforms cursor,claude`".to_string();
    if chosen.is_empty() && !roots.global {
        let project = project_settings_path(&roots.root);
        configured = read_settings(&project)?.default_platforms;
        fix = format!(
            "fix `default_platforms` in `{}` (the project's settings)",
            project.display()
        );
    }
    if chosen.is_empty() && configured.is_empty() {
        configured = home_settings.default_platforms.clone();
        fix = "fix it with `aam config set default_platforms cursor,claude`".to_string();
    }
    if chosen.is_empty() {
        for name in configured {
            chosen.push(Platform::parse(&name).ok_or_else(|| {
                Error::new(
                    ErrorCode::SettingsInvalid,
                    format!(
                        "`default_platforms` names {}, which is not a platform",
                        crate::config::shown_value(&name)
                    ),
                )
                .with_hint(format!("{fix}; {}", crate::agents::unknown_hint(&name)))
            })?);
        }
    }
    if chosen.is_empty() {
        // For a home-folder install the root is the home: the same markers, looked up there.
        chosen = deploy::detect_platforms(&roots.root)
            .into_iter()
            .map(|(p, _)| p)
            .collect();
    }
    if chosen.is_empty() {
        return Err(Error::invalid_argument("no platform to deploy to")
            .with_hint("name platforms (`--platform`: cursor, claude, copilot, codex, or any id `aam agents` lists), set `default_platforms` with `aam config set`, or skip deploying (`--no-deploy`)"));
    }
    chosen.sort_by_key(|p| p.as_str());
    chosen.dedup();
    Ok(chosen)
}
