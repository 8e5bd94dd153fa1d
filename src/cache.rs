//! A cache hint, for the loops that know which memory an event will touch
//! a few events before they handle it (the detectors' access histories,
//! the recorder's shadow of variable ids).

/// Starts loading the cache line at `p` into the cache. A hint only: it
/// never faults, whatever `p` is, and does nothing off x86_64.
#[inline(always)]
pub(crate) fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing and never faults, even for an
    // address that is not mapped.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
