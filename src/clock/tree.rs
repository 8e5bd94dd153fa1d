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
//! Entries are stored densely by thread id (one node record per id up to the
//! largest id the clock knows), so `get` is one load, as for a vector clock.
//!
//! Valid only where every clock involved is transitively closed (HB: thread,
//! lock and fork/join clocks). Entries learned from elsewhere (a volatile
//! variable's clock, which is a join of several threads' clocks) go in
//! through [`TreeClock::join_entries`], which attaches each raised entry to
//! the root, keeping its old subtree (whose entries are still known to be
//! below what the new entry implies).

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
    nodes: Vec<Node>,
    root: u32,
    /// Scratch stacks of join and copy (kept to avoid reallocating).
    stack: Vec<u32>,
    frames: Vec<(u32, u32)>,
}

impl Default for TreeClock {
    fn default() -> Self {
        TreeClock {
            nodes: Vec::new(),
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
        let i = t as usize;
        if i >= self.nodes.len() {
            self.nodes.resize(i + 1, ABSENT);
        }
        &mut self.nodes[i]
    }

    /// Entry of thread `t`.
    #[inline]
    pub fn get(&self, t: u32) -> u32 {
        self.nodes.get(t as usize).map_or(0, |n| n.clk)
    }

    /// The root's thread (the owner), if any.
    pub fn root(&self) -> Option<u32> {
        (self.root != NONE).then_some(self.root)
    }

    /// Increment the root's entry (the owner's own time).
    #[inline]
    pub fn tick_root(&mut self) {
        let r = self.root as usize;
        self.nodes[r].clk += 1;
    }

    /// The non-zero entries `(thread, time)`, by thread id.
    pub fn entries(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.clk != 0)
            .map(|(t, n)| (t as u32, n.clk))
    }

    #[inline]
    fn in_tree(&self, t: u32) -> bool {
        t == self.root || self.nodes.get(t as usize).is_some_and(|n| n.parent != NONE)
    }

    /// Unlink `t` (with its subtree) from its parent.
    fn detach(&mut self, t: u32) {
        let n = self.nodes[t as usize];
        if n.parent == NONE {
            return;
        }
        if n.prev != NONE {
            self.nodes[n.prev as usize].next = n.next;
        } else {
            self.nodes[n.parent as usize].head = n.next;
        }
        if n.next != NONE {
            self.nodes[n.next as usize].prev = n.prev;
        }
        let m = &mut self.nodes[t as usize];
        m.parent = NONE;
        m.next = NONE;
        m.prev = NONE;
    }

    /// Make `t` the first child of `p` (attached at `aclk`).
    fn push_child(&mut self, t: u32, p: u32, aclk: u32) {
        let old = self.nodes[p as usize].head;
        {
            let m = self.slot(t);
            m.parent = p;
            m.aclk = aclk;
            m.prev = NONE;
            m.next = old;
        }
        if old != NONE {
            self.nodes[old as usize].prev = t;
        }
        self.nodes[p as usize].head = t;
    }

    /// Collect into `self.stack`, in post-order, the nodes of `other` whose
    /// entries `self` lacks (with their parents), pruning as the paper does;
    /// in copy mode (`keep = old root`) the old root is collected too, as it
    /// must move.
    fn collect(&mut self, other: &TreeClock, keep: u32) {
        self.stack.clear();
        self.frames.clear();
        let z = other.root;
        self.frames.push((z, other.nodes[z as usize].head));
        while let Some(&(u, c)) = self.frames.last() {
            if c == NONE {
                self.stack.push(u);
                self.frames.pop();
                continue;
            }
            let top = self.frames.len() - 1;
            let vn = other.nodes[c as usize];
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
            let on = other.nodes[u as usize];
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
        if z == NONE || other.nodes[z as usize].clk <= self.get(z) {
            return;
        }
        if self.root == NONE {
            self.clone_from_tree(other);
            return;
        }
        debug_assert_ne!(z, self.root, "a clock never knows more of its owner");
        self.collect(other, NONE);
        self.relink(other);
        if z != self.root {
            let r = self.root;
            let aclk = self.nodes[r as usize].clk;
            self.push_child(z, r, aclk);
        }
    }

    /// `self := other` where `self ⊑ other` (Algorithm 3, a release copying
    /// the thread's clock into the lock's). Falls back to a full copy when the
    /// precondition does not hold.
    pub fn monotone_copy(&mut self, other: &TreeClock) {
        let z = self.root;
        if z == NONE || other.root == NONE || other.get(z) < self.nodes[z as usize].clk {
            self.clone_from_tree(other);
            return;
        }
        self.collect(other, z);
        self.relink(other);
        self.root = other.root;
        if z != self.root && self.nodes[z as usize].parent == NONE {
            // The old root was not reached: not a monotone copy after all.
            self.clone_from_tree(other);
        }
    }

    fn clone_from_tree(&mut self, other: &TreeClock) {
        self.nodes.clone_from(&other.nodes);
        self.root = other.root;
    }

    /// Raise entries to `(thread, time)` pairs from a clock that is not a tree
    /// clock (a volatile variable's). Each raised entry is attached to the
    /// root at the root's current time, keeping its subtree.
    pub fn join_entries(&mut self, entries: impl IntoIterator<Item = (u32, u32)>) {
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
            let aclk = self.nodes[r as usize].clk;
            self.push_child(u, r, aclk);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::Rng;

    /// Check the structural invariants: every present node is reachable from
    /// the root exactly once and children are in non-increasing `aclk` order.
    fn check(c: &TreeClock) {
        let mut seen = vec![false; c.nodes.len()];
        let mut stack = vec![c.root];
        while let Some(u) = stack.pop() {
            assert!(!seen[u as usize], "node {u} twice");
            seen[u as usize] = true;
            let mut ch = c.nodes[u as usize].head;
            let mut last = u32::MAX;
            while ch != NONE {
                let n = c.nodes[ch as usize];
                assert_eq!(n.parent, u);
                assert!(n.aclk <= last, "children out of aclk order");
                last = n.aclk;
                stack.push(ch);
                ch = n.next;
            }
        }
        for (t, n) in c.nodes.iter().enumerate() {
            if n.clk != 0 {
                assert!(seen[t], "entry {t} not in the tree");
            }
        }
    }

    /// Random HB executions (release/acquire/fork/join between threads):
    /// thread and lock tree clocks equal the vector clocks computed alongside.
    #[test]
    fn hb_executions_match_vector_clocks() {
        use crate::clock::VectorClock;
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
