//! A persistent array of `Copy` records indexed by thread id, as radix trees
//! of 16-entry blocks shared copy-on-write (the layout of [`super::VectorClock`],
//! for records other than plain times): cloning is O(1) and a write copies
//! only the shared part of the path to the written record. Tree clocks keep
//! their nodes here, so a copy (a release) shares every node and a clock
//! learned from another shares all but the paths where they differ.

use std::sync::Arc;

// The same radix layout as the vector clocks: one definition of it.
use super::vector::{BITS, FAN, MASK, fits, slot};

#[derive(Clone, Debug)]
enum Node<T> {
    Leaf([T; FAN]),
    Inner([Option<Arc<Node<T>>>; FAN]),
}

/// Records by id; ids never written read as `zero`.
#[derive(Clone, Debug)]
pub(super) struct Store<T> {
    root: Option<Arc<Node<T>>>,
    /// Level of the root (0: the root is a block of ids 0..16).
    height: u32,
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

    /// The record of id `t`, writable (copying the shared part of its path).
    #[inline]
    pub(super) fn get_mut(&mut self, t: u32) -> &mut T {
        while !fits(t, self.height) {
            if let Some(r) = self.root.take() {
                let mut c: [Option<Arc<Node<T>>>; FAN] = Default::default();
                c[0] = Some(r);
                self.root = Some(Arc::new(Node::Inner(c)));
            }
            self.height += 1;
        }
        let zero = self.zero;
        let empty = move |level: u32| {
            Arc::new(if level == 0 {
                Node::Leaf([zero; FAN])
            } else {
                Node::Inner(Default::default())
            })
        };
        let mut level = self.height;
        let mut n = self.root.get_or_insert_with(|| empty(level));
        loop {
            match Arc::make_mut(n) {
                Node::Leaf(a) => return &mut a[(t & MASK) as usize],
                Node::Inner(c) => {
                    level -= 1;
                    n = c[slot(t, level + 1)].get_or_insert_with(|| empty(level));
                }
            }
        }
    }

    /// Every stored record with its id, by id (blocks never written are
    /// skipped; records inside written blocks may equal `zero`).
    pub(super) fn for_each(&self, mut f: impl FnMut(u32, &T)) {
        let mut stack: Vec<(&Node<T>, u32, u32)> = Vec::new();
        if let Some(r) = self.root.as_deref() {
            stack.push((r, self.height, 0));
        }
        while let Some((n, level, base)) = stack.pop() {
            match n {
                Node::Leaf(a) => {
                    for (i, x) in a.iter().enumerate() {
                        f(base + i as u32, x);
                    }
                }
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::Rng;

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
                    let mut seen = Vec::new();
                    s.for_each(|t, &v| {
                        if v != 0 {
                            seen.push((t, v));
                        }
                    });
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
