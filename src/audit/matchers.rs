//! The matchers behind [`super::RULES`]: one pass per line, byte triggers first.

use std::sync::{LazyLock, OnceLock};

use aho_corasick::{AhoCorasick, MatchKind};

use super::{FileInfo, Finding, MAX_FINDINGS_PER_FILE, SCAN_CAP, Severity, find_rule, rule};

/// Words without which a line cannot match a rule of each group: one
/// case-insensitive pass per line decides which groups run at all.
const INSTRUCTION_TRIGGERS: &[&str] = &[
    "ignore",
    "disregard",
    "forget",
    "user",
    "silently",
    "send",
    "upload",
    "post",
    "exfiltrat",
    "transmit",
    "forward",
    "leak",
    "email",
    "curl",
    "wget",
    ".ssh",
    "id_rsa",
    "id_ed25519",
    ".aws",
    ".netrc",
    "credentials",
    ".docker",
    ".kube",
    "danger",
    "bypass",
    "approve",
    "yolo",
    "disable",
    "turn off",
    "skip",
    "without asking",
];
const COMMAND_TRIGGERS: &[&str] = &[
    "curl",
    "wget",
    "invoke-webrequest",
    "iwr",
    "irm",
    "rm",
    "chmod",
    "sudo",
    "base64",
    "b64decode",
    "atob(",
    "rc",
    "profile",
    "zshenv",
    "bash_login",
    "config.fish",
    "://",
];
const SECRET_TRIGGERS: &[&str] = &[
    "akia",
    "asia",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "sk-",
    "xox",
    "-----begin",
];

/// The trigger automaton; pattern ids are grouped in the order above.
static TRIGGERS: LazyLock<Option<AhoCorasick>> = LazyLock::new(|| {
    let all = INSTRUCTION_TRIGGERS
        .iter()
        .chain(COMMAND_TRIGGERS)
        .chain(SECRET_TRIGGERS);
    AhoCorasick::builder().ascii_case_insensitive(true).build(all).ok()
});

/// Which rule groups a line can match.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Groups {
    instructions: bool,
    commands: bool,
    secrets: bool,
}

/// The rule groups each of `lines` (slices of `text`, in order) can match, from
/// one pass of the trigger automaton over `text`: no trigger holds a line break,
/// so each match lies inside one line. Searching line by line started the
/// automaton afresh on every line (a third of scanning a file).
fn groups_by_line(text: &str, lines: &[&str]) -> Vec<Groups> {
    let Some(triggers) = TRIGGERS.as_ref() else {
        let all = Groups {
            instructions: true,
            commands: true,
            secrets: true,
        };
        return vec![all; lines.len()];
    };
    let mut groups = vec![Groups::default(); lines.len()];
    let starts: Vec<usize> = lines
        .iter()
        .map(|line| line.as_ptr() as usize - text.as_ptr() as usize)
        .collect();
    let commands_from = INSTRUCTION_TRIGGERS.len();
    let secrets_from = commands_from + COMMAND_TRIGGERS.len();
    for found in triggers.find_overlapping_iter(text) {
        // The line the match starts in: the last one starting at or before it.
        let Some(index) = starts.partition_point(|&start| start <= found.start()).checked_sub(1) else {
            continue;
        };
        let line = &mut groups[index];
        let id = found.pattern().as_usize();
        if id < commands_from {
            line.instructions = true;
            // "curl" and "wget" open both groups.
            if matches!(INSTRUCTION_TRIGGERS[id], "curl" | "wget") {
                line.commands = true;
            }
        } else if id < secrets_from {
            line.commands = true;
        } else {
            line.secrets = true;
        }
    }
    groups
}

/// The lines of `text` as [`str::lines`] splits them (at `\n`, a `\r` before
/// it dropped, nothing after a final `\n`), found with one `memchr` pass instead
/// of a search started at every line.
fn lines_of(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut start = 0;
    for end in memchr::memchr_iter(b'\n', text.as_bytes()) {
        let line = &text[start..end];
        lines.push(line.strip_suffix('\r').unwrap_or(line));
        start = end + 1;
    }
    if start < text.len() {
        lines.push(&text[start..]);
    }
    lines
}

/// Findings kept per rule and file.
const MAX_PER_RULE: usize = 10;
/// Characters of a line kept on each side of a match in an excerpt.
const EXCERPT_SIDE: usize = 40;

/// How a file's lines are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FileKind {
    /// Markdown: prose, code fences, frontmatter, HTML comments.
    Markdown,
    /// A script or source file: every line is code.
    Script,
    /// Other text (YAML, JSON, plain text): no command rules.
    Other,
}

/// Where a line sits in its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    Prose,
    Frontmatter,
    Comment,
    Code,
}

/// Hidden characters in one name of an artifact that is no file's own (a
/// folder inside it, a link): whole-file findings.
pub fn scan_name(name: &str) -> Vec<Finding> {
    let mut out = Out::default();
    if !name.is_ascii() {
        hidden(name, None, &mut out);
    }
    out.findings
}

/// Scans one file of an artifact. Never fails: unreadable text is read lossily.
pub fn scan_file(info: FileInfo<'_>, bytes: &[u8]) -> Vec<Finding> {
    let mut out = Out::default();
    let name = info.path.rsplit('/').next().unwrap_or(info.path);
    let ext = name
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    if info.executable {
        out.push(rule::FILE_EXECUTABLE, None, None, visible(name, 0, name.len()));
    }
    // Names hide things too (`\u{202E}txt.exe` shows as `exe.txt`): each
    // file's own name, and the main file's whole path, which holds the
    // artifact's folder (checked once, not with every file).
    let shown_path = match info.main {
        true => info.path,
        false => name,
    };
    if !shown_path.is_ascii() {
        hidden(shown_path, None, &mut out);
    }
    let head = &bytes[..bytes.len().min(8192)];
    if head.contains(&0) {
        if !is_media(&ext) {
            out.push(rule::FILE_BINARY, None, None, visible(name, 0, name.len()));
        }
        return out.findings;
    }
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(SCAN_CAP)]);
    let kind = if matches!(ext.as_str(), "md" | "mdc" | "markdown" | "mdx") {
        FileKind::Markdown
    } else if info.executable || text.starts_with("#!") || is_script(&ext) {
        FileKind::Script
    } else {
        FileKind::Other
    };
    // The open code fence: its character and length (CommonMark closing rules).
    let mut fence: Option<(char, usize)> = None;
    let mut in_frontmatter = false;
    let mut in_comment = false;
    let mut in_allowed_tools = false;
    // Whether a frontmatter line holds an escape or continues a value, so the
    // parsed values may differ from the lines they were written on.
    let mut frontmatter_reshaped = false;
    let lines = lines_of(&text);
    let groups = groups_by_line(&text, &lines);
    for (index, &line) in lines.iter().enumerate() {
        if out.findings.len() >= MAX_FINDINGS_PER_FILE {
            break;
        }
        let number = Some(index as u32 + 1);
        let line = if index == 0 {
            line.trim_start_matches('\u{FEFF}')
        } else {
            line
        };
        // Every excerpt quotes the line with its secrets cut, whatever rule it is for.
        let original = line;
        let tokens = match groups[index].secrets {
            true => secret_tokens(line),
            false => Vec::new(),
        };
        let masked = secrets_masked(line, &tokens);
        let line: &str = &masked;
        if !line.is_ascii() {
            hidden(line, number, &mut out);
        }
        let place = match kind {
            FileKind::Markdown => {
                let trimmed = line.trim();
                if index == 0 && trimmed == "---" {
                    in_frontmatter = true;
                    continue;
                }
                if in_frontmatter {
                    if trimmed == "---" {
                        in_frontmatter = false;
                        continue;
                    }
                    Place::Frontmatter
                } else if let Some((c, n)) = fence_marker(trimmed) {
                    match fence {
                        None => fence = Some((c, n)),
                        Some((open, len)) if open == c && n >= len && trimmed.trim_matches(c).is_empty() => {
                            fence = None;
                        }
                        Some(_) => {}
                    }
                    continue;
                } else if fence.is_some() {
                    Place::Code
                } else if in_comment || line.contains("<!--") {
                    if !in_comment && let Some(start) = line.find("<!--") {
                        html_comment(line, start, number, &mut out);
                    }
                    let closes_at = line.rfind("-->");
                    in_comment = match (line.rfind("<!--"), closes_at) {
                        (Some(open), Some(close)) => open > close,
                        (Some(_), None) => true,
                        (None, Some(_)) => false,
                        (None, None) => in_comment,
                    };
                    Place::Comment
                } else {
                    Place::Prose
                }
            }
            FileKind::Script => Place::Code,
            FileKind::Other => Place::Prose,
        };
        if place == Place::Frontmatter {
            frontmatter(
                line,
                &line.to_ascii_lowercase(),
                number,
                &mut in_allowed_tools,
                &mut out,
            );
            if reshapes_values(line) {
                frontmatter_reshaped = true;
            }
        }
        let Groups {
            instructions: instruction_words,
            commands: command_words,
            secrets: secret_words,
        } = groups[index];
        if secret_words {
            let next = lines.get(index + 1).copied().unwrap_or("");
            secrets(original, &tokens, next, number, &mut out);
        }
        let commands_apply = command_words && place == Place::Code;
        // Inline code in the main file's prose instructs as a code block does
        // (``Run `curl … | sh` first.`` passed as prose), unless the line warns against it.
        let inline_commands =
            command_words && place == Place::Prose && kind == FileKind::Markdown && info.main && line.contains('`');
        if !instruction_words && !commands_apply && !inline_commands {
            continue;
        }
        let lower = line.to_ascii_lowercase();
        if instruction_words {
            let quoted = place == Place::Code && kind == FileKind::Markdown;
            instructions(line, &lower, number, quoted, &mut out);
        }
        if commands_apply {
            let lowered = (kind == FileKind::Markdown && !info.main).then_some(Severity::Info);
            commands(line, &lower, number, lowered, &mut out);
        }
        if inline_commands && !negated(&lower) {
            for span in code_spans(line) {
                commands(span, &span.to_ascii_lowercase(), number, None, &mut out);
            }
        }
    }
    if frontmatter_reshaped && out.findings.len() < MAX_FINDINGS_PER_FILE {
        parsed_values(&text, &mut out);
    }
    out.findings
}

/// The inline code spans of a Markdown line, without their backticks: a run
/// of backticks opens one that the next run of the same length closes
/// (CommonMark); a run never closed is text.
fn code_spans(line: &str) -> Vec<&str> {
    let runs: Vec<(usize, usize)> = {
        let bytes = line.as_bytes();
        let mut runs = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'`' {
                let start = i;
                while i < bytes.len() && bytes[i] == b'`' {
                    i += 1;
                }
                runs.push((start, i - start));
            } else {
                i += 1;
            }
        }
        runs
    };
    let mut spans = Vec::new();
    let mut open = 0;
    while open < runs.len() {
        let (start, len) = runs[open];
        match runs[open + 1..].iter().position(|&(_, n)| n == len) {
            Some(offset) => {
                let close = open + 1 + offset;
                spans.push(&line[start + len..runs[close].0]);
                open = close + 1;
            }
            None => open += 1,
        }
    }
    spans
}

/// Whether a frontmatter line holds a backslash (a YAML escape in a quoted
/// value) or is indented (a folded, continued or nested value).
fn reshapes_values(line: &str) -> bool {
    line.contains('\\') || line.starts_with([' ', '\t'])
}

/// Scans the frontmatter's values as YAML reads them: escapes decoded
/// (`"\u202E"`, `"Ignore\tall"`) and continued lines joined. What aam, agents
/// and clients show is the parsed value; a value found as it is in the text
/// was already scanned line by line.
fn parsed_values(text: &str, out: &mut Out) {
    let Some(fields) = crate::scan::frontmatter::parse(text).fields else {
        return;
    };
    let mut values = Vec::new();
    collect_strings(&serde_json::Value::Object(fields), &mut values);
    let mut found = Out::default();
    for value in values.into_iter().filter(|v| !text.contains(v.as_str())) {
        // Tabs and line breaks read as the spaces the matchers look for.
        let value = value.split_whitespace().collect::<Vec<_>>().join(" ");
        let value = secrets_masked(&value, &secret_tokens(&value));
        if !value.is_ascii() {
            hidden(&value, None, &mut found);
        }
        instructions(&value, &value.to_ascii_lowercase(), None, false, &mut found);
    }
    // A rule the lines already showed (a folded value whose first line held
    // it) is not counted twice.
    for finding in found.findings {
        if !out.findings.iter().any(|f| f.rule == finding.rule) {
            out.push(finding.rule, None, Some(finding.severity), finding.excerpt);
        }
    }
}

/// Every string in `value`, at any depth.
fn collect_strings(value: &serde_json::Value, into: &mut Vec<String>) {
    match value {
        serde_json::Value::String(text) => into.push(text.clone()),
        serde_json::Value::Array(items) => items.iter().for_each(|item| collect_strings(item, into)),
        serde_json::Value::Object(map) => map.values().for_each(|item| collect_strings(item, into)),
        _ => {}
    }
}

/// A code fence line: its character and run length (three or more).
fn fence_marker(trimmed: &str) -> Option<(char, usize)> {
    let c = trimmed.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let n = trimmed.chars().take_while(|x| *x == c).count();
    (n >= 3).then_some((c, n))
}

/// Findings of one file, capped per rule and in all.
#[derive(Default)]
struct Out {
    findings: Vec<Finding>,
}

impl Out {
    /// Adds a finding of `rule` at its own severity, or at `lowered` when lower.
    fn push(&mut self, rule: &'static str, line: Option<u32>, lowered: Option<Severity>, excerpt: String) {
        let Some(found) = find_rule(rule) else { return };
        if self.findings.len() >= MAX_FINDINGS_PER_FILE
            || self.findings.iter().filter(|f| f.rule == rule).count() >= MAX_PER_RULE
            || self
                .findings
                .iter()
                .any(|f| f.rule == rule && f.line == line && line.is_some())
        {
            return;
        }
        let severity = lowered.map_or(found.severity, |l| l.min(found.severity));
        self.findings.push(Finding {
            rule: found.id,
            severity,
            line,
            excerpt,
        });
    }
}

fn is_media(ext: &str) -> bool {
    matches!(
        ext,
        "png"
            | "jpg"
            | "jpeg"
            | "gif"
            | "webp"
            | "ico"
            | "bmp"
            | "tif"
            | "tiff"
            | "avif"
            | "pdf"
            | "woff"
            | "woff2"
            | "ttf"
            | "otf"
            | "eot"
            | "mp3"
            | "mp4"
            | "wav"
            | "ogg"
            | "webm"
            | "mov"
    )
}

fn is_script(ext: &str) -> bool {
    matches!(
        ext,
        "sh" | "bash"
            | "zsh"
            | "fish"
            | "ksh"
            | "ps1"
            | "psm1"
            | "bat"
            | "cmd"
            | "py"
            | "rb"
            | "pl"
            | "js"
            | "mjs"
            | "cjs"
            | "ts"
            | "php"
            | "lua"
            | "go"
            | "rs"
    )
}

/// The part of `line` around `start..end`, invisible characters made visible.
fn visible(line: &str, start: usize, end: usize) -> String {
    let from = line[..start]
        .char_indices()
        .rev()
        .nth(EXCERPT_SIDE - 1)
        .map_or(0, |(i, _)| i);
    let to = line[end..]
        .char_indices()
        .nth(EXCERPT_SIDE)
        .map_or(line.len(), |(i, _)| end + i);
    let mut text = String::new();
    if from > 0 {
        text.push('…');
    }
    for c in line[from..to].trim().chars() {
        if is_invisible(c) || (c.is_control() && c != '\t') {
            text.push_str(&format!("<U+{:04X}>", c as u32));
        } else {
            text.push(c);
        }
    }
    if to < line.len() {
        text.push('…');
    }
    text
}

/// An excerpt showing both `start..end` and what follows up to `until`: whole
/// when short, else the two parts around an elided middle.
fn visible_from_to(line: &str, start: usize, end: usize, until: usize) -> String {
    if line[start..until].chars().count() <= 2 * EXCERPT_SIDE {
        return visible(line, start, until);
    }
    let tail_from = line[..until]
        .char_indices()
        .rev()
        .nth(EXCERPT_SIDE / 2 - 1)
        .map_or(end, |(i, _)| i.max(end));
    let head = visible(line, start, end);
    let tail = visible(line, tail_from, until);
    format!("{} {}", head.trim_end_matches('…'), tail)
}

fn is_bidi(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

fn is_tag(c: char) -> bool {
    matches!(c, '\u{E0000}'..='\u{E007F}')
}

fn is_joiner(c: char) -> bool {
    matches!(c, '\u{200C}' | '\u{200D}')
}

/// Direction marks (left-to-right, right-to-left, Arabic letter) and the soft hyphen.
fn is_mark(c: char) -> bool {
    matches!(c, '\u{200E}' | '\u{200F}' | '\u{061C}' | '\u{00AD}')
}

/// Characters that take no space and show nothing (joiners excluded).
fn is_zero_width(c: char) -> bool {
    matches!(
        c,
        '\u{200B}' | '\u{2060}'
            ..='\u{2064}' | '\u{FEFF}' | '\u{180E}' | '\u{115F}' | '\u{1160}' | '\u{3164}' | '\u{FFA0}'
    )
}

fn is_invisible(c: char) -> bool {
    is_bidi(c) || is_tag(c) || is_joiner(c) || is_zero_width(c) || matches!(c, '\u{200E}' | '\u{200F}' | '\u{00AD}')
}

/// Cyrillic and Greek letters that look like Latin ones.
fn is_lookalike(c: char) -> bool {
    matches!(
        c,
        'а' | 'в'
            | 'е'
            | 'к'
            | 'м'
            | 'н'
            | 'о'
            | 'р'
            | 'с'
            | 'т'
            | 'у'
            | 'х'
            | 'і'
            | 'ј'
            | 'ѕ'
            | 'ԁ'
            | 'ԛ'
            | 'ԝ'
            | 'А'
            | 'В'
            | 'Е'
            | 'К'
            | 'М'
            | 'Н'
            | 'О'
            | 'Р'
            | 'С'
            | 'Т'
            | 'Х'
            | 'І'
            | 'Ј'
            | 'Ѕ'
            | 'α'
            | 'ο'
            | 'ν'
            | 'ρ'
            | 'τ'
            | 'υ'
            | 'ι'
            | 'κ'
            | 'Α'
            | 'Β'
            | 'Ε'
            | 'Ζ'
            | 'Η'
            | 'Ι'
            | 'Κ'
            | 'Μ'
            | 'Ν'
            | 'Ο'
            | 'Ρ'
            | 'Τ'
            | 'Υ'
            | 'Χ'
    )
}

/// Hidden and deceptive characters in a line that is not pure ASCII.
fn hidden(line: &str, number: Option<u32>, out: &mut Out) {
    let chars: Vec<(usize, char)> = line.char_indices().collect();
    let mut flag_sequence = false;
    let mut word_latin = false;
    let mut word_lookalike = false;
    let mut word_start = 0;
    for (i, &(at, c)) in chars.iter().enumerate() {
        let end = at + c.len_utf8();
        if is_bidi(c) {
            out.push(rule::HIDDEN_BIDI, number, None, visible(line, at, end));
        } else if is_tag(c) {
            // Emoji flag sequences (black flag + tags) are legitimate.
            if !flag_sequence {
                out.push(rule::HIDDEN_TAG_CHARS, number, None, visible(line, at, end));
            }
        } else if is_zero_width(c) {
            out.push(rule::HIDDEN_ZERO_WIDTH, number, None, visible(line, at, end));
        } else if is_joiner(c) || is_mark(c) {
            // Joiners inside emoji sequences and non-Latin scripts, and
            // direction marks and soft hyphens in right-to-left text, are
            // legitimate; next to ASCII (or at either end of a line) they only
            // hide things (`ig\u{AD}nore` slips past a reader's search).
            let before = i.checked_sub(1).map(|p| chars[p].1);
            let after = chars.get(i + 1).map(|&(_, c)| c);
            if before.is_none_or(|c| c.is_ascii()) || after.is_none_or(|c| c.is_ascii()) {
                out.push(rule::HIDDEN_ZERO_WIDTH, number, None, visible(line, at, end));
            }
        }
        if c == '\u{1F3F4}' {
            flag_sequence = true;
        } else if !is_tag(c) {
            flag_sequence = false;
        }
        if c.is_alphanumeric() {
            if !word_latin && !word_lookalike {
                word_start = at;
            }
            word_latin |= c.is_ascii_alphabetic();
            word_lookalike |= is_lookalike(c);
            if word_latin && word_lookalike {
                let word_end = line[at..]
                    .find(|c: char| !c.is_alphanumeric())
                    .map_or(line.len(), |i| at + i);
                out.push(rule::HOMOGLYPH_MIX, number, None, visible(line, word_start, word_end));
                word_latin = false;
                word_lookalike = false;
            }
        } else {
            word_latin = false;
            word_lookalike = false;
        }
    }
}

/// An HTML comment opening at `start`, unless it is a tool directive or empty.
fn html_comment(line: &str, start: usize, number: Option<u32>, out: &mut Out) {
    let body = line[start + 4..].split("-->").next().unwrap_or("").trim();
    let lower = body.to_ascii_lowercase();
    let directive = [
        "markdownlint",
        "prettier",
        "toc",
        "omit in toc",
        "vale ",
        "eslint",
        "cspell",
        "end",
        "begin",
    ]
    .iter()
    .any(|d| lower.starts_with(d));
    if body.is_empty() && line[start..].contains("-->") || directive {
        return;
    }
    out.push(
        rule::HTML_COMMENT,
        number,
        None,
        visible(line, start, line.len().min(start + 4)),
    );
}

/// Whether the line says not to do something (a warning, not an instruction).
fn negated(lower: &str) -> bool {
    static NEGATIONS: Needles = Needles::new(&[
        "never ",
        "do not ",
        "don't ",
        "must not ",
        "should not ",
        "shouldn't ",
        "avoid ",
        "beware",
        "warning",
    ]);
    NEGATIONS.occur_in(lower)
}

/// A fixed list of lowercase phrases looked for in a lowercased line in one
/// pass. A line that opens a rule group is searched for a dozen such lists;
/// looking for each phrase on its own set up a substring searcher per phrase and
/// line, a third of a `source add`'s time on real repositories.
struct Needles {
    phrases: &'static [&'static str],
    automaton: OnceLock<Option<AhoCorasick>>,
}

impl Needles {
    const fn new(phrases: &'static [&'static str]) -> Self {
        Self {
            phrases,
            automaton: OnceLock::new(),
        }
    }

    /// Where the first phrase starts and ends in `lower`; of phrases starting at
    /// the same byte, the one listed first.
    fn find(&self, lower: &str) -> Option<(usize, usize)> {
        let automaton = self.automaton.get_or_init(|| {
            AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostFirst)
                .build(self.phrases)
                .ok()
        });
        match automaton {
            Some(automaton) => automaton.find(lower).map(|m| (m.start(), m.end())),
            None => self.find_each(lower),
        }
    }

    /// [`Needles::find`] phrase by phrase: the same answer, slower.
    fn find_each(&self, lower: &str) -> Option<(usize, usize)> {
        self.phrases
            .iter()
            .filter_map(|n| lower.find(n).map(|i| (i, i + n.len())))
            .min_by_key(|&(i, _)| i)
    }

    fn occur_in(&self, lower: &str) -> bool {
        self.find(lower).is_some()
    }
}

/// Instructions aimed at the agent. In quoted code they are `info`.
fn instructions(line: &str, lower: &str, number: Option<u32>, quoted: bool, out: &mut Out) {
    let lowered = quoted.then_some(Severity::Info);
    for verb in ["ignore ", "disregard ", "forget "] {
        for (at, _) in lower.match_indices(verb) {
            let window = &lower[at..lower.len().min(at + 70)];
            let qualified = ["previous", "prior", "above", "earlier", "all ", "your ", "any "]
                .iter()
                .any(|q| window.contains(q));
            let object = ["instructions", "system prompt", "guidelines", "directives", "rules you"]
                .iter()
                .any(|o| window.contains(o));
            if qualified && object {
                out.push(
                    rule::PROMPT_OVERRIDE,
                    number,
                    lowered,
                    visible(line, at, at + verb.len()),
                );
            }
        }
    }
    static CONCEAL: Needles = Needles::new(&[
        "do not tell the user",
        "don't tell the user",
        "never tell the user",
        "without telling the user",
        "without the user knowing",
        "without the user noticing",
        "hide this from the user",
        "hide it from the user",
        "do not inform the user",
        "don't inform the user",
        "without informing the user",
        "do not mention this to the user",
        "don't mention this to the user",
        "do not reveal this to the user",
        "don't let the user know",
        "do not let the user know",
        "keep this secret from the user",
        "silently, without",
    ]);
    if let Some((s, e)) = CONCEAL.find(lower) {
        out.push(rule::PROMPT_CONCEAL, number, lowered, visible(line, s, e));
    }
    static SENSITIVE: Needles = Needles::new(&[
        "ssh key",
        "private key",
        "id_rsa",
        "id_ed25519",
        "credential",
        "api key",
        "api_key",
        "apikey",
        "access token",
        "auth token",
        "password",
        "secret",
        "environment variable",
        "env var",
        ".env",
        "printenv",
    ]);
    static SEND: Needles = Needles::new(&[
        "send ",
        "upload ",
        "post ",
        "exfiltrate",
        "transmit ",
        "forward ",
        "leak ",
        "email ",
        "curl ",
        "wget ",
    ]);
    static SINK: Needles = Needles::new(&["http://", "https://", " to ", "webhook", " -d ", "--data", " nc "]);
    if let Some((s, e)) = SEND.find(lower)
        && SENSITIVE.occur_in(&lower[s..])
        && SINK.occur_in(&lower[s..])
        && !negated(lower)
    {
        out.push(rule::PROMPT_EXFILTRATE, number, lowered, visible(line, s, e));
    }
    static CREDENTIAL_FILES: Needles = Needles::new(&[
        "~/.ssh/",
        "$home/.ssh",
        ".ssh/id_",
        "id_rsa",
        "id_ed25519",
        ".aws/credentials",
        ".netrc",
        ".git-credentials",
        ".docker/config.json",
        ".kube/config",
    ]);
    if let Some((s, e)) = CREDENTIAL_FILES.find(lower)
        && out.findings.iter().all(|f| f.rule != rule::CREDENTIAL_FILE)
    {
        out.push(rule::CREDENTIAL_FILE, number, None, visible(line, s, e));
    }
    static DISABLE: Needles = Needles::new(&[
        "--dangerously-skip-permissions",
        "bypasspermissions",
        "dangerouslydisablesandbox",
        "autoapprove",
        "auto-approve",
        "auto approve",
        "yolo mode",
        "--yolo",
        "disable the safety",
        "disable safety",
        "disable the sandbox",
        "disable sandbox",
        "disable all safety",
        "disable guardrails",
        "disable the guardrails",
        "turn off safety",
        "turn off the sandbox",
        "skip all permission",
        "skip permission prompts",
        "without asking for permission",
        "without asking for confirmation",
        "without asking for approval",
        "approve all tool",
    ]);
    if let Some((s, e)) = DISABLE.find(lower)
        && !negated(lower)
        && !(lower[..s].ends_with('-') && lower[s..].starts_with("auto"))
    {
        out.push(rule::PROMPT_DISABLE_SAFETY, number, lowered, visible(line, s, e));
    }
}

/// The words of a shell line, quotes dropped.
fn words(line: &str) -> Vec<String> {
    line.split(|c: char| c.is_whitespace() || c == ';' || c == '&' || c == '(' || c == ')')
        .filter(|w| !w.is_empty())
        .map(|w| w.trim_matches(|c| c == '"' || c == '\'').to_string())
        .collect()
}

fn is_command(word: &str, name: &str) -> bool {
    word == name || word.ends_with(&format!("/{name}"))
}

const SHELLS: &[&str] = &[
    "sh",
    "bash",
    "zsh",
    "dash",
    "ksh",
    "fish",
    "python",
    "python3",
    "perl",
    "ruby",
    "node",
    "iex",
    "invoke-expression",
];

/// Where the shell a command from `from` on pipes into ends (`curl x | sudo bash`:
/// after `bash`), if it pipes into one.
fn piped_to_shell(lower: &str, from: usize) -> Option<usize> {
    let mut at = from;
    for (i, segment) in lower[from..].split('|').enumerate() {
        let start = at;
        at += segment.len() + 1;
        if i == 0 {
            continue;
        }
        let mut words = segment
            .split_whitespace()
            .filter(|w| !w.starts_with('-'))
            .map(|w| (w.as_ptr() as usize - segment.as_ptr() as usize + w.len(), w));
        let mut first = words.next();
        if first.is_some_and(|(_, w)| w == "sudo") {
            first = words.next();
        }
        if let Some((end, word)) = first
            && SHELLS.iter().any(|shell| is_command(word, shell))
        {
            return Some(start + end);
        }
    }
    None
}

/// Risky commands in code. `lowered` caps the severity (code quoted in docs).
fn commands(line: &str, lower: &str, number: Option<u32>, lowered: Option<Severity>, out: &mut Out) {
    static FETCH: Needles = Needles::new(&["curl", "wget", "invoke-webrequest", "iwr ", "irm "]);
    static SUBSTITUTED_FETCH: Needles = Needles::new(&["<(curl", "<(wget", "$(curl", "$(wget", "`curl", "`wget"]);
    static SUBSTITUTION_RUNNERS: Needles = Needles::new(&["bash", "sh ", "zsh", "eval"]);
    static DECODE: Needles = Needles::new(&["base64 -d", "base64 --decode", "b64decode", "atob("]);
    static DECODED_RUNNERS: Needles = Needles::new(&[
        "| sh",
        "|sh",
        "| bash",
        "|bash",
        "| zsh",
        "eval",
        "exec(",
        "| python",
        "| sudo",
        "source <(",
    ]);
    static FETCHED_SECRETS: Needles = Needles::new(&[
        "~/.ssh",
        "id_rsa",
        ".aws/credentials",
        "printenv",
        "$aws_secret",
        "$github_token",
    ]);
    let fetch = FETCH.find(lower);
    if let Some((s, e)) = fetch {
        let substituted = SUBSTITUTED_FETCH.occur_in(lower) && SUBSTITUTION_RUNNERS.occur_in(lower);
        // The excerpt shows the shell the download is piped to, however far.
        match piped_to_shell(lower, e) {
            Some(shell_end) => out.push(
                rule::CMD_PIPE_SHELL,
                number,
                lowered,
                visible_from_to(line, s, e, shell_end),
            ),
            None if substituted => out.push(rule::CMD_PIPE_SHELL, number, lowered, visible(line, s, e)),
            None => {}
        }
        if let Some(ip) = raw_ip_url(lower) {
            out.push(rule::CMD_RAW_IP, number, lowered, visible(line, ip.0, ip.1));
        }
    }
    let words = words(line);
    for (i, word) in words.iter().enumerate() {
        if is_command(word, "rm") {
            let mut recursive = false;
            for arg in &words[i + 1..] {
                if arg == "--recursive" || (arg.starts_with('-') && !arg.starts_with("--") && arg.contains(['r', 'R']))
                {
                    recursive = true;
                } else if arg.starts_with('-') {
                } else if recursive && is_root_target(arg) {
                    let at = lower.find("rm ").unwrap_or(0);
                    out.push(rule::CMD_RM_ROOT, number, lowered, visible(line, at, at + 2));
                    break;
                } else if matches!(arg.as_str(), "|" | "&&" | "||") {
                    break;
                }
            }
        }
        if is_command(word, "chmod")
            && words[i + 1..]
                .iter()
                .find(|a| !a.starts_with('-'))
                .is_some_and(|mode| matches!(mode.as_str(), "777" | "0777" | "a+rwx" | "ugo+rwx"))
        {
            let at = lower.find("chmod").unwrap_or(0);
            out.push(rule::CMD_CHMOD_777, number, lowered, visible(line, at, at + 5));
        }
        if word == "sudo" {
            let at = lower.find("sudo").unwrap_or(0);
            out.push(rule::CMD_SUDO, number, lowered, visible(line, at, at + 4));
        }
    }
    if let Some((s, e)) = DECODE.find(lower)
        && DECODED_RUNNERS.occur_in(lower)
    {
        out.push(rule::CMD_BASE64_EXEC, number, lowered, visible(line, s, e));
    }
    static STARTUP: Needles = Needles::new(&[
        ".bashrc",
        ".zshrc",
        ".bash_profile",
        ".zprofile",
        ".zshenv",
        ".bash_login",
        ".profile",
        "config.fish",
    ]);
    if let Some((s, e)) = STARTUP.find(lower) {
        let before = &lower[..s];
        if before.contains('>') || before.contains("tee ") || before.contains("sed -i") {
            out.push(rule::CMD_SHELL_STARTUP, number, lowered, visible(line, s, e));
        }
    }
    if let Some((s, e)) = fetch
        && FETCHED_SECRETS.occur_in(lower)
    {
        out.push(rule::PROMPT_EXFILTRATE, number, lowered, visible(line, s, e));
    }
}

fn is_root_target(arg: &str) -> bool {
    let arg = arg.trim_end_matches('*').trim_end_matches('/');
    matches!(arg, "" | "~" | "$home" | "$HOME" | "${HOME}" | "${home}")
}

/// A URL whose host is a raw IPv4 address other than loopback or `0.0.0.0`.
fn raw_ip_url(lower: &str) -> Option<(usize, usize)> {
    for (at, _) in lower.match_indices("://") {
        let host_start = at + 3;
        let rest = &lower[host_start..];
        let host_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let host = &rest[..host_len];
        let parts: Vec<&str> = host.split('.').collect();
        let is_ip = parts.len() == 4
            && parts
                .iter()
                .all(|p| !p.is_empty() && p.len() <= 3 && p.parse::<u8>().is_ok());
        let next = rest[host_len..].chars().next();
        if is_ip
            && next.is_none_or(|c| matches!(c, '/' | ':' | ' ' | '"' | '\'' | '?'))
            && !host.starts_with("127.")
            && host != "0.0.0.0"
        {
            let start = lower[..at]
                .rfind(|c: char| c.is_whitespace() || c == '"' || c == '\'')
                .map_or(0, |i| i + 1);
            return Some((start, host_start + host_len));
        }
    }
    None
}

/// The tokens of `line` that are secrets (an access key, a token), with the
/// rule each breaks.
fn secret_tokens(line: &str) -> Vec<SecretToken> {
    let mut found = Vec::new();
    let bytes = line.as_bytes();
    let token_end = |from: usize, allowed: &dyn Fn(u8) -> bool| {
        bytes[from..]
            .iter()
            .position(|&b| !allowed(b))
            .map_or(bytes.len(), |n| from + n)
    };
    let boundary = |at: usize| at == 0 || !(bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_');
    for prefix in ["AKIA", "ASIA"] {
        for (at, _) in line.match_indices(prefix) {
            let end = token_end(at + 4, &|b| b.is_ascii_uppercase() || b.is_ascii_digit());
            let token = &line[at..end];
            if boundary(at) && end - at == 20 && !token.contains("EXAMPLE") {
                found.push((rule::SECRET_AWS, at..end));
            }
        }
    }
    for prefix in ["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"] {
        for (at, _) in line.match_indices(prefix) {
            let start = at + prefix.len();
            let end = token_end(start, &|b| b.is_ascii_alphanumeric() || b == b'_');
            let min = if prefix == "github_pat_" { 22 } else { 36 };
            if boundary(at) && end - start >= min && !is_placeholder(&line[start..end]) {
                found.push((rule::SECRET_GITHUB, at..end));
            }
        }
    }
    for (at, _) in line.match_indices("sk-") {
        let end = token_end(at + 3, &|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        let token = &line[at + 3..end];
        let mixed = token.bytes().any(|b| b.is_ascii_digit())
            && token.bytes().any(|b| b.is_ascii_uppercase())
            && token.bytes().any(|b| b.is_ascii_lowercase());
        if (at == 0 || !(bytes[at - 1].is_ascii_alphanumeric() || matches!(bytes[at - 1], b'-' | b'_')))
            && token.len() >= 20
            && mixed
            && !is_placeholder(token)
        {
            found.push((rule::SECRET_OPENAI, at..end));
        }
    }
    for (at, _) in line.match_indices("xox") {
        let Some(&kind) = bytes.get(at + 3) else { continue };
        if !matches!(kind, b'a' | b'b' | b'p' | b'r' | b's' | b'o') || bytes.get(at + 4) != Some(&b'-') {
            continue;
        }
        let end = token_end(at + 5, &|b| b.is_ascii_alphanumeric() || b == b'-');
        let token = &line[at + 5..end];
        if boundary(at) && token.len() >= 10 && token.bytes().any(|b| b.is_ascii_digit()) && !is_placeholder(token) {
            found.push((rule::SECRET_SLACK, at..end));
        }
    }
    found
}

/// A secret found in a line: the rule it breaks and where its token is.
type SecretToken = (&'static str, std::ops::Range<usize>);

/// `line` with its secret `tokens` cut to their first characters (the rest
/// `*`, so positions hold): what the other rules' excerpts quote.
fn secrets_masked<'l>(line: &'l str, tokens: &[SecretToken]) -> std::borrow::Cow<'l, str> {
    if tokens.is_empty() {
        return std::borrow::Cow::Borrowed(line);
    }
    let mut bytes = line.as_bytes().to_vec();
    for (_, token) in tokens.iter().cloned() {
        // A token is ASCII: replacing its bytes keeps the text UTF-8.
        bytes[(token.start + SECRET_SHOWN).min(token.end)..token.end].fill(b'*');
    }
    std::borrow::Cow::Owned(String::from_utf8(bytes).unwrap_or_else(|_| line.to_string()))
}

/// Characters of a secret an excerpt keeps: enough to tell which one it is.
const SECRET_SHOWN: usize = 8;

/// Secrets committed in text; excerpts keep only their first characters.
fn secrets(line: &str, tokens: &[SecretToken], next: &str, number: Option<u32>, out: &mut Out) {
    for (rule, token) in tokens.iter().cloned() {
        let shown = &line[token.start..(token.start + SECRET_SHOWN).min(token.end)];
        out.push(rule, number, None, format!("{shown}…"));
    }
    // A key block whose body is elided (`...`, `<key>`) is an example.
    let next = next.trim();
    let elided = next.len() < 20 || next.contains("...") || next.contains('…') || next.contains('<');
    if let Some(at) = line.find("-----BEGIN ")
        && line[at..].contains("PRIVATE KEY-----")
        && !elided
    {
        out.push(rule::SECRET_PRIVATE_KEY, number, None, visible(line, at, at + 11));
    }
}

/// Tokens that are obviously examples (`xxxx`, `1234...`, `your_token`).
fn is_placeholder(token: &str) -> bool {
    let lower = token.to_ascii_lowercase();
    [
        "xxxx",
        "0000",
        "1234",
        "abcd",
        "your",
        "example",
        "placeholder",
        "redacted",
        "token",
        "here",
    ]
    .iter()
    .any(|p| lower.contains(p))
}

/// `allowed-tools` granting bare Bash, and `hooks`, in frontmatter.
fn frontmatter(line: &str, lower: &str, number: Option<u32>, in_allowed_tools: &mut bool, out: &mut Out) {
    let top_level = !line.starts_with([' ', '\t', '-']);
    if top_level {
        *in_allowed_tools = false;
    }
    let value = if let Some(rest) = lower
        .strip_prefix("allowed-tools:")
        .or(lower.strip_prefix("allowed_tools:"))
    {
        *in_allowed_tools = true;
        rest
    } else if *in_allowed_tools {
        lower.trim_start().trim_start_matches('-')
    } else {
        ""
    };
    let unrestricted = value
        .split([',', '[', ']', ' '])
        .map(|t| t.trim().trim_matches(|c| c == '"' || c == '\''))
        .any(|t| matches!(t, "bash" | "bash(*)" | "bash(*:*)" | "shell" | "*"));
    if unrestricted {
        out.push(
            rule::FRONTMATTER_SHELL,
            number,
            None,
            visible(line, 0, line.len().min(20)),
        );
    }
    if top_level && (lower.starts_with("hooks:") || lower.starts_with("\"hooks\":")) {
        out.push(rule::FRONTMATTER_HOOKS, number, None, visible(line, 0, 6));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A name hides what its characters reorder or hide: each file's name,
    /// and the artifact's folder through the main file's path only.
    #[test]
    fn hidden_characters_in_names_are_found_once() {
        let scan = |path: &str, main: bool| -> Vec<(&str, Option<u32>)> {
            let info = FileInfo {
                path,
                executable: false,
                main,
            };
            scan_file(info, b"plain\n")
                .into_iter()
                .map(|f| (f.rule, f.line))
                .collect()
        };
        assert_eq!(scan("skills/nm/\u{202E}txt.exe", false), [("hidden-bidi", None)]);
        assert_eq!(scan("prompts/\u{202E}cod\u{200B}.prompt.md", true).len(), 2);
        assert!(scan("skills/\u{200B}x/notes.md", false).is_empty());
        assert_eq!(scan("skills/\u{200B}x/SKILL.md", true), [("hidden-zero-width", None)]);
        assert!(scan("skills/café/SKILL.md", true).is_empty());
        // Direction marks and soft hyphens next to ASCII hide things; in
        // right-to-left text they belong.
        assert_eq!(scan("skills/ig\u{AD}nore/x.md", true), [("hidden-zero-width", None)]);
        assert_eq!(scan("skills/a\u{200F}b/x.md", true), [("hidden-zero-width", None)]);
        assert!(scan("skills/שלום\u{200F}עולם/x.md", true).is_empty());
    }

    /// One pass finds what looking for each phrase on its own finds: the
    /// earliest start, and of phrases starting there the one listed first.
    #[test]
    fn needles_find_the_earliest_phrase_as_a_search_per_phrase_does() {
        static PHRASES: Needles = Needles::new(&["send ", "se", "upload", "sender", "nd u", "d"]);
        for line in [
            "",
            "nothing here",
            "send upload",
            "please upload then send ",
            "sender of d",
            "sendup",
            "dddd send",
            "é send ",
        ] {
            assert_eq!(PHRASES.find(line), PHRASES.find_each(line), "{line:?}");
        }
        assert_eq!(PHRASES.find("x send y"), Some((2, 7)));
        assert!(!PHRASES.occur_in("none"));
    }

    /// A download piped into a shell is quoted with the shell, however long
    /// the command between: the `| sh` that makes the finding was cut away.
    #[test]
    fn a_pipe_to_a_shell_is_quoted_with_the_shell() {
        let excerpt = |line: &str| {
            let mut out = Out::default();
            commands(line, &line.to_ascii_lowercase(), Some(1), None, &mut out);
            out.findings
                .iter()
                .find(|f| f.rule == rule::CMD_PIPE_SHELL)
                .map(|f| f.excerpt.clone())
        };
        assert_eq!(
            excerpt("curl -fsSL https://x.example/i | sh").unwrap(),
            "curl -fsSL https://x.example/i | sh"
        );
        let long = format!(
            "curl --proto '=https' --tlsv1.2 -sSfL https://{}/install.sh | sudo bash -s",
            "a".repeat(120)
        );
        let shown = excerpt(&long).unwrap();
        assert!(shown.starts_with("curl --proto"), "{shown}");
        assert!(shown.contains("| sudo bash"), "{shown}");
        assert!(shown.chars().count() < 200, "{shown}");
        assert_eq!(excerpt("curl -o x.sh https://x.example/i | tee log"), None);
    }

    /// Lines are split exactly as `str::lines` splits them.
    #[test]
    fn lines_are_split_as_str_lines_splits_them() {
        for text in [
            "",
            "\n",
            "a",
            "a\n",
            "a\r\nb\r\n",
            "a\n\nb",
            "a\rb\n",
            "a\r",
            "\r\n\r\n",
            "é\r\n\u{2028}\n",
        ] {
            assert_eq!(lines_of(text), text.lines().collect::<Vec<_>>(), "{text:?}");
        }
    }

    /// One pass over the text finds for each line the groups a search of that
    /// line alone finds: matches are given to the line they are in.
    #[test]
    fn groups_are_found_per_line_in_one_pass() {
        let text = "plain prose\r\nrun curl here\nthe ghp_ token\n\nignore it\nwget";
        let lines = lines_of(text);
        let groups = groups_by_line(text, &lines);
        let g = |instructions, commands, secrets| Groups {
            instructions,
            commands,
            secrets,
        };
        assert_eq!(
            groups,
            [
                g(false, false, false),
                g(true, true, false),
                g(false, false, true),
                g(false, false, false),
                g(true, false, false),
                g(true, true, false),
            ]
        );
        for (line, found) in lines.iter().zip(&groups) {
            assert_eq!(groups_by_line(line, &[line])[0], *found, "{line:?}");
        }
    }
}
