//! One folder of a commit: a tree object's bytes, parsed once into the position of
//! each entry, so names are found without building a map of the folder.
//!
//! An update looks up a handful of names in folders that can hold 100,000 entries;
//! a map of such a folder (one `String` per entry) costs far more than the few
//! lookups. Git keeps a tree's entries sorted (trees compare as if their name ended
//! in `/`), so a name is found by binary search. A tree that breaks that order (a
//! malformed one some tools wrote) is searched entry by entry instead, so every
//! tree answers as a map of its entries would: the last entry of a name wins, and
//! names are compared as the lossy UTF-8 the rest of aam uses for paths.
//! Submodule entries name nothing. This module reads bytes; `git` reads objects.

use gix::bstr::ByteSlice;
use gix::objs::tree::{EntryKind, EntryMode, name_order};

use super::git::{FileMode, Oid, PathTarget};

/// The entries of one tree object, in stored order.
pub struct Folder {
    data: Vec<u8>,
    entries: Vec<Entry>,
    hash_len: usize,
    /// Entries are strictly in git order, so binary search finds any name.
    sorted: bool,
}

/// Where one entry's name lies in the tree's bytes (its id follows the name's NUL).
#[derive(Clone, Copy)]
struct Entry {
    name_start: u32,
    name_end: u32,
    mode: EntryMode,
}

/// The bytes are not a well-formed tree object.
#[derive(Debug, thiserror::Error)]
#[error("malformed tree object")]
pub struct MalformedTree;

impl Folder {
    /// Parses the bytes of a tree object with gix's parser, keeping where each
    /// entry's name lies.
    pub fn parse(data: Vec<u8>, hash: gix::hash::Kind) -> Result<Self, MalformedTree> {
        let hash_len = hash.len_in_bytes();
        if u32::try_from(data.len()).is_err() {
            return Err(MalformedTree);
        }
        let base = data.as_ptr() as usize;
        let mut entries: Vec<Entry> = Vec::new();
        let mut sorted = true;
        for parsed in gix::objs::TreeRefIter::from_bytes(&data, hash) {
            let parsed = parsed.map_err(|_| MalformedTree)?;
            if parsed.oid.as_bytes().len() != hash_len {
                return Err(MalformedTree);
            }
            // The name is a slice of `data`; offsets fit as the tree is shorter than u32::MAX.
            let name_start = parsed.filename.as_ptr() as usize - base;
            let entry = Entry {
                name_start: name_start as u32,
                name_end: (name_start + parsed.filename.len()) as u32,
                mode: parsed.mode,
            };
            if let Some(previous) = entries.last() {
                sorted &= name_order(
                    name_of(&data, previous),
                    previous.mode.is_tree(),
                    parsed.filename,
                    entry.mode.is_tree(),
                )
                .is_lt();
            }
            entries.push(entry);
        }
        Ok(Self {
            data,
            entries,
            hash_len,
            sorted,
        })
    }

    /// How many entries the tree holds (submodules included).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the tree holds no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// What the entry called `name` names: a folder or a file (`None`: no such
    /// entry, or a submodule).
    pub fn get(&self, name: &str) -> Option<PathTarget> {
        if name.is_empty() || name.contains('/') {
            // No entry has such a name (and `a/` would compare equal to the folder `a`).
            return None;
        }
        if !self.sorted || name.contains(char::REPLACEMENT_CHARACTER) {
            // The last entry of the name, as a map filled in order would keep.
            return self
                .entries
                .iter()
                .rev()
                .filter(|e| self.name(e).to_str_lossy() == name)
                .find_map(|e| self.target(e));
        }
        // A folder sorts after a file of the same name, so it is the later entry.
        [true, false].into_iter().find_map(|is_tree| {
            let at = self
                .entries
                .binary_search_by(|e| name_order(self.name(e), e.mode.is_tree(), name.as_bytes(), is_tree))
                .ok()?;
            self.target(&self.entries[at])
        })
    }

    /// Whether some folder or file entry (not a submodule) has a name that `matches`.
    pub fn any_name(&self, mut matches: impl FnMut(&[u8]) -> bool) -> bool {
        self.entries
            .iter()
            .any(|e| e.mode.kind() != EntryKind::Commit && matches(self.name(e)))
    }

    fn name(&self, entry: &Entry) -> &[u8] {
        name_of(&self.data, entry)
    }

    fn target(&self, entry: &Entry) -> Option<PathTarget> {
        let start = entry.name_end as usize + 1;
        let oid = Oid::try_from(&self.data[start..start + self.hash_len]).ok()?;
        if entry.mode.is_tree() {
            Some(PathTarget::Tree(oid))
        } else {
            Some(PathTarget::File(FileMode::from_mode(entry.mode)?, oid))
        }
    }
}

/// One entry as a diff walks it.
#[derive(Clone, Copy)]
pub struct Listed<'f> {
    /// The entry's name as stored.
    pub name: &'f [u8],
    /// How it is stored.
    pub mode: EntryMode,
    /// Its object.
    pub oid: Oid,
}

impl Folder {
    /// The bytes of the tree as parsed (what the cache of folders counts).
    pub fn size(&self) -> usize {
        self.data.len()
    }

    /// The entries in git order, one per name and kind (the last of a repeated
    /// one, as [`Folder::get`] answers): a malformed tree out of order is sorted.
    pub fn listed(&self) -> impl Iterator<Item = Listed<'_>> + '_ {
        let order = (!self.sorted).then(|| self.repaired_order());
        let len = order.as_ref().map_or(self.entries.len(), Vec::len);
        (0..len).map(move |i| self.listed_at(order.as_ref().map_or(i, |order| order[i] as usize)))
    }

    /// The entry at position `at` in stored order.
    fn listed_at(&self, at: usize) -> Listed<'_> {
        let entry = &self.entries[at];
        Listed {
            name: self.name(entry),
            mode: entry.mode,
            oid: Oid::try_from(&self.data[entry.name_end as usize + 1..][..self.hash_len])
                .expect("an id of the hash's length, checked when parsed"),
        }
    }

    /// Where the entry at position `at` starts in the tree's bytes: entries lie
    /// one after another, each ending with its id.
    fn start_of(&self, at: usize) -> usize {
        at.checked_sub(1).map_or(0, |before| self.end_of(&self.entries[before]))
    }

    /// Where `entry` ends in the tree's bytes (after its id).
    fn end_of(&self, entry: &Entry) -> usize {
        entry.name_end as usize + 1 + self.hash_len
    }

    /// Positions of a tree out of order, sorted, keeping the last of each repeat.
    fn repaired_order(&self) -> Vec<u32> {
        let key = |at: &u32| {
            let entry = &self.entries[*at as usize];
            (self.name(entry), entry.mode.is_tree())
        };
        let mut order: Vec<u32> = (0..self.entries.len() as u32).collect();
        // A stable sort keeps repeats in stored order; the last one stays.
        order.sort_by(|a, b| {
            let ((a, a_tree), (b, b_tree)) = (key(a), key(b));
            name_order(a, a_tree, b, b_tree)
        });
        let mut kept: Vec<u32> = Vec::with_capacity(order.len());
        for at in order {
            match kept.last_mut() {
                Some(last) if key(last) == key(&at) => *last = at,
                _ => kept.push(at),
            }
        }
        kept
    }
}

/// What differs between two listings of a folder, as a walk of both in git
/// order finds it.
#[derive(Debug, PartialEq, Eq)]
pub enum Difference<'f> {
    /// Only the old listing has this entry.
    Removed(&'f [u8], EntryMode, Oid),
    /// Only the new listing has this entry.
    Added(&'f [u8], EntryMode, Oid),
    /// Both have it (same name and kind) with another id or mode: (name, old, new).
    Changed(&'f [u8], (EntryMode, Oid), (EntryMode, Oid)),
}

/// The entries that differ between the listings `old` and `new` (an absent
/// folder lists nothing), in git order. Entries equal on both sides cost one
/// comparison each, and nothing is collected but the differences; between two
/// well-ordered trees, a run of entries equal byte for byte is passed over at
/// once, so two 100,000-entry folders that differ in a few names compare in
/// about the time of a `memcmp` of their bytes.
pub fn differences<'f>(old: Option<&'f Folder>, new: Option<&'f Folder>) -> Vec<Difference<'f>> {
    match (old, new) {
        (Some(old), Some(new)) if old.sorted && new.sorted && old.hash_len == new.hash_len => {
            sorted_differences(old, new)
        }
        _ => merged_differences(
            old.into_iter().flat_map(Folder::listed),
            new.into_iter().flat_map(Folder::listed),
        ),
    }
}

/// [`differences`] of two trees in strict git order: where the bytes at both
/// positions agree, every entry they hold whole parses alike on both sides and
/// is skipped; the merge of names goes on from the first one that differs.
fn sorted_differences<'f>(old: &'f Folder, new: &'f Folder) -> Vec<Difference<'f>> {
    use std::cmp::Ordering;
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < old.len() && j < new.len() {
        let (from_old, from_new) = (old.start_of(i), new.start_of(j));
        let same = common_prefix(&old.data[from_old..], &new.data[from_new..]);
        let skipped = old.entries[i..].partition_point(|e| old.end_of(e) <= from_old + same);
        (i, j) = (i + skipped, j + skipped);
        if i == old.len() || j == new.len() {
            break;
        }
        let (a, b) = (old.listed_at(i), new.listed_at(j));
        match name_order(a.name, a.mode.is_tree(), b.name, b.mode.is_tree()) {
            Ordering::Less => {
                out.push(Difference::Removed(a.name, a.mode, a.oid));
                i += 1;
            }
            Ordering::Greater => {
                out.push(Difference::Added(b.name, b.mode, b.oid));
                j += 1;
            }
            Ordering::Equal => {
                if a.oid != b.oid || a.mode != b.mode {
                    out.push(Difference::Changed(a.name, (a.mode, a.oid), (b.mode, b.oid)));
                }
                (i, j) = (i + 1, j + 1);
            }
        }
    }
    out.extend(
        (i..old.len())
            .map(|i| old.listed_at(i))
            .map(|a| Difference::Removed(a.name, a.mode, a.oid)),
    );
    out.extend(
        (j..new.len())
            .map(|j| new.listed_at(j))
            .map(|b| Difference::Added(b.name, b.mode, b.oid)),
    );
    out
}

/// How many leading bytes `a` and `b` share: compared a block at a time, then
/// byte by byte inside the first block that differs.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 1024;
    let len = a.len().min(b.len());
    let mut at = 0;
    while at + BLOCK <= len && a[at..at + BLOCK] == b[at..at + BLOCK] {
        at += BLOCK;
    }
    at + a[at..len].iter().zip(&b[at..len]).take_while(|(x, y)| x == y).count()
}

/// The walk of two listings in git order behind [`differences`].
fn merged_differences<'f>(
    old: impl Iterator<Item = Listed<'f>>,
    new: impl Iterator<Item = Listed<'f>>,
) -> Vec<Difference<'f>> {
    use std::cmp::Ordering;
    let (mut old, mut new) = (old.peekable(), new.peekable());
    let mut out = Vec::new();
    loop {
        let order = match (old.peek(), new.peek()) {
            (Some(a), Some(b)) => name_order(a.name, a.mode.is_tree(), b.name, b.mode.is_tree()),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => return out,
        };
        match order {
            Ordering::Less => {
                let a = old.next().expect("peeked");
                out.push(Difference::Removed(a.name, a.mode, a.oid));
            }
            Ordering::Greater => {
                let b = new.next().expect("peeked");
                out.push(Difference::Added(b.name, b.mode, b.oid));
            }
            Ordering::Equal => {
                let (a, b) = (old.next().expect("peeked"), new.next().expect("peeked"));
                if a.oid != b.oid || a.mode != b.mode {
                    out.push(Difference::Changed(a.name, (a.mode, a.oid), (b.mode, b.oid)));
                }
            }
        }
    }
}

fn name_of<'d>(data: &'d [u8], entry: &Entry) -> &'d [u8] {
    &data[entry.name_start as usize..entry.name_end as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    const HASH_LEN: usize = 20;

    fn oid(n: u8) -> Oid {
        Oid::try_from(&[n; HASH_LEN][..]).expect("20 bytes")
    }

    /// The bytes of a tree holding `entries` (mode, name, id byte) in the order given.
    fn tree_bytes(entries: &[(&str, &[u8], u8)]) -> Vec<u8> {
        let mut data = Vec::new();
        for (mode, name, id) in entries {
            data.extend_from_slice(mode.as_bytes());
            data.push(b' ');
            data.extend_from_slice(name);
            data.push(0);
            data.extend_from_slice(oid(*id).as_bytes());
        }
        data
    }

    fn folder(entries: &[(&str, &[u8], u8)]) -> Folder {
        Folder::parse(tree_bytes(entries), gix::hash::Kind::Sha1).expect("a well-formed tree")
    }

    /// Git's own order of names that sort around `/`.
    fn around_slash() -> Folder {
        folder(&[
            ("100644", b"a", 1),
            ("100644", b"a-b", 2),
            ("100644", b"a.b", 3),
            ("40000", b"a", 4),
            ("100755", b"a0", 5),
            ("120000", b"ab", 6),
            ("160000", b"sub", 7),
            ("40000", b"z", 8),
        ])
    }

    #[test]
    fn names_that_sort_around_a_slash_are_all_found() {
        let folder = around_slash();
        assert!(folder.sorted);
        assert_eq!(folder.len(), 8);
        // The folder `a` is the later entry of that name, as a map would keep it.
        assert_eq!(folder.get("a"), Some(PathTarget::Tree(oid(4))));
        assert_eq!(folder.get("a-b"), Some(PathTarget::File(FileMode::File, oid(2))));
        assert_eq!(folder.get("a.b"), Some(PathTarget::File(FileMode::File, oid(3))));
        assert_eq!(folder.get("a0"), Some(PathTarget::File(FileMode::Executable, oid(5))));
        assert_eq!(folder.get("ab"), Some(PathTarget::File(FileMode::Symlink, oid(6))));
        assert_eq!(folder.get("z"), Some(PathTarget::Tree(oid(8))));
        for missing in ["", "a/", "a-", "a.", "A", "b", "zz", "sub"] {
            assert_eq!(folder.get(missing), None, "{missing}");
        }
    }

    #[test]
    fn every_entry_of_a_large_sorted_folder_is_found() {
        let names: Vec<String> = (0..1000).map(|i| format!("skill-{i}")).collect();
        let mut entries: Vec<(&str, &[u8], u8)> = names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                (
                    if i % 3 == 0 { "40000" } else { "100644" },
                    n.as_bytes(),
                    (i % 250) as u8,
                )
            })
            .collect();
        entries.sort_by(|a, b| name_order(a.1, a.0 == "40000", b.1, b.0 == "40000"));
        let folder = folder(&entries);
        assert!(folder.sorted);
        for (i, name) in names.iter().enumerate() {
            let expected = if i % 3 == 0 {
                PathTarget::Tree(oid((i % 250) as u8))
            } else {
                PathTarget::File(FileMode::File, oid((i % 250) as u8))
            };
            assert_eq!(folder.get(name), Some(expected), "{name}");
        }
        assert_eq!(folder.get("skill-1000"), None);
    }

    #[test]
    fn a_tree_out_of_order_is_searched_entry_by_entry() {
        let folder = folder(&[
            ("100644", b"b", 1),
            ("100644", b"a", 2),
            ("100644", b"b", 3),
            ("160000", b"c", 4),
        ]);
        assert!(!folder.sorted);
        assert_eq!(folder.get("a"), Some(PathTarget::File(FileMode::File, oid(2))));
        assert_eq!(folder.get("b"), Some(PathTarget::File(FileMode::File, oid(3))));
        assert_eq!(folder.get("c"), None);
    }

    #[test]
    fn names_that_are_not_utf8_are_found_by_their_lossy_form() {
        let folder = folder(&[("100644", b"a\xff", 1), ("100644", b"b", 2)]);
        assert_eq!(folder.get("a\u{FFFD}"), Some(PathTarget::File(FileMode::File, oid(1))));
        assert_eq!(folder.get("b"), Some(PathTarget::File(FileMode::File, oid(2))));
    }

    #[test]
    fn any_name_skips_submodules() {
        let folder = around_slash();
        assert!(folder.any_name(|n| n.eq_ignore_ascii_case(b"A-B")));
        assert!(!folder.any_name(|n| n == b"sub"));
        assert!(!folder.any_name(|n| n == b"missing"));
    }

    fn names(differences: &[Difference<'_>]) -> Vec<String> {
        differences
            .iter()
            .map(|d| match d {
                Difference::Removed(name, ..) => format!("-{}", name.to_str_lossy()),
                Difference::Added(name, ..) => format!("+{}", name.to_str_lossy()),
                Difference::Changed(name, ..) => format!("~{}", name.to_str_lossy()),
            })
            .collect()
    }

    #[test]
    fn differences_walk_both_listings_in_git_order() {
        let old = folder(&[
            ("100644", b"a", 1),
            ("40000", b"a", 2),
            ("100644", b"b", 3),
            ("100644", b"c", 4),
            ("40000", b"d", 5),
        ]);
        let new = folder(&[
            ("40000", b"a", 2),
            ("100755", b"b", 3),
            ("100644", b"bb", 9),
            ("100644", b"c", 7),
            ("40000", b"d", 5),
            ("40000", b"e", 6),
        ]);
        let found = differences(Some(&old), Some(&new));
        // The file `a` went (the folder `a` stayed), `b` became executable, `c` changed.
        assert_eq!(names(&found), ["-a", "~b", "+bb", "~c", "+e"]);
        assert_eq!(
            found[1],
            Difference::Changed(
                b"b",
                (EntryMode::from(EntryKind::Blob), oid(3)),
                (EntryMode::from(EntryKind::BlobExecutable), oid(3))
            )
        );
        assert!(differences(Some(&new), Some(&new)).is_empty());
        let empty = folder(&[]);
        assert_eq!(
            names(&differences(Some(&empty), Some(&old))),
            ["+a", "+a", "+b", "+c", "+d"]
        );
    }

    /// A tree in git order from (mode, name, id byte) entries given in any order.
    fn sorted_folder(mut entries: Vec<(&'static str, Vec<u8>, u8)>) -> Folder {
        let is_tree = |mode: &str| mode == "40000";
        entries.sort_by(|a, b| name_order(&a.1, is_tree(a.0), &b.1, is_tree(b.0)));
        let borrowed: Vec<(&str, &[u8], u8)> = entries.iter().map(|(m, n, id)| (*m, n.as_slice(), *id)).collect();
        folder(&borrowed)
    }

    #[test]
    fn runs_of_equal_bytes_are_skipped_with_the_same_differences_as_a_walk() {
        // Deterministic xorshift: wide folders with a few entries added, removed,
        // changed in id or mode, or turned into a folder; names share prefixes of
        // every length so equal runs end inside entries as well as between them.
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move |below: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % below
        };
        let modes = ["100644", "100755", "120000", "40000"];
        for round in 0..40 {
            let width = [0, 1, 2, 50, 3000][round % 5];
            let mut old = Vec::new();
            for k in 0..width {
                let name = format!("{}{}", "s".repeat(next(3) as usize), k * 7 + next(7) as usize);
                old.push((modes[next(4) as usize], name.into_bytes(), next(250) as u8));
            }
            old.sort_by(|a, b| a.1.cmp(&b.1));
            old.dedup_by(|a, b| a.1 == b.1);
            let mut new = old.clone();
            for _ in 0..next(8) {
                if new.is_empty() {
                    break;
                }
                let at = next(new.len() as u64) as usize;
                match next(5) {
                    0 => drop(new.remove(at)),
                    1 => new.push((modes[next(4) as usize], format!("added{}", next(1000)).into_bytes(), 1)),
                    2 => new[at].2 = new[at].2.wrapping_add(1),
                    3 => new[at].0 = modes[(modes.iter().position(|m| *m == new[at].0).unwrap() + 1) % 4],
                    _ => new.push(("40000", new[at].1.clone(), 9)),
                }
            }
            new.sort_by(|a, b| a.1.cmp(&b.1).then(a.0.cmp(b.0)));
            new.dedup_by(|a, b| a.1 == b.1 && (a.0 == "40000") == (b.0 == "40000"));
            let (old, new) = (sorted_folder(old), sorted_folder(new));
            assert!(old.sorted && new.sorted, "round {round}: the trees are in git order");
            let walked = merged_differences(old.listed(), new.listed());
            assert_eq!(differences(Some(&old), Some(&new)), walked, "round {round}");
            assert_eq!(differences(Some(&new), Some(&old)).len(), walked.len(), "round {round}");
            assert!(differences(Some(&old), Some(&old)).is_empty());
            assert_eq!(differences(None, Some(&new)).len(), new.len());
        }
    }

    #[test]
    fn a_tree_out_of_order_is_listed_in_order_with_its_last_repeat() {
        let unsorted = folder(&[("100644", b"b", 1), ("100644", b"a", 2), ("100644", b"b", 3)]);
        let seen: Vec<(String, Oid)> = unsorted
            .listed()
            .map(|e| (e.name.to_str_lossy().into_owned(), e.oid))
            .collect();
        assert_eq!(seen, [("a".to_string(), oid(2)), ("b".to_string(), oid(3))]);
    }

    #[test]
    fn malformed_trees_are_refused() {
        let good = tree_bytes(&[("100644", b"a", 1)]);
        assert!(Folder::parse(good[..good.len() - 1].to_vec(), gix::hash::Kind::Sha1).is_err());
        assert!(Folder::parse(b"100644 a".to_vec(), gix::hash::Kind::Sha1).is_err());
        assert!(Folder::parse(b"abc a\0".to_vec(), gix::hash::Kind::Sha1).is_err());
        let empty = Folder::parse(Vec::new(), gix::hash::Kind::Sha1).expect("the empty tree");
        assert!(empty.is_empty());
    }
}
