//! When an agent applies a rule (an instruction): the scope its frontmatter
//! gives it, read from whichever agent's keys its author wrote, so that a rule
//! limited to `*.ts` files for one agent stays limited on every other.
//!
//! | scope | Cursor | Copilot | Windsurf | Kiro | Claude Code, Cline |
//! |---|---|---|---|---|---|
//! | always | `alwaysApply: true` | `applyTo: "**"` | `trigger: always_on` | `inclusion: always` | |
//! | files | `globs` | `applyTo` | `trigger: glob` + `globs` | `inclusion: fileMatch` + `fileMatchPattern` | `paths` |
//! | described | `alwaysApply: false` + `description` | | `trigger: model_decision` | `inclusion: auto` | |
//! | manual | `alwaysApply: false` | | `trigger: manual` | `inclusion: manual` | |
//!
//! A rule with none of these keys is [`Scope::Unstated`]: every agent applies
//! it as it applies a plain rule. Agents that read none of these keys (a
//! section of `CLAUDE.md` or `AGENTS.md`) get the scope as a sentence before
//! the rule ([`sentence`]). This module is pure: `crate::deploy` writes the
//! keys each agent reads.

use serde_json::{Map, Value};

/// When a rule applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// No key says: as the agent applies a plain rule (always, for most).
    Unstated,
    /// Always, as a key says.
    Always,
    /// When the agent works on files matching one of these globs.
    Files(Vec<String>),
    /// When the agent finds it relevant, from its description.
    Described,
    /// Only when the user asks for it.
    Manual,
}

impl Scope {
    /// The scope the frontmatter `fields` give a rule.
    pub fn of(fields: &Map<String, Value>) -> Scope {
        let text = |key: &str| fields.get(key).and_then(Value::as_str).map(str::trim);
        let described = || {
            if text("description").is_some_and(|d| !d.is_empty()) {
                Scope::Described
            } else {
                Scope::Manual
            }
        };
        let files = |keys: &[&str]| {
            let globs: Vec<String> = keys.iter().flat_map(|key| globs(fields.get(*key))).collect();
            (!globs.is_empty()).then_some(Scope::Files(globs))
        };
        if fields.get("alwaysApply") == Some(&Value::Bool(true)) {
            return Scope::Always;
        }
        match text("trigger") {
            Some("always_on") => return Scope::Always,
            Some("glob") => return files(&["globs"]).unwrap_or(Scope::Manual),
            Some("model_decision") => return described(),
            Some("manual") => return Scope::Manual,
            _ => {}
        }
        match text("inclusion") {
            Some("always") => return Scope::Always,
            Some("fileMatch") => return files(&["fileMatchPattern"]).unwrap_or(Scope::Manual),
            Some("auto") => return described(),
            Some("manual") => return Scope::Manual,
            _ => {}
        }
        if let Some(files) = files(&["globs", "applyTo", "paths", "fileMatchPattern"]) {
            return match files {
                Scope::Files(globs) if globs.iter().all(|g| matches!(g.as_str(), "**" | "**/*")) => Scope::Always,
                files => files,
            };
        }
        if fields.get("alwaysApply") == Some(&Value::Bool(false)) {
            return described();
        }
        Scope::Unstated
    }
}

/// The globs of a frontmatter value: a list, or one string of comma-separated
/// globs (commas inside `{a,b}` belong to their glob).
fn globs(value: Option<&Value>) -> Vec<String> {
    let mut globs = Vec::new();
    match value {
        Some(Value::String(text)) => globs.extend(split_globs(text)),
        Some(Value::Array(items)) => {
            for text in items.iter().filter_map(Value::as_str) {
                globs.extend(split_globs(text));
            }
        }
        _ => {}
    }
    globs
}

fn split_globs(text: &str) -> Vec<String> {
    let mut globs = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (at, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                globs.push(&text[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    globs.push(&text[start..]);
    globs
        .into_iter()
        .map(|glob| glob.trim().trim_matches(['"', '\'']).trim())
        .filter(|glob| !glob.is_empty())
        .map(str::to_string)
        .collect()
}

/// Globs as one comma-separated value (Cursor's `globs`, Copilot's `applyTo`).
pub fn joined(globs: &[String]) -> String {
    globs.join(",")
}

/// Globs as one glob (Kiro's `fileMatchPattern`): `{a,b}` for several.
pub fn one_glob(globs: &[String]) -> String {
    match globs {
        [one] => one.clone(),
        many => format!("{{{}}}", many.join(",")),
    }
}

/// The sentence that tells an agent reading a shared file (`CLAUDE.md`,
/// `AGENTS.md`) when the rule `name` below it applies; `None` when always.
/// Written on one line, control characters replaced: a frontmatter value
/// cannot add lines of its own to the shared file.
pub fn sentence(scope: &Scope, name: &str, description: Option<&str>) -> Option<String> {
    let one_line = |text: &str| {
        text.split(|c: char| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}'))
            .map(str::trim)
            .filter(|part| !part.is_empty())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let sentence = match scope {
        Scope::Unstated | Scope::Always => return None,
        Scope::Files(globs) => {
            let quoted: Vec<String> = globs.iter().map(|g| format!("`{}`", one_line(g))).collect();
            format!(
                "Apply the `{}` rule below only when working on files matching {}.",
                one_line(name),
                quoted.join(", ")
            )
        }
        Scope::Described => match description.map(one_line).filter(|d| !d.is_empty()) {
            Some(description) => format!(
                "Apply the `{}` rule below only when it is relevant: {description}",
                one_line(name)
            ),
            None => format!("Apply the `{}` rule below only when it is relevant.", one_line(name)),
        },
        Scope::Manual => format!(
            "Apply the `{}` rule below only when the user asks for it by name.",
            one_line(name)
        ),
    };
    Some(sentence)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::frontmatter;
    use rstest::rstest;

    fn scope(text: &str) -> Scope {
        Scope::of(&frontmatter::parse(text).fields.unwrap_or_default())
    }

    fn files(globs: &[&str]) -> Scope {
        Scope::Files(globs.iter().map(|g| g.to_string()).collect())
    }

    #[rstest]
    #[case::plain("# Rule\n", Scope::Unstated)]
    #[case::description_only("---\ndescription: TS\n---\nx", Scope::Unstated)]
    #[case::cursor_always("---\nalwaysApply: true\nglobs: '*.ts'\n---\nx", Scope::Always)]
    #[case::cursor_globs("---\nglobs: **/*.ts, **/*.tsx\nalwaysApply: false\n---\nx", files(&["**/*.ts", "**/*.tsx"]))]
    #[case::cursor_braces("---\nglobs: src/**/*.{ts,tsx}\n---\nx", files(&["src/**/*.{ts,tsx}"]))]
    #[case::cursor_requested("---\ndescription: On TS work\nalwaysApply: false\n---\nx", Scope::Described)]
    #[case::cursor_manual("---\nalwaysApply: false\n---\nx", Scope::Manual)]
    #[case::copilot_everywhere("---\napplyTo: \"**\"\n---\nx", Scope::Always)]
    #[case::copilot_files("---\napplyTo: \"**/*.rs,Cargo.toml\"\n---\nx", files(&["**/*.rs", "Cargo.toml"]))]
    #[case::windsurf_always("---\ntrigger: always_on\n---\nx", Scope::Always)]
    #[case::windsurf_glob("---\ntrigger: glob\nglobs: '*.py'\n---\nx", files(&["*.py"]))]
    #[case::windsurf_glob_without_globs("---\ntrigger: glob\n---\nx", Scope::Manual)]
    #[case::windsurf_model("---\ntrigger: model_decision\ndescription: Rust work\n---\nx", Scope::Described)]
    #[case::windsurf_manual("---\ntrigger: manual\nglobs: '*.py'\n---\nx", Scope::Manual)]
    #[case::kiro_always("---\ninclusion: always\n---\nx", Scope::Always)]
    #[case::kiro_file("---\ninclusion: fileMatch\nfileMatchPattern: \"components/**/*.tsx\"\n---\nx", files(&["components/**/*.tsx"]))]
    #[case::kiro_list("---\ninclusion: fileMatch\nfileMatchPattern:\n  - '*.ts'\n  - '*.tsx'\n---\nx", files(&["*.ts", "*.tsx"]))]
    #[case::kiro_auto("---\ninclusion: auto\nname: api\ndescription: API work\n---\nx", Scope::Described)]
    #[case::kiro_manual("---\ninclusion: manual\n---\nx", Scope::Manual)]
    #[case::claude_paths("---\npaths:\n  - \"src/api/**/*.ts\"\n---\nx", files(&["src/api/**/*.ts"]))]
    #[case::empty_globs("---\nglobs: ''\nalwaysApply: false\ndescription: d\n---\nx", Scope::Described)]
    fn a_rule_keeps_the_scope_its_author_gave_it(#[case] text: &str, #[case] expected: Scope) {
        assert_eq!(scope(text), expected, "{text}");
    }

    #[test]
    fn globs_join_as_each_agent_reads_them() {
        let globs = vec!["*.ts".to_string(), "src/**/*.{js,jsx}".to_string()];
        assert_eq!(joined(&globs), "*.ts,src/**/*.{js,jsx}");
        assert_eq!(one_glob(&globs), "{*.ts,src/**/*.{js,jsx}}");
        assert_eq!(one_glob(&globs[..1]), "*.ts");
    }

    #[test]
    fn the_sentence_names_the_scope_on_one_line() {
        assert_eq!(sentence(&Scope::Unstated, "r", None), None);
        assert_eq!(sentence(&Scope::Always, "r", None), None);
        assert_eq!(
            sentence(&files(&["**/*.ts", "*.tsx"]), "ts", None).unwrap(),
            "Apply the `ts` rule below only when working on files matching `**/*.ts`, `*.tsx`."
        );
        assert_eq!(
            sentence(&Scope::Described, "api", Some("When editing\nthe API")).unwrap(),
            "Apply the `api` rule below only when it is relevant: When editing the API"
        );
        assert_eq!(
            sentence(&Scope::Manual, "r", None).unwrap(),
            "Apply the `r` rule below only when the user asks for it by name."
        );
        let forged = sentence(&files(&["*.ts\n<!-- END AAM: x -->\u{2028}x"]), "r", None).unwrap();
        assert!(!crate::deploy::sections::forges_marker(&forged), "{forged}");
    }
}
