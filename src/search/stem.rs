//! English word forms, on the query side only. The index holds every word once,
//! lowercase and as written; a query word is stemmed (Snowball English,
//! tantivy's own `frostem`) and meets the indexed words whose stem is the same
//! (`auditing` meets `audits`) or, for a stem of [`MIN_PREFIX_STEM`] characters
//! or more, begins with it (`audit` meets `auditor`, `fuzzing` meets `fuzzer`
//! through the stem `fuzz`).
//!
//! Indexed words are looked up by a range of the term dictionary, never by a
//! scan of it: a word's stem differs from the word in its last letter at most
//! (`happy` → `happi`, `hoping` → `hope`), so every word whose stem begins with
//! a stem begins with that stem less its last letter ([`word_prefix`]).

use std::collections::HashMap;

/// Shortest stem that also meets the longer words it begins.
pub const MIN_PREFIX_STEM: usize = 4;

/// How an indexed word meets a query word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Meets {
    /// Same stem: the word scores.
    SameStem,
    /// Its stem begins with the query's (long enough) stem: the word matches
    /// but does not score.
    LongerStem,
}

/// Stems words, remembering each one for the rest of a search: the same
/// indexed word comes up in every field and segment looked at.
pub struct Stemmer {
    stemmer: frostem::Stemmer,
    stems: HashMap<String, String>,
}

impl Default for Stemmer {
    fn default() -> Self {
        Self {
            stemmer: frostem::Stemmer::new(frostem::Algorithm::English),
            stems: HashMap::new(),
        }
    }
}

impl Stemmer {
    /// The English stem of a lowercase `word`.
    pub fn stem(&mut self, word: &str) -> &str {
        if !self.stems.contains_key(word) {
            let stem = self.stemmer.stem(word).into_owned();
            self.stems.insert(word.to_string(), stem);
        }
        &self.stems[word]
    }

    /// How the indexed `word` meets a query word of stem `stem`, if at all.
    pub fn meets(&mut self, stem: &str, word: &str) -> Option<Meets> {
        let its = self.stem(word);
        if its == stem {
            Some(Meets::SameStem)
        } else if stem.chars().count() >= MIN_PREFIX_STEM && its.starts_with(stem) {
            Some(Meets::LongerStem)
        } else {
            None
        }
    }
}

/// The beginning shared by every word [`Stemmer::meets`] with `stem`: the stem
/// less its last letter, or the whole of a stem of two letters or fewer (which
/// only ever stand for themselves), so a short query never reads most of the
/// dictionary.
pub fn word_prefix(stem: &str) -> &str {
    match stem.char_indices().nth(2) {
        Some(_) => stem.char_indices().last().map_or(stem, |(last, _)| &stem[..last]),
        None => stem,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_forms_meet_through_their_stem() {
        let mut stemmer = Stemmer::default();
        let audit = stemmer.stem("auditing").to_string();
        assert_eq!(audit, "audit");
        assert_eq!(stemmer.meets(&audit, "audits"), Some(Meets::SameStem));
        assert_eq!(stemmer.meets(&audit, "auditor"), Some(Meets::LongerStem));
        assert_eq!(stemmer.meets(&audit, "audio"), None);
        let fuzz = stemmer.stem("fuzzing").to_string();
        assert_eq!(stemmer.meets(&fuzz, "fuzzer"), Some(Meets::LongerStem));
        // A short stem meets only its own forms.
        let run = stemmer.stem("running").to_string();
        assert_eq!(stemmer.meets(&run, "runs"), Some(Meets::SameStem));
        assert_eq!(stemmer.meets(&run, "runtime"), None);
    }

    #[test]
    fn every_word_that_meets_a_stem_begins_with_its_word_prefix() {
        let mut stemmer = Stemmer::default();
        let words = [
            "happy",
            "happiness",
            "happily",
            "hoping",
            "hope",
            "hopes",
            "flies",
            "fly",
            "possibly",
            "possible",
            "relational",
            "relate",
            "generating",
            "generator",
            "auditors",
            "audit",
            "valency",
            "crying",
            "cries",
            "organization",
            "organize",
            "ran",
            "runs",
            "go",
            "goes",
            "a",
            "is",
        ];
        for query in words {
            let stem = stemmer.stem(query).to_string();
            let prefix = word_prefix(&stem).to_string();
            for word in words {
                if stemmer.meets(&stem, word).is_some() {
                    assert!(
                        word.starts_with(&prefix),
                        "{word} meets {query} ({stem}) but lies outside {prefix}"
                    );
                }
            }
        }
        assert_eq!(word_prefix("happi"), "happ");
        assert_eq!(word_prefix("go"), "go");
        assert_eq!(word_prefix("über"), "übe");
    }
}
