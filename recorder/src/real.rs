//! The interposed functions' real definitions, found with `dlsym(RTLD_NEXT)`.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

thread_local! {
    /// Set while this thread is inside `dlsym`, which may itself call `free`.
    static RESOLVING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

static RESOLVE_LOCK: AtomicBool = AtomicBool::new(false);

/// True while this thread resolves a symbol (the interposed `free` then
/// leaks instead of recursing).
pub fn resolving() -> bool {
    RESOLVING.with(|r| r.get())
}

/// The address of the next definition of `name` (NUL-terminated) after this
/// library, cached in `slot`. Aborts if there is none: the program could not
/// run correctly without it.
pub fn lookup(slot: &AtomicUsize, name: &[u8]) -> usize {
    let p = slot.load(Ordering::Acquire);
    if p != 0 {
        return p;
    }
    RESOLVING.with(|r| r.set(true));
    while RESOLVE_LOCK
        .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        std::hint::spin_loop();
    }
    // SAFETY: name is NUL-terminated.
    let p = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr() as *const libc::c_char) } as usize;
    RESOLVE_LOCK.store(false, Ordering::Release);
    RESOLVING.with(|r| r.set(false));
    if p == 0 {
        let msg = b"cprace-rt: cannot find the real definition of an interposed function\n";
        // SAFETY: writing a static message to stderr, then aborting.
        unsafe {
            libc::write(2, msg.as_ptr() as *const libc::c_void, msg.len());
            libc::abort();
        }
    }
    slot.store(p, Ordering::Release);
    p
}

/// `real!(name: fn(args) -> ret)` evaluates to the real `name` as a function pointer.
#[macro_export]
macro_rules! real {
    ($name:ident : $ty:ty) => {{
        static SLOT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let p = $crate::real::lookup(&SLOT, concat!(stringify!($name), "\0").as_bytes());
        // SAFETY: the symbol has this C signature.
        unsafe { std::mem::transmute::<usize, $ty>(p) }
    }};
}
