//! Ranked search over the index.
//!
//! The query is literal text, never parsed as a query language. Matches fall into
//! tiers, ranked in this order: the qualified `source/name` asked for, exact name,
//! name prefix, name contains, name words, description, body. Inside a tier
//! documents are ranked by BM25 over name words, description and body, then by
//! name, then by id, so the order is total and pages never overlap or skip.
//!
//! Words are compared as English stems: a query word matches the indexed words
//! with its stem, and a stem of four or more characters also matches the longer
//! words it begins (`audit` finds `auditor`, `fuzzing` finds `fuzzer` through the
//! stem `fuzz`); only words with the same stem score. When nothing matches,
//! suggestions are names within a few typos of the query, then the query with
//! each word the index does not know replaced by the closest word it does (from
//! names, descriptions and bodies alike).

use std::collections::{BTreeMap, BTreeSet};

use tantivy::collector::sort_key::{SortBySimilarityScore, SortByStaticFastValue, SortByString, SortKeyComputer};
use tantivy::collector::{Count, TopDocs};
use tantivy::query::{
    AllQuery, BooleanQuery, BoostQuery, ConstScoreQuery, EmptyQuery, FuzzyTermQuery, Occur, Query, TermQuery,
};
use tantivy::schema::{Field, IndexRecordOption, Value};
use tantivy::{DocAddress, Order, Searcher, TantivyDocument, Term};

use super::stem::{Meets, Stemmer, word_prefix};
use super::{ResultKind, SearchIndex, index_error};
use crate::error::Result;
use crate::scan::{ArtifactKind, Platform};

/// How results are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortOrder {
    /// By tier, then BM25, then name.
    Relevance,
    /// By name.
    Name,
    /// Most recently changed first.
    Recent,
}

/// One search.
#[derive(Debug, Clone)]
pub struct SearchRequest<'a> {
    /// Literal query text; empty browses everything.
    pub query: &'a str,
    /// A `source/name` reading of the query to rank first, when it names a source.
    pub qualified: Option<(&'a str, &'a str)>,
    /// Only these kinds (empty: all).
    pub kinds: &'a [ResultKind],
    /// Only these sources (empty: all).
    pub sources: &'a [String],
    /// Only artifacts for this platform, plus platform-neutral ones.
    pub platform: Option<Platform>,
    /// Page size.
    pub limit: usize,
    /// Results to skip.
    pub offset: usize,
    /// Order.
    pub sort: SortOrder,
}

/// One result.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// Artifact id in the catalog.
    pub id: i64,
    /// Source name.
    pub source: String,
    /// Display name.
    pub name: String,
    /// Artifact kind, or package.
    pub kind: ResultKind,
    /// Repository path, or `name@version` for a package.
    pub path: String,
    /// For a package: the artifact types it holds.
    pub artifact_types: Vec<ArtifactKind>,
    /// One-line description.
    pub description: Option<String>,
    /// Tier base plus BM25 for relevance order; 0 otherwise.
    pub score: f32,
}

/// A page of results.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchResults {
    /// The page.
    pub hits: Vec<Hit>,
    /// Every match, not just this page.
    pub total: u64,
    /// Names close to the query, when nothing matched.
    pub suggestions: Vec<String>,
}

/// Score added per tier above the lowest, so tiers never interleave.
const TIER_STEP: f32 = 1000.0;

/// Most suggestions returned.
const MAX_SUGGESTIONS: usize = 3;

impl SearchIndex {
    /// Runs one search.
    pub fn search(&self, request: &SearchRequest<'_>) -> Result<SearchResults> {
        super::check_query(request.query)?;
        let reader = self.reader()?;
        let searcher = reader.searcher();
        let plan = Plan::new(self, &searcher, request)?;
        let err = |e| index_error(&self.dir, e);
        let filtered = |q: Box<dyn Query>| plan.with_filters(q);
        let union: Box<dyn Query> = if plan.tiers.is_empty() {
            filtered(Box::new(AllQuery))
        } else {
            let any = BooleanQuery::new(plan.tiers.iter().map(|t| (Occur::Should, t.box_clone())).collect());
            filtered(Box::new(any))
        };
        let total = searcher.search(union.as_ref(), &Count).map_err(err)? as u64;
        let addresses: Vec<(f32, DocAddress)> = match (request.sort, plan.tiers.is_empty()) {
            (SortOrder::Relevance, false) => self.ranked(&searcher, &plan, request)?,
            (SortOrder::Recent, _) => {
                let by = (
                    (SortByStaticFastValue::<i64>::for_field("changed_seq"), Order::Desc),
                    (
                        (SortByString::for_field("name_lc"), Order::Asc),
                        (SortByStaticFastValue::<u64>::for_field("id"), Order::Asc),
                    ),
                );
                self.ordered(&searcher, union.as_ref(), by, request)?
            }
            _ => {
                let by = (
                    (SortByString::for_field("name_lc"), Order::Asc),
                    (SortByStaticFastValue::<u64>::for_field("id"), Order::Asc),
                );
                self.ordered(&searcher, union.as_ref(), by, request)?
            }
        };
        let mut hits = Vec::with_capacity(addresses.len());
        for (score, address) in addresses {
            let doc: TantivyDocument = searcher.doc(address).map_err(err)?;
            hits.push(self.hit(&doc, score));
        }
        let suggestions = if total == 0 && !plan.query_lc.is_empty() {
            self.suggest(&searcher, &plan)?
        } else {
            Vec::new()
        };
        Ok(SearchResults {
            hits,
            total,
            suggestions,
        })
    }

    /// One page of `query` in the order `by` (no relevance score).
    fn ordered<K>(
        &self,
        searcher: &Searcher,
        query: &dyn Query,
        by: K,
        request: &SearchRequest<'_>,
    ) -> Result<Vec<(f32, DocAddress)>>
    where
        K: SortKeyComputer + Send + 'static,
        K::SortKey: 'static + Clone + Send + Sync + std::fmt::Debug,
    {
        let top = TopDocs::with_limit(request.limit)
            .and_offset(request.offset)
            .order_by(by);
        let found = searcher.search(query, &top).map_err(|e| index_error(&self.dir, e))?;
        Ok(found.into_iter().map(|(_, address)| (0.0, address)).collect())
    }

    /// Walks the tiers in order, skipping `offset` matches and taking `limit`.
    fn ranked(&self, searcher: &Searcher, plan: &Plan, request: &SearchRequest<'_>) -> Result<Vec<(f32, DocAddress)>> {
        let err = |e| index_error(&self.dir, e);
        let mut skip = request.offset;
        let mut want = request.limit;
        let mut out = Vec::new();
        for (tier, filter) in plan.tiers.iter().enumerate() {
            if want == 0 {
                break;
            }
            let mut clauses: Vec<(Occur, Box<dyn Query>)> =
                vec![(Occur::Must, Box::new(ConstScoreQuery::new(filter.box_clone(), 0.0)))];
            clauses.extend(
                plan.tiers[..tier]
                    .iter()
                    .map(|higher| (Occur::MustNot, higher.box_clone())),
            );
            if let Some(scoring) = &plan.scoring {
                clauses.push((Occur::Should, scoring.box_clone()));
            }
            let query = plan.with_filters(Box::new(BooleanQuery::new(clauses)));
            if skip > 0 {
                let count = searcher.search(query.as_ref(), &Count).map_err(err)?;
                if count <= skip {
                    skip -= count;
                    continue;
                }
            }
            let by = (
                (SortBySimilarityScore, Order::Desc),
                (
                    (SortByString::for_field("name_lc"), Order::Asc),
                    (SortByStaticFastValue::<u64>::for_field("id"), Order::Asc),
                ),
            );
            let top = TopDocs::with_limit(want).and_offset(skip).order_by(by);
            let found = searcher.search(query.as_ref(), &top).map_err(err)?;
            skip = 0;
            want -= found.len();
            let base = (plan.tiers.len() - 1 - tier) as f32 * TIER_STEP;
            out.extend(found.into_iter().map(|((score, _), address)| (base + score, address)));
        }
        Ok(out)
    }

    /// Up to three names within a few typos of the query.
    fn suggest(&self, searcher: &Searcher, plan: &Plan) -> Result<Vec<String>> {
        let f = self.fields;
        let distance = |text: &str| if text.chars().count() <= 4 { 1 } else { 2 };
        let mut fuzzy: Vec<(Occur, Box<dyn Query>)> = vec![(
            Occur::Should,
            Box::new(FuzzyTermQuery::new(
                Term::from_field_text(f.name_lc, &plan.query_lc),
                distance(&plan.query_lc),
                true,
            )),
        )];
        for word in &plan.words {
            fuzzy.push((
                Occur::Should,
                Box::new(FuzzyTermQuery::new(
                    Term::from_field_text(f.name_words, &word.text),
                    distance(&word.text),
                    true,
                )),
            ));
        }
        let query = plan.with_filters(Box::new(BooleanQuery::new(fuzzy)));
        let found = searcher
            .search(query.as_ref(), &TopDocs::with_limit(50).order_by_score())
            .map_err(|e| index_error(&self.dir, e))?;
        let mut names: Vec<(usize, String)> = Vec::new();
        for (_, address) in found {
            let doc: TantivyDocument = searcher.doc(address).map_err(|e| index_error(&self.dir, e))?;
            let name = text(&doc, f.name);
            let distance = strsim::osa_distance(&plan.query_lc, &name.to_lowercase());
            names.push((distance, name));
        }
        names.sort();
        names.dedup_by(|a, b| a.1 == b.1);
        let mut suggestions: Vec<String> = names.into_iter().take(MAX_SUGGESTIONS).map(|(_, name)| name).collect();
        let phrase = plan.words.len() > 1;
        if (phrase || suggestions.len() < MAX_SUGGESTIONS)
            && let Some(corrected) = self.corrected_query(searcher, plan)?
        {
            // `kubernetes helper` adds nothing next to the name `kubernetes-helper`.
            let same_words = |name: &String| query_words(self, &name.to_lowercase()).ok().as_ref() == Some(&corrected);
            if !suggestions.iter().any(same_words) {
                // A phrase is meant whole: `write tests` for `write tetss` goes
                // before names one of its words resembles (`test-automator`).
                match phrase {
                    true => suggestions.insert(0, corrected.join(" ")),
                    false => suggestions.push(corrected.join(" ")),
                }
            }
        }
        suggestions.truncate(MAX_SUGGESTIONS);
        Ok(suggestions)
    }

    /// The query's words with each one the index does not know replaced by the
    /// closest word it does; `None` when every word is known or one has no close word.
    fn corrected_query(&self, searcher: &Searcher, plan: &Plan) -> Result<Option<Vec<String>>> {
        let mut corrected = Vec::with_capacity(plan.words.len());
        let mut changed = false;
        for word in plan.words.iter().map(|w| &w.text) {
            if self.is_indexed(searcher, word)? {
                corrected.push(word.clone());
                continue;
            }
            match self.closest_word(searcher, word)? {
                Some(close) => {
                    corrected.push(close);
                    changed = true;
                }
                None => return Ok(None),
            }
        }
        Ok(changed.then_some(corrected))
    }

    /// Whether a name, description or body holds `word` as written.
    fn is_indexed(&self, searcher: &Searcher, word: &str) -> Result<bool> {
        let err = |e| index_error(&self.dir, e);
        for field in self.fields.words() {
            for segment in searcher.segment_readers() {
                let terms = segment.inverted_index(field).map_err(err)?;
                if terms
                    .terms()
                    .get(word.as_bytes())
                    .map_err(|e| index_error(&self.dir, e))?
                    .is_some()
                {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    /// The indexed word closest to `word`: fewest edits (one for up to four
    /// letters, two up to eight, three beyond), then most uses (documents per
    /// field), then by text. Candidates come from the term dictionaries of names,
    /// descriptions and bodies through a Levenshtein automaton, so no dictionary
    /// is scanned whole.
    fn closest_word(&self, searcher: &Searcher, word: &str) -> Result<Option<String>> {
        let err = |e| index_error(&self.dir, e);
        let length = word.chars().count();
        let (automaton_distance, prefix, allowed) = match length {
            0..=2 => return Ok(None),
            3..=4 => (1, false, 1),
            5..=8 => (2, false, 2),
            // Long words: terms that begin within two edits, at most three edits in all
            // (`playwrite` begins like `playwright`).
            _ => (2, true, 3),
        };
        let mut found: BTreeMap<String, u32> = BTreeMap::new();
        for field in self.fields.words() {
            let term = Term::from_field_text(field, word);
            let query = if prefix {
                FuzzyTermQuery::new_prefix(term, automaton_distance, true)
            } else {
                FuzzyTermQuery::new(term, automaton_distance, true)
            };
            let automaton = query.automaton().map_err(err)?;
            for segment in searcher.segment_readers() {
                let inverted = segment.inverted_index(field).map_err(err)?;
                let mut stream = inverted
                    .terms()
                    .search(&automaton)
                    .into_stream()
                    .map_err(|e| index_error(&self.dir, e))?;
                while stream.advance() {
                    let Ok(text) = std::str::from_utf8(stream.key()) else {
                        continue;
                    };
                    *found.entry(text.to_string()).or_default() += stream.value().doc_freq;
                }
            }
        }
        let best = found
            .into_iter()
            .map(|(text, documents)| (strsim::osa_distance(word, &text), std::cmp::Reverse(documents), text))
            .filter(|(distance, _, _)| *distance <= allowed)
            .min();
        Ok(best.map(|(_, _, text)| text))
    }

    fn hit(&self, doc: &TantivyDocument, score: f32) -> Hit {
        let f = self.fields;
        Hit {
            id: doc
                .get_first(f.id)
                .or(doc.get_first(f.package_id))
                .and_then(|v| v.as_u64())
                .unwrap_or_default() as i64,
            source: text(doc, f.source),
            name: text(doc, f.name),
            kind: ResultKind::parse(&text(doc, f.kind)).unwrap_or(ResultKind::Instruction),
            path: text(doc, f.path),
            artifact_types: text(doc, f.artifact_types)
                .split(',')
                .filter_map(ArtifactKind::parse)
                .collect(),
            description: doc
                .get_first(f.description)
                .and_then(|v| v.as_str())
                .map(str::to_string),
            score,
        }
    }
}

fn text(doc: &TantivyDocument, field: tantivy::schema::Field) -> String {
    doc.get_first(field)
        .and_then(|v| v.as_str())
        .unwrap_or_default()
        .to_string()
}

/// The queries one request turns into.
struct Plan {
    query_lc: String,
    /// The query's words.
    words: Vec<QueryWord>,
    /// Tier filters, best first; empty for an empty query.
    tiers: Vec<Box<dyn Query>>,
    /// BM25 over name words, description and body.
    scoring: Option<Box<dyn Query>>,
    filters: Vec<Box<dyn Query>>,
}

impl Plan {
    fn new(index: &SearchIndex, searcher: &Searcher, request: &SearchRequest<'_>) -> Result<Self> {
        let f = index.fields;
        let query_lc = request.query.trim().to_lowercase();
        let mut stemmer = Stemmer::default();
        // Names are matched as written (`c++ guide`), words spelled out.
        let words: Vec<QueryWord> = without_stop_words(query_words(index, &spelled_out(&query_lc))?)
            .into_iter()
            .map(|text| QueryWord {
                stem: stemmer.stem(&text).to_string(),
                text,
            })
            .collect();
        // The indexed words each query word meets, by field.
        let mut forms: BTreeMap<(u32, usize), Forms> = BTreeMap::new();
        for field in f.words() {
            for (i, word) in words.iter().enumerate() {
                forms.insert(
                    (field.field_id(), i),
                    Forms::of(index, searcher, &mut stemmer, field, &word.stem)?,
                );
            }
        }
        let term = |field, text: &str| -> Box<dyn Query> {
            Box::new(TermQuery::new(
                Term::from_field_text(field, text),
                IndexRecordOption::Basic,
            ))
        };
        // Terms of `field` that begin with `text`, from the range of its dictionary they share.
        let starting_with = |field, text: &str| -> Box<dyn Query> {
            Box::new(FuzzyTermQuery::new_prefix(Term::from_field_text(field, text), 0, false))
        };
        let all_of = |field, items: &[String]| -> Box<dyn Query> {
            Box::new(BooleanQuery::new(
                items.iter().map(|w| (Occur::Must, term(field, w))).collect(),
            ))
        };
        // Every word, through any indexed word it meets.
        let all_words = |field: Field| -> Box<dyn Query> {
            Box::new(BooleanQuery::new(
                (0..words.len())
                    .map(|i| -> (Occur, Box<dyn Query>) {
                        let met = &forms[&(field.field_id(), i)];
                        if met.is_empty() {
                            return (Occur::Must, Box::new(EmptyQuery));
                        }
                        let any = met.all().map(|w| (Occur::Should, term(field, w))).collect();
                        (Occur::Must, Box::new(BooleanQuery::new(any)))
                    })
                    .collect(),
            ))
        };
        let mut tiers: Vec<Box<dyn Query>> = Vec::new();
        if !query_lc.is_empty() {
            if let Some((source, name)) = request.qualified {
                tiers.push(Box::new(BooleanQuery::new(vec![
                    (Occur::Must, term(f.source, source)),
                    (Occur::Must, term(f.name_lc, &name.to_lowercase())),
                ])));
            }
            tiers.push(term(f.name_lc, &query_lc));
            let chars: Vec<char> = query_lc.chars().collect();
            // Names that begin with the query.
            tiers.push(starting_with(f.name_lc, &query_lc));
            // Names that hold the query: all of its 3-grams, or for two letters a
            // 3-gram that begins with them (a name's last two letters begin the
            // 3-gram its end marker closes).
            if chars.len() == 2 {
                tiers.push(starting_with(f.name_ngram, &query_lc));
            } else if chars.len() > 2 {
                let grams: Vec<String> = chars.windows(3).map(|w| w.iter().collect()).collect();
                tiers.push(all_of(f.name_ngram, &grams));
            }
            if !words.is_empty() {
                tiers.push(all_words(f.name_words));
                tiers.push(all_words(f.description));
                tiers.push(all_words(f.body));
            }
        }
        let scoring = (!words.is_empty()).then(|| -> Box<dyn Query> {
            let mut should: Vec<(Occur, Box<dyn Query>)> = Vec::new();
            for i in 0..words.len() {
                for (field, boost) in [(f.name_words, 3.0), (f.description, 2.0), (f.body, 1.0)] {
                    // Only words of the same stem score: a longer word decides the
                    // tier, not the rank inside it.
                    for word in &forms[&(field.field_id(), i)].same_stem {
                        let scored = TermQuery::new(Term::from_field_text(field, word), IndexRecordOption::WithFreqs);
                        should.push((Occur::Should, Box::new(BoostQuery::new(Box::new(scored), boost))));
                    }
                }
            }
            Box::new(BooleanQuery::new(should))
        });
        let mut filters: Vec<Box<dyn Query>> = Vec::new();
        let any_of = |field, values: Vec<&str>| -> Box<dyn Query> {
            Box::new(BooleanQuery::new(
                values.into_iter().map(|v| (Occur::Should, term(field, v))).collect(),
            ))
        };
        if !request.kinds.is_empty() {
            filters.push(any_of(f.kind, request.kinds.iter().map(|k| k.as_str()).collect()));
        }
        if !request.sources.is_empty() {
            filters.push(any_of(f.source, request.sources.iter().map(String::as_str).collect()));
        }
        if let Some(platform) = request.platform {
            filters.push(any_of(f.platform, vec![platform.as_str(), ""]));
        }
        Ok(Self {
            query_lc,
            words,
            tiers,
            scoring,
            filters,
        })
    }

    /// `query` restricted by the request's filters (which never add to the score).
    fn with_filters(&self, query: Box<dyn Query>) -> Box<dyn Query> {
        if self.filters.is_empty() {
            return query;
        }
        let mut clauses = vec![(Occur::Must, query)];
        for filter in &self.filters {
            clauses.push((
                Occur::Must,
                Box::new(ConstScoreQuery::new(filter.box_clone(), 0.0)) as Box<dyn Query>,
            ));
        }
        Box::new(BooleanQuery::new(clauses))
    }
}

/// One word of the query.
struct QueryWord {
    /// As written, lowercase, as the index holds words.
    text: String,
    /// Its English stem.
    stem: String,
}

/// The indexed words of one field that one query word meets.
#[derive(Default)]
struct Forms {
    same_stem: BTreeSet<String>,
    longer_stem: BTreeSet<String>,
}

impl Forms {
    /// Reads the words of `field` that meet `stem` from each segment's term
    /// dictionary, over the range they all begin with.
    fn of(index: &SearchIndex, searcher: &Searcher, stemmer: &mut Stemmer, field: Field, stem: &str) -> Result<Self> {
        let err = |e| index_error(&index.dir, e);
        let prefix = word_prefix(stem).as_bytes();
        let mut forms = Self::default();
        for segment in searcher.segment_readers() {
            let inverted = segment.inverted_index(field).map_err(err)?;
            let terms = inverted.terms().range().ge(prefix);
            let mut stream = terms.into_stream().map_err(|e| index_error(&index.dir, e))?;
            while stream.advance() && stream.key().starts_with(prefix) {
                let Ok(word) = std::str::from_utf8(stream.key()) else {
                    continue;
                };
                match stemmer.meets(stem, word) {
                    Some(Meets::SameStem) => forms.same_stem.insert(word.to_string()),
                    Some(Meets::LongerStem) => forms.longer_stem.insert(word.to_string()),
                    None => false,
                };
            }
        }
        Ok(forms)
    }

    /// Every word met, of either kind.
    fn all(&self) -> impl Iterator<Item = &String> {
        self.same_stem.iter().chain(&self.longer_stem)
    }

    fn is_empty(&self) -> bool {
        self.same_stem.is_empty() && self.longer_stem.is_empty()
    }
}

/// Words a question or request is phrased with that say nothing of what is
/// wanted: `how do I write a commit message` asks for `write commit message`.
/// Every word must match, so each of these would keep out whatever does not
/// happen to hold it.
const STOP_WORDS: &[&str] = &[
    "a", "about", "an", "and", "any", "are", "at", "be", "by", "can", "could", "do", "does", "for", "from", "how", "i",
    "in", "into", "is", "it", "its", "me", "my", "need", "of", "on", "or", "our", "please", "should", "some", "that",
    "the", "these", "this", "those", "to", "want", "we", "what", "which", "with", "would", "you", "your",
];

/// Languages whose names the tokenizer would cut to one letter (`c#` and
/// `c++` both to `c`), with the word names and descriptions spell them with.
const SPELLED_OUT: &[(&str, &str)] = &[("c#", "csharp"), ("c++", "cpp"), ("f#", "fsharp")];

/// `query` (lowercase) with each word of [`SPELLED_OUT`] spelled out, so
/// `c#` finds `csharp-pro` and not every artifact that mentions C.
fn spelled_out(query: &str) -> String {
    if !query.contains(['#', '+']) {
        return query.to_string();
    }
    let words: Vec<&str> = query
        .split_whitespace()
        .map(|word| {
            SPELLED_OUT
                .iter()
                .find(|(symbol, _)| *symbol == word)
                .map_or(word, |(_, spelled)| *spelled)
        })
        .collect();
    words.join(" ")
}

/// `words` without [`STOP_WORDS`], unless that leaves none (a search for `the`).
fn without_stop_words(words: Vec<String>) -> Vec<String> {
    let meaningful: Vec<String> = words
        .iter()
        .filter(|w| !STOP_WORDS.iter().any(|stop| stop == w))
        .cloned()
        .collect();
    if meaningful.is_empty() { words } else { meaningful }
}

/// The query's words, lowercase and as written, each once.
fn query_words(index: &SearchIndex, text: &str) -> Result<Vec<String>> {
    let mut analyzer = index
        .index
        .tokenizer_for_field(index.fields.body)
        .map_err(|e| index_error(&index.dir, e))?;
    let mut stream = analyzer.token_stream(text);
    let mut words = Vec::new();
    while let Some(token) = stream.next() {
        if !words.contains(&token.text) {
            words.push(token.text.clone());
        }
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::spelled_out;

    #[test]
    fn languages_written_with_symbols_are_spelled_out() {
        assert_eq!(spelled_out("c#"), "csharp");
        assert_eq!(spelled_out("c++ review"), "cpp review");
        assert_eq!(spelled_out("f#  tests"), "fsharp tests");
        // Only whole words, and text without symbols stays as written.
        assert_eq!(spelled_out("c#x a+b"), "c#x a+b");
        assert_eq!(spelled_out("code  review "), "code  review ");
    }
}
