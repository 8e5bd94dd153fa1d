//! Interposed libc functions that read or write memory ranges (memcpy,
//! memset, strlen, strcpy, ...): each records the bytes it reads and writes
//! (as ThreadSanitizer's interceptors do), then does its work with the real
//! function. Before the real one is known (a call from inside `dlsym` while
//! it is looked up) a plain implementation stands in.

use libc::{c_char, c_int, c_void, size_t};

use crate::tsan::{entry, pcreg, range};

type P = *mut c_void;
type C = *const c_void;
type S = *const c_char;

/// True when `pc` is inside this library: the runtime's own calls are not
/// the program's accesses.
#[inline(always)]
fn own(pc: u64) -> bool {
    crate::own::contains(pc)
}

fn read(p: *const c_void, n: usize, pc: u64) {
    if !own(pc) {
        range(false, p as u64, n as u64, pc);
    }
}

fn write(p: *const c_void, n: usize, pc: u64) {
    if !own(pc) {
        range(true, p as u64, n as u64, pc);
    }
}

/// Copies `n` bytes (non-overlapping), without calling any libc function.
///
/// # Safety
/// `d` and `s` must be valid for `n` bytes and not overlap.
pub unsafe fn copy(d: *mut u8, s: *const u8, n: usize) {
    // SAFETY: the caller's guarantees; `rep movsb` copies forward.
    unsafe {
        core::arch::asm!(
            "rep movsb",
            inout("rcx") n => _,
            inout("rdi") d => _,
            inout("rsi") s => _,
            options(nostack, preserves_flags),
        );
    }
}

/// Copies `n` bytes that may overlap.
///
/// # Safety
/// `d` and `s` must be valid for `n` bytes.
unsafe fn move_bytes(d: *mut u8, s: *const u8, n: usize) {
    if n == 0 {
        return;
    }
    if (d as usize).wrapping_sub(s as usize) >= n {
        // SAFETY: copying forward never overwrites a byte not yet read.
        unsafe { copy(d, s, n) };
    } else {
        // SAFETY: copying backward never overwrites a byte not yet read;
        // the direction flag is restored before the block ends.
        unsafe {
            core::arch::asm!(
                "std",
                "rep movsb",
                "cld",
                inout("rcx") n => _,
                inout("rdi") d.add(n - 1) => _,
                inout("rsi") s.add(n - 1) => _,
                options(nostack),
            );
        }
    }
}

/// Fills `n` bytes with `c`.
///
/// # Safety
/// `d` must be valid for `n` bytes.
unsafe fn fill(d: *mut u8, c: u8, n: usize) {
    // SAFETY: the caller's guarantee.
    unsafe {
        core::arch::asm!(
            "rep stosb",
            inout("rcx") n => _,
            inout("rdi") d => _,
            in("al") c,
            options(nostack, preserves_flags),
        );
    }
}

/// Length of a C string (volatile reads: the compiler must not turn the
/// loop back into a call to strlen).
///
/// # Safety
/// `s` must be a NUL-terminated string.
unsafe fn length(s: S) -> usize {
    let mut n = 0;
    // SAFETY: the caller's guarantee: every byte up to the NUL is readable.
    while unsafe { (s.add(n) as *const u8).read_volatile() } != 0 {
        n += 1;
    }
    n
}

/// Compares up to `n` bytes; `nul` stops at a NUL byte as the str functions do.
///
/// # Safety
/// Both must be readable as far as the comparison goes.
unsafe fn compare(a: *const u8, b: *const u8, n: usize, nul: bool) -> c_int {
    for i in 0..n {
        // SAFETY: the caller's guarantee.
        let (x, y) = unsafe { (a.add(i).read_volatile(), b.add(i).read_volatile()) };
        if x != y {
            return c_int::from(x) - c_int::from(y);
        }
        if nul && x == 0 {
            return 0;
        }
    }
    0
}

entry! {
    memcpy => rt_memcpy, 3;
    memmove => rt_memmove, 3;
    memset => rt_memset, 3;
    bzero => rt_bzero, 2;
    explicit_bzero => rt_bzero, 2;
    memcmp => rt_memcmp, 3;
    bcmp => rt_memcmp, 3;
    memchr => rt_memchr, 3;
    memrchr => rt_memrchr, 3;
    strlen => rt_strlen, 1;
    strnlen => rt_strnlen, 2;
    strcpy => rt_strcpy, 2;
    stpcpy => rt_stpcpy, 2;
    strncpy => rt_strncpy, 3;
    strcat => rt_strcat, 2;
    strncat => rt_strncat, 3;
    strcmp => rt_strcmp, 2;
    strncmp => rt_strncmp, 3;
    strchr => rt_strchr, 2;
    strchrnul => rt_strchrnul, 2;
    strrchr => rt_strrchr, 2;
    strstr => rt_strstr, 2;
    strdup => rt_strdup, 1;
    strndup => rt_strndup, 2;
}

extern "C" fn rt_memcpy(d: P, s: C, n: size_t, pc: u64) -> P {
    read(s, n, pc);
    write(d, n, pc);
    match reals::memcpy() {
        Some(f) => f(d, s, n),
        None => {
            // SAFETY: memcpy's contract.
            unsafe { copy(d as *mut u8, s as *const u8, n) };
            d
        }
    }
}

extern "C" fn rt_memmove(d: P, s: C, n: size_t, pc: u64) -> P {
    read(s, n, pc);
    write(d, n, pc);
    match reals::memmove() {
        Some(f) => f(d, s, n),
        None => {
            // SAFETY: memmove's contract.
            unsafe { move_bytes(d as *mut u8, s as *const u8, n) };
            d
        }
    }
}

extern "C" fn rt_memset(d: P, c: c_int, n: size_t, pc: u64) -> P {
    write(d, n, pc);
    match reals::memset() {
        Some(f) => f(d, c, n),
        None => {
            // SAFETY: memset's contract.
            unsafe { fill(d as *mut u8, c as u8, n) };
            d
        }
    }
}

extern "C" fn rt_bzero(d: P, n: size_t, pc: u64) {
    write(d, n, pc);
    // SAFETY: bzero's contract.
    unsafe { fill(d as *mut u8, 0, n) };
}

extern "C" fn rt_memcmp(a: C, b: C, n: size_t, pc: u64) -> c_int {
    read(a, n, pc);
    read(b, n, pc);
    match reals::memcmp() {
        Some(f) => f(a, b, n),
        // SAFETY: memcmp's contract.
        None => unsafe { compare(a as *const u8, b as *const u8, n, false) },
    }
}

extern "C" fn rt_memchr(s: C, c: c_int, n: size_t, pc: u64) -> P {
    let f = reals::memchr().unwrap_or_else(|| crate::real::unresolvable());
    let r = f(s, c, n);
    let seen = if r.is_null() {
        n
    } else {
        r as usize - s as usize + 1
    };
    read(s, seen, pc);
    r
}

extern "C" fn rt_memrchr(s: C, c: c_int, n: size_t, pc: u64) -> P {
    let f = reals::memrchr().unwrap_or_else(|| crate::real::unresolvable());
    read(s, n, pc);
    f(s, c, n)
}

extern "C" fn rt_strlen(s: S, pc: u64) -> size_t {
    let n = match reals::strlen() {
        Some(f) => f(s),
        // SAFETY: strlen's contract.
        None => unsafe { length(s) },
    };
    read(s as C, n + 1, pc);
    n
}

extern "C" fn rt_strnlen(s: S, max: size_t, pc: u64) -> size_t {
    let f = reals::strnlen().unwrap_or_else(|| crate::real::unresolvable());
    let n = f(s, max);
    read(s as C, (n + 1).min(max), pc);
    n
}

extern "C" fn rt_strcpy(d: *mut c_char, s: S, pc: u64) -> *mut c_char {
    // SAFETY: strcpy's contract: `s` is a string.
    let n = unsafe { length(s) } + 1;
    read(s as C, n, pc);
    write(d as C, n, pc);
    let f = reals::strcpy().unwrap_or_else(|| crate::real::unresolvable());
    f(d, s)
}

extern "C" fn rt_stpcpy(d: *mut c_char, s: S, pc: u64) -> *mut c_char {
    // SAFETY: stpcpy's contract: `s` is a string.
    let n = unsafe { length(s) } + 1;
    read(s as C, n, pc);
    write(d as C, n, pc);
    let f = reals::stpcpy().unwrap_or_else(|| crate::real::unresolvable());
    f(d, s)
}

extern "C" fn rt_strncpy(d: *mut c_char, s: S, n: size_t, pc: u64) -> *mut c_char {
    let f = reals::strnlen().unwrap_or_else(|| crate::real::unresolvable());
    let len = f(s, n);
    read(s as C, (len + 1).min(n), pc);
    write(d as C, n, pc);
    let g = reals::strncpy().unwrap_or_else(|| crate::real::unresolvable());
    g(d, s, n)
}

extern "C" fn rt_strcat(d: *mut c_char, s: S, pc: u64) -> *mut c_char {
    // SAFETY: strcat's contract: both are strings.
    let (ld, ls) = unsafe { (length(d), length(s)) };
    read(d as C, ld + 1, pc);
    read(s as C, ls + 1, pc);
    write(d.wrapping_add(ld) as C, ls + 1, pc);
    let f = reals::strcat().unwrap_or_else(|| crate::real::unresolvable());
    f(d, s)
}

extern "C" fn rt_strncat(d: *mut c_char, s: S, n: size_t, pc: u64) -> *mut c_char {
    // SAFETY: strncat's contract: `d` is a string.
    let ld = unsafe { length(d) };
    let f = reals::strnlen().unwrap_or_else(|| crate::real::unresolvable());
    let ls = f(s, n);
    read(d as C, ld + 1, pc);
    read(s as C, (ls + 1).min(n), pc);
    write(d.wrapping_add(ld) as C, ls + 1, pc);
    let g = reals::strncat().unwrap_or_else(|| crate::real::unresolvable());
    g(d, s, n)
}

/// Bytes two strings' comparison reads: up to the first difference or NUL.
///
/// # Safety
/// Both strings are readable that far (the comparison's contract).
unsafe fn compared(a: S, b: S, n: usize) -> usize {
    let mut i = 0;
    while i < n {
        // SAFETY: the caller's guarantee.
        let (x, y) = unsafe {
            (
                (a.add(i) as *const u8).read_volatile(),
                (b.add(i) as *const u8).read_volatile(),
            )
        };
        i += 1;
        if x != y || x == 0 {
            break;
        }
    }
    i
}

extern "C" fn rt_strcmp(a: S, b: S, pc: u64) -> c_int {
    // SAFETY: strcmp's contract.
    let seen = unsafe { compared(a, b, usize::MAX) };
    read(a as C, seen, pc);
    read(b as C, seen, pc);
    match reals::strcmp() {
        Some(f) => f(a, b),
        // SAFETY: as above.
        None => unsafe { compare(a as *const u8, b as *const u8, usize::MAX, true) },
    }
}

extern "C" fn rt_strncmp(a: S, b: S, n: size_t, pc: u64) -> c_int {
    // SAFETY: strncmp's contract.
    let seen = unsafe { compared(a, b, n) };
    read(a as C, seen, pc);
    read(b as C, seen, pc);
    match reals::strncmp() {
        Some(f) => f(a, b, n),
        // SAFETY: as above.
        None => unsafe { compare(a as *const u8, b as *const u8, n, true) },
    }
}

extern "C" fn rt_strchr(s: S, c: c_int, pc: u64) -> *mut c_char {
    let f = reals::strchr().unwrap_or_else(|| crate::real::unresolvable());
    let r = f(s, c);
    let seen = if r.is_null() {
        // SAFETY: strchr's contract: `s` is a string.
        (unsafe { length(s) }) + 1
    } else {
        r as usize - s as usize + 1
    };
    read(s as C, seen, pc);
    r
}

extern "C" fn rt_strchrnul(s: S, c: c_int, pc: u64) -> *mut c_char {
    let f = reals::strchrnul().unwrap_or_else(|| crate::real::unresolvable());
    let r = f(s, c);
    read(s as C, r as usize - s as usize + 1, pc);
    r
}

extern "C" fn rt_strrchr(s: S, c: c_int, pc: u64) -> *mut c_char {
    // SAFETY: strrchr's contract: `s` is a string.
    read(s as C, unsafe { length(s) } + 1, pc);
    let f = reals::strrchr().unwrap_or_else(|| crate::real::unresolvable());
    f(s, c)
}

extern "C" fn rt_strstr(h: S, n: S, pc: u64) -> *mut c_char {
    let f = reals::strstr().unwrap_or_else(|| crate::real::unresolvable());
    let r = f(h, n);
    // SAFETY: strstr's contract: both are strings.
    let (lh, ln) = unsafe { (length(h), length(n)) };
    let seen = if r.is_null() {
        lh + 1
    } else {
        r as usize - h as usize + ln
    };
    read(h as C, seen, pc);
    read(n as C, ln + 1, pc);
    r
}

extern "C" fn rt_strdup(s: S, pc: u64) -> *mut c_char {
    // SAFETY: strdup's contract: `s` is a string.
    let n = unsafe { length(s) } + 1;
    read(s as C, n, pc);
    let p = crate::heap::malloc_at(n, pc) as *mut c_char;
    if !p.is_null() {
        write(p as C, n, pc);
        // SAFETY: a new block of n bytes and a string of n bytes.
        unsafe { copy(p as *mut u8, s as *const u8, n) };
    }
    p
}

extern "C" fn rt_strndup(s: S, max: size_t, pc: u64) -> *mut c_char {
    let f = reals::strnlen().unwrap_or_else(|| crate::real::unresolvable());
    let n = f(s, max);
    read(s as C, (n + 1).min(max), pc);
    let p = crate::heap::malloc_at(n + 1, pc) as *mut c_char;
    if !p.is_null() {
        write(p as C, n + 1, pc);
        // SAFETY: a new block of n + 1 bytes; `s` has n readable bytes.
        unsafe {
            copy(p as *mut u8, s as *const u8, n);
            *p.add(n) = 0;
        }
    }
    p
}

/// The real functions, each looked up once (see [`crate::real`]).
mod reals {
    use super::*;

    macro_rules! reals {
        ($($name:ident: $ty:ty;)*) => {$(
            #[inline(always)]
            pub(super) fn $name() -> Option<$ty> {
                crate::real!(? $name: $ty)
            }
        )*};
    }

    reals! {
    memchr: extern "C" fn(C, c_int, size_t) -> P;
    memcmp: extern "C" fn(C, C, size_t) -> c_int;
    memcpy: extern "C" fn(P, C, size_t) -> P;
    memmove: extern "C" fn(P, C, size_t) -> P;
    memrchr: extern "C" fn(C, c_int, size_t) -> P;
    memset: extern "C" fn(P, c_int, size_t) -> P;
    stpcpy: extern "C" fn(*mut c_char, S) -> *mut c_char;
    strcat: extern "C" fn(*mut c_char, S) -> *mut c_char;
    strchr: extern "C" fn(S, c_int) -> *mut c_char;
    strchrnul: extern "C" fn(S, c_int) -> *mut c_char;
    strcmp: extern "C" fn(S, S) -> c_int;
    strcpy: extern "C" fn(*mut c_char, S) -> *mut c_char;
    strlen: extern "C" fn(S) -> size_t;
    strncat: extern "C" fn(*mut c_char, S, size_t) -> *mut c_char;
    strncmp: extern "C" fn(S, S, size_t) -> c_int;
    strncpy: extern "C" fn(*mut c_char, S, size_t) -> *mut c_char;
    strnlen: extern "C" fn(S, size_t) -> size_t;
    strrchr: extern "C" fn(S, c_int) -> *mut c_char;
    strstr: extern "C" fn(S, S) -> *mut c_char;
    }
}

/// Looks up the real functions the fallbacks stand in for, so that later
/// calls never reach `dlsym`.
pub fn resolve_all() {
    let _ = (
        reals::memcpy(),
        reals::memmove(),
        reals::memset(),
        reals::memcmp(),
        reals::strlen(),
        reals::strcmp(),
        reals::strncmp(),
    );
}
