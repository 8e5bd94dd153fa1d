//! Vector clocks: a [`Store`] of times, the persistent radix tree of 16-entry
//! blocks shared copy-on-write (cloning a clock is O(1), a write copies only
//! the shared part of the path to the written entry). A join adopts every subtree the target lacks by reference and skips
//! subtrees both clocks share, so clocks that are passed along (release ->
//! acquire, fork, join) share everything but the paths where they differ.

use std::sync::Arc;

use super::store::{BITS, FAN, Node, Store};

/// A vector clock indexed by thread id; missing entries are 0. See the
/// [module conventions](super).
#[derive(Clone, Debug)]
pub struct VectorClock {
    s: Store<u32>,
}

impl Default for VectorClock {
    fn default() -> Self {
        VectorClock { s: Store::new(0) }
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
        self.s.get(t)
    }

    /// Set the entry of thread `t` (copying the shared part of its path).
    #[inline]
    pub fn set(&mut self, t: u32, v: u32) {
        *self.s.get_mut(t) = v;
    }

    /// Increment the entry of thread `t`.
    #[inline]
    pub fn tick(&mut self, t: u32) {
        *self.s.get_mut(t) += 1;
    }

    /// Pointwise maximum with `other`. Blocks only `other` has are shared,
    /// blocks both share are skipped, and a shared block is copied only when
    /// `other` raises one of its entries.
    pub fn join(&mut self, other: &VectorClock) {
        let Some(o) = &other.s.root else {
            return;
        };
        self.s.grow(other.s.height);
        // The slot of `self` covering the ids `other` covers.
        let mut level = self.s.height;
        let mut s = &mut self.s.root;
        while level > other.s.height {
            let n = s.get_or_insert_with(|| Arc::new(Node::empty(level, 0)));
            if let Node::Inner(c) = &**n
                && c[0].as_ref().is_some_and(|x| Arc::ptr_eq(x, o))
            {
                return;
            }
            let Node::Inner(c) = Arc::make_mut(n) else {
                unreachable!("inner levels hold inner nodes")
            };
            s = &mut c[0];
            level -= 1;
        }
        match s {
            None => *s = Some(o.clone()),
            Some(n) => join_node(n, o),
        }
    }

    /// Pointwise `self <= other`.
    pub fn leq(&self, other: &VectorClock) -> bool {
        self.entries().all(|(t, v)| v <= other.get(t))
    }

    /// The non-zero entries `(thread, time)`, by thread id.
    pub fn entries(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.s.iter().filter(|e| *e.1 != 0).map(|(t, &v)| (t, v))
    }

    /// The entries of threads `0..n` as a dense slice (for flat matrices).
    pub fn to_dense(&self, n: usize) -> Vec<u32> {
        let mut v = vec![0; n];
        self.write_dense(&mut v);
        v
    }

    /// Write the entries of threads `0..row.len()` into `row` (a row of a
    /// flat matrix; entries of later threads are left out).
    pub fn write_dense(&self, row: &mut [u32]) {
        row.fill(0);
        for (t, c) in self.entries() {
            if let Some(x) = row.get_mut(t as usize) {
                *x = c;
            }
        }
    }

    /// Call `f(t, self[t], other[t])` for every thread `t` whose entries
    /// differ, by thread id. Subtrees both clocks share are skipped, so the
    /// cost follows the blocks that differ (a counter carried from one clock
    /// to the next pays for what changed, not for every thread).
    pub fn diff(&self, other: &VectorClock, mut f: impl FnMut(u32, u32, u32)) {
        let level = self.s.height.max(other.s.height);
        diff_nodes(
            (self.s.root.as_ref(), self.s.height),
            (other.s.root.as_ref(), other.s.height),
            level,
            0,
            &mut f,
        );
    }

    /// Whether `self` and `other` are the same shared clock (O(1); equal
    /// clocks built separately are not).
    pub fn ptr_eq(&self, other: &VectorClock) -> bool {
        match (&self.s.root, &other.s.root) {
            (Some(a), Some(b)) => self.s.height == other.s.height && Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
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
    use crate::generate::Rng;

    fn dense(c: &VectorClock, n: usize) -> Vec<u32> {
        (0..n as u32).map(|t| c.get(t)).collect()
    }

    /// Random sets, joins, copies and ticks agree with plain dense vectors,
    /// including ids that force the tree to grow and clocks that share blocks.
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
                assert_eq!(
                    clocks[i].leq(&clocks[j]),
                    (0..n).all(|x| model[i][x] <= model[j][x])
                );
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
        let Some(Node::Inner(a)) = threads[999].s.root.as_deref() else {
            panic!("three levels")
        };
        let Some(Node::Inner(b)) = threads[998].s.root.as_deref() else {
            panic!("three levels")
        };
        // The first block-of-256 subtree is shared between the two threads.
        assert!(Arc::ptr_eq(a[0].as_ref().unwrap(), b[0].as_ref().unwrap()));
    }
}
