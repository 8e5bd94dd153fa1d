//! `cprace gen`: its options, turned into a [`generate::Config`], and the
//! generated trace written.

use std::path::PathBuf;

use cprace::Error;

use super::Outcome;
use clap::ValueEnum;

use super::values::{parse_count, parse_share, parse_u32};
use cprace::tools::generate;

/// Output format of `gen`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum GenFormat {
    /// cprace CSV (`thread,op,target,loc`).
    Csv,
    /// RAPID STD (`thread|op(target)|loc`).
    Std,
    /// RAPID's binary format, 8 bytes an event, the fastest to read (`gen`
    /// only; no volatiles: --volatiles 0). With -o, the names go to
    /// `OUTPUT.names.json`; through a pipe they read back as T3, L7, V42.
    Rapidbin,
}

fn parse_profile(s: &str) -> Result<String, String> {
    if generate::Config::profile(s).is_some() {
        Ok(s.to_string())
    } else {
        Err(format!(
            "unknown profile `{s}`; expected one of: {}",
            generate::Config::PROFILES.join(", ")
        ))
    }
}

#[derive(clap::Args, Debug)]
/// Write a random, well-formed, reproducible trace (for tests and benchmarks)
///
/// Streams events as it generates them, so any size (hundreds of millions
/// of events) costs no memory. The same options and seed always give the
/// same bytes. Exactly --events events are written; every lock is released
/// by the end. Threads are named T0.., locks l0.., variables x0..,
/// volatiles v0.., locations fT.java:N.
///
/// Profiles (the defaults that the other options override):
///   small         4 threads, 3 locks, 8 variables, every feature on
///                 (re-entrant acquires, out-of-nesting releases)
///   ftpserver     11 threads, 300 locks, 2000 variables, many short
///                 critical sections (like the papers' ftpserver trace)
///   long-cs       4 threads, 4 locks, critical sections of ~100 events
///                 (the CP paper's quadratic case)
///   many-threads  64 threads, 50 locks, 5000 variables
///   threads-256   many-threads with 256 threads (vector vs tree clocks)
///   bench         8 threads, 20 locks, 1000 variables (benchmark shape)
///   arrays        Java array code: a third of the events touch a new
///                 array element (a0[17]), ~690k variables per 2M events
///   deadlocks     bench with nesting up to 3 in one lock order, no
///                 fork/join, every deadlock shape every 100k events
///
/// Deadlock shapes (--deadlocks all, or a comma list): short scripts on
/// threads and locks of their own, woven between the other events in an
/// order that never deadlocks:
///   inversion     two threads take two locks in opposite orders
///                 (a predicted deadlock)
///   philosophers  --philosophers N (default 5) threads each take fork i
///                 then fork i+1 (predicted, a cycle of N locks)
///   gated         the inversion inside sections on a gate lock (no
///                 deadlock; `deadlocks --all` lists it)
///   forkjoin      the inversion's second half in a thread forked after
///                 the first (no deadlock; --all lists it)
///   hidden        the inversion ordered by happens-before through a
///                 third lock: only a reordering across those critical
///                 sections reaches it (predicted)
///   join          a thread holding a lock while it joins a thread that
///                 requests it (predicted; no lock-order cycle)
/// --deadlock-every N repeats them in turn every N events (forkjoin and
/// join fork new threads each time); 0 weaves each in once.
/// --lock-order ordered keeps the other threads' nested locks in one
/// global order, so they add no cycle of their own.
///
/// Examples:
///   cprace gen --profile ftpserver --events 10M --format std -o ftp-10M.std
///   cprace gen --events 1000 --threads 3 --locks 2 --seed 7 | cprace stats -
///   cprace gen --profile long-cs --cs-length 500 --locked-share 0.9 -o long.csv
///   cprace gen --threads 16 --nesting 4 --fork-join false --volatiles 0 -n 100k
///   cprace gen --profile deadlocks -n 10M --format std -o nested.std
///   cprace gen --profile small --deadlocks inversion,join -n 300 | cprace deadlocks -
#[command(verbatim_doc_comment)]
pub(crate) struct GenArgs {
    /// Named profile giving the defaults: small, ftpserver, long-cs, many-threads, threads-256, bench, arrays, deadlocks.
    #[arg(long, default_value = "bench", value_parser = parse_profile)]
    profile: String,
    /// Number of events to write (k, M, G suffixes: 10M is ten million).
    #[arg(short = 'n', long, allow_hyphen_values = true, default_value = "1M", value_parser = parse_count)]
    events: u64,
    /// Seed of the random generator: same seed and options, same bytes.
    #[arg(long, allow_hyphen_values = true, default_value = "0", value_parser = parse_count)]
    seed: u64,
    /// Output format.
    #[arg(long, value_enum, default_value_t = GenFormat::Csv)]
    format: GenFormat,
    /// Output file (standard output when omitted).
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Threads (1 to 65536).
    #[arg(long, allow_hyphen_values = true, value_parser = parse_u32)]
    threads: Option<u32>,
    /// Locks (0 disables locking).
    #[arg(long, allow_hyphen_values = true, value_parser = parse_u32)]
    locks: Option<u32>,
    /// Data variables (at least 1).
    #[arg(long, allow_hyphen_values = true, value_parser = parse_u32)]
    vars: Option<u32>,
    /// Volatile variables (0 disables volatile accesses).
    #[arg(long, allow_hyphen_values = true, value_parser = parse_u32)]
    volatiles: Option<u32>,
    /// Share of events that are volatile accesses (when there are volatiles).
    #[arg(long, allow_hyphen_values = true, value_parser = parse_share)]
    volatile_share: Option<f64>,
    /// Deepest lock nesting per thread.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_u32)]
    nesting: Option<u32>,
    /// Mean critical-section length in events, acquire and release included.
    #[arg(long, allow_hyphen_values = true)]
    cs_length: Option<f64>,
    /// Share of data accesses made while holding a lock (reached within about
    /// 0.01; `cprace stats` reports it as accesses_under_locks).
    #[arg(long, allow_hyphen_values = true, value_parser = parse_share)]
    locked_share: Option<f64>,
    /// Share of data accesses that are writes.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_share)]
    write_share: Option<f64>,
    /// Thread T0 forks the others and joins them when they finish (true), or
    /// all threads run from the start (false).
    #[arg(long)]
    fork_join: Option<bool>,
    /// Chance per acquire attempt of re-acquiring a lock already held.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_share)]
    reentrant: Option<f64>,
    /// Chance that a release is not of the innermost lock held.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_share)]
    out_of_nesting: Option<f64>,
    /// Distinct program locations per thread (at least 1).
    #[arg(long, allow_hyphen_values = true, value_parser = parse_u32)]
    locations: Option<u32>,
    /// Share of accesses going to a few hot variables (contention).
    #[arg(long, allow_hyphen_values = true, value_parser = parse_share)]
    hot: Option<f64>,
    /// Nested acquires take locks in `random` order or in one global order
    /// (`ordered`: the background has no lock-order cycle).
    #[arg(long, value_enum)]
    lock_order: Option<LockOrder>,
    /// Deadlock shapes to weave in, on threads and locks of their own:
    /// `all`, `none` or a comma list of inversion, philosophers, gated,
    /// forkjoin, hidden, join (see `cprace gen --help`).
    #[arg(long, value_parser = cprace::deadlock::shapes::parse)]
    deadlocks: Option<cprace::deadlock::shapes::Shapes>,
    /// Weave a shape in every N events, in turn (0: each shape once).
    #[arg(long, allow_hyphen_values = true, value_name = "N", value_parser = parse_count)]
    deadlock_every: Option<u64>,
    /// Philosophers at the table of the `philosophers` shape (2 or more).
    #[arg(long, allow_hyphen_values = true, value_parser = parse_u32)]
    philosophers: Option<u32>,
}

/// Lock order of nested acquires in generated traces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum LockOrder {
    /// Any lock not held.
    Random,
    /// A lock above every lock held.
    Ordered,
}

impl GenArgs {
    /// The generator configuration: the profile, overridden by each knob given.
    fn config(&self) -> Result<generate::Config, cprace::Error> {
        let usage = cprace::Error::Usage;
        let mut c = generate::Config::profile(&self.profile)
            .ok_or_else(|| usage(format!("unknown profile `{}`", self.profile)))?;
        c.events = self.events;
        c.seed = self.seed;
        if let Some(v) = self.threads {
            if !(1..=65536).contains(&v) {
                return Err(usage(format!("--threads {v}: expected 1 to 65536 threads")));
            }
            c.threads = v;
        }
        if let Some(v) = self.locks {
            c.locks = v;
        }
        if let Some(v) = self.vars {
            if v == 0 {
                return Err(usage(
                    "--vars 0: expected at least one data variable".into(),
                ));
            }
            c.vars = v;
        }
        if let Some(v) = self.volatiles {
            c.volatiles = v;
        }
        if let Some(v) = self.volatile_share {
            c.p_volatile = v;
        }
        if let Some(v) = self.nesting {
            c.max_nesting = v;
        }
        if let Some(v) = self.write_share {
            c.p_write = v;
        }
        if let Some(v) = self.fork_join {
            c.fork_join = v;
        }
        if let Some(v) = self.reentrant {
            c.p_reentrant = v;
        }
        if let Some(v) = self.out_of_nesting {
            c.p_out_of_order_release = v;
        }
        if let Some(v) = self.locations {
            if v == 0 {
                return Err(usage(
                    "--locations 0: expected at least one location per thread".into(),
                ));
            }
            c.locs_per_thread = v;
        }
        if let Some(v) = self.hot {
            c.p_hot = v;
        }
        if let Some(v) = self.cs_length {
            if !(v >= 1.0 && v.is_finite()) {
                return Err(usage(format!(
                    "--cs-length {v}: expected a mean length of at least 1 event"
                )));
            }
            c.set_cs_length(v);
        }
        if let Some(v) = self.locked_share {
            c.set_locked_share(v);
        }
        if (c.threads as u64).saturating_mul(c.locs_per_thread as u64) >= u32::MAX as u64 {
            return Err(usage(
                "--threads times --locations must stay below 2^32".into(),
            ));
        }
        if let Some(v) = self.lock_order {
            c.ordered_locks = v == LockOrder::Ordered;
        }
        if let Some(v) = &self.deadlocks {
            c.deadlocks.shapes = v.0.clone();
        }
        if let Some(v) = self.deadlock_every {
            c.deadlocks.every = v;
        }
        if let Some(v) = self.philosophers {
            if v < 2 {
                return Err(usage(format!("--philosophers {v}: expected at least 2")));
            }
            c.deadlocks.philosophers = v;
        }
        if let Some(v) = self.cs_length {
            if !(v >= 1.0 && v.is_finite()) {
                return Err(usage(format!(
                    "--cs-length {v}: expected a mean length of at least 1 event"
                )));
            }
            c.set_cs_length(v);
        }
        if let Some(v) = self.locked_share {
            c.set_locked_share(v);
        }
        if (c.threads as u64).saturating_mul(c.locs_per_thread as u64) >= u32::MAX as u64 {
            return Err(usage(
                "--threads times --locations must stay below 2^32".into(),
            ));
        }
        if c.vars.checked_add(c.volatiles).is_none() {
            return Err(usage("--vars plus --volatiles must stay below 2^32".into()));
        }
        Ok(c)
    }
}

/// `cprace gen --format rapidbin`: the trace, and with `-o` its side file
/// of names (both replaced only when complete).
fn run_gen_rapidbin(args: &GenArgs, cfg: &generate::Config) -> Outcome {
    use generate::{rapidbin_names, rapidbin_problem, write_rapidbin};
    if let Some(p) = rapidbin_problem(cfg) {
        return Err(cprace::Error::Usage(format!("cannot generate RapidBin: {p}")).into());
    }
    match &args.output {
        Some(p) => {
            let mut named = 0;
            cprace::output::write_file(p, |w| {
                named = write_rapidbin(cfg, &mut &mut *w)
                    .map_err(Error::io(format!("cannot write {}", p.display())))?
                    .1;
                Ok(())
            })?;
            let side = cprace::trace::rapid_bin::side_path(p);
            let [threads, locks, vars, locs] = rapidbin_names(cfg, named);
            cprace::output::write_file(&side, |w| {
                cprace::trace::rapid_bin::write_side(
                    &threads,
                    &locks,
                    &vars[..],
                    &locs,
                    &mut &mut *w,
                )
                .map_err(Error::io(format!("cannot write {}", side.display())))
            })?;
        }
        None => cprace::output::to_stdout(|w| write_rapidbin(cfg, &mut &mut *w).map(|_| ()))?,
    }
    Ok(0)
}

/// `cprace gen`: stream a generated trace to a file or standard output.
pub(crate) fn run(args: &GenArgs) -> Outcome {
    use generate::{TextFormat, write};
    let cfg = args.config()?;
    let fmt = match args.format {
        GenFormat::Csv => TextFormat::Csv,
        GenFormat::Std => TextFormat::Std,
        GenFormat::Rapidbin => return run_gen_rapidbin(args, &cfg),
    };
    match &args.output {
        Some(p) => {
            cprace::output::write_file(p, |w| {
                write(&cfg, fmt, &mut &mut *w)
                    .map(|_| ())
                    .map_err(Error::io(format!("cannot write {}", p.display())))
            })?;
        }
        // Streamed: the trace may be far larger than memory.
        None => cprace::output::to_stdout(|w| write(&cfg, fmt, &mut &mut *w).map(|_| ()))?,
    }
    Ok(0)
}
