//! Vector clocks. A clock of threads `0..SMALL` only keeps its entries
//! inline: a copy is a memcpy and a join a vector maximum, with no reference
//! counts or allocation (most traces have a handful of threads, and their
//! detectors copy and join clocks at every synchronization event). A clock
//! that learns of a later thread becomes a [`Store`] of times: the persistent
//! radix tree of 16-entry blocks shared copy-on-write (cloning a clock is
//! O(1), a write copies only the shared part of the path to the written
//! entry). A join adopts every subtree the target lacks by reference and
//! skips subtrees both clocks share, so clocks that are passed along
//! (release -> acquire, fork, join) share everything but the paths where
//! they differ.

use std::sync::Arc;

use super::store::{BITS, FAN, Node, Store};

/// Threads whose entries a clock keeps inline (ids `0..SMALL`).
const SMALL: usize = 8;

/// A vector clock indexed by thread id; missing entries are 0. See the
/// [module conventions](super).
#[derive(Clone, Debug)]
pub struct VectorClock {
    r: Repr,
}

#[derive(Clone, Debug)]
enum Repr {
    /// Entries of threads `0..SMALL`; every other entry is 0.
    Small([u32; SMALL]),
    /// Any thread ids, as a persistent tree.
    Tree(Store<u32>),
}

impl Default for VectorClock {
    fn default() -> Self {
        VectorClock {
            r: Repr::Small([0; SMALL]),
        }
    }
}

impl VectorClock {
    /// The zero clock (`n` is a capacity hint only; kept for callers that
    /// size clocks up front).
    pub fn new(_n: usize) -> Self {
        VectorClock::default()
    }

    /// Entry of thread `t`.
    #[inline]
    pub fn get(&self, t: u32) -> u32 {
        match &self.r {
            Repr::Small(a) => a.get(t as usize).copied().unwrap_or(0),
            Repr::Tree(s) => s.get(t),
        }
    }

    /// The entry of thread `t`, writable (copying the shared part of its
    /// path; a small clock becomes a tree when `t` is past its entries).
    #[inline]
    fn entry(&mut self, t: u32) -> &mut u32 {
        if let Repr::Small(a) = &self.r
            && t as usize >= SMALL
        {
            self.r = Repr::Tree(to_store(a));
        }
        match &mut self.r {
            Repr::Small(a) => &mut a[t as usize],
            Repr::Tree(s) => s.get_mut(t),
        }
    }

    /// Set the entry of thread `t` (copying the shared part of its path).
    #[inline]
    pub fn set(&mut self, t: u32, v: u32) {
        *self.entry(t) = v;
    }

    /// Raise the entry of thread `t` to `v` if it is lower.
    #[inline]
    pub(crate) fn raise(&mut self, t: u32, v: u32) {
        if self.get(t) < v {
            self.set(t, v);
        }
    }

    /// Increment the entry of thread `t`.
    #[inline]
    pub fn tick(&mut self, t: u32) {
        *self.entry(t) += 1;
    }

    /// Pointwise maximum with `other`. Small clocks take the maximum of
    /// each entry; trees share the blocks only `other` has, skip blocks both
    /// share, and copy a shared block only when `other` raises one of its
    /// entries.
    pub fn join(&mut self, other: &VectorClock) {
        match (&mut self.r, &other.r) {
            (Repr::Small(a), Repr::Small(b)) => {
                for (a, &b) in a.iter_mut().zip(b) {
                    *a = (*a).max(b);
                }
            }
            (Repr::Tree(s), Repr::Small(b)) => {
                for (t, &v) in b.iter().enumerate() {
                    if v > s.get(t as u32) {
                        *s.get_mut(t as u32) = v;
                    }
                }
            }
            (Repr::Small(a), Repr::Tree(o)) => {
                let mut s = o.clone();
                for (t, &v) in a.iter().enumerate() {
                    if v > s.get(t as u32) {
                        *s.get_mut(t as u32) = v;
                    }
                }
                self.r = Repr::Tree(s);
            }
            (Repr::Tree(s), Repr::Tree(o)) => join_store(s, o),
        }
    }

    /// Pointwise `self <= other`.
    #[cfg(test)]
    fn leq(&self, other: &VectorClock) -> bool {
        self.entries().all(|(t, v)| v <= other.get(t))
    }

    /// The non-zero entries `(thread, time)`, by thread id.
    pub fn entries(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        let (small, tree) = match &self.r {
            Repr::Small(a) => (Some(a), None),
            Repr::Tree(s) => (None, Some(s)),
        };
        let small = small
            .into_iter()
            .flat_map(|a| a.iter().enumerate().map(|(t, &v)| (t as u32, v)));
        let tree = tree
            .into_iter()
            .flat_map(|s| s.iter().map(|(t, &v)| (t, v)));
        small.chain(tree).filter(|e| e.1 != 0)
    }

    /// Write the entries of threads `0..row.len()` into `row` (a row of a
    /// flat matrix; entries of later threads are left out).
    pub(crate) fn write_dense(&self, row: &mut [u32]) {
        row.fill(0);
        for (t, c) in self.entries() {
            if let Some(x) = row.get_mut(t as usize) {
                *x = c;
            }
        }
    }

    /// Call `f(t, self[t], other[t])` for every thread `t` whose entries
    /// differ, by thread id. Subtrees two trees share are skipped, so the
    /// cost follows the blocks that differ (a counter carried from one clock
    /// to the next pays for what changed, not for every thread).
    pub fn diff(&self, other: &VectorClock, mut f: impl FnMut(u32, u32, u32)) {
        match (&self.r, &other.r) {
            (Repr::Tree(a), Repr::Tree(b)) => {
                let level = a.height.max(b.height);
                diff_nodes(
                    (a.root.as_ref(), a.height),
                    (b.root.as_ref(), b.height),
                    level,
                    0,
                    &mut f,
                );
            }
            (Repr::Small(a), Repr::Small(b)) => {
                for (t, (&x, &y)) in a.iter().zip(b).enumerate() {
                    if x != y {
                        f(t as u32, x, y);
                    }
                }
            }
            _ => {
                // A small clock has few entries: merge the two lists.
                let (mut x, mut y) = (self.entries().peekable(), other.entries().peekable());
                loop {
                    match (x.peek().copied(), y.peek().copied()) {
                        (None, None) => return,
                        (Some((t, a)), Some((u, b))) if t == u => {
                            if a != b {
                                f(t, a, b);
                            }
                            x.next();
                            y.next();
                        }
                        (Some((t, a)), Some((u, _))) if t < u => {
                            f(t, a, 0);
                            x.next();
                        }
                        (Some((t, a)), None) => {
                            f(t, a, 0);
                            x.next();
                        }
                        (_, Some((u, b))) => {
                            f(u, 0, b);
                            y.next();
                        }
                    }
                }
            }
        }
    }

    /// Whether every entry of `self` is at least `other`'s (so joining
    /// `other` would change nothing); costs what [`VectorClock::diff`] does.
    pub(crate) fn covers(&self, other: &VectorClock) -> bool {
        let mut all = true;
        self.diff(other, |_, mine, theirs| all &= mine >= theirs);
        all
    }

    /// Whether `self` and `other` are the same clock, in O(1): the same
    /// shared tree, or small clocks with equal entries (equal trees built
    /// separately are not).
    pub(crate) fn ptr_eq(&self, other: &VectorClock) -> bool {
        match (&self.r, &other.r) {
            (Repr::Small(a), Repr::Small(b)) => a == b,
            (Repr::Tree(a), Repr::Tree(b)) => match (&a.root, &b.root) {
                (Some(x), Some(y)) => a.height == b.height && Arc::ptr_eq(x, y),
                (None, None) => true,
                _ => false,
            },
            _ => false,
        }
    }
}

/// The entries of a small clock as a tree.
fn to_store(a: &[u32; SMALL]) -> Store<u32> {
    let mut s = Store::new(0);
    for (t, &v) in a.iter().enumerate() {
        if v != 0 {
            *s.get_mut(t as u32) = v;
        }
    }
    s
}

/// `s ⊔= o` on trees: share what only `o` has, skip what both share.
fn join_store(s: &mut Store<u32>, other: &Store<u32>) {
    let Some(o) = &other.root else {
        return;
    };
    s.grow(other.height);
    // The slot of `s` covering the ids `other` covers.
    let mut level = s.height;
    let mut n = &mut s.root;
    while level > other.height {
        let x = n.get_or_insert_with(|| Arc::new(Node::empty(level, 0)));
        if let Node::Inner(c) = &**x
            && c[0].as_ref().is_some_and(|y| Arc::ptr_eq(y, o))
        {
            return;
        }
        let Node::Inner(c) = Arc::make_mut(x) else {
            unreachable!("inner levels hold inner nodes")
        };
        n = &mut c[0];
        level -= 1;
    }
    match n {
        None => *n = Some(o.clone()),
        Some(x) => join_node(x, o),
    }
}

impl PartialEq for VectorClock {
    fn eq(&self, other: &Self) -> bool {
        self.ptr_eq(other) || self.entries().eq(other.entries())
    }
}

impl Eq for VectorClock {}

impl std::hash::Hash for VectorClock {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        for e in self.entries() {
            e.hash(state);
        }
    }
}

impl FromIterator<(u32, u32)> for VectorClock {
    fn from_iter<I: IntoIterator<Item = (u32, u32)>>(iter: I) -> Self {
        let mut c = VectorClock::default();
        for (t, v) in iter {
            if v != 0 {
                c.set(t, v);
            }
        }
        c
    }
}

type At<'a> = (Option<&'a Arc<Node<u32>>>, u32);

/// Child `i` of `n` seen at `level`: a node below `level` is child 0 of the
/// levels above it (a lower root covers the first ids).
fn child_at(n: At<'_>, level: u32, i: usize) -> At<'_> {
    match n {
        (Some(x), l) if l == level => match &**x {
            Node::Inner(c) => (c[i].as_ref(), level - 1),
            Node::Leaf(_) => unreachable!("inner levels hold inner nodes"),
        },
        (x, l) if l < level => (if i == 0 { x } else { None }, l),
        _ => (None, level - 1),
    }
}

/// [`VectorClock::diff`] over the subtrees `a` and `b` covering ids from
/// `base` at `level`.
fn diff_nodes(a: At<'_>, b: At<'_>, level: u32, base: u32, f: &mut impl FnMut(u32, u32, u32)) {
    match (a.0, b.0) {
        (None, None) => return,
        (Some(x), Some(y)) if a.1 == b.1 && Arc::ptr_eq(x, y) => return,
        _ => {}
    }
    if level == 0 {
        let entries = |n: Option<&Arc<Node<u32>>>| match n.map(|x| &**x) {
            Some(Node::Leaf(v)) => *v,
            _ => [0; FAN],
        };
        let (x, y) = (entries(a.0), entries(b.0));
        for i in 0..FAN {
            if x[i] != y[i] {
                f(base + i as u32, x[i], y[i]);
            }
        }
        return;
    }
    for i in 0..FAN {
        let b2 = base + ((i as u64) << (BITS * level)) as u32;
        diff_nodes(
            child_at(a, level, i),
            child_at(b, level, i),
            level - 1,
            b2,
            f,
        );
    }
}

/// Join node `o` into `s` (same level), copying `s` only where it changes.
fn join_node(s: &mut Arc<Node<u32>>, o: &Arc<Node<u32>>) {
    if Arc::ptr_eq(s, o) {
        return;
    }
    let Some(n) = Arc::get_mut(s) else {
        if let Some(n) = joined(s, o) {
            *s = n;
        }
        return;
    };
    match (n, &**o) {
        (Node::Leaf(a), Node::Leaf(b)) => {
            for (a, &b) in a.iter_mut().zip(b) {
                *a = (*a).max(b);
            }
        }
        (Node::Inner(a), Node::Inner(b)) => {
            for (a, b) in a.iter_mut().zip(b) {
                match (a, b) {
                    (_, None) => {}
                    (a @ None, Some(b)) => *a = Some(b.clone()),
                    (Some(a), Some(b)) => join_node(a, b),
                }
            }
        }
        _ => unreachable!("nodes of one level have one kind"),
    }
}

/// The join of a shared node `s` with `o`, as a new node sharing every
/// unchanged child, or None when `o` adds nothing (one visit per node, so the
/// cost follows the part of `o` that `s` does not share).
fn joined(s: &Arc<Node<u32>>, o: &Arc<Node<u32>>) -> Option<Arc<Node<u32>>> {
    if Arc::ptr_eq(s, o) {
        return None;
    }
    match (&**s, &**o) {
        (Node::Leaf(a), Node::Leaf(b)) => {
            if b.iter().zip(a).all(|(b, a)| b <= a) {
                return None;
            }
            if a.iter().zip(b).all(|(a, b)| a <= b) {
                // The join is `o`'s block: share it rather than copy it.
                return Some(o.clone());
            }
            let mut c = *a;
            for (c, &b) in c.iter_mut().zip(b) {
                *c = (*c).max(b);
            }
            Some(Arc::new(Node::Leaf(c)))
        }
        (Node::Inner(a), Node::Inner(b)) => {
            let mut out: Option<[Option<Arc<Node<u32>>>; FAN]> = None;
            for i in 0..FAN {
                let new = match (&a[i], &b[i]) {
                    (_, None) => None,
                    (None, Some(y)) => Some(y.clone()),
                    (Some(x), Some(y)) => joined(x, y),
                };
                if let Some(n) = new {
                    out.get_or_insert_with(|| a.clone())[i] = Some(n);
                }
            }
            let c = out?;
            let same = c.iter().zip(b).all(|(x, y)| match (x, y) {
                (None, None) => true,
                (Some(x), Some(y)) => Arc::ptr_eq(x, y),
                _ => false,
            });
            // When every child became `o`'s, the join is `o`'s node: share it.
            Some(if same {
                o.clone()
            } else {
                Arc::new(Node::Inner(c))
            })
        }
        _ => unreachable!("nodes of one level have one kind"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::generate::Rng;

    fn dense(c: &VectorClock, n: usize) -> Vec<u32> {
        (0..n as u32).map(|t| c.get(t)).collect()
    }

    /// Random sets, joins, copies and ticks agree with plain dense vectors,
    /// including ids that force the tree to grow and clocks that share
    /// blocks, and so do comparisons (`leq`, `covers`) and `diff`.
    #[test]
    fn matches_dense_vectors() {
        let mut rng = Rng::new(7);
        for round in 0..300 {
            let n = [3usize, 17, 40, 300, 5000][round % 5];
            let k = 6;
            let mut clocks = vec![VectorClock::default(); k];
            let mut model = vec![vec![0u32; n]; k];
            for _ in 0..200 {
                let i = rng.below(k as u64) as usize;
                let j = rng.below(k as u64) as usize;
                let t = rng.below(n as u64) as u32;
                match rng.below(4) {
                    0 => {
                        let v = rng.below(50) as u32;
                        clocks[i].set(t, v);
                        model[i][t as usize] = v;
                    }
                    1 => {
                        clocks[i].tick(t);
                        model[i][t as usize] += 1;
                    }
                    2 => {
                        let o = clocks[j].clone();
                        clocks[i].join(&o);
                        let src = model[j].clone();
                        for (a, b) in model[i].iter_mut().zip(src) {
                            *a = (*a).max(b);
                        }
                    }
                    _ => {
                        clocks[i] = clocks[j].clone();
                        model[i] = model[j].clone();
                    }
                }
                assert_eq!(dense(&clocks[i], n), model[i]);
                let below = (0..n).all(|x| model[i][x] <= model[j][x]);
                assert_eq!(clocks[i].leq(&clocks[j]), below);
                assert_eq!(clocks[j].covers(&clocks[i]), below);
                let nz: Vec<_> = (0..n as u32)
                    .filter(|&x| model[i][x as usize] != 0)
                    .map(|x| (x, model[i][x as usize]))
                    .collect();
                assert_eq!(clocks[i].entries().collect::<Vec<_>>(), nz);
                let mut d = Vec::new();
                clocks[i].diff(&clocks[j], |t, a, b| d.push((t, a, b)));
                let want: Vec<_> = (0..n as u32)
                    .map(|x| (x, model[i][x as usize], model[j][x as usize]))
                    .filter(|&(_, a, b)| a != b)
                    .collect();
                assert_eq!(d, want);
            }
            for (c, m) in clocks.iter().zip(&model) {
                assert_eq!(&dense(c, n), m);
            }
        }
    }

    /// The size the module docs give, and a small clock turning into a tree
    /// only when a later thread appears.
    #[test]
    fn small_until_thread_eight() {
        assert_eq!(std::mem::size_of::<VectorClock>(), 40);
        let mut c: VectorClock = [(0, 3), (7, 2)].into_iter().collect();
        assert!(matches!(c.r, Repr::Small(_)));
        let mut t = VectorClock::default();
        t.set(8, 5);
        assert!(matches!(t.r, Repr::Tree(_)));
        c.join(&t);
        assert!(matches!(c.r, Repr::Tree(_)));
        assert_eq!(c.entries().collect::<Vec<_>>(), [(0, 3), (7, 2), (8, 5)]);
    }

    /// A lock passed along a chain of threads shares all but one path per
    /// thread, so a join of a clock into a fresh one adopts it by reference.
    #[test]
    fn joins_share_blocks() {
        let mut lock = VectorClock::default();
        let mut threads = Vec::new();
        for t in 0..1000u32 {
            let mut c = VectorClock::default();
            c.set(t, 1);
            c.join(&lock);
            lock = c.clone();
            assert!(lock.ptr_eq(&c));
            threads.push(c);
        }
        assert_eq!(lock.entries().count(), 1000);
        assert_eq!(threads[10].entries().count(), 11);
        let root = |c: &VectorClock| match &c.r {
            Repr::Tree(s) => s.root.clone(),
            Repr::Small(_) => None,
        };
        let Some(Node::Inner(a)) = root(&threads[999]).as_deref().cloned() else {
            panic!("three levels")
        };
        let Some(Node::Inner(b)) = root(&threads[998]).as_deref().cloned() else {
            panic!("three levels")
        };
        // The first block-of-256 subtree is shared between the two threads.
        assert!(Arc::ptr_eq(a[0].as_ref().unwrap(), b[0].as_ref().unwrap()));
    }
}
