//! The lock graph, built while streaming: per thread the locks it holds, per
//! abstract acquire (thread, lock, set of locks held) its first and last
//! instances, and the labelled edges between locks.
//!
//! An edge `g -> l` (a [`Label`]) says that some thread requests `l` while `g`
//! is held by
//!
//! - the requesting thread itself (the per-thread lock set of the classic
//!   lock graph and of SPDOffline's abstract deadlock patterns), or
//! - a thread that holds `g` while it waits to join the requesting thread,
//!   possibly through a chain of joins (a critical section spanning threads:
//!   every event of a joined thread lies inside the joiner's critical
//!   sections around the join). Such an edge is added when the join happens.
//!
//! Everything here is per thread, per lock, per abstract acquire or per edge:
//! nothing grows with the length of the trace.

use rustc_hash::FxHashMap;

use crate::report::Site;
use crate::trace::ThreadId;

/// Id of an interned set of locks.
pub type SetId = u32;
/// Id of an abstract acquire ([`Class`]).
pub type ClassId = u32;
/// Id of an edge of the lock graph ([`Label`]).
pub type LabelId = u32;
/// Id of a join ([`JoinInfo`]).
pub type JoinId = u32;

/// Longest chain of joins an edge is followed through.
pub const MAX_CHAIN: usize = 8;

/// Interned sets of locks (sorted, distinct), with cached transitions.
#[derive(Debug)]
pub struct LockSets {
    sets: Vec<Vec<u32>>,
    ids: FxHashMap<Vec<u32>, SetId>,
    step: FxHashMap<(SetId, u32, bool), SetId>,
}

impl Default for LockSets {
    fn default() -> Self {
        let mut s = LockSets {
            sets: Vec::new(),
            ids: FxHashMap::default(),
            step: FxHashMap::default(),
        };
        s.intern(Vec::new());
        s
    }
}

impl LockSets {
    /// The empty set.
    pub const EMPTY: SetId = 0;

    fn intern(&mut self, v: Vec<u32>) -> SetId {
        if let Some(&id) = self.ids.get(&v) {
            return id;
        }
        let id = self.sets.len() as SetId;
        self.sets.push(v.clone());
        self.ids.insert(v, id);
        id
    }

    /// The locks of set `s`, sorted.
    pub fn get(&self, s: SetId) -> &[u32] {
        &self.sets[s as usize]
    }

    /// `s` with lock `l` added (`add`) or removed.
    pub fn with(&mut self, s: SetId, l: u32, add: bool) -> SetId {
        if let Some(&n) = self.step.get(&(s, l, add)) {
            return n;
        }
        let mut v = self.sets[s as usize].clone();
        match (v.binary_search(&l), add) {
            (Err(i), true) => v.insert(i, l),
            (Ok(i), false) => {
                v.remove(i);
            }
            _ => {}
        }
        let n = self.intern(v);
        self.step.insert((s, l, add), n);
        n
    }
}

/// A lock a thread holds: which, and where it was acquired.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Held {
    /// The lock.
    pub lock: u32,
    /// The acquire.
    pub site: Site,
    /// The set of locks the thread held before.
    pub before: SetId,
}

/// Fork/join vector time: per thread, how many of its events are known to
/// precede (in every correct reordering, through thread order, forks and
/// joins). The own entry is not kept up to date; see [`FjClock::before`].
pub type FjClock = Vec<u32>;

/// Whether event (`t`, `pos`) precedes every event whose clock is `c`.
pub fn fj_precedes(t: ThreadId, pos: u32, c: &FjClock) -> bool {
    c.get(t as usize).is_some_and(|&n| n > pos)
}

/// An abstract acquire: the acquires (and blocked requests) of one thread of
/// one lock while holding one set of locks. Its instances follow one another
/// in thread order.
#[derive(Clone, Debug)]
pub struct Class {
    /// The thread.
    pub thread: ThreadId,
    /// The requested lock.
    pub lock: u32,
    /// The locks the thread holds at each instance.
    pub set: SetId,
    /// The first instance.
    pub first: Site,
    /// What the thread held at the first instance, innermost last.
    pub first_held: Vec<Held>,
    /// Fork/join time just before the first instance.
    pub first_clock: FjClock,
    /// The set of locks held after an instance that is an acquire.
    pub after: SetId,
}

/// A join: who joined whom, where, holding what.
#[derive(Clone, Debug)]
pub struct JoinInfo {
    /// The join event (its thread is the joining thread).
    pub site: Site,
    /// Its position in the joining thread.
    pub pos: u32,
    /// The joined thread.
    pub child: ThreadId,
    /// The locks the joining thread holds at the join.
    pub set: SetId,
    /// The same, with where each was acquired.
    pub held: Vec<Held>,
    /// Fork/join time just before the join.
    pub clock: FjClock,
}

/// An edge `from -> to` of the lock graph: class `class` requests `to`
/// while `from` is held by its thread (`chain` empty) or by the thread of
/// `chain[0]`, which waits to join through `chain` down to the class's
/// thread.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Label {
    /// The held lock.
    pub from: u32,
    /// The requested lock.
    pub to: u32,
    /// The abstract acquire requesting `to`.
    pub class: ClassId,
    /// The joins the holder (first) and the threads below it wait in.
    pub chain: Vec<JoinId>,
}

/// Per-thread state.
#[derive(Clone, Debug, Default)]
pub struct ThreadState {
    /// Events of the thread so far.
    pub len: u32,
    /// Locks held, innermost last.
    pub held: Vec<Held>,
    /// The set of `held`.
    pub set: SetId,
    /// Fork/join time.
    pub clock: FjClock,
    /// Its abstract acquires.
    pub classes: Vec<ClassId>,
    /// The joins it performed.
    pub joins: Vec<JoinId>,
    /// Its blocked request (`req`): lock and site.
    pub blocked: Option<(u32, Site)>,
}

/// The streamed lock graph.
#[derive(Debug, Default)]
pub struct Graph {
    /// Threads by id.
    pub threads: Vec<ThreadState>,
    /// Per lock, the thread holding it now.
    pub holder: Vec<Option<ThreadId>>,
    /// Interned lock sets.
    pub sets: LockSets,
    /// Abstract acquires.
    pub classes: Vec<Class>,
    /// Per abstract acquire, the position of its last instance in its thread.
    pub last_pos: Vec<u32>,
    class_ids: FxHashMap<(ThreadId, u32, SetId), ClassId>,
    /// Joins.
    pub joins: Vec<JoinInfo>,
    /// Edges.
    pub labels: Vec<Label>,
    label_ids: FxHashMap<Label, LabelId>,
    /// Per lock, the edges leaving it.
    pub out: Vec<Vec<LabelId>>,
    /// Per lock, the locks with an edge to it (each once).
    pub into: Vec<Vec<u32>>,
    lock_pairs: rustc_hash::FxHashSet<(u32, u32)>,
}

impl Graph {
    /// The state of thread `t` (created on first use).
    pub fn thread(&mut self, t: ThreadId) -> &mut ThreadState {
        let i = t as usize;
        if self.threads.len() <= i {
            self.threads.resize_with(i + 1, ThreadState::default);
        }
        &mut self.threads[i]
    }

    fn clock_before(&mut self, t: ThreadId) -> FjClock {
        let ts = self.thread(t);
        let mut c = ts.clock.clone();
        if c.len() <= t as usize {
            c.resize(t as usize + 1, 0);
        }
        c[t as usize] = ts.len;
        c
    }

    /// Add edge `label`, returning its id when it is new.
    fn add_label(&mut self, label: Label) -> Option<LabelId> {
        if self.label_ids.contains_key(&label) {
            return None;
        }
        let id = self.labels.len() as LabelId;
        let from = label.from as usize;
        if self.out.len() <= from {
            self.out.resize_with(from + 1, Vec::new);
        }
        self.out[from].push(id);
        if self.lock_pairs.insert((label.from, label.to)) {
            let to = label.to as usize;
            if self.into.len() <= to {
                self.into.resize_with(to + 1, Vec::new);
            }
            self.into[to].push(label.from);
        }
        self.labels.push(label.clone());
        self.label_ids.insert(label, id);
        Some(id)
    }

    /// A request of `lock` by thread `t` (an acquire taking it, or a blocked
    /// request). Returns its class and the edges that are new.
    pub fn request(&mut self, t: ThreadId, lock: u32, site: Site) -> (ClassId, Vec<LabelId>) {
        let set = self.thread(t).set;
        let pos = self.threads[t as usize].len;
        let mut new = Vec::new();
        let class = match self.class_ids.get(&(t, lock, set)) {
            Some(&c) => {
                self.last_pos[c as usize] = pos;
                c
            }
            None => {
                let id = self.classes.len() as ClassId;
                let first_clock = self.clock_before(t);
                let after = self.sets.with(set, lock, true);
                let ts = &mut self.threads[t as usize];
                ts.classes.push(id);
                self.classes.push(Class {
                    thread: t,
                    lock,
                    set,
                    first: site,
                    first_held: ts.held.clone(),
                    first_clock,
                    after,
                });
                self.last_pos.push(pos);
                self.class_ids.insert((t, lock, set), id);
                for g in self.sets.get(set).to_vec() {
                    new.extend(self.add_label(Label {
                        from: g,
                        to: lock,
                        class: id,
                        chain: Vec::new(),
                    }));
                }
                id
            }
        };
        (class, new)
    }

    /// Thread `t` took `lock` (not re-entrantly) at `site`, an instance of
    /// `class`.
    pub fn acquired(&mut self, t: ThreadId, lock: u32, site: Site, class: ClassId) {
        let after = self.classes[class as usize].after;
        let ts = &mut self.threads[t as usize];
        let before = ts.set;
        ts.held.push(Held { lock, site, before });
        ts.set = after;
        if self.holder.len() <= lock as usize {
            self.holder.resize(lock as usize + 1, None);
        }
        self.holder[lock as usize] = Some(t);
    }

    /// Thread `t` released `lock` (not re-entrantly).
    pub fn released(&mut self, t: ThreadId, lock: u32) {
        let ts = self.thread(t);
        let set = match ts.held.last() {
            // The innermost lock: back to the set before it.
            Some(h) if h.lock == lock => h.before,
            _ => {
                let set = ts.set;
                self.sets.with(set, lock, false)
            }
        };
        let ts = &mut self.threads[t as usize];
        if let Some(i) = ts.held.iter().rposition(|h| h.lock == lock) {
            ts.held.remove(i);
            // Out of nesting: the sets before the later ones lose the lock.
            for j in i..ts.held.len() {
                let b = ts.held[j].before;
                ts.held[j].before = self.sets.with(b, lock, false);
            }
        }
        ts.set = set;
        if let Some(h) = self.holder.get_mut(lock as usize) {
            *h = None;
        }
    }

    /// Thread `t` forked `child`.
    pub fn forked(&mut self, t: ThreadId, child: ThreadId) {
        let mut c = self.clock_before(t);
        c[t as usize] += 1;
        self.thread(child).clock = c;
    }

    /// Thread `t` joined `child` at `site`: returns the new edges, with
    /// `edges`, from the locks `t` holds to every abstract acquire of `child`
    /// and of the threads `child` joined, transitively.
    pub fn joined(
        &mut self,
        t: ThreadId,
        child: ThreadId,
        site: Site,
        edges: bool,
    ) -> Vec<LabelId> {
        let clock = self.clock_before(t);
        let child_len = self.thread(child).len;
        let mut child_clock = self.threads[child as usize].clock.clone();
        if child_clock.len() <= child as usize {
            child_clock.resize(child as usize + 1, 0);
        }
        child_clock[child as usize] = child_len;
        let ts = &mut self.threads[t as usize];
        let pos = ts.len;
        if ts.clock.len() < child_clock.len() {
            ts.clock.resize(child_clock.len(), 0);
        }
        for (a, b) in ts.clock.iter_mut().zip(&child_clock) {
            *a = (*a).max(*b);
        }
        let id = self.joins.len() as JoinId;
        let (set, held) = (ts.set, ts.held.clone());
        ts.joins.push(id);
        self.joins.push(JoinInfo {
            site,
            pos,
            child,
            set,
            held,
            clock,
        });
        let mut new = Vec::new();
        if set == LockSets::EMPTY || !edges {
            return new;
        }
        // Every thread below the join, with the chain of joins down to it.
        let mut todo: Vec<(ThreadId, Vec<JoinId>)> = vec![(child, vec![id])];
        while let Some((x, chain)) = todo.pop() {
            let xs = &self.threads[x as usize];
            for &c in &xs.classes.clone() {
                let class = &self.classes[c as usize];
                let (to, cset) = (class.lock, class.set);
                for &g in &self.sets.get(set).to_vec() {
                    if !self.sets.get(cset).contains(&g) {
                        new.extend(self.add_label(Label {
                            from: g,
                            to,
                            class: c,
                            chain: chain.clone(),
                        }));
                    }
                }
            }
            if chain.len() < MAX_CHAIN {
                for &j in &self.threads[x as usize].joins {
                    let mut next = chain.clone();
                    next.push(j);
                    todo.push((self.joins[j as usize].child, next));
                }
            }
        }
        new
    }

    /// Per lock, whether it reaches lock `target` through edges (`target`
    /// itself does).
    pub fn reaching(&self, target: u32) -> Vec<bool> {
        let n = self.out.len().max(self.into.len()).max(target as usize + 1);
        let mut seen = vec![false; n];
        seen[target as usize] = true;
        let mut todo = vec![target];
        while let Some(l) = todo.pop() {
            for &p in self.into.get(l as usize).map_or(&[][..], |v| &v[..]) {
                if !seen[p as usize] {
                    seen[p as usize] = true;
                    todo.push(p);
                }
            }
        }
        seen
    }

    /// The threads and lock sets a label puts in a deadlock: the requesting
    /// thread with its set, then each joining thread with its set at the join.
    pub fn label_parts(&self, l: LabelId) -> impl Iterator<Item = (ThreadId, SetId)> + '_ {
        let label = &self.labels[l as usize];
        let class = &self.classes[label.class as usize];
        std::iter::once((class.thread, class.set)).chain(label.chain.iter().map(|&j| {
            let ji = &self.joins[j as usize];
            (ji.site.thread, ji.set)
        }))
    }
}
