//! Weak-causally-precedes (WCP), Kini, Mathur and Viswanathan, PLDI 2017
//! (`wcp-2017.txt`): a sound weakening of CP with a linear-time vector-clock
//! algorithm. Two engines:
//!
//! - [`vc`] (default): Algorithm 1 of the paper, streaming in one pass.
//! - [`reference`]: Definition 3 written literally as Datalog (`rules/wcp.dl`),
//!   quadratic, for small traces and for checking `vc`.
//!
//! # The relation
//!
//! `≺WCP` is the smallest relation closed under
//! (a) `rel(l) ≺ e` for a later access `e` inside a critical section of `l`
//!     when `CS(rel)` holds an access conflicting with `e`;
//! (b) `r1 ≺ r2` for releases `r1 < r2` of one lock whose critical sections
//!     contain `≺WCP`-ordered events;
//! (c) composition with `≤HBv` on both sides (below);
//!
//! plus hard edges: fork → the child's first event, the child's last event →
//! join, and every two atomic accesses of one variable by different threads,
//! at least one a write (vw → vr, vr → vw, vw → vw, and the same with relaxed
//! ar/aw) in trace order. `--relation hb` keeps the Java memory model (only
//! vw → later vr; relaxed atomics synchronize nothing); WCP reorders critical
//! sections, so it must also keep every ordering that preserves what an
//! atomic read saw (a vr before a later vw must stay before it, or a
//! critical section around the vr could be moved after one around the vw). This is what the CP paper's implementation got by
//! wrapping each volatile access in a critical section of a per-variable lock.
//! HB plus these edges is HBv; rule (c) composes with `≤HBv`, and `H` in `vc`
//! is the HBv clock. Hard edges are both HBv edges and WCP edges: in `vc` the
//! source's `H` is joined into the target's `H` *and* `P`, exactly as a
//! rule-(a) edge passes `H` of its release into `P`. That keeps `≺WCP` closed
//! under composition with HBv (anything HBv-before the source is WCP-before the
//! target) and inside HBv. Races use `≤WCP = ≺WCP ∪ ≤TO`, on every access:
//! a plain one and an atomic one conflict (in rule (a) too), two atomic ones
//! never do. Two atomic accesses *of the same thread* are already
//! thread-ordered; making such a pair a WCP edge as well would order after
//! the second everything that merely happens-before the first (as in
//! correction 1 below), so atomic hard edges join different threads only.
//!
//! # Where Algorithm 1 as printed differs from Definition 3, and what we do
//!
//! The two engines must agree, so where the printed algorithm and the
//! definition disagree we follow the definition and fix the algorithm:
//!
//! 1. *Rule (a) needs a conflicting event, and conflicting events belong to
//!    different threads.* Lines 11-12 join `L^r/L^w` regardless of who released,
//!    so an access after the thread's *own* earlier critical section on `l`
//!    would receive that release's HB time, ordering after it everything that
//!    merely happens-before it (e.g. another thread's write that reached the
//!    release through a different lock). `vc` joins only releases of other
//!    threads (kept per slot as "latest" and "latest by another thread").
//! 2. *Rule (b) does not require different threads.* The printed queues only
//!    hold other threads' critical sections (the proof of Lemma C.9 silently
//!    assumes it). With `r1, r2` of the same thread the definition still gives
//!    `r1 ≺WCP r2`, and by rule (c) everything HB-before `r1` becomes
//!    WCP-before `r2`. `vc` therefore also queues the thread's own sections and
//!    dequeues one when `N_acq ≤ P[t]` (the thread's own `P` entry, which is
//!    only ever raised by WCP paths that leave the thread and come back).
//!
//! Property tests compare both engines on thousands of generated traces.
//!
//! # Race pairs
//!
//! The paper's check keeps per variable the joins `R_x`, `W_x` of all access
//! times and tests `W_x ⊑ C_e`; that yields only the second event of a race, and
//! the paper recovers the first with a second pass over the trace. Because
//! `C_a ⊑ C_e` iff `N_a ≤ C_e(t(a))` (Theorem 2, with `≤WCP` closed under thread
//! order on the left), the same test can be made per thread on the latest read
//! and write of each thread: [`crate::engine::history::AccessHistory`] keeps exactly those
//! (one epoch per thread and variable) and returns the latest unordered
//! conflicting access as the witness. The test is the paper's, the set of racy
//! events is the paper's, and the first event comes out in the same pass.

pub mod reference;
pub mod vc;

pub use vc::WcpVc;

crate::impl_detector!(prefetch: WcpVc);
