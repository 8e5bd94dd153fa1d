//! The name tables: dense ids for thread, lock, variable and location names,
//! in order of first appearance; a name used recently costs one probe of a
//! small cache.
//!
//! Traces of array code name hundreds of thousands of variables (the Java
//! Grande `sor` kernel: 671,111 in 2M events), a third of the events naming
//! one for the first time. A table keyed by the whole name sends each new
//! name to a random slot of a table of tens of MB (a cache and TLB miss per
//! new name, and page faults as it grows). Names that differ only in their
//! last run of digits (`a3[141]`, `a3[142]`; `V42`; `f0.java:13`) therefore
//! form families: a small table finds the family, and the family holds its
//! members' ids in a vector indexed by their number, so a new element lands
//! next to its predecessor, 4 bytes each. The rest (no digits, a member
//! appearing far beyond its family's vector) go to an open-addressing table
//! of whole-name keys, where a lookup is a multiply, one probe in one cache
//! line and three word compares. Names live back to back in one arena.
//!
//! A name of up to [`INLINE`] bytes is its own key: three zero-padded words
//! and its length, read straight out of the input block with masked word
//! loads. A longer name's key is its first 16 bytes, a hash of all of it and
//! its length; a matching slot is confirmed against the arena. Long names
//! form families too (Java objects' fields, `moldyn.particle.xvelocity@2658`:
//! every event would otherwise probe the large table and the arena); such a
//! family's key holds a hash of the name without its digits, and the family
//! keeps that text to confirm a match.

use std::borrow::Cow;
use std::hash::Hasher;

use rustc_hash::FxHasher;

/// Longest name kept inline.
pub(crate) const INLINE: usize = 24;

/// `MASKS[len]` keeps the first `len` bytes of three little-endian words.
const MASKS: [[u64; 3]; INLINE + 1] = {
    let mut m = [[0u64; 3]; INLINE + 1];
    let mut len = 0;
    while len <= INLINE {
        let mut i = 0;
        while i < 3 {
            let valid = len.saturating_sub(8 * i);
            m[len][i] = if valid >= 8 {
                u64::MAX
            } else {
                (1u64 << (8 * valid)) - 1
            };
            i += 1;
        }
        len += 1;
    }
    m
};

/// A short name as three little-endian words, zero-padded, plus its length.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Key {
    words: [u64; 3],
    len: u32,
}

impl Key {
    /// A key no name has (its length is out of range).
    pub(crate) const NONE: Key = Key {
        words: [0; 3],
        len: u32::MAX,
    };

    /// The key of `name`, or None when it is longer than [`INLINE`] bytes.
    #[inline]
    pub(crate) fn new(name: &[u8]) -> Option<Key> {
        if name.len() > INLINE {
            return None;
        }
        let mut b = [0u8; INLINE];
        b[..name.len()].copy_from_slice(name);
        let word = |i: usize| u64::from_le_bytes(b[8 * i..8 * i + 8].try_into().unwrap_or([0; 8]));
        Some(Key {
            words: [word(0), word(1), word(2)],
            len: name.len() as u32,
        })
    }

    /// The key of `buf[start..start + len]`, reading whole words past the end
    /// of the name when `buf` has them (cheaper than copying byte by byte) and
    /// masking the extra bytes off. None when `len` > [`INLINE`].
    #[inline]
    pub(crate) fn in_buf(buf: &[u8], start: usize, len: usize) -> Option<Key> {
        if len > INLINE {
            return None;
        }
        let Some(w) = buf.get(start..start + INLINE) else {
            return Key::new(&buf[start..start + len]);
        };
        let word = |i: usize| u64::from_le_bytes(w[8 * i..8 * i + 8].try_into().unwrap_or([0; 8]));
        let m = &MASKS[len];
        Some(Key {
            words: [word(0) & m[0], word(1) & m[1], word(2) & m[2]],
            len: len as u32,
        })
    }

    /// The key of a name longer than [`INLINE`] bytes (its length tells the
    /// two kinds apart).
    fn long(name: &[u8]) -> Key {
        debug_assert!(name.len() > INLINE);
        let word =
            |i: usize| u64::from_le_bytes(name[8 * i..8 * i + 8].try_into().unwrap_or([0; 8]));
        let mut h = FxHasher::default();
        h.write(name);
        Key {
            words: [word(0), word(1), h.finish()],
            len: name.len() as u32,
        }
    }

    /// The key of any name.
    #[inline]
    fn of(name: &[u8]) -> Key {
        Key::new(name).unwrap_or_else(|| Key::long(name))
    }

    /// A cheaper hash for picking a cache set (one multiply: the cache
    /// only needs its sets evenly used, the tables need well-spread probes).
    #[inline]
    fn cache_hash(&self) -> u64 {
        let [a, b, c] = self.words;
        (a ^ b.rotate_left(21) ^ c.rotate_left(42) ^ self.len as u64)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }

    #[inline]
    fn hash(&self) -> u64 {
        let [a, b, c] = self.words;
        (a ^ b.rotate_left(21) ^ c.rotate_left(42) ^ self.len as u64)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(29)
            .wrapping_mul(0xBF58_476D_1CE4_E5B9)
    }
}

#[derive(Clone, Copy)]
struct Slot {
    /// The key's fields, flattened so that a slot is 32 bytes.
    words: [u64; 3],
    len: u32,
    /// Value + 1; 0 marks an empty slot.
    val1: u32,
}

const EMPTY: Slot = Slot {
    words: [0; 3],
    len: 0,
    val1: 0,
};

/// An open-addressing (linear probing) map from keys to `u32`s, kept at most
/// half full.
#[derive(Clone)]
struct Table {
    slots: Vec<Slot>,
    /// 64 - log2(slots.len()): the hash's top bits pick the first slot.
    shift: u32,
    /// Occupied slots.
    used: usize,
}

impl Default for Table {
    fn default() -> Self {
        Table {
            slots: vec![EMPTY; 64],
            shift: 64 - 6,
            used: 0,
        }
    }
}

impl Table {
    /// Empty, keeping its size.
    fn clear(&mut self) {
        self.slots.fill(EMPTY);
        self.used = 0;
    }

    /// The value of `key`, or the empty slot where it would go; `same`
    /// confirms a slot whose key matches (long names: against the arena).
    #[inline(always)]
    fn find(&self, key: &Key, same: impl Fn(u32) -> bool) -> Result<u32, usize> {
        let mask = self.slots.len() - 1;
        let mut i = (key.hash() >> self.shift) as usize;
        loop {
            let s = &self.slots[i & mask];
            if s.val1 == 0 {
                return Err(i & mask);
            }
            if s.words == key.words && s.len == key.len && same(s.val1 - 1) {
                return Ok(s.val1 - 1);
            }
            i += 1;
        }
    }

    /// Put `key` (absent) with `val` in the empty slot `at` that
    /// [`Table::find`] returned.
    fn put(&mut self, at: usize, key: Key, val: u32) {
        self.slots[at] = Slot {
            words: key.words,
            len: key.len,
            val1: val + 1,
        };
        self.used += 1;
        if 2 * self.used > self.slots.len() {
            self.grow();
        }
    }

    fn grow(&mut self) {
        let bigger = vec![EMPTY; 2 * self.slots.len()];
        let old = std::mem::replace(&mut self.slots, bigger);
        self.shift -= 1;
        let mask = self.slots.len() - 1;
        for s in old.into_iter().filter(|s| s.val1 != 0) {
            let k = Key {
                words: s.words,
                len: s.len,
            };
            let mut i = (k.hash() >> self.shift) as usize;
            while self.slots[i & mask].val1 != 0 {
                i += 1;
            }
            self.slots[i & mask] = s;
        }
    }
}

/// Most digits of an index a family member may have (10^9 < 2^32).
const MAX_DIGITS: usize = 9;

/// Smallest index of each number of digits: ids of a family's members sit at
/// `index - BASE[digits]` (a family's members all have the same number of
/// digits).
const BASE: [u32; MAX_DIGITS + 1] = [
    0,
    0,
    10,
    100,
    1000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
];

/// The families' vectors together hold at most `2 * names + BUDGET` slots (8
/// bytes a name plus 4 MB, whatever order members appear in; their
/// capacity at most twice that); a member that would grow its family's
/// vector past that goes to the name table. A vector spans its members
/// from the lowest to the highest, so a thread's share of an array costs
/// its own length; the budget is for arrays met far apart (a spilled
/// member costs a probe of the large name table whenever a family misses
/// it).
const BUDGET: usize = 1 << 20;

/// Names that differ only in one run of decimal digits (`a3[141]`, `a3[142]`,
/// `V42`, `x17`): the ids of its members, indexed by their number.
#[derive(Clone, Default)]
struct Family {
    /// Id + 1 of the member at each position from `base` on; 0 when it is
    /// not there (not seen yet, or in the name table).
    ids: Vec<u32>,
    /// The position of `ids[0]`: a thread's share of an array starts far
    /// from element 0, and a parser's fresh tables see it first.
    base: usize,
    /// Whether some member went to the name table (too far out when it
    /// appeared): a member missing from `ids` must be looked up there.
    spilled: bool,
    /// A family of long names: its members' text without their digits
    /// (a family key of long names holds only a hash of it). Empty for
    /// short names, whose family key is their text.
    text: Box<[u8]>,
}

impl Family {
    /// Id + 1 of the member at `at` if the vector holds it (0: not there).
    #[inline(always)]
    fn get(&self, at: usize) -> Option<u32> {
        self.ids.get(at.wrapping_sub(self.base)).copied()
    }

    /// The positions `lo..hi` the vector must span to hold `at`; when it
    /// must grow downwards, by at least its length if `double` (so members
    /// met in descending order cost amortized constant time).
    fn span_for(&self, at: usize, double: bool) -> (usize, usize) {
        let (lo, hi) = (self.base, self.base + self.ids.len());
        if self.ids.is_empty() {
            (at, at + 1)
        } else if at >= hi {
            (lo, at + 1)
        } else if at < lo && double {
            (at.min(lo.saturating_sub(self.ids.len())), hi)
        } else {
            (at.min(lo), hi)
        }
    }

    /// Grow the vector to span `lo..hi` (which covers what it spans).
    fn grow_to(&mut self, (lo, hi): (usize, usize)) {
        if self.ids.is_empty() {
            self.base = lo;
        } else if lo < self.base {
            let add = self.base - lo;
            self.ids.splice(0..0, std::iter::repeat_n(0, add));
            self.base = lo;
        }
        self.ids.resize(hi - lo, 0);
    }

    /// Whether `name`, with its digits at `s..e`, is a member (a family of
    /// long names; a short family's key already says so).
    #[inline(always)]
    fn holds(&self, name: &[u8], (s, e): (usize, usize)) -> bool {
        let t = &self.text;
        t.len() == s + name.len() - e && t[..s] == name[..s] && t[s..] == name[e..]
    }
}

/// The last run of decimal digits of `name` as (start, end, its number),
/// when it can place the name in a family: at most [`MAX_DIGITS`] digits and
/// no leading zero (`a007`: the family must give the name back from the
/// number, and `a7` is another name).
#[inline(always)]
fn last_number(name: &[u8]) -> Option<(usize, usize, u32)> {
    let mut e = name.len();
    while e > 0 && !name[e - 1].is_ascii_digit() {
        e -= 1;
    }
    if e == 0 {
        return None;
    }
    let mut s = e;
    let mut n: u32 = 0;
    let mut scale: u32 = 1;
    while s > 0 && name[s - 1].is_ascii_digit() {
        if e - s == MAX_DIGITS {
            return None;
        }
        s -= 1;
        n += u32::from(name[s] - b'0') * scale;
        scale = scale.wrapping_mul(10);
    }
    if name[s] == b'0' && e - s > 1 {
        return None;
    }
    Some((s, e, n))
}

/// The family of a short name and the name's position in it: the name with
/// its last run of digits zeroed, that run's place and the name's length as
/// the key. None when the name has no [`last_number`].
#[inline(always)]
fn family_of(key: &Key, name: &[u8]) -> Option<(Key, usize)> {
    let (s, e, n) = last_number(name)?;
    let digits = e - s;
    let (me, ms) = (&MASKS[e], &MASKS[s]);
    let w = key.words;
    let fk = Key {
        words: [
            w[0] & !(me[0] & !ms[0]),
            w[1] & !(me[1] & !ms[1]),
            w[2] & !(me[2] & !ms[2]),
        ],
        // Length, where the digits start and how many: never a name's key
        // (those are at most INLINE).
        len: key.len | (s as u32) << 8 | (digits as u32) << 16,
    };
    Some((fk, (n - BASE[digits]) as usize))
}

/// Longest name that can be in a family of long names (its length and the
/// place of its digits each fit a byte of the family key).
const LONG_FAMILY_MAX: usize = 255;

/// The family of a name longer than [`INLINE`] bytes (Java fields of
/// objects: `moldyn.particle.xvelocity@2658`), like [`family_of`]: the key
/// holds a hash of the name without its last run of digits, where that run
/// is, how long it is and the name's length (its low byte above [`INLINE`]
/// tells it from a short family's key); a matching family is confirmed
/// against the text it keeps. Also where the digits are, for that check.
#[inline(always)]
fn long_family_of(name: &[u8]) -> Option<(Key, usize, (usize, usize))> {
    debug_assert!(name.len() > INLINE);
    if name.len() > LONG_FAMILY_MAX {
        return None;
    }
    let (s, e, n) = last_number(name)?;
    let digits = e - s;
    let mut h = FxHasher::default();
    h.write(&name[..s]);
    h.write(&name[e..]);
    let first = u64::from_le_bytes(name[..8].try_into().unwrap_or([0; 8]));
    let fk = Key {
        words: [h.finish(), first, 0],
        len: name.len() as u32 | (s as u32) << 8 | (digits as u32) << 16,
    };
    Some((fk, (n - BASE[digits]) as usize, (s, e)))
}

/// Names and their dense ids, in order of first appearance; the index of a
/// name is its id.
///
/// Traces of array code name a new element every third event or so
/// (`a3[141]`), and a table keyed by the whole name sends each new one to a
/// random slot: a cache and TLB miss, and tens of MB of slots. So names that
/// differ only in their last run of digits form a family, found in a small
/// table of families, and a family keeps its members' ids in a vector indexed
/// by their number: consecutive elements are neighbours, 4 bytes each. Other
/// names (no digits, longer than [`LONG_FAMILY_MAX`], a member far beyond
/// its family's vector when it first appears) go to an open-addressing table
/// of whole-name keys. Names live back to back in one arena.
#[derive(Clone)]
pub struct Interner {
    /// Every name, back to back.
    arena: Arena,
    /// Whole-name keys to ids.
    names: Table,
    /// Family keys to indices into `families`.
    family_keys: Table,
    /// The families, in order of their first member.
    families: Vec<Family>,
    /// Emptied family vectors of an earlier [`Interner::clear`], for new
    /// families to reuse.
    spare: Vec<Vec<u32>>,
    /// Slots in all families' vectors (bounded by `2 * names + budget`).
    cells: usize,
    /// Slots the families' vectors may hold beyond two a name: [`BUDGET`],
    /// or less for a parser's short-lived tables.
    budget: usize,
    /// Recently used short names and their ids, two-way set associative:
    /// a hot name (a trace with a few thousand names, or an element used
    /// again soon) costs one probe, as in a table of whole names, without
    /// splitting it into family and number.
    cache: Vec<Set>,
    /// 64 - log2(cache.len()).
    cache_shift: u32,
    /// Cache misses since the cache was last sized, and how many of them
    /// were names new to the table.
    misses: u32,
    fresh: u32,
}

/// The two ways of one set of an [`Interner`]'s cache, in one cache line
/// (aligned, so a probe never touches two lines).
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Set([Slot; 2]);

const EMPTY_SET: Set = Set([EMPTY; 2]);

/// Most sets of an [`Interner`]'s cache (256 KB): enough for every name of a
/// table of a few thousand used evenly (the `bench` profile's 1,600
/// locations).
const CACHE_MAX: usize = 1 << 12;
/// Sets of the cache of a table whose misses are mostly new names (32 KB,
/// what a core's L1 data cache holds). Those are the variables of array
/// code, named once or a few times close together: a larger cache would not
/// turn their misses into hits, and a probe of a 256 KB cache waited on L2
/// each time (reading the Java Grande traces took 3-12 % longer with it;
/// 16 KB and 64 KB caches measured the same as 32 KB).
const STREAM_SETS: usize = 1 << 9;
/// Cache misses between two decisions on the cache's size.
const SIZING_MISSES: u32 = 1 << 10;

impl Default for Interner {
    fn default() -> Self {
        Interner {
            arena: Arena::default(),
            names: Table::default(),
            family_keys: Table::default(),
            families: Vec::new(),
            spare: Vec::new(),
            cells: 0,
            budget: BUDGET,
            cache: vec![EMPTY_SET; 8],
            cache_shift: 64 - 3,
            misses: 0,
            fresh: 0,
        }
    }
}

impl std::fmt::Debug for Interner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl PartialEq for Interner {
    fn eq(&self, other: &Self) -> bool {
        self.arena == other.arena
    }
}

impl Eq for Interner {}

impl Interner {
    /// Forget every name, keeping the allocations: a parser's tables start
    /// afresh every few blocks, and growing them again from nothing (the
    /// families' vectors of a large array above all) went to page faults and
    /// copies.
    pub(crate) fn clear(&mut self) {
        self.arena.clear();
        self.names.clear();
        self.family_keys.clear();
        for f in self.families.drain(..) {
            let mut ids = f.ids;
            ids.clear();
            self.spare.push(ids);
        }
        self.cells = 0;
        self.cache.fill(EMPTY_SET);
    }

    /// An empty table whose families' vectors hold at most `2 * names +
    /// budget` slots ([`BUDGET`] by default).
    pub(crate) fn with_family_budget(budget: usize) -> Self {
        Interner {
            budget,
            ..Interner::default()
        }
    }

    /// Number of names.
    #[inline]
    pub fn len(&self) -> usize {
        self.arena.len()
    }

    /// True when there are no names.
    pub fn is_empty(&self) -> bool {
        self.arena.is_empty()
    }

    /// The name with id `i` when it is text (None for a cell, whose name
    /// [`Interner::name`] makes).
    #[inline]
    pub(crate) fn get_index(&self, i: usize) -> Option<&str> {
        self.arena.get(i)
    }

    /// The name with id `i`, a cell's made from its address.
    pub fn name(&self, i: usize) -> Option<Cow<'_, str>> {
        self.arena.name(i)
    }

    /// A heap or stack cell of a recorded program, named by its address
    /// (`0x...`, `~N` for its generation) only when asked for: the next id.
    /// Not found by [`Interner::get_index_of`]; the caller keeps cells
    /// unique.
    pub(crate) fn push_cell(&mut self, addr: u64, generation: u32) -> u32 {
        self.arena.push_cell(addr, generation)
    }

    /// The id of `name`, if it has one.
    pub(crate) fn get_index_of(&self, name: &str) -> Option<usize> {
        let b = name.as_bytes();
        let family = match Key::new(b) {
            Some(k) => family_of(&k, b).map(|(fk, at)| (fk, at, None)),
            None => long_family_of(b).map(|(fk, at, digits)| (fk, at, Some(digits))),
        };
        if let Some((fk, at, digits)) = family {
            let f = self.find_family(&fk, b, digits).ok()?;
            let f = &self.families[f as usize];
            match f.get(at) {
                Some(id1) if id1 != 0 => return Some(id1 as usize - 1),
                _ if !f.spilled => return None,
                _ => {}
            }
        }
        self.find_name(&Key::of(b), b).ok().map(|id| id as usize)
    }

    /// Whether `name` has an id.
    pub fn contains(&self, name: &str) -> bool {
        self.get_index_of(name).is_some()
    }

    /// The names in id order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            table: self,
            range: 0..self.len(),
        }
    }

    /// The id of `name`, giving it the next one if it is new.
    pub(crate) fn intern(&mut self, name: &str) -> u32 {
        self.insert_full(name).0 as u32
    }

    /// The id of `name` and whether it is new (it gets the next id).
    ///
    /// Skips the cache of [`Interner::intern_keyed`]: names given one at a
    /// time (the parallel reader's merge of each block's new names, side
    /// tables) are seldom the recent ones, and a probe that misses costs
    /// a cache miss of its own.
    pub(crate) fn insert_full(&mut self, name: &str) -> (usize, bool) {
        let before = self.len();
        let b = name.as_bytes();
        let id = match Key::new(b) {
            Some(k) => self.intern_short(k, b),
            None => self.intern_long(b),
        };
        (id as usize, self.len() > before)
    }

    /// Add `name` if it is new; true when it was.
    pub fn insert(&mut self, name: &str) -> bool {
        self.insert_full(name).1
    }

    /// The loaders' hot path: the id of `name` (UTF-8 bytes; `key` its
    /// [`Key`] when it is short, None when it is longer than [`INLINE`]).
    #[inline(always)]
    pub(crate) fn intern_keyed(&mut self, key: Option<Key>, name: &[u8]) -> u32 {
        if let Some(k) = key {
            debug_assert_eq!(Some(k), Key::new(name));
            // Two ways of a line of the cache: the most recent first.
            let set = (k.cache_hash() >> self.cache_shift) as usize;
            for c in &self.cache[set].0 {
                if c.val1 != 0 && c.words == k.words && c.len == k.len {
                    return c.val1 - 1;
                }
            }
            let before = self.len() as u32;
            let id = self.intern_short(k, name);
            let ways = &mut self.cache[set].0;
            ways[1] = ways[0];
            ways[0] = Slot {
                words: k.words,
                len: k.len,
                val1: id + 1,
            };
            self.misses += 1;
            self.fresh += u32::from(id >= before);
            if self.misses >= SIZING_MISSES {
                self.size_cache();
            }
            return id;
        }
        self.intern_long(name)
    }

    /// A short name missing from the cache: through its family or the name
    /// table.
    #[inline(always)]
    fn intern_short(&mut self, k: Key, name: &[u8]) -> u32 {
        if let Some((fk, at)) = family_of(&k, name) {
            return self.intern_member(Some(k), (fk, at, None), name);
        }
        // Short: the key is the name, no arena compare.
        match self.names.find(&k, |_| true) {
            Ok(id) => id,
            Err(slot) => {
                let id = self.add_bytes(name);
                self.names.put(slot, k, id);
                id
            }
        }
    }

    /// Size the cache by its last [`SIZING_MISSES`] misses: when most were
    /// names new to the table, [`STREAM_SETS`]; else room for every name (up
    /// to [`CACHE_MAX`] sets). A resized cache is empty (it refills as names
    /// come again).
    #[cold]
    #[inline(never)]
    fn size_cache(&mut self) {
        let sets = if 2 * self.fresh > self.misses {
            STREAM_SETS
        } else {
            (2 * self.len()).next_power_of_two().clamp(8, CACHE_MAX)
        };
        (self.misses, self.fresh) = (0, 0);
        if sets != self.cache.len() {
            self.cache = vec![EMPTY_SET; sets];
            self.cache_shift = 64 - sets.trailing_zeros();
        }
    }

    /// The family with key `fk` (`digits`: where the digits of `name`, a
    /// long name, are; None for a short name), or the empty slot where it
    /// would go.
    #[inline(always)]
    fn find_family(
        &self,
        fk: &Key,
        name: &[u8],
        digits: Option<(usize, usize)>,
    ) -> Result<u32, usize> {
        self.family_keys.find(fk, |f| match digits {
            None => true,
            Some(d) => self.families[f as usize].holds(name, d),
        })
    }

    /// The id of `name` (key `key`: None for a long name, computed only if
    /// the name table is needed), a member of family `fk` at `at`; `digits`
    /// as in [`Interner::find_family`].
    #[inline(always)]
    fn intern_member(
        &mut self,
        key: Option<Key>,
        (fk, at, digits): (Key, usize, Option<(usize, usize)>),
        name: &[u8],
    ) -> u32 {
        let f = match self.find_family(&fk, name, digits) {
            Ok(f) => f as usize,
            Err(slot) => self.add_family(slot, fk, name, digits),
        };
        let fam = &self.families[f];
        if let Some(id1) = fam.get(at)
            && id1 != 0
        {
            return id1 - 1;
        }
        self.add_member(f, key, at, name)
    }

    #[cold]
    #[inline(never)]
    fn add_family(
        &mut self,
        slot: usize,
        fk: Key,
        name: &[u8],
        digits: Option<(usize, usize)>,
    ) -> usize {
        let f = self.families.len();
        let text = match digits {
            Some((s, e)) => [&name[..s], &name[e..]].concat().into(),
            None => Box::default(),
        };
        self.families.push(Family {
            text,
            ids: self.spare.pop().unwrap_or_default(),
            ..Family::default()
        });
        self.family_keys.put(slot, fk, f as u32);
        f
    }

    /// A member not in family `f`'s vector: in the name table (if the family
    /// spilled there), else new. Either way it goes into the vector when the
    /// budget allows (a spilled member then has two entries, the same id).
    #[inline(never)]
    fn add_member(&mut self, f: usize, key: Option<Key>, at: usize, name: &[u8]) -> u32 {
        let fam = &self.families[f];
        let len = fam.ids.len();
        let room = (2 * self.len() + self.budget).saturating_sub(self.cells);
        let mut span = fam.span_for(at, true);
        if span.1 - span.0 - len > room {
            span = fam.span_for(at, false);
        }
        let dense = span.1 - span.0 - len <= room;
        let id = if fam.spilled || !dense {
            let key = key.unwrap_or_else(|| Key::long(name));
            match self.find_name(&key, name) {
                Ok(id) if dense => id,
                Ok(id) => return id,
                Err(_) if dense => self.add_bytes(name),
                Err(slot) => {
                    // Too far out to keep densely: the name table, found
                    // again through the family's `spilled`.
                    let id = self.add_bytes(name);
                    self.names.put(slot, key, id);
                    self.families[f].spilled = true;
                    return id;
                }
            }
        } else {
            self.add_bytes(name)
        };
        let fam = &mut self.families[f];
        fam.grow_to(span);
        self.cells += fam.ids.len() - len;
        fam.ids[at - fam.base] = id + 1;
        id
    }

    /// A name longer than [`INLINE`] bytes: through its family (hashed
    /// without its digits, so members share no probe of the large name
    /// table) or the name table.
    #[inline(never)]
    fn intern_long(&mut self, name: &[u8]) -> u32 {
        if let Some((fk, at, digits)) = long_family_of(name) {
            return self.intern_member(None, (fk, at, Some(digits)), name);
        }
        let key = Key::of(name);
        match self.find_name(&key, name) {
            Ok(id) => id,
            Err(slot) => {
                let id = self.add_bytes(name);
                self.names.put(slot, key, id);
                id
            }
        }
    }

    /// The id of `name` (key `key`) in the name table, or the empty slot
    /// where it would go.
    fn find_name(&self, key: &Key, name: &[u8]) -> Result<u32, usize> {
        self.names.find(key, |id| {
            key.len as usize <= INLINE
                || self.get_index(id as usize).map(str::as_bytes) == Some(name)
        })
    }

    /// Give a new name from the input (valid UTF-8: the loaders check every
    /// block) the next id.
    #[inline]
    fn add_bytes(&mut self, name: &[u8]) -> u32 {
        if name.is_ascii() {
            // SAFETY: ASCII bytes are valid UTF-8. A new name is a third of
            // the lines of array traces: `from_utf8` cost a short one about
            // 110 instructions, a copy char by char about 230 (callgrind).
            let text = unsafe { std::str::from_utf8_unchecked(name) };
            return self.add(text);
        }
        match std::str::from_utf8(name) {
            Ok(s) => self.add(s),
            // Not reached from the loaders; a lossy name keeps the raw key, so
            // the same bytes still find it.
            Err(_) => self.add(&String::from_utf8_lossy(name)),
        }
    }

    /// Append `name` to the arena under the next id.
    #[inline]
    fn add(&mut self, name: &str) -> u32 {
        self.arena.push_with(|text| text.push_str(name))
    }
}

/// Names back to back in one string, numbered in the order they came: a
/// name costs no allocation of its own (traces and recordings name
/// millions). No lookup by name: [`Interner`] adds that.
///
/// A recorded program's heap and stack cells (cprace's binary format) take
/// no text at all: their names, the address in hex, are made when asked
/// for ([`Arena::name`]), and consecutive cells of consecutive ids are one
/// run, so millions of cells cost nothing each (a recording touching
/// 54M cells, BS::thread_pool's tests, kept 434 MB of text ends for them).
#[derive(Clone, Default, PartialEq, Eq)]
pub(crate) struct Arena {
    text: String,
    /// Where the `j`th text name ends in `text` (it starts where the one
    /// before ends). Without cells, name `i` is text name `i`.
    ends: Vec<usize>,
    /// Runs of cells (ascending ids): consecutive ids naming consecutive
    /// cells of one generation, as a recording declares them.
    cells: Vec<Cell>,
    /// Number of names, text and cells.
    len: usize,
}

/// Cells `id..id + n`, at `addr`, `addr + 8`, ...; `before` cells come
/// before them (the runs before), so text names after them are numbered
/// `id - before - n` among the text names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Cell {
    id: u32,
    n: u32,
    generation: u32,
    before: u32,
    addr: u64,
}

/// What name `i` of an [`Arena`] is.
enum Named {
    /// The `j`th text name.
    Text(usize),
    /// The `k`th cell of a run.
    Cell(Cell, u32),
}

impl Arena {
    /// No names, keeping the allocations.
    fn clear(&mut self) {
        self.text.clear();
        self.ends.clear();
        self.cells.clear();
        self.len = 0;
    }

    /// Number of names.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// True when there are no names.
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// What name `i` is, if there is one.
    #[inline]
    fn named(&self, i: usize) -> Option<Named> {
        if i >= self.len {
            return None;
        }
        // Text traces have no cells: name i is text name i.
        if self.cells.is_empty() {
            return Some(Named::Text(i));
        }
        let i = u32::try_from(i).ok()?;
        let Some(r) = self.cells.partition_point(|c| c.id <= i).checked_sub(1) else {
            return Some(Named::Text(i as usize));
        };
        let c = self.cells[r];
        Some(match i - c.id {
            k if k < c.n => Named::Cell(c, k),
            _ => Named::Text((i - c.before - c.n) as usize),
        })
    }

    /// Name `i` when it is text (None for a cell: see [`Arena::name`]).
    #[inline]
    pub(crate) fn get(&self, i: usize) -> Option<&str> {
        match self.named(i)? {
            Named::Text(j) => self.text(j),
            Named::Cell(..) => None,
        }
    }

    /// The `j`th text name.
    #[inline]
    fn text(&self, j: usize) -> Option<&str> {
        let start = if j == 0 { 0 } else { self.ends[j - 1] };
        self.text.get(start..self.ends[j])
    }

    /// Name `i`, a cell's made from its address.
    pub(crate) fn name(&self, i: usize) -> Option<Cow<'_, str>> {
        match self.named(i)? {
            Named::Text(j) => self.text(j).map(Cow::Borrowed),
            Named::Cell(c, k) => {
                let mut name = String::new();
                let addr = c.addr.wrapping_add(8 * u64::from(k));
                crate::trace::cprace_bin::cell_name(&mut name, addr, c.generation);
                Some(Cow::Owned(name))
            }
        }
    }

    /// A new name, the next id: what `write` appends to the text.
    #[inline]
    pub(crate) fn push_with(&mut self, write: impl FnOnce(&mut String)) -> u32 {
        write(&mut self.text);
        self.ends.push(self.text.len());
        self.len += 1;
        self.len as u32 - 1
    }

    /// A new cell (named by its address and generation), the next id.
    pub(crate) fn push_cell(&mut self, addr: u64, generation: u32) -> u32 {
        let id = self.len as u32;
        self.len += 1;
        if let Some(c) = self.cells.last_mut()
            && c.id + c.n == id
            && c.generation == generation
            && c.addr.checked_add(8 * u64::from(c.n)) == Some(addr)
        {
            c.n += 1;
        } else {
            let before = self.cells.last().map_or(0, |c| c.before + c.n);
            self.cells.push(Cell {
                id,
                n: 1,
                generation,
                before,
                addr,
            });
        }
        id
    }
}

impl serde::Serialize for Arena {
    /// The names in order, as a sequence of strings.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq((0..self.len()).map(|i| self.name(i).unwrap_or_default()))
    }
}

/// The names of an [`Interner`] in id order.
#[derive(Clone)]
pub struct Iter<'a> {
    table: &'a Interner,
    range: std::ops::Range<usize>,
}

impl<'a> Iterator for Iter<'a> {
    type Item = Cow<'a, str>;
    #[inline]
    fn next(&mut self) -> Option<Cow<'a, str>> {
        let i = self.range.next()?;
        self.table.name(i)
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.range.size_hint()
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let i = self.range.next_back()?;
        self.table.name(i)
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a Interner {
    type Item = Cow<'a, str>;
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_fill_half_a_cache_line() {
        assert_eq!(std::mem::size_of::<Slot>(), 32);
        assert_eq!(std::mem::size_of::<Set>(), 64);
    }

    /// Cells in runs (consecutive addresses and ids, one generation)
    /// between text names, runs broken by a gap, a generation, a name or
    /// the address space's end: every id is named as it was pushed, and a
    /// sweep of consecutive cells takes one run.
    #[test]
    fn cells_are_named_from_their_runs() {
        let mut a = Arena::default();
        let mut want: Vec<String> = Vec::new();
        let cell = |a: &mut Arena, want: &mut Vec<String>, addr: u64, g: u32| {
            let id = a.push_cell(addr, g);
            assert_eq!(id as usize, want.len());
            let mut n = String::new();
            crate::trace::cprace_bin::cell_name(&mut n, addr, g);
            want.push(n);
        };
        for k in 0..100 {
            cell(&mut a, &mut want, 0x1000 + 8 * k, 0);
        }
        assert_eq!(a.cells.len(), 1);
        cell(&mut a, &mut want, 0x2000, 0);
        cell(&mut a, &mut want, 0x2008, 3);
        cell(&mut a, &mut want, 0x2010, 3);
        a.push_with(|t| t.push('x'));
        want.push("x".into());
        cell(&mut a, &mut want, 0x2018, 3);
        cell(&mut a, &mut want, u64::MAX - 7, 3);
        cell(&mut a, &mut want, 0, 3);
        assert_eq!(a.cells.len(), 6);
        a.push_with(|t| t.push_str("yy"));
        a.push_with(|t| t.push('z'));
        want.extend(["yy".into(), "z".into()]);
        cell(&mut a, &mut want, 8, 3);
        a.push_with(|t| t.push('w'));
        want.push("w".into());
        // Cells take no text: only the four text names have ends.
        assert_eq!(a.ends.len(), 4);
        for (i, w) in want.iter().enumerate() {
            assert_eq!(a.name(i).as_deref(), Some(w.as_str()), "{i}");
            let text = ["x", "yy", "z", "w"].contains(&w.as_str());
            assert_eq!(a.get(i), text.then_some(w.as_str()), "{i}");
        }
        assert_eq!(a.len(), want.len());
        assert_eq!(a.name(want.len()), None);
        assert_eq!(a.get(want.len()), None);
        // Text names before any cell.
        let mut b = Arena::default();
        b.push_with(|t| t.push('g'));
        b.push_cell(0x40, 0);
        b.push_with(|t| t.push('h'));
        assert_eq!(b.get(0), Some("g"));
        assert_eq!(b.get(1), None);
        assert_eq!(b.get(2), Some("h"));
    }

    #[test]
    fn keys_agree_however_they_are_read() {
        let text = b"T0|r(x160)|f0.java:194\nabcdefghijklmnopqrstuvwxyz0123456789";
        for start in 0..text.len() {
            for len in 0..=(text.len() - start).min(INLINE + 2) {
                let direct = Key::new(&text[start..start + len]);
                assert_eq!(direct, Key::in_buf(text, start, len), "{start} {len}");
                assert_eq!(direct.is_some(), len <= INLINE);
            }
        }
        // Zero padding cannot confuse names: the length is part of the key.
        assert_ne!(Key::new(b"a"), Key::new(b"a\0"));
        assert_ne!(Key::new(b""), Key::new(b"\0"));
    }

    #[test]
    fn ids_are_first_appearances_through_growth() {
        let mut table = Interner::default();
        let names: Vec<String> = (0..5000)
            .map(|i| match i % 4 {
                0 => format!("x{i}"),
                1 => format!("some.long.package.Class.method:{i}"),
                // Long names sharing their first 16 bytes and length.
                2 => format!("some.long.package.Class.field{:05}", i % 701),
                _ => format!("T{}", i % 97),
            })
            .collect();
        let mut expected: Vec<&str> = Vec::new();
        for round in 0..2 {
            for n in &names {
                let key = Key::new(n.as_bytes());
                let id = if round == 0 && n.len() % 2 == 0 {
                    table.intern(n)
                } else {
                    table.intern_keyed(key, n.as_bytes())
                };
                if round == 0 && id as usize == expected.len() {
                    expected.push(n);
                }
                assert_eq!(expected.get(id as usize), Some(&n.as_str()), "{n}");
                assert_eq!(table.get_index(id as usize), Some(n.as_str()));
                assert_eq!(table.get_index_of(n), Some(id as usize));
            }
        }
        assert!(table.iter().eq(expected.iter().copied()));
        assert_eq!(table.len(), expected.len());
        assert_eq!(table.get_index_of("absent"), None);
        assert_eq!(
            table.get_index_of("some.long.package.Class.field99999"),
            None
        );
        assert!(!table.insert("x0"));
        assert_eq!(table.insert_full("new name"), (expected.len(), true));
    }

    #[test]
    fn the_empty_name_is_a_name() {
        let mut table = Interner::default();
        assert_eq!(table.intern(""), 0);
        assert_eq!(table.intern_keyed(Key::new(b""), b""), 0);
        assert_eq!(table.get_index(0), Some(""));
        assert_eq!(table.intern("a"), 1);
    }

    /// Check `table` against the first-appearance ids of `names`, interning
    /// each twice (hot path and `&str` path alternating) and looking it up.
    fn agrees_with_first_appearance(names: &[String]) {
        let mut table = Interner::default();
        let mut expected: std::collections::HashMap<&str, usize> = Default::default();
        for (i, n) in names.iter().enumerate() {
            let next = expected.len();
            let want = *expected.entry(n.as_str()).or_insert(next);
            let id = if i % 2 == 0 {
                table.intern_keyed(Key::new(n.as_bytes()), n.as_bytes()) as usize
            } else {
                table.intern(n) as usize
            };
            assert_eq!(id, want, "{n}");
            assert_eq!(table.len(), expected.len(), "{n}");
            assert_eq!(table.get_index(id), Some(n.as_str()));
        }
        for (n, &id) in &expected {
            assert_eq!(table.get_index_of(n), Some(id), "{n}");
            assert_eq!(table.insert_full(n), (id, false), "{n}");
        }
    }

    #[test]
    fn families_keep_first_appearance_ids() {
        let mut names: Vec<String> = Vec::new();
        // Elements in order, backwards (spilled, then dense again), far out.
        for i in 0..3000 {
            names.push(format!("a0[{i}]"));
        }
        for i in (0..3000).rev() {
            names.push(format!("b[{i}]"));
            names.push(format!("b[{}]", 2999 - i));
        }
        for i in 0..200u32 {
            names.push(format!(
                "V{}",
                i.wrapping_mul(2_654_435_761) % 1_000_000_000
            ));
            names.push(format!("V{i}"));
        }
        // Leading zeros, long digit runs, digits in the middle, no digits,
        // the same digits in names of other shapes, long names.
        for n in [
            "a7",
            "a07",
            "a007",
            "a0",
            "a00",
            "a",
            "7",
            "07",
            "0",
            "00",
            "x1234567890",
            "x123456789",
            "x999999999",
            "x1000000000",
            "1a2b3",
            "1a2b30",
            "1a2b03",
            "a7]",
            "a7]]",
            "some.long.package.Class.field17",
            "some.long.package.Class.field17x",
            "f0.java:13",
            "f0.java:14",
            "f1.java:13",
            "é9",
            "é10",
            "T0",
            "T00",
        ] {
            names.push(n.to_string());
            names.push(n.to_string());
        }
        agrees_with_first_appearance(&names);
    }

    /// The last run of digits of `name` by a byte loop: (start, end).
    fn last_digits(name: &[u8]) -> Option<(usize, usize)> {
        let e = name.iter().rposition(u8::is_ascii_digit)? + 1;
        let s = name[..e]
            .iter()
            .rposition(|c| !c.is_ascii_digit())
            .map_or(0, |i| i + 1);
        Some((s, e))
    }

    #[test]
    fn families_split_at_the_last_run_of_digits() {
        // Every byte value at every position, around digits.
        let mut names: Vec<Vec<u8>> = Vec::new();
        for b in 0..=255u8 {
            for pos in 0..INLINE {
                let mut n = b"a12[345]x6789012345678901".to_vec();
                n.truncate(INLINE);
                n[pos] = b;
                for len in [pos + 1, INLINE] {
                    names.push(n[..len].to_vec());
                }
            }
        }
        names.extend(
            [
                "",
                "0",
                "00",
                "07",
                "10",
                "a007",
                "x1234567890",
                "x123456789",
            ]
            .map(|s| s.as_bytes().to_vec()),
        );
        for name in &names {
            let key = Key::new(name).unwrap_or(Key::NONE);
            let got = family_of(&key, name);
            let want = last_digits(name).and_then(|(s, e)| {
                let digits = &name[s..e];
                (digits.len() <= MAX_DIGITS && (digits.len() == 1 || digits[0] != b'0'))
                    .then(|| {
                        let n: u32 = std::str::from_utf8(digits).ok()?.parse().ok()?;
                        let mut masked = name.clone();
                        masked[s..e].fill(0);
                        let mut fk = Key::new(&masked)?;
                        fk.len |= (s as u32) << 8 | (digits.len() as u32) << 16;
                        Some((fk, (n - BASE[digits.len()]) as usize))
                    })
                    .flatten()
            });
            assert_eq!(got, want, "{:?}", String::from_utf8_lossy(name));
        }
    }

    #[test]
    fn the_cache_holds_names_used_again_and_stays_small_for_new_ones() {
        let mut t = Interner::default();
        let name = |i: usize| format!("loc{}", i * 7919 % 100_003);
        let intern = |t: &mut Interner, i: usize| {
            let n = name(i);
            t.intern_keyed(Key::new(n.as_bytes()), n.as_bytes())
        };
        // 1,600 names used evenly, again and again: every one of them fits.
        for i in 0..20 * 1600 {
            intern(&mut t, i % 1600);
        }
        assert!(2 * t.cache.len() >= 1600, "{} sets", t.cache.len());
        // Then a stream of new names: an L1-sized cache.
        for i in 1600..20_000 {
            intern(&mut t, i);
        }
        assert_eq!(t.cache.len(), STREAM_SETS);
        // Ids are still those of first appearance, through the cache.
        for i in (0..20_000).step_by(97) {
            let id = intern(&mut t, i);
            assert_eq!(t.get_index(id as usize), Some(name(i).as_str()));
        }
    }

    #[test]
    fn a_cleared_table_is_a_new_table() {
        // Families met far out, backwards and long; then cleared and filled
        // again in another order: ids are first appearances after the
        // clear, and nothing from before it is found.
        let mut before: Vec<String> = (0..5000)
            .rev()
            .map(|i| format!("x[{}]", 60_000 + 7 * i))
            .collect();
        before.extend((0..3000).map(|i| format!("some.long.package.Class.field@{i}")));
        before.extend(["", "V1", "a"].map(String::from));
        let mut table = Interner::default();
        for n in &before {
            table.intern(n);
        }
        table.clear();
        assert_eq!(table.len(), 0);
        for n in &before {
            assert_eq!(table.get_index_of(n), None, "{n}");
        }
        let after: Vec<String> = (0..4000)
            .map(|i| format!("x[{}]", 90_000 - 11 * i))
            .chain((0..2000).map(|i| format!("some.long.package.Class.field@{}", 5000 - i)))
            .chain(["a", "V2", "x[60000]"].map(String::from))
            .collect();
        for (i, n) in after.iter().enumerate() {
            assert_eq!(table.intern(n) as usize, i, "{n}");
        }
        for (i, n) in after.iter().enumerate() {
            assert_eq!(table.get_index_of(n), Some(i), "{n}");
            assert_eq!(table.get_index(i), Some(n.as_str()));
        }
        assert_eq!(table.get_index_of("x[60007]"), None);
    }

    #[test]
    fn spilled_members_move_into_their_family_once_the_budget_allows() {
        // The first two names' family takes the whole budget, so
        // `b[10000]` is too far below `b[99999]` for their family: the name
        // table. Once enough names came (none of them in a family: a leading
        // zero), it moves into its family's vector.
        let mut names = vec![
            format!("c{}", BASE[7]),
            format!("c{}", BASE[7] as usize + BUDGET - 1),
            "b[99999]".to_string(),
            "b[10000]".to_string(),
        ];
        names.extend((0..60_000).map(|i| format!("x0{i}")));
        names.extend(["b[99999]", "b[99998]", "b[10000]"].map(String::from));
        agrees_with_first_appearance(&names);
        let mut table = Interner::default();
        for n in &names {
            table.intern(n);
        }
        let b = spilled_family(&table, "b[10000]");
        assert_eq!(b.get(89_999), Some(3));
        assert_eq!(b.get(89_998), Some(table.len() as u32));
        assert_eq!(b.get(0), Some(4));
    }

    #[test]
    fn a_small_family_budget_bounds_the_vectors_and_keeps_the_ids() {
        // Elements of two arrays met far apart, as a parser's short-lived
        // tables meet a thread's share of a large array: with a budget of
        // 1,000 slots most of them spill to the name table, with the same
        // ids as the default budget gives.
        let names: Vec<String> = (0..3000)
            .flat_map(|i| [format!("a[{}]", 7 * i), format!("b[{}]", 100_000 - 13 * i)])
            .collect();
        agrees_with_first_appearance(&names);
        let (mut small, mut large) = (Interner::with_family_budget(1000), Interner::default());
        for n in &names {
            assert_eq!(small.intern(n), large.intern(n), "{n}");
        }
        assert!(
            small.cells <= 2 * small.len() + 1000,
            "{} slots",
            small.cells
        );
        assert!(
            large.cells > 2 * large.len() + 1000,
            "{} slots",
            large.cells
        );
        for (i, n) in names.iter().enumerate() {
            assert_eq!(small.get_index_of(n), Some(i), "{n}");
        }
        // A table started afresh keeps its budget.
        small.clear();
        for n in &names {
            small.intern(n);
        }
        assert!(
            small.cells <= 2 * small.len() + 1000,
            "{} slots",
            small.cells
        );
    }

    /// The family of `name` in `table`, which must have spilled.
    fn spilled_family<'t>(table: &'t Interner, name: &str) -> &'t Family {
        let b = name.as_bytes();
        let (fk, _, digits) = match Key::new(b) {
            Some(k) => family_of(&k, b).map(|(fk, at)| (fk, at, None)),
            None => long_family_of(b).map(|(fk, at, d)| (fk, at, Some(d))),
        }
        .unwrap_or((Key::NONE, 0, None));
        let f = table.find_family(&fk, b, digits);
        let f = &table.families[f.unwrap_or(u32::MAX) as usize];
        assert!(f.spilled, "{name}");
        f
    }

    #[test]
    fn long_names_form_families_that_keep_first_appearance_ids() {
        let mut names: Vec<String> = Vec::new();
        // Fields of objects: prefixes shared for 16 bytes and more, names
        // that differ only in their tail (after the digits) or only in one
        // byte before them, members in order, backwards and far out.
        for i in 0..2000u32 {
            let j = i.wrapping_mul(2_654_435_761) % 100_000;
            names.push(format!("moldyn.particle.xvelocity@{i}"));
            names.push(format!("moldyn.particle.yvelocity@{i}"));
            names.push(format!("moldyn.particle.xvelocity@{i}x"));
            names.push(format!("moldyn.particle.xvelocity@{i}y"));
            names.push(format!("moldyn.particle.xvelocity@{}", 1999 - i));
            names.push(format!("sparsematmult.SparseRunner.val@{j}"));
            names.push(format!("sparsematmult.SparseRunner.row@{j}"));
            names.push(format!("a.name.of.exactly.25.bcd{}", i % 10));
        }
        for n in [
            // Leading zeros, digit runs too long, the same digits in other
            // shapes, digits in the middle only, names at the edges of the
            // inline and the family lengths.
            "moldyn.particle.xvelocity@007".to_string(),
            "moldyn.particle.xvelocity@07".to_string(),
            "moldyn.particle.xvelocity@7".to_string(),
            "moldyn.particle.xvelocity@0".to_string(),
            "moldyn.particle.xvelocity@1234567890".to_string(),
            "moldyn.particle.xvelocity@123456789".to_string(),
            "moldyn.particle.xvelocity@".to_string(),
            "moldyn.particle.xvelocity@12@".to_string(),
            "moldyn.particle.xvelocity12@".to_string(),
            "12moldyn.particle.xvelocity@".to_string(),
            "123456789012345678901234567".to_string(),
            "1234567890123456789012345".to_string(),
            "exactly-24-bytes-long-x7".to_string(),
            "exactly-25-bytes-long-xx7".to_string(),
            format!("{}7", "p".repeat(LONG_FAMILY_MAX - 1)),
            format!("{}8", "p".repeat(LONG_FAMILY_MAX - 1)),
            format!("{}7", "p".repeat(LONG_FAMILY_MAX)),
            format!("{}8", "p".repeat(LONG_FAMILY_MAX)),
            "é.long.name.with.accents.é9".to_string(),
            "é.long.name.with.accents.é10".to_string(),
        ] {
            names.push(n.clone());
            names.push(n);
        }
        agrees_with_first_appearance(&names);
    }

    #[test]
    fn long_members_spill_and_move_into_their_family() {
        // As for short names: too far out at first (the budget taken), in
        // the name table, then in the family's vector.
        let far = "some.long.package.Class.field@99999";
        let near = "some.long.package.Class.field@10000";
        let mut names = vec![
            format!("c{}", BASE[7]),
            format!("c{}", BASE[7] as usize + BUDGET - 1),
            far.to_string(),
            near.into(),
        ];
        names.extend((0..60_000).map(|i| format!("other.long.package.Class.f@0{i}")));
        names.extend([far, "some.long.package.Class.field@99998", near].map(String::from));
        agrees_with_first_appearance(&names);
        let mut table = Interner::default();
        for n in &names {
            table.intern(n);
        }
        let f = spilled_family(&table, near);
        assert_eq!(f.get(89_999), Some(3));
        assert_eq!(f.get(89_998), Some(table.len() as u32));
        assert_eq!(f.get(0), Some(4));
    }

    /// Two families of long names whose keys are the same (a hash
    /// collision, forced here by filing one family under the other's key)
    /// stay apart: a family is confirmed against its text.
    #[test]
    fn long_families_with_colliding_keys_stay_apart() {
        let a = b"moldyn.particle.xvelocity@17";
        let b = b"moldyn.particle.yvelocity@17";
        let (fa, at, _) = long_family_of(a).expect("a family");
        let (fb, bt, _) = long_family_of(b).expect("a family");
        assert_eq!(at, bt);
        assert_ne!(fa, fb);
        let mut table = Interner::default();
        let id_b = table.intern_keyed(None, b);
        // File b's family under a's key too: a lookup of `a` now meets it
        // first, and must pass over it.
        let f = table
            .find_family(&fb, b, Some((26, 28)))
            .expect("b's family");
        let slot = table
            .family_keys
            .find(&fa, |_| false)
            .expect_err("no match");
        table.family_keys.put(slot, fa, f);
        let id_a = table.intern_keyed(None, a);
        assert_ne!(id_a, id_b);
        assert_eq!(
            table.get_index(id_a as usize),
            Some("moldyn.particle.xvelocity@17")
        );
        assert_eq!(table.intern_keyed(None, b), id_b);
        assert_eq!(table.intern_keyed(None, a), id_a);
        assert_eq!(
            table.get_index_of("moldyn.particle.xvelocity@17"),
            Some(id_a as usize)
        );
        assert_eq!(
            table.get_index_of("moldyn.particle.yvelocity@17"),
            Some(id_b as usize)
        );
        assert_eq!(table.get_index_of("moldyn.particle.zvelocity@17"), None);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]
        /// Names from a small alphabet with digits, short and long: families
        /// of every shape, spills, leading zeros, collisions of family keys.
        #[test]
        fn random_names_keep_first_appearance_ids(
            names in proptest::collection::vec(
                "[ab0-9\\[\\]]{0,12}|[ab]{1,2}[0-9]{1,4}|[ab]{23,26}[0-9]{1,4}[ab]?", 0..400)
        ) {
            agrees_with_first_appearance(&names);
        }
    }
}
