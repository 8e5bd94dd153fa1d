//! Tree clocks (Mathur, Pavlogiannis, Tunç & Viswanathan, "A Tree Clock Data
//! Structure for Causal Orderings in Concurrent Executions", ASPLOS 2022).
//!
//! A tree clock holds the same entries as a vector clock, arranged in a tree
//! that records *how* they were learned: the root is the clock's owner (a
//! thread, or for a lock the thread that released it last), and node `v`
//! under node `u` with attachment time `aclk` means "u learned v's entry
//! `clk` when u's own time was `aclk`". Children are kept in decreasing
//! `aclk` order. Because HB knowledge is transitively closed, a join or copy
//! from tree `T'` can skip the subtree of every node whose entry the target
//! already knows, and once a child is known and attached no later than the
//! target's knowledge of its parent, every later (older) child too: both
//! operations cost time proportional to the entries that change
//! (`getUpdatedNodesJoin` / `getUpdatedNodesCopy` of the paper, Algorithms 2
//! and 3), here with explicit stacks so deep trees cannot overflow the call
//! stack.
//!
//! Node records are kept by thread id in a persistent array of 16-record
//! blocks shared copy-on-write ([`Store`], the layout of [`super::VectorClock`]):
//! a copy (a release into a lock's clock) is O(1) and shares every node, a
//! write copies only the shared part of one path, and a clock that knows only
//! its owner takes over the whole tree of the clock it joins by sharing it
//! (the tree it gets is the one the paper's join builds). So memory follows
//! the nodes that differ between clocks, not threads x clocks: 100,000
//! threads passing one lock along cost a few paths of blocks each.
//!
//! Valid only where every clock involved is transitively closed (HB: thread,
//! lock and fork/join clocks). Entries learned from elsewhere (a volatile
//! variable's clock, which is a join of several threads' clocks) go in
//! through [`TreeClock::join_entries`], which attaches each raised entry to
//! the root, keeping its old subtree (whose entries are still known to be
//! below what the new entry implies).

use super::store::Store;

const NONE: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct Node {
    clk: u32,
    aclk: u32,
    parent: u32,
    /// First child (largest `aclk`).
    head: u32,
    next: u32,
    prev: u32,
}

const ABSENT: Node = Node {
    clk: 0,
    aclk: 0,
    parent: NONE,
    head: NONE,
    next: NONE,
    prev: NONE,
};

/// A tree clock. See the [module docs](self) and the [conventions](super).
#[derive(Clone, Debug)]
pub struct TreeClock {
    nodes: Store<Node>,
    root: u32,
    /// Scratch stacks of join and copy (kept to avoid reallocating).
    stack: Vec<u32>,
    frames: Vec<(u32, u32)>,
}

impl Default for TreeClock {
    fn default() -> Self {
        TreeClock {
            nodes: Store::new(ABSENT),
            root: NONE,
            stack: Vec::new(),
            frames: Vec::new(),
        }
    }
}

impl TreeClock {
    /// The clock of thread `t` with own entry `clk`.
    pub fn new(t: u32, clk: u32) -> TreeClock {
        let mut c = TreeClock::default();
        c.slot(t).clk = clk;
        c.root = t;
        c
    }

    #[inline]
    fn slot(&mut self, t: u32) -> &mut Node {
        self.nodes.get_mut(t)
    }

    #[inline]
    fn node(&self, t: u32) -> Node {
        self.nodes.get(t)
    }

    /// Entry of thread `t`.
    #[inline]
    pub fn get(&self, t: u32) -> u32 {
        self.nodes.get(t).clk
    }

    /// The root's thread (the owner), if any.
    pub fn root(&self) -> Option<u32> {
        (self.root != NONE).then_some(self.root)
    }

    /// Increment the root's entry (the owner's own time).
    #[inline]
    pub(crate) fn tick_root(&mut self) {
        let r = self.root;
        self.slot(r).clk += 1;
    }

    /// The non-zero entries `(thread, time)`, by thread id.
    pub fn entries(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.nodes
            .iter()
            .filter(|e| e.1.clk != 0)
            .map(|(t, n)| (t, n.clk))
    }

    #[inline]
    fn in_tree(&self, t: u32) -> bool {
        t == self.root || self.node(t).parent != NONE
    }

    /// Unlink `t` (with its subtree) from its parent.
    fn detach(&mut self, t: u32) {
        let n = self.node(t);
        if n.parent == NONE {
            return;
        }
        if n.prev != NONE {
            self.slot(n.prev).next = n.next;
        } else {
            self.slot(n.parent).head = n.next;
        }
        if n.next != NONE {
            self.slot(n.next).prev = n.prev;
        }
        let m = self.slot(t);
        m.parent = NONE;
        m.next = NONE;
        m.prev = NONE;
    }

    /// Make `t` the first child of `p` (attached at `aclk`).
    fn push_child(&mut self, t: u32, p: u32, aclk: u32) {
        let old = self.node(p).head;
        {
            let m = self.slot(t);
            m.parent = p;
            m.aclk = aclk;
            m.prev = NONE;
            m.next = old;
        }
        if old != NONE {
            self.slot(old).prev = t;
        }
        self.slot(p).head = t;
    }

    /// Collect into `self.stack`, in post-order, the nodes of `other` whose
    /// entries `self` lacks (with their parents), pruning as the paper does;
    /// in copy mode (`keep = old root`) the old root is collected too, as it
    /// must move.
    fn collect(&mut self, other: &TreeClock, keep: u32) {
        self.stack.clear();
        self.frames.clear();
        let z = other.root;
        self.frames.push((z, other.node(z).head));
        while let Some(&(u, c)) = self.frames.last() {
            if c == NONE {
                self.stack.push(u);
                self.frames.pop();
                continue;
            }
            let top = self.frames.len() - 1;
            let vn = other.node(c);
            self.frames[top].1 = vn.next;
            if self.get(c) < vn.clk {
                self.frames.push((c, vn.head));
            } else {
                if c == keep {
                    self.stack.push(c);
                }
                if vn.aclk <= self.get(u) {
                    // Every later child was attached earlier: known as well.
                    self.frames[top].1 = NONE;
                }
            }
        }
    }

    /// Re-link the collected nodes as in `other` (parents before children),
    /// taking their entries from `other`. `other`'s root is left unattached.
    fn relink(&mut self, other: &TreeClock) {
        let stack = std::mem::take(&mut self.stack);
        for &u in &stack {
            if self.in_tree(u) {
                self.detach(u);
            }
        }
        for &u in stack.iter().rev() {
            let on = other.node(u);
            self.slot(u).clk = on.clk;
            if u != other.root {
                self.push_child(u, on.parent, on.aclk);
            }
        }
        self.stack = stack;
    }

    /// `self := self ⊔ other` for a thread clock `self` (Algorithm 2). Both
    /// clocks must be transitively closed HB clocks.
    pub fn join(&mut self, other: &TreeClock) {
        let z = other.root;
        if z == NONE || other.get(z) <= self.get(z) {
            return;
        }
        if self.root == NONE {
            self.clone_from_tree(other);
            return;
        }
        debug_assert_ne!(z, self.root, "a clock never knows more of its owner");
        let r = self.root;
        let own = self.node(r);
        if own.head == NONE && other.node(r).head == NONE {
            // `self` knows only its owner, whose node has no subtree in
            // `other`: the join is `other`'s tree with the owner moved to the
            // root and `other`'s root under it (what the general case builds,
            // as nothing of `other` is known), sharing every other node.
            self.nodes = other.nodes.clone();
            self.detach(r);
            *self.slot(r) = Node {
                clk: own.clk,
                ..ABSENT
            };
            self.push_child(z, r, own.clk);
            return;
        }
        self.collect(other, NONE);
        self.relink(other);
        if z != self.root {
            let r = self.root;
            let aclk = self.get(r);
            self.push_child(z, r, aclk);
        }
    }

    /// `self := other` where `self ⊑ other` (a release copying the thread's
    /// clock into the lock's). With shared nodes a copy is O(1), cheaper than
    /// the paper's monotone copy (Algorithm 3), and yields a valid tree clock
    /// whether or not `self ⊑ other`.
    pub(crate) fn monotone_copy(&mut self, other: &TreeClock) {
        self.clone_from_tree(other);
    }

    fn clone_from_tree(&mut self, other: &TreeClock) {
        self.nodes = other.nodes.clone();
        self.root = other.root;
    }

    /// Raise entries to `(thread, time)` pairs from a clock that is not a tree
    /// clock (a volatile variable's). Each raised entry is attached to the
    /// root at the root's current time, keeping its subtree.
    pub(crate) fn join_entries(&mut self, entries: impl IntoIterator<Item = (u32, u32)>) {
        let r = self.root;
        if r == NONE {
            return;
        }
        for (u, c) in entries {
            if c <= self.get(u) || u == r {
                continue;
            }
            if self.in_tree(u) {
                self.detach(u);
            }
            self.slot(u).clk = c;
            let aclk = self.get(r);
            self.push_child(u, r, aclk);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::generate::Rng;

    /// Check the structural invariants: every present node is reachable from
    /// the root exactly once and children are in non-increasing `aclk` order.
    fn check(c: &TreeClock) {
        let len = c.nodes.iter().last().map_or(0, |(t, _)| t as usize + 1);
        let mut seen = vec![false; len];
        let mut stack = vec![c.root];
        while let Some(u) = stack.pop() {
            assert!(!seen[u as usize], "node {u} twice");
            seen[u as usize] = true;
            let mut ch = c.node(u).head;
            let mut last = u32::MAX;
            while ch != NONE {
                let n = c.node(ch);
                assert_eq!(n.prev == NONE, c.node(n.parent).head == ch);
                assert_eq!(n.parent, u);
                assert!(n.aclk <= last, "children out of aclk order");
                last = n.aclk;
                stack.push(ch);
                ch = n.next;
            }
        }
        for (t, n) in c.nodes.iter() {
            if n.clk != 0 {
                assert!(seen[t as usize], "entry {t} not in the tree");
            }
        }
    }

    /// Threads passing one lock along (each learns the whole chain through
    /// the join of a clock that knows only its owner): entries stay exact.
    #[test]
    fn lock_chain_shares_the_tree() {
        let mut lock = TreeClock::default();
        let mut threads = Vec::new();
        for t in 0..3000u32 {
            let mut c = TreeClock::new(t, 1);
            c.join(&lock);
            lock.monotone_copy(&c);
            c.tick_root();
            if t % 500 == 0 {
                check(&c);
                check(&lock);
            }
            threads.push(c);
        }
        let want: Vec<(u32, u32)> = (0..3000).map(|t| (t, 1)).collect();
        assert_eq!(lock.entries().collect::<Vec<_>>(), want);
        let mut got = threads[2999].entries().collect::<Vec<_>>();
        got[2999].1 -= 1;
        assert_eq!(got, want);
        assert_eq!(threads[10].entries().count(), 11);
    }

    /// Random HB executions (release/acquire/fork/join between threads):
    /// thread and lock tree clocks equal the vector clocks computed alongside.
    #[test]
    fn hb_executions_match_vector_clocks() {
        use crate::engine::clock::VectorClock;
        let mut rng = Rng::new(3);
        for round in 0..400 {
            let nt = 2 + (round % 12) as u32;
            let nl = 1 + (round % 3) as usize;
            let mut tc: Vec<TreeClock> = (0..nt).map(|t| TreeClock::new(t, 1)).collect();
            let mut vc: Vec<VectorClock> =
                (0..nt).map(|t| [(t, 1)].into_iter().collect()).collect();
            let mut ltc = vec![TreeClock::default(); nl];
            let mut lvc = vec![VectorClock::default(); nl];
            for _ in 0..150 {
                let t = rng.below(u64::from(nt)) as u32;
                let l = rng.below(nl as u64) as usize;
                let u = rng.below(u64::from(nt)) as u32;
                match rng.below(3) {
                    0 => {
                        // acquire l then release it (exclusive by construction)
                        tc[t as usize].join(&ltc[l]);
                        vc[t as usize].join(&lvc[l]);
                        ltc[l].monotone_copy(&tc[t as usize]);
                        lvc[l] = vc[t as usize].clone();
                        tc[t as usize].tick_root();
                        vc[t as usize].tick(t);
                    }
                    1 if u != t => {
                        // message t -> u (fork/join-like edge)
                        let src = tc[t as usize].clone();
                        tc[u as usize].join(&src);
                        let src = vc[t as usize].clone();
                        vc[u as usize].join(&src);
                        tc[t as usize].tick_root();
                        vc[t as usize].tick(t);
                    }
                    _ if u != t => {
                        // volatile-like entry-wise join; the sender ticks, as
                        // after every event an edge leaves from
                        let src: Vec<_> = vc[u as usize].entries().collect();
                        tc[t as usize].join_entries(src.iter().copied());
                        let s = vc[u as usize].clone();
                        vc[t as usize].join(&s);
                        tc[u as usize].tick_root();
                        vc[u as usize].tick(u);
                    }
                    _ => {}
                }
                for c in tc.iter().chain(&ltc).filter(|c| c.root().is_some()) {
                    check(c);
                }
                for t in 0..nt as usize {
                    assert_eq!(
                        tc[t].entries().collect::<Vec<_>>(),
                        vc[t].entries().collect::<Vec<_>>(),
                        "round {round}"
                    );
                }
                for l in 0..nl {
                    assert_eq!(
                        ltc[l].entries().collect::<Vec<_>>(),
                        lvc[l].entries().collect::<Vec<_>>()
                    );
                }
            }
        }
    }
}
