//! The `__tsan_*` entry points compiler instrumentation calls.
//!
//! Each entry point is a naked trampoline that puts its caller's return
//! address (the instrumented code's location) into the next free argument
//! register and jumps to the Rust implementation, so every event carries the
//! pc cprace symbolizes to `file:line`. Accesses carry their size; cprace
//! decides conflicts byte by byte.

use std::sync::atomic::{
    AtomicBool, AtomicU8, AtomicU16, AtomicU32, AtomicU64, Ordering, Ordering::Acquire,
    Ordering::Relaxed, Ordering::Release, Ordering::SeqCst,
};

use cprace_events::{Atomic, AtomicOp, Kind, MAX_RANGE, Order, RANGE_WRITE, SYNC_KEY};

use crate::buffer::{recording, thread};

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
    ($($name:ident => $imp:path, $n:tt;)*) => {$(
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

/// Records a plain access of `1 << log2size` bytes.
#[inline(always)]
pub fn access(write: bool, log2size: u32, addr: u64, pc: u64) {
    if let Some(t) = recording() {
        t.access(write, log2size, addr, pc);
    }
}

/// Records an access of `size` bytes from `addr` (a struct copy, a libc
/// function's buffer): one plain access when it is one of 1, 2, 4 or 8
/// bytes, else a range event.
#[inline]
pub fn range(write: bool, addr: u64, size: u64, pc: u64) {
    if size == 0 {
        return;
    }
    let Some(t) = recording() else { return };
    if size.is_power_of_two() && size <= 8 {
        t.access(write, size.trailing_zeros(), addr, pc);
    } else if (write && t.ignore_writes == 0) || (!write && t.ignore_reads == 0) {
        let flags = if write { RANGE_WRITE } else { 0 };
        // In pieces of at most MAX_RANGE bytes: cprace refuses a longer
        // range event as corrupt (its size alone would decide how many
        // accesses the trace gets).
        let (mut addr, end) = (addr, addr.saturating_add(size));
        while addr < end {
            let n = (end - addr).min(MAX_RANGE);
            t.long(Kind::Range, flags, addr, pc, 0, &[n]);
            addr += n;
        }
    }
}

/// The plain access entry points of one size: `$log` is log2 of the size.
macro_rules! accesses {
    ($log:expr, $read:ident, $write:ident; $($r:ident => $w:ident),*) => {
        extern "C" fn $read(addr: u64, pc: u64) {
            access(false, $log, addr, pc);
        }
        extern "C" fn $write(addr: u64, pc: u64) {
            access(true, $log, addr, pc);
        }
        entry! { $($r => $read, 1; $w => $write, 1;)* }
    };
}

accesses!(0, rt_read1, rt_write1;
    __tsan_read1 => __tsan_write1, __tsan_volatile_read1 => __tsan_volatile_write1);
accesses!(1, rt_read2, rt_write2;
    __tsan_read2 => __tsan_write2, __tsan_unaligned_read2 => __tsan_unaligned_write2,
    __tsan_volatile_read2 => __tsan_volatile_write2);
accesses!(2, rt_read4, rt_write4;
    __tsan_read4 => __tsan_write4, __tsan_unaligned_read4 => __tsan_unaligned_write4,
    __tsan_volatile_read4 => __tsan_volatile_write4);
accesses!(3, rt_read8, rt_write8;
    __tsan_read8 => __tsan_write8, __tsan_unaligned_read8 => __tsan_unaligned_write8,
    __tsan_volatile_read8 => __tsan_volatile_write8);

extern "C" fn rt_read16(addr: u64, pc: u64) {
    range(false, addr, 16, pc);
}

extern "C" fn rt_write16(addr: u64, pc: u64) {
    range(true, addr, 16, pc);
}

entry! {
    __tsan_read16 => rt_read16, 1;
    __tsan_write16 => rt_write16, 1;
    __tsan_unaligned_read16 => rt_read16, 1;
    __tsan_unaligned_write16 => rt_write16, 1;
    __tsan_volatile_read16 => rt_read16, 1;
    __tsan_volatile_write16 => rt_write16, 1;
    __tsan_vptr_read => rt_read8, 1;
    __tsan_vptr_update => rt_vptr_update, 2;
    __tsan_read_range => rt_read_range, 2;
    __tsan_write_range => rt_write_range, 2;
    __tsan_acquire => rt_annotate_acquire, 1;
    __tsan_release => rt_annotate_release, 1;
}

/// A vtable pointer store: a write only when the value changes (objects
/// under construction or destruction store the same pointer again and
/// again; only a change can race with a virtual call).
extern "C" fn rt_vptr_update(slot: *mut u64, new: u64, pc: u64) {
    // SAFETY: the instrumented code is about to store to `slot`.
    if unsafe { slot.read_volatile() } != new {
        access(true, 3, slot as u64, pc);
    }
}

extern "C" fn rt_read_range(addr: u64, size: u64, pc: u64) {
    range(false, addr, size, pc);
}

extern "C" fn rt_write_range(addr: u64, size: u64, pc: u64) {
    range(true, addr, size, pc);
}

/// Records an acquire of the synchronization object keyed by `key`.
pub fn sync_read(key: u64, arg: u32, pc: u64) {
    if let Some(t) = recording() {
        t.long(Kind::SyncRead, 0, key, pc, u64::from(arg), &[]);
    }
}

/// Records a release of the synchronization object keyed by `key`.
pub fn sync_write(key: u64, arg: u32, pc: u64) {
    if let Some(t) = recording() {
        t.long(Kind::SyncWrite, 0, key, pc, u64::from(arg), &[]);
    }
}

extern "C" fn rt_annotate_acquire(addr: u64, pc: u64) {
    sync_read(addr, SYNC_KEY, pc);
}

extern "C" fn rt_annotate_release(addr: u64, pc: u64) {
    sync_write(addr, SYNC_KEY, pc);
}

/// The `__tsan_readN_pc`/`__tsan_writeN_pc` entry points (explicit pc:
/// made a return address, as the others are, by adding 1).
macro_rules! with_pc {
    ($($name:ident, $write:expr, $log:expr;)*) => {$(
        #[doc = concat!("Instrumentation entry point `", stringify!($name), "`.")]
        #[unsafe(no_mangle)]
        pub extern "C" fn $name(addr: u64, pc: u64) {
            access($write, $log, addr, pc + 1);
        }
    )*};
}

with_pc! {
    __tsan_read1_pc, false, 0;
    __tsan_read2_pc, false, 1;
    __tsan_read4_pc, false, 2;
    __tsan_read8_pc, false, 3;
    __tsan_write1_pc, true, 0;
    __tsan_write2_pc, true, 1;
    __tsan_write4_pc, true, 2;
    __tsan_write8_pc, true, 3;
}

/// Instrumentation entry point: a 16-byte read with an explicit pc.
#[unsafe(no_mangle)]
pub extern "C" fn __tsan_read16_pc(addr: u64, pc: u64) {
    range(false, addr, 16, pc + 1);
}

/// Instrumentation entry point: a 16-byte write with an explicit pc.
#[unsafe(no_mangle)]
pub extern "C" fn __tsan_write16_pc(addr: u64, pc: u64) {
    range(true, addr, 16, pc + 1);
}

/// Instrumentation entry point: a read of a range with an explicit pc.
#[unsafe(no_mangle)]
pub extern "C" fn __tsan_read_range_pc(addr: u64, size: u64, pc: u64) {
    range(false, addr, size, pc + 1);
}

/// Instrumentation entry point: a write of a range with an explicit pc.
#[unsafe(no_mangle)]
pub extern "C" fn __tsan_write_range_pc(addr: u64, size: u64, pc: u64) {
    range(true, addr, size, pc + 1);
}

/// Instrumentation entry point: a function was entered from `pc` (its
/// return address in the caller).
#[unsafe(no_mangle)]
pub extern "C" fn __tsan_func_entry(pc: *const u8) {
    if let Some(t) = thread() {
        t.enter(pc as u64);
    }
}

/// Instrumentation entry point: a function returns.
#[unsafe(no_mangle)]
pub extern "C" fn __tsan_func_exit() {
    if let Some(t) = thread() {
        t.exit();
    }
}

/// Instrumentation entry point: called by every instrumented module's constructor.
#[unsafe(no_mangle)]
pub extern "C" fn __tsan_init() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(crate::buffer::init);
}

/// Instrumentation entry point: a memory fence of order `mo`. A release
/// fence makes the thread's later relaxed stores release it, an acquire
/// fence its earlier relaxed loads acquire; cprace lowers it so.
///
/// # Safety
/// Called only by instrumented code, with the order in `rdi`.
#[unsafe(naked)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __tsan_atomic_thread_fence() {
    core::arch::naked_asm!("mov rsi, [rsp]", "jmp {f}", f = sym rt_fence)
}

extern "C" fn rt_fence(mo: i32, pc: u64) {
    std::sync::atomic::fence(SeqCst);
    let order = Order::from_c(mo);
    if order != Order::Relaxed
        && let Some(t) = recording()
    {
        let flags = Atomic {
            op: AtomicOp::Fence,
            order,
            log2size: 0,
        }
        .flags();
        t.long(Kind::Atomic, flags, 0, pc, 0, &[]);
    }
}

/// Instrumentation entry point: a compiler fence (orders nothing between threads).
#[unsafe(no_mangle)]
pub extern "C" fn __tsan_atomic_signal_fence(_mo: i32) {
    std::sync::atomic::compiler_fence(SeqCst);
}

/// Striped spin locks making an atomic operation and the number of its
/// event one step, so the global order agrees with what each atomic read saw.
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

/// Records an atomic operation (inside its stripe's lock).
#[inline]
fn atomic_event(addr: u64, op: AtomicOp, mo: i32, log2size: u8, pc: u64) {
    if let Some(t) = recording() {
        let flags = Atomic {
            op,
            order: Order::from_c(mo),
            log2size,
        }
        .flags();
        t.long(Kind::Atomic, flags, addr, pc, 0, &[]);
    }
}

/// The Rust ordering an operation of C order `mo` is performed with:
/// the program's own, so its behaviour is what it was compiled for.
fn rust_order(mo: i32) -> Ordering {
    match Order::from_c(mo) {
        Order::Relaxed => Relaxed,
        Order::Consume | Order::Acquire => Acquire,
        Order::Release => Release,
        Order::AcqRel => Ordering::AcqRel,
        Order::SeqCst => SeqCst,
    }
}

fn load_order(mo: i32) -> Ordering {
    match rust_order(mo) {
        Release => Relaxed,
        Ordering::AcqRel => Acquire,
        o => o,
    }
}

fn store_order(mo: i32) -> Ordering {
    match rust_order(mo) {
        Acquire => Relaxed,
        Ordering::AcqRel => Release,
        o => o,
    }
}

/// The atomic operations of one width: `$log` is log2 of the size.
macro_rules! atomics {
    ($t:ty, $at:ty, $log:expr;
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
        extern "C" fn $rload(a: *mut $t, mo: i32, pc: u64) -> $t {
            // SAFETY: the instrumented program passes a valid atomic object.
            let at = unsafe { <$at>::from_ptr(a) };
            locked(a as u64, || {
                let v = at.load(load_order(mo));
                atomic_event(a as u64, AtomicOp::Load, mo, $log, pc);
                v
            })
        }
        extern "C" fn $rstore(a: *mut $t, v: $t, mo: i32, pc: u64) {
            // SAFETY: as above.
            let at = unsafe { <$at>::from_ptr(a) };
            locked(a as u64, || {
                at.store(v, store_order(mo));
                atomic_event(a as u64, AtomicOp::Store, mo, $log, pc);
            })
        }
        atomics!(@rmw $t, $at, $log, $rxchg, |at: &$at, v, o| at.swap(v, o));
        atomics!(@rmw $t, $at, $log, $radd, |at: &$at, v, o| at.fetch_add(v, o));
        atomics!(@rmw $t, $at, $log, $rsub, |at: &$at, v, o| at.fetch_sub(v, o));
        atomics!(@rmw $t, $at, $log, $rand, |at: &$at, v, o| at.fetch_and(v, o));
        atomics!(@rmw $t, $at, $log, $ror, |at: &$at, v, o| at.fetch_or(v, o));
        atomics!(@rmw $t, $at, $log, $rxor, |at: &$at, v, o| at.fetch_xor(v, o));
        atomics!(@rmw $t, $at, $log, $rnand, |at: &$at, v, o| at.fetch_nand(v, o));
        extern "C" fn $rcas(a: *mut $t, c: *mut $t, v: $t, mo: i32, fmo: i32, pc: u64) -> i32 {
            // SAFETY: as above; `c` points to the expected value.
            let (at, expected) = unsafe { (<$at>::from_ptr(a), *c) };
            match cas(at, a as u64, expected, v, mo, fmo, $log, pc) {
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
        extern "C" fn $rcasv(a: *mut $t, c: $t, v: $t, mo: i32, fmo: i32, pc: u64) -> $t {
            // SAFETY: as above.
            let at = unsafe { <$at>::from_ptr(a) };
            match cas(at, a as u64, c, v, mo, fmo, $log, pc) {
                Ok(old) | Err(old) => old,
            }
        }
        impl Cas<$t> for $at {
            fn cas(&self, c: $t, v: $t) -> Result<$t, $t> {
                self.compare_exchange(c, v, SeqCst, SeqCst)
            }
        }
    };
    (@rmw $t:ty, $at:ty, $log:expr, $imp:ident, $op:expr) => {
        extern "C" fn $imp(a: *mut $t, v: $t, mo: i32, pc: u64) -> $t {
            // SAFETY: the instrumented program passes a valid atomic object.
            let at = unsafe { <$at>::from_ptr(a) };
            locked(a as u64, || {
                let old = ($op)(at, v, rust_order(mo));
                atomic_event(a as u64, AtomicOp::Rmw, mo, $log, pc);
                old
            })
        }
    };
}

trait Cas<T> {
    fn cas(&self, c: T, v: T) -> Result<T, T>;
}

#[allow(clippy::too_many_arguments)]
fn cas<T, A: Cas<T>>(
    at: &A,
    addr: u64,
    c: T,
    v: T,
    mo: i32,
    fmo: i32,
    log2size: u8,
    pc: u64,
) -> Result<T, T> {
    locked(addr, || {
        let r = at.cas(c, v);
        match r {
            Ok(_) => atomic_event(addr, AtomicOp::Rmw, mo, log2size, pc),
            Err(_) => atomic_event(addr, AtomicOp::FailedCas, fmo, log2size, pc),
        }
        r
    })
}

atomics!(u8, AtomicU8, 0;
    __tsan_atomic8_load rt_a8_load, __tsan_atomic8_store rt_a8_store,
    __tsan_atomic8_exchange rt_a8_xchg, __tsan_atomic8_fetch_add rt_a8_add,
    __tsan_atomic8_fetch_sub rt_a8_sub, __tsan_atomic8_fetch_and rt_a8_and,
    __tsan_atomic8_fetch_or rt_a8_or, __tsan_atomic8_fetch_xor rt_a8_xor,
    __tsan_atomic8_fetch_nand rt_a8_nand,
    __tsan_atomic8_compare_exchange_strong rt_a8_cas,
    __tsan_atomic8_compare_exchange_weak rt_a8_casw,
    __tsan_atomic8_compare_exchange_val rt_a8_casv);
atomics!(u16, AtomicU16, 1;
    __tsan_atomic16_load rt_a16_load, __tsan_atomic16_store rt_a16_store,
    __tsan_atomic16_exchange rt_a16_xchg, __tsan_atomic16_fetch_add rt_a16_add,
    __tsan_atomic16_fetch_sub rt_a16_sub, __tsan_atomic16_fetch_and rt_a16_and,
    __tsan_atomic16_fetch_or rt_a16_or, __tsan_atomic16_fetch_xor rt_a16_xor,
    __tsan_atomic16_fetch_nand rt_a16_nand,
    __tsan_atomic16_compare_exchange_strong rt_a16_cas,
    __tsan_atomic16_compare_exchange_weak rt_a16_casw,
    __tsan_atomic16_compare_exchange_val rt_a16_casv);
atomics!(u32, AtomicU32, 2;
    __tsan_atomic32_load rt_a32_load, __tsan_atomic32_store rt_a32_store,
    __tsan_atomic32_exchange rt_a32_xchg, __tsan_atomic32_fetch_add rt_a32_add,
    __tsan_atomic32_fetch_sub rt_a32_sub, __tsan_atomic32_fetch_and rt_a32_and,
    __tsan_atomic32_fetch_or rt_a32_or, __tsan_atomic32_fetch_xor rt_a32_xor,
    __tsan_atomic32_fetch_nand rt_a32_nand,
    __tsan_atomic32_compare_exchange_strong rt_a32_cas,
    __tsan_atomic32_compare_exchange_weak rt_a32_casw,
    __tsan_atomic32_compare_exchange_val rt_a32_casv);
atomics!(u64, AtomicU64, 3;
    __tsan_atomic64_load rt_a64_load, __tsan_atomic64_store rt_a64_store,
    __tsan_atomic64_exchange rt_a64_xchg, __tsan_atomic64_fetch_add rt_a64_add,
    __tsan_atomic64_fetch_sub rt_a64_sub, __tsan_atomic64_fetch_and rt_a64_and,
    __tsan_atomic64_fetch_or rt_a64_or, __tsan_atomic64_fetch_xor rt_a64_xor,
    __tsan_atomic64_fetch_nand rt_a64_nand,
    __tsan_atomic64_compare_exchange_strong rt_a64_cas,
    __tsan_atomic64_compare_exchange_weak rt_a64_casw,
    __tsan_atomic64_compare_exchange_val rt_a64_casv);

/// 128-bit atomics: the instrumentation routes every one through these, so
/// one lock makes them atomic with respect to each other.
mod wide {
    use super::*;

    static LOCK: AtomicBool = AtomicBool::new(false);

    fn with<R>(f: impl FnOnce() -> R) -> R {
        while LOCK
            .compare_exchange_weak(false, true, Acquire, Relaxed)
            .is_err()
        {
            std::hint::spin_loop();
        }
        let r = f();
        LOCK.store(false, Release);
        r
    }

    fn rmw(a: *mut u128, mo: i32, pc: u64, f: impl FnOnce(u128) -> u128) -> u128 {
        with(|| {
            // SAFETY: the instrumented program passes a valid 16-byte object,
            // which every 128-bit atomic operation accesses under `LOCK`.
            let old = unsafe { a.read_volatile() };
            // SAFETY: as above.
            unsafe { a.write_volatile(f(old)) };
            atomic_event(a as u64, AtomicOp::Rmw, mo, 4, pc);
            old
        })
    }

    extern "C" fn load(a: *mut u128, mo: i32, pc: u64) -> u128 {
        with(|| {
            // SAFETY: as in `rmw`.
            let v = unsafe { a.read_volatile() };
            atomic_event(a as u64, AtomicOp::Load, mo, 4, pc);
            v
        })
    }
    extern "C" fn store(a: *mut u128, v: u128, mo: i32, pc: u64) {
        with(|| {
            // SAFETY: as in `rmw`.
            unsafe { a.write_volatile(v) };
            atomic_event(a as u64, AtomicOp::Store, mo, 4, pc);
        })
    }
    extern "C" fn xchg(a: *mut u128, v: u128, mo: i32, pc: u64) -> u128 {
        rmw(a, mo, pc, |_| v)
    }
    extern "C" fn add(a: *mut u128, v: u128, mo: i32, pc: u64) -> u128 {
        rmw(a, mo, pc, |o| o.wrapping_add(v))
    }
    extern "C" fn sub(a: *mut u128, v: u128, mo: i32, pc: u64) -> u128 {
        rmw(a, mo, pc, |o| o.wrapping_sub(v))
    }
    extern "C" fn and(a: *mut u128, v: u128, mo: i32, pc: u64) -> u128 {
        rmw(a, mo, pc, |o| o & v)
    }
    extern "C" fn or(a: *mut u128, v: u128, mo: i32, pc: u64) -> u128 {
        rmw(a, mo, pc, |o| o | v)
    }
    extern "C" fn xor(a: *mut u128, v: u128, mo: i32, pc: u64) -> u128 {
        rmw(a, mo, pc, |o| o ^ v)
    }
    extern "C" fn nand(a: *mut u128, v: u128, mo: i32, pc: u64) -> u128 {
        rmw(a, mo, pc, |o| !(o & v))
    }
    fn cas(a: *mut u128, c: u128, v: u128, mo: i32, fmo: i32, pc: u64) -> Result<u128, u128> {
        with(|| {
            // SAFETY: as in `rmw`.
            let old = unsafe { a.read_volatile() };
            if old == c {
                // SAFETY: as in `rmw`.
                unsafe { a.write_volatile(v) };
                atomic_event(a as u64, AtomicOp::Rmw, mo, 4, pc);
                Ok(old)
            } else {
                atomic_event(a as u64, AtomicOp::FailedCas, fmo, 4, pc);
                Err(old)
            }
        })
    }
    extern "C" fn cas_strong(
        a: *mut u128,
        c: *mut u128,
        v: u128,
        mo: i32,
        fmo: i32,
        pc: u64,
    ) -> i32 {
        // SAFETY: `c` points to the expected value.
        match cas(a, unsafe { *c }, v, mo, fmo, pc) {
            Ok(_) => 1,
            Err(cur) => {
                // SAFETY: as above.
                unsafe { *c = cur };
                0
            }
        }
    }
    extern "C" fn cas_val(a: *mut u128, c: u128, v: u128, mo: i32, fmo: i32, pc: u64) -> u128 {
        match cas(a, c, v, mo, fmo, pc) {
            Ok(o) | Err(o) => o,
        }
    }

    // A u128 argument takes two registers: the pc goes after them.
    entry! {
        __tsan_atomic128_load => load, 2;
        __tsan_atomic128_store => store, 4;
        __tsan_atomic128_exchange => xchg, 4;
        __tsan_atomic128_fetch_add => add, 4;
        __tsan_atomic128_fetch_sub => sub, 4;
        __tsan_atomic128_fetch_and => and, 4;
        __tsan_atomic128_fetch_or => or, 4;
        __tsan_atomic128_fetch_xor => xor, 4;
        __tsan_atomic128_fetch_nand => nand, 4;
    }

    /// `__tsan_atomic128_compare_exchange_{strong,weak}`: six register
    /// arguments (a, c, v in two, mo, fmo) leave none for the pc, which the
    /// trampoline passes as the first stack argument.
    macro_rules! cas_with_stack_pc {
        ($($name:ident),*) => {$(
            #[doc = concat!("Entry point `", stringify!($name), "` (called from C).")]
            ///
            /// # Safety
            /// Called by compiled C code with the C function's arguments.
            #[unsafe(naked)]
            #[unsafe(no_mangle)]
            pub unsafe extern "C" fn $name() {
                core::arch::naked_asm!(
                    "mov rax, [rsp]",
                    // Keeps the stack 16-byte aligned at the call.
                    "sub rsp, 24",
                    "mov [rsp], rax",
                    "call {f}",
                    "add rsp, 24",
                    "ret",
                    f = sym cas_strong,
                )
            }
        )*};
    }
    cas_with_stack_pc!(
        __tsan_atomic128_compare_exchange_strong,
        __tsan_atomic128_compare_exchange_weak
    );

    /// Instrumentation entry point (the expected and new values take two
    /// registers each, so the pc goes on the stack: read it from there).
    ///
    /// # Safety
    /// Called by compiled C code with the C function's arguments.
    #[unsafe(naked)]
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn __tsan_atomic128_compare_exchange_val() {
        // Arguments: a (rdi), c (rsi:rdx), v (rcx:r8), mo (r9), fmo (stack
        // at [rsp+8]). The implementation wants fmo in a register-passed
        // slot and the pc after it: rebuild the call with a frame.
        core::arch::naked_asm!(
            "mov rax, [rsp]",
            "mov r10, [rsp+8]",
            "sub rsp, 24",
            "mov [rsp], r10",
            "mov [rsp+8], rax",
            "call {f}",
            "add rsp, 24",
            "ret",
            f = sym cas_val_stack,
        )
    }

    extern "C" fn cas_val_stack(
        a: *mut u128,
        c: u128,
        v: u128,
        mo: i32,
        fmo: i32,
        pc: u64,
    ) -> u128 {
        cas_val(a, c, v, mo, fmo, pc)
    }
}

/// The unaligned load/store helpers of `<sanitizer/common_interface_defs.h>`.
mod unaligned {
    use super::*;

    macro_rules! loads {
        ($($name:ident, $imp:ident, $t:ty, $log:expr;)*) => {$(
            extern "C" fn $imp(p: *const $t, pc: u64) -> $t {
                access(false, $log, p as u64, pc);
                // SAFETY: the program passes a readable (maybe unaligned) pointer.
                unsafe { p.read_unaligned() }
            }
            entry! { $name => $imp, 1; }
        )*};
    }
    macro_rules! stores {
        ($($name:ident, $imp:ident, $t:ty, $log:expr;)*) => {$(
            extern "C" fn $imp(p: *mut $t, v: $t, pc: u64) {
                access(true, $log, p as u64, pc);
                // SAFETY: the program passes a writable (maybe unaligned) pointer.
                unsafe { p.write_unaligned(v) }
            }
            entry! { $name => $imp, 2; }
        )*};
    }
    loads! {
        __sanitizer_unaligned_load16, load16, u16, 1;
        __sanitizer_unaligned_load32, load32, u32, 2;
        __sanitizer_unaligned_load64, load64, u64, 3;
    }
    stores! {
        __sanitizer_unaligned_store16, store16, u16, 1;
        __sanitizer_unaligned_store32, store32, u32, 2;
        __sanitizer_unaligned_store64, store64, u64, 3;
    }
}
