//! `aam list`: its arguments, the tool input they become (installed packages, or
//! with `--available` the artifacts sources offer), and how each reads for people.

use super::render::{DESCRIPTION_WIDTH, cut, indented_table, page_footer, platform_list, table};
use super::{Output, paged_command, parse_kind};
use crate::error::Result;
use crate::tools::artifacts::{ListAvailable, ListInput, ListOutput};
use crate::tools::install::{ListInstalled, ListInstalledInput, ListInstalledOutput};
use crate::tools::{Context, invoke};

/// `aam list`.
#[derive(Debug, clap::Args)]
pub(super) struct ListArgs {
    /// List the artifacts available from sources instead, grouped by source.
    #[arg(long)]
    available: bool,
    /// Show installed packages as a dependency tree.
    #[arg(long, conflicts_with = "available")]
    tree: bool,
    /// List the home-folder installs.
    #[arg(short = 'g', long = "global", conflicts_with = "available")]
    global: bool,
    /// Only this source (repeatable, or a comma list).
    #[arg(long = "source", value_name = "SOURCE", value_delimiter = ',')]
    sources: Vec<String>,
    /// Only this type (repeatable, or a comma list).
    #[arg(long = "type", value_name = "TYPE", value_delimiter = ',')]
    types: Vec<String>,
    /// Artifacts per page (1 to 1000).
    #[arg(long, default_value_t = 50)]
    limit: u32,
    /// Continue after this `next_cursor`.
    #[arg(long)]
    cursor: Option<String>,
}

impl From<&ListArgs> for ListInstalledInput {
    fn from(a: &ListArgs) -> Self {
        Self { global: a.global }
    }
}

impl ListArgs {
    /// The `--available` tool input; fails on an unknown `--type`.
    fn available_input(self) -> Result<ListInput> {
        let types = self.types.iter().map(|t| parse_kind(t)).collect::<Result<_>>()?;
        Ok(ListInput {
            source: self.sources,
            types,
            limit: self.limit,
            cursor: self.cursor,
        })
    }
}

/// Lists installed packages (a table or a tree), or the artifacts sources offer.
pub(super) fn run(ctx: &Context, out: &Output, args: ListArgs) -> Result<i32> {
    if args.available {
        let command = paged_command("aam list --available", &args.sources, &args.types, args.limit);
        let output = invoke::<ListAvailable>(ctx, args.available_input()?)?;
        return out.emit(&output, |o| available(o, &command));
    }
    let output = invoke::<ListInstalled>(ctx, (&args).into())?;
    out.emit(&output, if args.tree { tree } else { installed })
}

/// `aam list --available`.
fn available(o: &ListOutput, command: &str) -> String {
    let unfetched = match o.unfetched_sources.as_slice() {
        [] => String::new(),
        names => format!(
            "Not indexed yet: {}. Fetch them with `aam source update --all`.\n",
            names.join(", ")
        ),
    };
    if o.sources.is_empty() {
        return match unfetched.is_empty() {
            true => "No artifacts available. Add a source with `aam source add`.\n".to_string(),
            false => format!("No artifacts available yet. {unfetched}"),
        };
    }
    let mut out = unfetched;
    let mut shown = 0;
    for group in &o.sources {
        out.push_str(&format!("{}\n", group.source));
        let rows: Vec<Vec<String>> = group
            .artifacts
            .iter()
            .map(|a| {
                vec![
                    format!("{}{}", a.name, super::render::audit_badge(a.findings, a.max_severity)),
                    a.kind.as_str().to_string(),
                    cut(a.description.as_deref().unwrap_or(""), DESCRIPTION_WIDTH),
                ]
            })
            .collect();
        shown += rows.len();
        out.push_str(&indented_table(&["NAME", "TYPE", "DESCRIPTION"], &rows));
    }
    out.push_str(&page_footer(shown, o.total, o.next_cursor.as_deref(), command));
    out
}

/// `aam list`.
fn installed(o: &ListInstalledOutput) -> String {
    if o.packages.is_empty() {
        return "Nothing is installed here. Install with `aam install <package>`.\n".to_string();
    }
    let rows: Vec<Vec<String>> = o
        .packages
        .iter()
        .map(|p| {
            vec![
                p.name.clone(),
                p.version.clone(),
                format!("{} {}", p.source.as_str(), p.source_name),
                platform_list(&p.platforms),
            ]
        })
        .collect();
    table(&["NAME", "VERSION", "FROM", "PLATFORMS"], &rows)
}

/// `aam list --tree`.
fn tree(o: &ListInstalledOutput) -> String {
    fn branch(o: &ListInstalledOutput, name: &str, depth: usize, out: &mut String, seen: &mut Vec<String>) {
        let version = o
            .packages
            .iter()
            .find(|p| p.name == name)
            .map_or("(not installed)".to_string(), |p| p.version.clone());
        out.push_str(&format!("{}{name} {version}\n", "  ".repeat(depth)));
        if seen.contains(&name.to_string()) {
            return;
        }
        seen.push(name.to_string());
        if let Some(p) = o.packages.iter().find(|p| p.name == name) {
            for dep in p.dependencies.keys() {
                branch(o, dep, depth + 1, out, seen);
            }
        }
        seen.pop();
    }
    let mut out = String::new();
    for p in o.packages.iter().filter(|p| !p.is_dependency) {
        branch(o, &p.name, 0, &mut out, &mut Vec::new());
    }
    if out.is_empty() { installed(o) } else { out }
}
