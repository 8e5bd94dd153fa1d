//! A cache of recent plain lines and the ids their names were given: a line
//! met again costs one hash of its bytes and one probe, not a parse and
//! three name lookups.
//!
//! Text traces repeat whole lines: a loop body's reads of the same field at
//! the same location. In direct-mapped caches of 4,096 lines, 50-87 % of
//! the lines of six Java Grande traces (`crypt`, `moldyn`, `montecarlo`,
//! `raytracer`, `series`, `sparsematmult`) are found, 18 % of `lufact`'s,
//! none of `sor`'s (every line names a new array element); a cache that
//! finds too few lines turns itself off for a while, so such traces pay
//! for a lookup on a few lines in a hundred. STD lines and CSV rows (after
//! the header) are cached.
//!
//! A line's parse depends on its bytes only (and a CSV file's header, fixed
//! before the first row), so a cached line stands for
//! exactly what parsing it again would give: its names' ids never change
//! while the tables live (the cache is emptied with them), and only lines
//! that parsed on the fast path and were accepted are cached. What depends
//! on the trace's state (a joined thread, a lock's holder) is checked on
//! every event all the same.

use super::model::Op;
use super::scan::eq_bytes;

/// Longest line cached, in bytes without its `\n` (Java Grande lines are
/// 13-45 bytes; `montecarlo` has longer ones, which take the parser).
const WORDS: usize = 6;
const MAX: usize = 8 * WORDS;
/// Lines the cache holds (a power of two): 256 KB, the size of a core's L2.
const SETS: usize = 1 << 12;
/// Lookups between two looks at the hit rate.
const PERIOD: u32 = 1 << 12;
/// Lines a cache finding fewer than one in [`MIN_HITS`] skips before it
/// tries again (a lookup and put that miss cost about a quarter of what a
/// hit saves), doubled after every such look up to [`MAX_PAUSE`]: a trace
/// of new lines pays for a lookup on a few lines in a hundred.
const PAUSE: u32 = 1 << 16;
const MAX_PAUSE: u32 = 1 << 22;
const MIN_HITS: u32 = 4;

/// A line of at most [`MAX`] bytes: its words, zero-padded, and length.
#[derive(Clone, Copy)]
pub(crate) struct LineKey {
    words: [u64; WORDS],
    len: usize,
}

impl LineKey {
    /// The key of the line starting at `pos` of `bytes` when it is ended by
    /// a `\n` within [`MAX`] bytes, non-empty, and [`MAX`] bytes can be
    /// read from `pos` (a line near a block's end takes the parser).
    #[inline(always)]
    pub(crate) fn at(bytes: &[u8], pos: usize) -> Option<LineKey> {
        let w = bytes.get(pos..pos + MAX)?;
        let mut words = [0u64; WORDS];
        for (i, word) in words.iter_mut().enumerate() {
            let v = u64::from_le_bytes(w[8 * i..8 * i + 8].try_into().unwrap_or([0; 8]));
            let nl = eq_bytes(v, b'\n');
            if nl != 0 {
                let k = (nl.trailing_zeros() / 8) as usize;
                let len = 8 * i + k;
                // The bytes before the `\n` only.
                *word = v & ((1u64 << (8 * k)) - 1);
                return (len > 0).then_some(LineKey { words, len });
            }
            *word = v;
        }
        None
    }

    /// The line's length, without its `\n`.
    #[inline(always)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    #[inline(always)]
    fn set(&self) -> usize {
        let [a, b, c, d, e, f] = self.words;
        let x = a ^ c.rotate_left(21) ^ e.rotate_left(42);
        let y = b ^ d.rotate_left(21) ^ f.rotate_left(42) ^ self.len as u64;
        let h = (x.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ y).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        (h >> (64 - SETS.trailing_zeros())) as usize
    }
}

/// What a cached line gave: its event's thread, op, target and location.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct LineIds {
    pub thread: u32,
    pub op: Op,
    pub target: u32,
    pub loc: u32,
}

/// Threads numbered from here on are not cached (an entry keeps 24 bits).
const THREADS: u32 = 1 << 24;
/// Generations an entry's tag keeps.
const GENERATIONS: u32 = 1 << 24;

/// Recent lines, direct-mapped, one line to a cache line: the line's words,
/// then its length and the cache's generation when it was put (a tag;
/// zero, the first generation's never, for an empty entry) beside its
/// thread and op, then its target and location. Allocated zeroed at the
/// first lookup, so pages are touched only as lines land on them (and
/// binary formats allocate nothing).
#[derive(Clone)]
pub(crate) struct LineCache {
    entries: Vec<[u64; WORDS + 2]>,
    /// Stamped into entries put now; [`LineCache::clear`] moves it on
    /// instead of emptying 256 KB.
    generation: u32,
    /// Lookups and hits since the last look at the rate.
    looked: u32,
    hits: u32,
    /// Lines left to skip before looking again.
    paused: u32,
    /// Lines to skip after the next look that finds too few.
    pause: u32,
}

impl Default for LineCache {
    fn default() -> Self {
        LineCache {
            entries: Vec::new(),
            generation: 1,
            looked: 0,
            hits: 0,
            paused: 0,
            pause: PAUSE,
        }
    }
}

impl LineCache {
    /// Whether to look lines up; false while the cache is paused.
    #[inline(always)]
    pub(crate) fn active(&self) -> bool {
        self.paused == 0
    }

    /// `lines` lines were parsed while the cache was paused.
    #[inline]
    pub(crate) fn skipped(&mut self, lines: u64) {
        self.paused = self
            .paused
            .saturating_sub(lines.min(u32::MAX as u64) as u32);
    }

    /// An entry's tag for a line of `len` bytes.
    #[inline(always)]
    fn tag(&self, len: usize) -> u64 {
        len as u64 | (self.generation as u64) << 8
    }

    /// The ids of line `k`, if cached.
    #[inline(always)]
    pub(crate) fn get(&mut self, k: &LineKey) -> Option<LineIds> {
        if self.entries.is_empty() {
            self.entries = vec![[0; WORDS + 2]; SETS];
        }
        self.looked += 1;
        if self.looked == PERIOD {
            self.review();
        }
        let tag = self.tag(k.len);
        let e = &self.entries[k.set()];
        if e[WORDS] as u32 as u64 == tag && e[..WORDS] == k.words {
            self.hits += 1;
            let (thread_op, ids) = ((e[WORDS] >> 32) as u32, e[WORDS + 1]);
            return Some(LineIds {
                thread: thread_op >> 8,
                op: *Op::ALL.get(thread_op as u8 as usize)?,
                target: ids as u32,
                loc: (ids >> 32) as u32,
            });
        }
        None
    }

    /// Remember that line `k` gave `ids`.
    #[inline(always)]
    pub(crate) fn put(&mut self, k: &LineKey, ids: LineIds) {
        if ids.thread >= THREADS {
            return;
        }
        let tag = self.tag(k.len);
        if let Some(e) = self.entries.get_mut(k.set()) {
            e[..WORDS].copy_from_slice(&k.words);
            let thread_op = ids.thread << 8 | ids.op as u32;
            e[WORDS] = tag | (thread_op as u64) << 32;
            e[WORDS + 1] = ids.target as u64 | (ids.loc as u64) << 32;
        }
    }

    /// Pause when too few lookups found their line.
    #[cold]
    fn review(&mut self) {
        if self.hits < self.looked / MIN_HITS {
            self.paused = self.pause;
            self.pause = (2 * self.pause).min(MAX_PAUSE);
        } else {
            self.pause = PAUSE;
        }
        (self.looked, self.hits) = (0, 0);
    }

    /// Forget every line (the name tables the ids point into start
    /// afresh). The hit rate carries over: it is the trace's.
    pub(crate) fn clear(&mut self) {
        self.generation += 1;
        if self.generation == GENERATIONS {
            self.entries.fill([0; WORDS + 2]);
            self.generation = 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(n: u32) -> LineIds {
        LineIds {
            thread: n,
            op: Op::Write,
            target: n + 1,
            loc: n + 2,
        }
    }

    #[test]
    fn ops_round_trip_through_their_number() {
        for (i, op) in Op::ALL.iter().enumerate() {
            assert_eq!(*op as usize, i);
        }
    }

    #[test]
    fn keys_end_at_the_newline_and_need_room_to_read() {
        let mut text = b"T0|r(x)|1\nT0|r(x)|12\n".to_vec();
        text.resize(200, b' ');
        let a = LineKey::at(&text, 0).unwrap();
        assert_eq!(a.len(), 9);
        let b = LineKey::at(&text, 10).unwrap();
        assert_eq!(b.len(), 10);
        // A blank line, a line without `\n` in reach, too little left.
        assert!(LineKey::at(b"\n                                                 ", 0).is_none());
        assert!(LineKey::at(&[b'a'; 100], 0).is_none());
        assert!(LineKey::at(&text, 190).is_none());
        // The longest line cached, and one byte more.
        let mut long = vec![b'x'; MAX - 1];
        long.push(b'\n');
        long.resize(120, b' ');
        assert_eq!(LineKey::at(&long, 0).map(|k| k.len()), Some(MAX - 1));
        long[MAX - 1] = b'x';
        long[MAX] = b'\n';
        assert!(LineKey::at(&long, 0).is_none());
    }

    #[test]
    fn a_line_is_found_only_with_all_its_bytes() {
        let mut text = b"T0|r(series.SeriesTest.TestArray)|74\nT0|r(series.SeriesTest.TestArray)|77\nT0|r(series.SeriesTest.TestArray)|7\n".to_vec();
        text.resize(300, b' ');
        let starts = [0, 37, 74];
        let keys: Vec<LineKey> = starts
            .iter()
            .map(|&s| LineKey::at(&text, s).unwrap())
            .collect();
        let mut c = LineCache::default();
        assert_eq!(c.get(&keys[0]), None);
        c.put(&keys[0], ids(1));
        assert_eq!(c.get(&keys[0]), Some(ids(1)));
        // Lines differing in their last byte, or one byte shorter, miss
        // (whatever set they map to).
        assert_eq!(c.get(&keys[1]), None);
        assert_eq!(c.get(&keys[2]), None);
        c.put(&keys[1], ids(5));
        assert_eq!(c.get(&keys[1]), Some(ids(5)));
        c.clear();
        assert_eq!(c.get(&keys[1]), None);
        // Every op, and threads beyond what an entry keeps (not cached).
        for op in Op::ALL {
            let v = LineIds { op, ..ids(7) };
            c.put(&keys[2], v);
            assert_eq!(c.get(&keys[2]), Some(v));
        }
        c.put(&keys[0], ids(THREADS));
        assert_eq!(c.get(&keys[0]), None);
        // Generations wrap to an emptied cache.
        c.put(&keys[0], ids(2));
        c.generation = GENERATIONS - 1;
        c.put(&keys[1], ids(3));
        c.clear();
        assert_eq!(c.generation, 1);
        assert_eq!(c.get(&keys[0]), None);
        assert_eq!(c.get(&keys[1]), None);
    }

    #[test]
    fn lines_in_one_set_differing_in_their_last_word_are_told_apart() {
        let key = |line: String| {
            let mut b = line.into_bytes();
            b.push(b'\n');
            b.resize(2 * MAX, b' ');
            LineKey::at(&b, 0).unwrap()
        };
        // Same first 40 bytes, same length, a different last word, one set.
        let prefix = "T12|r(pkg.SomeClass.someFieldName)|File.";
        assert_eq!(prefix.len(), 40);
        let a = key(format!("{prefix}j:1000"));
        let b = (1001..10_000)
            .map(|n| key(format!("{prefix}j:{n}")))
            .find(|b| b.set() == a.set() && b.len() == a.len())
            .unwrap();
        let mut c = LineCache::default();
        c.get(&a);
        c.put(&a, ids(1));
        assert_eq!(c.get(&b), None);
        assert_eq!(c.get(&a), Some(ids(1)));
    }

    #[test]
    fn a_cache_that_finds_little_pauses_then_tries_again() {
        let mut c = LineCache::default();
        let mut text = Vec::new();
        for i in 0..PERIOD {
            text.extend_from_slice(format!("T0|w(a[{i}])|1\n").as_bytes());
        }
        let n = text.len();
        text.resize(n + MAX, b' ');
        let mut pos = 0;
        let mut looked = 0;
        while pos < n {
            let k = LineKey::at(&text, pos).unwrap();
            if c.active() {
                looked += 1;
                assert!(c.get(&k).is_none());
                c.put(&k, ids(0));
            } else {
                c.skipped(1);
            }
            pos += k.len() + 1;
        }
        assert_eq!(looked, PERIOD);
        assert_eq!(c.paused, PAUSE);
        assert!(!c.active());
        c.skipped(u64::from(PAUSE) - 1);
        assert!(!c.active());
        c.skipped(2);
        assert!(c.active());
        // Another look that finds nothing pauses twice as long; one that
        // finds enough starts over.
        let k = LineKey::at(&text, 0).unwrap();
        for _ in 0..PERIOD {
            assert!(c.get(&k).is_none());
        }
        assert_eq!(c.paused, 2 * PAUSE);
        c.skipped(u64::from(2 * PAUSE));
        c.put(&k, ids(0));
        for _ in 0..PERIOD {
            assert!(c.get(&k).is_some());
        }
        assert!(c.active());
        assert_eq!(c.pause, PAUSE);
    }
}
