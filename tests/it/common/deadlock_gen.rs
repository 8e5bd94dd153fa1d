//! Small random traces for deadlock tests: per-thread programs of nested
//! critical sections (locks taken in random orders, so lock-order cycles are
//! common), data accesses, forks and joins (sometimes joining while holding a
//! lock), run by a random scheduler. When the scheduler gets stuck the trace
//! ends, usually with a blocked request (`req`) for each thread waiting for a
//! lock: an actual deadlock.

#![allow(dead_code)]

use cprace::tools::generate::Rng;

/// One step of a thread's program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Acq(u32),
    Rel(u32),
    Read(u32),
    Write(u32),
    Fork(u32),
    Join(u32),
}

/// A critical section on `lock` (nesting up to `depth` more), with accesses.
fn section(
    rng: &mut Rng,
    lock: u32,
    locks: u32,
    vars: u32,
    depth: u32,
    held: &mut Vec<u32>,
    out: &mut Vec<Step>,
) {
    out.push(Step::Acq(lock));
    held.push(lock);
    let access = |rng: &mut Rng, out: &mut Vec<Step>| {
        let v = rng.below(vars as u64) as u32;
        out.push(if rng.chance(0.5) {
            Step::Write(v)
        } else {
            Step::Read(v)
        });
    };
    if rng.chance(0.4) {
        access(rng, out);
    }
    if depth > 0 && rng.chance(0.75) {
        let free: Vec<u32> = (0..locks).filter(|l| !held.contains(l)).collect();
        if !free.is_empty() {
            let inner = free[rng.below(free.len() as u64) as usize];
            section(rng, inner, locks, vars, depth - 1, held, out);
        }
    }
    if rng.chance(0.3) {
        access(rng, out);
    }
    held.pop();
    out.push(Step::Rel(lock));
}

/// The STD text of the trace of `seed` (2-4 threads, 2-3 locks, at most
/// about 30 events).
pub fn trace_text(seed: u64) -> String {
    let mut rng = Rng::new(seed.wrapping_mul(0x9E37_79B9) ^ 0xDEAD);
    let threads = 2 + rng.below(3) as u32;
    let locks = 2 + rng.below(2) as u32;
    let vars = 1 + rng.below(2) as u32;
    let fork_join = rng.chance(0.4);
    let mut programs: Vec<Vec<Step>> = Vec::new();
    for t in 0..threads {
        let mut p = Vec::new();
        let sections = 1 + rng.below(2);
        for _ in 0..sections {
            if rng.chance(0.3) {
                let v = rng.below(vars as u64) as u32;
                p.push(if rng.chance(0.5) {
                    Step::Write(v)
                } else {
                    Step::Read(v)
                });
            }
            let l = rng.below(locks as u64) as u32;
            let depth = 1 + rng.below(2) as u32;
            section(&mut rng, l, locks, vars, depth, &mut Vec::new(), &mut p);
        }
        if t == 0 && fork_join {
            // Main forks the others first; at its end joins them, sometimes
            // while holding a lock.
            let mut forks: Vec<Step> = (1..threads).map(Step::Fork).collect();
            forks.extend(p);
            p = forks;
            let hold = rng.chance(0.5).then(|| rng.below(locks as u64) as u32);
            if let Some(g) = hold {
                p.push(Step::Acq(g));
            }
            for c in 1..threads {
                if rng.chance(0.8) {
                    p.push(Step::Join(c));
                }
            }
            if let Some(g) = hold {
                p.push(Step::Rel(g));
            }
        }
        programs.push(p);
    }
    // Run them.
    let mut pc = vec![0usize; threads as usize];
    let mut started: Vec<bool> = (0..threads).map(|t| !fork_join || t == 0).collect();
    let mut holder: Vec<Option<u32>> = vec![None; locks as usize];
    let mut lines = String::new();
    let mut line = 0;
    let mut emit = |t: u32, op: &str, target: String, lines: &mut String| {
        line += 1;
        lines.push_str(&format!("T{t}|{op}({target})|f{t}:{line}\n"));
    };
    let done = |pc: &[usize], t: usize| pc[t] == programs[t].len();
    loop {
        let ready: Vec<u32> = (0..threads)
            .filter(|&t| {
                let ti = t as usize;
                started[ti]
                    && !done(&pc, ti)
                    && match programs[ti][pc[ti]] {
                        Step::Acq(l) => holder[l as usize].is_none(),
                        Step::Join(c) => done(&pc, c as usize),
                        _ => true,
                    }
            })
            .collect();
        if ready.is_empty() {
            break;
        }
        let t = ready[rng.below(ready.len() as u64) as usize];
        let ti = t as usize;
        let step = programs[ti][pc[ti]];
        pc[ti] += 1;
        match step {
            Step::Acq(l) => {
                holder[l as usize] = Some(t);
                emit(t, "acq", format!("L{l}"), &mut lines);
            }
            Step::Rel(l) => {
                holder[l as usize] = None;
                emit(t, "rel", format!("L{l}"), &mut lines);
            }
            Step::Read(v) => emit(t, "r", format!("x{v}"), &mut lines),
            Step::Write(v) => emit(t, "w", format!("x{v}"), &mut lines),
            Step::Fork(c) => {
                started[c as usize] = true;
                emit(t, "fork", format!("T{c}"), &mut lines);
            }
            Step::Join(c) => emit(t, "join", format!("T{c}"), &mut lines),
        }
    }
    // Stuck or finished: threads waiting for a lock usually say so.
    if rng.chance(0.7) {
        for t in 0..threads {
            let ti = t as usize;
            if started[ti]
                && !done(&pc, ti)
                && let Step::Acq(l) = programs[ti][pc[ti]]
            {
                emit(t, "req", format!("L{l}"), &mut lines);
            }
        }
    }
    lines
}
