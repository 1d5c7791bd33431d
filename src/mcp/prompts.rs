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

/// A prompt's text. Tool fields are written as markers, so a test can check
/// each against the tool's schemas: `{in:tool.field}` (an input field),
/// `{out:tool.field}` (a field of its output, at any depth) and
/// `{val:tool.field=value}` (a value of an input field); each renders as
/// `` `field` `` (or `` `value` ``). `{task}`, `{source}` and `{writes}` are
/// filled in after the markers.
fn template(name: &str) -> Option<(&'static str, &'static str)> {
    let found = match name {
        "find_artifacts" => (
            "Find artifacts for a task",
            "Find agent artifacts that help with this task: {task}\n\n\
             1. Call `aam_search` with {in:aam_search.query} = two or three key words from the task (not the whole \
             sentence). Add {in:aam_search.type} (a list: {val:aam_search.type=skill}, {val:aam_search.type=agent}, \
             {val:aam_search.type=prompt}, {val:aam_search.type=instruction}) when the user wants one kind. If nothing \
             matches, try the {out:aam_search.suggestions} it returns or broader words.\n\
             2. For the best three to five results, call `aam_info` with {in:aam_info.name} = their \
             {out:aam_search.qualified_name} and read the {out:aam_info.description} and {out:aam_info.preview}.\n\
             3. Answer with a short ranked list: qualified name, type, what it does, and why it fits. \
             Mention `aam_install` with {in:aam_install.specs} = [the qualified name] for the one you recommend.\n\n\
             {writes}",
        ),
        "package_from_source" => (
            "Package a source's artifacts",
            "Build a package from the source `{source}`.\n\n\
             1. Call `aam_source_scan` with {in:aam_source_scan.name} = `{source}` to see its artifacts by type.\n\
             2. Call `aam_source_candidates` with {in:aam_source_candidates.source} = `{source}` to see which are not \
             in a package yet.\n\
             3. Propose a coherent set (one purpose per package) and a lowercase package name; confirm with the user.\n\
             4. Call `aam_create_package` with {in:aam_create_package.from_source} = `{source}`, \
             {in:aam_create_package.artifacts} = the chosen names and {in:aam_create_package.name}; then \
             `aam_validate` with {in:aam_validate.path} = the folder it created.\n\
             5. If the user wants it shared, `aam_publish` it with {in:aam_publish.archive} = that folder \
             (`aam_registry_list` shows the registries).\n\n\
             {writes}",
        ),
        "audit_installed" => (
            "Audit installed packages",
            "Audit the packages installed in this project.\n\n\
             1. Call `aam_list` to see every installed package.\n\
             2. For each, call `aam_verify` with {in:aam_verify.package}; for any that is not clean, call `aam_diff` \
             with {in:aam_diff.package} to see the edits.\n\
             3. Call `aam_outdated` once.\n\
             4. Report per package: clean or edited (which files, in a sentence each), missing files, and whether an \
             update is available and why. Suggest `aam_upgrade` only for packages without local edits, or with \
             {in:aam_upgrade.on_edited} set to {val:aam_upgrade.on_edited=backup}.\n\n\
             {writes}",
        ),
        _ => return None,
    };
    Some(found)
}

/// A field a prompt names, as its marker says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum FieldRef {
    /// `{in:tool.field}`
    Input { tool: String, field: String },
    /// `{out:tool.field}`
    Output { tool: String, field: String },
    /// `{val:tool.field=value}`
    Value { tool: String, field: String, value: String },
}

/// Renders the markers of `template` and lists the fields they name.
fn render_markers(template: &str) -> (String, Vec<FieldRef>) {
    let mut out = String::with_capacity(template.len());
    let mut refs = Vec::new();
    let mut rest = template;
    while let Some(at) = rest.find('{') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let marker = tail.find('}').map(|end| &tail[1..end]);
        let parsed = marker.and_then(|m| {
            let (kind, body) = m.split_once(':')?;
            let (tool, field) = body.split_once('.')?;
            let (tool, field) = (tool.to_string(), field.to_string());
            match kind {
                "in" => Some((format!("`{field}`"), FieldRef::Input { tool, field })),
                "out" => Some((format!("`{field}`"), FieldRef::Output { tool, field })),
                "val" => {
                    let (field, value) = field.split_once('=')?;
                    let (field, value) = (field.to_string(), value.to_string());
                    Some((format!("`{value}`"), FieldRef::Value { tool, field, value }))
                }
                _ => None,
            }
        });
        match (marker, parsed) {
            (Some(m), Some((text, field))) => {
                out.push_str(&text);
                refs.push(field);
                rest = &tail[m.len() + 2..];
            }
            _ => {
                out.push('{');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    (out, refs)
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
    let Some((description, template)) = template(name) else {
        return Err(ErrorData::invalid_params(
            format!(
                "no prompt `{}`; prompts: find_artifacts, package_from_source, audit_installed",
                crate::error::quoted(name)
            ),
            None,
        ));
    };
    let (template, _) = render_markers(template);
    let text = fill(&template, |key| match key {
        "task" | "source" => argument(key).map(Some),
        "writes" => Ok(Some(writes.to_string())),
        _ => Ok(None),
    })?;
    Ok(GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)]).with_description(description))
}

/// `template` with each `{key}` that `value` knows replaced, in one pass over
/// the template only: an argument's own text is never read for placeholders.
fn fill<E>(template: &str, value: impl Fn(&str) -> Result<Option<String>, E>) -> Result<String, E> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let known = after
            .find('}')
            .map(|close| (close, &after[..close]))
            .filter(|(_, key)| !key.is_empty() && key.chars().all(|c| c.is_ascii_lowercase()));
        match known {
            Some((close, key)) if let Some(text) = value(key)? => {
                out.push_str(&text);
                rest = &after[close + 1..];
            }
            _ => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::tools::registry;

    /// Every property name anywhere in a schema (through `$defs`, items, unions).
    fn property_names(schema: &Value, out: &mut Vec<String>) {
        match schema {
            Value::Object(map) => {
                for (key, value) in map {
                    if key == "properties"
                        && let Value::Object(props) = value
                    {
                        out.extend(props.keys().cloned());
                    }
                    property_names(value, out);
                }
            }
            Value::Array(list) => list.iter().for_each(|v| property_names(v, out)),
            _ => {}
        }
    }

    #[test]
    fn arguments_are_inserted_as_given_never_read_for_placeholders() {
        let arguments: JsonObject = serde_json::from_value(json!({
            "task": "do X {writes} and {source}",
        }))
        .unwrap();
        let result = get("find_artifacts", Some(&arguments), false).unwrap();
        let text = serde_json::to_string(&result).unwrap();
        assert!(text.contains("do X {writes} and {source}"), "{text}");
    }

    #[test]
    fn every_field_a_prompt_names_exists_in_its_tool() {
        let tools = registry();
        let schemas = |tool: &str| {
            let spec = tools
                .iter()
                .find(|t| t.name == tool)
                .unwrap_or_else(|| panic!("no tool `{tool}`"));
            (
                serde_json::to_value((spec.input_schema)()).unwrap(),
                serde_json::to_value((spec.output_schema)()).unwrap(),
            )
        };
        for prompt in list() {
            let (_, template) = template(&prompt.name).unwrap();
            let (text, refs) = render_markers(template);
            assert!(!refs.is_empty(), "{}", prompt.name);
            let mut allowed: Vec<String> = Vec::new();
            for field in &refs {
                match field {
                    FieldRef::Input { tool, field } => {
                        let (input, _) = schemas(tool);
                        assert!(
                            input["properties"].get(field).is_some(),
                            "prompt `{}` names `{field}`, which `{tool}` does not take: {}",
                            prompt.name,
                            input["properties"]
                        );
                        allowed.push(field.clone());
                    }
                    FieldRef::Output { tool, field } => {
                        let (_, output) = schemas(tool);
                        let mut names = Vec::new();
                        property_names(&output, &mut names);
                        assert!(
                            names.contains(field),
                            "prompt `{}` names `{field}`, which `{tool}` does not return",
                            prompt.name
                        );
                        allowed.push(field.clone());
                    }
                    FieldRef::Value { tool, field, value } => {
                        let (input, _) = schemas(tool);
                        let mut property = input["properties"][field].clone();
                        assert!(property.is_object(), "`{tool}` takes no `{field}`");
                        if let Some(defs) = input.get("$defs") {
                            property["$defs"] = defs.clone();
                        }
                        // A list field takes the value as one item.
                        let instance = if property.to_string().contains("\"array\"") {
                            json!([value])
                        } else {
                            json!(value)
                        };
                        let validator = jsonschema::validator_for(&property).unwrap();
                        assert!(
                            validator.is_valid(&instance),
                            "prompt `{}`: `{value}` is not a valid `{field}` of `{tool}`",
                            prompt.name
                        );
                        allowed.push(value.clone());
                    }
                }
            }
            // Every other code span is a tool, a flag or an argument: a field
            // written by hand (say `types`) fails here.
            for span in text.split('`').skip(1).step_by(2) {
                let known = allowed.iter().any(|a| a == span)
                    || tools.iter().any(|t| t.name == span)
                    || span.starts_with("--")
                    || ["{task}", "{source}"].contains(&span);
                assert!(known, "prompt `{}` names `{span}` without a marker", prompt.name);
            }
        }
    }

    #[test]
    fn markers_render_and_arguments_are_not_markers() {
        let (text, refs) = render_markers("a {in:t.f} b {out:t.g} {val:t.h=v} {task} {x");
        assert_eq!(text, "a `f` b `g` `v` {task} {x");
        assert_eq!(refs.len(), 3);
        let mut arguments = JsonObject::new();
        arguments.insert("task".into(), json!("{in:aam_search.bogus}"));
        let result = get("find_artifacts", Some(&arguments), false).unwrap();
        let text = serde_json::to_value(&result.messages[0]).unwrap()["content"]["text"].clone();
        assert!(text.as_str().unwrap().contains("task: {in:aam_search.bogus}"), "{text}");
        assert!(text.as_str().unwrap().contains("`type`"), "{text}");
    }
}
