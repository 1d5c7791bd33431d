//! English stemming for the index, with each tokenizer remembering the stems it
//! computed: artifact bodies repeat a small vocabulary, and the Snowball algorithm
//! costs far more than a hash lookup (it was a tenth of all the CPU a
//! `source add` spent). The stems are tantivy's own (`frostem`, English), so the
//! index and the query side agree with a plain `Stemmer`.

use std::collections::HashMap;

use tantivy::tokenizer::{Token, TokenFilter, TokenStream, Tokenizer};

/// Remembered stems by word. Words come from untrusted repositories: foldhash is
/// seeded per process, so no text can be crafted ahead of time to collide, and
/// it hashes short words several times faster than the standard hasher.
type Stems = HashMap<String, String, foldhash::fast::RandomState>;

/// How many distinct words one tokenizer remembers before it starts afresh, so
/// memory stays bounded (a few MB) on any text.
const MAX_REMEMBERED: usize = 50_000;

/// A token filter stemming lowercase English words, with a cache per tokenizer.
#[derive(Clone, Default)]
pub struct CachedStemmer;

impl TokenFilter for CachedStemmer {
    type Tokenizer<T: Tokenizer> = CachedStemmerFilter<T>;

    fn transform<T: Tokenizer>(self, tokenizer: T) -> CachedStemmerFilter<T> {
        CachedStemmerFilter {
            inner: tokenizer,
            stems: Stems::default(),
        }
    }
}

/// The tokenizer [`CachedStemmer`] makes; each clone (one per indexing thread)
/// has its own cache.
#[derive(Clone)]
pub struct CachedStemmerFilter<T> {
    inner: T,
    stems: Stems,
}

impl<T: Tokenizer> Tokenizer for CachedStemmerFilter<T> {
    type TokenStream<'a> = CachedStemmerStream<'a, T::TokenStream<'a>>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Self::TokenStream<'a> {
        if self.stems.len() > MAX_REMEMBERED {
            self.stems.clear();
        }
        CachedStemmerStream {
            tail: self.inner.token_stream(text),
            stemmer: frostem::Stemmer::new(frostem::Algorithm::English),
            stems: &mut self.stems,
        }
    }
}

/// The token stream of [`CachedStemmerFilter`].
pub struct CachedStemmerStream<'a, T> {
    tail: T,
    stemmer: frostem::Stemmer,
    stems: &'a mut Stems,
}

impl<T: TokenStream> TokenStream for CachedStemmerStream<'_, T> {
    fn advance(&mut self) -> bool {
        if !self.tail.advance() {
            return false;
        }
        let token = self.tail.token_mut();
        match self.stems.get(&token.text) {
            Some(stem) => {
                token.text.clear();
                token.text.push_str(stem);
            }
            None => {
                let stem = self.stemmer.stem(&token.text).into_owned();
                let word = std::mem::replace(&mut token.text, stem.clone());
                self.stems.insert(word, stem);
            }
        }
        true
    }

    fn token(&self) -> &Token {
        self.tail.token()
    }

    fn token_mut(&mut self) -> &mut Token {
        self.tail.token_mut()
    }
}

#[cfg(test)]
mod tests {
    use tantivy::tokenizer::{LowerCaser, SimpleTokenizer, Stemmer, TextAnalyzer};

    use super::*;

    fn tokens(analyzer: &mut TextAnalyzer, text: &str) -> Vec<String> {
        let mut stream = analyzer.token_stream(text);
        let mut out = Vec::new();
        while stream.advance() {
            out.push(stream.token().text.clone());
        }
        out
    }

    #[test]
    fn stems_as_tantivys_stemmer_does_whether_remembered_or_not() {
        let text = "Auditing auditors audit the fuzzers; fuzzing and running runs. Auditing again, running again.";
        let mut cached = TextAnalyzer::builder(SimpleTokenizer::default())
            .filter(LowerCaser)
            .filter(CachedStemmer)
            .build();
        let mut plain = TextAnalyzer::builder(SimpleTokenizer::default())
            .filter(LowerCaser)
            .filter(Stemmer::default())
            .build();
        let expected = tokens(&mut plain, text);
        assert!(expected.contains(&"audit".to_string()) && expected.contains(&"fuzz".to_string()));
        // The second pass answers every word from the cache.
        assert_eq!(tokens(&mut cached, text), expected);
        assert_eq!(tokens(&mut cached, text), expected);
    }

    #[test]
    fn the_cache_stays_bounded() {
        let mut filter = CachedStemmer.transform(SimpleTokenizer::default());
        let words: Vec<String> = (0..MAX_REMEMBERED + 10).map(|i| format!("w{i}x")).collect();
        let text = words.join(" ");
        let mut stream = filter.token_stream(&text);
        while stream.advance() {}
        assert_eq!(filter.stems.len(), MAX_REMEMBERED + 10);
        // The next text starts afresh and still stems right.
        let mut stream = filter.token_stream("running");
        assert!(stream.advance());
        assert_eq!(stream.token().text, "run");
        assert_eq!(filter.stems.len(), 1);
    }
}
