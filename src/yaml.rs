//! Bounds on untrusted YAML, checked before `serde_yaml_ng` sees the text.
//!
//! The libyaml parser under `serde_yaml_ng` takes time quadratic in the nesting depth
//! of flow collections: a frontmatter of 100,000 `[` kept it busy for two minutes. The
//! check here is one linear pass that refuses text longer than a caller's byte limit,
//! nested deeper than [`MAX_DEPTH`], or holding more than [`MAX_COLLECTIONS`] flow
//! collections. It must never let deep text through: the depth it measures ignores
//! quoting, so brackets inside quoted or plain scalars count too (it may over-count,
//! which refuses odd but harmless text, never under-count by more than the
//! collection cap allows). It reads nothing and parses nothing itself.

use std::fmt;

/// Deepest nesting accepted, counting flow collections (`[`, `{`) and block levels.
pub const MAX_DEPTH: usize = 64;

/// Most flow collections (`[` or `{`) accepted in one text. Brackets inside quoted
/// strings can hide closing brackets from the depth count; this cap keeps the real
/// depth, and so the parser's time, bounded whatever the quoting (1,024 nested `[`
/// cost libyaml about 20 ms in a debug build).
pub const MAX_COLLECTIONS: usize = 1024;

/// Why a YAML text was refused before parsing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Longer than the caller's limit, in bytes.
    TooLarge {
        /// The limit.
        limit: usize,
    },
    /// Nested deeper than [`MAX_DEPTH`].
    TooDeep,
    /// More than [`MAX_COLLECTIONS`] flow collections.
    TooManyCollections,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::TooLarge { limit } if limit % 1024 == 0 => write!(f, "is larger than {} KiB", limit / 1024),
            Refusal::TooLarge { limit } => write!(f, "is larger than {limit} bytes"),
            Refusal::TooDeep => write!(f, "nests deeper than {MAX_DEPTH} levels"),
            Refusal::TooManyCollections => write!(f, "holds more than {MAX_COLLECTIONS} `[` or `{{` collections"),
        }
    }
}

/// Checks that `text` is small and shallow enough to hand to the YAML parser.
pub fn check(text: &str, max_bytes: usize) -> Result<(), Refusal> {
    if text.len() > max_bytes {
        return Err(Refusal::TooLarge { limit: max_bytes });
    }
    let mut flow = 0usize;
    let mut collections = 0usize;
    // Indentation columns of the open block levels, strictly increasing.
    let mut indents: Vec<usize> = Vec::new();
    for line in text.lines() {
        let content = line.trim_start_matches([' ', '\t']);
        if flow == 0 && !content.is_empty() && !content.starts_with('#') {
            let indent = line.len() - content.len();
            while indents.last().is_some_and(|&top| top > indent) {
                indents.pop();
            }
            if indents.last() != Some(&indent) {
                indents.push(indent);
            }
            // Compact nested sequences and explicit keys (`- - - x`, `? - x`) nest on one line.
            let mut rest = content;
            let mut compact = 0;
            while let Some(after) = rest.strip_prefix(['-', '?'])
                && (after.is_empty() || after.starts_with([' ', '\t']))
            {
                compact += 1;
                rest = after.trim_start_matches([' ', '\t']);
            }
            if indents.len() + compact > MAX_DEPTH {
                return Err(Refusal::TooDeep);
            }
        }
        for byte in line.bytes() {
            match byte {
                b'[' | b'{' => {
                    flow += 1;
                    collections += 1;
                    if indents.len() + flow > MAX_DEPTH {
                        return Err(Refusal::TooDeep);
                    }
                    if collections > MAX_COLLECTIONS {
                        return Err(Refusal::TooManyCollections);
                    }
                }
                b']' | b'}' => flow = flow.saturating_sub(1),
                _ => {}
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("name: x\ntools: [a, b]\nmeta: {a: [1, 2], b: {c: d}}\n")]
    #[case("a:\n  b:\n    - c\n    - d: [e]\n")]
    #[case("description: \"see [the docs](https://x) and [this]\"\n")]
    #[case("")]
    fn ordinary_yaml_passes(#[case] text: &str) {
        assert_eq!(check(text, 1024), Ok(()));
    }

    #[test]
    fn limits() {
        let deep = |n: usize| format!("x: {}{}\n", "[".repeat(n), "]".repeat(n));
        assert_eq!(check(&deep(MAX_DEPTH - 1), 1 << 20), Ok(()));
        assert_eq!(check(&deep(MAX_DEPTH + 1), 1 << 20), Err(Refusal::TooDeep));
        assert_eq!(check(&"[".repeat(100_000), 1 << 20), Err(Refusal::TooDeep));
        assert_eq!(check(&"- ".repeat(MAX_DEPTH + 1), 1 << 20), Err(Refusal::TooDeep));
        let stairs: String = (0..=MAX_DEPTH).map(|i| format!("{}k:\n", " ".repeat(i))).collect();
        assert_eq!(check(&stairs, 1 << 20), Err(Refusal::TooDeep));
        assert_eq!(check("x: 1\n", 4), Err(Refusal::TooLarge { limit: 4 }));
        // Quoted closing brackets cannot hide depth beyond the collection cap.
        let hidden = "[\"]\"".repeat(MAX_COLLECTIONS + 1);
        assert_eq!(check(&hidden, 1 << 20), Err(Refusal::TooManyCollections));
        assert_eq!(Refusal::TooLarge { limit: 65536 }.to_string(), "is larger than 64 KiB");
        assert_eq!(Refusal::TooDeep.to_string(), "nests deeper than 64 levels");
    }
}
