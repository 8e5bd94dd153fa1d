//! Tables indexed by variable id, in pages that are freed when every
//! variable on them has been retired.
//!
//! A recorded program that allocates memory again and again names each new
//! block's cells with new variables (the old ones are retired: see
//! [`crate::engine::detector::Detector::retire`]). A dense table grows with
//! every variable the program ever touched (BS::thread_pool's tests: 54.3M,
//! 30.6M of them retired); in pages, it grows with the ones still in use.

/// Variables to a page.
const PAGE_BITS: u32 = 12;
const PAGE_MASK: usize = (1 << PAGE_BITS) - 1;

/// A table of `T` by variable id; a variable not yet used holds `fill`.
#[derive(Clone, Debug)]
pub(crate) struct Paged<T> {
    pages: Vec<Page<T>>,
    fill: T,
}

#[derive(Clone, Debug)]
struct Page<T> {
    /// Empty: never used, or freed when its last variable was retired.
    items: Box<[T]>,
    /// Items in use (marked by the caller, see [`Paged::slot`]).
    live: u32,
}

impl<T> Default for Page<T> {
    fn default() -> Self {
        Page {
            items: Box::default(),
            live: 0,
        }
    }
}

impl<T: Default + Clone> Default for Paged<T> {
    fn default() -> Self {
        Paged::new(T::default())
    }
}

impl<T: Clone> Paged<T> {
    /// An empty table whose unused items are `fill`.
    pub(crate) fn new(fill: T) -> Self {
        Paged {
            pages: Vec::new(),
            fill,
        }
    }

    /// Variable `v`'s item, if its page is there.
    #[inline(always)]
    pub(crate) fn get(&self, v: usize) -> Option<&T> {
        self.pages.get(v >> PAGE_BITS)?.items.get(v & PAGE_MASK)
    }

    /// Variable `v`'s item (its page made when missing) and its page's
    /// count of items in use, which the caller raises when the item comes
    /// into use.
    #[inline(always)]
    pub(crate) fn slot(&mut self, v: usize) -> (&mut T, &mut u32) {
        let p = v >> PAGE_BITS;
        if self.pages.get(p).is_none_or(|page| page.items.is_empty()) {
            self.add_page(p);
        }
        let page = &mut self.pages[p];
        (&mut page.items[v & PAGE_MASK], &mut page.live)
    }

    #[cold]
    #[inline(never)]
    fn add_page(&mut self, p: usize) {
        if self.pages.len() <= p {
            self.pages.resize_with(p + 1, Page::default);
        }
        self.pages[p].items = vec![self.fill.clone(); 1 << PAGE_BITS].into_boxed_slice();
    }

    /// Puts variable `v` out of use when `in_use` says its item is: the
    /// item becomes `fill`, and the page goes when it held the last one.
    /// Returns the item it held.
    pub(crate) fn retire(&mut self, v: usize, in_use: impl Fn(&T) -> bool) -> Option<T> {
        let page = self.pages.get_mut(v >> PAGE_BITS)?;
        let item = page.items.get_mut(v & PAGE_MASK)?;
        if !in_use(item) {
            return None;
        }
        let old = std::mem::replace(item, self.fill.clone());
        page.live -= 1;
        if page.live == 0 {
            page.items = Box::default();
        }
        Some(old)
    }

    /// Whether `v`'s page is held (for tests).
    #[cfg(test)]
    pub(crate) fn page_held(&self, v: usize) -> bool {
        self.pages
            .get(v >> PAGE_BITS)
            .is_some_and(|p| !p.items.is_empty())
    }

    /// Items in use on `v`'s page (for tests).
    #[cfg(test)]
    pub(crate) fn live(&self, v: usize) -> u32 {
        self.pages.get(v >> PAGE_BITS).map_or(0, |p| p.live)
    }
}

/// State that only some variables have (atomics: their clocks, their
/// hard-edge sources), in rows numbered from 0; a retired variable's row
/// goes to the next variable that needs one (a thread pool's tests use 30M
/// atomics in vectors allocated again and again).
#[derive(Clone, Debug)]
pub(crate) struct Rows<T> {
    rows: Vec<T>,
    /// Rows given back, to be used again.
    free: Vec<u32>,
}

impl<T> Default for Rows<T> {
    fn default() -> Self {
        Rows {
            rows: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<T> Rows<T> {
    /// A row holding `value`: one given back, else a new one.
    pub(crate) fn put(&mut self, value: T) -> u32 {
        match self.free.pop() {
            Some(r) => {
                self.rows[r as usize] = value;
                r
            }
            None => {
                self.rows.push(value);
                self.rows.len() as u32 - 1
            }
        }
    }

    /// Gives row `r` back (it keeps what it holds until [`Rows::put`]
    /// takes it).
    pub(crate) fn free(&mut self, r: u32) {
        self.free.push(r);
    }
}

impl<T> std::ops::Index<usize> for Rows<T> {
    type Output = T;
    #[inline(always)]
    fn index(&self, r: usize) -> &T {
        &self.rows[r]
    }
}

impl<T> std::ops::IndexMut<usize> for Rows<T> {
    #[inline(always)]
    fn index_mut(&mut self, r: usize) -> &mut T {
        &mut self.rows[r]
    }
}

/// Variables to a page, for tests that fill one.
#[cfg(test)]
pub(crate) const PAGE: usize = 1 << PAGE_BITS;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_goes_with_its_last_item_and_comes_back() {
        let mut t = Paged::new(u32::MAX);
        let used = |x: &u32| *x != u32::MAX;
        for v in (0..10).chain([PAGE + 1]) {
            let (item, live) = t.slot(v);
            *item = v as u32;
            *live += 1;
        }
        assert_eq!(t.get(3), Some(&3));
        assert_eq!(t.get(11), Some(&u32::MAX));
        assert_eq!(t.get(5 * PAGE), None);
        // Retiring an item not in use, or twice, changes nothing.
        assert_eq!(t.retire(11, used), None);
        assert_eq!(t.retire(0, used), Some(0));
        assert_eq!(t.retire(0, used), None);
        assert_eq!(t.live(0), 9);
        for v in 1..10 {
            t.retire(v, used);
        }
        assert!(!t.page_held(0));
        assert!(t.page_held(PAGE));
        assert_eq!(t.get(3), None);
        // A variable of a freed page gets a fresh one.
        let (item, _) = t.slot(12);
        assert_eq!(*item, u32::MAX);
        assert_eq!(t.get(3), Some(&u32::MAX));
    }
}
