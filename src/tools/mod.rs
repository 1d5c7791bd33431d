//! The tool registry: every operation aam offers, defined once.
//!
//! A tool is a type implementing [`Tool`]: a stable `aam_*` name, a description
//! written for an agent, typed input and output (serde + schemars), a risk level
//! and a function over a [`Context`]. The CLI calls tools by type and renders their
//! output; machine front ends go through [`registry`], which erases the types to
//! JSON in and JSON out with the same validation. Nothing here parses arguments
//! or prints: front ends do that.

//!
//! Besides one module (or group folder) per tool group, the machinery shared by
//! every tool: `context` (what a call runs against), `call` (the one call path:
//! read-only refusal, input validation, the error contract, logging),
//! `registry` (the tools with their types erased) and `writes` (catalog writes
//! that keep the search index in step).

pub mod agents;
pub mod artifacts;
pub mod audit;
mod call;
pub mod catalog;
pub mod config;
mod context;
pub mod doctor;
pub mod install;
pub mod packages;
pub mod registries;
mod registry;
pub mod search;
pub mod sources;
mod writes;

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;

pub use crate::sources::{qualified_name, registered_sources_hint, split_qualified, unknown_source};
pub use call::{call, invoke, logged, next_request_id, read_only_mode, read_only_refusal};
pub use context::{Context, PooledCatalog};
pub use registry::{ToolSpec, find, registry};
pub(crate) use writes::{indexed_write, mirror_registry, streamed_write, with_fresh_registries};

use crate::error::{ErrorCode, Result};

/// How much a tool can change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Risk {
    /// Reads only.
    Read,
    /// Adds or updates state.
    Write,
    /// Removes state.
    Destructive,
}

/// One operation: typed input and output plus what an agent needs to know about it.
pub trait Tool {
    /// Stable snake_case name (`aam_source_add`).
    const NAME: &'static str;
    /// Short human title.
    const TITLE: &'static str;
    /// What it returns, when to use it, what to call next.
    const DESCRIPTION: &'static str;
    /// How much it can change.
    const RISK: Risk;
    /// Whether calling it twice with the same input has the effect of calling it once.
    const IDEMPOTENT: bool;
    /// Whether it may reach other machines (fetching from git remotes).
    const OPEN_WORLD: bool = false;
    /// Error codes particular to it (every tool may also fail with the codes in
    /// [`COMMON_ERRORS`]).
    const ERRORS: &'static [ErrorCode] = &[];
    /// Limits on its input or effects, in words.
    const CONSTRAINTS: &'static [&'static str] = &[];
    /// Documented calls, runnable against the fixture world (see [`Example`]).
    const EXAMPLES: &'static [Example];
    /// Request type.
    type Input: DeserializeOwned + JsonSchema;
    /// Response type.
    type Output: Serialize + JsonSchema;

    /// Runs the operation.
    fn run(ctx: &Context, input: Self::Input) -> Result<Self::Output>;
}

/// Codes any tool may fail with: bad input, local failures (a damaged settings
/// file among them: most tools read one), and what the call
/// path itself enforces (read-only mode and confinement, time limits,
/// cancellation, a catalog written by a newer aam or locked by another process).
pub const COMMON_ERRORS: &[ErrorCode] = &[
    ErrorCode::InvalidArgument,
    ErrorCode::CatalogError,
    ErrorCode::CatalogTooNew,
    ErrorCode::CatalogBusy,
    ErrorCode::IoError,
    ErrorCode::SettingsInvalid,
    ErrorCode::Forbidden,
    ErrorCode::Timeout,
    ErrorCode::Cancelled,
    ErrorCode::Internal,
];

/// Whether `code` is one `T` declares (its own [`Tool::ERRORS`] or a common one).
pub fn declares<T: Tool>(code: ErrorCode) -> bool {
    T::ERRORS.contains(&code) || COMMON_ERRORS.contains(&code)
}

/// A documented call of a tool.
///
/// Examples double as contract tests: `tests/it/contract.rs` builds the fixture
/// world (source `sample` from `fixtures/sample`; registry `local`, the default,
/// with `review-kit` 1.0.0 and 1.1.0; `review-kit@1.0.0` installed for claude in
/// the project; an unpublished package folder `team-rules`; a second registry
/// `extra-registry`; a registry folder `spare-registry` configured under no
/// name) and runs every example through the registry: read
/// tools first, then write tools, then destructive ones, each group by name.
pub struct Example {
    /// What it shows.
    pub title: &'static str,
    /// The input, as JSON text.
    pub input: &'static str,
    /// What the call produces.
    pub expect: Expect,
}

/// The outcome of an [`Example`].
pub enum Expect {
    /// Part of the output, as JSON text: every key given must be in the output
    /// with that value; arrays match element by element from the start (an empty
    /// array matches only an empty one).
    Output(&'static str),
    /// The call fails with this code.
    Error(ErrorCode),
}

#[cfg(test)]
mod tests {
    /// Tools never import each other: what two tools share lives on `Catalog`,
    /// `Context` or a domain module, so each tool file can move or change alone.
    #[test]
    fn tool_modules_do_not_import_each_other() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/tools");
        let tools: Vec<String> = std::fs::read_dir(&root)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.file_name().is_some_and(|n| {
                    !["mod.rs", "context.rs", "call.rs", "registry.rs", "writes.rs"].contains(&n.to_str().unwrap())
                })
            })
            .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
            .collect();
        assert!(tools.contains(&"sources".to_string()), "{tools:?}");
        let mut files = vec![];
        let mut stack = vec![root.clone()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    files.push(path);
                }
            }
        }
        for file in files {
            let rel = file.strip_prefix(&root).unwrap();
            let Some(own) = rel.iter().next().map(|c| {
                let c = std::path::Path::new(c);
                c.file_stem().unwrap().to_string_lossy().into_owned()
            }) else {
                continue;
            };
            let up = match rel.components().count() {
                1 => "super::".to_string(),
                n => "super::".repeat(n),
            };
            let text = std::fs::read_to_string(&file).unwrap();
            for other in tools.iter().filter(|t| **t != own) {
                for form in [format!("{up}{other}::"), format!("crate::tools::{other}::")] {
                    assert!(
                        !text.contains(&form),
                        "{} imports the tool module `{other}` ({form})",
                        rel.display()
                    );
                }
            }
        }
    }
}
