//! `aam_source_enable_defaults`: register the built-in default sources (see
//! `sources::defaults`) without fetching them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::sources::defaults;
use crate::tools::{Context, Example, Expect, Risk, Tool};

/// Input of `aam_source_enable_defaults`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceEnableDefaultsInput {
    /// Also re-add defaults the user removed earlier.
    #[serde(default)]
    pub restore: bool,
}

/// Output of `aam_source_enable_defaults`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceEnableDefaultsOutput {
    /// Defaults registered now (not fetched yet).
    pub added: Vec<String>,
    /// Defaults already registered, by the name of the source tracking them (a source with the same URL, ref and path counts).
    pub already_present: Vec<String>,
    /// Defaults left out because the user removed them (pass `restore` to re-add).
    pub dismissed: Vec<String>,
}

/// Registers the built-in default sources.
pub struct SourceEnableDefaults;

impl Tool for SourceEnableDefaults {
    const NAME: &'static str = "aam_source_enable_defaults";
    const TITLE: &'static str = "Enable default sources";
    const DESCRIPTION: &'static str = "Register the built-in default sources (github/awesome-copilot, openai/skills:.curated, anthropics/skills, microsoft/skills) without fetching them. Defaults the user removed are skipped unless `restore` is set. Next: `aam_source_update` with `all` to fetch and index them.";
    const RISK: Risk = Risk::Write;
    const IDEMPOTENT: bool = true;
    const CONSTRAINTS: &'static [&'static str] = &["registers without fetching; `aam_source_update` fetches"];
    const EXAMPLES: &'static [Example] = &[Example {
        title: "register the default sources",
        input: r#"{}"#,
        expect: Expect::Output(
            r#"{"added": ["github/awesome-copilot", "openai/skills:.curated", "anthropics/skills", "microsoft/skills"]}"#,
        ),
    }];
    type Input = SourceEnableDefaultsInput;
    type Output = SourceEnableDefaultsOutput;

    fn run(ctx: &Context, input: SourceEnableDefaultsInput) -> Result<SourceEnableDefaultsOutput> {
        let mut catalog = ctx.catalog()?;
        let enabled = defaults::enable(&mut catalog, &ctx.cwd, input.restore)?;
        Ok(SourceEnableDefaultsOutput {
            added: enabled.added,
            already_present: enabled.already_present,
            dismissed: enabled.dismissed,
        })
    }
}
