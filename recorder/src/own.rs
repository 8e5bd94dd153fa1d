//! This library's own address range: calls from the runtime itself into
//! interposed functions are not the program's.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

static LO: AtomicU64 = AtomicU64::new(0);
static HI: AtomicU64 = AtomicU64::new(0);

/// True when `pc` lies in this library's loaded segments.
#[inline(always)]
pub fn contains(pc: u64) -> bool {
    pc >= LO.load(Relaxed) && pc < HI.load(Relaxed)
}

/// Finds this library's segments (from `__tsan_init`, before recording).
pub fn init() {
    let mut info: libc::Dl_info = unsafe_zeroed();
    // SAFETY: dladdr fills `info` for an address of this library.
    if unsafe { libc::dladdr(init as *const libc::c_void, &mut info) } == 0 {
        return;
    }
    let base = info.dli_fbase as u64;
    unsafe extern "C" fn each(
        info: *mut libc::dl_phdr_info,
        _size: usize,
        data: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: dl_iterate_phdr passes a valid info; `data` is our triple.
        unsafe {
            let (base, lo, hi) = &mut *(data as *mut (u64, u64, u64));
            let info = &*info;
            for i in 0..info.dlpi_phnum as usize {
                let ph = &*info.dlpi_phdr.add(i);
                if ph.p_type != libc::PT_LOAD {
                    continue;
                }
                let start = info.dlpi_addr + ph.p_vaddr;
                let end = start + ph.p_memsz;
                if start <= *base && *base < end || info.dlpi_addr == *base {
                    *lo = (*lo).min(start);
                    *hi = (*hi).max(end);
                }
            }
            0
        }
    }
    let mut range = (base, u64::MAX, 0u64);
    // SAFETY: the callback only reads what it is given and writes `range`.
    unsafe {
        libc::dl_iterate_phdr(
            Some(each),
            &mut range as *mut (u64, u64, u64) as *mut libc::c_void,
        )
    };
    if range.1 < range.2 {
        LO.store(range.1, Relaxed);
        HI.store(range.2, Relaxed);
    }
}

fn unsafe_zeroed() -> libc::Dl_info {
    libc::Dl_info {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    }
}
