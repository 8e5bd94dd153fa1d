//! A lookup cache in front of the name tables for the loaders' hot path.
//!
//! Interning was half of parsing time: an `IndexSet` lookup hashes the name,
//! probes its index table, follows the entry to the boxed string and calls
//! `memcmp`. Names in traces are short (`T3`, `x160`, `Foo.java:12`), so this
//! table stores names of up to [`INLINE`] bytes inline, as three zero-padded
//! words next to their id: a lookup is a multiply, one probe in one cache line
//! and three word compares. Longer names fall through to the `IndexSet`, which
//! stays the one authority on ids (ids are still assigned in order of first
//! appearance, so results do not depend on this cache).

use super::model::{Interner, intern};

/// Longest name kept inline.
pub const INLINE: usize = 24;

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

/// A name as three little-endian words, zero-padded, plus its length.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Key {
    words: [u64; 3],
    len: u32,
}

impl Key {
    /// The key of `name`, or None when it is longer than [`INLINE`] bytes.
    #[inline]
    pub fn new(name: &[u8]) -> Option<Key> {
        if name.len() > INLINE {
            return None;
        }
        let mut b = [0u8; INLINE];
        b[..name.len()].copy_from_slice(name);
        Some(Key::from_padded(&b, name.len()))
    }

    /// The key of `buf[start..start + len]`, reading whole words past the end
    /// of the name when `buf` has them (cheaper than copying byte by byte) and
    /// masking the extra bytes off. None when `len` > [`INLINE`].
    #[inline]
    pub fn in_buf(buf: &[u8], start: usize, len: usize) -> Option<Key> {
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

    #[inline]
    fn from_padded(b: &[u8; INLINE], len: usize) -> Key {
        let word = |i: usize| u64::from_le_bytes(b[8 * i..8 * i + 8].try_into().unwrap_or([0; 8]));
        Key {
            words: [word(0), word(1), word(2)],
            len: len as u32,
        }
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
    /// Id + 1; 0 marks an empty slot.
    id1: u32,
}

impl Slot {
    fn key(&self) -> Key {
        Key {
            words: self.words,
            len: self.len,
        }
    }
}

const EMPTY: Slot = Slot {
    words: [0; 3],
    len: 0,
    id1: 0,
};

/// Names cached per table at most. Traces of C programs can name millions of
/// distinct addresses; past this many, new names go straight to the
/// `IndexSet`, so the cache costs at most 2^22 slots × 32 bytes = 128 MiB per
/// table while still covering the hot names (those seen first and often).
/// Java traces of array code name hundreds of thousands of elements (the
/// Java Grande `sor` kernel: 671,111 in 2M events), each read again soon
/// after it is first seen: a name the cache cannot hold costs four cache
/// misses per access instead of one, which made them 5x slower to load than
/// traces of a few thousand names.
pub const MAX_CACHED: usize = 1 << 21;

/// Open-addressing (linear probing) map from short names to ids, kept at most
/// half full.
#[derive(Clone)]
pub struct FastTable {
    slots: Vec<Slot>,
    /// 64 - log2(slots.len()): the hash's top bits pick the first slot.
    shift: u32,
    len: usize,
    /// Cache no more names than this.
    cap: usize,
    /// Long names this cache put in its table (never cached).
    long_added: usize,
    /// Short names it put in its table without caching them (once full).
    short_uncached: usize,
}

impl Default for FastTable {
    fn default() -> Self {
        FastTable::with_cap(MAX_CACHED)
    }
}

impl FastTable {
    /// An empty table caching at most `cap` names.
    fn with_cap(cap: usize) -> FastTable {
        FastTable {
            slots: vec![EMPTY; 64],
            shift: 64 - 6,
            len: 0,
            cap,
            long_added: 0,
            short_uncached: 0,
        }
    }

    /// The id of `key`, if cached.
    #[inline]
    fn get(&self, key: &Key) -> Option<u32> {
        let mask = self.slots.len() - 1;
        let mut i = (key.hash() >> self.shift) as usize;
        loop {
            let s = &self.slots[i & mask];
            if s.id1 == 0 {
                return None;
            }
            if s.words == key.words && s.len == key.len {
                return Some(s.id1 - 1);
            }
            i += 1;
        }
    }

    /// Cache `key -> id`; `key` must not be cached yet.
    fn insert(&mut self, key: Key, id: u32) {
        if 2 * (self.len + 1) > self.slots.len() {
            self.grow();
        }
        self.put(Slot {
            words: key.words,
            len: key.len,
            id1: id + 1,
        });
        self.len += 1;
    }

    fn put(&mut self, slot: Slot) {
        let mask = self.slots.len() - 1;
        let mut i = (slot.key().hash() >> self.shift) as usize;
        while self.slots[i & mask].id1 != 0 {
            i += 1;
        }
        let at = i & mask;
        self.slots[at] = slot;
    }

    fn grow(&mut self) {
        let bigger = vec![EMPTY; 2 * self.slots.len()];
        let old = std::mem::replace(&mut self.slots, bigger);
        self.shift -= 1;
        for s in old.into_iter().filter(|s| s.id1 != 0) {
            self.put(s);
        }
    }

    /// Intern `name` (whose key is `key`, if it is short) in `table`, using
    /// and filling this cache.
    #[inline(always)]
    pub fn intern(&mut self, table: &mut Interner, key: Option<Key>, name: &[u8]) -> u32 {
        if let Some(id) = key.as_ref().and_then(|k| self.get(k)) {
            return id;
        }
        self.intern_new(table, key, name)
    }

    /// The first sighting of a short name, or any long one.
    #[cold]
    #[inline(never)]
    fn intern_new(&mut self, table: &mut Interner, key: Option<Key>, name: &[u8]) -> u32 {
        // Loaders hand over UTF-8 (they check it per block); lossy is a no-op then.
        let text = String::from_utf8_lossy(name);
        // When every name of `table` is either cached or long, a short name
        // the cache misses is new: insert it without looking it up first (a
        // second cache miss on big tables).
        let complete = self.short_uncached == 0 && table.len() == self.len + self.long_added;
        let before = table.len();
        let id = if key.is_some() && complete {
            table.insert_full(text.into()).0 as u32
        } else {
            intern(table, &text)
        };
        let added = table.len() > before;
        match key {
            // Only called on a cache miss, so `key` is not cached yet.
            Some(k) if self.len < self.cap => self.insert(k, id),
            Some(_) => self.short_uncached += usize::from(added),
            None => self.long_added += usize::from(added),
        }
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_fill_half_a_cache_line() {
        assert_eq!(std::mem::size_of::<Slot>(), 32);
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
    fn ids_match_the_index_set_through_growth() {
        for cap in [MAX_CACHED, 100] {
            ids_match_with_cap(cap);
        }
    }

    fn ids_match_with_cap(cap: usize) {
        let mut table = Interner::default();
        let mut fast = FastTable::with_cap(cap);
        let names: Vec<String> = (0..5000)
            .map(|i| match i % 3 {
                0 => format!("x{i}"),
                1 => format!("some.long.package.Class.method:{i}"),
                _ => format!("T{}", i % 97),
            })
            .collect();
        for round in 0..2 {
            for n in &names {
                let id = fast.intern(&mut table, Key::new(n.as_bytes()), n.as_bytes());
                assert_eq!(table.get_index(id as usize).map(|s| &**s), Some(n.as_str()));
                if round == 1 {
                    assert_eq!(Some(id as usize), table.get_index_of(n.as_str()));
                }
            }
        }
        assert!(fast.len <= cap && fast.len > 0);
    }
}
