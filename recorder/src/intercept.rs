//! Interposed libc functions: the synchronization and heap events the
//! relations must see. Each calls the real function (see [`crate::real`]).
//!
//! How each primitive is modelled (events use the object's address as name):
//! - pthread_create/join (and tryjoin/timedjoin/clockjoin on success): fork
//!   before the thread exists, join after it has ended.
//! - mutexes and spin locks: acquire after a successful lock, trylock,
//!   timedlock or clocklock (EOWNERDEAD counts); release before unlocking
//!   (taken back if the unlock fails).
//! - condition variables: wait = release of the mutex + its re-acquire.
//! - rwlocks: the write side is the lock itself (acquire/release). The read
//!   side is volatile: a reader reads `L.w` when it gets the lock and writes
//!   its own `L.r.T<t>` when it releases it; a writer reads every `L.r.T<t>`
//!   after it gets the lock and writes `L.w` before releasing. So a writer is
//!   ordered after every earlier reader and a reader after every earlier
//!   writer, while readers stay unordered among themselves.
//! - semaphores: post = volatile write, a successful wait = volatile read.
//! - barriers: volatile write on arrival, volatile read on departure.
//! - pthread_once: the routine's runner writes the once-control, every caller
//!   reads it on return.
//! - free/realloc: a FREE note so cprace names later accesses to the block's
//!   bytes as new variables (realloc frees the old block: C makes the result a
//!   new object).

use std::collections::HashMap;
use std::sync::Mutex;

use libc::{c_int, c_void};

use crate::buffer::{ENABLED, current_tid, new_tid, record, unrecord_last};
use crate::kind::*;
use crate::real;
use crate::tsan::{entry, pcreg};

entry! {
    pthread_create => rt_create, 4;
    pthread_join => rt_join, 2;
    pthread_tryjoin_np => rt_tryjoin, 2;
    pthread_timedjoin_np => rt_timedjoin, 3;
    pthread_clockjoin_np => rt_clockjoin, 4;
    pthread_mutex_lock => rt_mutex_lock, 1;
    pthread_mutex_trylock => rt_mutex_trylock, 1;
    pthread_mutex_timedlock => rt_mutex_timedlock, 2;
    pthread_mutex_clocklock => rt_mutex_clocklock, 3;
    pthread_mutex_unlock => rt_mutex_unlock, 1;
    pthread_spin_lock => rt_spin_lock, 1;
    pthread_spin_trylock => rt_spin_trylock, 1;
    pthread_spin_unlock => rt_spin_unlock, 1;
    pthread_cond_wait => rt_cond_wait, 2;
    pthread_cond_timedwait => rt_cond_timedwait, 3;
    pthread_cond_clockwait => rt_cond_clockwait, 4;
    pthread_rwlock_rdlock => rt_rdlock, 1;
    pthread_rwlock_tryrdlock => rt_tryrdlock, 1;
    pthread_rwlock_timedrdlock => rt_timedrdlock, 2;
    pthread_rwlock_clockrdlock => rt_clockrdlock, 3;
    pthread_rwlock_wrlock => rt_wrlock, 1;
    pthread_rwlock_trywrlock => rt_trywrlock, 1;
    pthread_rwlock_timedwrlock => rt_timedwrlock, 2;
    pthread_rwlock_clockwrlock => rt_clockwrlock, 3;
    pthread_rwlock_unlock => rt_rwunlock, 1;
    sem_post => rt_sem_post, 1;
    sem_wait => rt_sem_wait, 1;
    sem_trywait => rt_sem_trywait, 1;
    sem_timedwait => rt_sem_timedwait, 2;
    sem_clockwait => rt_sem_clockwait, 3;
    pthread_barrier_wait => rt_barrier_wait, 1;
    pthread_once => rt_once, 2;
    free => rt_free, 1;
    realloc => rt_realloc, 2;
}

type P = *mut c_void;
type Start = extern "C" fn(P) -> P;

fn on() -> bool {
    ENABLED.load(std::sync::atomic::Ordering::Relaxed)
}

/// pthread_t -> recorder thread id, for joins.
static THREADS: Mutex<Option<HashMap<u64, u32>>> = Mutex::new(None);

struct Launch {
    start: Start,
    arg: P,
    tid: u32,
}

extern "C" fn launch(p: P) -> P {
    // SAFETY: `rt_create` passed a leaked Box<Launch>.
    let l = unsafe { Box::from_raw(p as *mut Launch) };
    crate::buffer::begin_thread(l.tid);
    (l.start)(l.arg)
}

extern "C" fn rt_create(th: *mut libc::pthread_t, attr: P, start: Start, arg: P, pc: u64) -> c_int {
    let create = real!(pthread_create: extern "C" fn(*mut libc::pthread_t, P, Start, P) -> c_int);
    if !on() {
        return create(th, attr, start, arg);
    }
    let tid = new_tid();
    record(FORK, tid as u64, pc, 0);
    let l = Box::into_raw(Box::new(Launch { start, arg, tid }));
    let r = create(th, attr, launch, l as P);
    if r == 0 {
        // SAFETY: pthread_create filled *th.
        let t = unsafe { *th };
        THREADS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert_with(HashMap::new)
            .insert(t, tid);
    } else {
        unrecord_last();
        // SAFETY: the thread was not created, so the box is still ours.
        drop(unsafe { Box::from_raw(l) });
    }
    r
}

fn joined(th: libc::pthread_t, r: c_int, pc: u64) -> c_int {
    if r == 0 && on() {
        let tid = THREADS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
            .and_then(|m| m.remove(&th));
        if let Some(tid) = tid {
            record(JOIN, tid as u64, pc, 0);
        }
    }
    r
}

extern "C" fn rt_join(th: libc::pthread_t, ret: *mut P, pc: u64) -> c_int {
    let f = real!(pthread_join: extern "C" fn(libc::pthread_t, *mut P) -> c_int);
    joined(th, f(th, ret), pc)
}

extern "C" fn rt_tryjoin(th: libc::pthread_t, ret: *mut P, pc: u64) -> c_int {
    let f = real!(pthread_tryjoin_np: extern "C" fn(libc::pthread_t, *mut P) -> c_int);
    joined(th, f(th, ret), pc)
}

extern "C" fn rt_timedjoin(th: libc::pthread_t, ret: *mut P, t: P, pc: u64) -> c_int {
    let f = real!(pthread_timedjoin_np: extern "C" fn(libc::pthread_t, *mut P, P) -> c_int);
    joined(th, f(th, ret, t), pc)
}

extern "C" fn rt_clockjoin(th: libc::pthread_t, ret: *mut P, c: c_int, t: P, pc: u64) -> c_int {
    let f = real!(pthread_clockjoin_np: extern "C" fn(libc::pthread_t, *mut P, c_int, P) -> c_int);
    joined(th, f(th, ret, c, t), pc)
}

/// Records an acquire of `m` when a lock call succeeded.
fn acquired(m: P, r: c_int, pc: u64) -> c_int {
    if r == 0 || r == libc::EOWNERDEAD {
        record(ACQUIRE, m as u64, pc, 0);
    }
    r
}

/// Records the release of `m`, unlocks with `unlock`, takes the event back on failure.
fn release(m: P, pc: u64, unlock: impl FnOnce() -> c_int) -> c_int {
    record(RELEASE, m as u64, pc, 0);
    let r = unlock();
    if r != 0 {
        unrecord_last();
    }
    r
}

extern "C" fn rt_mutex_lock(m: P, pc: u64) -> c_int {
    let f = real!(pthread_mutex_lock: extern "C" fn(P) -> c_int);
    acquired(m, f(m), pc)
}

extern "C" fn rt_mutex_trylock(m: P, pc: u64) -> c_int {
    let f = real!(pthread_mutex_trylock: extern "C" fn(P) -> c_int);
    acquired(m, f(m), pc)
}

extern "C" fn rt_mutex_timedlock(m: P, t: P, pc: u64) -> c_int {
    let f = real!(pthread_mutex_timedlock: extern "C" fn(P, P) -> c_int);
    acquired(m, f(m, t), pc)
}

extern "C" fn rt_mutex_clocklock(m: P, c: c_int, t: P, pc: u64) -> c_int {
    let f = real!(pthread_mutex_clocklock: extern "C" fn(P, c_int, P) -> c_int);
    acquired(m, f(m, c, t), pc)
}

extern "C" fn rt_mutex_unlock(m: P, pc: u64) -> c_int {
    let f = real!(pthread_mutex_unlock: extern "C" fn(P) -> c_int);
    release(m, pc, || f(m))
}

extern "C" fn rt_spin_lock(m: P, pc: u64) -> c_int {
    let f = real!(pthread_spin_lock: extern "C" fn(P) -> c_int);
    acquired(m, f(m), pc)
}

extern "C" fn rt_spin_trylock(m: P, pc: u64) -> c_int {
    let f = real!(pthread_spin_trylock: extern "C" fn(P) -> c_int);
    acquired(m, f(m), pc)
}

extern "C" fn rt_spin_unlock(m: P, pc: u64) -> c_int {
    let f = real!(pthread_spin_unlock: extern "C" fn(P) -> c_int);
    release(m, pc, || f(m))
}

/// A wait releases the mutex and re-acquires it whatever the outcome.
fn wait(m: P, pc: u64, w: impl FnOnce() -> c_int) -> c_int {
    record(RELEASE, m as u64, pc, 0);
    let r = w();
    record(ACQUIRE, m as u64, pc, 0);
    r
}

extern "C" fn rt_cond_wait(c: P, m: P, pc: u64) -> c_int {
    let f = real!(pthread_cond_wait: extern "C" fn(P, P) -> c_int);
    wait(m, pc, || f(c, m))
}

extern "C" fn rt_cond_timedwait(c: P, m: P, t: P, pc: u64) -> c_int {
    let f = real!(pthread_cond_timedwait: extern "C" fn(P, P, P) -> c_int);
    wait(m, pc, || f(c, m, t))
}

extern "C" fn rt_cond_clockwait(c: P, m: P, k: c_int, t: P, pc: u64) -> c_int {
    let f = real!(pthread_cond_clockwait: extern "C" fn(P, P, c_int, P) -> c_int);
    wait(m, pc, || f(c, m, k, t))
}

/// rwlock -> the recorder ids of the threads that ever read-locked it.
static READERS: Mutex<Option<HashMap<u64, Vec<u32>>>> = Mutex::new(None);

thread_local! {
    /// The rwlocks this thread holds for reading (to tell unlocks apart).
    static READ_HELD: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn read_locked(l: P, r: c_int, pc: u64) -> c_int {
    if r == 0 && on() {
        let Some(t) = current_tid() else { return r };
        READ_HELD.with(|h| h.borrow_mut().push(l as u64));
        {
            let mut g = READERS.lock().unwrap_or_else(|e| e.into_inner());
            let v = g
                .get_or_insert_with(HashMap::new)
                .entry(l as u64)
                .or_default();
            if !v.contains(&t) {
                v.push(t);
            }
        }
        record(SYNC_VREAD, l as u64, pc, 1);
    }
    r
}

fn write_locked(l: P, r: c_int, pc: u64) -> c_int {
    if r == 0 && on() {
        record(ACQUIRE, l as u64, pc, 0);
        let readers = READERS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .and_then(|m| m.get(&(l as u64)).cloned())
            .unwrap_or_default();
        for t in readers {
            record(SYNC_VREAD, l as u64, pc, 2 + t as u64);
        }
    }
    r
}

extern "C" fn rt_rdlock(l: P, pc: u64) -> c_int {
    let f = real!(pthread_rwlock_rdlock: extern "C" fn(P) -> c_int);
    read_locked(l, f(l), pc)
}

extern "C" fn rt_tryrdlock(l: P, pc: u64) -> c_int {
    let f = real!(pthread_rwlock_tryrdlock: extern "C" fn(P) -> c_int);
    read_locked(l, f(l), pc)
}

extern "C" fn rt_timedrdlock(l: P, t: P, pc: u64) -> c_int {
    let f = real!(pthread_rwlock_timedrdlock: extern "C" fn(P, P) -> c_int);
    read_locked(l, f(l, t), pc)
}

extern "C" fn rt_clockrdlock(l: P, c: c_int, t: P, pc: u64) -> c_int {
    let f = real!(pthread_rwlock_clockrdlock: extern "C" fn(P, c_int, P) -> c_int);
    read_locked(l, f(l, c, t), pc)
}

extern "C" fn rt_wrlock(l: P, pc: u64) -> c_int {
    let f = real!(pthread_rwlock_wrlock: extern "C" fn(P) -> c_int);
    write_locked(l, f(l), pc)
}

extern "C" fn rt_trywrlock(l: P, pc: u64) -> c_int {
    let f = real!(pthread_rwlock_trywrlock: extern "C" fn(P) -> c_int);
    write_locked(l, f(l), pc)
}

extern "C" fn rt_timedwrlock(l: P, t: P, pc: u64) -> c_int {
    let f = real!(pthread_rwlock_timedwrlock: extern "C" fn(P, P) -> c_int);
    write_locked(l, f(l, t), pc)
}

extern "C" fn rt_clockwrlock(l: P, c: c_int, t: P, pc: u64) -> c_int {
    let f = real!(pthread_rwlock_clockwrlock: extern "C" fn(P, c_int, P) -> c_int);
    write_locked(l, f(l, c, t), pc)
}

extern "C" fn rt_rwunlock(l: P, pc: u64) -> c_int {
    let f = real!(pthread_rwlock_unlock: extern "C" fn(P) -> c_int);
    if !on() {
        return f(l);
    }
    let reading = READ_HELD.with(|h| {
        let mut h = h.borrow_mut();
        match h.iter().rposition(|&x| x == l as u64) {
            Some(i) => {
                h.remove(i);
                true
            }
            None => false,
        }
    });
    if reading {
        let t = current_tid().unwrap_or(0);
        record(SYNC_VWRITE, l as u64, pc, 2 + t as u64);
        f(l)
    } else {
        record(SYNC_VWRITE, l as u64, pc, 1);
        let r = release(l, pc, || f(l));
        if r != 0 {
            unrecord_last();
        }
        r
    }
}

extern "C" fn rt_sem_post(s: P, pc: u64) -> c_int {
    let f = real!(sem_post: extern "C" fn(P) -> c_int);
    record(SYNC_VWRITE, s as u64, pc, 0);
    let r = f(s);
    if r != 0 {
        unrecord_last();
    }
    r
}

fn sem_got(s: P, r: c_int, pc: u64) -> c_int {
    if r == 0 {
        record(SYNC_VREAD, s as u64, pc, 0);
    }
    r
}

extern "C" fn rt_sem_wait(s: P, pc: u64) -> c_int {
    let f = real!(sem_wait: extern "C" fn(P) -> c_int);
    sem_got(s, f(s), pc)
}

extern "C" fn rt_sem_trywait(s: P, pc: u64) -> c_int {
    let f = real!(sem_trywait: extern "C" fn(P) -> c_int);
    sem_got(s, f(s), pc)
}

extern "C" fn rt_sem_timedwait(s: P, t: P, pc: u64) -> c_int {
    let f = real!(sem_timedwait: extern "C" fn(P, P) -> c_int);
    sem_got(s, f(s, t), pc)
}

extern "C" fn rt_sem_clockwait(s: P, c: c_int, t: P, pc: u64) -> c_int {
    let f = real!(sem_clockwait: extern "C" fn(P, c_int, P) -> c_int);
    sem_got(s, f(s, c, t), pc)
}

extern "C" fn rt_barrier_wait(b: P, pc: u64) -> c_int {
    let f = real!(pthread_barrier_wait: extern "C" fn(P) -> c_int);
    record(SYNC_VWRITE, b as u64, pc, 0);
    let r = f(b);
    record(SYNC_VREAD, b as u64, pc, 0);
    r
}

thread_local! {
    /// The routine and control of the pthread_once call this thread is in.
    static ONCE: std::cell::Cell<(usize, u64, u64)> = const { std::cell::Cell::new((0, 0, 0)) };
}

extern "C" fn once_routine() {
    let (routine, ctl, pc) = ONCE.with(|o| o.get());
    // SAFETY: rt_once stored the program's routine.
    let routine: extern "C" fn() = unsafe { std::mem::transmute(routine) };
    routine();
    record(SYNC_VWRITE, ctl, pc, 0);
}

extern "C" fn rt_once(ctl: P, routine: extern "C" fn(), pc: u64) -> c_int {
    let f = real!(pthread_once: extern "C" fn(P, extern "C" fn()) -> c_int);
    if !on() {
        return f(ctl, routine);
    }
    let saved = ONCE.with(|o| o.replace((routine as usize, ctl as u64, pc)));
    let r = f(ctl, once_routine);
    ONCE.with(|o| o.set(saved));
    record(SYNC_VREAD, ctl as u64, pc, 0);
    r
}

fn note_free(p: P, pc: u64) {
    if !p.is_null() && on() {
        // SAFETY: p is a live heap block (the program is about to free it).
        let size = unsafe { libc::malloc_usable_size(p) } as u64;
        record(FREE, p as u64, size.min(0x00ff_ffff_ffff_ffff), 0);
        let _ = pc;
    }
}

extern "C" fn rt_free(p: P, pc: u64) {
    if crate::real::resolving() {
        // dlsym allocating while we look up the real free: leak it.
        return;
    }
    let f = real!(free: extern "C" fn(P));
    note_free(p, pc);
    f(p)
}

extern "C" fn rt_realloc(p: P, size: usize, pc: u64) -> P {
    let f = real!(realloc: extern "C" fn(P, usize) -> P);
    note_free(p, pc);
    f(p, size)
}
