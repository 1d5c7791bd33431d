//! `aam source ...`: the arguments of each source command, the tool input each
//! becomes, and how its output reads for people.
//!
//! Each command's `Args` struct converts into its tool input in one place (`From`,
//! or a small function when the conversion can fail or needs more than the
//! arguments); the match in [`run`] only picks the tool and the renderer.

use super::render::{DESCRIPTION_WIDTH, cut, indented_table, page_footer, plural, table};
use super::{Output, paged_command, parse_kind};
use crate::error::Result;
use crate::sources::short_id;
use crate::tools::artifacts::{CandidatesInput, CandidatesOutput, SourceCandidates};
use crate::tools::sources::{
    ArtifactRef, CountsByType, ScannedArtifact, SourceAdd, SourceAddInput, SourceAddOutput, SourceDiff,
    SourceDiffInput, SourceDiffOutput, SourceEnableDefaults, SourceEnableDefaultsInput, SourceEnableDefaultsOutput,
    SourceList, SourceListInput, SourceListOutput, SourceRemove, SourceRemoveInput, SourceRemoveOutput, SourceScan,
    SourceScanInput, SourceScanOutput, SourceUpdate, SourceUpdateInput, SourceUpdateOutput, UpdateStatus,
};
use crate::tools::{Context, invoke};

/// The `aam source` subcommands.
#[derive(Debug, clap::Subcommand)]
pub(super) enum SourceCommand {
    /// Register a git repository as a source, fetch it and index its artifacts.
    Add(SourceAddArgs),
    /// List registered sources.
    List,
    /// List the artifacts indexed from a source.
    Scan(SourceScanArgs),
    /// Fetch sources and index what changed.
    Update(SourceUpdateArgs),
    /// Show what changed upstream since the indexed commit, without changing anything.
    Diff(SourceDiffArgs),
    /// Remove a source and its catalog records.
    Remove(SourceRemoveArgs),
    /// Register the built-in default sources (without fetching them).
    EnableDefaults(SourceEnableDefaultsArgs),
    /// List artifacts no package holds yet: this project's own, then every source's.
    Candidates(SourceCandidatesArgs),
}

/// Runs one `aam source` command and returns its exit code.
pub(super) fn run(ctx: &Context, out: &Output, command: SourceCommand) -> Result<i32> {
    match command {
        SourceCommand::Add(args) => out.emit(&invoke::<SourceAdd>(ctx, args.into())?, added),
        SourceCommand::List => out.emit(&invoke::<SourceList>(ctx, SourceListInput {})?, listed),
        SourceCommand::Scan(args) => out.emit(&invoke::<SourceScan>(ctx, args.input()?)?, scanned),
        SourceCommand::Update(args) => update(ctx, out, args),
        SourceCommand::Diff(args) => out.emit(&invoke::<SourceDiff>(ctx, args.into())?, diffed),
        SourceCommand::Remove(args) => out.emit(&invoke::<SourceRemove>(ctx, args.into())?, removed),
        SourceCommand::EnableDefaults(args) => {
            out.emit(&invoke::<SourceEnableDefaults>(ctx, args.into())?, defaults_enabled)
        }
        SourceCommand::Candidates(args) => candidates(ctx, out, args),
    }
}

/// `aam source add`.
#[derive(Debug, clap::Args)]
pub(super) struct SourceAddArgs {
    /// `owner/repo[@ref|#sha]`, `https://...`, `git+https://...`, `git@host:owner/repo.git`,
    /// `ssh://...`, `file:///abs/path`, or a local path (`./x`, `../x`, `/abs/x`).
    spec: String,
    /// Branch, tag or commit id (full, or abbreviated when unambiguous) to follow (default: the remote's default branch).
    #[arg(long = "ref", value_name = "REF")]
    git_ref: Option<String>,
    /// Limit the scan to this folder of the repository.
    #[arg(long)]
    path: Option<String>,
    /// Name of the source (default: `owner/repo`, `owner/repo:<folder>` when scoped, or the folder name).
    #[arg(long)]
    name: Option<String>,
    /// Succeed without changes when a source already tracks the same URL, ref and path.
    #[arg(long)]
    if_missing: bool,
}

impl From<SourceAddArgs> for SourceAddInput {
    fn from(a: SourceAddArgs) -> Self {
        Self {
            spec: a.spec,
            git_ref: a.git_ref,
            path: a.path,
            name: a.name,
            if_missing: a.if_missing,
        }
    }
}

/// `aam source scan`.
#[derive(Debug, clap::Args)]
pub(super) struct SourceScanArgs {
    /// Source name.
    name: String,
    /// Only this kind: skill, agent, prompt or instruction.
    #[arg(long = "type", value_name = "TYPE")]
    kind: Option<String>,
}

impl SourceScanArgs {
    /// The tool input; fails on an unknown `--type`.
    fn input(self) -> Result<SourceScanInput> {
        let kind = self.kind.as_deref().map(parse_kind).transpose()?;
        Ok(SourceScanInput { name: self.name, kind })
    }
}

/// `aam source update`.
#[derive(Debug, clap::Args)]
pub(super) struct SourceUpdateArgs {
    /// Source to update (default: all).
    name: Option<String>,
    /// Update every source, going on past failures.
    #[arg(long, conflicts_with = "name")]
    all: bool,
    /// Report what would change without changing the catalog.
    #[arg(long)]
    dry_run: bool,
    /// Track this branch, tag or commit from now on (one named source; its installs stay its own).
    #[arg(long = "ref", value_name = "REF", requires = "name")]
    git_ref: Option<String>,
}

impl From<SourceUpdateArgs> for SourceUpdateInput {
    fn from(a: SourceUpdateArgs) -> Self {
        Self {
            name: a.name,
            all: a.all,
            dry_run: a.dry_run,
            git_ref: a.git_ref,
        }
    }
}

/// Updates and exits 1 when a source failed.
fn update(ctx: &Context, out: &Output, args: SourceUpdateArgs) -> Result<i32> {
    let output = invoke::<SourceUpdate>(ctx, args.into())?;
    let failed = output.sources.iter().any(|s| s.status == UpdateStatus::Failed);
    out.emit(&output, updated)?;
    Ok(if failed { 1 } else { 0 })
}

/// `aam source diff`.
#[derive(Debug, clap::Args)]
pub(super) struct SourceDiffArgs {
    /// Source name.
    name: String,
}

impl From<SourceDiffArgs> for SourceDiffInput {
    fn from(a: SourceDiffArgs) -> Self {
        Self { name: a.name }
    }
}

/// `aam source remove`.
#[derive(Debug, clap::Args)]
pub(super) struct SourceRemoveArgs {
    /// Source name.
    name: String,
    /// Also delete the cached repository when no other source uses it.
    #[arg(long)]
    purge_cache: bool,
}

impl From<SourceRemoveArgs> for SourceRemoveInput {
    fn from(a: SourceRemoveArgs) -> Self {
        Self {
            name: a.name,
            purge_cache: a.purge_cache,
        }
    }
}

/// `aam source enable-defaults`.
#[derive(Debug, clap::Args)]
pub(super) struct SourceEnableDefaultsArgs {
    /// Also re-add defaults you removed earlier.
    #[arg(long)]
    restore: bool,
}

impl From<SourceEnableDefaultsArgs> for SourceEnableDefaultsInput {
    fn from(a: SourceEnableDefaultsArgs) -> Self {
        Self { restore: a.restore }
    }
}

/// `aam source candidates`.
#[derive(Debug, clap::Args)]
pub(super) struct SourceCandidatesArgs {
    /// Only this source (`local` for this project's own artifacts).
    #[arg(long)]
    source: Option<String>,
    /// Only this type: skill, agent, prompt, instruction.
    #[arg(long = "type", value_name = "TYPE")]
    kind: Option<String>,
    /// Candidates per page (1 to 1000).
    #[arg(long, default_value_t = 50)]
    limit: u32,
    /// Continue after this `next_cursor`.
    #[arg(long)]
    cursor: Option<String>,
    /// Index this project folder even when it is a disk root, the home folder
    /// or holds more than a million files and folders.
    #[arg(long)]
    large_project: bool,
}

impl SourceCandidatesArgs {
    /// The command that shows the next page with the same filters.
    fn next_page_command(&self) -> String {
        paged_command(
            "aam source candidates",
            self.source.as_slice(),
            self.kind.as_slice(),
            self.limit,
        )
    }

    /// The tool input; fails on an unknown `--type`.
    fn input(self) -> Result<CandidatesInput> {
        let kind = self.kind.as_deref().map(parse_kind).transpose()?;
        Ok(CandidatesInput {
            source: self.source,
            kind,
            limit: self.limit,
            cursor: self.cursor,
            large_project: self.large_project,
        })
    }
}

/// Lists candidates; the footer names the command for the next page.
fn candidates(ctx: &Context, out: &Output, args: SourceCandidatesArgs) -> Result<i32> {
    let command = args.next_page_command();
    let output = invoke::<SourceCandidates>(ctx, args.input()?)?;
    out.emit(&output, |o| candidates_page(o, &command))
}

/// Artifacts per type: `2 skills, 1 agent, 0 prompts, 0 instructions`.
fn counts(c: &CountsByType) -> String {
    let part = |n: u64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    [
        part(c.skills, "skill", "skills"),
        part(c.agents, "agent", "agents"),
        part(c.prompts, "prompt", "prompts"),
        part(c.instructions, "instruction", "instructions"),
    ]
    .join(", ")
}

/// `aam source add`.
fn added(o: &SourceAddOutput) -> String {
    let scope = if o.path.is_empty() {
        String::new()
    } else {
        format!(", path `{}`", o.path)
    };
    // A ref is quoted as code; "the default branch" is prose.
    let git_ref = o
        .git_ref
        .as_deref()
        .map_or("the default branch".to_string(), |r| format!("`{r}`"));
    if o.already_registered {
        let state = match &o.commit {
            Some(commit) => format!("at {}: {}", short_id(commit), plural(o.artifact_count, "artifact")),
            None => "never fetched; `aam source update` fetches it".to_string(),
        };
        return format!(
            "Source `{}` already tracks {} at {git_ref}{scope} ({state}); nothing changed\n",
            o.name, o.url
        );
    }
    let mut out = format!(
        "Added source `{}` ({} at {git_ref} {}{scope})\nIndexed {}: {}\n",
        o.name,
        o.url,
        o.commit.as_deref().map_or("", short_id),
        plural(o.artifact_count, "artifact"),
        counts(&o.artifacts_by_type)
    );
    if o.artifact_count == 0 {
        out.push_str("No artifacts found: aam looks for `SKILL.md` folders, agent and prompt files and rules (`.mdc`, `*.instructions.md`) where agents keep them (docs/sources.md, detection rules); `--path` points the scan at one folder.\n");
    }
    out
}

/// `aam source list`.
fn listed(o: &SourceListOutput) -> String {
    if o.sources.is_empty() {
        return "No sources yet. Add one with `aam source add <owner/repo | URL | path>`.\n".to_string();
    }
    let rows: Vec<Vec<String>> = o
        .sources
        .iter()
        .map(|s| {
            vec![
                format!("{}{}", s.name, if s.default { " (default)" } else { "" }),
                s.kind.as_str().to_string(),
                s.git_ref.clone().unwrap_or_else(|| "-".into()),
                if s.path.is_empty() { "/".into() } else { s.path.clone() },
                s.artifact_count.to_string(),
                s.last_commit
                    .as_deref()
                    .map_or("never fetched".into(), |c| short_id(c).to_string()),
                s.last_fetched.clone().unwrap_or_else(|| "-".into()),
                s.url.clone(),
            ]
        })
        .collect();
    table(
        &["NAME", "TYPE", "REF", "PATH", "ARTIFACTS", "COMMIT", "FETCHED", "URL"],
        &rows,
    )
}

/// `aam source scan`.
fn scanned(o: &SourceScanOutput) -> String {
    let scope = if o.scan_path.is_empty() {
        String::new()
    } else {
        format!(", path `{}`", o.scan_path)
    };
    let mut out = format!(
        "Source `{}` at {}{scope}: {}\n",
        o.source_name,
        short_id(&o.commit),
        plural(o.total, "artifact")
    );
    let groups: [(&str, &Vec<ScannedArtifact>); 4] = [
        ("Skills", &o.artifacts.skills),
        ("Agents", &o.artifacts.agents),
        ("Prompts", &o.artifacts.prompts),
        ("Instructions", &o.artifacts.instructions),
    ];
    for (title, items) in groups {
        if items.is_empty() {
            continue;
        }
        out.push_str(&format!("\n{title} ({})\n", items.len()));
        let rows: Vec<Vec<String>> = items
            .iter()
            .map(|a| {
                let name = if a.has_vendor_agent {
                    format!("{} [+agent]", a.name)
                } else {
                    a.name.clone()
                };
                vec![
                    name,
                    a.path.clone(),
                    cut(a.description.as_deref().unwrap_or(""), DESCRIPTION_WIDTH),
                ]
            })
            .collect();
        out.push_str(&indented_table(&["NAME", "PATH", "DESCRIPTION"], &rows));
    }
    out
}

/// `aam source update`.
fn updated(o: &SourceUpdateOutput) -> String {
    if o.sources.is_empty() {
        return "No sources to update. Add one with `aam source add`.\n".to_string();
    }
    let mut out = String::new();
    for s in &o.sources {
        let from = s.old_commit.as_deref().map_or("(never fetched)", short_id);
        let to = s.new_commit.as_deref().map_or("?", short_id);
        let delta = format!("+{} ~{} -{}", s.new_count, s.modified_count, s.removed_count);
        let line = match s.status {
            UpdateStatus::Updated => format!("{}: updated {from} -> {to} ({delta})", s.name),
            UpdateStatus::WouldUpdate => format!("{}: would update {from} -> {to} ({delta})", s.name),
            UpdateStatus::UpToDate => format!("{}: up to date at {to}", s.name),
            UpdateStatus::Failed => {
                let why = s.error.as_ref().map_or("unknown error".to_string(), |e| {
                    let hint = e
                        .hint
                        .as_deref()
                        .map_or(String::new(), |hint| format!("\n  hint: {hint}"));
                    format!("[{}] {}{hint}", e.code.as_str(), e.message)
                });
                format!("{}: failed: {why}", s.name)
            }
        };
        out.push_str(&line);
        out.push('\n');
        if s.uncommitted_changes {
            out.push_str(&uncommitted_hint(&s.name));
        }
    }
    if o.sources.len() > 1 {
        out.push_str(&format!(
            "{} new, {} modified, {} removed in total\n",
            o.total_new, o.total_modified, o.total_removed
        ));
    }
    out
}

/// The hint under a local source that nothing moved although its work tree has
/// files no commit holds.
fn uncommitted_hint(name: &str) -> String {
    format!(
        "  hint: `{name}` has uncommitted files; only commits are indexed: commit them, then run `aam source update {name}`\n"
    )
}

/// `aam source diff`.
fn diffed(o: &SourceDiffOutput) -> String {
    let from = o.old_commit.as_deref().map_or("(never fetched)", short_id);
    let mut out = format!("Source `{}`: {from} -> {}\n", o.source_name, short_id(&o.new_commit));
    if !o.has_changes {
        out.push_str(&format!("No artifact changes ({} unchanged)\n", o.unchanged_count));
        if o.uncommitted_changes {
            out.push_str(&uncommitted_hint(&o.source_name));
        }
        return out;
    }
    let section = |out: &mut String, mark: char, list: &[ArtifactRef]| {
        for a in list {
            out.push_str(&format!("{mark} {:<11} {}  ({})\n", a.kind.as_str(), a.name, a.path));
        }
    };
    section(&mut out, '+', &o.new_artifacts);
    section(&mut out, '~', &o.modified_artifacts);
    section(&mut out, '-', &o.removed_artifacts);
    out.push_str(&format!(
        "{} new, {} modified, {} removed, {} unchanged\n",
        o.new_artifacts.len(),
        o.modified_artifacts.len(),
        o.removed_artifacts.len(),
        o.unchanged_count
    ));
    out
}

/// `aam source remove`.
fn removed(o: &SourceRemoveOutput) -> String {
    let mut out = format!("Removed source `{}`", o.removed);
    if o.cache_purged {
        out.push_str(" and its cache");
    }
    out.push('\n');
    if o.was_default {
        out.push_str("It was a default source; `aam source enable-defaults --restore` brings it back.\n");
    }
    if !o.installed_from.is_empty() {
        out.push_str(
            "Installed from it, left as they are (`aam outdated` shows them as unknown until the source is added again; `aam uninstall` removes one):\n",
        );
        for install in &o.installed_from {
            out.push_str(&format!("  {install}\n"));
        }
    }
    out
}

/// `aam source enable-defaults`.
fn defaults_enabled(o: &SourceEnableDefaultsOutput) -> String {
    let mut out = String::new();
    let list = |names: &[String]| names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ");
    if !o.added.is_empty() {
        out.push_str(&format!("Added {}\n", list(&o.added)));
        out.push_str("Fetch and index them with `aam source update --all`.\n");
    }
    if !o.already_present.is_empty() {
        out.push_str(&format!("Already registered: {}\n", list(&o.already_present)));
    }
    if !o.dismissed.is_empty() {
        out.push_str(&format!(
            "Skipped (removed earlier): {}; pass `--restore` to add them again\n",
            list(&o.dismissed)
        ));
    }
    out
}

/// `aam source candidates`.
fn candidates_page(o: &CandidatesOutput, command: &str) -> String {
    if o.candidates.is_empty() {
        return "No candidates: every artifact is already in a package.\n".to_string();
    }
    let rows: Vec<Vec<String>> = o
        .candidates
        .iter()
        .map(|c| {
            vec![
                c.source.clone(),
                c.kind.as_str().to_string(),
                c.name.clone(),
                c.path.clone(),
            ]
        })
        .collect();
    let mut out = table(&["SOURCE", "TYPE", "NAME", "PATH"], &rows);
    out.push_str(&page_footer(
        o.candidates.len(),
        o.total,
        o.next_cursor.as_deref(),
        command,
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ref is quoted as code, "the default branch" (no ref yet) is prose.
    #[test]
    fn an_added_source_names_its_ref_as_code_and_no_ref_as_prose() {
        let mut output = SourceAddOutput {
            name: "team".to_string(),
            url: "https://example.com/team.git".to_string(),
            git_ref: None,
            path: String::new(),
            commit: None,
            already_registered: true,
            artifact_count: 0,
            artifacts_by_type: Default::default(),
        };
        assert!(
            added(&output).contains(" at the default branch ("),
            "{}",
            added(&output)
        );
        output.git_ref = Some("main".to_string());
        assert!(added(&output).contains(" at `main` ("), "{}", added(&output));
    }
}
