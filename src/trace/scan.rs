//! Finding a few special bytes in short lines, eight bytes at a time (SWAR).
//!
//! Trace lines are short (20-40 bytes) and split at a handful of separators, so
//! a `memchr` call per field costs more than it saves, and a byte loop tests
//! every byte once per separator. Here one word of input is tested against all
//! separators with a few integer operations, and the matches come out in order.

/// Bytes with only the lowest bit set in each byte.
const ONES: u64 = u64::MAX / 255;
/// The low seven bits of each byte.
const LOW7: u64 = ONES * 0x7f;

/// High bit set in every byte of `w` equal to `c` (exact: no false positives
/// from borrows, unlike the shorter `(x - ONES) & !x` test).
#[inline(always)]
pub(crate) fn eq_bytes(w: u64, c: u8) -> u64 {
    let x = w ^ (ONES * c as u64);
    !((x & LOW7).wrapping_add(LOW7) | x | LOW7)
}

/// Whether `bytes[s..e]` is not empty and has no surrounding ASCII spaces.
#[inline(always)]
pub(crate) fn trimmed(bytes: &[u8], s: usize, e: usize) -> bool {
    match (bytes.get(s), e.checked_sub(1).and_then(|l| bytes.get(l))) {
        (Some(a), Some(z)) => e > s && !a.is_ascii_whitespace() && !z.is_ascii_whitespace(),
        _ => false,
    }
}

/// The positions of the special bytes of `bytes` from some start on, in order;
/// `F` maps a word to the high bits of its special bytes (built from
/// [`eq_bytes`]; zero bytes must not be special: they pad the last word).
pub(crate) struct Specials<'a, F: Fn(u64) -> u64> {
    bytes: &'a [u8],
    /// Start of the current word.
    base: usize,
    /// High bit of every special byte of the current word not yet returned.
    mask: u64,
    specials: F,
}

impl<'a, F: Fn(u64) -> u64> Specials<'a, F> {
    /// Scan `bytes` from `start`.
    #[inline(always)]
    pub(crate) fn new(bytes: &'a [u8], start: usize, specials: F) -> Specials<'a, F> {
        Specials {
            bytes,
            base: start,
            mask: specials(word_at(bytes, start)),
            specials,
        }
    }
}

impl<F: Fn(u64) -> u64> Iterator for Specials<'_, F> {
    /// A special byte's position and value.
    type Item = (usize, u8);

    #[inline(always)]
    fn next(&mut self) -> Option<(usize, u8)> {
        while self.mask == 0 {
            self.base += 8;
            if self.base >= self.bytes.len() {
                return None;
            }
            self.mask = (self.specials)(word_at(self.bytes, self.base));
        }
        let p = self.base + (self.mask.trailing_zeros() / 8) as usize;
        self.mask &= self.mask - 1;
        // Padding past the end is zeros, which are not special, so p < len.
        Some((p, *self.bytes.get(p)?))
    }
}

/// The eight bytes at `at`, little-endian, zero-padded past the end.
#[inline(always)]
fn word_at(bytes: &[u8], at: usize) -> u64 {
    match bytes.get(at..at + 8) {
        Some(w) => u64::from_le_bytes(w.try_into().unwrap_or([0; 8])),
        None => {
            let mut b = [0u8; 8];
            let rest = bytes.get(at..).unwrap_or(&[]);
            b[..rest.len()].copy_from_slice(rest);
            u64::from_le_bytes(b)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_every_special_byte_in_order() {
        let text = b"T0|r(x)|f.java:3\n\nT1|w(y)\nzz,\"q\"|(|)";
        let special = |c: u8| matches!(c, b'|' | b'(' | b')' | b'\n' | b',' | b'"');
        let f = |w: u64| {
            eq_bytes(w, b'|')
                | eq_bytes(w, b'(')
                | eq_bytes(w, b')')
                | eq_bytes(w, b'\n')
                | eq_bytes(w, b',')
                | eq_bytes(w, b'"')
        };
        for start in 0..text.len() {
            let got: Vec<(usize, u8)> = Specials::new(text, start, f).collect();
            let want: Vec<(usize, u8)> = (start..text.len())
                .filter(|&i| special(text[i]))
                .map(|i| (i, text[i]))
                .collect();
            assert_eq!(got, want, "from {start}");
        }
    }

    #[test]
    fn byte_test_is_exact() {
        for c in 0..=255u8 {
            for b in 0..=255u8 {
                let w = u64::from_le_bytes([b, c, 1, 0, c, c.wrapping_add(1), 0x80, b]);
                let m = eq_bytes(w, c);
                for (i, &x) in w.to_le_bytes().iter().enumerate() {
                    assert_eq!(m >> (8 * i + 7) & 1 == 1, x == c, "{c} {b} {i}");
                    assert_eq!(m >> (8 * i) & 0x7f, 0);
                }
            }
        }
    }
}
