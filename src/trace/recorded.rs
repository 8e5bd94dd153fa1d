//! What a trace of a recorded C/C++ program carries beside its events: the
//! call stack of every event, symbolized frames, what each variable's
//! memory is, the threads' creation sites and names, the heap blocks and
//! the ranges annotated benign. Reports join a race's two event ids with
//! it; the engines never see it.

use super::model::EventId;

/// One frame's source position (a pc maps to one or more: the innermost
/// inlined function first, the function it was inlined into last).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FrameLine {
    /// Function name (demangled), empty when unknown.
    pub function: String,
    /// Source file path, empty when unknown.
    pub file: String,
    /// Line (0: unknown).
    pub line: u32,
    /// Column (0: unknown).
    pub column: u32,
}

/// A code address, symbolized.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Frame {
    /// The return address recorded (the instruction is just before it).
    pub pc: u64,
    /// The object file holding it (file name).
    pub module: String,
    /// Offset of the instruction in that object.
    pub offset: u64,
    /// Its source positions, innermost inlined function first (empty when
    /// the object has no debug information).
    pub lines: Vec<FrameLine>,
}

/// One line of a printed call stack: a frame, or a function inlined into
/// one (the same code address, so the same module and offset).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StackEntry {
    /// Function name (demangled), empty when unknown.
    pub function: String,
    /// Source file path, empty when unknown.
    pub file: String,
    /// Line (0: unknown).
    pub line: u32,
    /// Column (0: unknown).
    pub column: u32,
    /// The object file holding the code (its file name).
    pub module: String,
    /// Offset of the instruction in that object.
    pub offset: u64,
    /// Inlined into the entry that follows (the next is its caller at
    /// the same code address).
    pub inlined: bool,
}

impl StackEntry {
    /// Entry `k` of a stack as ThreadSanitizer prints it: `#k function
    /// file:line (module+0xoffset)`, `<null>` for what is unknown.
    pub fn tsan_line(&self, k: usize) -> String {
        let object = format!("({}+{:#x})", self.module, self.offset);
        if self.function.is_empty() && self.file.is_empty() {
            return format!("#{k} <null> {object}");
        }
        let function = if self.function.is_empty() {
            "<null>"
        } else {
            &self.function
        };
        let at = match (self.file.is_empty(), self.line) {
            (true, _) => "<null>".to_string(),
            (false, 0) => self.file.clone(),
            (false, n) => format!("{}:{n}", self.file),
        };
        format!("#{k} {function} {at} {object}")
    }
}

/// What a variable is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum VarKind {
    /// The 8-byte memory cell at `addr`.
    #[default]
    Cell,
    /// A synchronization object that is not memory, keyed by `addr`.
    Key,
    /// The writer side of the rwlock at `addr`.
    RwWriter,
    /// The reader side of the rwlock at `addr` held by thread `extra`.
    RwReader,
}

/// A variable of a recorded trace.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VarInfo {
    /// What it is.
    pub kind: VarKind,
    /// Its address (or key).
    pub addr: u64,
    /// For cells, the number of frees or allocations that covered it
    /// before (0: none); for rwlock readers, the recorder thread.
    pub extra: u32,
}

/// A thread of a recorded trace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadInfo {
    /// The recorder's thread number (0: the main thread).
    pub tid: u32,
    /// The kernel's thread id (0: not recorded).
    pub os_tid: u32,
    /// The thread that created it, if recorded.
    pub parent: Option<u32>,
    /// Where it was created (a stack id).
    pub create_stack: u32,
    /// The pc of the creating call.
    pub create_pc: u64,
    /// The name the program gave it.
    pub name: Option<String>,
    /// Its stack's address range.
    pub stack: (u64, u64),
    /// Its static thread-local storage's address range.
    pub tls: (u64, u64),
}

/// A heap block's allocation or free.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockInfo {
    /// Start address.
    pub addr: u64,
    /// Size (requested at allocation; usable size at free).
    pub size: u64,
    /// The allocating or freeing thread.
    pub thread: u32,
    /// Where (a stack id; its top frame is the call's pc).
    pub stack: u32,
    /// The call's pc.
    pub pc: u64,
    /// By operator new/delete (else malloc/free and friends).
    pub new: bool,
    /// The id of the first event after it.
    pub at: EventId,
}

/// A global variable of the program.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Global {
    /// Its symbol.
    pub name: String,
    /// Its address in the run.
    pub addr: u64,
    /// Its size.
    pub size: u64,
    /// The object file holding it.
    pub module: String,
    /// Its offset in that object.
    pub offset: u64,
}

/// Everything a recorded trace carries beside its events.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recording {
    /// Call stacks: entry `id` is (parent stack, frame of the call); stack 0
    /// is empty.
    pub stacks: Vec<(u32, u32)>,
    /// Symbolized frames.
    pub frames: Vec<Frame>,
    /// Variables, by id.
    pub vars: Vec<VarInfo>,
    /// Lock addresses, by id.
    pub locks: Vec<u64>,
    /// Threads, by id.
    pub threads: Vec<ThreadInfo>,
    /// Heap allocations in order.
    pub allocs: Vec<BlockInfo>,
    /// Heap frees in order.
    pub frees: Vec<BlockInfo>,
    /// Address ranges annotated benign: races on them are not reported.
    pub benign: Vec<(u64, u64)>,
    /// The global variables accessed.
    pub globals: Vec<Global>,
    /// The stack of every event (when the trace was loaded whole; empty
    /// when it was streamed).
    pub event_stacks: Vec<u32>,
}

impl Recording {
    /// The global variable holding `addr`, if any.
    pub fn global_at(&self, addr: u64) -> Option<&Global> {
        self.globals
            .iter()
            .find(|g| addr >= g.addr && addr < g.addr + g.size.max(1))
    }

    /// The frames of stack `id`, innermost first (the event's own frame
    /// first), at most `depth` of them.
    pub fn stack_frames(&self, mut id: u32, depth: usize) -> Vec<&Frame> {
        let mut out = Vec::new();
        while id != 0 && out.len() < depth {
            let Some(&(parent, frame)) = self.stacks.get(id as usize) else {
                break;
            };
            if let Some(f) = self.frames.get(frame as usize) {
                out.push(f);
            }
            if parent >= id {
                // Stacks only point to earlier ones; anything else is corrupt.
                break;
            }
            id = parent;
        }
        out
    }

    /// The call stack of event `e` as [`Recording::stack_text`] prints it
    /// (empty when the trace kept none for it).
    pub fn frames_of(&self, e: EventId, depth: usize) -> Vec<String> {
        self.event_stacks
            .get(e as usize)
            .map_or_else(Vec::new, |&s| self.stack_text(s, depth))
    }

    /// Stack `id` as ThreadSanitizer prints one, innermost first: a line
    /// `#k function file:line (module+0xoffset)` per frame, and per function
    /// inlined into it; at most `depth` frames (see [`Recording::stack`]).
    pub fn stack_text(&self, id: u32, depth: usize) -> Vec<String> {
        self.stack(id, depth)
            .iter()
            .enumerate()
            .map(|(k, e)| e.tsan_line(k))
            .collect()
    }

    /// The call stack of event `e` as [`Recording::stack`] gives it (empty
    /// when the trace kept none for it).
    pub fn stack_of(&self, e: EventId, depth: usize) -> Vec<StackEntry> {
        self.event_stacks
            .get(e as usize)
            .map_or_else(Vec::new, |&s| self.stack(s, depth))
    }

    /// Stack `id`, innermost first: an entry per frame, and per function
    /// inlined into it (the inlined function first); at most `depth`
    /// frames. The recording runtime's own frames (a thread's start routine
    /// is called from it) are left out, and so is everything below `main`
    /// (the C library's start-up), as ThreadSanitizer leaves out its own.
    pub fn stack(&self, id: u32, depth: usize) -> Vec<StackEntry> {
        let mut out = Vec::new();
        for f in self.stack_frames(id, depth) {
            let module = f.module.rsplit('/').next().unwrap_or(&f.module);
            if module.starts_with("libcprace_rt") {
                continue;
            }
            let entry = |l: Option<&FrameLine>, inlined: bool| StackEntry {
                function: l.map_or_else(String::new, |l| l.function.clone()),
                file: l.map_or_else(String::new, |l| l.file.clone()),
                line: l.map_or(0, |l| l.line),
                column: l.map_or(0, |l| l.column),
                module: module.to_string(),
                offset: f.offset,
                inlined,
            };
            if f.lines.is_empty() {
                out.push(entry(None, false));
            }
            for (i, l) in f.lines.iter().enumerate() {
                out.push(entry(Some(l), i + 1 < f.lines.len()));
            }
            if f.lines.iter().any(|l| l.function == "main") {
                break;
            }
        }
        out
    }

    /// The heap block holding `addr` when event `at` happened: the latest
    /// allocation before it covering `addr`, unless a free came between.
    pub fn block_at(&self, addr: u64, at: EventId) -> Option<&BlockInfo> {
        let alloc = self
            .allocs
            .iter()
            .rev()
            .filter(|b| b.at <= at)
            .find(|b| addr >= b.addr && addr < b.addr + b.size.max(1))?;
        Some(alloc)
    }

    /// The free of the block holding `addr` that came before event `at`
    /// (and after the block's allocation), if any.
    pub fn freed_before(&self, addr: u64, at: EventId) -> Option<&BlockInfo> {
        let alloc_at = self.block_at(addr, at).map_or(0, |b| b.at);
        self.frees
            .iter()
            .rev()
            .filter(|b| b.at <= at && b.at >= alloc_at)
            .find(|b| addr >= b.addr && addr < b.addr + b.size.max(1))
    }
}
