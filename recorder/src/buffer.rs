//! Per-thread event buffers, the global order, and the files they go to.

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};

use crate::kind::*;

/// Words a thread buffers before writing them out (1 MiB: at least 32k
/// events, up to 128k plain accesses).
const CAP: usize = 1 << 17;

// The event files are written straight from memory and read as little-endian.
const _: () = assert!(cfg!(target_endian = "little"));

/// True between `__tsan_init` (with `CPRACE_RECORD_DIR` set) and exit.
pub static ENABLED: AtomicBool = AtomicBool::new(false);
/// The global order of synchronization events. Every event that is not a
/// plain read or write takes the next number with one relaxed fetch-add: RMWs
/// of one atomic are totally ordered consistently with happens-before, so a
/// release taken before an unlock is numbered below the acquire taken after
/// the matching lock, whatever the memory orders.
///
/// A read or write only loads the counter (an L1 hit while no thread
/// synchronizes; a contended fetch-add per access cost more than the rest of
/// the hot path together) and carries the number of synchronization events
/// begun before it: cprace places it after those and before the next one
/// (`src/record/events.rs`). Coherence makes that consistent with program
/// order (a load after this thread's own fetch-add sees at least its result,
/// and a later fetch-add returns at least what the load saw), and accesses
/// only synchronize through the numbered events, so the merged order is
/// consistent with the run's synchronization. Accesses of different threads
/// between the same two synchronization events are then grouped by thread.
static SEQ: AtomicU64 = AtomicU64::new(0);
/// Recorder thread ids; 0 is the thread that ran `__tsan_init`.
static NEXT_TID: AtomicU32 = AtomicU32::new(1);
static DIR: OnceLock<PathBuf> = OnceLock::new();

/// One thread's pending events and its output file.
pub struct Buf {
    tid: u32,
    len: usize,
    /// The `seq` the reader gives this thread's next plain access.
    seq: u64,
    file: Option<File>,
    /// The words to write (see [`crate::kind`] for the format).
    ev: Box<[u64]>,
    /// The thread's pc table, as the reader will rebuild it.
    pcs: Box<[u64; PC_SLOTS]>,
}

/// Buffer pointer states besides a live buffer.
const NONE: usize = 0;
const DEAD: usize = 1;

thread_local! {
    static EXIT_GUARD: ExitGuard = const { ExitGuard };
}

/// The calling thread's buffer pointer (or [`NONE`], [`DEAD`]).
#[cfg(target_arch = "x86_64")]
mod tls {
    // In static TLS, read with the initial-exec model: one load relative to
    // %fs per event, where a `thread_local!` of a shared library costs a
    // call to __tls_get_addr (about a tenth of the runtime's time). The
    // library is loaded with the program (or has glibc's spare static TLS
    // when dlopened), which is what the model needs.
    core::arch::global_asm!(
        ".pushsection .tbss,\"awT\",@nobits",
        ".p2align 3",
        // Global (the accesses may be in another codegen unit) but hidden:
        // resolved inside the library.
        ".globl cprace_rt_buf",
        ".hidden cprace_rt_buf",
        ".type cprace_rt_buf, @object",
        ".size cprace_rt_buf, 8",
        "cprace_rt_buf:",
        ".zero 8",
        ".popsection",
    );

    #[inline(always)]
    pub fn get() -> *mut super::Buf {
        let p: *mut super::Buf;
        // SAFETY: reads this thread's 8-byte TLS slot defined above.
        unsafe {
            core::arch::asm!(
                "mov {off}, qword ptr [rip + cprace_rt_buf@GOTTPOFF]",
                "mov {p}, qword ptr fs:[{off}]",
                off = out(reg) _,
                p = out(reg) p,
                options(nostack, readonly, preserves_flags),
            );
        }
        p
    }

    #[inline(always)]
    pub fn set(p: *mut super::Buf) {
        // SAFETY: writes this thread's 8-byte TLS slot defined above.
        unsafe {
            core::arch::asm!(
                "mov {off}, qword ptr [rip + cprace_rt_buf@GOTTPOFF]",
                "mov qword ptr fs:[{off}], {p}",
                off = out(reg) _,
                p = in(reg) p,
                options(nostack, preserves_flags),
            );
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod tls {
    use std::cell::Cell;

    thread_local! {
        static BUF: Cell<*mut super::Buf> = const { Cell::new(super::NONE as *mut super::Buf) };
    }

    pub fn get() -> *mut super::Buf {
        BUF.with(|c| c.get())
    }

    pub fn set(p: *mut super::Buf) {
        BUF.with(|c| c.set(p))
    }
}

/// Flushes the thread's buffer when the thread ends (return or pthread_exit).
struct ExitGuard;

impl Drop for ExitGuard {
    fn drop(&mut self) {
        end_thread();
    }
}

/// A fresh recorder thread id (for a thread about to be created).
pub fn new_tid() -> u32 {
    NEXT_TID.fetch_add(1, Relaxed)
}

/// Called once from `__tsan_init`: enable recording when asked to.
pub fn init() {
    let Some(dir) = std::env::var_os("CPRACE_RECORD_DIR") else {
        return;
    };
    if DIR.set(PathBuf::from(dir)).is_err() {
        return;
    }
    // Programs this one starts record nothing (they would share the files);
    // a forked child stops recording.
    // SAFETY: __tsan_init runs in a module constructor, before other threads.
    unsafe { std::env::remove_var("CPRACE_RECORD_DIR") };
    extern "C" fn in_child() {
        ENABLED.store(false, Relaxed);
    }
    // SAFETY: registering a plain function.
    unsafe { libc::pthread_atfork(None, None, Some(in_child)) };
    begin_thread(0);
    ENABLED.store(true, Relaxed);
    extern "C" fn at_exit() {
        finish();
    }
    // SAFETY: registering a plain function.
    unsafe { libc::atexit(at_exit) };
}

/// Gives the calling thread the recorder id `tid`.
pub fn begin_thread(tid: u32) {
    let b = Box::new(Buf {
        tid,
        len: 0,
        seq: 0,
        file: None,
        ev: vec![0u64; CAP].into_boxed_slice(),
        pcs: Box::new([0; PC_SLOTS]),
    });
    tls::set(Box::into_raw(b));
    EXIT_GUARD.with(|_| ());
}

/// This thread's recorder id, or None when it records nothing.
pub fn current_tid() -> Option<u32> {
    let b = buf()?;
    // SAFETY: the pointer is this thread's live buffer.
    Some(unsafe { (*b).tid })
}

#[inline(always)]
fn buf() -> Option<*mut Buf> {
    let b = tls::get();
    match b as usize {
        NONE => {
            // A thread created before recording started or by code whose
            // pthread_create we did not see.
            if !ENABLED.load(Relaxed) {
                return None;
            }
            begin_thread(new_tid());
            Some(tls::get())
        }
        DEAD => None,
        _ => Some(b),
    }
}

/// Appends one event (kind from [`crate::kind`]) to this thread's buffer.
#[inline(always)]
pub fn record(kind: u64, addr: u64, pc: u64, arg: u64) {
    if !ENABLED.load(Relaxed) {
        return;
    }
    let Some(b) = buf() else { return };
    // SAFETY: only this thread touches its buffer (until `finish`, which runs
    // with recording disabled).
    let b = unsafe { &mut *b };
    // Room for the longest record (a `seq`, a pc and an access, or a long
    // event), so a record never straddles a flush.
    if b.len > CAP - LONG_WORDS {
        b.flush();
    }
    // `kind` is a constant at every call site, so these branches fold away.
    if kind <= WRITE {
        let seq = SEQ.load(Relaxed);
        if (addr | pc) < SHORT_LIMIT {
            if seq != b.seq {
                b.seq = seq;
                b.push(TAG_SEQ << TAG_SHIFT | (seq & SEQ_MASK));
            }
            let slot = pc_slot(pc);
            if b.pcs[slot] != pc {
                b.pcs[slot] = pc;
                b.push(TAG_PC << TAG_SHIFT | (slot as u64) << 48 | pc);
            }
            b.push(kind << TAG_SHIFT | (slot as u64) << 48 | addr);
        } else {
            b.long(kind, addr, pc, seq, arg);
        }
    } else {
        let seq = SEQ.fetch_add(1, Relaxed);
        b.long(kind, addr, pc, seq, arg);
    }
}

/// `seq` keeps 40 bits in the files.
const SEQ_MASK: u64 = (1 << 40) - 1;

/// Takes back the event this thread recorded last, which must be a
/// synchronization event (a release whose unlock then failed). Flushes
/// happen before appends, so it is still buffered.
pub fn unrecord_last() {
    if let Some(b) = buf() {
        // SAFETY: as in `record`.
        let b = unsafe { &mut *b };
        if b.len >= LONG_WORDS && b.ev[b.len - LONG_WORDS] >> TAG_SHIFT == TAG_LONG {
            b.len -= LONG_WORDS;
        }
    }
}

impl Buf {
    #[inline(always)]
    fn push(&mut self, w: u64) {
        // SAFETY: `record` flushed when fewer than LONG_WORDS words were
        // free, and it pushes at most that many.
        unsafe { *self.ev.get_unchecked_mut(self.len) = w };
        self.len += 1;
    }

    /// Appends an event in the four-word form.
    #[inline(always)]
    fn long(&mut self, kind: u64, addr: u64, pc: u64, seq: u64, arg: u64) {
        self.push(TAG_LONG << TAG_SHIFT | kind);
        self.push(addr);
        self.push(pc);
        self.push((seq & SEQ_MASK) | arg << 40);
    }

    fn flush(&mut self) {
        if self.len == 0 {
            return;
        }
        if self.file.is_none() {
            let Some(dir) = DIR.get() else { return };
            let path = dir.join(format!("t{}.bin", self.tid));
            match File::create(&path) {
                Ok(f) => self.file = Some(f),
                Err(e) => return fail(&format!("cannot create {}: {e}", path.display())),
            }
        }
        // The file is little-endian, as the buffer is in memory on x86-64:
        // written as it stands, with no copy.
        // SAFETY: `len` initialized u64s, viewed as bytes.
        let bytes =
            unsafe { std::slice::from_raw_parts(self.ev.as_ptr() as *const u8, self.len * 8) };
        let r = match &mut self.file {
            Some(f) => f.write_all(bytes),
            None => Ok(()),
        };
        self.len = 0;
        if let Err(e) = r {
            fail(&format!("cannot write the trace: {e}"));
        }
    }
}

/// Stops recording after an I/O error and leaves a note `cprace record` reads.
fn fail(msg: &str) {
    ENABLED.store(false, Relaxed);
    if let Some(dir) = DIR.get() {
        let _ = std::fs::write(dir.join("error"), msg);
    }
}

fn end_thread() {
    let b = tls::get();
    tls::set(DEAD as *mut Buf);
    if (b as usize) > DEAD {
        // SAFETY: the buffer was this thread's and is no longer reachable.
        let mut b = unsafe { Box::from_raw(b) };
        b.flush();
    }
}

/// At exit: flush the exiting thread, stop recording, list the loaded objects.
/// Threads still running lose the events they have not flushed yet.
fn finish() {
    if !ENABLED.load(Relaxed) {
        return;
    }
    end_thread();
    ENABLED.store(false, Relaxed);
    if let Some(dir) = DIR.get() {
        let _ = std::fs::write(dir.join("modules"), format!("{FORMAT}\n{}", modules()));
    }
}

/// One line per loadable segment (after the [`FORMAT`] line): `start end base path` (hex addresses), so
/// cprace can map a pc or data address to a file and an address inside it.
fn modules() -> String {
    unsafe extern "C" fn each(
        info: *mut libc::dl_phdr_info,
        _size: usize,
        data: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: dl_iterate_phdr passes a valid info and our String.
        unsafe {
            let out = &mut *(data as *mut String);
            let info = &*info;
            let name = if info.dlpi_name.is_null() || *info.dlpi_name == 0 {
                std::fs::read_link("/proc/self/exe")
                    .map(|p| p.display().to_string())
                    .unwrap_or_default()
            } else {
                std::ffi::CStr::from_ptr(info.dlpi_name)
                    .to_string_lossy()
                    .into_owned()
            };
            for i in 0..info.dlpi_phnum as usize {
                let ph = &*info.dlpi_phdr.add(i);
                if ph.p_type == libc::PT_LOAD {
                    let start = info.dlpi_addr + ph.p_vaddr;
                    out.push_str(&format!(
                        "{start:x} {:x} {:x} {name}\n",
                        start + ph.p_memsz,
                        info.dlpi_addr
                    ));
                }
            }
            0
        }
    }
    let mut out = String::new();
    // SAFETY: the callback only reads what it is given.
    unsafe { libc::dl_iterate_phdr(Some(each), &mut out as *mut String as *mut libc::c_void) };
    out
}
