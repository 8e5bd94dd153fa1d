//! Variable ids by byte address, kept like a sanitizer's shadow memory: a
//! table of 4 KiB pages, each a table of 64-byte lines, each line the ids of
//! its 64 bytes. A lookup is a page-map probe (usually skipped: the last page
//! of each thread is remembered) and two array loads, where a hash map of
//! millions of addresses misses the cache on nearly every new address.
//!
//! Memory: 256 bytes per page and per line touched, so at most 4 bytes per
//! byte of memory the run touched (a line's 64 bytes hold 256 bytes of ids),
//! like TSan's shadow; a run touching one byte per page costs 512 bytes per
//! page (an eighth of the page).

use std::collections::BTreeSet;

use rustc_hash::FxHashMap;

const PAGE_BITS: u32 = 12;
const LINE_BITS: u32 = 6;
const LINES: usize = 1 << (PAGE_BITS - LINE_BITS);
const BYTES: usize = 1 << LINE_BITS;
/// Threads whose last page is remembered apart (by recorder id modulo this).
const PARTS: usize = 8;

/// Ids (plus one; 0 is none) by byte address.
pub(crate) struct Shadow {
    /// Page number -> index into `pages`.
    index: FxHashMap<u64, u32>,
    /// The page numbers present, in order, for clearing freed ranges.
    present: BTreeSet<u64>,
    /// Per page: the index into `lines` of each line, plus one (0: none).
    pages: Vec<[u32; LINES]>,
    /// Per line: the id of each byte, plus one (0: none).
    lines: Vec<[u32; BYTES]>,
    /// (page number, index into `pages`) of the last page looked up by each
    /// part of the threads; page number u64::MAX is none.
    last: [(u64, u32); PARTS],
}

impl Default for Shadow {
    fn default() -> Self {
        Shadow {
            index: FxHashMap::default(),
            present: BTreeSet::new(),
            pages: Vec::new(),
            lines: Vec::new(),
            last: [(u64::MAX, 0); PARTS],
        }
    }
}

impl Shadow {
    /// The index of page `pn`, looked up for thread `tid`, when the page is
    /// present: the thread part's last page, else the page map.
    #[inline(always)]
    fn find_page(&self, pn: u64, tid: u32) -> Option<u32> {
        match self.last[tid as usize % PARTS] {
            (p, i) if p == pn => Some(i),
            _ => self.index.get(&pn).copied(),
        }
    }

    /// [`Shadow::find_page`] of `addr`'s page, remembered as the last page
    /// of `tid`'s part.
    #[inline(always)]
    fn page(&mut self, addr: u64, tid: u32) -> Option<usize> {
        let pn = addr >> PAGE_BITS;
        let i = self.find_page(pn, tid)?;
        self.last[tid as usize % PARTS] = (pn, i);
        Some(i as usize)
    }

    /// The id at `addr` (looked up for thread `tid`), if one is set.
    #[inline(always)]
    pub(super) fn get(&mut self, addr: u64, tid: u32) -> Option<u32> {
        let p = self.page(addr, tid)?;
        let l = self.pages[p][(addr as usize >> LINE_BITS) & (LINES - 1)];
        if l == 0 {
            return None;
        }
        self.lines[l as usize - 1][addr as usize & (BYTES - 1)].checked_sub(1)
    }

    /// Starts loading the id at `addr` (looked up for thread `tid`) into
    /// the cache, when its line is present: a program touching millions of
    /// addresses misses the cache on most new ones.
    #[inline(always)]
    pub(super) fn prefetch(&self, addr: u64, tid: u32) {
        let Some(i) = self.find_page(addr >> PAGE_BITS, tid) else {
            return;
        };
        let l = self.pages[i as usize][(addr as usize >> LINE_BITS) & (LINES - 1)];
        if l != 0 {
            crate::cache::prefetch(&self.lines[l as usize - 1][addr as usize & (BYTES - 1)]);
        }
    }

    /// How many of the `max` addresses from `addr` on, within its line,
    /// hold the ids `id`, `id + 1`, ... in order (0 when `addr` holds
    /// another): a range's cells, walked without a lookup each.
    #[inline]
    pub(super) fn count_from(&mut self, addr: u64, tid: u32, id: u32, max: u64) -> u64 {
        let Some(p) = self.page(addr, tid) else {
            return 0;
        };
        let l = self.pages[p][(addr as usize >> LINE_BITS) & (LINES - 1)];
        if l == 0 {
            return 0;
        }
        let at = addr as usize & (BYTES - 1);
        let ids = &self.lines[l as usize - 1][at..];
        let n = ids.len().min(max.min(BYTES as u64) as usize);
        let mut want = id.wrapping_add(1);
        for (k, &v) in ids[..n].iter().enumerate() {
            if v != want {
                return k as u64;
            }
            want = want.wrapping_add(1);
        }
        n as u64
    }

    /// Sets the id at `addr` (looked up for thread `tid`) to `id`.
    pub(super) fn set(&mut self, addr: u64, tid: u32, id: u32) {
        let p = match self.page(addr, tid) {
            Some(p) => p,
            None => {
                let pn = addr >> PAGE_BITS;
                let i = self.pages.len() as u32;
                self.pages.push([0; LINES]);
                self.index.insert(pn, i);
                self.present.insert(pn);
                self.last[tid as usize % PARTS] = (pn, i);
                i as usize
            }
        };
        let slot = &mut self.pages[p][(addr as usize >> LINE_BITS) & (LINES - 1)];
        if *slot == 0 {
            self.lines.push([0; BYTES]);
            *slot = self.lines.len() as u32;
        }
        let l = *slot as usize - 1;
        self.lines[l][addr as usize & (BYTES - 1)] = id + 1;
    }

    /// Forgets the ids of the bytes in `start..end`, appending each id it
    /// held to `forgotten`. Costs the lines present in the range, not its
    /// length.
    pub(super) fn clear(&mut self, start: u64, end: u64, forgotten: &mut Vec<u32>) {
        if start >= end {
            return;
        }
        let last_page = (end - 1) >> PAGE_BITS;
        for &pn in self.present.range(start >> PAGE_BITS..=last_page) {
            let p = self.index[&pn] as usize;
            let page_start = pn << PAGE_BITS;
            let lo = start.max(page_start) - page_start;
            let hi = end.min(page_start + (1 << PAGE_BITS)) - page_start;
            for line in (lo >> LINE_BITS)..=((hi - 1) >> LINE_BITS) {
                let l = self.pages[p][line as usize];
                if l == 0 {
                    continue;
                }
                let line_start = line << LINE_BITS;
                let a = (lo.max(line_start) - line_start) as usize;
                let b = (hi.min(line_start + BYTES as u64) - line_start) as usize;
                for id in &mut self.lines[l as usize - 1][a..b] {
                    if *id != 0 {
                        forgotten.push(*id - 1);
                        *id = 0;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_kept_per_byte_and_cleared_by_range() {
        let mut s = Shadow::default();
        let addrs = [
            0x1000u64,
            0x1001,
            0x103f,
            0x1040,
            0x1fff,
            0x2000,
            0x7fff_0000_0008,
        ];
        for (i, &a) in addrs.iter().enumerate() {
            assert_eq!(s.get(a, 1), None);
            s.set(a, (i % 3) as u32, i as u32);
        }
        for (i, &a) in addrs.iter().enumerate() {
            // Looked up by another thread than the one that set it.
            assert_eq!(s.get(a, 2), Some(i as u32), "{a:#x}");
        }
        assert_eq!(s.get(0x1002, 1), None);
        // A range across a line and a page boundary, ending inside a line.
        let mut forgotten = Vec::new();
        s.clear(0x1001, 0x2001, &mut forgotten);
        forgotten.sort_unstable();
        assert_eq!(forgotten, [1, 2, 3, 4, 5]);
        let kept: Vec<_> = addrs.iter().map(|&a| s.get(a, 0)).collect();
        assert_eq!(kept, [Some(0), None, None, None, None, None, Some(6)]);
        forgotten.clear();
        s.clear(0, u64::MAX, &mut forgotten);
        assert_eq!(forgotten, [0, 6]);
        assert!(addrs.iter().all(|&a| s.get(a, 0).is_none()));
        s.set(0x1001, 0, 9);
        assert_eq!(s.get(0x1001, 5), Some(9));
    }
}
