//! A counting global allocator, so `cprace sweep` can report each run's peak
//! heap, and so running out of memory is exit 2 with a sentence, not an abort.
//!
//! The binary installs [`Counting`] with `#[global_allocator]` (src/main.rs);
//! the library only reads the counters. When the system allocator returns
//! null, [`Counting`] writes one sentence to stderr (without allocating) and
//! exits with status 2, instead of returning null and letting the standard
//! library abort the process (SIGABRT, exit 134): stable Rust has no
//! allocation-error hook, so the wrapper is where that decision can be made. Without it (e.g. in tests linking the
//! library), [`reset_peak`] and [`peak`] return None rather than a wrong zero.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed, Ordering::SeqCst};

/// Bytes currently allocated through [`Counting`].
static CURRENT: AtomicUsize = AtomicUsize::new(0);
/// Most bytes allocated at once since the last [`reset_peak`].
static PEAK: AtomicUsize = AtomicUsize::new(0);
/// Set by the first allocation through [`Counting`]: it is installed.
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// [`System`] wrapped with current/peak byte counters (relaxed atomics: the
/// counts are statistics, not synchronisation).
pub struct Counting;

fn grew(bytes: usize) {
    let now = CURRENT.fetch_add(bytes, Relaxed) + bytes;
    PEAK.fetch_max(now, Relaxed);
    if !INSTALLED.load(Relaxed) {
        INSTALLED.store(true, Relaxed);
    }
}

fn shrank(bytes: usize) {
    CURRENT.fetch_sub(bytes, Relaxed);
}

/// Report a failed allocation of `size` bytes and exit with status 2. Writes
/// with a stack buffer and raw stderr (unbuffered), so it never allocates.
#[cold]
fn out_of_memory(size: usize) -> ! {
    use std::io::Write;
    let mut buf = [0u8; 200];
    let mut w = &mut buf[..];
    let _ = writeln!(
        w,
        "cprace: error: out of memory: an allocation of {size} bytes failed \
         ({} bytes in use); the trace needs more memory than this process may use",
        CURRENT.load(Relaxed)
    );
    let n = 200 - w.len();
    let _ = std::io::stderr().write_all(&buf[..n]);
    std::process::exit(2)
}

// SAFETY: every call is forwarded unchanged to `System`; the counters only
// observe, and a null result ends the process instead of being returned.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: `layout` has a non-zero size, as `GlobalAlloc::alloc`'s
        // caller guarantees; it goes to the system allocator unchanged.
        let p = unsafe { System.alloc(layout) };
        if p.is_null() {
            out_of_memory(layout.size());
        }
        grew(layout.size());
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: `layout` has a non-zero size, as the caller guarantees; it
        // goes to the system allocator unchanged.
        let p = unsafe { System.alloc_zeroed(layout) };
        if p.is_null() {
            out_of_memory(layout.size());
        }
        grew(layout.size());
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller guarantees `ptr` was allocated by this allocator
        // with `layout`; every allocation here is the system allocator's, so
        // `ptr` is one of its blocks of that layout.
        unsafe { System.dealloc(ptr, layout) };
        shrank(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller guarantees `ptr` is this allocator's (so the
        // system allocator's) block of `layout`, and `new_size` is non-zero
        // and fits `isize` once rounded up to the alignment.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if p.is_null() {
            out_of_memory(new_size);
        }
        if new_size >= layout.size() {
            grew(new_size - layout.size());
        } else {
            shrank(layout.size() - new_size);
        }
        p
    }
}

/// Whether [`Counting`] is the global allocator of this process.
pub fn installed() -> bool {
    INSTALLED.load(Relaxed)
}

/// Start a new peak measurement: the peak becomes the bytes allocated now,
/// which are returned (the baseline a run's own peak is measured above).
/// None when [`Counting`] is not installed.
pub fn reset_peak() -> Option<usize> {
    if !installed() {
        return None;
    }
    let now = CURRENT.load(Relaxed);
    PEAK.store(now, Relaxed);
    Some(now)
}

/// Most heap bytes allocated at once since the last [`reset_peak`] (None when
/// [`Counting`] is not installed).
pub fn peak() -> Option<usize> {
    installed().then(|| PEAK.load(Relaxed))
}

/// Heap bytes allocated now (None when [`Counting`] is not installed).
pub fn current() -> Option<usize> {
    installed().then(|| CURRENT.load(Relaxed))
}

/// Free `x` on a thread of its own when `big`, so the caller need not wait:
/// a detector's per-variable state can be millions of allocations, and
/// freeing them after the last event took about a tenth of the run on a
/// variable-heavy trace. A process that exits first never frees it at all;
/// [`settle`] waits for these frees.
pub fn drop_later<T: Send + 'static>(x: T, big: bool) {
    if big {
        PENDING.fetch_add(1, SeqCst);
        let freeing = std::thread::Builder::new()
            .name("cprace-free".into())
            .spawn(move || {
                drop(x);
                PENDING.fetch_sub(1, SeqCst);
            });
        // No thread: the closure, and `x` with it, was dropped here.
        if freeing.is_err() {
            PENDING.fetch_sub(1, SeqCst);
        }
    }
}

/// Frees [`drop_later`] has started and not finished.
static PENDING: AtomicUsize = AtomicUsize::new(0);

/// Wait until every [`drop_later`] free has finished (before measuring a
/// run's peak heap, so that an earlier run's memory is not still counted).
pub(crate) fn settle() {
    while PENDING.load(SeqCst) > 0 {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// Events after which a detector's state is worth freeing on its own thread
/// ([`drop_later`]).
pub const BIG: u64 = 1 << 20;

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A big value is freed on another thread, and `settle` waits for it.
    #[test]
    fn settle_waits_for_background_frees() {
        let shared = Arc::new(());
        let held = Arc::clone(&shared);
        drop_later((held, vec![0u8; 1 << 20]), true);
        settle();
        assert_eq!(Arc::strong_count(&shared), 1);
        // Not big: freed at once.
        drop_later(Arc::clone(&shared), false);
        assert_eq!(Arc::strong_count(&shared), 1);
    }
}
