//! The runtime's files read while the program runs (`record --analyze`).
//!
//! A thread's tail file is mapped here as the runtime maps it: its header's
//! first word names the chunk the tail holds (the chunks before it are in
//! the `.bin` file, whole), the second counts the thread's parks and
//! unparks (odd: parked, about to block; see the runtime's `buffer.rs`),
//! the third its changes to a record already committed (odd while one is
//! under way), and the chunk's records are committed by their first word,
//! stored last. The run's `control` file says how many thread ids were
//! handed out. What the merge may conclude from them is in
//! [`super::events`].

use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use cprace_events::{CHUNK_WORDS, MAX_RECORD, TAIL_HEADER_BYTES};

/// A read-only shared mapping of `words` words of a file.
struct Mapping {
    at: *const AtomicU64,
    words: usize,
}

// SAFETY: the mapping is only read, through atomics; it lives until dropped.
unsafe impl Send for Mapping {}

impl Mapping {
    /// Maps the first `words` words of `path`; None while the file is
    /// missing or shorter (the runtime makes it, then sizes it).
    fn open(path: &Path, words: usize) -> Option<Mapping> {
        use std::os::fd::AsRawFd;
        let file = File::open(path).ok()?;
        if file.metadata().ok()?.len() < (words * 8) as u64 {
            return None;
        }
        // SAFETY: a shared read-only mapping of a file at least that long
        // (files the runtime sizes once and never shortens).
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                words * 8,
                libc::PROT_READ,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        (p != libc::MAP_FAILED).then_some(Mapping {
            at: p as *const AtomicU64,
            words,
        })
    }

    #[inline]
    fn word(&self, i: usize, order: Ordering) -> u64 {
        debug_assert!(i < self.words);
        // SAFETY: `i` is inside the mapping.
        unsafe { (*self.at.add(i)).load(order) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: our mapping, not used after this.
        unsafe { libc::munmap(self.at as *mut libc::c_void, self.words * 8) };
    }
}

/// The run's `control` file.
pub(crate) struct Control(Mapping);

impl Control {
    /// The control file of the run in `dir`, once the runtime made it.
    pub(crate) fn open(dir: &Path) -> Option<Control> {
        Mapping::open(&dir.join("control"), 1).map(Control)
    }

    /// Thread ids handed out so far (read after the records it bounds).
    pub(crate) fn threads(&self) -> u64 {
        self.0.word(0, Ordering::SeqCst)
    }
}

const HEADER_WORDS: usize = TAIL_HEADER_BYTES as usize / 8;

/// A thread's tail file, mapped.
pub(crate) struct Tail(Mapping);

impl Tail {
    /// The tail at `path`, once the runtime made and sized it.
    pub(crate) fn open(path: &Path) -> Option<Tail> {
        Mapping::open(path, HEADER_WORDS + CHUNK_WORDS).map(Tail)
    }

    /// The index of the chunk the tail holds: every chunk before it is
    /// whole in the `.bin` file.
    pub(crate) fn chunk(&self) -> u64 {
        self.0.word(0, Ordering::Acquire)
    }

    /// How often the thread parked and unparked: odd while it is parked
    /// (read after the records it bounds and before the thread's words are
    /// read again).
    pub(crate) fn parks(&self) -> u64 {
        self.0.word(1, Ordering::SeqCst)
    }

    /// Copies the committed words of chunk `chunk` from word `from` on into
    /// `out` (as many as fit), with enough words after the last nonzero one
    /// that a record committed there is whole: the words of a record not
    /// committed yet may come too, behind its zero first word. None when
    /// the words changed under the copy: the tail moved on to another chunk
    /// (which is then in the `.bin` file), or the thread changed its last
    /// record (took it back, or completed it in place; nothing is copied
    /// while such a change is under way).
    pub(crate) fn copy(&self, chunk: u64, from: usize, out: &mut [u64]) -> Option<usize> {
        let changes = self.0.word(2, Ordering::Acquire);
        if changes & 1 == 1 {
            return Some(0);
        }
        let n = out.len().min(CHUNK_WORDS - from);
        let mut copied = 0;
        let mut keep = MAX_RECORD;
        for (i, o) in out[..n].iter_mut().enumerate() {
            // Acquire: a committed first word shows the words stored before it.
            let w = self.0.word(HEADER_WORDS + from + i, Ordering::Acquire);
            *o = w;
            copied = i + 1;
            if w != 0 {
                keep = i + MAX_RECORD + 1;
            } else if i >= keep {
                break;
            }
        }
        std::sync::atomic::fence(Ordering::Acquire);
        let same = self.0.word(2, Ordering::Relaxed) == changes;
        (same && self.chunk() == chunk).then_some(copied)
    }
}

#[cfg(test)]
mod tests {
    //! A writer that follows the runtime's protocol (tails, chunks written
    //! out, parking, records completed in place or taken back) on several
    //! threads, while the merge reads the files: what it merges while they
    //! write must be what it merges from the files afterwards.

    use std::path::Path;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};

    use cprace_events::*;

    use super::super::events::{Event, Stacks, merge};
    use super::HEADER_WORDS;

    /// One simulated thread's stream.
    struct Writer {
        tid: u64,
        dir: std::path::PathBuf,
        map: *mut u64,
        bin: Option<std::fs::File>,
        len: usize,
        chunk: u64,
        seq: u64,
        parks: u64,
        rng: u64,
    }

    impl Writer {
        fn rand(&mut self, n: u64) -> u64 {
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            self.rng % n
        }

        fn header(&self, i: usize) -> &AtomicU64 {
            // SAFETY: the tail's header words.
            unsafe { AtomicU64::from_ptr(self.map.add(i)) }
        }

        fn word(&self, i: usize) -> &AtomicU64 {
            // SAFETY: a word of the tail's chunk.
            unsafe { AtomicU64::from_ptr(self.map.add(HEADER_WORDS + i)) }
        }

        /// Files made at the first record, the `.bin` first (as the runtime).
        fn open(&mut self) {
            use std::os::fd::AsRawFd;
            let bin = self.dir.join(format!("t{}.bin", self.tid));
            self.bin = Some(std::fs::File::create(bin).unwrap());
            let tail = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(self.dir.join(format!("t{}.tail", self.tid)))
                .unwrap();
            tail.set_len(((HEADER_WORDS + CHUNK_WORDS) * 8) as u64)
                .unwrap();
            // SAFETY: a shared mapping of the whole file.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    (HEADER_WORDS + CHUNK_WORDS) * 8,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED,
                    tail.as_raw_fd(),
                    0,
                )
            };
            assert_ne!(p, libc::MAP_FAILED);
            self.map = p as *mut u64;
        }

        fn room(&mut self, n: usize) {
            if self.map.is_null() {
                self.open();
            }
            if self.len + n <= CHUNK_WORDS {
                return;
            }
            if self.len < CHUNK_WORDS {
                self.word(self.len).store(TAG_SKIP << TAG_SHIFT, SeqCst);
            }
            use std::os::unix::fs::FileExt;
            let bytes: Vec<u8> = (0..CHUNK_WORDS)
                .flat_map(|i| self.word(i).load(SeqCst).to_le_bytes())
                .collect();
            let at = self.chunk * (CHUNK_WORDS as u64 * 8);
            self.bin.as_ref().unwrap().write_all_at(&bytes, at).unwrap();
            for i in 0..CHUNK_WORDS {
                self.word(i).store(0, SeqCst);
            }
            self.header(0).store(self.chunk + 1, SeqCst);
            self.chunk += 1;
            self.len = 0;
        }

        fn unpark(&mut self) {
            if self.parks & 1 == 1 {
                self.parks += 1;
                self.header(1).store(self.parks, SeqCst);
            }
        }

        fn park(&mut self) {
            if self.parks & 1 == 0 {
                self.parks += 1;
                self.header(1).store(self.parks, SeqCst);
            }
        }

        fn commit(&mut self, words: &[u64]) -> usize {
            let at = self.len;
            for (i, &w) in words.iter().enumerate().skip(1) {
                self.word(at + i).store(w, SeqCst);
            }
            self.word(at).store(words[0], SeqCst);
            self.len += words.len();
            at
        }

        /// Takes back the last record, at `at` (as the runtime's `truncate`).
        fn take_back(&mut self, at: usize, kind: Kind) {
            let n = self.header(2).load(SeqCst);
            self.header(2).store(n + 1, SeqCst);
            for i in 0..=kind.payload() {
                self.word(at + i).store(0, SeqCst);
            }
            self.header(2).store(n + 2, SeqCst);
            self.len = at;
        }

        fn state(&mut self, seq_now: u64) {
            if seq_now != self.seq {
                self.seq = seq_now;
                self.commit(&[seq_word(seq_now)]);
            }
        }

        fn access(&mut self, global: &AtomicU64) {
            self.room(4);
            self.unpark();
            self.state(global.load(SeqCst));
            let pc = 0x1000 + self.tid * 16;
            let slot = pc_slot(pc);
            if self.len == 0 || self.rand(50) == 0 {
                self.commit(&[pc_word(slot, pc)]);
            }
            let addr = 0x100 + self.rand(8) * 8;
            let w = self.rand(2) == 0;
            self.commit(&[access_word(w, 3, slot, addr)]);
        }

        fn long(&mut self, global: &AtomicU64, kind: Kind, pending: bool, arg: u64) -> usize {
            self.room(2 + MAX_RECORD);
            self.unpark();
            let seq = if pending {
                0
            } else if kind.numbered() {
                global.fetch_add(1, SeqCst)
            } else {
                let s = global.load(SeqCst);
                self.state(s);
                s
            };
            let w = encode_long(kind, 0, pending, arg, 0x2000, seq, 0, &[]);
            self.commit(&w[..1 + kind.payload()])
        }

        /// A step of the thread; false once it ended.
        fn step(&mut self, global: &AtomicU64, left: &mut u32) -> bool {
            if *left == 0 {
                self.long(global, Kind::ThreadEnd, false, 0);
                return false;
            }
            *left -= 1;
            match self.rand(100) {
                0..=79 => self.access(global),
                80..=87 => {
                    self.long(global, Kind::Release, false, 0x77);
                }
                88..=90 => {
                    // An unlock that failed: taken back while it is last.
                    let at = self.long(global, Kind::Release, false, 0x78);
                    std::thread::yield_now();
                    self.take_back(at, Kind::Release);
                }
                91..=95 => {
                    // A blocking lock: pending, parked, then completed in
                    // place (or taken back: the call failed).
                    let at = self.long(global, Kind::Acquire, true, 0x77);
                    self.park();
                    std::thread::sleep(std::time::Duration::from_micros(self.rand(200)));
                    if self.rand(4) == 0 {
                        self.take_back(at, Kind::Acquire);
                    } else {
                        self.unpark();
                        let n = global.fetch_add(1, SeqCst);
                        let c = self.header(2).load(SeqCst);
                        self.header(2).store(c + 1, SeqCst);
                        self.word(at + 3).store(seq_arg(n, 0), SeqCst);
                        self.word(at).store(
                            long_word(Kind::Acquire, 0, Kind::Acquire.payload(), false),
                            SeqCst,
                        );
                        self.header(2).store(c + 2, SeqCst);
                    }
                }
                96..=97 => {
                    // Blocked outside any call the runtime sees.
                    std::thread::sleep(std::time::Duration::from_micros(self.rand(300)));
                }
                _ => {
                    self.park();
                    std::thread::sleep(std::time::Duration::from_micros(self.rand(300)));
                }
            }
            true
        }
    }

    fn events_of(dir: &Path, running: Option<&AtomicBool>) -> Vec<Event> {
        let mut out = Vec::new();
        merge(
            dir,
            running,
            &mut |e: &Event, _: Option<&Event>, _: &Stacks| {
                out.push(*e);
                Ok(())
            },
        )
        .unwrap();
        out
    }

    fn control(dir: &Path) -> *mut u64 {
        use std::os::fd::AsRawFd;
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(dir.join("control"))
            .unwrap();
        f.set_len(4096).unwrap();
        // SAFETY: a shared mapping of the whole file.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                4096,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                f.as_raw_fd(),
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        p as *mut u64
    }

    #[test]
    fn merging_while_threads_write_gives_the_merge_of_their_files() {
        for round in 0..3u64 {
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join("modules"), format!("{FORMAT}\n")).unwrap();
            let ctl = control(dir.path()) as usize;
            let global = AtomicU64::new(0);
            let running = AtomicBool::new(true);
            let threads = 4u64;
            // Long enough for each thread to fill more than a chunk.
            let steps = (CHUNK_WORDS as u32) / 3 + 4000;
            let live = std::thread::scope(|s| {
                let merged = s.spawn(|| events_of(dir.path(), Some(&running)));
                let writers: Vec<_> = (0..threads)
                    .map(|t| {
                        let (dir, global) = (dir.path().to_path_buf(), &global);
                        s.spawn(move || {
                            // Published before its first record, as `new_tid`.
                            // SAFETY: the control word, mapped above.
                            unsafe { AtomicU64::from_ptr(ctl as *mut u64) }
                                .fetch_max(t + 1, SeqCst);
                            // Later threads start later.
                            std::thread::sleep(std::time::Duration::from_millis(t * 3));
                            let mut w = Writer {
                                tid: t,
                                dir,
                                map: std::ptr::null_mut(),
                                bin: None,
                                len: 0,
                                chunk: 0,
                                seq: 0,
                                parks: 0,
                                rng: 0x9e37_79b9_7f4a_7c15 ^ ((t + 1) * 7919) ^ (round << 32),
                            };
                            let mut left = if t == threads - 1 { steps / 4 } else { steps };
                            while w.step(global, &mut left) {}
                        })
                    })
                    .collect();
                for w in writers {
                    w.join().unwrap();
                }
                running.store(false, SeqCst);
                merged.join().unwrap()
            });
            let after = events_of(dir.path(), None);
            assert!(after.len() > 3 * (CHUNK_WORDS / 3), "{}", after.len());
            let count = |v: &[Event]| {
                (0..threads as u32)
                    .map(|t| v.iter().filter(|e| e.tid == t).count())
                    .collect::<Vec<_>>()
            };
            assert_eq!(count(&live), count(&after), "round {round}");
            assert_eq!(live.len(), after.len(), "round {round}");
            assert!(live == after, "round {round}: the orders differ");
        }
    }
}
