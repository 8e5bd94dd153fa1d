//! Interposed pthread and semaphore functions: the synchronization the
//! relations must see, generated from one table (see [`interpose!`]). Each
//! calls the real function (see [`crate::real`]).
//!
//! How each primitive is modelled:
//! - pthread_create/join (and tryjoin/timedjoin/clockjoin on success): fork
//!   before the thread exists, join after it has ended.
//! - mutexes, spin locks, rwlocks: an acquire after a successful lock
//!   (EOWNERDEAD counts; the shared side of an rwlock is flagged shared), a
//!   release before unlocking (taken back if the unlock fails). A blocking
//!   lock first records a pending acquire, so a thread that never gets the
//!   lock (a deadlock stopped by `record --timeout`) says which it waited for.
//! - condition variables: wait = release of the mutex + its re-acquire, also
//!   when the thread is cancelled inside the wait (glibc re-acquires the
//!   mutex before the cleanup handlers run); signal and broadcast use the
//!   condition variable.
//! - `*_init`/`*_destroy` write the object's memory; every other call on a
//!   synchronization object reads it atomically, so destroying or
//!   re-initializing an object another thread is using is a race.
//! - semaphores: post releases, a successful wait acquires (the semaphore's
//!   memory as a synchronization variable); barriers: release on arrival,
//!   acquire on departure; pthread_once: the routine's runner releases the
//!   control, every caller acquires it on return; C++ static guards:
//!   `__cxa_guard_release` releases the guard, a `__cxa_guard_acquire` that
//!   finds it initialized acquires it (as does the inlined fast path, an
//!   instrumented acquire load of the same byte).

use std::collections::HashMap;
use std::sync::Mutex;

use cprace_events::{
    Kind, LOCK_OWNER_DEAD, LOCK_RW, LOCK_SHARED, LOCK_TRY, Object, ObjectOp, ObjectType,
    SYNC_MEMORY,
};
use libc::{c_int, c_void};

use crate::buffer::{ENABLED, current_tid, new_tid, recording};
use crate::real;
use crate::tsan::{entry, pcreg, sync_read, sync_write};

type P = *mut c_void;
type Start = extern "C-unwind" fn(P) -> P;

/// The interposition table. Each row `shape: name(args) -> ret [n];`
/// exports `name`, whose `n` arguments and caller's pc reach the shape's
/// model around the real `name` (see the shape functions below).
macro_rules! interpose {
    () => {};
    ($shape:ident ($($sarg:expr),*): $name:ident ($($a:ident : $t:ty),*) -> $r:ty [$n:tt]; $($rest:tt)*) => {
        #[allow(non_snake_case)]
        mod $name {
            use super::*;
            pub(super) extern "C-unwind" fn imp($($a: $t,)* pc: u64) -> $r {
                let f = real!($name: extern "C-unwind" fn($($t),*) -> $r);
                $shape($($sarg,)* pc, || f($($a),*))
            }
        }
        entry! { $name => $name::imp, $n; }
        interpose!($($rest)*);
    };
}

// Rows: the shape with the object and model arguments it needs (names of
// the function's arguments), then the function.
interpose! {
    lock(m, 0): pthread_mutex_lock(m: P) -> c_int [1];
    trylock(m, 0): pthread_mutex_trylock(m: P) -> c_int [1];
    lock(m, 0): pthread_mutex_timedlock(m: P, t: P) -> c_int [2];
    lock(m, 0): pthread_mutex_clocklock(m: P, c: c_int, t: P) -> c_int [3];
    unlock(m, 0): pthread_mutex_unlock(m: P) -> c_int [1];
    init(m, ObjectType::Mutex): pthread_mutex_init(m: P, a: P) -> c_int [2];
    destroy(m, ObjectType::Mutex): pthread_mutex_destroy(m: P) -> c_int [1];
    lock(m, 0): pthread_spin_lock(m: P) -> c_int [1];
    trylock(m, 0): pthread_spin_trylock(m: P) -> c_int [1];
    unlock(m, 0): pthread_spin_unlock(m: P) -> c_int [1];
    init(m, ObjectType::Spin): pthread_spin_init(m: P, s: c_int) -> c_int [2];
    destroy(m, ObjectType::Spin): pthread_spin_destroy(m: P) -> c_int [1];
    lock(l, LOCK_RW | LOCK_SHARED): pthread_rwlock_rdlock(l: P) -> c_int [1];
    trylock(l, LOCK_RW | LOCK_SHARED): pthread_rwlock_tryrdlock(l: P) -> c_int [1];
    lock(l, LOCK_RW | LOCK_SHARED): pthread_rwlock_timedrdlock(l: P, t: P) -> c_int [2];
    lock(l, LOCK_RW | LOCK_SHARED): pthread_rwlock_clockrdlock(l: P, c: c_int, t: P) -> c_int [3];
    lock(l, LOCK_RW): pthread_rwlock_wrlock(l: P) -> c_int [1];
    trylock(l, LOCK_RW): pthread_rwlock_trywrlock(l: P) -> c_int [1];
    lock(l, LOCK_RW): pthread_rwlock_timedwrlock(l: P, t: P) -> c_int [2];
    lock(l, LOCK_RW): pthread_rwlock_clockwrlock(l: P, c: c_int, t: P) -> c_int [3];
    rwunlock(l): pthread_rwlock_unlock(l: P) -> c_int [1];
    init(l, ObjectType::RwLock): pthread_rwlock_init(l: P, a: P) -> c_int [2];
    destroy(l, ObjectType::RwLock): pthread_rwlock_destroy(l: P) -> c_int [1];
    wait(c, m): pthread_cond_wait(c: P, m: P) -> c_int [2];
    wait(c, m): pthread_cond_timedwait(c: P, m: P, t: P) -> c_int [3];
    wait(c, m): pthread_cond_clockwait(c: P, m: P, k: c_int, t: P) -> c_int [4];
    used(c, ObjectType::Cond): pthread_cond_signal(c: P) -> c_int [1];
    used(c, ObjectType::Cond): pthread_cond_broadcast(c: P) -> c_int [1];
    init(c, ObjectType::Cond): pthread_cond_init(c: P, a: P) -> c_int [2];
    destroy(c, ObjectType::Cond): pthread_cond_destroy(c: P) -> c_int [1];
    barrier_wait(b): pthread_barrier_wait(b: P) -> c_int [1];
    init(b, ObjectType::Barrier): pthread_barrier_init(b: P, a: P, n: u32) -> c_int [3];
    destroy(b, ObjectType::Barrier): pthread_barrier_destroy(b: P) -> c_int [1];
    post(s): sem_post(s: P) -> c_int [1];
    got(s): sem_wait(s: P) -> c_int [1];
    got(s): sem_trywait(s: P) -> c_int [1];
    got(s): sem_timedwait(s: P, t: P) -> c_int [2];
    got(s): sem_clockwait(s: P, c: c_int, t: P) -> c_int [3];
    init(s, ObjectType::Semaphore): sem_init(s: P, sh: c_int, v: u32) -> c_int [3];
    destroy(s, ObjectType::Semaphore): sem_destroy(s: P) -> c_int [1];
    joined(th): pthread_join(th: libc::pthread_t, ret: *mut P) -> c_int [2];
    joined(th): pthread_tryjoin_np(th: libc::pthread_t, ret: *mut P) -> c_int [2];
    joined(th): pthread_timedjoin_np(th: libc::pthread_t, ret: *mut P, t: P) -> c_int [3];
    joined(th): pthread_clockjoin_np(th: libc::pthread_t, ret: *mut P, c: c_int, t: P) -> c_int [4];
    named(th, name): pthread_setname_np(th: libc::pthread_t, name: *const libc::c_char) -> c_int [2];
    guard_acquire(g): __cxa_guard_acquire(g: *mut u64) -> c_int [1];
    guard_release(g): __cxa_guard_release(g: *mut u64) -> () [1];
    // C11 <threads.h> (glibc implements it on pthreads internally, out of
    // interposition's reach): thrd_success is 0, as pthreads' success.
    lock(m, 0): mtx_lock(m: P) -> c_int [1];
    lock(m, 0): mtx_timedlock(m: P, t: P) -> c_int [2];
    trylock(m, 0): mtx_trylock(m: P) -> c_int [1];
    unlock(m, 0): mtx_unlock(m: P) -> c_int [1];
    init(m, ObjectType::Mutex): mtx_init(m: P, ty: c_int) -> c_int [2];
    destroyed(m, ObjectType::Mutex): mtx_destroy(m: P) -> () [1];
    wait(c, m): cnd_wait(c: P, m: P) -> c_int [2];
    wait(c, m): cnd_timedwait(c: P, m: P, t: P) -> c_int [3];
    used(c, ObjectType::Cond): cnd_signal(c: P) -> c_int [1];
    used(c, ObjectType::Cond): cnd_broadcast(c: P) -> c_int [1];
    init(c, ObjectType::Cond): cnd_init(c: P) -> c_int [1];
    destroyed(c, ObjectType::Cond): cnd_destroy(c: P) -> () [1];
    joined(th): thrd_join(th: libc::pthread_t, ret: *mut c_int) -> c_int [2];
}

entry! {
    pthread_create => rt_create, 4;
    pthread_once => rt_once, 2;
    thrd_create => rt_thrd_create, 3;
    call_once => rt_call_once, 2;
}

fn on() -> bool {
    ENABLED.load(std::sync::atomic::Ordering::Relaxed)
}

/// The byte size of a synchronization object's memory.
fn object_size(ty: ObjectType) -> u64 {
    (match ty {
        ObjectType::Mutex => std::mem::size_of::<libc::pthread_mutex_t>(),
        ObjectType::Cond => std::mem::size_of::<libc::pthread_cond_t>(),
        ObjectType::Barrier => std::mem::size_of::<libc::pthread_barrier_t>(),
        ObjectType::RwLock => std::mem::size_of::<libc::pthread_rwlock_t>(),
        ObjectType::Semaphore => std::mem::size_of::<libc::sem_t>(),
        ObjectType::Spin => std::mem::size_of::<libc::pthread_spinlock_t>(),
    }) as u64
}

/// Records what happens to a synchronization object's memory.
fn object(obj: P, ty: ObjectType, op: ObjectOp, pc: u64) {
    if let Some(t) = recording() {
        let flags = Object { ty, op }.flags();
        t.long(Kind::Object, flags, obj as u64, pc, 0, &[object_size(ty)]);
    }
}

/// Runs a call that may block with the thread parked (see the runtime's
/// `buffer.rs`): a reader of the event files need not wait for it.
fn blocking(call: impl FnOnce() -> c_int) -> c_int {
    if let Some(t) = recording() {
        t.park();
    }
    call()
}

/// A blocking lock: a pending acquire, completed when the call succeeds.
fn lock(m: P, flags: u16, pc: u64, call: impl FnOnce() -> c_int) -> c_int {
    let pending = recording().and_then(|t| t.pending_acquire(flags, m as u64, pc));
    let r = blocking(call);
    let taken = r == 0 || r == libc::EOWNERDEAD;
    let done = if r == libc::EOWNERDEAD {
        flags | LOCK_OWNER_DEAD
    } else {
        flags
    };
    if let Some(p) = pending
        && let Some(t) = recording()
    {
        t.finish_pending(p, taken, done, m as u64, pc);
    }
    if taken && flags & LOCK_SHARED != 0 {
        read_held(m);
    }
    r
}

/// A lock that never blocks: an acquire when it succeeded.
fn trylock(m: P, flags: u16, pc: u64, call: impl FnOnce() -> c_int) -> c_int {
    let r = call();
    if r == 0 || r == libc::EOWNERDEAD {
        let dead = if r == libc::EOWNERDEAD {
            LOCK_OWNER_DEAD
        } else {
            0
        };
        if let Some(t) = recording() {
            t.long(Kind::Acquire, flags | LOCK_TRY | dead, m as u64, pc, 0, &[]);
        }
        if flags & LOCK_SHARED != 0 {
            read_held(m);
        }
    }
    r
}

/// An unlock: the release first (the next owner may run at once), taken
/// back when the unlock fails.
fn unlock(m: P, flags: u16, pc: u64, call: impl FnOnce() -> c_int) -> c_int {
    let at = recording().and_then(|t| t.long(Kind::Release, flags, m as u64, pc, 0, &[]));
    let r = call();
    if r != 0
        && let Some(at) = at
        && let Some(t) = recording()
    {
        t.unrecord(at, Kind::Release);
    }
    r
}

thread_local! {
    /// The rwlocks this thread holds for reading (to tell unlocks apart).
    static READ_HELD: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn read_held(l: P) {
    if on() {
        crate::buffer::with_busy(|| READ_HELD.with(|h| h.borrow_mut().push(l as u64)));
    }
}

/// An rwlock unlock: of the shared side when this thread holds it for reading.
fn rwunlock(l: P, pc: u64, call: impl FnOnce() -> c_int) -> c_int {
    if !on() {
        return call();
    }
    let reading = crate::buffer::with_busy(|| {
        READ_HELD.with(|h| {
            let mut h = h.borrow_mut();
            match h.iter().rposition(|&x| x == l as u64) {
                Some(i) => {
                    h.remove(i);
                    true
                }
                None => false,
            }
        })
    });
    unlock(l, LOCK_RW | if reading { LOCK_SHARED } else { 0 }, pc, call)
}

fn init(obj: P, ty: ObjectType, pc: u64, call: impl FnOnce() -> c_int) -> c_int {
    let r = call();
    if r == 0 {
        object(obj, ty, ObjectOp::Init, pc);
    }
    r
}

fn destroy(obj: P, ty: ObjectType, pc: u64, call: impl FnOnce() -> c_int) -> c_int {
    object(obj, ty, ObjectOp::Destroy, pc);
    call()
}

fn destroyed(obj: P, ty: ObjectType, pc: u64, call: impl FnOnce()) {
    object(obj, ty, ObjectOp::Destroy, pc);
    call()
}

fn used(obj: P, ty: ObjectType, pc: u64, call: impl FnOnce() -> c_int) -> c_int {
    object(obj, ty, ObjectOp::Use, pc);
    call()
}

/// Records the re-acquire of a condition variable's mutex when the wait
/// ends, by return or by cancellation (then during the unwinding).
struct Reacquire {
    m: u64,
    pc: u64,
}

impl Drop for Reacquire {
    fn drop(&mut self) {
        if let Some(t) = recording() {
            t.long(Kind::Acquire, 0, self.m, self.pc, 0, &[]);
        }
    }
}

fn wait(c: P, m: P, pc: u64, call: impl FnOnce() -> c_int) -> c_int {
    object(c, ObjectType::Cond, ObjectOp::Use, pc);
    if let Some(t) = recording() {
        t.long(Kind::Release, 0, m as u64, pc, 0, &[]);
    }
    let again = Reacquire { m: m as u64, pc };
    let r = blocking(call);
    drop(again);
    r
}

fn barrier_wait(b: P, pc: u64, call: impl FnOnce() -> c_int) -> c_int {
    sync_write(b as u64, SYNC_MEMORY, pc);
    let r = blocking(call);
    sync_read(b as u64, SYNC_MEMORY, pc);
    r
}

fn post(s: P, pc: u64, call: impl FnOnce() -> c_int) -> c_int {
    let at = recording().and_then(|t| {
        t.long(
            Kind::SyncWrite,
            0,
            s as u64,
            pc,
            u64::from(SYNC_MEMORY),
            &[],
        )
    });
    let r = call();
    if r != 0
        && let Some(at) = at
        && let Some(t) = recording()
    {
        t.unrecord(at, Kind::SyncWrite);
    }
    r
}

fn got(s: P, pc: u64, call: impl FnOnce() -> c_int) -> c_int {
    let r = blocking(call);
    if r == 0 {
        sync_read(s as u64, SYNC_MEMORY, pc);
    }
    r
}

fn guard_acquire(g: *mut u64, pc: u64, call: impl FnOnce() -> c_int) -> c_int {
    let r = blocking(call);
    if r == 0 {
        // Initialized by another thread (or earlier): see its release.
        sync_read(g as u64, SYNC_MEMORY, pc);
    }
    r
}

fn guard_release(g: *mut u64, pc: u64, call: impl FnOnce()) {
    sync_write(g as u64, SYNC_MEMORY, pc);
    call()
}

/// pthread_t -> recorder thread id, for joins and names.
static THREADS: Mutex<Option<HashMap<u64, u32>>> = Mutex::new(None);

fn thread_id(th: libc::pthread_t, remove: bool) -> Option<u32> {
    // SAFETY: pthread_self is always callable.
    if th == unsafe { libc::pthread_self() } {
        return current_tid();
    }
    crate::buffer::with_busy(|| {
        let mut g = THREADS.lock().unwrap_or_else(|e| e.into_inner());
        let m = g.as_mut()?;
        if remove {
            m.remove(&th)
        } else {
            m.get(&th).copied()
        }
    })
}

fn joined(th: libc::pthread_t, pc: u64, call: impl FnOnce() -> c_int) -> c_int {
    let r = blocking(call);
    if r == 0
        && on()
        && let Some(tid) = thread_id(th, true)
        && let Some(t) = recording()
    {
        t.long(Kind::Join, 0, u64::from(tid), pc, 0, &[]);
    }
    r
}

fn named(
    th: libc::pthread_t,
    name: *const libc::c_char,
    pc: u64,
    call: impl FnOnce() -> c_int,
) -> c_int {
    let r = call();
    if r == 0
        && on()
        && !name.is_null()
        && let Some(tid) = thread_id(th, false)
        && let Some(t) = recording()
    {
        let mut bytes = [0u8; 16];
        // SAFETY: a NUL-terminated name (glibc accepted it: at most 15 bytes).
        let n = unsafe { std::ffi::CStr::from_ptr(name) }.to_bytes();
        let k = n.len().min(15);
        bytes[..k].copy_from_slice(&n[..k]);
        let w0 = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
        let w1 = u64::from_le_bytes(bytes[8..].try_into().expect("8 bytes"));
        t.long(Kind::ThreadName, 0, u64::from(tid), pc, 0, &[w0, w1]);
    }
    r
}

struct Launch {
    start: Start,
    arg: P,
    tid: u32,
}

extern "C-unwind" fn launch(p: P) -> P {
    // SAFETY: `rt_create` passed a leaked Box<Launch>.
    let l = unsafe { Box::from_raw(p as *mut Launch) };
    crate::buffer::begin_thread(l.tid, l.start as usize as u64);
    (l.start)(l.arg)
}

extern "C-unwind" fn rt_create(
    th: *mut libc::pthread_t,
    attr: P,
    start: Start,
    arg: P,
    pc: u64,
) -> c_int {
    let create =
        real!(pthread_create: extern "C-unwind" fn(*mut libc::pthread_t, P, Start, P) -> c_int);
    if !on() {
        return create(th, attr, start, arg);
    }
    let tid = new_tid();
    let at = recording().and_then(|t| t.long(Kind::Fork, 0, u64::from(tid), pc, 0, &[]));
    let l = crate::buffer::with_busy(|| Box::into_raw(Box::new(Launch { start, arg, tid })));
    let r = create(th, attr, launch, l as P);
    if r == 0 {
        // SAFETY: pthread_create filled *th.
        let t = unsafe { *th };
        crate::buffer::with_busy(|| {
            THREADS
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get_or_insert_with(HashMap::new)
                .insert(t, tid)
        });
    } else {
        if let Some(at) = at
            && let Some(t) = recording()
        {
            t.unrecord(at, Kind::Fork);
        }
        // SAFETY: the thread was not created, so the box is still ours.
        drop(unsafe { Box::from_raw(l) });
    }
    r
}

type ThrdStart = extern "C-unwind" fn(P) -> c_int;

struct LaunchC11 {
    start: ThrdStart,
    arg: P,
    tid: u32,
}

extern "C-unwind" fn launch_c11(p: P) -> c_int {
    // SAFETY: `rt_thrd_create` passed a leaked Box<LaunchC11>.
    let l = unsafe { Box::from_raw(p as *mut LaunchC11) };
    crate::buffer::begin_thread(l.tid, l.start as usize as u64);
    (l.start)(l.arg)
}

extern "C-unwind" fn rt_thrd_create(
    th: *mut libc::pthread_t,
    start: ThrdStart,
    arg: P,
    pc: u64,
) -> c_int {
    let create =
        real!(thrd_create: extern "C-unwind" fn(*mut libc::pthread_t, ThrdStart, P) -> c_int);
    if !on() {
        return create(th, start, arg);
    }
    let tid = new_tid();
    let at = recording().and_then(|t| t.long(Kind::Fork, 0, u64::from(tid), pc, 0, &[]));
    let l = crate::buffer::with_busy(|| Box::into_raw(Box::new(LaunchC11 { start, arg, tid })));
    let r = create(th, launch_c11, l as P);
    if r == 0 {
        // SAFETY: thrd_create filled *th.
        let t = unsafe { *th };
        crate::buffer::with_busy(|| {
            THREADS
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get_or_insert_with(HashMap::new)
                .insert(t, tid)
        });
    } else {
        if let Some(at) = at
            && let Some(t) = recording()
        {
            t.unrecord(at, Kind::Fork);
        }
        // SAFETY: the thread was not created, so the box is still ours.
        drop(unsafe { Box::from_raw(l) });
    }
    r
}

extern "C-unwind" fn rt_call_once(flag: P, routine: extern "C-unwind" fn(), pc: u64) {
    let f = real!(call_once: extern "C-unwind" fn(P, extern "C-unwind" fn()));
    if !on() {
        return f(flag, routine);
    }
    let saved = ONCE.with(|o| o.replace((routine as usize, flag as u64, pc)));
    f(flag, once_routine);
    ONCE.with(|o| o.set(saved));
    sync_read(flag as u64, SYNC_MEMORY, pc);
}

thread_local! {
    /// The routine and control of the pthread_once call this thread is in.
    static ONCE: std::cell::Cell<(usize, u64, u64)> = const { std::cell::Cell::new((0, 0, 0)) };
}

extern "C-unwind" fn once_routine() {
    let (routine, ctl, pc) = ONCE.with(|o| o.get());
    // SAFETY: rt_once stored the program's routine.
    let routine: extern "C-unwind" fn() = unsafe { std::mem::transmute(routine) };
    routine();
    sync_write(ctl, SYNC_MEMORY, pc);
}

extern "C-unwind" fn rt_once(ctl: P, routine: extern "C-unwind" fn(), pc: u64) -> c_int {
    let f = real!(pthread_once: extern "C-unwind" fn(P, extern "C-unwind" fn()) -> c_int);
    if !on() {
        return f(ctl, routine);
    }
    let saved = ONCE.with(|o| o.replace((routine as usize, ctl as u64, pc)));
    let r = f(ctl, once_routine);
    ONCE.with(|o| o.set(saved));
    sync_read(ctl as u64, SYNC_MEMORY, pc);
    r
}
