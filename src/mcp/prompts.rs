//! MCP prompts: ready-made instructions that walk an agent through the tools
//! for common jobs.

use rmcp::ErrorData;
use rmcp::model::{GetPromptResult, JsonObject, Prompt, PromptArgument, PromptMessage, Role};

/// Every prompt with its arguments.
pub(super) fn list() -> Vec<Prompt> {
    vec![
        Prompt::new(
            "find_artifacts",
            Some("Find skills, agents, prompts or instructions that help with a task"),
            Some(vec![
                PromptArgument::new("task")
                    .with_description("What the user wants to get done")
                    .with_required(true),
            ]),
        ),
        Prompt::new(
            "package_from_source",
            Some("Turn artifacts of a registered source into a package"),
            Some(vec![
                PromptArgument::new("source")
                    .with_description("Source name, as `aam_source_list` shows it")
                    .with_required(true),
            ]),
        ),
        Prompt::new(
            "audit_installed",
            Some("Check every installed package for local edits, missing files and updates"),
            None,
        ),
    ]
}

/// The messages of one prompt.
pub(super) fn get(name: &str, arguments: Option<&JsonObject>, allow_write: bool) -> Result<GetPromptResult, ErrorData> {
    let argument = |key: &str| -> Result<String, ErrorData> {
        arguments
            .and_then(|a| a.get(key))
            .and_then(|v| v.as_str())
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_string)
            .ok_or_else(|| ErrorData::invalid_params(format!("prompt `{name}` needs the argument `{key}`"), None))
    };
    let writes = if allow_write {
        "Write tools are available; still ask the user before changing anything."
    } else {
        "This server is read-only: tell the user which command to run (or to restart the server with `--allow-write`) instead of changing anything."
    };
    let (description, text) = match name {
        "find_artifacts" => {
            let task = argument("task")?;
            (
                "Find artifacts for a task",
                format!(
                    "Find agent artifacts that help with this task: {task}\n\n\
                     1. Call `aam_search` with two or three key words from the task (not the whole sentence). \
                     Add `types` when the user wants a skill, agent, prompt or instruction. If nothing matches, \
                     try the `suggestions` it returns or broader words.\n\
                     2. For the best three to five results, call `aam_info` with their `qualified_name` and read \
                     the description and preview.\n\
                     3. Answer with a short ranked list: qualified name, type, what it does, and why it fits. \
                     Mention `aam_install` with the qualified name for the one you recommend.\n\n{writes}"
                ),
            )
        }
        "package_from_source" => {
            let source = argument("source")?;
            (
                "Package a source's artifacts",
                format!(
                    "Build a package from the source `{source}`.\n\n\
                     1. Call `aam_source_scan` with name `{source}` to see its artifacts by type.\n\
                     2. Call `aam_source_candidates` with source `{source}` to see which are not in a package yet.\n\
                     3. Propose a coherent set (one purpose per package) and a lowercase package name; \
                     confirm with the user.\n\
                     4. Call `aam_create_package` with `from_source` = `{source}`, `artifacts` = the chosen names \
                     and `name`; then `aam_validate` on the folder it created.\n\
                     5. If the user wants it shared, `aam_publish` it to a registry (`aam_registry_list` shows them).\n\n{writes}"
                ),
            )
        }
        "audit_installed" => (
            "Audit installed packages",
            format!(
                "Audit the packages installed in this project.\n\n\
                 1. Call `aam_list` to see every installed package.\n\
                 2. For each, call `aam_verify`; for any that is not clean, call `aam_diff` to see the edits.\n\
                 3. Call `aam_outdated` once.\n\
                 4. Report per package: clean or edited (which files, in a sentence each), missing files, \
                 and whether an update is available and why. Suggest `aam_upgrade` only for packages without \
                 local edits, or with `on_edited: backup`.\n\n{writes}"
            ),
        ),
        _ => {
            return Err(ErrorData::invalid_params(
                format!("no prompt `{name}`; prompts: find_artifacts, package_from_source, audit_installed"),
                None,
            ));
        }
    };
    Ok(GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)]).with_description(description))
}
