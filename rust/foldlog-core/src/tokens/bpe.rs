//! Byte-pair encoding of one pre-token: the merge loop shared by every encoding.
//!
//! Both tokenizer families reduce to the same rule: start from one symbol per byte, then
//! repeatedly merge the adjacent pair with the lowest rank, the leftmost one on ties, until
//! no adjacent pair can merge. They differ only in where a pair's rank comes from:
//!
//! * Hugging Face `tokenizers` BPE (DeepSeek): the rank is the pair's index in the `merges`
//!   list, looked up by the two symbol ids.
//! * `tiktoken` (cl100k, o200k): the rank is the rank of the merged byte string itself, and a
//!   pre-token that is already a token is emitted whole (tiktoken's shortcut).
//!
//! The loop is a binary heap of candidate merges over a linked list of symbols (O(n log n)),
//! so pathological pre-tokens (100 KB of `=`) stay linear-ish, unlike the quadratic rescan.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rustc_hash::FxHashMap;

/// Where pair ranks come from (see the module docs).
pub(crate) enum Ranks {
    /// `(left id, right id)` packed into a u64 → `(merge rank, merged id)`.
    Pairs(FxHashMap<u64, (u32, u32)>),
    /// Token bytes → rank (= id).
    Bytes(FxHashMap<Box<[u8]>, u32>),
}

pub(crate) struct Bpe {
    /// The id of each single byte.
    byte_ids: [u32; 256],
    ranks: Ranks,
}

#[derive(Clone, Copy)]
struct Sym {
    start: u32,
    end: u32,
    id: u32,
    prev: u32,
    next: u32,
}

const NONE: u32 = u32::MAX;

#[inline]
fn pair_key(left: u32, right: u32) -> u64 {
    (u64::from(left) << 32) | u64::from(right)
}

impl Bpe {
    pub(crate) fn new(byte_ids: [u32; 256], ranks: Ranks) -> Self {
        Bpe { byte_ids, ranks }
    }

    pub(crate) fn pairs_key(left: u32, right: u32) -> u64 {
        pair_key(left, right)
    }

    /// `(rank, merged id)` of merging two adjacent symbols, if they merge.
    #[inline]
    fn merge_of(&self, piece: &[u8], left: &Sym, right: &Sym) -> Option<(u32, u32)> {
        match &self.ranks {
            Ranks::Pairs(map) => map.get(&pair_key(left.id, right.id)).copied(),
            Ranks::Bytes(map) => {
                let bytes = &piece[left.start as usize..right.end as usize];
                map.get(bytes).map(|&r| (r, r))
            }
        }
    }

    /// Appends the token ids of one pre-token to `out`.
    pub(crate) fn encode_piece(&self, piece: &[u8], out: &mut Vec<u32>) {
        match piece.len() {
            0 => return,
            1 => {
                out.push(self.byte_ids[piece[0] as usize]);
                return;
            }
            _ => {}
        }
        if let Ranks::Bytes(map) = &self.ranks {
            if let Some(&id) = map.get(piece) {
                out.push(id);
                return;
            }
        }
        let n = piece.len();
        let mut syms: Vec<Sym> = piece
            .iter()
            .enumerate()
            .map(|(i, &b)| Sym {
                start: i as u32,
                end: i as u32 + 1,
                id: self.byte_ids[b as usize],
                prev: if i == 0 { NONE } else { i as u32 - 1 },
                next: if i + 1 == n { NONE } else { i as u32 + 1 },
            })
            .collect();
        // (rank, left position, merged id): min-heap, so the lowest rank and then the
        // leftmost position pops first
        let mut heap: BinaryHeap<Reverse<(u32, u32, u32)>> = BinaryHeap::with_capacity(n);
        for i in 0..n - 1 {
            if let Some((rank, id)) = self.merge_of(piece, &syms[i], &syms[i + 1]) {
                heap.push(Reverse((rank, i as u32, id)));
            }
        }
        while let Some(Reverse((rank, pos, new_id))) = heap.pop() {
            let left = syms[pos as usize];
            if left.start == NONE || left.next == NONE {
                continue; // merged away, or now the last symbol
            }
            let right = syms[left.next as usize];
            // a stale candidate: the pair under it changed since it was pushed
            if self.merge_of(piece, &left, &right) != Some((rank, new_id)) {
                continue;
            }
            let merged = Sym {
                start: left.start,
                end: right.end,
                id: new_id,
                prev: left.prev,
                next: right.next,
            };
            syms[pos as usize] = merged;
            syms[left.next as usize].start = NONE;
            if merged.next != NONE {
                syms[merged.next as usize].prev = pos;
                if let Some((r, id)) = self.merge_of(piece, &merged, &syms[merged.next as usize]) {
                    heap.push(Reverse((r, pos, id)));
                }
            }
            if merged.prev != NONE {
                let prev = syms[merged.prev as usize];
                if let Some((r, id)) = self.merge_of(piece, &prev, &merged) {
                    heap.push(Reverse((r, merged.prev, id)));
                }
            }
        }
        let mut i = 0u32;
        while i != NONE {
            let s = &syms[i as usize];
            out.push(s.id);
            i = s.next;
        }
    }
}
