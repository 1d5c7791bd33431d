//! Upgrades that keep local edits: a three-way merge per edited file or
//! section, of the installed original (kept in the object store), the user's
//! edit and the new upstream content.
//!
//! [`merge`] is the pure text merge (line-based, through `diffy`): changes to
//! different lines merge cleanly, overlapping ones are conflicts, listed per
//! hunk with both sides and, when asked for, written with conflict markers.
//! CRLF files are merged with their line endings normalised and written back
//! with the user's. Binary or non-UTF-8 content is never merged.
//! [`resolve`] applies it to the edited keys of one package before anything
//! is written; a file edited here that upstream deleted is always a conflict.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;

use super::Roots;
use super::plan::Bytes;
use super::state;
use crate::error::Result;
use crate::packages::lock::LockedPackage;
use crate::packages::store::ObjectStore;

/// Marker length of the internal merge run: long enough that no line of a
/// real file looks like one, so hunks are read back without ambiguity.
const PROBE_MARKER: usize = 41;

/// The lines around each hunk of a merge written with conflict markers.
const YOURS_MARKER: &str = "<<<<<<< yours";
const MIDDLE_MARKER: &str = "=======";
const UPSTREAM_MARKER: &str = ">>>>>>> upstream";

/// Lines of each side shown per conflict hunk.
const SHOWN_LINES: usize = 8;

/// Characters of each side shown per conflict hunk.
const SHOWN_CHARS: usize = 600;

/// The result of merging one text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Merged {
    /// Every change merged; the merged bytes.
    Clean(Vec<u8>),
    /// Some changes overlap: the hunks, and the text with conflict markers.
    Conflicts {
        /// Each overlapping change.
        hunks: Vec<Hunk>,
        /// The merged text with `<<<<<<<`/`=======`/`>>>>>>>` around each hunk.
        marked: Vec<u8>,
    },
    /// Binary or not UTF-8: never merged.
    NotText,
}

/// One overlapping change, each side shortened for showing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Hunk {
    /// Line (from 1) where it starts in the text with conflict markers.
    pub line: u64,
    /// The lines as edited here.
    pub yours: String,
    /// The lines as the new version has them.
    pub upstream: String,
}

/// Why a file or section could not be merged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ConflictKind {
    /// Edits here and upstream change the same lines (see `hunks`).
    Overlapping,
    /// Edited here, removed by the new version.
    DeletedUpstream,
    /// Binary or not UTF-8 on one side.
    NotText,
    /// The installed original is neither in this machine's object store nor
    /// in the package's copy (the lock came from elsewhere, and the file is
    /// not deployed as written), or the edited file is a link or too big to read.
    NoBase,
}

/// A file or section of a package that did not merge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileConflict {
    /// The file or section (its lock key).
    pub key: String,
    /// Why.
    pub kind: ConflictKind,
    /// The overlapping changes (for `overlapping`).
    pub hunks: Vec<Hunk>,
}

/// What merging the edited keys of one package came to.
#[derive(Debug, Default)]
pub struct Resolution {
    /// Bytes to write instead of the new version's, by key.
    pub writes: BTreeMap<String, Vec<u8>>,
    /// Keys merged cleanly.
    pub merged: Vec<String>,
    /// Keys written with conflict markers.
    pub marked: Vec<String>,
    /// Keys that did not merge (nothing of the package is written then).
    pub conflicts: Vec<FileConflict>,
}

/// Merges every key in `edited` of the installed `entry`: the original comes
/// from `store`, the edit from disk, the new content from `upstream` (`None`
/// when the new version drops the key). With `markers`, overlapping changes
/// are written with conflict markers instead of listed as conflicts.
pub fn resolve(
    roots: &Roots,
    store: &ObjectStore,
    entry: &LockedPackage,
    edited: &[String],
    mut upstream: impl FnMut(&str) -> Result<Option<Bytes>>,
    markers: bool,
) -> Result<Resolution> {
    let mut out = Resolution::default();
    for key in edited {
        let conflict = |kind| FileConflict {
            key: key.clone(),
            kind,
            hunks: Vec::new(),
        };
        let Some(theirs) = upstream(key)? else {
            out.conflicts.push(conflict(ConflictKind::DeletedUpstream));
            continue;
        };
        let base = state::installed_original(roots, store, entry, key)?;
        let (Some(base), Some(yours)) = (base, state::current_bytes(roots, key)?) else {
            out.conflicts.push(conflict(ConflictKind::NoBase));
            continue;
        };
        match merge(&base, &yours, &theirs) {
            Merged::Clean(bytes) => {
                out.writes.insert(key.clone(), bytes);
                out.merged.push(key.clone());
            }
            Merged::Conflicts { marked, .. } if markers => {
                out.writes.insert(key.clone(), marked);
                out.marked.push(key.clone());
            }
            Merged::Conflicts { hunks, .. } => out.conflicts.push(FileConflict {
                key: key.clone(),
                kind: ConflictKind::Overlapping,
                hunks,
            }),
            Merged::NotText => out.conflicts.push(conflict(ConflictKind::NotText)),
        }
    }
    Ok(out)
}

/// Three-way merge of `original`, `yours` (edited from it) and `upstream`
/// (the new version of it), line by line, keeping `yours`' line endings.
pub fn merge(original: &[u8], yours: &[u8], upstream: &[u8]) -> Merged {
    let (Some(original), Some(yours), Some(upstream)) = (text(original), text(yours), text(upstream)) else {
        return Merged::NotText;
    };
    let crlf = uses_crlf(yours);
    let final_newline = yours.is_empty() || yours.ends_with('\n');
    let [original, yours, upstream] = [original, yours, upstream].map(|t| {
        let mut t = t.replace("\r\n", "\n");
        if !t.is_empty() && !t.ends_with('\n') {
            t.push('\n'); // a missing last newline is not a change of the last line
        }
        t
    });
    let mut options = diffy::MergeOptions::new();
    options
        .set_conflict_style(diffy::ConflictStyle::Merge)
        .set_conflict_marker_length(PROBE_MARKER);
    let finish = |mut text: String| {
        if !final_newline && text.ends_with('\n') {
            text.pop();
        }
        if crlf {
            text = text.replace('\n', "\r\n");
        }
        text.into_bytes()
    };
    match options.merge(&original, &yours, &upstream) {
        Ok(merged) => Merged::Clean(finish(merged)),
        Err(probed) => {
            let (hunks, marked) = read_conflicts(&probed);
            Merged::Conflicts {
                hunks,
                marked: finish(marked),
            }
        }
    }
}

/// `bytes` as text, unless binary (a NUL byte) or not UTF-8.
fn text(bytes: &[u8]) -> Option<&str> {
    (!bytes.contains(&0)).then(|| std::str::from_utf8(bytes).ok()).flatten()
}

/// Whether most line ends of `text` are CRLF.
fn uses_crlf(text: &str) -> bool {
    let crlf = text.matches("\r\n").count();
    crlf > 0 && crlf * 2 >= text.matches('\n').count()
}

/// The hunks of a merge rendered with [`PROBE_MARKER`]-long markers, and the
/// same text with ordinary 7-character markers labelled for people.
fn read_conflicts(probed: &str) -> (Vec<Hunk>, String) {
    let marker = |c: char| c.to_string().repeat(PROBE_MARKER);
    let (open, middle, close) = (marker('<'), marker('='), marker('>'));
    let mut hunks = Vec::new();
    let mut marked = String::new();
    let mut side: Option<(Vec<&str>, Vec<&str>, bool)> = None;
    let mut line = 1u64;
    for text in probed.split_inclusive('\n') {
        let bare = text.trim_end_matches('\n');
        match &mut side {
            None if bare.starts_with(&open) => side = Some((Vec::new(), Vec::new(), false)),
            None => {
                marked.push_str(text);
                line += 1;
            }
            Some((_, _, upstream)) if bare == middle => *upstream = true,
            Some((yours, upstream, _)) if bare.starts_with(&close) => {
                hunks.push(Hunk {
                    line,
                    yours: shorten(yours),
                    upstream: shorten(upstream),
                });
                marked.push_str(YOURS_MARKER);
                marked.push('\n');
                yours.iter().for_each(|l| marked.push_str(l));
                marked.push_str(MIDDLE_MARKER);
                marked.push('\n');
                upstream.iter().for_each(|l| marked.push_str(l));
                marked.push_str(UPSTREAM_MARKER);
                marked.push('\n');
                line += 3 + (yours.len() + upstream.len()) as u64;
                side = None;
            }
            Some((yours, upstream, in_upstream)) => match in_upstream {
                true => upstream.push(text),
                false => yours.push(text),
            },
        }
    }
    (hunks, marked)
}

/// Whether `text` still holds a hunk as a merge with conflict markers
/// writes it: a `<<<<<<< yours` line, then `=======`, then `>>>>>>> upstream`
/// (line endings LF or CRLF). Such a file is a merge left to resolve by hand,
/// not an edit to keep.
pub fn has_conflict_markers(text: &[u8]) -> bool {
    let markers = [YOURS_MARKER, MIDDLE_MARKER, UPSTREAM_MARKER];
    let mut found = 0;
    for line in text.split(|&b| b == b'\n') {
        if line.strip_suffix(b"\r").unwrap_or(line) == markers[found].as_bytes() {
            found += 1;
            if found == markers.len() {
                return true;
            }
        }
    }
    false
}

/// Lines of one side of a hunk, cut to a few for showing.
fn shorten(lines: &[&str]) -> String {
    let mut out: String = lines.iter().take(SHOWN_LINES).copied().collect();
    if out.chars().count() > SHOWN_CHARS {
        out = out.chars().take(SHOWN_CHARS).collect();
        out.push_str("…\n");
    } else if lines.len() > SHOWN_LINES {
        out.push_str(&format!("… ({} more lines)\n", lines.len() - SHOWN_LINES));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "# Title\n\none\ntwo\nthree\nfour\nfive\nsix\nseven\n";

    fn clean(merged: Merged) -> String {
        match merged {
            Merged::Clean(bytes) => String::from_utf8(bytes).unwrap(),
            other => panic!("expected a clean merge, got {other:?}"),
        }
    }

    #[test]
    fn edits_in_different_hunks_merge() {
        let yours = BASE.replace("one", "ONE (mine)");
        let upstream = BASE.replace("seven", "seven, improved");
        let merged = clean(merge(BASE.as_bytes(), yours.as_bytes(), upstream.as_bytes()));
        assert_eq!(
            merged,
            BASE.replace("one", "ONE (mine)").replace("seven", "seven, improved")
        );
    }

    #[test]
    fn the_same_change_on_both_sides_is_no_conflict() {
        let both = BASE.replace("two", "2");
        assert_eq!(clean(merge(BASE.as_bytes(), both.as_bytes(), both.as_bytes())), both);
        // Upstream unchanged: the edit stays; edit undone: upstream wins.
        let yours = BASE.replace("two", "mine");
        assert_eq!(clean(merge(BASE.as_bytes(), yours.as_bytes(), BASE.as_bytes())), yours);
        assert_eq!(clean(merge(BASE.as_bytes(), BASE.as_bytes(), yours.as_bytes())), yours);
    }

    #[test]
    fn edits_in_the_same_hunk_conflict_with_both_sides() {
        let yours = BASE.replace("three", "three, mine");
        let upstream = BASE.replace("three", "three, theirs");
        let Merged::Conflicts { hunks, marked } = merge(BASE.as_bytes(), yours.as_bytes(), upstream.as_bytes()) else {
            panic!("expected a conflict");
        };
        assert_eq!(
            hunks,
            [Hunk {
                line: 5,
                yours: "three, mine\n".into(),
                upstream: "three, theirs\n".into(),
            }]
        );
        assert_eq!(
            String::from_utf8(marked).unwrap(),
            "# Title\n\none\ntwo\n<<<<<<< yours\nthree, mine\n=======\nthree, theirs\n>>>>>>> upstream\nfour\nfive\nsix\nseven\n"
        );
    }

    #[test]
    fn conflict_markers_are_found_until_resolved() {
        let Merged::Conflicts { marked, .. } = merge(
            BASE.as_bytes(),
            BASE.replace("three", "three, mine").as_bytes(),
            BASE.replace("three", "three, theirs").as_bytes(),
        ) else {
            panic!("the same line changed on both sides is a conflict")
        };
        assert!(has_conflict_markers(&marked));
        let crlf = String::from_utf8(marked.clone()).unwrap().replace('\n', "\r\n");
        assert!(has_conflict_markers(crlf.as_bytes()));
        // Resolved (the markers taken out), or only some of them left: an edit.
        assert!(!has_conflict_markers(BASE.as_bytes()));
        assert!(!has_conflict_markers(b"<<<<<<< yours\nmine\n"));
        assert!(!has_conflict_markers(b"=======\n<<<<<<< yours\n>>>>>>> upstream\n"));
        // Another tool's markers are not a merge aam left.
        assert!(!has_conflict_markers(b"<<<<<<< HEAD\na\n=======\nb\n>>>>>>> main\n"));
    }

    #[test]
    fn crlf_edits_merge_and_keep_crlf() {
        // The user's editor turned every line end into CRLF and changed one line.
        let yours = BASE.replace("one", "mine").replace('\n', "\r\n");
        let upstream = BASE.replace("six", "six, new");
        let merged = clean(merge(BASE.as_bytes(), yours.as_bytes(), upstream.as_bytes()));
        assert_eq!(
            merged,
            BASE.replace("one", "mine")
                .replace("six", "six, new")
                .replace('\n', "\r\n")
        );
        // An LF file stays LF when upstream moves to CRLF.
        let yours = BASE.replace("one", "mine");
        let upstream = BASE.replace("six", "six, new").replace('\n', "\r\n");
        let merged = clean(merge(BASE.as_bytes(), yours.as_bytes(), upstream.as_bytes()));
        assert_eq!(merged, BASE.replace("one", "mine").replace("six", "six, new"));
    }

    #[test]
    fn crlf_conflict_markers_use_the_users_line_ends() {
        let yours = BASE.replace("two", "mine").replace('\n', "\r\n");
        let upstream = BASE.replace("two", "theirs");
        let Merged::Conflicts { marked, .. } = merge(BASE.as_bytes(), yours.as_bytes(), upstream.as_bytes()) else {
            panic!("expected a conflict");
        };
        let marked = String::from_utf8(marked).unwrap();
        assert!(
            marked.contains("<<<<<<< yours\r\nmine\r\n=======\r\ntheirs\r\n>>>>>>> upstream\r\n"),
            "{marked:?}"
        );
        assert!(!marked.replace("\r\n", "").contains('\n'), "{marked:?}");
    }

    #[test]
    fn a_missing_last_newline_is_kept_and_is_no_change() {
        let yours = BASE.replace("one", "mine");
        let yours = yours.trim_end_matches('\n');
        let upstream = BASE.replace("seven", "seven!");
        let merged = clean(merge(BASE.as_bytes(), yours.as_bytes(), upstream.as_bytes()));
        assert_eq!(
            merged,
            BASE.replace("one", "mine")
                .replace("seven", "seven!")
                .trim_end_matches('\n')
        );
    }

    #[test]
    fn binary_or_non_utf8_content_is_never_merged() {
        assert_eq!(merge(b"a\0b\n", b"a\0c\n", b"a\0b\nd\n"), Merged::NotText);
        assert_eq!(merge(b"a\n", b"\xff\xfe\n", b"a\nb\n"), Merged::NotText);
        assert_eq!(merge(b"a\n", b"b\n", b"\xc3\n"), Merged::NotText);
    }

    #[test]
    fn marker_like_lines_in_the_text_do_not_confuse_the_hunks() {
        let base = "<<<<<<< a\nx\n=======\ny\n>>>>>>> b\nz\n";
        let yours = base.replace('z', "mine");
        let upstream = base.replace('z', "theirs");
        let Merged::Conflicts { hunks, .. } = merge(base.as_bytes(), yours.as_bytes(), upstream.as_bytes()) else {
            panic!("expected a conflict");
        };
        assert_eq!(hunks.len(), 1);
        assert_eq!((hunks[0].line, hunks[0].yours.as_str()), (6, "mine\n"));
    }

    #[test]
    fn long_sides_are_shortened() {
        let lines: Vec<String> = (0..20).map(|i| format!("l{i}\n")).collect();
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let shown = shorten(&lines);
        assert!(shown.starts_with("l0\n"));
        assert!(shown.ends_with("… (12 more lines)\n"), "{shown}");
        let wide = "w".repeat(2000);
        assert_eq!(shorten(&[&wide]).chars().count(), SHOWN_CHARS + 2);
    }
}
