//! The name tables: dense ids for thread, lock, variable and location names,
//! in order of first appearance, with one hash probe per name.
//!
//! Traces of array code name hundreds of thousands of variables (the Java
//! Grande `sor` kernel: 671,111 in 2M events), a third of the events naming
//! one for the first time. An `IndexSet<Box<str>>` behind a lookup cache cost
//! each new name two random DRAM accesses (the cache's slot, the set's index)
//! plus an allocation and a rehash now and then. Here the open-addressing
//! table is the one authority: names live back to back in one arena and each
//! slot holds a name's key and id, so a lookup is a multiply, one probe in one
//! cache line and three word compares, and a new name is appended to the
//! arena and written into the slot the probe ended on.
//!
//! A name of up to [`INLINE`] bytes is its own key: three zero-padded words
//! and its length, read straight out of the input block with masked word
//! loads. A longer name's key is its first 16 bytes, a hash of all of it and
//! its length; a matching slot is confirmed against the arena.

use std::hash::Hasher;

use rustc_hash::FxHasher;

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

/// A short name as three little-endian words, zero-padded, plus its length.
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

const EMPTY: Slot = Slot {
    words: [0; 3],
    len: 0,
    id1: 0,
};

/// Names and their dense ids, in order of first appearance; the index of a
/// name is its id. An open-addressing (linear probing) table, kept at most
/// half full, maps keys to ids; the names themselves sit in one arena.
#[derive(Clone)]
pub struct Interner {
    /// Every name, back to back.
    text: String,
    /// Where name `i` ends in `text` (it starts where name `i - 1` ends).
    ends: Vec<usize>,
    slots: Vec<Slot>,
    /// 64 - log2(slots.len()): the hash's top bits pick the first slot.
    shift: u32,
}

impl Default for Interner {
    fn default() -> Self {
        Interner {
            text: String::new(),
            ends: Vec::new(),
            slots: vec![EMPTY; 64],
            shift: 64 - 6,
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
        self.ends == other.ends && self.text == other.text
    }
}

impl Eq for Interner {}

impl Interner {
    /// Number of names.
    #[inline]
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// True when there are no names.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The name with id `i`.
    #[inline]
    pub fn get_index(&self, i: usize) -> Option<&str> {
        let end = *self.ends.get(i)?;
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        self.text.get(start..end)
    }

    /// The id of `name`, if it has one.
    pub fn get_index_of(&self, name: &str) -> Option<usize> {
        let name = name.as_bytes();
        match self.find(&Key::of(name), name) {
            Ok(id) => Some(id as usize),
            Err(_) => None,
        }
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
    pub fn intern(&mut self, name: &str) -> u32 {
        self.insert_full(name).0 as u32
    }

    /// The id of `name` and whether it is new (it gets the next id).
    pub fn insert_full(&mut self, name: &str) -> (usize, bool) {
        let b = name.as_bytes();
        let key = Key::of(b);
        match self.find(&key, b) {
            Ok(id) => (id as usize, false),
            Err(at) => (self.add(at, key, name) as usize, true),
        }
    }

    /// Add `name` if it is new; true when it was.
    pub fn insert(&mut self, name: &str) -> bool {
        self.insert_full(name).1
    }

    /// The loaders' hot path: the id of `name` (UTF-8 bytes; `key` its
    /// [`Key`] when it is short, None when it is longer than [`INLINE`]).
    #[inline(always)]
    pub fn intern_keyed(&mut self, key: Option<Key>, name: &[u8]) -> u32 {
        if let Some(k) = key {
            debug_assert_eq!(Some(k), Key::new(name));
            // Short: the key is the name, no arena compare.
            let mask = self.slots.len() - 1;
            let mut i = (k.hash() >> self.shift) as usize;
            loop {
                let s = &self.slots[i & mask];
                if s.id1 == 0 {
                    return self.add_bytes(i & mask, k, name);
                }
                if s.words == k.words && s.len == k.len {
                    return s.id1 - 1;
                }
                i += 1;
            }
        }
        self.intern_long(name)
    }

    #[cold]
    #[inline(never)]
    fn intern_long(&mut self, name: &[u8]) -> u32 {
        let key = Key::of(name);
        match self.find(&key, name) {
            Ok(id) => id,
            Err(at) => self.add_bytes(at, key, name),
        }
    }

    /// The id of `key` (the key of `name`), or the empty slot where it would go.
    #[inline]
    fn find(&self, key: &Key, name: &[u8]) -> Result<u32, usize> {
        let mask = self.slots.len() - 1;
        let mut i = (key.hash() >> self.shift) as usize;
        loop {
            let s = &self.slots[i & mask];
            if s.id1 == 0 {
                return Err(i & mask);
            }
            if s.words == key.words
                && s.len == key.len
                && (key.len as usize <= INLINE
                    || self.get_index(s.id1 as usize - 1).map(str::as_bytes) == Some(name))
            {
                return Ok(s.id1 - 1);
            }
            i += 1;
        }
    }

    /// A new name from the input (valid UTF-8: the loaders check every block).
    #[cold]
    #[inline(never)]
    fn add_bytes(&mut self, at: usize, key: Key, name: &[u8]) -> u32 {
        match std::str::from_utf8(name) {
            Ok(s) => self.add(at, key, s),
            // Not reached from the loaders; a lossy name keeps the raw key, so
            // the same bytes still find it.
            Err(_) => self.add(at, key, &String::from_utf8_lossy(name)),
        }
    }

    /// Give `name` (key `key`, absent, to go in empty slot `at`) the next id.
    fn add(&mut self, at: usize, key: Key, name: &str) -> u32 {
        let id = self.ends.len() as u32;
        self.text.push_str(name);
        self.ends.push(self.text.len());
        self.slots[at] = Slot {
            words: key.words,
            len: key.len,
            id1: id + 1,
        };
        if 2 * self.ends.len() > self.slots.len() {
            self.grow();
        }
        id
    }

    fn grow(&mut self) {
        let bigger = vec![EMPTY; 2 * self.slots.len()];
        let old = std::mem::replace(&mut self.slots, bigger);
        self.shift -= 1;
        let mask = self.slots.len() - 1;
        for s in old.into_iter().filter(|s| s.id1 != 0) {
            let k = Key {
                words: s.words,
                len: s.len,
            };
            let mut i = (k.hash() >> self.shift) as usize;
            while self.slots[i & mask].id1 != 0 {
                i += 1;
            }
            self.slots[i & mask] = s;
        }
    }
}

/// The names of an [`Interner`] in id order.
#[derive(Clone)]
pub struct Iter<'a> {
    table: &'a Interner,
    range: std::ops::Range<usize>,
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a str;
    #[inline]
    fn next(&mut self) -> Option<&'a str> {
        let i = self.range.next()?;
        self.table.get_index(i)
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.range.size_hint()
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let i = self.range.next_back()?;
        self.table.get_index(i)
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a Interner {
    type Item = &'a str;
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
}
