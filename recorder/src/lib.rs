//! libcprace_rt: the runtime that programs built by `cprace cc` call instead of
//! ThreadSanitizer's.
//!
//! gcc/clang `-fsanitize=thread` instrument every memory access with a call
//! (`__tsan_read4(addr)`, `__tsan_atomic32_fetch_add(...)`, ...); this library
//! defines those entry points ([`tsan`]) and interposes the pthread, semaphore
//! and heap functions whose synchronization the relations must see
//! ([`intercept`]). Each thread appends fixed-size binary events to its own
//! buffer ([`buffer`]); a global counter numbers the synchronization events,
//! and each read or write carries how many had begun before it, which places
//! every event in one global order consistent with the run's
//! synchronization. `cprace record` sets `CPRACE_RECORD_DIR`, runs the
//! program, and merges the per-thread files into a trace. Without that variable
//! the library records nothing and only forwards calls.
//!
//! The file format (read by cprace's `record::events`, described in
//! [`kind`]) is little-endian 64-bit words: a plain read or write is one word
//! (its address and the slot of its pc in a per-thread table of pcs), with
//! words that change the thread's pc table or its current `seq` (the number
//! of synchronization events begun before the accesses that follow) only
//! when they change; every other event is four words (kind, address, pc,
//! `seq | arg << 40`, `seq` being its number). `modules` lists the loaded
//! objects for symbolization.

#![cfg(target_os = "linux")]

pub mod buffer;
// The entry points are naked x86-64 trampolines (see `tsan`); elsewhere the
// library builds without them and `cprace cc` links fail with undefined
// `__tsan_*` symbols.
#[cfg(target_arch = "x86_64")]
pub mod intercept;
pub mod kind;
pub mod real;
#[cfg(target_arch = "x86_64")]
pub mod tsan;

/// The runtime's own heap goes straight to glibc's allocator, so that freeing
/// it never passes through the interposed `free` (which records events).
struct LibcAlloc;

unsafe extern "C" {
    fn __libc_malloc(size: usize) -> *mut u8;
    fn __libc_free(p: *mut u8);
    fn __libc_realloc(p: *mut u8, size: usize) -> *mut u8;
    fn __libc_memalign(align: usize, size: usize) -> *mut u8;
}

unsafe impl std::alloc::GlobalAlloc for LibcAlloc {
    unsafe fn alloc(&self, l: std::alloc::Layout) -> *mut u8 {
        unsafe {
            if l.align() <= 16 {
                __libc_malloc(l.size())
            } else {
                __libc_memalign(l.align(), l.size())
            }
        }
    }
    unsafe fn dealloc(&self, p: *mut u8, _: std::alloc::Layout) {
        unsafe { __libc_free(p) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: std::alloc::Layout, size: usize) -> *mut u8 {
        unsafe {
            if l.align() <= 16 {
                __libc_realloc(p, size)
            } else {
                let n = self.alloc(std::alloc::Layout::from_size_align_unchecked(
                    size,
                    l.align(),
                ));
                if !n.is_null() {
                    std::ptr::copy_nonoverlapping(p, n, l.size().min(size));
                    __libc_free(p);
                }
                n
            }
        }
    }
}

#[global_allocator]
static ALLOC: LibcAlloc = LibcAlloc;
