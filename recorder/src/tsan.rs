//! The `__tsan_*` entry points compiler instrumentation calls.
//!
//! Each entry point is a naked trampoline that puts its caller's return
//! address (the instrumented code's location) into the next free argument
//! register and jumps to the Rust implementation, so every event carries the
//! pc cprace symbolizes to `file:line`. Variables are the accessed start
//! addresses (the access size does not matter).

use std::sync::atomic::{
    AtomicBool, AtomicU8, AtomicU16, AtomicU32, AtomicU64, Ordering::Acquire, Ordering::Relaxed,
    Ordering::Release, Ordering::SeqCst,
};

use crate::buffer::record;
use crate::kind::*;

/// The register holding argument `n` (0-based) in the x86-64 SysV ABI.
macro_rules! pcreg {
    (0) => {
        "rdi"
    };
    (1) => {
        "rsi"
    };
    (2) => {
        "rdx"
    };
    (3) => {
        "rcx"
    };
    (4) => {
        "r8"
    };
    (5) => {
        "r9"
    };
}

/// `entry!(symbol => implementation, n)`: export `symbol`, which calls
/// `implementation` with its `n` arguments plus its caller's pc.
macro_rules! entry {
    ($($name:ident => $imp:ident, $n:tt;)*) => {$(
        #[doc = concat!("Entry point `", stringify!($name), "` (called from C).")]
        ///
        /// # Safety
        /// Called by compiled C code with the C function's arguments.
        #[unsafe(naked)]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name() {
            core::arch::naked_asm!(
                concat!("mov ", pcreg!($n), ", [rsp]"),
                "jmp {f}",
                f = sym $imp,
            )
        }
    )*};
}
pub(crate) use {entry, pcreg};

entry! {
    __tsan_read1 => rt_read, 1;
    __tsan_read2 => rt_read, 1;
    __tsan_read4 => rt_read, 1;
    __tsan_read8 => rt_read, 1;
    __tsan_read16 => rt_read, 1;
    __tsan_unaligned_read2 => rt_read, 1;
    __tsan_unaligned_read4 => rt_read, 1;
    __tsan_unaligned_read8 => rt_read, 1;
    __tsan_unaligned_read16 => rt_read, 1;
    __tsan_volatile_read1 => rt_read, 1;
    __tsan_volatile_read2 => rt_read, 1;
    __tsan_volatile_read4 => rt_read, 1;
    __tsan_volatile_read8 => rt_read, 1;
    __tsan_volatile_read16 => rt_read, 1;
    __tsan_vptr_read => rt_read, 1;
    __tsan_write1 => rt_write, 1;
    __tsan_write2 => rt_write, 1;
    __tsan_write4 => rt_write, 1;
    __tsan_write8 => rt_write, 1;
    __tsan_write16 => rt_write, 1;
    __tsan_unaligned_write2 => rt_write, 1;
    __tsan_unaligned_write4 => rt_write, 1;
    __tsan_unaligned_write8 => rt_write, 1;
    __tsan_unaligned_write16 => rt_write, 1;
    __tsan_volatile_write1 => rt_write, 1;
    __tsan_volatile_write2 => rt_write, 1;
    __tsan_volatile_write4 => rt_write, 1;
    __tsan_volatile_write8 => rt_write, 1;
    __tsan_volatile_write16 => rt_write, 1;
    __tsan_vptr_update => rt_write, 2;
    __tsan_read_range => rt_read_range, 2;
    __tsan_write_range => rt_write_range, 2;
    __tsan_acquire => rt_annotate_acquire, 1;
    __tsan_release => rt_annotate_release, 1;
}

extern "C" fn rt_read(addr: u64, pc: u64) {
    record(READ, addr, pc, 0);
}

extern "C" fn rt_write(addr: u64, pc: u64) {
    record(WRITE, addr, pc, 0);
}

/// Most units a range access is split into; longer ranges (bulk copies) are
/// recorded by their first units only.
const RANGE_UNITS: u64 = 64;

/// A range access (struct copies): one access per 4-byte-aligned unit, so it
/// conflicts with the field accesses it overlaps at their start addresses.
fn range(kind: u64, addr: u64, size: u64, pc: u64) {
    if size == 0 {
        return;
    }
    record(kind, addr, pc, 0);
    let mut a = (addr & !3) + 4;
    let end = addr.saturating_add(size);
    let mut n = 1;
    while a < end && n < RANGE_UNITS {
        record(kind, a, pc, 0);
        a += 4;
        n += 1;
    }
}

extern "C" fn rt_read_range(addr: u64, size: u64, pc: u64) {
    range(READ, addr, size, pc);
}

extern "C" fn rt_write_range(addr: u64, size: u64, pc: u64) {
    range(WRITE, addr, size, pc);
}

extern "C" fn rt_annotate_acquire(addr: u64, pc: u64) {
    record(SYNC_VREAD, addr, pc, 0);
}

extern "C" fn rt_annotate_release(addr: u64, pc: u64) {
    record(SYNC_VWRITE, addr, pc, 0);
}

/// Instrumentation entry point: a function was entered (not recorded).
#[unsafe(no_mangle)]
pub extern "C" fn __tsan_func_entry(_pc: *const u8) {}

/// Instrumentation entry point: a function returns (not recorded).
#[unsafe(no_mangle)]
pub extern "C" fn __tsan_func_exit() {}

/// Instrumentation entry point: called by every instrumented module's constructor.
#[unsafe(no_mangle)]
pub extern "C" fn __tsan_init() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(crate::buffer::init);
}

/// Instrumentation entry point: a read with an explicit pc.
#[unsafe(no_mangle)]
pub extern "C" fn __tsan_read_range_pc(addr: u64, size: u64, pc: u64) {
    range(READ, addr, size, pc + 1);
}

/// Instrumentation entry point: a write with an explicit pc.
#[unsafe(no_mangle)]
pub extern "C" fn __tsan_write_range_pc(addr: u64, size: u64, pc: u64) {
    range(WRITE, addr, size, pc + 1);
}

/// Instrumentation entry point: a memory fence (orders nothing cprace models).
#[unsafe(no_mangle)]
pub extern "C" fn __tsan_atomic_thread_fence(_mo: i32) {
    std::sync::atomic::fence(SeqCst);
}

/// Instrumentation entry point: a compiler fence.
#[unsafe(no_mangle)]
pub extern "C" fn __tsan_atomic_signal_fence(_mo: i32) {
    std::sync::atomic::compiler_fence(SeqCst);
}

/// Striped spin locks making an atomic operation and the numbers of its events
/// one step, so the global order agrees with what each atomic read saw.
static STRIPES: [AtomicBool; 256] = [const { AtomicBool::new(false) }; 256];

fn locked<R>(addr: u64, f: impl FnOnce() -> R) -> R {
    let s = &STRIPES[((addr >> 3) as usize ^ (addr >> 11) as usize) & 255];
    while s
        .compare_exchange_weak(false, true, Acquire, Relaxed)
        .is_err()
    {
        std::hint::spin_loop();
    }
    let r = f();
    s.store(false, Release);
    r
}

/// The atomic operations of one width: loads are volatile reads, stores
/// volatile writes, read-modify-writes both (a failed compare-exchange only
/// reads). Every operation is performed sequentially consistent.
macro_rules! atomics {
    ($t:ty, $at:ty;
     $load:ident $rload:ident, $store:ident $rstore:ident, $xchg:ident $rxchg:ident,
     $add:ident $radd:ident, $sub:ident $rsub:ident, $and:ident $rand:ident,
     $or:ident $ror:ident, $xor:ident $rxor:ident, $nand:ident $rnand:ident,
     $cas:ident $rcas:ident, $casw:ident $rcasw:ident, $casv:ident $rcasv:ident) => {
        entry! {
            $load => $rload, 2;
            $store => $rstore, 3;
            $xchg => $rxchg, 3;
            $add => $radd, 3;
            $sub => $rsub, 3;
            $and => $rand, 3;
            $or => $ror, 3;
            $xor => $rxor, 3;
            $nand => $rnand, 3;
            $cas => $rcas, 5;
            $casw => $rcasw, 5;
            $casv => $rcasv, 5;
        }
        extern "C" fn $rload(a: *mut $t, _mo: i32, pc: u64) -> $t {
            // SAFETY: the instrumented program passes a valid atomic object.
            let at = unsafe { <$at>::from_ptr(a) };
            locked(a as u64, || {
                let v = at.load(SeqCst);
                record(VREAD, a as u64, pc, 0);
                v
            })
        }
        extern "C" fn $rstore(a: *mut $t, v: $t, _mo: i32, pc: u64) {
            // SAFETY: as above.
            let at = unsafe { <$at>::from_ptr(a) };
            locked(a as u64, || {
                at.store(v, SeqCst);
                record(VWRITE, a as u64, pc, 0);
            })
        }
        atomics!(@rmw $t, $at, $rxchg, |at: &$at, v| at.swap(v, SeqCst));
        atomics!(@rmw $t, $at, $radd, |at: &$at, v| at.fetch_add(v, SeqCst));
        atomics!(@rmw $t, $at, $rsub, |at: &$at, v| at.fetch_sub(v, SeqCst));
        atomics!(@rmw $t, $at, $rand, |at: &$at, v| at.fetch_and(v, SeqCst));
        atomics!(@rmw $t, $at, $ror, |at: &$at, v| at.fetch_or(v, SeqCst));
        atomics!(@rmw $t, $at, $rxor, |at: &$at, v| at.fetch_xor(v, SeqCst));
        atomics!(@rmw $t, $at, $rnand, |at: &$at, v| at.fetch_nand(v, SeqCst));
        extern "C" fn $rcas(a: *mut $t, c: *mut $t, v: $t, _mo: i32, _fmo: i32, pc: u64) -> i32 {
            // SAFETY: as above; `c` points to the expected value.
            let (at, expected) = unsafe { (<$at>::from_ptr(a), *c) };
            match cas(at, a as u64, expected, v, pc) {
                Ok(_) => 1,
                Err(cur) => {
                    // SAFETY: as above.
                    unsafe { *c = cur };
                    0
                }
            }
        }
        extern "C" fn $rcasw(a: *mut $t, c: *mut $t, v: $t, mo: i32, fmo: i32, pc: u64) -> i32 {
            $rcas(a, c, v, mo, fmo, pc)
        }
        extern "C" fn $rcasv(a: *mut $t, c: $t, v: $t, _mo: i32, _fmo: i32, pc: u64) -> $t {
            // SAFETY: as above.
            let at = unsafe { <$at>::from_ptr(a) };
            match cas(at, a as u64, c, v, pc) {
                Ok(old) | Err(old) => old,
            }
        }
        impl Cas<$t> for $at {
            fn cas(&self, c: $t, v: $t) -> Result<$t, $t> {
                self.compare_exchange(c, v, SeqCst, SeqCst)
            }
        }
    };
    (@rmw $t:ty, $at:ty, $imp:ident, $op:expr) => {
        extern "C" fn $imp(a: *mut $t, v: $t, _mo: i32, pc: u64) -> $t {
            // SAFETY: the instrumented program passes a valid atomic object.
            let at = unsafe { <$at>::from_ptr(a) };
            locked(a as u64, || {
                let old = ($op)(at, v);
                record(VREAD, a as u64, pc, 0);
                record(VWRITE, a as u64, pc, 0);
                old
            })
        }
    };
}

trait Cas<T> {
    fn cas(&self, c: T, v: T) -> Result<T, T>;
}

fn cas<T, A: Cas<T>>(at: &A, addr: u64, c: T, v: T, pc: u64) -> Result<T, T> {
    locked(addr, || {
        let r = at.cas(c, v);
        record(VREAD, addr, pc, 0);
        if r.is_ok() {
            record(VWRITE, addr, pc, 0);
        }
        r
    })
}

atomics!(u8, AtomicU8;
    __tsan_atomic8_load rt_a8_load, __tsan_atomic8_store rt_a8_store,
    __tsan_atomic8_exchange rt_a8_xchg, __tsan_atomic8_fetch_add rt_a8_add,
    __tsan_atomic8_fetch_sub rt_a8_sub, __tsan_atomic8_fetch_and rt_a8_and,
    __tsan_atomic8_fetch_or rt_a8_or, __tsan_atomic8_fetch_xor rt_a8_xor,
    __tsan_atomic8_fetch_nand rt_a8_nand,
    __tsan_atomic8_compare_exchange_strong rt_a8_cas,
    __tsan_atomic8_compare_exchange_weak rt_a8_casw,
    __tsan_atomic8_compare_exchange_val rt_a8_casv);
atomics!(u16, AtomicU16;
    __tsan_atomic16_load rt_a16_load, __tsan_atomic16_store rt_a16_store,
    __tsan_atomic16_exchange rt_a16_xchg, __tsan_atomic16_fetch_add rt_a16_add,
    __tsan_atomic16_fetch_sub rt_a16_sub, __tsan_atomic16_fetch_and rt_a16_and,
    __tsan_atomic16_fetch_or rt_a16_or, __tsan_atomic16_fetch_xor rt_a16_xor,
    __tsan_atomic16_fetch_nand rt_a16_nand,
    __tsan_atomic16_compare_exchange_strong rt_a16_cas,
    __tsan_atomic16_compare_exchange_weak rt_a16_casw,
    __tsan_atomic16_compare_exchange_val rt_a16_casv);
atomics!(u32, AtomicU32;
    __tsan_atomic32_load rt_a32_load, __tsan_atomic32_store rt_a32_store,
    __tsan_atomic32_exchange rt_a32_xchg, __tsan_atomic32_fetch_add rt_a32_add,
    __tsan_atomic32_fetch_sub rt_a32_sub, __tsan_atomic32_fetch_and rt_a32_and,
    __tsan_atomic32_fetch_or rt_a32_or, __tsan_atomic32_fetch_xor rt_a32_xor,
    __tsan_atomic32_fetch_nand rt_a32_nand,
    __tsan_atomic32_compare_exchange_strong rt_a32_cas,
    __tsan_atomic32_compare_exchange_weak rt_a32_casw,
    __tsan_atomic32_compare_exchange_val rt_a32_casv);
atomics!(u64, AtomicU64;
    __tsan_atomic64_load rt_a64_load, __tsan_atomic64_store rt_a64_store,
    __tsan_atomic64_exchange rt_a64_xchg, __tsan_atomic64_fetch_add rt_a64_add,
    __tsan_atomic64_fetch_sub rt_a64_sub, __tsan_atomic64_fetch_and rt_a64_and,
    __tsan_atomic64_fetch_or rt_a64_or, __tsan_atomic64_fetch_xor rt_a64_xor,
    __tsan_atomic64_fetch_nand rt_a64_nand,
    __tsan_atomic64_compare_exchange_strong rt_a64_cas,
    __tsan_atomic64_compare_exchange_weak rt_a64_casw,
    __tsan_atomic64_compare_exchange_val rt_a64_casv);
