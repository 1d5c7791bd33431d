//! The registry: every tool with its types erased to JSON in and JSON out, for
//! the machine front ends, the manifest and the docs.

use schemars::Schema;

use super::call::call_json;
use super::{Context, Example, Risk, Tool};
use super::{agents, artifacts, audit, catalog, config, doctor, install, packages, registries, search, sources};
use crate::error::{ErrorCode, Result};

/// A tool with its types erased, for machine front ends.
#[derive(Clone, Copy)]
pub struct ToolSpec {
    /// Stable name.
    pub name: &'static str,
    /// Short human title.
    pub title: &'static str,
    /// Description for agents.
    pub description: &'static str,
    /// How much it can change.
    pub risk: Risk,
    /// Idempotency.
    pub idempotent: bool,
    /// Whether it may reach other machines.
    pub open_world: bool,
    /// Error codes particular to it.
    pub errors: &'static [ErrorCode],
    /// Limits, in words.
    pub constraints: &'static [&'static str],
    /// Documented calls.
    pub examples: &'static [Example],
    /// JSON Schema of the input.
    pub input_schema: fn() -> Schema,
    /// JSON Schema of the output.
    pub output_schema: fn() -> Schema,
    /// Runs it on JSON input, returning JSON output.
    pub call: fn(&Context, serde_json::Value) -> Result<serde_json::Value>,
}

fn spec<T: Tool>() -> ToolSpec {
    ToolSpec {
        name: T::NAME,
        title: T::TITLE,
        description: T::DESCRIPTION,
        risk: T::RISK,
        idempotent: T::IDEMPOTENT,
        open_world: T::OPEN_WORLD,
        errors: T::ERRORS,
        constraints: T::CONSTRAINTS,
        examples: T::EXAMPLES,
        input_schema: || schemars::schema_for!(T::Input),
        output_schema: || schemars::schema_for!(T::Output),
        call: call_json::<T>,
    }
}

/// Every registered tool, sorted by name.
pub fn registry() -> Vec<ToolSpec> {
    let mut tools = vec![
        spec::<sources::SourceAdd>(),
        spec::<sources::SourceList>(),
        spec::<sources::SourceScan>(),
        spec::<sources::SourceUpdate>(),
        spec::<sources::SourceDiff>(),
        spec::<sources::SourceRemove>(),
        spec::<sources::SourceEnableDefaults>(),
        spec::<artifacts::SourceCandidates>(),
        spec::<search::Search>(),
        spec::<artifacts::Info>(),
        spec::<artifacts::ListAvailable>(),
        spec::<audit::Audit>(),
        spec::<catalog::Reindex>(),
        spec::<packages::PkgInit>(),
        spec::<packages::PkgCreate>(),
        spec::<packages::PkgValidate>(),
        spec::<packages::PkgPack>(),
        spec::<packages::PkgPublish>(),
        spec::<registries::RegistryInit>(),
        spec::<registries::RegistryAdd>(),
        spec::<registries::RegistryList>(),
        spec::<registries::RegistryRemove>(),
        spec::<install::Install>(),
        spec::<install::Uninstall>(),
        spec::<install::Verify>(),
        spec::<install::VerifyAll>(),
        spec::<install::Diff>(),
        spec::<install::DiffAll>(),
        spec::<install::ListInstalled>(),
        spec::<install::Outdated>(),
        spec::<install::Upgrade>(),
        spec::<install::PackageInfo>(),
        spec::<install::Inventory>(),
        spec::<install::Adopt>(),
        spec::<config::ConfigGet>(),
        spec::<config::ConfigSet>(),
        spec::<config::Init>(),
        spec::<catalog::Export>(),
        spec::<catalog::Stats>(),
        spec::<catalog::Check>(),
        spec::<catalog::Repair>(),
        spec::<doctor::Doctor>(),
        spec::<agents::Agents>(),
    ];
    tools.sort_by_key(|t| t.name);
    tools
}

/// Finds a registered tool by name.
pub fn find(name: &str) -> Option<ToolSpec> {
    registry().into_iter().find(|t| t.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::AamHome;

    #[test]
    fn names_are_unique_prefixed_and_schemas_build() {
        let tools = registry();
        let mut names: Vec<_> = tools.iter().map(|t| t.name).collect();
        names.dedup();
        assert_eq!(names.len(), tools.len());
        for tool in &tools {
            assert!(tool.name.starts_with("aam_"), "{}", tool.name);
            assert!(!tool.description.is_empty());
            let input = serde_json::to_value((tool.input_schema)()).unwrap();
            assert_eq!(input["type"], "object", "{}", tool.name);
            serde_json::to_value((tool.output_schema)()).unwrap();
        }
        assert!(find("aam_source_add").is_some());
        assert!(find("aam_nope").is_none());
    }

    #[test]
    fn json_calls_validate_input() {
        let home = tempfile::tempdir().unwrap();
        let ctx = Context::new(AamHome::at(home.path().to_path_buf()), home.path().to_path_buf());
        let list = find("aam_source_list").unwrap();
        assert_eq!(
            (list.call)(&ctx, serde_json::json!({})).unwrap(),
            serde_json::json!({"sources": []})
        );
        let err = (list.call)(&ctx, serde_json::json!({"bogus": 1})).unwrap_err();
        assert_eq!(err.code(), crate::error::ErrorCode::InvalidArgument);
        assert!(err.message().contains("bogus"), "{}", err.message());
        // A wrong type names the field it is in.
        let search = find("aam_search").unwrap();
        let err = (search.call)(&ctx, serde_json::json!({"query": "x", "limit": "many"})).unwrap_err();
        assert!(
            err.message().starts_with("invalid `limit` for `aam_search`"),
            "{}",
            err.message()
        );
    }
}
