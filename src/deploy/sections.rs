//! Sections aam owns inside files users also write (`AGENTS.md`, `CLAUDE.md`).
//!
//! A section is
//! ```text
//! <!-- BEGIN AAM: <name> <type> -->
//! ...content...
//! <!-- END AAM: <name> <type> -->
//! ```
//! Adding one appends it after the user's text with exactly one line break in
//! front (so it starts on a line of its own, after a blank line when the text
//! ended with a line break); replacing one swaps only what lies between its
//! markers; removing one takes away exactly what adding it put there. So the user's text before, between and after sections is never
//! touched, and removing the last section gives back the file byte for byte. The
//! file's line ending (LF or CRLF) is kept.

/// The marker lines of a section.
fn markers(name: &str, kind: &str) -> (String, String) {
    (
        format!("<!-- BEGIN AAM: {name} {kind} -->"),
        format!("<!-- END AAM: {name} {kind} -->"),
    )
}

/// The line ending a text uses: CRLF when most of its line breaks are (a
/// file of lone CRs holding aam's LF sections has no CRLF, though the
/// user's last `\r` and aam's first `\n` make one).
fn line_ending(text: &str) -> &'static str {
    let bytes = text.as_bytes();
    let (crlf, lf) =
        memchr::memchr_iter(b'\n', bytes).fold((0, 0), |(crlf, lf), i| match i > 0 && bytes[i - 1] == b'\r' {
            true => (crlf + 1, lf),
            false => (crlf, lf + 1),
        });
    if crlf > lf { "\r\n" } else { "\n" }
}

/// Where a section sits: the byte range to cut when removing it (with the line
/// break aam put in front, unless the user's text now needs it), and the range
/// of its content.
struct Found {
    cut: std::ops::Range<usize>,
    content: std::ops::Range<usize>,
}

/// What a text holds for one section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section<'t> {
    /// No marker line of it.
    Absent,
    /// Exactly one begin and one end marker line, in order, with no other aam
    /// marker line between them: its content.
    Present(&'t str),
    /// Its markers are doubled, out of order, not on lines of their own, or
    /// enclose another aam marker: aam leaves it alone.
    Damaged,
}

/// The start of every line of `text` that is exactly `marker` (a line break,
/// LF or CRLF, or the end of the text after it).
fn marker_lines(text: &str, marker: &str) -> Vec<usize> {
    let mut out = Vec::new();
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        let bare = line.strip_suffix('\n').unwrap_or(line);
        let bare = bare.strip_suffix('\r').unwrap_or(bare);
        if bare == marker {
            out.push(start);
        }
        start += line.len();
    }
    out
}

/// Whether a line of `text` looks like an aam section marker: such a line in
/// an artifact would let it forge or cut another section.
/// Any line break counts (a lone CR, U+2028, U+0085: an editor or a later
/// conversion may show or turn them into one), and so does a byte-order mark
/// in front of the marker.
pub fn forges_marker(text: &str) -> bool {
    text.split(['\n', '\r', '\u{2028}', '\u{2029}', '\u{85}']).any(|line| {
        let line = line.trim_start_matches(|c: char| c.is_whitespace() || c == '\u{feff}');
        line.starts_with("<!-- BEGIN AAM:") || line.starts_with("<!-- END AAM:")
    })
}

fn find(text: &str, name: &str, kind: &str) -> Result<Option<Found>, ()> {
    let (begin, end) = markers(name, kind);
    let begins = marker_lines(text, &begin);
    let ends = marker_lines(text, &end);
    let (start, end_at) = match (begins.as_slice(), ends.as_slice()) {
        ([], []) => return Ok(None),
        ([start], [end_at]) if end_at > start => (*start, *end_at),
        _ => return Err(()),
    };
    // The line break aam wrote with the markers is the begin marker's own (the
    // text's first one may be the user's `\r` before aam's `\n`).
    let nl = match text[start + begin.len()..].starts_with("\r\n") {
        true => "\r\n",
        false => "\n",
    };
    let content_start = (start + begin.len() + nl.len()).min(end_at);
    if forges_marker(&text[content_start..end_at]) {
        return Err(());
    }
    let mut after = end_at + end.len();
    if text[after..].starts_with(nl) {
        after += nl.len();
    } else if text[after..].starts_with('\n') {
        after += 1;
    }
    // The line break in front is aam's when it made a blank line, or when
    // cutting it cannot join the user's line to the text that follows.
    let lead = if text[..start].ends_with(nl) {
        nl.len()
    } else if text[..start].ends_with('\n') {
        1
    } else {
        0
    };
    let rest = &text[after..];
    let ours = text[..start - lead].ends_with('\n') || rest.is_empty() || rest.starts_with(['\r', '\n']);
    let before = if ours { start - lead } else { start };
    Ok(Some(Found {
        cut: before..after,
        content: content_start..end_at,
    }))
}

/// What `text` holds for the section.
pub fn read<'t>(text: &'t str, name: &str, kind: &str) -> Section<'t> {
    match find(text, name, kind) {
        Ok(None) => Section::Absent,
        Ok(Some(found)) => Section::Present(&text[found.content]),
        Err(()) => Section::Damaged,
    }
}

/// The content of a section, when the text has it intact.
pub fn get<'t>(text: &'t str, name: &str, kind: &str) -> Option<&'t str> {
    match read(text, name, kind) {
        Section::Present(content) => Some(content),
        Section::Absent | Section::Damaged => None,
    }
}

/// `text` with the section set to `content`: replaced in place when present,
/// appended otherwise; unchanged when the section is damaged.
pub fn upsert(text: &str, name: &str, kind: &str, content: &str) -> String {
    let nl = line_ending(text);
    let body = normalize(content, nl);
    match find(text, name, kind) {
        Ok(Some(found)) => {
            return format!("{}{body}{}", &text[..found.content.start], &text[found.content.end..]);
        }
        Ok(None) => {}
        Err(()) => return text.to_string(),
    }
    let (begin, end) = markers(name, kind);
    let block = format!("{begin}{nl}{body}{end}{nl}");
    if text.is_empty() {
        return block;
    }
    format!("{text}{nl}{block}")
}

/// `text` without the section (unchanged when absent or damaged).
pub fn remove(text: &str, name: &str, kind: &str) -> String {
    match find(text, name, kind) {
        Ok(Some(found)) => format!("{}{}", &text[..found.cut.start], &text[found.cut.end..]),
        Ok(None) | Err(()) => text.to_string(),
    }
}

/// The (name, type) of every section a begin marker line of `text` opens.
fn opened(text: &str) -> Vec<(&str, &str)> {
    text.lines()
        .filter_map(|line| {
            let inner = line.strip_prefix("<!-- BEGIN AAM: ")?.strip_suffix(" -->")?;
            inner.rsplit_once(' ')
        })
        .collect()
}

/// What of `text` is the user's own: without the intact sections `recorded`
/// says aam installed there for a package (by name and type), and with the
/// marker lines of the other intact sections dropped, their text kept (a
/// section `uninstall` kept because it was edited is the user's now). A
/// damaged section stays as it is, markers and all.
pub fn own_text(text: &str, recorded: impl Fn(&str, &str) -> bool) -> String {
    let mut out = text.to_string();
    for (name, kind) in opened(text) {
        if recorded(name, kind) {
            out = remove(&out, name, kind);
            continue;
        }
        let (begin, end) = markers(name, kind);
        if let Ok(Some(found)) = find(&out, name, kind) {
            let start = marker_lines(&out, &begin)[0];
            let after = marker_lines(&out, &end)[0] + end.len();
            let after =
                after + out[after..].len() - out[after..].trim_start_matches('\r').trim_start_matches('\n').len();
            out = format!("{}{}{}", &out[..start], &out[found.content], &out[after..]);
        }
    }
    out
}

/// Content with the file's line endings and a final line break.
fn normalize(content: &str, nl: &str) -> String {
    let lf = content.replace("\r\n", "\n");
    let mut body = if nl == "\n" { lf } else { lf.replace('\n', nl) };
    if !body.is_empty() && !body.ends_with(nl) {
        body.push_str(nl);
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("")]
    #[case("User notes.\n")]
    #[case("User notes without newline")]
    #[case("User notes.\n\n")]
    #[case("Line one\r\nLine two\r\n")]
    #[case("Line one\r\nno final break")]
    #[case("\n")]
    fn adding_then_removing_gives_the_file_back(#[case] original: &str) {
        let one = upsert(original, "a", "instruction", "Rule A\n");
        let two = upsert(&one, "b", "agent", "Agent B");
        assert_eq!(get(&two, "a", "instruction").unwrap().trim_end(), "Rule A");
        assert_eq!(get(&two, "b", "agent").unwrap().trim_end(), "Agent B");
        assert!(two.starts_with(original), "user text first, untouched");
        let crlf = original.contains("\r\n");
        assert_eq!(two.contains("\r\n"), crlf, "line endings kept");
        // Removing in either order gives back the original exactly.
        assert_eq!(remove(&remove(&two, "a", "instruction"), "b", "agent"), original);
        assert_eq!(remove(&remove(&two, "b", "agent"), "a", "instruction"), original);
    }

    /// A file of lone CRs (old Mac line breaks): aam's LF after the user's
    /// last `\r` reads as a CRLF, which is neither the file's line ending
    /// nor a break removing may take.
    #[rstest]
    #[case("line one\rline two\r")]
    #[case("only\r")]
    fn a_file_of_lone_carriage_returns_comes_back_whole(#[case] original: &str) {
        let one = upsert(original, "a", "instruction", "Rule A\n");
        let two = upsert(&one, "b", "agent", "Agent B");
        assert_eq!(get(&two, "a", "instruction"), Some("Rule A\n"));
        assert_eq!(get(&two, "b", "agent"), Some("Agent B\n"));
        assert_eq!(remove(&remove(&two, "a", "instruction"), "b", "agent"), original);
        assert_eq!(remove(&remove(&two, "b", "agent"), "a", "instruction"), original);
    }

    #[test]
    fn own_text_drops_recorded_sections_and_unwraps_the_others() {
        let mine = "# Notes\r\nKeep tests green.\r\n";
        let text = upsert(
            &upsert(mine, "code-reviewer", "agent", "Review."),
            "kept",
            "instruction",
            "Edited rule",
        );
        let recorded = |name: &str, _: &str| name == "code-reviewer";
        assert_eq!(own_text(&text, recorded), format!("{mine}\r\nEdited rule\r\n"));
        assert_eq!(own_text(&text, |_, _| true), mine);
        assert_eq!(own_text(&upsert("", "a", "agent", "only aam's"), |_, _| true), "");
        let damaged = format!("{text}<!-- END AAM: code-reviewer agent -->\n");
        let kept = own_text(&damaged, |_, _| true);
        assert!(
            kept.contains("BEGIN AAM: code-reviewer agent") && !kept.contains("Edited rule"),
            "{kept:?}"
        );
    }

    #[test]
    fn replacing_keeps_text_around_and_between() {
        let text = "Intro\n";
        let text = upsert(text, "a", "instruction", "old a");
        let text = format!("{text}User text between\n");
        let text = upsert(&text, "b", "instruction", "b");
        let replaced = upsert(&text, "a", "instruction", "new a\nsecond line");
        assert_eq!(replaced, text.replace("old a\n", "new a\nsecond line\n"));
        assert!(replaced.contains("User text between\n"));
        let without_a = remove(&replaced, "a", "instruction");
        assert!(without_a.starts_with("Intro\nUser text between\n"), "{without_a:?}");
        assert_eq!(remove(&without_a, "nope", "agent"), without_a);
    }

    #[rstest]
    #[case("Notes.", "Notes.\nMine above.\nMine below.\n")]
    #[case("Notes.\r\n", "Notes.\r\n\r\nMine above.\r\nMine below.\r\n")]
    fn removing_never_joins_the_users_lines(#[case] original: &str, #[case] expected: &str) {
        let nl = line_ending(original);
        let text = upsert(original, "a", "instruction", "Rule A");
        let begin = "<!-- BEGIN AAM: a instruction -->";
        let text = text.replace(begin, &format!("Mine above.{nl}{begin}")) + &format!("Mine below.{nl}");
        assert_eq!(remove(&text, "a", "instruction"), expected);
    }

    #[test]
    fn forged_or_doubled_markers_leave_the_section_alone() {
        let real = upsert("Mine.\n", "victim", "instruction", "Victim rule");
        // Another section's body carrying the victim's markers.
        let forged =
            format!("<!-- BEGIN AAM: victim instruction -->\nUser text\n<!-- END AAM: victim instruction -->\n{real}");
        assert_eq!(read(&forged, "victim", "instruction"), Section::Damaged);
        assert_eq!(remove(&forged, "victim", "instruction"), forged, "nothing is cut");
        assert_eq!(upsert(&forged, "victim", "instruction", "x"), forged);
        // Markers inside a line are not markers.
        let inline = "See `<!-- BEGIN AAM: a instruction -->` in docs\n";
        assert_eq!(read(inline, "a", "instruction"), Section::Absent);
        // An end before the begin, or another marker enclosed.
        let swapped = "<!-- END AAM: a instruction -->\n<!-- BEGIN AAM: a instruction -->\n";
        assert_eq!(read(swapped, "a", "instruction"), Section::Damaged);
        let nested = upsert("", "a", "instruction", "<!-- END AAM: b agent -->");
        assert_eq!(read(&nested, "a", "instruction"), Section::Damaged);
        assert!(forges_marker("text\n  <!-- BEGIN AAM: x agent -->\n"));
        assert!(!forges_marker("mentions BEGIN AAM in prose\n"));
        // Behind a lone CR, a line separator or a byte-order mark.
        assert!(forges_marker("Rule\r<!-- END AAM: x instruction -->\rmore\n"));
        assert!(forges_marker("Rule\u{2028}<!-- END AAM: x instruction -->"));
        assert!(forges_marker("Rule\n\u{feff}<!-- END AAM: x instruction -->\n"));
        assert_eq!(read(&real, "victim", "instruction"), Section::Present("Victim rule\n"));
    }

    #[test]
    fn sections_are_keyed_by_name_and_type() {
        let text = upsert("", "x", "agent", "agent x");
        let text = upsert(&text, "x", "instruction", "instruction x");
        assert_eq!(get(&text, "x", "agent").unwrap(), "agent x\n");
        assert_eq!(get(&text, "x", "instruction").unwrap(), "instruction x\n");
    }
}
