//! A faithful port of the parts of Python's `difflib` the editor's `diff` extras need:
//! `SequenceMatcher` (no junk function, `autojunk=True`), `get_grouped_opcodes` and
//! `unified_diff`, so hunks come out exactly as the reference prints them.

use std::collections::HashMap;

/// An opcode tag of `SequenceMatcher.get_opcodes()`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tag {
    Equal,
    Replace,
    Delete,
    Insert,
}

/// `(tag, i1, i2, j1, j2)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Opcode {
    tag: Tag,
    i1: usize,
    i2: usize,
    j1: usize,
    j2: usize,
}

/// `difflib.SequenceMatcher(None, a, b)` over sequences of hashable items, with the
/// "popular element" autojunk heuristic for `b` of 200 or more items.
#[derive(Debug)]
struct SequenceMatcher {
    /// `a` and `b` mapped to small integer ids (equal items, equal ids).
    a: Vec<u32>,
    b: Vec<u32>,
    /// `b2j`: for every non-popular item of `b`, the ascending positions where it occurs.
    b2j: HashMap<u32, Vec<usize>>,
}

impl SequenceMatcher {
    /// Builds the matcher (`set_seqs` + `__chain_b`).
    fn new<T: std::hash::Hash + Eq>(a: &[T], b: &[T]) -> Self {
        let mut ids: HashMap<&T, u32> = HashMap::new();
        let mut intern = |item| {
            let next = ids.len() as u32;
            *ids.entry(item).or_insert(next)
        };
        let a_ids: Vec<u32> = a.iter().map(&mut intern).collect();
        let b_ids: Vec<u32> = b.iter().map(&mut intern).collect();

        let mut b2j: HashMap<u32, Vec<usize>> = HashMap::new();
        for (j, &elt) in b_ids.iter().enumerate() {
            b2j.entry(elt).or_default().push(j);
        }
        let n = b_ids.len();
        if n >= 200 {
            let ntest = n / 100 + 1;
            b2j.retain(|_, idxs| idxs.len() <= ntest);
        }
        SequenceMatcher {
            a: a_ids,
            b: b_ids,
            b2j,
        }
    }

    /// `find_longest_match(alo, ahi, blo, bhi)`; no junk, so only the non-junk extension runs.
    /// `j2len` and `newj2len` are dense arrays indexed by `j + 1`, reset through the list of
    /// touched slots, which is what the dictionaries of the original amount to.
    fn find_longest_match(
        &self,
        (alo, ahi, blo, bhi): (usize, usize, usize, usize),
        scratch: &mut Scratch,
    ) -> (usize, usize, usize) {
        let (a, b) = (&self.a, &self.b);
        let (mut besti, mut bestj, mut bestsize) = (alo, blo, 0usize);
        for (i, item) in a.iter().enumerate().take(ahi).skip(alo) {
            if let Some(positions) = self.b2j.get(item) {
                for &j in positions {
                    if j < blo {
                        continue;
                    }
                    if j >= bhi {
                        break;
                    }
                    // j2len.get(j - 1, 0) + 1, with slot j + 1 holding j2len[j].
                    let k = scratch.prev[j] + 1;
                    scratch.cur[j + 1] = k;
                    scratch.cur_touched.push(j + 1);
                    if k > bestsize {
                        besti = i + 1 - k;
                        bestj = j + 1 - k;
                        bestsize = k;
                    }
                }
            }
            for &slot in &scratch.prev_touched {
                scratch.prev[slot] = 0;
            }
            scratch.prev_touched.clear();
            std::mem::swap(&mut scratch.prev, &mut scratch.cur);
            std::mem::swap(&mut scratch.prev_touched, &mut scratch.cur_touched);
        }
        for &slot in &scratch.prev_touched {
            scratch.prev[slot] = 0;
        }
        scratch.prev_touched.clear();

        while besti > alo && bestj > blo && a[besti - 1] == b[bestj - 1] {
            besti -= 1;
            bestj -= 1;
            bestsize += 1;
        }
        while besti + bestsize < ahi
            && bestj + bestsize < bhi
            && a[besti + bestsize] == b[bestj + bestsize]
        {
            bestsize += 1;
        }
        (besti, bestj, bestsize)
    }

    /// `get_matching_blocks()`, sentinel `(len(a), len(b), 0)` included.
    fn matching_blocks(&self) -> Vec<(usize, usize, usize)> {
        let (la, lb) = (self.a.len(), self.b.len());
        let mut scratch = Scratch::new(lb);
        let mut queue = vec![(0, la, 0, lb)];
        let mut blocks = Vec::new();
        while let Some((alo, ahi, blo, bhi)) = queue.pop() {
            let (i, j, k) = self.find_longest_match((alo, ahi, blo, bhi), &mut scratch);
            if k > 0 {
                blocks.push((i, j, k));
                if alo < i && blo < j {
                    queue.push((alo, i, blo, j));
                }
                if i + k < ahi && j + k < bhi {
                    queue.push((i + k, ahi, j + k, bhi));
                }
            }
        }
        blocks.sort_unstable();

        let (mut i1, mut j1, mut k1) = (0, 0, 0);
        let mut non_adjacent = Vec::with_capacity(blocks.len() + 1);
        for (i2, j2, k2) in blocks {
            if i1 + k1 == i2 && j1 + k1 == j2 {
                k1 += k2;
            } else {
                if k1 > 0 {
                    non_adjacent.push((i1, j1, k1));
                }
                (i1, j1, k1) = (i2, j2, k2);
            }
        }
        if k1 > 0 {
            non_adjacent.push((i1, j1, k1));
        }
        non_adjacent.push((la, lb, 0));
        non_adjacent
    }

    /// `get_opcodes()`.
    fn opcodes(&self) -> Vec<Opcode> {
        let (mut i, mut j) = (0, 0);
        let mut answer = Vec::new();
        for (ai, bj, size) in self.matching_blocks() {
            let tag = if i < ai && j < bj {
                Some(Tag::Replace)
            } else if i < ai {
                Some(Tag::Delete)
            } else if j < bj {
                Some(Tag::Insert)
            } else {
                None
            };
            if let Some(tag) = tag {
                answer.push(Opcode {
                    tag,
                    i1: i,
                    i2: ai,
                    j1: j,
                    j2: bj,
                });
            }
            (i, j) = (ai + size, bj + size);
            if size > 0 {
                answer.push(Opcode {
                    tag: Tag::Equal,
                    i1: ai,
                    i2: i,
                    j1: bj,
                    j2: j,
                });
            }
        }
        answer
    }

    /// `get_grouped_opcodes(n)`.
    fn grouped_opcodes(&self, n: usize) -> Vec<Vec<Opcode>> {
        let mut codes = self.opcodes();
        if codes.is_empty() {
            codes.push(Opcode {
                tag: Tag::Equal,
                i1: 0,
                i2: 1,
                j1: 0,
                j2: 1,
            });
        }
        if let Some(first) = codes.first_mut()
            && first.tag == Tag::Equal
        {
            first.i1 = first.i1.max(first.i2.saturating_sub(n));
            first.j1 = first.j1.max(first.j2.saturating_sub(n));
        }
        if let Some(last) = codes.last_mut()
            && last.tag == Tag::Equal
        {
            last.i2 = last.i2.min(last.i1 + n);
            last.j2 = last.j2.min(last.j1 + n);
        }

        let nn = n + n;
        let mut groups = Vec::new();
        let mut group = Vec::new();
        for code in codes {
            let Opcode {
                tag,
                mut i1,
                i2,
                mut j1,
                j2,
            } = code;
            if tag == Tag::Equal && i2 - i1 > nn {
                group.push(Opcode {
                    tag,
                    i1,
                    i2: i2.min(i1 + n),
                    j1,
                    j2: j2.min(j1 + n),
                });
                groups.push(std::mem::take(&mut group));
                i1 = i1.max(i2.saturating_sub(n));
                j1 = j1.max(j2.saturating_sub(n));
            }
            group.push(Opcode {
                tag,
                i1,
                i2,
                j1,
                j2,
            });
        }
        let only_equal = group.len() == 1 && group[0].tag == Tag::Equal;
        if !group.is_empty() && !only_equal {
            groups.push(group);
        }
        groups
    }
}

/// Reusable state of `find_longest_match`.
struct Scratch {
    prev: Vec<usize>,
    cur: Vec<usize>,
    prev_touched: Vec<usize>,
    cur_touched: Vec<usize>,
}

impl Scratch {
    fn new(lb: usize) -> Self {
        Scratch {
            prev: vec![0; lb + 1],
            cur: vec![0; lb + 1],
            prev_touched: Vec::new(),
            cur_touched: Vec::new(),
        }
    }
}

/// `_format_range_unified(start, stop)`.
fn format_range_unified(start: usize, stop: usize) -> String {
    let beginning = start + 1;
    let length = stop - start;
    if length == 1 {
        return beginning.to_string();
    }
    let beginning = if length == 0 {
        beginning - 1
    } else {
        beginning
    };
    format!("{beginning},{length}")
}

/// `difflib.unified_diff(a, b, fromfile, tofile, n=n)` with the default `lineterm="\n"`: the
/// lines as Python yields them (header and hunk lines end in `\n`, content lines are the items
/// with their one-character prefix).
fn unified_diff(a: &[&str], b: &[&str], fromfile: &str, tofile: &str, n: usize) -> Vec<String> {
    let matcher = SequenceMatcher::new(a, b);
    let mut out = Vec::new();
    for (index, group) in matcher.grouped_opcodes(n).iter().enumerate() {
        if index == 0 {
            out.push(format!("--- {fromfile}\n"));
            out.push(format!("+++ {tofile}\n"));
        }
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        out.push(format!(
            "@@ -{} +{} @@\n",
            format_range_unified(first.i1, last.i2),
            format_range_unified(first.j1, last.j2)
        ));
        for op in group {
            if op.tag == Tag::Equal {
                out.extend(a[op.i1..op.i2].iter().map(|line| format!(" {line}")));
                continue;
            }
            if matches!(op.tag, Tag::Replace | Tag::Delete) {
                out.extend(a[op.i1..op.i2].iter().map(|line| format!("-{line}")));
            }
            if matches!(op.tag, Tag::Replace | Tag::Insert) {
                out.extend(b[op.j1..op.j2].iter().map(|line| format!("+{line}")));
            }
        }
    }
    out
}

/// The editor's `get_diff(old, new, path)`: `unified_diff` with zero context over the
/// `\n`-split texts, each line right-stripped, joined with `\n`; `""` when nothing changed.
pub(crate) fn get_diff(old: &str, new: &str, path: &str) -> String {
    if old == new {
        return String::new();
    }
    let a: Vec<&str> = old.split('\n').collect();
    let b: Vec<&str> = new.split('\n').collect();
    let lines = unified_diff(&a, &b, path, path, 0);
    let stripped: Vec<&str> = lines
        .iter()
        .map(|line| super::pycompat::py_rstrip(line))
        .collect();
    stripped.join("\n")
}

#[cfg(test)]
mod tests;
