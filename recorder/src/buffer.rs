//! Per-thread event streams, the global order, and the files they live in.
//!
//! Each thread writes its events straight into a shared mapping of its own
//! *tail* file, `t<ID>.tail`: a header word (the index of the chunk the tail
//! holds) and one chunk of [`CHUNK_WORDS`] words. What a thread wrote is in
//! the page cache the moment it wrote it, so the events survive however the
//! program ends (exit from any thread, `_exit`, abort, a fatal signal,
//! SIGKILL from `cprace record --timeout`). A full chunk is written to the
//! end of `t<ID>.bin` (bypassing the page cache where the file system
//! allows), zeroed, and the header then names the next chunk: the tail's
//! pages are used again and again. A mapping of the whole `.bin` instead
//! touched a new page every 512 events, and on this machine kind new pages
//! cost more than the rest of the runtime (BENCHMARKS.md, "Where a recorded
//! run's time goes"). cprace appends each tail to its `.bin` unless the
//! `.bin` already holds its chunk (the thread was stopped between writing
//! the chunk and naming the next). A record is committed by storing its
//! first word last, with release order; the chunk is zero-filled, so a
//! reader stops at the first zero word (see the `cprace-events` crate for
//! the words).
//!
//! cprace may read the files while the program runs (`record --analyze`).
//! It then needs to know how far it may merge: a record appears only when
//! committed, and a thread that commits nothing for a while may still add
//! records numbered below what other threads wrote since. So a thread
//! about to block (a lock, a wait, a join) says so in its tail's second
//! header word, a count of its parks and unparks (odd: *parked*), and its
//! next record unparks it before it reads [`SEQ`]; the file `control`
//! holds how many thread ids were handed out; and the tail's third header
//! word counts the changes to a record already committed (see
//! [`Thread::changing`]). With every operation on [`SEQ`], the park count
//! and the published count sequentially consistent (on x86-64 they compile
//! to what relaxed ones do), a reader that saw records up to number `m`,
//! then a thread parked (or a thread id not yet handed out), knows that
//! thread's next records come after `m`.

use std::ffi::CString;
use std::sync::OnceLock;
use std::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU32, AtomicU64, Ordering::Relaxed, Ordering::Release,
    Ordering::SeqCst,
};

use cprace_events::*;

/// True between `__tsan_init` (with `CPRACE_RECORD_DIR` set) and exit.
pub static ENABLED: AtomicBool = AtomicBool::new(false);
/// The global order of synchronization events. Every numbered event takes
/// the next number with one relaxed fetch-add: RMWs of one atomic are
/// totally ordered consistently with happens-before, so a release taken
/// before an unlock is numbered below the acquire taken after the matching
/// lock, whatever the memory orders.
///
/// A plain access only loads the counter (an L1 hit while no thread
/// synchronizes) and carries the number of synchronization events begun
/// before it: cprace places it after those and before the next one.
/// Coherence makes that consistent with program order, and accesses only
/// synchronize through the numbered events, so the merged order is
/// consistent with the run's synchronization.
pub static SEQ: AtomicU64 = AtomicU64::new(0);
/// Recorder thread ids; 0 is the thread that ran `__tsan_init`.
static NEXT_TID: AtomicU32 = AtomicU32::new(1);
/// The first word of the mapped `control` file: how many thread ids were
/// handed out (null when the file could not be made: a reader then
/// merges after the run).
static CONTROL: AtomicPtr<AtomicU64> = AtomicPtr::new(std::ptr::null_mut());
/// The directory of the event files (NUL-terminated path).
static DIR: OnceLock<Vec<u8>> = OnceLock::new();
/// How deep a thread's recorded call stack may grow.
static MAX_DEPTH: AtomicU32 = AtomicU32::new(DEFAULT_STACK_DEPTH);

const CHUNK_BYTES: usize = CHUNK_WORDS * 8;
/// Bytes of a tail file before its chunk (a page, so that the chunk is
/// page-aligned for writes that bypass the page cache).
const TAIL_HEADER: usize = TAIL_HEADER_BYTES as usize;

/// One thread's recorder state: its stream and its call stack.
pub struct Thread {
    /// Recorder thread id.
    pub tid: u32,
    /// The mapped chunk (null until the first event).
    base: *mut u64,
    /// Words used in the chunk.
    len: usize,
    /// Index of the mapped chunk in the file.
    chunk: u64,
    fd: libc::c_int,
    /// The `seq` the reader gives this thread's next plain access.
    seq: u64,
    /// The thread's pc table, as the reader rebuilds it.
    pcs: Box<[u64; PC_SLOTS]>,
    /// Current stack node, and the one the stream last said.
    node: u32,
    said_node: u32,
    /// Parent of every node (index: node id; node 0 is the empty stack).
    parents: Vec<u32>,
    /// Depth of every node.
    depths: Vec<u32>,
    /// Calls not pushed because the stack was as deep as allowed.
    overflow: u32,
    /// (parent, pc) -> child, open addressing.
    children: Vec<(u64, u32, u32)>,
    /// Nonzero while the runtime itself runs code that may call an
    /// interposed function (its own allocations, dlsym, ...): nothing is
    /// recorded then.
    pub busy: u32,
    /// `AnnotateIgnoreReadsBegin`/`WritesBegin` nesting.
    pub ignore_reads: u32,
    /// See [`Thread::ignore_reads`].
    pub ignore_writes: u32,
    /// `AnnotateIgnoreSyncBegin` and `__tsan_ignore_thread_begin` nesting.
    pub ignore_sync: u32,
    /// The recording stopped for this thread after an I/O error.
    failed: bool,
    /// How often the thread parked and unparked (odd: parked; the next
    /// record unparks it first), as the tail's second header word says.
    parks: u64,
}

/// Thread pointer states besides a live thread.
const NONE: usize = 0;
const DEAD: usize = 1;

/// The calling thread's state pointer (or [`NONE`], [`DEAD`]).
#[cfg(target_arch = "x86_64")]
mod tls {
    // In static TLS, read with the initial-exec model: one load relative to
    // %fs per event, where a `thread_local!` of a shared library costs a
    // call to __tls_get_addr. The library is loaded with the program (or
    // has glibc's spare static TLS when dlopened), which the model needs.
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
    pub fn get() -> *mut super::Thread {
        let p: *mut super::Thread;
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
    pub fn set(p: *mut super::Thread) {
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
        static BUF: Cell<*mut super::Thread> = const { Cell::new(super::NONE as *mut super::Thread) };
    }

    pub fn get() -> *mut super::Thread {
        BUF.with(|c| c.get())
    }

    pub fn set(p: *mut super::Thread) {
        BUF.with(|c| c.set(p))
    }
}

thread_local! {
    static EXIT_GUARD: ExitGuard = const { ExitGuard };
}

/// Ends the thread's stream when the thread ends (return or pthread_exit).
struct ExitGuard;

impl Drop for ExitGuard {
    fn drop(&mut self) {
        end_thread();
    }
}

/// A fresh recorder thread id (for a thread about to be created),
/// published in `control` before the thread can record anything.
pub fn new_tid() -> u32 {
    let tid = NEXT_TID.fetch_add(1, SeqCst);
    let c = CONTROL.load(Relaxed);
    if !c.is_null() {
        // SAFETY: the control mapping lives until the process ends.
        unsafe { (*c).fetch_max(u64::from(tid) + 1, SeqCst) };
    }
    tid
}

/// Creates and maps the run's `control` file (its first word: thread ids
/// handed out, 1 so far: the main thread's).
fn map_control(dir: &[u8]) {
    let mut path = dir[..dir.len() - 1].to_vec();
    path.extend_from_slice(b"/control\0");
    // SAFETY: a NUL-terminated path; our own descriptor, closed after a
    // shared mapping of the page is made (or not).
    unsafe {
        let fd = libc::open(
            path.as_ptr() as *const libc::c_char,
            libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC,
            0o600,
        );
        if fd < 0 {
            return;
        }
        let p = if libc::ftruncate(fd, 4096) == 0 {
            libc::mmap(
                std::ptr::null_mut(),
                4096,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        } else {
            libc::MAP_FAILED
        };
        libc::close(fd);
        if p != libc::MAP_FAILED {
            let c = p as *mut AtomicU64;
            (*c).store(1, SeqCst);
            CONTROL.store(c, Relaxed);
        }
    }
}

/// Called once from `__tsan_init`: enable recording when asked to.
pub fn init() {
    let Some(dir) = std::env::var_os("CPRACE_RECORD_DIR") else {
        return;
    };
    let Ok(dir) = CString::new(std::os::unix::ffi::OsStrExt::as_bytes(dir.as_os_str())) else {
        return;
    };
    if DIR.set(dir.into_bytes_with_nul()).is_err() {
        return;
    }
    if let Some(d) = std::env::var_os("CPRACE_STACK_DEPTH")
        .and_then(|d| d.to_str().and_then(|d| d.parse::<u32>().ok()))
    {
        MAX_DEPTH.store(d, Relaxed);
    }
    // Programs this one starts record nothing (they would share the files);
    // a forked child stops recording.
    // SAFETY: __tsan_init runs in a module constructor, before other threads.
    unsafe {
        std::env::remove_var("CPRACE_RECORD_DIR");
        std::env::remove_var("CPRACE_STACK_DEPTH");
    }
    extern "C" fn in_child() {
        ENABLED.store(false, Relaxed);
        // The child's thread states point at the parent's mappings, which
        // the child must not write: forget them.
        tls::set(DEAD as *mut Thread);
    }
    // SAFETY: registering a plain function.
    unsafe { libc::pthread_atfork(None, None, Some(in_child)) };
    crate::own::init();
    #[cfg(target_arch = "x86_64")]
    {
        crate::memory::resolve_all();
        crate::heap::at_fork();
    }
    write_modules();
    map_control(DIR.get().expect("set above"));
    begin_thread(0, 0);
    ENABLED.store(true, Relaxed);
    extern "C" fn at_exit() {
        // Objects loaded after start (dlopen) are listed too.
        if ENABLED.load(Relaxed) {
            with_busy(write_modules);
        }
    }
    // SAFETY: registering a plain function.
    unsafe { libc::atexit(at_exit) };
}

/// Gives the calling thread the recorder id `tid` and records its start
/// (`start`: its start routine, 0 for the main thread).
pub fn begin_thread(tid: u32, start: u64) {
    let t = Box::new(Thread {
        tid,
        base: std::ptr::null_mut(),
        len: 0,
        chunk: 0,
        fd: -1,
        seq: 0,
        pcs: Box::new([0; PC_SLOTS]),
        node: 0,
        said_node: 0,
        parents: vec![0],
        depths: vec![0],
        overflow: 0,
        children: vec![(u64::MAX, 0, 0); 256],
        busy: 1,
        ignore_reads: 0,
        ignore_writes: 0,
        ignore_sync: 0,
        failed: false,
        parks: 0,
    });
    tls::set(Box::into_raw(t));
    if tid != 0 {
        // The main thread's thread-local destructors run at the start of
        // exit(), before atexit handlers and global destructors, whose
        // accesses must still be recorded: only other threads end so.
        EXIT_GUARD.with(|_| ());
    }
    let (lo, hi) = stack_bounds();
    let (tls_lo, tls_hi) = tls_bounds();
    // SAFETY: the state was just set for this thread.
    let t = unsafe { &mut *tls::get() };
    t.busy = 0;
    // The kernel's thread id, as TSan's reports give it (`tid=`); ids fit
    // the argument's 24 bits (Linux's pid_max is at most 2^22).
    // SAFETY: gettid has no preconditions.
    let os_tid = unsafe { libc::gettid() } as u64 & 0xff_ffff;
    t.long(
        Kind::ThreadStart,
        0,
        lo,
        start,
        os_tid,
        &[hi, tls_lo, tls_hi],
    );
}

/// This thread's state, or None when it records nothing.
#[inline(always)]
pub fn thread() -> Option<&'static mut Thread> {
    let b = tls::get();
    match b as usize {
        NONE => {
            // A thread created before recording started or by code whose
            // pthread_create we did not see.
            if !ENABLED.load(Relaxed) {
                return None;
            }
            begin_thread(new_tid(), 0);
            // SAFETY: just set to a live state.
            Some(unsafe { &mut *tls::get() })
        }
        DEAD => None,
        // SAFETY: only this thread touches its state.
        _ => Some(unsafe { &mut *b }),
    }
}

/// This thread's state when recording is on and the runtime is not busy.
#[inline(always)]
pub fn recording() -> Option<&'static mut Thread> {
    if !ENABLED.load(Relaxed) {
        return None;
    }
    let t = thread()?;
    if t.busy != 0 || t.failed {
        return None;
    }
    Some(t)
}

/// This thread's recorder id, or None when it records nothing.
pub fn current_tid() -> Option<u32> {
    thread().map(|t| t.tid)
}

/// Runs `f` with the calling thread marked busy: interposed functions it
/// reaches record nothing.
pub fn with_busy<R>(f: impl FnOnce() -> R) -> R {
    let b = tls::get();
    let live = (b as usize) > DEAD;
    if live {
        // SAFETY: this thread's live state.
        unsafe { (*b).busy += 1 };
    }
    let r = f();
    if live {
        // SAFETY: as above.
        unsafe { (*b).busy -= 1 };
    }
    r
}

impl Thread {
    /// Room for `n` words in the mapped chunk, mapping the next one when
    /// needed. False when the stream failed.
    #[inline(always)]
    fn room(&mut self, n: usize) -> bool {
        if self.len + n <= CHUNK_WORDS && !self.base.is_null() {
            return true;
        }
        self.next_chunk()
    }

    #[cold]
    fn next_chunk(&mut self) -> bool {
        if self.failed {
            return false;
        }
        self.busy += 1;
        let ok = self.map_next();
        self.busy -= 1;
        ok
    }

    fn map_next(&mut self) -> bool {
        if self.base.is_null() {
            return self.open_files();
        }
        if self.len < CHUNK_WORDS {
            self.commit(TAG_SKIP << TAG_SHIFT);
        }
        if !self.write_chunk() {
            return self.fail("cannot write an event file");
        }
        // SAFETY: the chunk and the header of our tail mapping.
        unsafe {
            std::ptr::write_bytes(self.base as *mut u8, 0, CHUNK_BYTES);
            AtomicU64::from_ptr(self.header()).store(self.chunk + 1, Release);
        }
        self.chunk += 1;
        self.len = 0;
        true
    }

    /// The tail's header word.
    fn header(&self) -> *mut u64 {
        // SAFETY: `base` is TAIL_HEADER bytes into the tail mapping.
        unsafe { (self.base as *mut u8).sub(TAIL_HEADER) as *mut u64 }
    }

    /// The tail's park count.
    fn parked_word(&self) -> &AtomicU64 {
        // SAFETY: the second word of our tail mapping's header.
        unsafe { AtomicU64::from_ptr(self.header().add(1)) }
    }

    /// Says in the tail that the thread is about to block: until its next
    /// record, a reader may merge past it (see the module's notes).
    pub fn park(&mut self) {
        if self.parks & 1 == 0 && !self.base.is_null() {
            self.parks += 1;
            self.parked_word().store(self.parks, SeqCst);
        }
    }

    /// Ends a park, before the record that follows reads [`SEQ`].
    #[inline(always)]
    fn awake(&mut self) {
        if self.parks & 1 == 1 {
            self.unpark();
        }
    }

    /// [`Thread::awake`] for a parked thread. (A count, not a flag: a
    /// reader that saw the same odd count before and after copying the
    /// thread's words knows the thread wrote none meanwhile, so its last
    /// record stands.)
    #[cold]
    fn unpark(&mut self) {
        self.parks += 1;
        if !self.base.is_null() {
            self.parked_word().store(self.parks, SeqCst);
        }
    }

    /// Creates the thread's `.bin` and tail files and maps the tail.
    fn open_files(&mut self) -> bool {
        let Some(dir) = DIR.get() else {
            self.failed = true;
            return false;
        };
        let path = |ext: &str| {
            let mut p = dir[..dir.len() - 1].to_vec();
            p.extend_from_slice(format!("/t{}.{ext}\0", self.tid).as_bytes());
            p
        };
        let create = |p: &[u8], extra: libc::c_int| {
            // SAFETY: a NUL-terminated path.
            unsafe {
                libc::open(
                    p.as_ptr() as *const libc::c_char,
                    libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC | extra,
                    0o600,
                )
            }
        };
        let bin = path("bin");
        // Chunks go to the disk without a detour through new page-cache
        // pages where the file system allows it (tmpfs does not).
        let mut fd = create(&bin, libc::O_DIRECT);
        if fd < 0 {
            fd = create(&bin, 0);
        }
        if fd < 0 {
            return self.fail("cannot create an event file");
        }
        let len = TAIL_HEADER + CHUNK_BYTES;
        let map_tail = || {
            let tail = create(&path("tail"), 0);
            if tail < 0 {
                return Err("cannot create an event file");
            }
            // SAFETY: our own descriptor; a shared mapping of the whole file.
            unsafe {
                if libc::ftruncate(tail, len as libc::off_t) != 0 {
                    libc::close(tail);
                    return Err("cannot grow an event file");
                }
                let p = libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED,
                    tail,
                    0,
                );
                libc::close(tail);
                if p == libc::MAP_FAILED {
                    return Err("cannot map an event file");
                }
                Ok(p)
            }
        };
        let p = match map_tail() {
            Ok(p) => p,
            Err(what) => {
                // The thread records nothing more: its `.bin` is not kept open.
                // SAFETY: the descriptor opened above, not used again.
                unsafe { libc::close(fd) };
                return self.fail(what);
            }
        };
        self.fd = fd;
        // SAFETY: the chunk starts TAIL_HEADER bytes into the mapping.
        self.base = unsafe { (p as *mut u8).add(TAIL_HEADER) } as *mut u64;
        self.chunk = 0;
        self.len = 0;
        true
    }

    /// Writes the tail's chunk at its place in the `.bin` file.
    fn write_chunk(&mut self) -> bool {
        let mut done = 0;
        while done < CHUNK_BYTES {
            // SAFETY: our descriptor; the chunk of our mapping.
            let n = unsafe {
                libc::pwrite(
                    self.fd,
                    (self.base as *const u8).add(done) as *const libc::c_void,
                    CHUNK_BYTES - done,
                    (self.chunk * CHUNK_BYTES as u64 + done as u64) as libc::off_t,
                )
            };
            if n > 0 {
                done += n as usize;
                continue;
            }
            let err = std::io::Error::last_os_error().raw_os_error();
            match err {
                Some(libc::EINTR) => {}
                // A file system that took O_DIRECT at open but not for
                // this write: write through the page cache.
                Some(libc::EINVAL) => {
                    // SAFETY: our descriptor.
                    let ok = unsafe {
                        let fl = libc::fcntl(self.fd, libc::F_GETFL);
                        fl & libc::O_DIRECT != 0
                            && libc::fcntl(self.fd, libc::F_SETFL, fl & !libc::O_DIRECT) == 0
                    };
                    if !ok {
                        return false;
                    }
                }
                _ => return false,
            }
        }
        true
    }

    #[cold]
    fn fail(&mut self, what: &str) -> bool {
        self.failed = true;
        let err = std::io::Error::last_os_error();
        fail(&format!("{what}: {err}"));
        false
    }

    /// Stores a one-word record (committed by the store itself).
    #[inline(always)]
    fn commit(&mut self, w: u64) {
        // SAFETY: `room` made `len` a word of the mapped chunk.
        unsafe { AtomicU64::from_ptr(self.base.add(self.len)).store(w, Release) };
        self.len += 1;
    }

    /// Stores a record of several words: the rest first, then the first.
    #[inline(always)]
    fn commit_words(&mut self, first: u64, rest: &[u64]) {
        // SAFETY: `room` made `len .. len + 1 + rest.len()` words of the chunk.
        unsafe {
            let p = self.base.add(self.len);
            for (i, &w) in rest.iter().enumerate() {
                p.add(1 + i).write(w);
            }
            AtomicU64::from_ptr(p).store(first, Release);
        }
        self.len += 1 + rest.len();
    }

    /// The words telling the reader this thread's `seq` and stack node, when
    /// they changed.
    #[inline(always)]
    fn state(&mut self, seq: u64) {
        if seq != self.seq {
            self.seq = seq;
            self.commit(seq_word(seq));
        }
        if self.node != self.said_node {
            self.said_node = self.node;
            self.commit(stack_word(self.node));
        }
    }

    /// Appends a plain access of `1 << log2size` bytes.
    #[inline(always)]
    pub fn access(&mut self, write: bool, log2size: u32, addr: u64, pc: u64) {
        if (write && self.ignore_writes != 0) || (!write && self.ignore_reads != 0) {
            return;
        }
        if (addr | pc) >= SHORT_LIMIT {
            let flags = if write { RANGE_WRITE } else { 0 };
            self.long(Kind::Range, flags, addr, pc, 0, &[1 << log2size]);
            return;
        }
        // A seq word, a stack word, a pc word and the access.
        if !self.room(4) {
            return;
        }
        self.awake();
        let seq = SEQ.load(SeqCst);
        self.state(seq);
        let slot = self.slot_for(pc);
        self.commit(access_word(write, log2size, slot, addr));
    }

    /// The slot of `pc` in the thread's pc table, telling the reader when
    /// the slot changes.
    #[inline(always)]
    fn slot_for(&mut self, pc: u64) -> usize {
        let slot = pc_slot(pc);
        if self.pcs[slot] != pc {
            self.pcs[slot] = pc;
            self.commit(pc_word(slot, pc));
        }
        slot
    }

    /// Appends a long event. Numbered kinds take the next number of the
    /// global order; the others, like plain accesses, the order's current
    /// value. Returns where the record went (for [`Thread::unrecord`]).
    #[inline]
    pub fn long(
        &mut self,
        kind: Kind,
        flags: u16,
        addr: u64,
        pc: u64,
        arg: u64,
        extra: &[u64],
    ) -> Option<Place> {
        self.long_event(kind, flags, addr, pc, arg, extra, false)
    }

    #[inline]
    #[allow(clippy::too_many_arguments)]
    fn long_event(
        &mut self,
        kind: Kind,
        flags: u16,
        addr: u64,
        pc: u64,
        arg: u64,
        extra: &[u64],
        pending: bool,
    ) -> Option<Place> {
        if self.ignore_sync != 0
            && matches!(
                kind,
                Kind::Acquire | Kind::Release | Kind::SyncRead | Kind::SyncWrite
            )
        {
            return None;
        }
        if !self.room(2 + MAX_RECORD) {
            return None;
        }
        self.awake();
        let seq = if kind.numbered() {
            // Only the stack word matters before a numbered event.
            self.state(self.seq);
            if pending { 0 } else { SEQ.fetch_add(1, SeqCst) }
        } else {
            let seq = SEQ.load(SeqCst);
            self.state(seq);
            seq
        };
        // An atomic operation in two words (its number as a step from the
        // thread's `seq`, which it becomes; its pc in the pc table).
        if kind == Kind::Atomic
            && !pending
            && (addr | pc) < SHORT_LIMIT
            && let Ok(delta) = u32::try_from(seq.wrapping_sub(self.seq))
        {
            let slot = self.slot_for(pc);
            self.seq = seq;
            let at = self.len;
            self.commit_words(atomic_word(flags, delta), &[atomic_payload(slot, addr)]);
            return Some(Place {
                chunk: self.chunk,
                at,
            });
        }
        let w = encode_long(kind, flags, pending, addr, pc, seq, arg, extra);
        let at = self.len;
        self.commit_words(w[0], &w[1..1 + kind.payload()]);
        Some(Place {
            chunk: self.chunk,
            at,
        })
    }

    /// Records that the thread is about to block acquiring lock `addr`: a
    /// pending acquire, made an acquire by [`Thread::finish_pending`] when
    /// the lock is taken (or taken back when the call fails). A thread that
    /// never gets the lock leaves the pending event as its last.
    pub fn pending_acquire(&mut self, flags: u16, addr: u64, pc: u64) -> Option<Place> {
        self.long_event(Kind::Acquire, flags, addr, pc, 0, &[], true)
    }

    /// Completes the pending acquire at `p` of lock `addr`: when the lock
    /// was `taken` it becomes an acquire with its number in the global
    /// order, else it is taken back. When records were appended since (a
    /// signal handler ran while the thread was blocked) the pending record
    /// stays, void for the reader, and the acquire is recorded anew.
    pub fn finish_pending(&mut self, p: Place, taken: bool, flags: u16, addr: u64, pc: u64) {
        let words = 1 + Kind::Acquire.payload();
        if p.chunk == self.chunk && p.at + words == self.len && !self.base.is_null() {
            if taken {
                self.awake();
                let seq = SEQ.fetch_add(1, SeqCst);
                // SAFETY: `p.at` is a word of the mapped chunk.
                let w = unsafe { self.base.add(p.at) };
                self.changing(|| {
                    // SAFETY: `p.at` is the last record of the mapped chunk.
                    unsafe {
                        *w.add(3) = seq_arg(seq, 0);
                        // The flags as the call's outcome says (EOWNERDEAD).
                        let first = (*w & !(0xf << TAG_SHIFT) & !(0xffff << 8))
                            | TAG_LONG << TAG_SHIFT
                            | u64::from(flags) << 8;
                        AtomicU64::from_ptr(w).store(first, Release);
                    }
                });
            } else {
                self.truncate(p.at, words);
            }
        } else if taken {
            self.long(Kind::Acquire, flags, addr, pc, 0, &[]);
        }
    }

    /// Forgets the last `words` words, which start at `at`: the first word
    /// is zeroed first, so a reader stops there as if nothing was written.
    fn truncate(&mut self, at: usize, words: usize) {
        let p = self.base;
        self.changing(|| {
            // SAFETY: `at .. at + words` are the last words of the mapped chunk.
            unsafe {
                AtomicU64::from_ptr(p.add(at)).store(0, Release);
                for i in 1..words {
                    *p.add(at + i) = 0;
                }
            }
        });
        self.len = at;
    }

    /// Runs `f`, which changes the last record after it was committed
    /// (takes it back, or completes it). The tail's third header word counts
    /// such changes, odd while one is under way: a reader who copied the
    /// words meanwhile (and may have seen the old record with words written
    /// after the change) knows to copy them again.
    fn changing(&mut self, f: impl FnOnce()) {
        // SAFETY: the header's third word.
        let changes = unsafe { AtomicU64::from_ptr(self.header().add(2)) };
        let n = changes.load(Relaxed);
        changes.store(n + 1, Relaxed);
        std::sync::atomic::fence(Release);
        f();
        changes.store(n + 2, Release);
    }

    /// Takes back the long event of `kind` recorded at `p` when it is still
    /// the last record (a release whose unlock then failed).
    pub fn unrecord(&mut self, p: Place, kind: Kind) {
        let words = 1 + kind.payload();
        if p.chunk == self.chunk && p.at + words == self.len && !self.base.is_null() {
            self.truncate(p.at, words);
        }
    }

    /// A call into a function from `pc`: the stack grows by a node.
    #[inline(always)]
    pub fn enter(&mut self, pc: u64) {
        let cur = self.node;
        if self.depths[cur as usize] >= MAX_DEPTH.load(Relaxed) || self.overflow != 0 {
            self.overflow += 1;
            return;
        }
        let mask = self.children.len() - 1;
        let mut i = (pc ^ u64::from(cur).wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .wrapping_mul(0x2545_f491_4f6c_dd1d) as usize
            >> 7
            & mask;
        loop {
            let (p, parent, child) = self.children[i];
            if p == pc && parent == cur {
                self.node = child;
                return;
            }
            if p == u64::MAX {
                break;
            }
            i = (i + 1) & mask;
        }
        self.new_node(pc, i);
    }

    #[cold]
    fn new_node(&mut self, pc: u64, slot: usize) {
        if !self.room(2) {
            return;
        }
        let cur = self.node;
        let id = self.parents.len() as u32;
        self.busy += 1;
        self.parents.push(cur);
        self.depths.push(self.depths[cur as usize] + 1);
        self.children[slot] = (pc, cur, id);
        if self.parents.len() * 2 > self.children.len() {
            // A power of two: the probes mask with `len - 1` (a length such
            // as 516 would leave 8 reachable slots and the probe would spin).
            let old = std::mem::replace(
                &mut self.children,
                vec![(u64::MAX, 0, 0); (self.parents.len() * 4).next_power_of_two()],
            );
            let mask = self.children.len() - 1;
            for (p, parent, child) in old.into_iter().filter(|e| e.0 != u64::MAX) {
                let mut i = (p ^ u64::from(parent).wrapping_mul(0x9e37_79b9_7f4a_7c15))
                    .wrapping_mul(0x2545_f491_4f6c_dd1d) as usize
                    >> 7
                    & mask;
                while self.children[i].0 != u64::MAX {
                    i = (i + 1) & mask;
                }
                self.children[i] = (p, parent, child);
            }
        }
        self.busy -= 1;
        self.commit_words(node_word(cur), &[pc]);
        self.node = id;
    }

    /// A return from the innermost function.
    #[inline(always)]
    pub fn exit(&mut self) {
        if self.overflow != 0 {
            self.overflow -= 1;
        } else {
            self.node = self.parents[self.node as usize];
        }
    }

    /// Depth of the current call stack (calls past the limit included).
    pub fn depth(&self) -> u64 {
        u64::from(self.depths[self.node as usize]) + u64::from(self.overflow)
    }

    /// Ends the stream (the thread ends).
    fn end(&mut self) {
        self.long(Kind::ThreadEnd, 0, 0, 0, 0, &[]);
        if !self.base.is_null() {
            // SAFETY: our mapping and descriptor.
            unsafe {
                libc::munmap(
                    self.header() as *mut libc::c_void,
                    TAIL_HEADER + CHUNK_BYTES,
                );
                libc::close(self.fd);
            }
            self.base = std::ptr::null_mut();
        }
    }
}

/// Where a long event went in a thread's stream.
#[derive(Clone, Copy, Debug)]
pub struct Place {
    chunk: u64,
    at: usize,
}

/// Stops recording after an I/O error and leaves a note `cprace record` reads.
fn fail(msg: &str) {
    ENABLED.store(false, Relaxed);
    if let Some(dir) = DIR.get() {
        let mut path = dir[..dir.len() - 1].to_vec();
        path.extend_from_slice(b"/error");
        let _ = std::fs::write(bytes_path(&path), msg);
    }
}

fn bytes_path(b: &[u8]) -> &std::path::Path {
    std::path::Path::new(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(b))
}

fn end_thread() {
    let b = tls::get();
    tls::set(DEAD as *mut Thread);
    if (b as usize) > DEAD {
        // SAFETY: the state was this thread's and is no longer reachable.
        let mut t = unsafe { Box::from_raw(b) };
        t.busy = 0;
        if ENABLED.load(Relaxed) {
            t.end();
        }
    }
}

/// Switches the calling thread to another recorder state (a fiber's),
/// returning the one it had.
pub fn swap_thread(to: *mut Thread) -> *mut Thread {
    let old = tls::get();
    tls::set(to);
    old
}

/// A state for a fiber: a logical thread of its own that runs on whichever
/// thread switches to it.
pub fn new_fiber() -> *mut Thread {
    let old = tls::get();
    begin_thread(new_tid(), 0);
    let f = tls::get();
    tls::set(old);
    f
}

/// The calling thread's stack: (lowest address, one past the highest).
fn stack_bounds() -> (u64, u64) {
    with_busy(|| {
        // SAFETY: pthread_getattr_np fills `attr`, which is destroyed after.
        unsafe {
            let mut attr: libc::pthread_attr_t = std::mem::zeroed();
            if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
                return (0, 0);
            }
            let mut addr = std::ptr::null_mut();
            let mut size = 0;
            let r = libc::pthread_attr_getstack(&attr, &mut addr, &mut size);
            libc::pthread_attr_destroy(&mut attr);
            if r != 0 {
                return (0, 0);
            }
            (addr as u64, addr as u64 + size as u64)
        }
    })
}

/// The calling thread's static TLS block: on x86-64 it ends at the thread
/// pointer, and the loader says its size.
fn tls_bounds() -> (u64, u64) {
    type Info = unsafe extern "C" fn(*mut usize, *mut usize);
    static INFO: OnceLock<usize> = OnceLock::new();
    let f = *INFO.get_or_init(|| {
        with_busy(|| {
            // SAFETY: looking up a symbol by a NUL-terminated name.
            unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"_dl_get_tls_static_info".as_ptr()) as usize }
        })
    });
    if f == 0 || !cfg!(target_arch = "x86_64") {
        return (0, 0);
    }
    let (mut size, mut align) = (0usize, 0usize);
    // SAFETY: glibc's `void _dl_get_tls_static_info(size_t *, size_t *)`.
    unsafe { std::mem::transmute::<usize, Info>(f)(&mut size, &mut align) };
    // SAFETY: pthread_self is always callable.
    let tp = unsafe { libc::pthread_self() } as u64;
    (tp.saturating_sub(size as u64), tp)
}

/// Writes the `modules` file: the [`FORMAT`] line, then one line per
/// loadable segment, `start end base path` (hex), so cprace can map a pc or
/// data address to a file and an address inside it.
fn write_modules() {
    let Some(dir) = DIR.get() else { return };
    let mut text = format!("{FORMAT}\n");
    text.push_str(&modules());
    let mut path = dir[..dir.len() - 1].to_vec();
    let tmp_name = format!("/modules.{}", std::process::id());
    path.extend_from_slice(tmp_name.as_bytes());
    let tmp = bytes_path(&path).to_path_buf();
    let mut fin = dir[..dir.len() - 1].to_vec();
    fin.extend_from_slice(b"/modules");
    let fin = bytes_path(&fin).to_path_buf();
    if std::fs::write(&tmp, text).is_ok() {
        let _ = std::fs::rename(&tmp, &fin);
    }
}

/// The program's path, read once at start: after the main thread leaves
/// through `pthread_exit`, `/proc/self/exe` no longer resolves, and a module
/// list written then would name the program "".
fn exe() -> &'static str {
    static EXE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    EXE.get_or_init(|| {
        std::fs::read_link("/proc/self/exe")
            .map(|p| p.display().to_string())
            .unwrap_or_default()
    })
}

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
                exe().to_string()
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

/// Lists the loaded objects again (after a dlopen).
pub fn modules_changed() {
    if ENABLED.load(Relaxed) {
        with_busy(write_modules);
    }
}
