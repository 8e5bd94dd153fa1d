//! Program addresses to names: code addresses to `file:line` (DWARF, via
//! addr2line), data addresses to global variable names (ELF symbol tables).

use std::path::Path;

use rustc_hash::FxHashMap;

/// One loaded segment of one object file, as the runtime listed it.
struct Segment {
    start: u64,
    end: u64,
    base: u64,
    object: usize,
}

/// One object file: its debug info and its data symbols sorted by address.
struct Object {
    /// File name, for locations without debug info.
    short: String,
    loader: Option<addr2line::Loader>,
    /// (address in the file, size, name) of every sized data symbol.
    data: Vec<(u64, u64, String)>,
}

/// Maps the recorded run's addresses to names.
pub(crate) struct Symbolizer {
    segments: Vec<Segment>,
    objects: Vec<Object>,
    locations: FxHashMap<u64, String>,
}

impl Symbolizer {
    /// Reads the runtime's `modules` listing (`start end base path`, hex).
    /// Objects that cannot be read (the vdso, deleted files) give addresses.
    pub(crate) fn from_listing(listing: &str) -> Symbolizer {
        let mut segments = Vec::new();
        let mut objects: Vec<Object> = Vec::new();
        let mut by_path: FxHashMap<String, usize> = FxHashMap::default();
        for line in listing.lines() {
            let mut f = line.splitn(4, ' ');
            let (Some(s), Some(e), Some(b), Some(path)) = (f.next(), f.next(), f.next(), f.next())
            else {
                continue;
            };
            let (Ok(start), Ok(end), Ok(base)) = (
                u64::from_str_radix(s, 16),
                u64::from_str_radix(e, 16),
                u64::from_str_radix(b, 16),
            ) else {
                continue;
            };
            let object = *by_path.entry(path.to_string()).or_insert_with(|| {
                objects.push(Object::open(Path::new(path)));
                objects.len() - 1
            });
            segments.push(Segment {
                start,
                end,
                base,
                object,
            });
        }
        segments.sort_by_key(|s| s.start);
        Symbolizer {
            segments,
            objects,
            locations: FxHashMap::default(),
        }
    }

    fn segment(&self, addr: u64) -> Option<&Segment> {
        let i = self.segments.partition_point(|s| s.start <= addr);
        let s = self.segments.get(i.checked_sub(1)?)?;
        (addr < s.end).then_some(s)
    }

    /// Appends to `out` the `file:line` of the instruction before return
    /// address `pc` (the call into the runtime); `function+0xoff` or
    /// `object+0xoff` without debug info; nothing for 0.
    pub(crate) fn location(&mut self, pc: u64, out: &mut Vec<u8>) {
        match self.locations.get(&pc) {
            Some(l) => out.extend_from_slice(l.as_bytes()),
            None => {
                let l = self.compute_location(pc);
                out.extend_from_slice(l.as_bytes());
                self.locations.insert(pc, l);
            }
        }
    }

    fn compute_location(&self, pc: u64) -> String {
        if pc == 0 {
            return String::new();
        }
        let probe = pc - 1;
        let Some(seg) = self.segment(probe) else {
            return format!("{probe:#x}");
        };
        let obj = &self.objects[seg.object];
        let rel = probe - seg.base;
        if let Some(l) = &obj.loader {
            if let Ok(Some(loc)) = l.find_location(rel)
                && let (Some(file), Some(line)) = (loc.file, loc.line)
            {
                let name = Path::new(file)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| file.to_string());
                return format!("{name}:{line}");
            }
            if let Some(s) = l.find_symbol_info(rel) {
                return format!("{}+{:#x}", clean(s.name()), rel - s.address());
            }
        }
        format!("{}+{rel:#x}", obj.short)
    }

    /// The code address `pc` (a return address: the instruction before it)
    /// symbolized: its object, offset, and source positions innermost
    /// inlined function first, named as ThreadSanitizer names them (the
    /// outermost function demangled with its parameters, inlined ones by
    /// their name).
    pub fn frame(&self, pc: u64) -> crate::trace::recorded::Frame {
        use crate::trace::recorded::{Frame, FrameLine};
        let probe = pc.saturating_sub(1);
        let Some(seg) = self.segment(probe) else {
            return Frame {
                pc,
                module: String::new(),
                offset: probe,
                lines: Vec::new(),
            };
        };
        let obj = &self.objects[seg.object];
        let rel = probe - seg.base;
        let mut lines = Vec::new();
        if let Some(l) = &obj.loader {
            if let Ok(mut frames) = l.find_frames(rel) {
                while let Ok(Some(f)) = frames.next() {
                    let function = f
                        .function
                        .as_ref()
                        .and_then(|n| n.demangle().ok())
                        .map(|n| n.into_owned())
                        .unwrap_or_default();
                    let (file, line, column) = f.location.map_or((String::new(), 0, 0), |loc| {
                        (
                            loc.file.unwrap_or_default().to_string(),
                            loc.line.unwrap_or(0),
                            loc.column.unwrap_or(0),
                        )
                    });
                    lines.push(FrameLine {
                        function,
                        file,
                        line,
                        column,
                    });
                }
            }
            // The outermost function by its symbol, demangled with its
            // parameters (as TSan prints it); inlined ones by their name.
            if let Some(sym) = l.find_symbol(rel) {
                let name = addr2line::demangle_auto(sym.into(), None).into_owned();
                match lines.last_mut() {
                    Some(last) => last.function = name,
                    None => lines.push(FrameLine {
                        function: name,
                        ..FrameLine::default()
                    }),
                }
            }
            let n = lines.len();
            for l in lines.iter_mut().take(n.saturating_sub(1)) {
                if let Some(i) = l.function.find('(') {
                    l.function.truncate(i);
                }
            }
        }
        Frame {
            pc,
            module: obj.short.clone(),
            offset: rel,
            lines,
        }
    }

    /// True when `addr` lies in a loaded object (code or its globals).
    pub fn in_object(&self, addr: u64) -> bool {
        self.segment(addr).is_some()
    }

    /// The global variable holding `addr`: its symbol, run address, size,
    /// object and offset in the object.
    pub fn global_info(&self, addr: u64) -> Option<crate::trace::recorded::Global> {
        let seg = self.segment(addr)?;
        let obj = &self.objects[seg.object];
        let rel = addr - seg.base;
        let i = obj.data.partition_point(|d| d.0 <= rel);
        let (start, size, name) = obj.data.get(i.checked_sub(1)?)?;
        (rel - start < *size).then(|| crate::trace::recorded::Global {
            name: name.clone(),
            addr: seg.base + start,
            size: *size,
            module: obj.short.clone(),
            offset: *start,
        })
    }

    /// The global variable holding `addr` (`name` or `name+offset`), if any.
    pub(crate) fn global(&self, addr: u64) -> Option<String> {
        let mut out = String::new();
        self.global_into(addr, &mut out).then_some(out)
    }

    /// Appends the global variable holding `addr` to `out`; false if none.
    pub(crate) fn global_into(&self, addr: u64, out: &mut String) -> bool {
        let Some(seg) = self.segment(addr) else {
            return false;
        };
        let obj = &self.objects[seg.object];
        let rel = addr - seg.base;
        let i = obj.data.partition_point(|d| d.0 <= rel);
        let Some((start, size, name)) = i.checked_sub(1).and_then(|i| obj.data.get(i)) else {
            return false;
        };
        let off = rel - start;
        if off >= *size {
            return false;
        }
        out.push_str(name);
        if off != 0 {
            let _ = std::fmt::Write::write_fmt(out, format_args!("+{off}"));
        }
        true
    }
}

/// Names in a trace may not hold STD's separators.
fn clean(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '|' | '(' | ')' | ',' | '"' => '_',
            c if c.is_whitespace() => '_',
            c => c,
        })
        .collect()
}

impl Object {
    fn open(path: &Path) -> Object {
        let short = path
            .file_name()
            .map(|n| clean(&n.to_string_lossy()))
            .unwrap_or_default();
        let loader = addr2line::Loader::new(path).ok();
        let data = std::fs::read(path)
            .ok()
            .map(|bytes| data_symbols(&bytes))
            .unwrap_or_default();
        Object {
            short,
            loader,
            data,
        }
    }
}

fn data_symbols(bytes: &[u8]) -> Vec<(u64, u64, String)> {
    use object::{Object as _, ObjectSymbol, SymbolKind};
    let Ok(file) = object::File::parse(bytes) else {
        return Vec::new();
    };
    let mut out: Vec<(u64, u64, String)> = file
        .symbols()
        .chain(file.dynamic_symbols())
        .filter(|s| s.kind() == SymbolKind::Data && s.size() > 0 && s.is_definition())
        .filter_map(|s| Some((s.address(), s.size(), clean(s.name().ok()?))))
        .filter(|s| !s.2.is_empty())
        .collect();
    out.sort();
    out.dedup_by_key(|s| s.0);
    out
}
