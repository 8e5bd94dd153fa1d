//! The annotation interfaces programs and test suites call directly:
//! `<sanitizer/tsan_interface.h>`'s mutex, fiber and ignore functions,
//! the dynamic annotations (`AnnotateHappensBefore`, `AnnotateBenignRace`,
//! ...), and the test-only invisible barrier.

use std::sync::atomic::{AtomicU32, Ordering};

use cprace_events::{Kind, LOCK_RW, LOCK_SHARED, LOCK_TRY, SYNC_KEY};
use libc::{c_char, c_int, c_uint, c_void};

use crate::buffer::{new_fiber, recording, swap_thread, thread};
use crate::tsan::{entry, pcreg, sync_read, sync_write};

type P = *mut c_void;
type S = *const c_char;

entry! {
    AnnotateHappensBefore => rt_happens_before, 3;
    AnnotateHappensAfter => rt_happens_after, 3;
    WTFAnnotateHappensBefore => rt_happens_before, 3;
    WTFAnnotateHappensAfter => rt_happens_after, 3;
    AnnotateCondVarSignal => rt_happens_before, 3;
    AnnotateCondVarSignalAll => rt_happens_before, 3;
    AnnotatePCQPut => rt_happens_before, 3;
    AnnotatePCQGet => rt_happens_after, 3;
    AnnotateRWLockAcquired => rt_rwlock_acquired, 4;
    AnnotateRWLockReleased => rt_rwlock_released, 4;
    AnnotateBenignRaceSized => rt_benign_sized, 5;
    WTFAnnotateBenignRaceSized => rt_benign_sized, 5;
    AnnotateBenignRace => rt_benign, 4;
    AnnotateThreadName => rt_thread_name, 3;
    __tsan_mutex_post_lock => rt_mutex_post_lock, 3;
    __tsan_mutex_pre_unlock => rt_mutex_pre_unlock, 2;
    __tsan_mutex_pre_signal => rt_mutex_signal, 2;
}

/// Ignores everything after its annotation's file and line.
macro_rules! noop {
    ($($name:ident ($($a:ident : $t:ty),*);)*) => {$(
        #[doc = concat!("Annotation `", stringify!($name), "`: nothing to record.")]
        #[unsafe(no_mangle)]
        pub extern "C" fn $name($(_: $t),*) {}
    )*};
}

noop! {
    AnnotateRWLockCreate(f: S, l: c_int, m: P);
    AnnotateRWLockCreateStatic(f: S, l: c_int, m: P);
    AnnotateRWLockDestroy(f: S, l: c_int, m: P);
    AnnotateCondVarWait(f: S, l: c_int, c: P, m: P);
    AnnotateMutexIsNotPHB(f: S, l: c_int, m: P);
    AnnotateMutexIsUsedAsCondVar(f: S, l: c_int, m: P);
    AnnotatePCQCreate(f: S, l: c_int, q: P);
    AnnotatePCQDestroy(f: S, l: c_int, q: P);
    AnnotateExpectRace(f: S, l: c_int, m: P, d: S);
    AnnotateFlushExpectedRaces(f: S, l: c_int);
    AnnotateFlushState(f: S, l: c_int);
    AnnotateEnableRaceDetection(f: S, l: c_int, e: c_int);
    AnnotateNoOp(f: S, l: c_int, a: P);
    AnnotateNewMemory(f: S, l: c_int, m: P, s: usize);
    AnnotatePublishMemoryRange(f: S, l: c_int, m: P, s: usize);
    AnnotateUnpublishMemoryRange(f: S, l: c_int, m: P, s: usize);
    AnnotateMemoryIsInitialized(f: S, l: c_int, m: P, s: usize);
    AnnotateMemoryIsUninitialized(f: S, l: c_int, m: P, s: usize);
    AnnotateTraceMemory(f: S, l: c_int, m: P);
    __tsan_mutex_create(m: P, flags: c_uint);
    __tsan_mutex_destroy(m: P, flags: c_uint);
    __tsan_mutex_pre_lock(m: P, flags: c_uint);
    __tsan_mutex_post_unlock(m: P, flags: c_uint);
    __tsan_mutex_post_signal(m: P, flags: c_uint);
    __tsan_mutex_pre_divert(m: P, flags: c_uint);
    __tsan_mutex_post_divert(m: P, flags: c_uint);
    __tsan_external_assign_tag(a: P, tag: P);
    __tsan_external_register_header(tag: P, h: S);
    __tsan_external_read(a: P, pc: P, tag: P);
    __tsan_external_write(a: P, pc: P, tag: P);
    __tsan_flush_memory();
    __tsan_set_fiber_name(f: P, n: S);
}

extern "C" fn rt_happens_before(_f: S, _l: c_int, addr: u64, pc: u64) {
    sync_write(addr, SYNC_KEY, pc);
}

extern "C" fn rt_happens_after(_f: S, _l: c_int, addr: u64, pc: u64) {
    sync_read(addr, SYNC_KEY, pc);
}

extern "C" fn rt_rwlock_acquired(_f: S, _l: c_int, m: u64, is_w: i64, pc: u64) {
    if let Some(t) = recording() {
        let flags = LOCK_RW | if is_w != 0 { 0 } else { LOCK_SHARED };
        t.long(Kind::Acquire, flags, m, pc, 0, &[]);
    }
}

extern "C" fn rt_rwlock_released(_f: S, _l: c_int, m: u64, is_w: i64, pc: u64) {
    if let Some(t) = recording() {
        let flags = LOCK_RW | if is_w != 0 { 0 } else { LOCK_SHARED };
        t.long(Kind::Release, flags, m, pc, 0, &[]);
    }
}

fn benign(addr: u64, size: u64, pc: u64) {
    if let Some(t) = recording() {
        t.long(Kind::Benign, 0, addr, pc, 0, &[size]);
    }
}

extern "C" fn rt_benign_sized(_f: S, _l: c_int, m: u64, size: c_uint, _d: S, pc: u64) {
    benign(m, u64::from(size), pc);
}

extern "C" fn rt_benign(_f: S, _l: c_int, m: u64, _d: S, pc: u64) {
    benign(m, 1, pc);
}

extern "C" fn rt_thread_name(_f: S, _l: c_int, name: S, pc: u64) {
    if name.is_null() {
        return;
    }
    if let Some(t) = recording() {
        let mut bytes = [0u8; 16];
        // SAFETY: a NUL-terminated name.
        let n = unsafe { std::ffi::CStr::from_ptr(name) }.to_bytes();
        let k = n.len().min(15);
        bytes[..k].copy_from_slice(&n[..k]);
        let w0 = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
        let w1 = u64::from_le_bytes(bytes[8..].try_into().expect("8 bytes"));
        let tid = u64::from(t.tid);
        t.long(Kind::ThreadName, 0, tid, pc, 0, &[w0, w1]);
    }
}

/// `__tsan_mutex_*` flags (from tsan_interface.h).
const MUTEX_READ_LOCK: c_uint = 1 << 3;
const MUTEX_TRY_LOCK: c_uint = 1 << 4;
const MUTEX_TRY_LOCK_FAILED: c_uint = 1 << 5;

extern "C" fn rt_mutex_post_lock(m: u64, flags: c_uint, _recursion: c_int, pc: u64) {
    if flags & MUTEX_TRY_LOCK_FAILED != 0 {
        return;
    }
    if let Some(t) = recording() {
        let mut f = 0;
        if flags & MUTEX_READ_LOCK != 0 {
            f |= LOCK_SHARED;
        }
        if flags & MUTEX_TRY_LOCK != 0 {
            f |= LOCK_TRY;
        }
        t.long(Kind::Acquire, f, m, pc, 0, &[]);
    }
}

extern "C" fn rt_mutex_pre_unlock(m: u64, flags: c_uint, pc: u64) -> c_int {
    if let Some(t) = recording() {
        let f = if flags & MUTEX_READ_LOCK != 0 {
            LOCK_SHARED
        } else {
            0
        };
        t.long(Kind::Release, f, m, pc, 0, &[]);
    }
    0
}

extern "C" fn rt_mutex_signal(_m: u64, _flags: c_uint, _pc: u64) {}

/// `AnnotateIgnoreReadsBegin` and friends: nesting counters of the thread.
macro_rules! ignore {
    ($($begin:ident, $end:ident, $($field:ident),+;)*) => {$(
        #[doc = concat!("Annotation `", stringify!($begin), "`.")]
        #[unsafe(no_mangle)]
        pub extern "C" fn $begin(_f: S, _l: c_int) {
            if let Some(t) = thread() {
                $(t.$field += 1;)+
            }
        }
        #[doc = concat!("Annotation `", stringify!($end), "`.")]
        #[unsafe(no_mangle)]
        pub extern "C" fn $end(_f: S, _l: c_int) {
            if let Some(t) = thread() {
                $(t.$field = t.$field.saturating_sub(1);)+
            }
        }
    )*};
}

ignore! {
    AnnotateIgnoreReadsBegin, AnnotateIgnoreReadsEnd, ignore_reads;
    AnnotateIgnoreWritesBegin, AnnotateIgnoreWritesEnd, ignore_writes;
    AnnotateIgnoreSyncBegin, AnnotateIgnoreSyncEnd, ignore_sync;
    __tsan_ignore_thread_begin, __tsan_ignore_thread_end, ignore_reads, ignore_writes, ignore_sync;
}

/// `RunningOnValgrind()`: no.
#[unsafe(no_mangle)]
pub extern "C" fn RunningOnValgrind() -> c_int {
    0
}

/// `ValgrindSlowdown()`: none.
#[unsafe(no_mangle)]
pub extern "C" fn ValgrindSlowdown() -> f64 {
    1.0
}

/// `ThreadSanitizerQuery(query)`: no answers.
#[unsafe(no_mangle)]
pub extern "C" fn ThreadSanitizerQuery(_q: S) -> S {
    c"0".as_ptr()
}

/// The test suites' invisible barrier: orders threads in time without
/// any synchronization the relations see (its counter lives in the
/// program's `unsigned` object, which is only touched here).
///
/// # Safety
/// `b` points to the program's barrier object, an aligned `unsigned`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __tsan_testonly_barrier_init(b: *mut c_uint, count: c_uint) {
    if count >= 1 << 8 {
        return;
    }
    // SAFETY: the program passes its barrier object, an aligned unsigned.
    unsafe { AtomicU32::from_ptr(b) }.store(count << 24, Ordering::Relaxed);
}

/// See [`__tsan_testonly_barrier_init`]: the top 8 bits hold the count,
/// the rest the number of arrivals so far.
///
/// # Safety
/// As for [`__tsan_testonly_barrier_init`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __tsan_testonly_barrier_wait(b: *mut c_uint) {
    // SAFETY: as above.
    let a = unsafe { AtomicU32::from_ptr(b) };
    let old = a.fetch_add(1, Ordering::Relaxed);
    let count = old >> 24;
    if count == 0 {
        return;
    }
    let target = (old & ((1 << 24) - 1)) / count * count + count;
    while (a.load(Ordering::Relaxed) & ((1 << 24) - 1)) < target {
        std::thread::yield_now();
    }
}

/// The test-only depth of the shadow call stack.
#[unsafe(no_mangle)]
pub extern "C" fn __tsan_testonly_shadow_stack_current_size() -> u64 {
    thread().map_or(0, |t| t.depth())
}

/// A fiber: a logical thread of its own, switched to explicitly.
#[unsafe(no_mangle)]
pub extern "C" fn __tsan_create_fiber(_flags: c_uint) -> P {
    if recording().is_none() {
        return std::ptr::null_mut();
    }
    new_fiber() as P
}

/// Fibers are freed when the program exits.
#[unsafe(no_mangle)]
pub extern "C" fn __tsan_destroy_fiber(_fiber: P) {}

/// The running fiber (the thread's own state when it runs no fiber).
#[unsafe(no_mangle)]
pub extern "C" fn __tsan_get_current_fiber() -> P {
    match thread() {
        Some(t) => t as *mut crate::buffer::Thread as P,
        None => std::ptr::null_mut(),
    }
}

/// Flag of `__tsan_switch_to_fiber`: switching does not synchronize.
const FIBER_NO_SYNC: c_uint = 1;

entry! {
    __tsan_switch_to_fiber => rt_switch_to_fiber, 2;
}

extern "C" fn rt_switch_to_fiber(fiber: P, flags: c_uint, pc: u64) {
    if fiber.is_null() {
        return;
    }
    let key = fiber as u64;
    if flags & FIBER_NO_SYNC == 0 {
        sync_write(key, SYNC_KEY, pc);
    }
    swap_thread(fiber as *mut crate::buffer::Thread);
    if flags & FIBER_NO_SYNC == 0 {
        sync_read(key, SYNC_KEY, pc);
    }
}
