//! The interposed functions' real definitions, found with `dlsym(RTLD_NEXT)`.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

thread_local! {
    /// Set while this thread is inside `dlsym`, which may itself call
    /// interposed functions (`strlen`, `free`, ...).
    static RESOLVING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

static RESOLVE_LOCK: AtomicBool = AtomicBool::new(false);

/// True while this thread resolves a symbol: interposed functions then use
/// their own fallback instead of looking up the real one.
pub fn resolving() -> bool {
    RESOLVING.with(|r| r.get())
}

/// The address of the next definition of `name` (NUL-terminated) after this
/// library, cached in `slot`; 0 while this thread is already resolving
/// another symbol (the caller then uses its fallback). Aborts if there is
/// none: the program could not run correctly without it.
pub fn lookup(slot: &AtomicUsize, name: &[u8]) -> usize {
    let p = slot.load(Ordering::Acquire);
    if p != 0 {
        return p;
    }
    if resolving() {
        return 0;
    }
    RESOLVING.with(|r| r.set(true));
    while RESOLVE_LOCK
        .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        std::hint::spin_loop();
    }
    let p = crate::buffer::with_busy(|| {
        // SAFETY: name is NUL-terminated.
        unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr() as *const libc::c_char) as usize }
    });
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

/// `real!(name: fn(args) -> ret)` evaluates to the real `name` as a function
/// pointer (`real!(? name: ...)`: an `Option`, None while resolving).
#[macro_export]
macro_rules! real {
    (? $name:ident : $ty:ty) => {{
        static SLOT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let p = $crate::real::lookup(&SLOT, concat!(stringify!($name), "\0").as_bytes());
        if p == 0 {
            None
        } else {
            // SAFETY: the symbol has this C signature.
            Some(unsafe { std::mem::transmute::<usize, $ty>(p) })
        }
    }};
    ($name:ident : $ty:ty) => {{
        match $crate::real!(? $name: $ty) {
            Some(f) => f,
            None => $crate::real::unresolvable(),
        }
    }};
}

/// A function without fallback was called while its real definition was
/// being looked up: nothing sensible can be done.
#[cold]
pub fn unresolvable() -> ! {
    let msg = b"cprace-rt: an interposed function was called while resolving symbols\n";
    // SAFETY: writing a static message to stderr, then aborting.
    unsafe {
        libc::write(2, msg.as_ptr() as *const libc::c_void, msg.len());
        libc::abort();
    }
}
