//! YAML frontmatter: the `---` block at the top of a markdown file.
//!
//! Parsing never fails. Valid YAML becomes a JSON object; YAML that does not parse
//! (common in `.mdc` rules: `globs: **/*`) is read line by line as `key: value`
//! pairs, and the problem is reported so it can be recorded as a warning.
//! Frontmatter larger than [`MAX_FRONTMATTER`] or nested too deeply (see
//! [`crate::yaml`]) never reaches the YAML parser, whose time grows quadratically
//! with nesting: it is read line by line too, with a warning, so one hostile file
//! costs a linear pass and never stalls a scan.

use std::borrow::Cow;

use serde_json::{Map, Value};

/// Ends every warning of a frontmatter no YAML parser read as given (invalid,
/// over the bounds, or a key given twice) and that was read line by line
/// instead: what any other reader makes of it may differ.
pub const READ_LINE_BY_LINE: &str = "read line by line";

/// Largest frontmatter handed to the YAML parser, in bytes.
pub const MAX_FRONTMATTER: usize = 64 * 1024;

/// What was found at the top of a file.
#[derive(Debug, Default, PartialEq)]
pub struct Frontmatter {
    /// The frontmatter as a JSON object, when there was any.
    pub fields: Option<Map<String, Value>>,
    /// The text after the frontmatter block (the whole text when there is none).
    pub body_offset: usize,
    /// Problems found while reading it.
    pub warnings: Vec<String>,
}

impl Frontmatter {
    /// A string field, trimmed, when present and non-empty.
    pub fn string(&self, key: &str) -> Option<String> {
        let value = self.fields.as_ref()?.get(key)?;
        let text = match value {
            Value::String(s) => s.trim().to_string(),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            _ => return None,
        };
        (!text.is_empty()).then_some(text)
    }
}

/// `text` without the keys of its frontmatter: its values and the body after it
/// as written, so `applyTo: "**/*.kt"` is read as `"**/*.kt"`. The whole text
/// when it opens no block or never closes it, as [`parse`] splits it (a block
/// that closes past the end of a capped text is text too), and without reading
/// the YAML: a line that starts with no plain ASCII key followed by `:` and a
/// space keeps whatever it holds (`"k": v`, `café: x`). The lines under a block
/// scalar's header (`description: |`, `- >-`) are kept whole, so its
/// `Usage: text` keeps `Usage`; a quoted value running over several lines is not
/// followed, and such a line of it loses its first word.
pub fn without_keys(text: &str) -> Cow<'_, str> {
    let Some((yaml_start, yaml_stop, body_offset)) = block(text) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len());
    // The column of the key whose block scalar the next lines may continue:
    // a blank line or one indented past it is the scalar's text.
    let mut scalar_key_column = None;
    for line in text[yaml_start..yaml_stop].split_inclusive('\n') {
        if let Some(column) = scalar_key_column
            && (line.trim().is_empty() || indentation(line) > column)
        {
            out.push_str(line);
            continue;
        }
        match split_key(line) {
            Some((column, value)) => {
                out.push_str(value);
                scalar_key_column = opens_block_scalar(value).then_some(column);
            }
            None => {
                out.push_str(line);
                scalar_key_column = unkeyed_block_scalar(line);
            }
        }
    }
    out.push_str(&text[body_offset..]);
    Cow::Owned(out)
}

/// The column of a frontmatter line's key and what follows its `:`
/// (`  - tools: Read` is 4 and ` Read`), or `None` when it starts with no key:
/// a value's `https://` is no key.
fn split_key(line: &str) -> Option<(usize, &str)> {
    let item = line.trim_start();
    let item = item.strip_prefix("- ").unwrap_or(item).trim_start();
    let key_len = item
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
        .count();
    match &item.as_bytes()[key_len..] {
        [b':'] | [b':', b' ' | b'\t' | b'\r' | b'\n', ..] if key_len > 0 => {
            Some((line.len() - item.len(), &item[key_len + 1..]))
        }
        _ => None,
    }
}

/// Whether a key's `value` is a block scalar's header: `|` or `>`, with an
/// optional chomping and indentation indicator (`|-`, `>2+`), and maybe a tag
/// (`!!str`), an anchor (`&a`) and a comment.
fn opens_block_scalar(value: &str) -> bool {
    let comment = value
        .char_indices()
        .find(|&(at, c)| c == '#' && value[..at].ends_with([' ', '\t']))
        .map_or(value.len(), |(at, _)| at);
    let mut words = value[..comment]
        .split_whitespace()
        .filter(|word| !word.starts_with(['!', '&']));
    let header = |word: &str| {
        let mut chars = word.chars();
        matches!(chars.next(), Some('|' | '>')) && chars.all(|c| c.is_ascii_digit() || c == '+' || c == '-')
    };
    matches!((words.next(), words.next()), (Some(word), None) if header(word))
}

/// The column a block scalar opened on a line without a plain key hangs from:
/// a sequence item's (`- |`) or a quoted key's (`"k": |`, `- 'k': >`).
fn unkeyed_block_scalar(line: &str) -> Option<usize> {
    let indent = indentation(line);
    let (item, item_column) = match line[indent..].strip_prefix("- ") {
        Some(rest) => (rest.trim_start_matches(' '), indent + 2 + indentation(rest)),
        None => (&line[indent..], indent),
    };
    match item.chars().next() {
        Some(quote @ ('"' | '\'')) => {
            let close = item[1..].find(quote)? + 1;
            let value = item[close + 1..].strip_prefix(':')?;
            opens_block_scalar(value).then_some(item_column)
        }
        // The item itself is the scalar: its text is indented past the dash.
        _ if item_column > indent => opens_block_scalar(item).then_some(indent),
        _ => None,
    }
}

/// The spaces a line starts with (YAML indents with spaces only).
fn indentation(line: &str) -> usize {
    line.bytes().take_while(|&b| b == b' ').count()
}

/// Where the frontmatter block of `text` lies: the end of its opening fence line,
/// the start of its closing one, and the start of the body after it. `None` when
/// `text` opens no block or never closes it.
fn block(text: &str) -> Option<(usize, usize, usize)> {
    let first_line_end = opening_fence_end(text)?;
    let mut offset = first_line_end;
    for line in text[first_line_end..].split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        if bare.trim_end() == "---" || bare.trim_end() == "..." {
            return Some((first_line_end, offset, offset + line.len()));
        }
        offset += line.len();
    }
    None
}

/// Splits and parses the frontmatter of `text` (already free of a byte-order mark).
pub fn parse(text: &str) -> Frontmatter {
    let Some((first_line_end, yaml_stop, body_offset)) = block(text) else {
        if opening_fence_end(text).is_none() {
            return Frontmatter::default();
        }
        return Frontmatter {
            fields: None,
            body_offset: 0,
            warnings: vec!["frontmatter starts with `---` but is never closed; read as plain text".into()],
        };
    };
    let yaml = text[first_line_end..yaml_stop].replace("\r\n", "\n");
    let mut warnings = Vec::new();
    if let Err(refusal) = crate::yaml::check(&yaml, MAX_FRONTMATTER) {
        warnings.push(format!("frontmatter {refusal}; {READ_LINE_BY_LINE}"));
        return Frontmatter {
            fields: Some(lenient(&yaml)),
            body_offset,
            warnings,
        };
    }
    if let Some(fields) = plain_mapping(&yaml) {
        return Frontmatter {
            fields: Some(fields),
            body_offset,
            warnings,
        };
    }
    let fields = match serde_yaml_ng::from_str::<Value>(&yaml) {
        // YAML forbids a key given twice; a parser keeps the last, below where
        // a reviewer stops reading. The first is kept, and said so.
        Ok(Value::Object(_)) if let Some(key) = repeated_key(&yaml) => {
            warnings.push(format!(
                "frontmatter gives `{key}` twice; {READ_LINE_BY_LINE}, the first kept"
            ));
            Some(lenient(&yaml))
        }
        Ok(Value::Object(map)) => Some(map),
        Ok(Value::Null) => None,
        Ok(_) => {
            warnings.push("frontmatter is not a mapping of keys to values; ignored".into());
            None
        }
        Err(err) => {
            let location = err
                .location()
                .map(|l| format!(" at line {}", l.line() + 1))
                .unwrap_or_default();
            // Valid YAML, but a number past 64 bits has no JSON form here.
            let what = match err.to_string().contains("number out of range") {
                true => "holds a number too large to read",
                false => "is not valid YAML",
            };
            warnings.push(format!("frontmatter {what}{location}; {READ_LINE_BY_LINE}"));
            Some(lenient(&yaml))
        }
    };
    Frontmatter {
        fields,
        body_offset,
        warnings,
    }
}

/// The mapping most frontmatter is, read without the YAML parser (whose setup
/// costs more than the rest of indexing a small file): every line a top-level
/// `key: value` whose value can only be a plain string in YAML. `None` as soon
/// as anything else appears (a quote, a comment, an indented or empty value, a
/// word YAML reads as a boolean or null, a repeated key, an odd character), and
/// the YAML parser reads the text; where this answers, the parser would answer
/// the same (the `plain_mapping_agrees_with_the_yaml_parser` test).
fn plain_mapping(yaml: &str) -> Option<Map<String, Value>> {
    let mut map = Map::new();
    for line in yaml.split('\n') {
        if line.is_empty() {
            continue;
        }
        let (key, value) = line.split_once(": ")?;
        let value = value.trim_matches(' ');
        let plain_word = |text: &str| {
            text.starts_with(|c: char| c.is_ascii_alphabetic())
                && !matches!(
                    text.to_ascii_lowercase().as_str(),
                    "true" | "false" | "null" | "yes" | "no" | "on" | "off" | "y" | "n"
                )
        };
        let key_ok = key.len() <= 128
            && plain_word(key)
            && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        let value_ok = plain_word(value)
            && !value.ends_with(':')
            && !value.contains(": ")
            && !value.contains(" #")
            && value.chars().all(|c| {
                matches!(c, ' '..='~')
                    || (c >= '\u{A0}' && !matches!(c, '\u{2028}' | '\u{2029}' | '\u{FEFF}' | '\u{FFFE}' | '\u{FFFF}'))
            });
        if !key_ok || !value_ok || map.insert(key.to_string(), Value::String(value.to_string())).is_some() {
            return None;
        }
    }
    (!map.is_empty()).then_some(map)
}

/// The end of a `---` opening line, when the text starts with one.
fn opening_fence_end(text: &str) -> Option<usize> {
    let rest = text.strip_prefix("---")?;
    let line_end = rest.find('\n').map(|i| i + 1).unwrap_or(rest.len());
    rest[..line_end].trim().is_empty().then_some(3 + line_end)
}

/// Top-level `key: value` lines, for YAML that does not parse.
fn lenient(yaml: &str) -> Map<String, Value> {
    let mut map = Map::new();
    let lines: Vec<&str> = yaml.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        if line.starts_with([' ', '\t', '#', '-']) {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let key = key.trim();
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            continue;
        }
        let value = value.trim();
        let text = if value.starts_with(['|', '>']) {
            // A block scalar: the indented lines that follow.
            let block: Vec<&str> = lines[i + 1..]
                .iter()
                .take_while(|l| l.starts_with([' ', '\t']) || l.trim().is_empty())
                .map(|l| l.trim())
                .collect();
            block
                .join(if value.starts_with('|') { "\n" } else { " " })
                .trim()
                .to_string()
        } else if value.starts_with(['[', '{']) {
            // A flow collection that did not parse: no usable scalar.
            continue;
        } else if let Some(quoted) = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
        {
            quoted.to_string()
        } else {
            // A plain `true`, `false` or whole number is what YAML reads it as
            // (`alwaysApply: false` must not become the string "false").
            let typed = match value {
                "true" | "True" | "TRUE" => Some(Value::Bool(true)),
                "false" | "False" | "FALSE" => Some(Value::Bool(false)),
                _ => value.parse::<i64>().ok().map(Value::from),
            };
            if let Some(typed) = typed {
                map.entry(key.to_string()).or_insert(typed);
                continue;
            }
            value.to_string()
        };
        map.entry(key.to_string()).or_insert_with(|| Value::String(text));
    }
    map
}

/// The first top-level key given twice, read line by line.
fn repeated_key(yaml: &str) -> Option<String> {
    let mut seen = std::collections::HashSet::new();
    yaml.lines()
        .filter(|line| !line.starts_with([' ', '\t', '#', '-']))
        .filter_map(|line| line.split_once(':'))
        .map(|(key, _)| key.trim().trim_matches(['"', '\'']).to_string())
        .find(|key| !key.is_empty() && !seen.insert(key.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_past_64_bits_is_named_as_such() {
        let fm = parse("---\nname: x\nversion: 123456789012345678901234567890\n---\n");
        assert_eq!(fm.string("name").as_deref(), Some("x"));
        assert!(
            fm.warnings[0].starts_with("frontmatter holds a number too large to read at line 3"),
            "{:?}",
            fm.warnings
        );
    }

    #[test]
    fn valid_yaml() {
        let fm = parse("---\nname: x\ndescription: \"Does y\"\ntools: [a, b]\n---\n# Body\n");
        assert_eq!(fm.string("name").as_deref(), Some("x"));
        assert_eq!(fm.string("description").as_deref(), Some("Does y"));
        assert_eq!(fm.fields.unwrap()["tools"], serde_json::json!(["a", "b"]));
        assert!(fm.warnings.is_empty());
    }

    #[test]
    fn crlf_and_body_offset() {
        let text = "---\r\nname: x\r\n---\r\nbody\r\n";
        let fm = parse(text);
        assert_eq!(fm.string("name").as_deref(), Some("x"));
        assert_eq!(&text[fm.body_offset..], "body\r\n");
    }

    /// `without_keys` cuts the block where `parse` does, whatever the YAML holds,
    /// and keeps the whole text when no block opens or one never closes.
    #[test]
    fn the_keys_go_and_the_values_and_body_stay() {
        let cases = [
            ("---\nname: x\n---\n# Body\n", " x\n# Body\n"),
            ("---\r\nname: x\r\n---\r\nbody\r\n", " x\r\nbody\r\n"),
            (
                "---\nglobs: **/*.kt\ntools:\n  - Read\n  - url: https://a.b\nmeta.tag: [a, b]\n...\nend\n",
                " **/*.kt\n\n  - Read\n https://a.b\n [a, b]\nend\n",
            ),
            ("---   \nk: v\n---  \ntrailing spaces\n", " v\ntrailing spaces\n"),
            ("---\n---\nan empty block\n", "an empty block\n"),
            (
                "---\nkey:value\n: x\n- : y\n---\nno key\n",
                "key:value\n: x\n- : y\nno key\n",
            ),
            (
                "---\nkey:é\ncafé: x\n\"k\": v\n\u{3000}k: w\n---\n",
                "key:é\ncafé: x\n\"k\": v\n w\n",
            ),
            ("---\nname: x\nnever closed\n", "---\nname: x\nnever closed\n"),
            ("--- not a fence\nk: v\n---\n", "--- not a fence\nk: v\n---\n"),
            ("no frontmatter\nk: v\n", "no frontmatter\nk: v\n"),
            ("---\nk: v\n---", " v\n"),
            ("", ""),
            (
                "---\ndescription: |\n  Usage: run it\n\n  Example: x\nname: y\n---\n",
                " |\n  Usage: run it\n\n  Example: x\n y\n",
            ),
            (
                "---\nmetadata:\n  notes: >- # folded\n    Note: a\n  tags: x\n---\n",
                "\n >- # folded\n    Note: a\n x\n",
            ),
            (
                "---\nsteps:\n  - run: |2\n      Step: one\n    id: a\nk: |x\n  Not: scalar\n---\n",
                "\n |2\n      Step: one\n a\n |x\n scalar\n",
            ),
            ("---\nk: >\n---\nbody: text\n", " >\nbody: text\n"),
            (
                "---\nexamples:\n  - |\n    Usage: run it\n  - Plain: item\n---\n",
                "\n  - |\n    Usage: run it\n item\n",
            ),
            (
                "---\n\"quoted\": |\n  Usage: one\n- 'k': >-\n    Note: two\nnext: x\n---\n",
                "\"quoted\": |\n  Usage: one\n- 'k': >-\n    Note: two\n x\n",
            ),
            (
                "---\na: !!str |\n  Tag: one\nb: &anchor >\n  Anchor: two\nc: |\t# tab, then a comment\n  Tab: three\nd: | x\n  Not: scalar\n---\n",
                " !!str |\n  Tag: one\n &anchor >\n  Anchor: two\n |\t# tab, then a comment\n  Tab: three\n | x\n scalar\n",
            ),
            (
                "---\n\"k: |\n  Open: quote\n\"é\": |\n  Accent: key\n- é: |\n  Dash: é\n-é\n---\n",
                "\"k: |\n quote\n\"é\": |\n  Accent: key\n- é: |\n é\n-é\n",
            ),
        ];
        for (text, read) in cases {
            assert_eq!(without_keys(text), read, "{text:?}");
            let body = &text[parse(text).body_offset..];
            assert!(read.ends_with(body), "{text:?}: the body is kept whole after the block");
        }
    }

    #[test]
    fn invalid_yaml_is_read_line_by_line() {
        let fm = parse("---\ndescription: \"TS rules\"\nglobs: **/*\nalwaysApply: false\n---\nbody");
        assert_eq!(fm.string("description").as_deref(), Some("TS rules"));
        assert_eq!(fm.string("globs").as_deref(), Some("**/*"));
        assert_eq!(fm.warnings.len(), 1);
        assert!(fm.warnings[0].contains("not valid YAML"), "{:?}", fm.warnings);
    }

    /// Read line by line, a plain boolean or number keeps its type, and a key
    /// given twice keeps its first value, with a warning.
    #[test]
    fn lenient_reading_keeps_types_and_the_first_of_a_repeated_key() {
        let fm = parse("---\nglobs: **/*.ts\nalwaysApply: false\nlimit: 3\nquoted: \"true\"\n---\n");
        let fields = fm.fields.unwrap();
        assert_eq!(fields["alwaysApply"], Value::Bool(false));
        assert_eq!(fields["limit"], Value::from(3));
        assert_eq!(fields["quoted"], Value::from("true"));
        let fm = parse("---\nalwaysApply: false\ndescription: d\nalwaysApply: true\n---\n");
        assert_eq!(fm.fields.unwrap()["alwaysApply"], Value::Bool(false));
        assert!(fm.warnings[0].contains("`alwaysApply` twice"), "{:?}", fm.warnings);
    }

    #[test]
    fn lenient_reading_keeps_block_scalars_and_drops_broken_collections() {
        let fm = parse("---\nname: [broken\ndescription: >\n  Folded over\n  two lines\nglobs: **/*\n---\n");
        assert_eq!(fm.string("name"), None);
        assert_eq!(fm.string("description").as_deref(), Some("Folded over two lines"));
        assert_eq!(fm.string("globs").as_deref(), Some("**/*"));
    }

    #[test]
    fn unclosed_and_non_mapping() {
        let fm = parse("---\nname: x\nno end");
        assert!(fm.fields.is_none());
        assert_eq!(fm.body_offset, 0);
        assert!(fm.warnings[0].contains("never closed"));
        let fm = parse("---\n- a\n- b\n---\n");
        assert!(fm.fields.is_none());
        assert!(fm.warnings[0].contains("not a mapping"));
    }

    #[test]
    fn hostile_frontmatter_is_refused_before_the_yaml_parser() {
        // 100,000 nested `[` took libyaml minutes; refused, the rest is still read.
        for (count, warning) in [
            (60_000, "frontmatter nests deeper than 64 levels; read line by line"),
            (100_000, "frontmatter is larger than 64 KiB; read line by line"),
        ] {
            let text = format!("---\nname: deep\ntools: {}\n---\nbody\n", "[".repeat(count));
            let fm = parse(&text);
            assert_eq!(fm.string("name").as_deref(), Some("deep"));
            assert_eq!(fm.fields.as_ref().unwrap().get("tools"), None);
            assert_eq!(fm.warnings, [warning]);
            assert_eq!(&text[fm.body_offset..], "body\n");
        }
        let fm = parse("---\nx: [[{a: b}]]\n---\n");
        assert!(fm.warnings.is_empty(), "{:?}", fm.warnings);
        assert_eq!(fm.fields.unwrap()["x"], serde_json::json!([[{"a": "b"}]]));
    }

    /// Wherever the plain reading answers, the YAML parser gives the same map:
    /// hand-picked lines, then lines drawn at random from characters that mean
    /// something to YAML.
    #[test]
    fn plain_mapping_agrees_with_the_yaml_parser() {
        let agrees = |yaml: &str| {
            let plain = plain_mapping(yaml);
            if let Some(plain) = &plain {
                let parsed = serde_yaml_ng::from_str::<Value>(yaml);
                assert_eq!(parsed.ok(), Some(Value::Object(plain.clone())), "{yaml:?}");
            }
            plain.is_some()
        };
        let picked = [
            "name: x\ndescription: Does y, then z.\nlicense: Apache-2.0\n",
            "name: a:b\nurl: see http://x.y/z#frag\n",
            "name: C# rules [beta] {v2}, it's \"quoted\" inside\n",
            "name: emoji é — ok ✓\n\nother: value   \n",
            "a-b_c: d & e * f ! g | h > i % j @ k ` l\n",
        ];
        for yaml in picked {
            assert!(agrees(yaml), "{yaml:?}");
        }
        for refused in [
            "name: true\n",
            "name: Off\n",
            "name: 'x'\n",
            "name: x\nname: y\n",
            "name: x # note\n",
            "name: 12\n",
            "name: x:\n",
            "name:\n",
            "  name: x\n",
            "# c\nname: x\n",
            "name: a: b\n",
            "name: x\u{2028}y\n",
            "name: x\ty\n",
            "",
        ] {
            assert_eq!(plain_mapping(refused), None, "{refused:?}");
        }
        let alphabet: Vec<char> = "aZk9 :#-_'\"[]{},&*!|>%@`.\t\\é\u{2028}\u{85}\n?~=".chars().collect();
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move |bound: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % bound as u64) as usize
        };
        let mut read_plainly = 0;
        for _ in 0..50_000 {
            let mut yaml = String::new();
            for _ in 0..1 + next(3) {
                let key: String = (0..1 + next(4)).map(|_| alphabet[next(4)]).collect();
                // Mostly values that start like a word, so the plain reading is tried.
                let value: String = (0..1 + next(12))
                    .map(|i| {
                        alphabet[if i == 0 && next(4) > 0 {
                            next(3)
                        } else {
                            next(alphabet.len())
                        }]
                    })
                    .collect();
                yaml.push_str(&format!("{key}: {value}\n"));
            }
            read_plainly += usize::from(agrees(&yaml));
        }
        assert!(read_plainly > 5_000, "only {read_plainly} texts were read plainly");
    }

    #[test]
    fn no_frontmatter() {
        assert_eq!(parse("# Title\n---\n"), Frontmatter::default());
        assert_eq!(parse("----\nx: y\n----\n"), Frontmatter::default());
        assert_eq!(parse("").fields, None);
    }
}
