//! A persistent array of `Copy` records indexed by thread id, as a radix tree
//! of 16-entry blocks shared copy-on-write: cloning is O(1) and a write
//! copies only the shared part of the path to the written record. Id `t`
//! lives in block `t >> 4`, entry `t & 15`; a tree of height `h` covers ids
//! below `16^(h+1)`. Nodes are reference counted ([`Arc`], so detectors stay
//! `Send`). [`super::VectorClock`] is a store of times; tree clocks keep
//! their nodes in one, so a copy (a release) shares every node and a clock
//! learned from another shares all but the paths where they differ.

use std::sync::Arc;

pub(super) const BITS: u32 = 4;
pub(super) const FAN: usize = 1 << BITS;
pub(super) const MASK: u32 = FAN as u32 - 1;

/// Index of `t`'s child at `level`.
#[inline]
pub(super) fn slot(t: u32, level: u32) -> usize {
    ((u64::from(t) >> (BITS * level)) as u32 & MASK) as usize
}

/// Whether ids up to `t` fit under a root at `height`.
#[inline]
pub(super) fn fits(t: u32, height: u32) -> bool {
    u64::from(t) >> (BITS * (height + 1)) == 0
}

/// A block of records (level 0) or of children.
#[derive(Clone, Debug)]
pub(super) enum Node<T> {
    Leaf([T; FAN]),
    Inner([Option<Arc<Node<T>>>; FAN]),
}

impl<T: Copy> Node<T> {
    /// An empty node at `level` whose records read as `zero`.
    pub(super) fn empty(level: u32, zero: T) -> Node<T> {
        if level == 0 {
            Node::Leaf([zero; FAN])
        } else {
            Node::Inner(Default::default())
        }
    }
}

/// Records by id; ids never written read as `zero`.
#[derive(Clone, Debug)]
pub(super) struct Store<T> {
    pub(super) root: Option<Arc<Node<T>>>,
    /// Level of the root (0: the root is a block of ids 0..16).
    pub(super) height: u32,
    zero: T,
}

impl<T: Copy> Store<T> {
    /// An empty store whose missing records read as `zero`.
    pub(super) fn new(zero: T) -> Self {
        Store {
            root: None,
            height: 0,
            zero,
        }
    }

    /// The record of id `t`.
    #[inline]
    pub(super) fn get(&self, t: u32) -> T {
        let Some(mut n) = self.root.as_deref() else {
            return self.zero;
        };
        if !fits(t, self.height) {
            return self.zero;
        }
        let mut level = self.height;
        loop {
            match n {
                Node::Leaf(a) => return a[(t & MASK) as usize],
                Node::Inner(c) => match c[slot(t, level)].as_deref() {
                    Some(x) => {
                        n = x;
                        level -= 1;
                    }
                    None => return self.zero,
                },
            }
        }
    }

    /// Raise the root to `height`, the old tree becoming child 0.
    pub(super) fn grow(&mut self, height: u32) {
        while self.height < height {
            if let Some(r) = self.root.take() {
                let mut c: [Option<Arc<Node<T>>>; FAN] = Default::default();
                c[0] = Some(r);
                self.root = Some(Arc::new(Node::Inner(c)));
            }
            self.height += 1;
        }
    }

    /// The record of id `t`, writable (copying the shared part of its path).
    #[inline]
    pub(super) fn get_mut(&mut self, t: u32) -> &mut T {
        if !fits(t, self.height) {
            let mut h = self.height;
            while !fits(t, h) {
                h += 1;
            }
            self.grow(h);
        }
        let zero = self.zero;
        let mut level = self.height;
        let mut n = self
            .root
            .get_or_insert_with(|| Arc::new(Node::empty(level, zero)));
        loop {
            match Arc::make_mut(n) {
                Node::Leaf(a) => return &mut a[(t & MASK) as usize],
                Node::Inner(c) => {
                    level -= 1;
                    n = c[slot(t, level + 1)]
                        .get_or_insert_with(|| Arc::new(Node::empty(level, zero)));
                }
            }
        }
    }

    /// Every stored record with its id, by id (blocks never written are
    /// skipped; records inside written blocks may equal `zero`).
    pub(super) fn iter(&self) -> impl Iterator<Item = (u32, &T)> + '_ {
        let mut stack: Vec<(&Node<T>, u32, u32)> = Vec::new();
        if let Some(r) = self.root.as_deref() {
            stack.push((r, self.height, 0));
        }
        let mut leaf: Option<(&[T; FAN], u32, usize)> = None;
        std::iter::from_fn(move || {
            loop {
                if let Some((a, base, i)) = leaf.as_mut() {
                    if *i < FAN {
                        let (a, k) = (*a, *i);
                        *i += 1;
                        return Some((*base + k as u32, &a[k]));
                    }
                    leaf = None;
                }
                let (n, level, base) = stack.pop()?;
                match n {
                    Node::Leaf(a) => leaf = Some((a, base, 0)),
                    Node::Inner(c) => {
                        for (i, ch) in c.iter().enumerate().rev() {
                            if let Some(ch) = ch.as_deref() {
                                let b = base + ((i as u64) << (BITS * level)) as u32;
                                stack.push((ch, level - 1, b));
                            }
                        }
                    }
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::generate::Rng;

    /// Random writes and copies agree with plain vectors, and a copy is not
    /// changed by writes to the original.
    #[test]
    fn matches_vectors() {
        let mut rng = Rng::new(11);
        for round in 0..100 {
            let n = [5usize, 20, 300, 2000][round % 4];
            let mut s = vec![Store::new(0u64); 4];
            let mut m = vec![vec![0u64; n]; 4];
            for _ in 0..300 {
                let i = rng.below(4) as usize;
                let t = rng.below(n as u64) as u32;
                if rng.below(5) == 0 {
                    let j = rng.below(4) as usize;
                    s[i] = s[j].clone();
                    m[i] = m[j].clone();
                } else {
                    let v = rng.below(1000);
                    *s[i].get_mut(t) = v;
                    m[i][t as usize] = v;
                }
                for (s, m) in s.iter().zip(&m).skip(i).take(1) {
                    for t in 0..n as u32 {
                        assert_eq!(s.get(t), m[t as usize]);
                    }
                    assert_eq!(s.get(n as u32 + 100_000), 0);
                    let seen: Vec<_> = s
                        .iter()
                        .filter(|x| *x.1 != 0)
                        .map(|(t, &v)| (t, v))
                        .collect();
                    let want: Vec<_> = (0..n as u32)
                        .map(|t| (t, m[t as usize]))
                        .filter(|x| x.1 != 0)
                        .collect();
                    assert_eq!(seen, want);
                }
            }
        }
    }
}
