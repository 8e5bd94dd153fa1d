//! A spin lock the runtime can take anywhere: in fork handlers, inside
//! interposed allocation functions, with no allocation and no futex state
//! a forked child could inherit half-taken.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, Ordering};

/// Data behind a spin lock.
pub struct SpinLock<T> {
    locked: AtomicBool,
    data: UnsafeCell<T>,
}

// SAFETY: the data is only reached through `with`, under the lock.
unsafe impl<T: Send> Sync for SpinLock<T> {}

impl<T> SpinLock<T> {
    /// A lock holding `data`, unlocked.
    pub const fn new(data: T) -> SpinLock<T> {
        SpinLock {
            locked: AtomicBool::new(false),
            data: UnsafeCell::new(data),
        }
    }

    /// Takes the lock (spinning, then yielding).
    pub fn lock(&self) {
        let mut spins = 0u32;
        while self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            spins += 1;
            if spins < 64 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }

    /// Releases the lock.
    pub fn unlock(&self) {
        self.locked.store(false, Ordering::Release);
    }

    /// Runs `f` on the data under the lock.
    pub fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        self.lock();
        // SAFETY: the lock is held: no other reference to the data exists.
        let r = f(unsafe { &mut *self.data.get() });
        self.unlock();
        r
    }
}
