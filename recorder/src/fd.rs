//! Interposed file-descriptor functions: data passed through a pipe, a
//! socket or an eventfd orders the writer before the reader (each
//! descriptor is a synchronization object; both ends of a pipe or socket
//! pair share one), and the buffers read and written are accesses.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use cprace_events::SYNC_KEY;
use libc::{c_int, c_void, size_t, ssize_t};

use crate::real;
use crate::tsan::{entry, pcreg, range, sync_read, sync_write};

type P = *mut c_void;
type C = *const c_void;

/// Descriptors with a table slot (others get a key from their number).
const SLOTS: usize = 4096;
/// The synchronization key of each descriptor (0: none yet).
static KEYS: [AtomicU64; SLOTS] = [const { AtomicU64::new(0) }; SLOTS];
/// Keys are numbered from here (far above any address).
static NEXT: AtomicU64 = AtomicU64::new(1 << 62);

fn fresh() -> u64 {
    NEXT.fetch_add(1, Relaxed)
}

/// The key of `fd` (made on first use).
fn key(fd: c_int) -> u64 {
    if fd < 0 || fd as usize >= SLOTS {
        return (1 << 61) + fd as u64;
    }
    let k = &KEYS[fd as usize];
    match k.load(Relaxed) {
        0 => {
            let new = fresh();
            match k.compare_exchange(0, new, Relaxed, Relaxed) {
                Ok(_) => new,
                Err(old) => old,
            }
        }
        v => v,
    }
}

fn set_key(fd: c_int, k: u64) {
    if fd >= 0 && (fd as usize) < SLOTS {
        KEYS[fd as usize].store(k, Relaxed);
    }
}

entry! {
    pipe => rt_pipe, 1;
    pipe2 => rt_pipe2, 2;
    socketpair => rt_socketpair, 4;
    close => rt_close, 1;
    dup => rt_dup, 1;
    dup2 => rt_dup2, 2;
    dup3 => rt_dup3, 3;
    write => rt_write, 3;
    pwrite => rt_pwrite, 4;
    pwrite64 => rt_pwrite, 4;
    send => rt_send, 4;
    read => rt_read, 3;
    pread => rt_pread, 4;
    pread64 => rt_pread, 4;
    recv => rt_recv, 4;
    eventfd_write => rt_eventfd_write, 2;
    eventfd_read => rt_eventfd_read, 2;
    fread => rt_fread, 4;
    fwrite => rt_fwrite, 4;
    dlopen => rt_dlopen, 2;
}

fn paired(fds: *mut c_int, r: c_int) -> c_int {
    if r == 0 {
        let k = fresh();
        // SAFETY: the call succeeded, so it filled two descriptors.
        unsafe {
            set_key(*fds, k);
            set_key(*fds.add(1), k);
        }
    }
    r
}

extern "C" fn rt_pipe(fds: *mut c_int, _pc: u64) -> c_int {
    let f = real!(pipe: extern "C" fn(*mut c_int) -> c_int);
    paired(fds, f(fds))
}

extern "C" fn rt_pipe2(fds: *mut c_int, flags: c_int, _pc: u64) -> c_int {
    let f = real!(pipe2: extern "C" fn(*mut c_int, c_int) -> c_int);
    paired(fds, f(fds, flags))
}

extern "C" fn rt_socketpair(d: c_int, t: c_int, p: c_int, fds: *mut c_int, _pc: u64) -> c_int {
    let f = real!(socketpair: extern "C" fn(c_int, c_int, c_int, *mut c_int) -> c_int);
    paired(fds, f(d, t, p, fds))
}

extern "C" fn rt_close(fd: c_int, _pc: u64) -> c_int {
    let f = real!(close: extern "C" fn(c_int) -> c_int);
    set_key(fd, 0);
    f(fd)
}

extern "C" fn rt_dup(fd: c_int, _pc: u64) -> c_int {
    let f = real!(dup: extern "C" fn(c_int) -> c_int);
    let r = f(fd);
    if r >= 0 {
        set_key(r, key(fd));
    }
    r
}

extern "C" fn rt_dup2(fd: c_int, to: c_int, _pc: u64) -> c_int {
    let f = real!(dup2: extern "C" fn(c_int, c_int) -> c_int);
    let r = f(fd, to);
    if r >= 0 {
        set_key(r, key(fd));
    }
    r
}

extern "C" fn rt_dup3(fd: c_int, to: c_int, flags: c_int, _pc: u64) -> c_int {
    let f = real!(dup3: extern "C" fn(c_int, c_int, c_int) -> c_int);
    let r = f(fd, to, flags);
    if r >= 0 {
        set_key(r, key(fd));
    }
    r
}

/// Before a write to `fd` of `n` bytes from `buf`.
fn sending(fd: c_int, buf: C, n: size_t, pc: u64) {
    if crate::own::contains(pc) {
        return;
    }
    range(false, buf as u64, n as u64, pc);
    sync_write(key(fd), SYNC_KEY, pc);
}

/// After a read from `fd` of `r` bytes into `buf`.
fn received(fd: c_int, buf: P, r: ssize_t, pc: u64) -> ssize_t {
    if r > 0 && !crate::own::contains(pc) {
        sync_read(key(fd), SYNC_KEY, pc);
        range(true, buf as u64, r as u64, pc);
    }
    r
}

extern "C-unwind" fn rt_write(fd: c_int, buf: C, n: size_t, pc: u64) -> ssize_t {
    let f = real!(write: extern "C-unwind" fn(c_int, C, size_t) -> ssize_t);
    sending(fd, buf, n, pc);
    f(fd, buf, n)
}

extern "C-unwind" fn rt_pwrite(fd: c_int, buf: C, n: size_t, off: i64, pc: u64) -> ssize_t {
    let f = real!(pwrite: extern "C-unwind" fn(c_int, C, size_t, i64) -> ssize_t);
    sending(fd, buf, n, pc);
    f(fd, buf, n, off)
}

extern "C-unwind" fn rt_send(fd: c_int, buf: C, n: size_t, fl: c_int, pc: u64) -> ssize_t {
    let f = real!(send: extern "C-unwind" fn(c_int, C, size_t, c_int) -> ssize_t);
    sending(fd, buf, n, pc);
    f(fd, buf, n, fl)
}

extern "C-unwind" fn rt_read(fd: c_int, buf: P, n: size_t, pc: u64) -> ssize_t {
    let f = real!(read: extern "C-unwind" fn(c_int, P, size_t) -> ssize_t);
    received(fd, buf, f(fd, buf, n), pc)
}

extern "C-unwind" fn rt_pread(fd: c_int, buf: P, n: size_t, off: i64, pc: u64) -> ssize_t {
    let f = real!(pread: extern "C-unwind" fn(c_int, P, size_t, i64) -> ssize_t);
    received(fd, buf, f(fd, buf, n, off), pc)
}

extern "C-unwind" fn rt_recv(fd: c_int, buf: P, n: size_t, fl: c_int, pc: u64) -> ssize_t {
    let f = real!(recv: extern "C-unwind" fn(c_int, P, size_t, c_int) -> ssize_t);
    received(fd, buf, f(fd, buf, n, fl), pc)
}

extern "C-unwind" fn rt_eventfd_write(fd: c_int, v: u64, pc: u64) -> c_int {
    let f = real!(eventfd_write: extern "C-unwind" fn(c_int, u64) -> c_int);
    sync_write(key(fd), SYNC_KEY, pc);
    f(fd, v)
}

extern "C-unwind" fn rt_eventfd_read(fd: c_int, v: *mut u64, pc: u64) -> c_int {
    let f = real!(eventfd_read: extern "C-unwind" fn(c_int, *mut u64) -> c_int);
    let r = f(fd, v);
    if r == 0 {
        sync_read(key(fd), SYNC_KEY, pc);
    }
    r
}

extern "C-unwind" fn rt_fread(buf: P, size: size_t, n: size_t, file: P, pc: u64) -> size_t {
    let f = real!(fread: extern "C-unwind" fn(P, size_t, size_t, P) -> size_t);
    let r = f(buf, size, n, file);
    range(true, buf as u64, (r * size) as u64, pc);
    r
}

extern "C-unwind" fn rt_fwrite(buf: C, size: size_t, n: size_t, file: P, pc: u64) -> size_t {
    let f = real!(fwrite: extern "C-unwind" fn(C, size_t, size_t, P) -> size_t);
    range(false, buf as u64, (size.saturating_mul(n)) as u64, pc);
    f(buf, size, n, file)
}

extern "C-unwind" fn rt_dlopen(name: *const libc::c_char, flags: c_int, _pc: u64) -> P {
    let f = real!(dlopen: extern "C-unwind" fn(*const libc::c_char, c_int) -> P);
    let r = crate::buffer::with_busy(|| f(name, flags));
    if !r.is_null() {
        crate::buffer::modules_changed();
    }
    r
}
