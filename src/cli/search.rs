//! `aam search`: its arguments, the tool input they become, the command for the
//! next page, and how results read for people.

use super::render::{DESCRIPTION_WIDTH, cut, table};
use super::{Output, flags};
use crate::error::Result;
use crate::tools::artifacts::shell_word;
use crate::tools::registries::type_list;
use crate::tools::search::{Search, SearchInput, SearchOutput, SearchSort};
use crate::tools::{Context, invoke};

/// `aam search`.
#[derive(Debug, clap::Args)]
pub(super) struct SearchArgs {
    /// Words to look for; empty lists everything. `source/name` ranks that artifact first.
    query: Vec<String>,
    /// Only this type (repeatable, or a comma list): skill, agent, prompt, instruction.
    #[arg(long = "type", value_name = "TYPE", value_delimiter = ',')]
    types: Vec<String>,
    /// Only this source (repeatable, or a comma list).
    #[arg(long = "source", value_name = "SOURCE", value_delimiter = ',')]
    sources: Vec<String>,
    /// Only artifacts for this platform (and platform-neutral ones): an agent id `aam agents` lists, such as cursor, claude-code, github-copilot, codex.
    #[arg(long)]
    platform: Option<String>,
    /// Results per page (1 to 1000).
    #[arg(long, default_value_t = 20)]
    limit: u32,
    /// Results to skip.
    #[arg(long, default_value_t = 0)]
    offset: u32,
    /// Order of results.
    #[arg(long, value_enum, default_value_t = SortArg::Relevance)]
    sort: SortArg,
}

/// A `--sort` order.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum SortArg {
    Relevance,
    Name,
    Recent,
}

impl From<SortArg> for SearchSort {
    fn from(sort: SortArg) -> Self {
        match sort {
            SortArg::Relevance => Self::Relevance,
            SortArg::Name => Self::Name,
            SortArg::Recent => Self::Recent,
        }
    }
}

impl From<SearchArgs> for SearchInput {
    fn from(a: SearchArgs) -> Self {
        Self {
            query: a.query.join(" "),
            types: a.types,
            source: a.sources,
            platform: a.platform,
            limit: a.limit,
            offset: a.offset,
            sort: a.sort.into(),
        }
    }
}

impl SearchArgs {
    /// The same search as a command line, without `--offset`.
    fn again_command(&self) -> String {
        let mut again = vec!["aam search".to_string()];
        // An empty query (`aam search ""`) lists everything, as no query does.
        again.extend(self.query.iter().filter(|w| !w.is_empty()).map(|w| shell_word(w)));
        again.extend(flags("--type", &self.types));
        again.extend(flags("--source", &self.sources));
        again.extend(flags("--platform", self.platform.as_slice()));
        if self.limit != 20 {
            again.push(format!("--limit {}", self.limit));
        }
        match self.sort {
            SortArg::Relevance => {}
            SortArg::Name => again.push("--sort name".into()),
            SortArg::Recent => again.push("--sort recent".into()),
        }
        again.join(" ")
    }
}

/// Searches; warnings go to stderr and the footer names the command for the next page.
pub(super) fn run(ctx: &Context, out: &Output, args: SearchArgs) -> Result<i32> {
    let again = args.again_command();
    let offset = args.offset;
    let output = invoke::<Search>(ctx, args.into())?;
    if !out.json {
        for warning in &output.warnings {
            eprintln!("warning: {warning}");
        }
    }
    let next_offset = u64::from(offset) + output.results.len() as u64;
    let next =
        (!output.results.is_empty() && next_offset < output.total).then(|| format!("{again} --offset {next_offset}"));
    out.emit(&output, |o| rendered(o, u64::from(offset), next.as_deref()))
}

/// `aam search`.
fn rendered(o: &SearchOutput, offset: u64, next: Option<&str>) -> String {
    if o.results.is_empty() {
        let mut out = if o.total > 0 {
            format!("No results on this page; {} match in total.\n", o.total)
        } else if o.query.trim().is_empty() {
            "No artifacts indexed yet. Add a source with `aam source add`.\n".to_string()
        } else {
            format!("No artifacts match `{}`.\n", o.query.trim())
        };
        if !o.suggestions.is_empty() {
            out.push_str(&format!("Did you mean: {}?\n", o.suggestions.join(", ")));
        }
        return out;
    }
    let rows: Vec<Vec<String>> = o
        .results
        .iter()
        .map(|r| {
            // A name the source holds twice shows where each lies: `source/path` names it.
            let mut name = match r.qualified_name.strip_prefix(&format!("{}/", r.source)) {
                Some(path) if path != r.name && r.artifact_types.is_empty() => format!("{} ({path})", r.name),
                _ => r.name.clone(),
            };
            if r.installed {
                name.push_str(" (installed)");
            }
            name.push_str(&super::render::audit_badge(r.findings, r.max_severity));
            let kind = if r.artifact_types.is_empty() {
                r.kind.as_str().to_string()
            } else {
                format!("package ({})", type_list(&r.artifact_types))
            };
            vec![
                name,
                kind,
                r.source.clone(),
                cut(r.description.as_deref().unwrap_or(""), DESCRIPTION_WIDTH),
            ]
        })
        .collect();
    let mut out = table(&["NAME", "TYPE", "SOURCE", "DESCRIPTION"], &rows);
    // A later page says which results it holds: `showing 341-342 of 342`.
    let shown = match offset {
        0 => o.results.len().to_string(),
        _ => format!("{}-{}", offset + 1, offset + o.results.len() as u64),
    };
    out.push_str(&match next {
        Some(command) => format!("showing {shown} of {}; next page: {command}\n", o.total),
        None => format!("showing {shown} of {}\n", o.total),
    });
    out
}
