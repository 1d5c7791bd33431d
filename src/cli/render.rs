//! Human-readable rendering of tool outputs. Pure functions from output to text.
//!
//! Holds the helpers every renderer shares (tables, plurals, cut descriptions,
//! page footers) and the renderers of commands that still live in `cli/mod.rs`;
//! a command group's own renderers sit in its file (`cli/source.rs`, ...).

use crate::health::{CheckStatus, HealthCheck, HealthReport};
use crate::mcp::clients::ClientConfig;
use crate::sources::short_id;
use crate::tools::install::{
    AdoptOutput, AdoptSkip, DiffAllOutput, DiffOutput, InstallOutput, InventoryOutput, InventoryStatus, MatchKind,
    OutdatedOutput, SkipReason, UninstallOutput, UpgradeOutput, UpgradeStatus, VerifyAllOutput, VerifyOutput,
};

/// Widest a description column gets before it is cut.
pub(super) const DESCRIPTION_WIDTH: usize = 60;

/// `text` safe to show on a terminal: the control characters a file name or a
/// repository's text can carry (an escape sequence that recolours or clears
/// the screen, a carriage return that overwrites a line, a bidirectional
/// override that reorders one, a zero-width or tag character that hides text)
/// are shown escaped (`\u{1b}`), so only aam's own layout and visible text
/// reach the terminal. Line ends and tabs stay when `keep_lines`; a table cell
/// keeps to its line. Joiners stay (emoji and scripts need them), and so do
/// the tag characters of a flag emoji (they follow U+1F3F4).
pub(super) fn terminal_safe(text: &str, keep_lines: bool) -> std::borrow::Cow<'_, str> {
    let hidden = |c: char| {
        (c.is_control() && !(keep_lines && matches!(c, '\n' | '\t')))
            || matches!(c, '\u{200e}' | '\u{200f}' | '\u{061c}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
            || matches!(c, '\u{200b}' | '\u{2060}'..='\u{2064}' | '\u{feff}')
    };
    let tag = |c: char| matches!(c, '\u{e0000}'..='\u{e007f}');
    if !text.chars().any(|c| hidden(c) || tag(c)) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len() + 8);
    let mut in_flag = false;
    for c in text.chars() {
        in_flag = c == '\u{1f3f4}' || (in_flag && tag(c));
        if hidden(c) || (tag(c) && !in_flag) {
            shown.extend(c.escape_default());
        } else {
            shown.push(c);
        }
    }
    std::borrow::Cow::Owned(shown)
}

/// Findings worth a look before installing, as a badge after a name
/// (` [audit: high, 2 findings]`); empty below `warn`.
pub(super) fn audit_badge(findings: u64, max_severity: Option<crate::audit::Severity>) -> String {
    match max_severity.filter(|s| *s >= crate::audit::Severity::Warn) {
        Some(severity) => {
            let plural = if findings == 1 { "" } else { "s" };
            format!(" [audit: {severity}, {findings} finding{plural}]")
        }
        None => String::new(),
    }
}

/// How wide the lines of tables may be: `COLUMNS` when set, else the width of
/// the terminal standard output is, else unbounded (output piped to a file or
/// to `grep` keeps whole lines).
static LINE_WIDTH: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();

/// Reads [`LINE_WIDTH`] once, at the start of a command.
pub(super) fn measure_line_width() {
    LINE_WIDTH.get_or_init(|| {
        let columns = std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.trim().parse::<usize>().ok());
        columns
            .filter(|&c| c > 0)
            .or_else(|| terminal_size::terminal_size_of(std::io::stdout()).map(|(w, _)| usize::from(w.0)))
    });
}

/// The narrowest a table's last column (a description, most often) is cut
/// to so its lines fit the terminal: below it, lines wrap instead.
const NARROWEST_LAST_COLUMN: usize = 20;

/// Left-aligned columns separated by two spaces, trailing spaces trimmed; the
/// last column is cut to fit the terminal's width (see [`LINE_WIDTH`]).
/// A cell never breaks its line (see [`terminal_safe`]).
pub(super) fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    table_within(headers, rows, LINE_WIDTH.get().copied().flatten())
}

/// [`table`] with every line after two spaces (a table under a heading).
pub(super) fn indented_table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let line_width = LINE_WIDTH.get().copied().flatten().map(|w| w.saturating_sub(2));
    table_within(headers, rows, line_width)
        .lines()
        .map(|line| format!("  {line}\n"))
        .collect()
}

fn table_within(headers: &[&str], rows: &[Vec<String>], line_width: Option<usize>) -> String {
    let mut rows: Vec<Vec<String>> = rows
        .iter()
        .map(|row| row.iter().map(|cell| terminal_safe(cell, false).into_owned()).collect())
        .collect();
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    if let (Some(line_width), Some((last, before))) = (line_width, widths.split_last_mut()) {
        let room = line_width.saturating_sub(before.iter().map(|w| w + 2).sum::<usize>());
        if *last > room {
            *last = room
                .max(NARROWEST_LAST_COLUMN)
                .max(headers.last().map_or(0, |h| h.chars().count()));
            let at = before.len();
            for cell in rows.iter_mut().filter_map(|row| row.get_mut(at)) {
                *cell = cut(cell, *last);
            }
        }
    }
    let line = |cells: Vec<&str>| {
        let mut text = String::new();
        for (cell, width) in cells.iter().zip(&widths) {
            text.push_str(cell);
            text.push_str(&" ".repeat(width - cell.chars().count() + 2));
        }
        text.trim_end().to_string() + "\n"
    };
    let mut out = line(headers.to_vec());
    for row in &rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}

/// `1 artifact`, `2 artifacts`: a count with its noun, plural when not one.
pub(super) fn plural(n: impl TryInto<u64>, noun: &str) -> String {
    let n = n.try_into().unwrap_or(u64::MAX);
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

pub(super) fn cut(text: &str, width: usize) -> String {
    match text.char_indices().nth(width.saturating_sub(1)) {
        Some((i, _)) if text.chars().count() > width => format!("{}…", &text[..i]),
        _ => text.to_string(),
    }
}

pub(super) fn page_footer(shown: usize, total: u64, next: Option<&str>, command: &str) -> String {
    match next {
        Some(cursor) => format!("showing {shown} of {total}; next page: {command} --cursor {cursor}\n"),
        None => format!("showing {shown} of {total}\n"),
    }
}

/// `aam install`.
pub fn installed_packages(o: &InstallOutput, global: bool) -> String {
    let mut out = String::new();
    let verb = if o.dry_run { "Would install" } else { "Installed" };
    for p in &o.installed {
        let to = if p.platforms.is_empty() {
            "no platform".to_string()
        } else {
            platform_list(&p.platforms)
        };
        let replacing = match &p.replaced_version {
            Some(v) => format!(", replacing {v}"),
            None => String::new(),
        };
        out.push_str(&format!(
            "{verb} `{}` {} from {} `{}` ({to}; {}{replacing})\n",
            p.name,
            p.version,
            p.source.as_str(),
            p.source_name,
            plural(p.files_written, "file")
        ));
        for target in &p.deployed_to {
            out.push_str(&format!("  -> {target}\n"));
        }
        for target in &p.undeployed {
            out.push_str(&format!("  undeployed: {target}\n"));
        }
        for key in &p.kept_untracked {
            out.push_str(&format!("  kept, with its folder (it did not install it): {key}\n"));
        }
        if !p.nothing_for.is_empty() {
            out.push_str(&format!(
                "  nothing deployed for {}: they take none of its artifact types (`aam agents` shows what each takes)\n",
                platform_list(&p.nothing_for)
            ));
        }
        for key in &p.replaced_edits {
            // A target the install no longer deploys is removed, not replaced.
            let undeployed = p
                .undeployed
                .iter()
                .any(|target| key == target || key.starts_with(&format!("{target}/")));
            let verb = if undeployed { "removed" } else { "replaced" };
            out.push_str(&format!("  edited file {verb}: {key}\n"));
        }
        for key in &p.replaced_untracked {
            out.push_str(&format!("  file no package recorded replaced: {key}\n"));
        }
        for key in &p.kept_edits {
            out.push_str(&format!("  your edit kept: {key}\n"));
        }
        if let Some(dir) = &p.backup_dir {
            out.push_str(&format!("  replaced files backed up to {dir}\n"));
        }
        merge_lines(&mut out, &p.merged_edits, &p.conflict_markers);
    }
    for s in &o.skipped {
        // The version asked for, when it is another one.
        let wanted = match s.wanted_version == s.version {
            true => String::new(),
            false => format!(" ({} wanted)", s.wanted_version),
        };
        match s.reason {
            SkipReason::AlreadyInstalled => out.push_str(&format!(
                "`{}` {} is already installed, every file as installed\n",
                s.name, s.version
            )),
            SkipReason::EditedFiles | SkipReason::EditsKept | SkipReason::EditsOnAnotherVersion => {
                let what = match s.reason {
                    SkipReason::EditsKept => "is installed, your edits kept as they are".to_string(),
                    SkipReason::EditsOnAnotherVersion => "is not installed as the lock file records it: these files were edited after another version was installed here, and are kept as they are, without this version's changes".to_string(),
                    _ => format!("was left as it is{wanted}: files were edited since install"),
                };
                out.push_str(&format!("`{}` {} {what}\n", s.name, s.version));
                for key in &s.modified_files {
                    out.push_str(&format!("  edited: {key}\n"));
                }
            }
            SkipReason::MergeConflicts => {
                out.push_str(&format!(
                    "`{}` {} was left as it is{wanted}: edits do not merge with the new version\n",
                    s.name, s.version
                ));
                conflict_lines(&mut out, &s.conflicts);
            }
        }
    }
    if !o.lock_changes.is_empty() {
        out.push_str("The lock file was updated:\n");
        for change in &o.lock_changes {
            out.push_str(&format!("  {change}\n"));
        }
    }
    if o.kept_edits() {
        out.push_str(&format!(
            "`aam diff{} <package>` shows the edits; install with `--backup` to keep a copy of them, or `--force` to replace them.\n",
            global_flag(global)
        ));
    }
    out
}

/// ` -g` in a command to paste, for an install into the home folder.
fn global_flag(global: bool) -> &'static str {
    match global {
        true => " -g",
        false => "",
    }
}

/// `aam uninstall`.
pub fn uninstalled(o: &UninstallOutput) -> String {
    let sections = o.removed_files.iter().filter(|key| key.contains('#')).count();
    let removed = match sections {
        0 => plural(o.removed_files.len(), "file"),
        n => format!(
            "{} and {}",
            plural(o.removed_files.len() - n, "file"),
            plural(n, "section")
        ),
    };
    let mut out = match o.dry_run {
        true => format!(
            "Would uninstall `{}` {} ({removed} to remove; nothing changed)\n",
            o.removed, o.version
        ),
        false => format!("Uninstalled `{}` {} ({removed} removed)\n", o.removed, o.version),
    };
    if o.dry_run {
        for f in &o.removed_files {
            out.push_str(&format!("  remove {f}\n"));
        }
    }
    if let Some(dir) = &o.backup_dir {
        out.push_str(&format!(
            "Saved what you edited, or aam never wrote, before removing it: {dir}\n"
        ));
    }
    if !o.kept_modified.is_empty() {
        out.push_str("Kept because you edited them (`--force` removes them, after saving a copy):\n");
        for f in &o.kept_modified {
            out.push_str(&format!("  {f}\n"));
        }
    }
    if !o.kept_beyond_links.is_empty() {
        out.push_str("Kept because a link on the way leads out of the project or away from the agent folders (aam never reads or removes there):\n");
        for f in &o.kept_beyond_links {
            out.push_str(&format!("  {f}\n"));
        }
    }
    if !o.kept_untracked.is_empty() {
        out.push_str("Kept, with their folders, because the package did not install them:\n");
        for f in &o.kept_untracked {
            out.push_str(&format!("  {f}\n"));
        }
    }
    if !o.kept_shared.is_empty() {
        out.push_str("Kept because other installs on this machine use them too:\n");
        for f in &o.kept_shared {
            out.push_str(&format!("  {f}\n"));
        }
    }
    if !o.kept_unrecorded.is_empty() {
        out.push_str(
            "Kept because they hold what no install on this machine wrote there (the lock file names them):\n",
        );
        for f in &o.kept_unrecorded {
            out.push_str(&format!("  {f}\n"));
        }
    }
    if !o.kept_for_other_packages.is_empty() {
        out.push_str("Kept because another installed package has them under another name (a linked agent folder):\n");
        for f in &o.kept_for_other_packages {
            out.push_str(&format!("  {f}\n"));
        }
    }
    out
}

/// `aam verify PKG`.
pub fn verified(o: &VerifyOutput) -> String {
    let mut out = if !o.has_checksums {
        format!(
            "`{0}` {1}: the lock file records no checksums to verify its files by; `aam install` makes it again and records them\n",
            o.package_name, o.version
        )
    } else if o.is_clean {
        format!(
            "`{}` {}: {} as installed\n",
            o.package_name,
            o.version,
            plural(o.ok_files.len(), "file")
        )
    } else {
        format!("`{}` {}: changed since install\n", o.package_name, o.version)
    };
    for (label, files) in [
        ("modified", &o.modified_files),
        ("missing", &o.missing_files),
        ("untracked", &o.untracked_files),
    ] {
        for f in files.iter() {
            let label = match o.conflicted_files.contains(f) {
                true => "conflict",
                false => label,
            };
            out.push_str(&format!("  {label:<9} {f}\n"));
        }
    }
    if !o.conflicted_files.is_empty() {
        out.push_str(
            "  (conflict: an upgrade's merge left `<<<<<<< yours` … `>>>>>>> upstream` markers to resolve by hand)\n",
        );
    }
    out
}

/// `aam verify --all`.
pub fn verified_all(o: &VerifyAllOutput) -> String {
    if o.packages.is_empty() {
        return "Nothing is installed here.\n".to_string();
    }
    o.packages.iter().map(verified).collect()
}

/// `aam diff`.
pub fn diffed(o: &DiffOutput) -> String {
    let mut out = String::new();
    for f in &o.modified_files {
        out.push_str(&f.diff);
    }
    for f in &o.missing_files {
        out.push_str(&format!("missing: {f}\n"));
    }
    for f in &o.untracked_files {
        out.push_str(&format!("untracked: {f}\n"));
    }
    if out.is_empty() {
        out = format!("`{}` {} has no changes since install\n", o.package_name, o.version);
    }
    out
}

/// `aam diff --all`: each changed package's diff under its name.
pub fn diffed_all(o: &DiffAllOutput) -> String {
    let mut out = String::new();
    for package in &o.packages {
        out.push_str(&format!("== {} {}\n", package.package_name, package.version));
        out.push_str(&diffed(package));
    }
    let packages = |n: u64| {
        if n == 1 {
            "1 package".to_string()
        } else {
            format!("{n} packages")
        }
    };
    match (o.packages.is_empty(), o.unchanged_count) {
        (true, 0) => out.push_str("No package is installed here\n"),
        (true, n) => out.push_str(&format!("No changes since install ({})\n", packages(n))),
        (false, 0) => {}
        (false, n) => out.push_str(&format!("{} without changes\n", packages(n))),
    }
    out
}

/// `aam inventory`.
pub fn inventory(o: &InventoryOutput) -> String {
    let skipped: String = o
        .skipped_folders
        .iter()
        .map(|s| format!("skipped: {}\n", terminal_safe(s, false)))
        .collect();
    if o.artifacts.is_empty() {
        return format!("No artifacts in the agents' folders here.\n{skipped}");
    }
    let rows: Vec<Vec<String>> = o
        .artifacts
        .iter()
        .map(|a| {
            let status = match (a.status, &a.package) {
                (InventoryStatus::Installed, Some(p)) => format!("installed ({p})"),
                (InventoryStatus::Edited, Some(p)) => format!("edited ({p})"),
                (InventoryStatus::Elsewhere, _) => format!("installed by {}", a.installed_elsewhere.join(", ")),
                _ if a.link => "link".to_string(),
                _ => "untracked".to_string(),
            };
            let origin = match &a.origin {
                None if a.status == InventoryStatus::Untracked && !a.link => "unknown".to_string(),
                None => String::new(),
                Some(origin) => {
                    let at = short_id(&origin.commit);
                    let age = if origin.current {
                        "current".to_string()
                    } else if origin.removed {
                        "removed since".to_string()
                    } else {
                        format!("{} behind", plural(origin.behind_commits, "commit"))
                    };
                    match origin.r#match {
                        MatchKind::Exact => format!("{} @ {at} ({age})", origin.artifact),
                        MatchKind::Modified => format!("modified from {} @ {at} ({age})", origin.artifact),
                    }
                }
            };
            vec![
                a.location.clone(),
                a.kind.as_str().to_string(),
                status,
                origin,
                platform_list(&a.platforms),
            ]
        })
        .collect();
    let mut out = table(&["LOCATION", "TYPE", "STATUS", "ORIGIN", "PLATFORMS"], &rows);
    if o.truncated {
        out.push_str("warning: a walk limit was reached; the list is incomplete\n");
    }
    out.push_str(&skipped);
    out
}

/// `aam adopt`.
pub fn adopted(o: &AdoptOutput) -> String {
    let verb = if o.dry_run { "would adopt" } else { "adopted" };
    let mut out = String::new();
    for a in &o.adopted {
        let how = match a.r#match {
            MatchKind::Exact => "",
            MatchKind::Modified => " (modified: `aam verify` shows the edits)",
        };
        out.push_str(&format!(
            "{verb} `{}` as `{}` @ {}{how}: {}\n",
            terminal_safe(&a.locations.join("`, `"), false),
            a.package,
            short_id(&a.commit),
            a.artifact
        ));
    }
    for s in &o.skipped {
        let why = match s.reason {
            AdoptSkip::NoOrigin => "nothing in the catalog shares its files",
            AdoptSkip::Link => "it is a link",
            AdoptSkip::NameDiffers => "its name is not the artifact's",
            AdoptSkip::PackageExists => "a package of that name is installed",
            AdoptSkip::InstalledElsewhere => "another install on this machine wrote it",
        };
        out.push_str(&format!("skipped `{}`: {why}\n", terminal_safe(&s.location, false)));
    }
    if out.is_empty() {
        out = "Nothing to adopt.\n".to_string();
    }
    out
}

/// `aam outdated`.
pub fn outdated(o: &OutdatedOutput) -> String {
    if o.packages.is_empty() {
        return "Nothing is installed here.\n".to_string();
    }
    let rows: Vec<Vec<String>> = o
        .packages
        .iter()
        .map(|p| {
            vec![
                p.name.clone(),
                p.current.clone(),
                p.wanted.clone().unwrap_or_else(|| "-".into()),
                p.latest.clone().unwrap_or_else(|| "-".into()),
                if p.outdated {
                    "outdated".into()
                } else if p.gone {
                    "gone".into()
                } else if p.unknown {
                    "unknown".into()
                } else if p.pinned {
                    "pinned".into()
                } else {
                    "ok".into()
                },
                p.reason.clone(),
            ]
        })
        .collect();
    let mut out = table(&["NAME", "CURRENT", "WANTED", "LATEST", "STATUS", "WHY"], &rows);
    if !o.sources.is_empty() {
        // Answered from the catalog: say as of when, and how to look again.
        let fetched: Vec<String> = o
            .sources
            .iter()
            .map(|s| match &s.fetched_at {
                Some(at) => format!("{} at {at}", s.name),
                None => format!("{} never", s.name),
            })
            .collect();
        out.push_str(&format!(
            "Sources as last fetched: {}. `aam source update` fetches newer commits.\n",
            fetched.join(", ")
        ));
    }
    out
}

/// `aam upgrade`.
pub fn upgraded(o: &UpgradeOutput, global: bool) -> String {
    if o.packages.is_empty() {
        return "Nothing is installed here.\n".to_string();
    }
    let mut out = String::new();
    for p in &o.packages {
        let message = p.message.clone().unwrap_or_default();
        let line = match p.status {
            UpgradeStatus::Upgraded => format!("`{}`: upgraded {} -> {}", p.name, p.from, p.to),
            UpgradeStatus::WouldUpgrade => format!("`{}`: would upgrade {} -> {}", p.name, p.from, p.to),
            UpgradeStatus::UpToDate if p.message.is_some() => format!("`{}`: left at {}: {message}", p.name, p.from),
            UpgradeStatus::UpToDate => format!("`{}`: up to date at {}", p.name, p.from),
            UpgradeStatus::Skipped if p.conflicts.is_empty() => {
                format!("`{}`: skipped: files were edited since install", p.name)
            }
            UpgradeStatus::Skipped => format!(
                "`{}`: skipped: edits in {} file(s) do not merge with the new version",
                p.name,
                p.conflicts.len()
            ),
            UpgradeStatus::Failed => match (&p.code, &p.hint) {
                (Some(code), Some(hint)) => format!("`{}`: failed: [{code}] {message}\n  hint: {hint}", p.name),
                (Some(code), None) => format!("`{}`: failed: [{code}] {message}", p.name),
                _ => format!("`{}`: failed: {message}", p.name),
            },
        };
        out.push_str(&line);
        out.push('\n');
        if let Some(dir) = &p.backup_dir {
            out.push_str(&format!("  replaced files backed up to {dir}\n"));
        }
        // An upgrade writes over an edit it neither merged nor marked (`--force`
        // or `--backup`): say so, not only that the file was edited.
        let merged = |f: &String| p.merged_files.contains(f) || p.conflict_markers.contains(f);
        for f in &p.modified_files {
            let what = match p.status {
                UpgradeStatus::Upgraded if !merged(f) => "edited file replaced",
                UpgradeStatus::WouldUpgrade if !merged(f) => "edited file it would replace",
                _ => "edited",
            };
            out.push_str(&format!("  {what}: {f}\n"));
        }
        for f in &p.replaced_untracked {
            out.push_str(&format!("  file no package recorded replaced: {f}\n"));
        }
        merge_lines(&mut out, &p.merged_files, &p.conflict_markers);
        conflict_lines(&mut out, &p.conflicts);
    }
    let skipped = |conflicted: bool| {
        o.packages
            .iter()
            .any(|p| p.status == UpgradeStatus::Skipped && p.conflicts.is_empty() != conflicted)
    };
    if skipped(false) {
        out.push_str(&format!(
            "Edited files were left alone: `aam diff{} <package>` shows the edits; upgrade with `--merge` to merge them with the new version (`--merge=markers` writes conflict markers), `--backup` to keep a copy of them, or `--force` to overwrite them.\n",
            global_flag(global)
        ));
    }
    if skipped(true) {
        // `--merge` was just tried: the way on is the markers where lines overlap
        // (they write nothing for the other kinds), or a choice.
        let overlapping = o
            .packages
            .iter()
            .filter(|p| p.status == UpgradeStatus::Skipped && !p.conflicts.is_empty())
            .all(|p| {
                p.conflicts
                    .iter()
                    .all(|c| c.kind == crate::install::merge::ConflictKind::Overlapping)
            });
        out.push_str(match overlapping {
            true => "Edits that do not merge were left alone: upgrade with `--merge=markers` to write both sides with conflict markers and resolve them by hand, `--backup` to keep a copy and take the new version, or `--force` to overwrite them.\n",
            false => "Edits that do not merge were left alone: upgrade with `--backup` to keep a copy of them and take the new version, or `--force` to overwrite them (`--merge=markers` cannot write markers for these).\n",
        });
    }
    let marked = |status: UpgradeStatus| {
        o.packages
            .iter()
            .any(|p| p.status == status && !p.conflict_markers.is_empty())
    };
    if marked(UpgradeStatus::Upgraded) {
        out.push_str("Conflict markers were written: resolve them by hand (`aam verify --all` lists those files as conflicts until then, and `aam install --frozen` fails); once resolved they are your edits.\n");
    }
    if marked(UpgradeStatus::WouldUpgrade) {
        out.push_str("Conflict markers would be written (dry run, nothing changed): the upgrade would leave them to resolve by hand.\n");
    }
    out
}

/// The edits an install or upgrade merged, and those it wrote with markers.
fn merge_lines(out: &mut String, merged: &[String], marked: &[String]) {
    for key in merged {
        out.push_str(&format!("  edit merged: {key}\n"));
    }
    for key in marked {
        out.push_str(&format!("  conflict markers written: {key} (resolve them by hand)\n"));
    }
}

/// Edits that did not merge, each overlapping change with both sides.
fn conflict_lines(out: &mut String, conflicts: &[crate::install::merge::FileConflict]) {
    use crate::install::merge::ConflictKind;
    for conflict in conflicts {
        let why = match conflict.kind {
            ConflictKind::Overlapping => "your edit and the new version change the same lines",
            ConflictKind::DeletedUpstream => "you edited it; the new version deletes it",
            ConflictKind::NotText => "binary or not UTF-8; never merged",
            ConflictKind::NoBase => "the installed original is neither kept on this machine nor in the package's copy",
        };
        out.push_str(&format!("  conflict: {} ({why})\n", conflict.key));
        for hunk in &conflict.hunks {
            out.push_str(&format!("    at line {}, yours:\n", hunk.line));
            hunk.yours.lines().for_each(|l| out.push_str(&format!("      {l}\n")));
            if hunk.upstream.is_empty() {
                out.push_str("    upstream: deletes these lines\n");
            } else {
                out.push_str("    upstream:\n");
            }
            hunk.upstream
                .lines()
                .for_each(|l| out.push_str(&format!("      {l}\n")));
        }
    }
}

/// Platforms as a comma-separated list of their ids.
pub(super) fn platform_list(platforms: &[crate::scan::Platform]) -> String {
    platforms.iter().map(|p| p.as_str()).collect::<Vec<_>>().join(", ")
}

pub(super) fn health(checks: &[HealthCheck], summary: &str) -> String {
    let mut out = String::new();
    for check in checks {
        let mark = match check.status {
            CheckStatus::Pass => "ok  ",
            CheckStatus::Warn => "warn",
            CheckStatus::Fail => "FAIL",
        };
        out.push_str(&format!("{mark}  {:<13} {}\n", check.name, check.message));
        if let Some(suggestion) = &check.suggestion {
            out.push_str(&format!("      {:<13} -> {suggestion}\n", ""));
        }
    }
    out.push_str(&format!("\n{summary}\n"));
    out
}

/// `aam catalog check` and `aam doctor`.
pub fn health_report(o: &HealthReport) -> String {
    health(&o.checks, &o.summary)
}

/// `aam mcp config`: the snippet alone, so it can be redirected into the file.
pub fn client_config(o: &ClientConfig) -> String {
    o.snippet.clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_aligns_and_trims() {
        let text = table(
            &["A", "LONGER"],
            &[vec!["wide cell".into(), "x".into()], vec!["b".into(), "".into()]],
        );
        assert_eq!(text, "A          LONGER\nwide cell  x\nb\n");
    }

    /// A name a repository chose cannot recolour or clear the terminal, nor
    /// forge a line of a table.
    #[test]
    fn control_characters_are_shown_escaped() {
        let name = "lint\nFAKE  skill  installed\u{1b}[2J\r\u{202e}txt";
        let text = table(&["NAME", "STATUS"], &[vec![name.into(), "untracked".into()]]);
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(!text.contains(['\u{1b}', '\r', '\u{202e}']), "{text}");
        // Zero-width and tag characters hide text: escaped, but a flag's tags stay.
        let hiding = terminal_safe(
            "co\u{200b}de \u{e0072}\u{e006d} \u{1f3f4}\u{e0067}\u{e0062}\u{e007f}",
            false,
        );
        assert_eq!(
            hiding,
            "co\\u{200b}de \\u{e0072}\\u{e006d} \u{1f3f4}\u{e0067}\u{e0062}\u{e007f}"
        );
        assert!(
            text.contains("lint\\nFAKE  skill  installed\\u{1b}[2J\\r\\u{202e}txt"),
            "{text}"
        );
        assert_eq!(terminal_safe("two\nlines\tkept", true), "two\nlines\tkept");
        assert_eq!(terminal_safe("a\u{7}b", true), "a\\u{7}b");
    }

    #[test]
    fn the_last_column_is_cut_to_the_line_width() {
        let rows = [
            vec!["short".into(), "a description far too long for the line".into()],
            vec!["a-longer-name".into(), "fits".into()],
        ];
        let fitted = table_within(&["NAME", "DESCRIPTION"], &rows, Some(40));
        assert!(fitted.lines().all(|l| l.chars().count() <= 40), "{fitted}");
        assert!(
            fitted.contains("short          a description far too lo…\n"),
            "{fitted}"
        );
        assert_eq!(
            table_within(&["NAME", "DESCRIPTION"], &rows, None),
            table_within(&["NAME", "DESCRIPTION"], &rows, Some(200))
        );
        // Too narrow for the other columns: the last keeps a readable width and the line wraps.
        let narrow = table_within(&["NAME", "DESCRIPTION"], &rows, Some(10));
        assert!(
            narrow.contains(&format!(
                "short          {}\n",
                cut("a description far too long for the line", 20)
            )),
            "{narrow}"
        );
    }

    #[test]
    fn cut_marks_truncation() {
        assert_eq!(cut("abcdef", 4), "abc…");
        assert_eq!(cut("abc", 4), "abc");
        assert_eq!(cut("ééééé", 3), "éé…");
    }
}
