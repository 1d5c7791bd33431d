//! Bounds on untrusted YAML, checked before `serde_yaml_ng` sees the text.
//!
//! The libyaml parser under `serde_yaml_ng` takes time quadratic in the nesting depth
//! of flow collections: a frontmatter of 100,000 `[` kept it busy for two minutes. The
//! check here is one linear pass that refuses text longer than a caller's byte limit,
//! nested deeper than [`MAX_DEPTH`], or holding more than [`MAX_COLLECTIONS`] flow
//! collections. It must never let deep text through: the depth it measures ignores
//! quoting, so brackets inside quoted or plain scalars count too (it may over-count,
//! which refuses odd but harmless text, never under-count by more than the
//! collection cap allows). A text holding `*` is also measured with its aliases
//! copied out (a parse that keeps nothing) and refused when that is more than twice
//! its size: an anchor repeated thousands of times made 225 MB of one 60 KiB text.

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
    /// Larger, once its aliases are copied out, than twice its text (plus 64
    /// KiB): an anchored value repeated thousands of times (`*big`).
    AliasesTooLarge,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::TooLarge { limit } if limit % 1024 == 0 => write!(f, "is larger than {} KiB", limit / 1024),
            Refusal::TooLarge { limit } => write!(f, "is larger than {limit} bytes"),
            Refusal::TooDeep => write!(f, "nests deeper than {MAX_DEPTH} levels"),
            Refusal::TooManyCollections => write!(f, "holds more than {MAX_COLLECTIONS} `[` or `{{` collections"),
            Refusal::AliasesTooLarge => write!(f, "repeats anchored values (`*alias`) past twice its size"),
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
    // The parser copies an anchored value out at every alias: measured first,
    // without building it, so a 60 KiB text cannot become 200 MB of values.
    if text.contains('*') {
        check_expansion(text)?;
    }
    Ok(())
}

/// Refuses `text` when its documents, aliases copied out, hold more than twice
/// its bytes plus 64 KiB (scalars' bytes, and one per node): an alias-free text
/// never comes close. Text the parser refuses passes here; its parse says why.
fn check_expansion(text: &str) -> Result<(), Refusal> {
    use serde::de::Deserialize;
    let mut left = 2 * text.len() as u64 + 65_536;
    for document in serde_yaml_ng::Deserializer::from_str(text) {
        match Measured::deserialize(document) {
            Ok(Measured(size)) if size <= left => left -= size,
            Ok(_) => return Err(Refusal::AliasesTooLarge),
            Err(e) if e.to_string().contains(OVER_BUDGET) => return Err(Refusal::AliasesTooLarge),
            Err(_) => return Ok(()),
        }
    }
    Ok(())
}

/// What a measurement stopped with once a value grew past [`MAX_NODE_BYTES`].
const OVER_BUDGET: &str = "aam: value too large once aliases are copied out";

/// Largest single value measured before giving up (each document also counts
/// against the whole text's budget): past any budget [`check_expansion`] sets.
const MAX_NODE_BYTES: u64 = 256 << 20;

/// The size of a YAML value as the parser hands it over, aliases copied out:
/// its scalars' bytes, and one per node. Nothing is kept.
struct Measured(u64);

impl<'de> serde::Deserialize<'de> for Measured {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(Measure)
    }
}

struct Measure;

impl Measure {
    fn sum<E: serde::de::Error>(total: u64, part: u64) -> Result<u64, E> {
        let sum = total.saturating_add(part);
        if sum > MAX_NODE_BYTES {
            return Err(E::custom(OVER_BUDGET));
        }
        Ok(sum)
    }
}

impl<'de> serde::de::Visitor<'de> for Measure {
    type Value = Measured;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Measured, E> {
        Ok(Measured(1))
    }
    fn visit_i64<E>(self, _: i64) -> Result<Measured, E> {
        Ok(Measured(1))
    }
    fn visit_u64<E>(self, _: u64) -> Result<Measured, E> {
        Ok(Measured(1))
    }
    fn visit_f64<E>(self, _: f64) -> Result<Measured, E> {
        Ok(Measured(1))
    }
    fn visit_str<E>(self, v: &str) -> Result<Measured, E> {
        Ok(Measured(1 + v.len() as u64))
    }
    fn visit_bytes<E>(self, v: &[u8]) -> Result<Measured, E> {
        Ok(Measured(1 + v.len() as u64))
    }
    fn visit_unit<E>(self) -> Result<Measured, E> {
        Ok(Measured(1))
    }
    fn visit_none<E>(self) -> Result<Measured, E> {
        Ok(Measured(1))
    }
    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Measured, D::Error> {
        serde::Deserialize::deserialize(d)
    }
    fn visit_newtype_struct<D: serde::Deserializer<'de>>(self, d: D) -> Result<Measured, D::Error> {
        serde::Deserialize::deserialize(d)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Measured, A::Error> {
        let mut total = 1;
        while let Some(Measured(size)) = seq.next_element()? {
            total = Self::sum(total, size)?;
        }
        Ok(Measured(total))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Measured, A::Error> {
        let mut total = 1;
        while let Some((Measured(key), Measured(value))) = map.next_entry()? {
            total = Self::sum(total, key.saturating_add(value))?;
        }
        Ok(Measured(total))
    }
    fn visit_enum<A: serde::de::EnumAccess<'de>>(self, data: A) -> Result<Measured, A::Error> {
        use serde::de::VariantAccess;
        let (Measured(tag), variant) = data.variant::<Measured>()?;
        let Measured(value) = variant.newtype_variant::<Measured>()?;
        Ok(Measured(Self::sum(tag, value)?))
    }
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

    /// An anchored value repeated past twice the text's size is refused before
    /// any parse builds it; a few aliases, `*` in scalars and globs pass.
    #[test]
    fn aliases_copied_out_are_bounded() {
        let bomb = format!("a: &a {}\nl: [{}]\n", "B".repeat(50_000), vec!["*a"; 4_500].join(","));
        assert_eq!(check(&bomb, 1 << 20), Err(Refusal::AliasesTooLarge));
        let mapping: String = (0..2_000).map(|i| format!("  k{i}: v\n")).collect();
        let many = format!("m: &m\n{mapping}l: [{}]\n", vec!["*m"; 500].join(","));
        assert_eq!(check(&many, 1 << 20), Err(Refusal::AliasesTooLarge));
        for fine in [
            "tools: &t [Read, Write]\nallowed: *t\n",
            "description: Use *this* skill for **bold** work\nglobs: \"**/*.ts\"\n",
            "globs: **/*.ts\n",
            "a: *missing\n",
        ] {
            assert_eq!(check(fine, 1 << 20), Ok(()), "{fine}");
        }
        assert_eq!(
            Refusal::AliasesTooLarge.to_string(),
            "repeats anchored values (`*alias`) past twice its size"
        );
    }
}
