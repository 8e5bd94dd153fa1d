//! Interposed heap functions: allocations (where a block came from, for
//! reports), frees (a write of the whole block, so a use racing with the
//! free is a race), and a quarantine.
//!
//! The quarantine holds freed blocks back from reuse (at most
//! [`QUARANTINE_BYTES`] and [`QUARANTINE_BLOCKS`], oldest released first):
//! a program that writes freed memory then writes memory glibc does not
//! own yet, instead of corrupting its heap and aborting before the run is
//! recorded. realloc always moves the block (the old one goes to the
//! quarantine), so a stale pointer to it never sees the new contents.
//! Nothing is held back when the program runs without `cprace record`.

use cprace_events::{Alloc, Kind};
use libc::c_void;

use crate::buffer::{ENABLED, recording, with_busy};
use crate::lock::SpinLock;
use crate::tsan::{entry, pcreg};

type P = *mut c_void;

use crate::{__libc_calloc, __libc_free, __libc_malloc, __libc_memalign};

/// Most bytes the quarantine holds.
pub const QUARANTINE_BYTES: usize = 64 << 20;
/// Most blocks the quarantine holds.
pub const QUARANTINE_BLOCKS: usize = 1 << 16;

fn on() -> bool {
    ENABLED.load(std::sync::atomic::Ordering::Relaxed)
}

entry! {
    malloc => rt_malloc, 1;
    calloc => rt_calloc, 2;
    realloc => rt_realloc, 2;
    reallocarray => rt_reallocarray, 3;
    free => rt_free, 1;
    cfree => rt_free, 1;
    aligned_alloc => rt_aligned_alloc, 2;
    memalign => rt_memalign, 2;
    posix_memalign => rt_posix_memalign, 3;
    valloc => rt_valloc, 1;
    pvalloc => rt_pvalloc, 1;
    _Znwm => rt_new, 1;
    _Znam => rt_new, 1;
    _ZnwmRKSt9nothrow_t => rt_new_nothrow, 2;
    _ZnamRKSt9nothrow_t => rt_new_nothrow, 2;
    _ZnwmSt11align_val_t => rt_new_aligned, 2;
    _ZnamSt11align_val_t => rt_new_aligned, 2;
    _ZnwmSt11align_val_tRKSt9nothrow_t => rt_new_aligned_nothrow, 3;
    _ZnamSt11align_val_tRKSt9nothrow_t => rt_new_aligned_nothrow, 3;
    _ZdlPv => rt_delete1, 1;
    _ZdaPv => rt_delete1, 1;
    _ZdlPvm => rt_delete2, 2;
    _ZdaPvm => rt_delete2, 2;
    _ZdlPvRKSt9nothrow_t => rt_delete2, 2;
    _ZdaPvRKSt9nothrow_t => rt_delete2, 2;
    _ZdlPvSt11align_val_t => rt_delete2, 2;
    _ZdaPvSt11align_val_t => rt_delete2, 2;
    _ZdlPvmSt11align_val_t => rt_delete3, 3;
    _ZdaPvmSt11align_val_t => rt_delete3, 3;
    _ZdlPvSt11align_val_tRKSt9nothrow_t => rt_delete3, 3;
    _ZdaPvSt11align_val_tRKSt9nothrow_t => rt_delete3, 3;
}

/// Records a new block.
fn allocated(p: P, size: usize, how: Alloc, pc: u64) -> P {
    if !p.is_null()
        && let Some(t) = recording()
    {
        t.long(Kind::Alloc, how.flags(), p as u64, pc, 0, &[size as u64]);
    }
    p
}

/// Records the free of `p` (a write of the block) and puts it in the
/// quarantine.
fn release(p: P, how: Alloc, pc: u64) {
    if p.is_null() {
        return;
    }
    if !on() {
        // SAFETY: a block of glibc's heap, freed once by the program.
        unsafe { __libc_free(p) };
        return;
    }
    // SAFETY: p is a live heap block (the program is about to free it).
    let size = unsafe { libc::malloc_usable_size(p) };
    if let Some(t) = recording() {
        t.long(Kind::Free, how.flags(), p as u64, pc, 0, &[size as u64]);
    }
    quarantine(p, size);
}

extern "C" fn rt_malloc(size: usize, pc: u64) -> P {
    // SAFETY: glibc's allocator.
    let p = unsafe { __libc_malloc(size) };
    allocated(p, size, Alloc::Malloc, pc)
}

/// malloc on behalf of an interposed function called from `pc`.
pub fn malloc_at(size: usize, pc: u64) -> P {
    rt_malloc(size, pc)
}

extern "C" fn rt_calloc(n: usize, size: usize, pc: u64) -> P {
    // SAFETY: glibc's allocator.
    let p = unsafe { __libc_calloc(n, size) };
    allocated(p, n.saturating_mul(size), Alloc::Malloc, pc)
}

extern "C" fn rt_realloc(p: P, size: usize, pc: u64) -> P {
    if p.is_null() {
        return rt_malloc(size, pc);
    }
    if size == 0 {
        // glibc frees the block and returns NULL.
        release(p, Alloc::Malloc, pc);
        return std::ptr::null_mut();
    }
    // SAFETY: glibc's allocator.
    let n = unsafe { __libc_malloc(size) };
    if n.is_null() {
        return n;
    }
    // SAFETY: `p` is a live block of at least its usable size, `n` a new
    // block of `size` bytes; they do not overlap.
    unsafe {
        let old = libc::malloc_usable_size(p);
        crate::memory::copy(n as *mut u8, p as *const u8, old.min(size));
    }
    release(p, Alloc::Malloc, pc);
    allocated(n, size, Alloc::Malloc, pc)
}

extern "C" fn rt_reallocarray(p: P, n: usize, size: usize, pc: u64) -> P {
    match n.checked_mul(size) {
        Some(total) => rt_realloc(p, total, pc),
        None => {
            // SAFETY: errno is this thread's.
            unsafe { *libc::__errno_location() = libc::ENOMEM };
            std::ptr::null_mut()
        }
    }
}

extern "C" fn rt_free(p: P, pc: u64) {
    release(p, Alloc::Malloc, pc);
}

fn aligned(align: usize, size: usize, pc: u64) -> P {
    // SAFETY: glibc's allocator (it checks the alignment).
    let p = unsafe { __libc_memalign(align, size) };
    allocated(p, size, Alloc::Malloc, pc)
}

extern "C" fn rt_aligned_alloc(align: usize, size: usize, pc: u64) -> P {
    aligned(align, size, pc)
}

extern "C" fn rt_memalign(align: usize, size: usize, pc: u64) -> P {
    aligned(align, size, pc)
}

extern "C" fn rt_posix_memalign(out: *mut P, align: usize, size: usize, pc: u64) -> i32 {
    if !align.is_power_of_two() || !align.is_multiple_of(std::mem::size_of::<P>()) {
        return libc::EINVAL;
    }
    let p = aligned(align, size, pc);
    if p.is_null() && size != 0 {
        return libc::ENOMEM;
    }
    // SAFETY: the program passes where to store the block.
    unsafe { *out = p };
    0
}

fn page() -> usize {
    // SAFETY: sysconf is always callable.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}

extern "C" fn rt_valloc(size: usize, pc: u64) -> P {
    aligned(page(), size, pc)
}

extern "C" fn rt_pvalloc(size: usize, pc: u64) -> P {
    let pg = page();
    aligned(pg, size.div_ceil(pg).max(1) * pg, pc)
}

/// The real operator new, for its out-of-memory behaviour (it throws).
fn real_new(size: usize) -> P {
    let f = crate::real!(_Znwm: extern "C-unwind" fn(usize) -> P);
    with_busy(|| f(size))
}

extern "C-unwind" fn rt_new(size: usize, pc: u64) -> P {
    allocated(real_new(size), size, Alloc::New, pc)
}

extern "C" fn rt_new_nothrow(size: usize, _nt: P, pc: u64) -> P {
    // SAFETY: glibc's allocator (operator new(nothrow) returns null on failure).
    let p = unsafe { __libc_malloc(size.max(1)) };
    allocated(p, size, Alloc::New, pc)
}

extern "C-unwind" fn rt_new_aligned(size: usize, align: usize, pc: u64) -> P {
    let f = crate::real!(_ZnwmSt11align_val_t: extern "C-unwind" fn(usize, usize) -> P);
    let p = with_busy(|| f(size, align));
    allocated(p, size, Alloc::New, pc)
}

extern "C" fn rt_new_aligned_nothrow(size: usize, align: usize, _nt: P, pc: u64) -> P {
    // SAFETY: glibc's allocator.
    let p = unsafe { __libc_memalign(align, size.max(1)) };
    allocated(p, size, Alloc::New, pc)
}

/// Every operator delete: the size, alignment and nothrow arguments (in
/// registers after the pointer) do not matter, libstdc++'s delete is free.
extern "C" fn rt_delete1(p: P, pc: u64) {
    release(p, Alloc::New, pc);
}

/// `operator delete` with one more argument (size, alignment or nothrow):
/// the entry point passes the caller's pc after the C arguments.
extern "C" fn rt_delete2(p: P, _a: usize, pc: u64) {
    release(p, Alloc::New, pc);
}

/// `operator delete` with two more arguments.
extern "C" fn rt_delete3(p: P, _a: usize, _b: usize, pc: u64) {
    release(p, Alloc::New, pc);
}

/// Freed blocks not yet given back to glibc, oldest first.
struct Quarantine {
    blocks: std::collections::VecDeque<(usize, usize)>,
    bytes: usize,
}

static QUARANTINE: SpinLock<Quarantine> = SpinLock::new(Quarantine {
    blocks: std::collections::VecDeque::new(),
    bytes: 0,
});

fn quarantine(p: P, size: usize) {
    if size > QUARANTINE_BYTES / 4 {
        // SAFETY: a block of glibc's heap, freed once by the program.
        unsafe { __libc_free(p) };
        return;
    }
    with_busy(|| {
        QUARANTINE.with(|q| {
            q.blocks.push_back((p as usize, size));
            q.bytes += size;
            while q.bytes > QUARANTINE_BYTES || q.blocks.len() > QUARANTINE_BLOCKS {
                let Some((old, n)) = q.blocks.pop_front() else {
                    break;
                };
                q.bytes -= n;
                // SAFETY: a block the program freed, held here since.
                unsafe { __libc_free(old as P) };
            }
        })
    });
}

/// Keeps the quarantine's lock consistent across fork (a child would
/// otherwise inherit it locked by a thread that does not exist there).
pub fn at_fork() {
    extern "C" fn prepare() {
        QUARANTINE.lock();
    }
    extern "C" fn after() {
        QUARANTINE.unlock();
    }
    // SAFETY: registering plain functions.
    unsafe { libc::pthread_atfork(Some(prepare), Some(after), Some(after)) };
}
