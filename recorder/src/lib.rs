//! libcprace_rt: the runtime that programs built by `cprace cc` call instead of
//! ThreadSanitizer's.
//!
//! gcc/clang `-fsanitize=thread` instrument every memory access with a call
//! (`__tsan_read4(addr)`, `__tsan_atomic32_fetch_add(...)`, ...); this library
//! defines those entry points ([`tsan`]), the annotation interfaces
//! ([`annotate`]), and interposes the pthread and semaphore functions
//! ([`pthread`]), the heap ([`heap`]), the libc functions that read or
//! write memory ranges ([`memory`]) and file descriptors ([`fd`]). Each
//! thread appends its events to a shared mapping of its own file
//! ([`buffer`]); a global counter numbers the synchronization events, and
//! each plain access carries how many had begun before it, which places
//! every event in one global order consistent with the run's
//! synchronization. `cprace record` sets `CPRACE_RECORD_DIR`, runs the
//! program, and reads the per-thread files (whose words the
//! `cprace-events` crate defines) into a trace. Without that variable the
//! library records nothing and only forwards calls.

#![cfg(target_os = "linux")]

pub mod buffer;
// The entry points are naked x86-64 trampolines (see `tsan`); elsewhere the
// library builds without them and `cprace cc` links fail with undefined
// `__tsan_*` symbols.
#[cfg(target_arch = "x86_64")]
pub mod annotate;
#[cfg(target_arch = "x86_64")]
pub mod fd;
#[cfg(target_arch = "x86_64")]
pub mod heap;
pub mod lock;
#[cfg(target_arch = "x86_64")]
pub mod memory;
pub mod own;
#[cfg(target_arch = "x86_64")]
pub mod pthread;
pub mod real;
#[cfg(target_arch = "x86_64")]
pub mod tsan;

/// The runtime's own heap goes straight to glibc's allocator, so that freeing
/// it never passes through the interposed `free` (which records events).
struct LibcAlloc;

// glibc's allocator under the names interposition does not reach.
unsafe extern "C" {
    pub(crate) fn __libc_malloc(size: usize) -> *mut libc::c_void;
    pub(crate) fn __libc_calloc(n: usize, size: usize) -> *mut libc::c_void;
    pub(crate) fn __libc_free(p: *mut libc::c_void);
    pub(crate) fn __libc_realloc(p: *mut libc::c_void, size: usize) -> *mut libc::c_void;
    pub(crate) fn __libc_memalign(align: usize, size: usize) -> *mut libc::c_void;
}

// SAFETY: every method returns memory from glibc's allocator, which is
// aligned as the layout asks (malloc for alignments up to 16, memalign above),
// valid for the layout's size, and not handed out again until freed.
unsafe impl std::alloc::GlobalAlloc for LibcAlloc {
    unsafe fn alloc(&self, l: std::alloc::Layout) -> *mut u8 {
        // SAFETY: glibc's entry points take any size and alignment; a null
        // result is how GlobalAlloc reports failure too.
        unsafe {
            if l.align() <= 16 {
                __libc_malloc(l.size()) as *mut u8
            } else {
                __libc_memalign(l.align(), l.size()) as *mut u8
            }
        }
    }
    unsafe fn dealloc(&self, p: *mut u8, _: std::alloc::Layout) {
        // SAFETY: the caller passes a block `alloc` or `realloc` returned, i.e.
        // one from glibc's malloc/memalign, which free accepts.
        unsafe { __libc_free(p as *mut libc::c_void) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: std::alloc::Layout, size: usize) -> *mut u8 {
        // SAFETY: `p` is a live block of layout `l` from glibc (the caller's
        // contract); realloc keeps alignments up to 16, and above that a new
        // block of the same alignment (a valid layout: `l`'s alignment with a
        // non-zero size the caller guarantees fits) receives the smaller of
        // the two sizes before the old block is freed.
        unsafe {
            if l.align() <= 16 {
                __libc_realloc(p as *mut libc::c_void, size) as *mut u8
            } else {
                let n = self.alloc(std::alloc::Layout::from_size_align_unchecked(
                    size,
                    l.align(),
                ));
                if !n.is_null() {
                    std::ptr::copy_nonoverlapping(p, n, l.size().min(size));
                    __libc_free(p as *mut libc::c_void);
                }
                n
            }
        }
    }
}

#[global_allocator]
static ALLOC: LibcAlloc = LibcAlloc;
