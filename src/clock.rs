//! Vector clocks: one logical time per thread, compared and joined pointwise.

/// A vector clock indexed by thread id; missing entries are 0.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct VectorClock(pub Vec<u32>);

impl VectorClock {
    /// The zero clock sized for `n` threads.
    pub fn new(n: usize) -> Self {
        VectorClock(vec![0; n])
    }
    /// Entry of thread `t`.
    #[inline]
    pub fn get(&self, t: u32) -> u32 {
        self.0.get(t as usize).copied().unwrap_or(0)
    }
    /// Set the entry of thread `t`, growing as needed.
    #[inline]
    pub fn set(&mut self, t: u32, v: u32) {
        let t = t as usize;
        if self.0.len() <= t {
            self.0.resize(t + 1, 0);
        }
        self.0[t] = v;
    }
    /// Increment the entry of thread `t`.
    #[inline]
    pub fn tick(&mut self, t: u32) {
        let v = self.get(t) + 1;
        self.set(t, v);
    }
    /// Pointwise maximum with `other`.
    #[inline]
    pub fn join(&mut self, other: &VectorClock) {
        self.join_slice(&other.0);
    }
    /// Pointwise maximum with a raw slice of entries.
    #[inline]
    pub fn join_slice(&mut self, other: &[u32]) {
        if self.0.len() < other.len() {
            self.0.resize(other.len(), 0);
        }
        for (a, &b) in self.0.iter_mut().zip(other) {
            if b > *a {
                *a = b;
            }
        }
    }
    /// Pointwise `self <= other`.
    pub fn leq(&self, other: &VectorClock) -> bool {
        self.0
            .iter()
            .enumerate()
            .all(|(t, &v)| v <= other.get(t as u32))
    }
}
