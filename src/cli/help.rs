//! Help text from the tool registry: every flag that is a tool input field is
//! described by that field's schema description, so `aam <command> --help`, the
//! MCP tool list and the manifest say the same thing. The descriptions are
//! attached only when help or completions are rendered, so ordinary runs never
//! build the schemas.

use clap::CommandFactory;

use super::Cli;

/// Each command and the registered tools it calls (or whose output it shows:
/// `aam info` shows what `aam_package_info` returns for a package, through
/// `aam_info`); the first tool's input fields describe the command's flags.
pub(super) const COMMAND_TOOLS: &[(&str, &[&str])] = &[
    ("source add", &["aam_source_add"]),
    ("source list", &["aam_source_list"]),
    ("source scan", &["aam_source_scan"]),
    ("source update", &["aam_source_update"]),
    ("source diff", &["aam_source_diff"]),
    ("source remove", &["aam_source_remove"]),
    ("source enable-defaults", &["aam_source_enable_defaults"]),
    ("source candidates", &["aam_source_candidates"]),
    ("search", &["aam_search"]),
    ("info", &["aam_info", "aam_package_info"]),
    ("list", &["aam_list", "aam_list_available"]),
    ("install", &["aam_install"]),
    ("uninstall", &["aam_uninstall"]),
    ("verify", &["aam_verify", "aam_verify_all"]),
    ("diff", &["aam_diff", "aam_diff_all"]),
    ("outdated", &["aam_outdated"]),
    ("inventory", &["aam_inventory"]),
    ("adopt", &["aam_adopt"]),
    ("audit", &["aam_audit"]),
    ("upgrade", &["aam_upgrade"]),
    ("catalog reindex", &["aam_catalog_reindex"]),
    ("pkg init", &["aam_init_package"]),
    ("pkg create", &["aam_create_package"]),
    ("pkg validate", &["aam_validate"]),
    ("pkg pack", &["aam_pack"]),
    ("pkg publish", &["aam_publish"]),
    ("registry init", &["aam_registry_init"]),
    ("registry add", &["aam_registry_add"]),
    ("registry list", &["aam_registry_list"]),
    ("registry remove", &["aam_registry_remove"]),
    ("catalog export", &["aam_catalog_export"]),
    ("catalog stats", &["aam_catalog_stats"]),
    ("catalog check", &["aam_catalog_check", "aam_catalog_repair"]),
    ("config get", &["aam_config_get"]),
    ("config list", &["aam_config_get"]),
    ("config set", &["aam_config_set"]),
    ("init", &["aam_init"]),
    ("doctor", &["aam_doctor"]),
    ("agents", &["aam_agents"]),
];

/// The CLI definition with each flag described as its tool input field is.
pub(super) fn described() -> clap::Command {
    let mut root = Cli::command();
    for (path, tools) in COMMAND_TOOLS {
        let fields = field_descriptions(tools[0]);
        root = with_subcommand(root, &path.split(' ').collect::<Vec<_>>(), &|command| {
            let ids: Vec<(String, String)> = command
                .get_arguments()
                .filter_map(|arg| {
                    let id = arg.get_id().as_str().to_string();
                    let description = field_for(arg, &fields)?;
                    Some((id, description.clone()))
                })
                .collect();
            ids.into_iter().fold(command, |command, (id, description)| {
                command.mut_arg(id, |a| a.help(description).long_help(None::<&str>))
            })
        });
    }
    root
}

/// Applies `change` to the subcommand at `path` under `command`.
fn with_subcommand(
    command: clap::Command,
    path: &[&str],
    change: &dyn Fn(clap::Command) -> clap::Command,
) -> clap::Command {
    match path {
        [] => change(command),
        [first, rest @ ..] => command.mut_subcommand(*first, |sub| with_subcommand(sub, rest, change)),
    }
}

/// The schema description of each input field of `tool`, by field name, as one line.
fn field_descriptions(tool: &str) -> std::collections::BTreeMap<String, String> {
    let Some(spec) = crate::tools::find(tool) else {
        return Default::default();
    };
    let schema = serde_json::to_value((spec.input_schema)()).unwrap_or_default();
    schema["properties"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(name, p)| {
            let text = p["description"].as_str()?;
            Some((
                name.clone(),
                for_people(&text.split_whitespace().collect::<Vec<_>>().join(" ")),
            ))
        })
        .collect()
}

/// `text` with each tool it names (`aam_audit`) named as its command (`aam audit`).
fn for_people(text: &str) -> String {
    COMMAND_TOOLS.iter().fold(text.to_string(), |text, (path, tools)| {
        tools.iter().fold(text, |text, tool| {
            text.replace(&format!("`{tool}`"), &format!("`aam {path}`"))
        })
    })
}

/// The input field a flag stands for: by its id, or by its long name.
fn field_for<'f>(arg: &clap::Arg, fields: &'f std::collections::BTreeMap<String, String>) -> Option<&'f String> {
    let id = arg.get_id().as_str().replace('-', "_");
    fields
        .get(&id)
        .or_else(|| fields.get(&arg.get_long()?.replace('-', "_")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find_command<'c>(root: &'c clap::Command, path: &str) -> &'c clap::Command {
        path.split(' ').fold(root, |c, name| {
            c.find_subcommand(name).unwrap_or_else(|| panic!("no `{path}`"))
        })
    }

    #[test]
    fn tools_named_in_a_flag_help_are_named_as_commands() {
        assert_eq!(
            for_people("rule ids (see `aam_audit`), or `aam_source_add`"),
            "rule ids (see `aam audit`), or `aam source add`"
        );
    }

    #[test]
    fn each_flag_says_what_its_input_field_says() {
        let root = described();
        root.clone().debug_assert();
        let mut checked = 0;
        for (command, tools) in COMMAND_TOOLS {
            let fields = field_descriptions(tools[0]);
            for arg in find_command(&root, command).get_arguments() {
                let Some(description) = field_for(arg, &fields) else {
                    continue;
                };
                let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
                assert_eq!(&help, description, "aam {command} --{}", arg.get_id());
                checked += 1;
            }
        }
        assert!(checked > 80, "only {checked} flags stand for input fields");
    }

    #[test]
    fn help_is_rendered_with_the_schema_descriptions() {
        let mut root = described();
        let add = root
            .find_subcommand_mut("source")
            .unwrap()
            .find_subcommand_mut("add")
            .unwrap();
        let help = add.render_long_help().to_string();
        let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
        let fields = field_descriptions("aam_source_add");
        assert!(help.contains(fields["if_missing"].as_str()), "{help}");
    }
}
