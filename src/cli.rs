//! The command line: subcommands, their options and their manuals.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand, ValueEnum};

use crate::race::{self, Options, Relation};
use crate::report::OutputFormat;
use crate::trace::{self, Format};

/// Predict data races from recorded executions of multithreaded programs.
///
/// A trace is a sequence of events `thread, op, target, loc` with op one of
/// r, w (data read/write of variable target), acq, rel (lock target), fork,
/// join (thread target), vr, vw (volatile read/write). Formats: cprace CSV
/// (header `thread,op,target,loc`), RAPID STD (`T0|r(x)|loc`) and RAPID CSV
/// (one column per thread), detected automatically. Event ids are 0-based
/// positions in the input trace everywhere.
///
/// Exit codes follow diff(1): 0 no race, 1 races reported, 2 bad input or usage.
#[derive(Parser, Debug)]
#[command(name = "cprace", version, propagate_version = true)]
pub struct Cli {
    /// No progress display on standard error (it shows only on a terminal,
    /// once a command has run for a second).
    #[arg(long, short, global = true)]
    pub quiet: bool,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
    /// Skip malformed or ill-formed trace lines (as RAPID does) instead of
    /// failing: they are counted and the first few named on standard error.
    /// Never the default. Event ids are then positions among the kept events.
    #[arg(long, global = true)]
    pub lenient: bool,
}

/// A window size K, or `none` for the whole trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window(pub Option<u64>);

/// Parse a window: a positive event count (k, M, G suffixes) or `none`.
pub fn parse_window(s: &str) -> Result<Window, String> {
    if s.trim().eq_ignore_ascii_case("none") {
        return Ok(Window(None));
    }
    match parse_count(s) {
        Ok(0) | Err(_) => Err(format!(
            "`{s}` is not a window; expected a positive number of events (k, M, G suffixes: 10k) or `none`"
        )),
        Ok(k) => Ok(Window(Some(k))),
    }
}

/// Output format of `stats`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StatsFormat {
    /// `key: value` lines.
    Text,
    /// One JSON object.
    Json,
}

/// The relations `query` answers for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum QueryRelation {
    /// Happens-before.
    Hb,
    /// Causally-precedes (windowed).
    Cp,
    /// Weak-causally-precedes.
    Wcp,
    /// Schedulable happens-before: HB plus reads-from edges.
    Shb,
    /// Sync-preserving races: not an order, so refused with a pointer to
    /// `analyze --relation syncp --witness`.
    Syncp,
}

impl From<QueryRelation> for Relation {
    fn from(r: QueryRelation) -> Relation {
        match r {
            QueryRelation::Hb => Relation::Hb,
            QueryRelation::Cp => Relation::Cp,
            QueryRelation::Wcp => Relation::Wcp,
            QueryRelation::Shb => Relation::Shb,
            QueryRelation::Syncp => Relation::Syncp,
        }
    }
}

/// Output format of `convert`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ConvertFormat {
    /// cprace CSV (`thread,op,target,loc`).
    Csv,
    /// RAPID STD (`thread|op(target)|loc`).
    Std,
    /// RAPID's binary format, 8 bytes an event, the fastest to read (`gen`
    /// only; no volatiles: --volatiles 0). With -o, the names go to
    /// `OUTPUT.names.json`; through a pipe they read back as T3, L7, V42.
    Rapidbin,
}

/// Output format of `convert`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ConvertTo {
    /// cprace CSV (`thread,op,target,loc`).
    Csv,
    /// RAPID STD (`thread|op(target)|loc`).
    Std,
    /// RAPID's binary format, plus the name tables in `OUTPUT.names.json`
    /// (needs `-o`).
    Rapidbin,
}

/// Subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Count events, threads, locks, variables and lock usage of a trace
    ///
    /// Streams the trace (any size, constant memory), validating it as every
    /// command does, and prints:
    ///   events, threads, locks, variables, locations   sizes of the name tables
    ///                                                  (locations: non-empty ones)
    ///   acquires, releases        lock operations (re-entrant ones not counted)
    ///   reads, writes             data accesses
    ///   forks, joins              thread creation and joining
    ///   volatile_accesses         volatile reads and writes (vr, vw)
    ///   accesses_under_locks      data accesses made while holding some lock
    ///   max_nesting_depth         most locks one thread held at once
    ///   reentrant_acquires_filtered
    ///                             acquires of a lock the thread already held;
    ///                             they and their releases are ignored by every
    ///                             analysis (as RoadRunner and RAPID do)
    ///   out_of_nesting_releases   releases of a lock other than the innermost
    ///                             held (legal for java.util.concurrent locks;
    ///                             accepted, each paired with its own acquire)
    ///   unreleased_at_end         critical sections still open when the trace
    ///                             ends (accepted; they extend to the thread's
    ///                             last event)
    ///
    /// Text output adds a warning or note line for the last three when non-zero.
    ///
    /// Examples:
    ///   cprace stats data/formats/example.csv
    ///   cprace stats data/figures/cp-fig3-polarcoord.csv --format json
    ///   cprace gen -n 1M | cprace stats -
    #[command(verbatim_doc_comment)]
    Stats {
        /// Trace file (`-` reads standard input).
        trace: PathBuf,
        /// Output format.
        #[arg(long, value_enum, default_value_t = StatsFormat::Text)]
        format: StatsFormat,
        /// Input format (detected when omitted).
        #[arg(long, value_enum)]
        input_format: Option<Format>,
    },
    /// Convert a trace to cprace CSV, RAPID STD or RapidBin, losslessly
    ///
    /// Reads any input format (detected, or --input-format), validates the whole
    /// trace first (bad input writes nothing and exits 2), then writes every
    /// event in order, so event ids are unchanged. Re-entrant acquires and
    /// their releases are written back as the `acq`/`rel` they were. Names are
    /// kept exactly: CSV quotes fields that need it; a name STD cannot hold
    /// (a thread, lock or variable containing `|`, `(` or `)`, a line break)
    /// is an error naming the file and line where it first occurs, rather than
    /// silently changed. RAPID CSV input has no locations, so the output's are
    /// empty. CSV -> STD -> CSV gives back the same bytes for traces cprace
    /// wrote. With -o the output goes to a temporary file renamed into place
    /// only on success: a failed conversion leaves an existing file as it was.
    ///
    /// --rapid (with --to std) writes STD that RAPID's parser reads: every
    /// location becomes an integer (1, 2, ... in order of first use; 0 for
    /// none) and a side table OUTPUT.locations.csv (`id,location`) names them,
    /// so nothing is lost. Needs -o (the table is written next to it).
    ///
    /// RapidBin (RAPID's binary format, 8 bytes per event) numbers names; the
    /// names go to a side file, OUTPUT.names.json, which loading OUTPUT picks
    /// up, so nothing is lost. Its limits (1024 threads, 2^15 - 1 locations,
    /// no volatile accesses) are errors naming the first line past them.
    /// Needs -o. An existing output is replaced only on success.
    ///
    /// Holds the loaded trace (16 bytes per event plus the name tables).
    ///
    /// Examples:
    ///   cprace convert trace.std --to csv -o trace.csv
    ///   cprace convert trace.csv --to std > trace.std
    ///   cprace convert trace.csv --to std --rapid -o for-rapid.std
    ///   cprace convert trace.std.gz --to rapidbin -o trace.bin
    ///   cprace convert rapid.csv --input-format rapid-csv --to csv
    #[command(verbatim_doc_comment)]
    Convert {
        /// Trace file (`-` reads standard input).
        trace: PathBuf,
        /// Output format.
        #[arg(long, value_enum)]
        to: ConvertTo,
        /// Output file (standard output when omitted).
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Input format (detected when omitted).
        #[arg(long, value_enum)]
        input_format: Option<Format>,
        /// With --to std: integer locations RAPID can read, and the side table
        /// OUTPUT.locations.csv naming them (needs -o).
        #[arg(long, requires = "output")]
        rapid: bool,
    },
    /// Report the data races a relation predicts.
    ///
    /// An access e2 (data read or write) is racy when some earlier access e1 of
    /// another thread to the same variable, at least one a write, is not ordered
    /// before e2 by the relation. Every pair is checked; --max-distance D
    /// reports only pairs less than D events apart (e2 - e1 < D). Each racy
    /// event gets one witness: the latest such e1.
    ///
    /// --window K bounds CP's reasoning, not the report: HB-ordered events K
    /// or more apart are CP-ordered (the CP paper's rule (w)), so a pair K or
    /// more apart is a CP race exactly when HB (with CP's volatile edges)
    /// leaves it unordered; HB's races are never hidden. K counts events of
    /// the input trace; a K of at least the trace length is no window. The CP
    /// paper's report is `--window K --max-distance K`. On hb, wcp, lockset
    /// and po, --window is an alias of --max-distance.
    ///
    /// Relations (engines, default first; names are case-insensitive, so
    /// RAPID's `CP`, `HB`, `WCP` work):
    ///   cp       causally-precedes (Smaragdakis, Evans, Sadowski, Yi, Flanagan,
    ///            POPL 2012, Definition 2): sound predictive
    ///            detection; finds races HB misses. Window K = 1000 by default,
    ///            `--window none` is exact CP. Engines: datalog (semi-naive
    ///            fixpoint over synchronization events), reference (literal
    ///            rules/cp.dl via crepe, at most 2000 events), compare (both;
    ///            exit 3 naming the first differing event).
    ///   hb       happens-before: program order, release -> later acquire,
    ///            fork/join, volatile write -> later read. Engines: vc (DJIT+
    ///            vector clocks, exact), epoch (FastTrack2: same racy variables
    ///            and first race per variable), lockset (Goldilocks: idem),
    ///            treeclock or tc (vc with tree clocks: same races as vc),
    ///            datalog (closure over synchronization events, windowed),
    ///            reference (rules/hb.dl via crepe).
    ///   wcp      weak-causally-precedes (Kini, Mathur, Viswanathan, PLDI 2017,
    ///            Definition 3): weaker than
    ///            CP, so every CP race is a WCP race; the fast upper bound.
    ///            Engines: vc (Algorithm 1, linear time, streaming), reference
    ///            (literal rules/wcp.dl via crepe, at most 2000 events).
    ///   lockset  Eraser's locking discipline. UNSOUND: reports discipline
    ///            violations, a superset of HB's racy variables. Engine: eraser.
    ///   po       thread order only: every conflicting cross-thread pair.
    ///
    /// CP reporting: CP's soundness theorem covers the first race. By default
    /// every racy event is reported (and the report says so); --first-race stops
    /// at the first; --order-races treats each reported race as a CP edge from
    /// then on, so every report is covered.
    ///
    /// Output:
    ///   text     one report per location pair (its first racy event, how many
    ///            racy events share the pair, their kinds and threads), in
    ///            order of first occurrence between `==================` lines,
    ///            then a SUMMARY; --all prints one report per racy event,
    ///            --max-reports N at most N reports.
    ///   json     relation, engine, window, events, racy_events (sorted ids),
    ///            races (one witness per racy event: first, second, variable,
    ///            first_loc, second_loc, kind, first_thread, second_thread,
    ///            first_op, second_op), racy_variables, location_pairs, stats,
    ///            notes.
    ///   jsonl    one JSON object per racy event and line: relation, engine,
    ///            window, then the race fields of json.
    ///   csv      one row per racy event: first, second, variable, kind,
    ///            first_thread, first_op, first_loc, second_thread, second_op,
    ///            second_loc, relation, engine, window (empty for none).
    ///   sarif    SARIF 2.1.0: one result per location pair, rule race/RELATION,
    ///            `file:line` locations, the earlier access as related location.
    ///   summary  the SUMMARY line and the engine counters only.
    /// csv, jsonl, text and summary stream: the hb and wcp engines keep races
    /// on disk, not in memory. Notes (unsound engine, what the soundness
    /// theorem covers) go to standard error whatever the format.
    /// Exit code: 0 no race, 1 races, 2 bad input or usage.
    ///
    /// Examples:
    ///   cprace analyze data/figures/cp-fig3-polarcoord.csv --relation cp
    ///   cprace analyze trace.std --relation cp --window 10000 --format json
    ///   cprace analyze trace.std --relation hb --engine epoch
    ///   cprace analyze small.csv --relation cp --engine compare --window none
    #[command(verbatim_doc_comment)]
    Analyze {
        /// Trace file (`-` reads standard input).
        trace: PathBuf,
        /// The relation deciding which accesses are ordered.
        #[arg(long, value_enum, ignore_case = true)]
        relation: Relation,
        /// Engine computing the relation (the relation's default when omitted).
        #[arg(long)]
        engine: Option<String>,
        /// cp: window K of the reasoning (default 1000; `none`: exact CP).
        /// Other relations: an alias of --max-distance.
        #[arg(long, value_parser = parse_window)]
        window: Option<Window>,
        /// Report only pairs less than D events apart (`none`: all, the
        /// default), for every relation.
        #[arg(long, value_parser = parse_window)]
        max_distance: Option<Window>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        format: OutputFormat,
        /// Input format (detected when omitted).
        #[arg(long, value_enum)]
        input_format: Option<Format>,
        /// Report only the first race (the one CP's soundness theorem covers).
        #[arg(long, conflicts_with = "order_races")]
        first_race: bool,
        /// Treat each reported race as a CP edge from then on, so every report
        /// is covered by the soundness theorem (may hide races near others).
        #[arg(long)]
        order_races: bool,
        /// Text: one report per racy event instead of one per location pair.
        #[arg(long)]
        all: bool,
        /// Text: print at most N reports (the SUMMARY still counts all).
        #[arg(long, value_name = "N", value_parser = parse_count)]
        max_reports: Option<u64>,
        /// Give each race a witness: a correct reordering prefix of the trace
        /// (event ids) after which both events are enabled, or null when none
        /// was found. Every shb and syncp race has one; for hb, cp and wcp it
        /// is tried and the report says which races have one. Loads the trace.
        #[arg(long)]
        witness: bool,
        /// With --witness: write each race's reordered trace (the witness, then
        /// the two racy events) in STD to DIR/race-E1-E2.std.
        #[arg(long, value_name = "DIR", requires = "witness")]
        witness_out: Option<PathBuf>,
    },
    /// Check race witnesses against a trace, independently of every engine
    ///
    /// FILE is the JSON output of `cprace analyze --witness --format json` (every
    /// race with a non-null witness is checked) or one object
    /// {"first": E1, "second": E2, "witness": [ids...]}. A witness is valid when,
    /// replayed in the listed order, each event is the next one of its thread, a
    /// forked thread starts after its fork, a join follows every event of the
    /// joined thread, no acquire takes a lock another thread holds, every read
    /// (volatile too) sees the write it saw in the trace, and afterwards E1 and
    /// E2 (conflicting accesses of two threads) are the next events of their
    /// threads. Prints one line per race; exit 0 when all are valid, 1 when some
    /// is not, 2 on bad input.
    ///
    /// Examples:
    ///   cprace analyze t.std --relation syncp --witness --format json > r.json
    ///   cprace verify t.std --witness r.json
    #[command(verbatim_doc_comment)]
    Verify {
        /// Trace file.
        trace: PathBuf,
        /// The witness file (JSON).
        #[arg(long)]
        witness: PathBuf,
        /// Input format (detected when omitted).
        #[arg(long, value_enum)]
        input_format: Option<Format>,
    },
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
    ///
    /// Examples:
    ///   cprace gen --profile ftpserver --events 10M --format std -o ftp-10M.std
    ///   cprace gen --events 1000 --threads 3 --locks 2 --seed 7 | cprace stats -
    ///   cprace gen --profile long-cs --cs-length 500 --locked-share 0.9 -o long.csv
    ///   cprace gen --threads 16 --nesting 4 --fork-join false --volatiles 0 -n 100k
    #[command(verbatim_doc_comment)]
    Gen(GenArgs),
    /// Choose a window: run windowed CP once per K and tabulate the races
    ///
    /// Loads the trace once, then runs CP with each window K of --windows and
    /// prints one row per K (ascending, `none` last), then the bound rows.
    /// Each row is `analyze --relation cp --window K`: K bounds CP's
    /// reasoning and every pair is checked (a pair K or more apart races
    /// exactly when HB leaves it unordered), so rows rise from exact HB
    /// towards exact CP as K grows. Columns:
    ///   window          K, or `none` (exact CP); `hb`/`wcp` for the bounds
    ///   relation        relation and engine of the row
    ///   racy events     events with an earlier conflicting access that the
    ///                   relation leaves unordered
    ///   racy vars       distinct variables of those races
    ///   loc pairs       distinct (unordered) location pairs of the witnesses
    ///   HB racy         racy events of exact HB (always CP racy events too)
    ///   new vs HB       racy events of the row that HB misses: what CP's
    ///                   prediction adds
    ///   time            wall-clock time of the row's run
    ///   peak memory     most heap the run held at once, above the loaded trace
    /// The bound rows are exact: `hb` is exact HB (the lower bound of every CP
    /// row), `wcp` exact WCP (the upper bound of every CP row). CP racy events
    /// never shrink as K grows.
    ///
    /// Recommendation: the smallest K after which racy events stop growing
    /// within the sweep, with the evidence, e.g.
    ///   recommended K = 1000: racy events 412 at K=1000, unchanged at 5000 and none
    /// Text output prints it under the table and marks the row with `*`; JSON
    /// and CSV set `recommended` true on that row and print the sentence on
    /// standard error. Include `none` (or use auto) for the evidence to reach
    /// exact CP.
    ///
    /// --windows auto runs 10, 30, 100, 300, 1000, ... (steps of about √10)
    /// while below the trace length, then none (a window at least the trace
    /// length is the same as none).
    ///
    /// --format json prints an array of row objects: row (`window` for a CP
    /// row, `bound` for the hb/wcp rows), window (K, or null for none and for
    /// the bound rows), relation, engine, racy_events, racy_variables,
    /// location_pairs, hb_racy_events, new_vs_hb, seconds, peak_bytes (null
    /// when not measured), recommended. --format csv has the same columns, one
    /// row per line after a header (empty window for none and the bounds,
    /// empty peak_bytes when not measured).
    ///
    /// --plot FILE.svg or FILE.png draws two panels against K (log scale,
    /// `none` at the right end): CP racy events with the exact HB and WCP
    /// bounds (log scale when the counts span two decades) and the recommended
    /// K marked; below, CP time (the median of --repeat N runs, bars from min
    /// to max). --plot-size WxH (default 960x720) and --plot-dpi (PNG only;
    /// 192 doubles the pixels) size the figure.
    ///
    /// While stderr is a terminal, progress (current run, phase, events read)
    /// is shown there after a second, unless --quiet. Exit codes: 0 when no CP
    /// row has a race, 1 when some does, 2 on bad input or usage.
    ///
    /// Examples:
    ///   cprace sweep trace.std --windows 100,500,1000,5000,none
    ///   cprace sweep trace.std --windows auto --plot sweep.svg
    ///   cprace sweep trace.std --repeat 5 --plot sweep.png --plot-dpi 192
    ///   cprace sweep trace.csv --windows 1k,10k,100k --format json > sweep.json
    ///   cprace gen --profile small -n 3000 --seed 1 | cprace sweep - --plot k.png
    #[command(verbatim_doc_comment)]
    Sweep(crate::tools::sweep::SweepArgs),
    /// Dump a derived relation or the input facts, or explain why two events are (not) ordered
    ///
    /// Dump (--relation hb|cp|wcp|shb, no --pair): the relation among synchronization
    /// events (acq, rel, fork, join, vr, vw; re-entrant ones excluded), pairs
    /// `from,to` less than K events apart, sorted by (from, to). For cp, first
    /// the base edges (release -> acquire from rule a or b, rule b through the
    /// window rule, or hard fork/join/volatile edges), each with its rule.
    /// For wcp, first its base edges: rule a (release -> an access of a later
    /// critical section on the lock conflicting with the first section),
    /// rule b (release -> later release of the lock), hard; WCP is exact
    /// (as in analyze), so --window only limits the dumped pairs. shb
    /// (schedulable HB) is HB plus an edge from the write each data read
    /// reads from, when another thread wrote it; syncp is not an order and
    /// has no query (analyze --relation syncp --witness shows its races).
    /// CSV columns: relation,kind,rule,from,to,from_thread,from_op,from_target,
    /// from_loc,to_thread,to_op,to_target,to_loc with kind `base` or `pair`.
    /// JSON: {"relation","window","events","sync_events","base_edges":[..],
    /// "pairs":[..]} with one object per row. Output is streamed.
    ///
    /// Explain (--pair E1,E2): whether event E1 is ordered before E2 and a
    /// witness chain: HB steps (po, release-acquire, fork, join, volatile;
    /// for shb also reads-from: a write -> another thread's read of it),
    /// and for cp the base CP edge with what justifies it (rule a: the two
    /// conflicting accesses; rule b: the CP-ordered acquire/end pair, with its
    /// own chain as a numbered justification; window: HB-ordered and K apart;
    /// hard: fork/join/volatile); for wcp the base WCP edge likewise (rule a:
    /// the conflicting accesses; rule b: the WCP-ordered pair (acquire of the
    /// first section, release of the second) with its own chain). When CP
    /// (WCP) does not order an HB-ordered pair, the HB path is shown with why
    /// no rule keeps each of its steps.
    /// --format text (default) or json: {"ordered","chain":[{"from","to",
    /// "kind","rule"?,"details"}],"justifications",...}.
    ///
    /// Facts (--facts, --facts-dir DIR): the CP paper's input relations
    /// (TraceNext, ThreadForEvent, AcqEvent, RelEvent, ReadEvent, WriteEvent,
    /// VolatileReadEvent, VolatileWriteEvent, ForkEvent, JoinEvent,
    /// MatchingCriticalSecBoundary, CriticalSecEnd, InSameCriticalSec,
    /// ForkJoinEdge) and the name tables (ThreadName, LockName, VariableName).
    /// --facts prints CSV `relation,x,y,name` or a JSON object of arrays;
    /// --facts-dir writes one tab-separated NAME.facts per relation plus
    /// schema.dl, as Souffle reads them.
    ///
    /// The window defaults to 1000 for cp (as in analyze) and none for hb,
    /// wcp and shb.
    /// Exit codes: 0 for every answer, ordered or not (a query, not a race
    /// report); 2 for bad input, unknown event ids or bad usage.
    ///
    /// Examples:
    ///   cprace query data/figures/cp-fig1.csv --relation cp
    ///   cprace query data/figures/cp-fig1.csv --relation cp --pair 0,7
    ///   cprace query data/figures/cp-fig5.csv --relation wcp --pair 10,23
    ///   cprace query trace.csv --relation hb --window 500 --format json
    ///   cprace query trace.csv --facts-dir facts/
    #[command(verbatim_doc_comment)]
    Query(QueryArgs),
    /// Print a shell completion script
    ///
    /// Examples:
    ///   cprace completions bash > ~/.local/share/bash-completion/completions/cprace
    ///   cprace completions zsh > ~/.zfunc/_cprace
    ///   cprace completions fish > ~/.config/fish/completions/cprace.fish
    #[command(verbatim_doc_comment)]
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff)
    ///
    /// Examples:
    ///   cprace man > cprace.1 && man ./cprace.1
    #[command(verbatim_doc_comment)]
    Man,
    /// Run a C/C++ compiler with the recording instrumentation and runtime
    ///
    /// Compiles with gcc/clang's -fsanitize=thread instrumentation but links
    /// libcprace_rt (next to cprace) instead of ThreadSanitizer's runtime.
    ///
    /// Examples:
    ///   cprace cc gcc -O1 -g prog.c -o prog -lpthread
    ///   CC="cprace cc gcc" make
    #[command(verbatim_doc_comment)]
    Cc(crate::record::CcArgs),
    /// Run a program built with `cprace cc` and write its trace
    ///
    /// Passes the program's exit status through and prints on standard error
    /// how many events were recorded. Locations are `file:line` from the debug
    /// info (build with -g); variables are named after globals where the
    /// symbol table knows them, addresses otherwise. The trace is STD text,
    /// or by its name RapidBin (`.bin`, the fastest; zstd-compressed STD
    /// when the run has volatile accesses) or zstd-compressed STD (`.zst`).
    ///
    /// Examples:
    ///   cprace record -o prog.std -- ./prog arg1 arg2
    ///   cprace record -o prog.bin -- ./prog arg1 arg2
    ///   cprace record -o prog.std --analyze cp -- ./prog
    #[command(verbatim_doc_comment)]
    Record(crate::record::RecordArgs),
}

/// Output format of `query`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum QueryFormat {
    /// Readable text (--pair only; the default there).
    Text,
    /// One CSV table (dumps and --facts; the default there).
    Csv,
    /// One JSON object.
    Json,
}

/// Two event ids `E1,E2`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pair(pub u64, pub u64);

fn parse_pair(s: &str) -> Result<Pair, String> {
    let bad = || format!("`{s}` is not a pair of event ids; expected E1,E2 such as 3,17");
    let (a, b) = s.split_once(',').ok_or_else(bad)?;
    let id = |x: &str| parse_count(x).map_err(|_| bad());
    Ok(Pair(id(a)?, id(b)?))
}

/// Options of `cprace query`.
#[derive(clap::Args, Debug)]
pub struct QueryArgs {
    /// Trace file (`-` reads standard input).
    pub trace: PathBuf,
    /// The relation to dump or query (case-insensitive).
    #[arg(long, value_enum, ignore_case = true, required_unless_present_any = ["facts", "facts_dir"], conflicts_with_all = ["facts", "facts_dir"])]
    pub relation: Option<QueryRelation>,
    /// Window K (cp: 1000 by default; hb, wcp: none): dumps keep pairs less
    /// than K apart; windowed CP orders HB-ordered events K or more apart
    /// (HB and WCP stay exact).
    #[arg(long, value_parser = parse_window, conflicts_with_all = ["facts", "facts_dir"])]
    pub window: Option<Window>,
    /// Explain whether event E1 is ordered before event E2 (`E1,E2`).
    #[arg(long, value_parser = parse_pair, value_name = "E1,E2")]
    pub pair: Option<Pair>,
    /// Output format: text (--pair), csv (dumps, --facts) or json.
    #[arg(long, value_enum)]
    pub format: Option<QueryFormat>,
    /// Print the CP paper's input relations instead of a derived relation.
    #[arg(long)]
    pub facts: bool,
    /// Write the input relations as Souffle fact files into DIR.
    #[arg(long, value_name = "DIR")]
    pub facts_dir: Option<PathBuf>,
    /// Input format (detected when omitted).
    #[arg(long, value_enum)]
    pub input_format: Option<Format>,
}

/// The trace file and input format a command reads, if it reads one.
fn trace_input(c: &mut Command) -> Option<(&mut PathBuf, Option<Format>)> {
    match c {
        Command::Stats {
            trace,
            input_format,
            ..
        }
        | Command::Convert {
            trace,
            input_format,
            ..
        }
        | Command::Analyze {
            trace,
            input_format,
            ..
        } => Some((trace, *input_format)),
        Command::Sweep(a) => Some((&mut a.trace, a.input_format)),
        Command::Query(a) => Some((&mut a.trace, a.input_format)),
        Command::Verify {
            trace,
            input_format,
            ..
        } => Some((trace, *input_format)),
        Command::Gen(_)
        | Command::Completions { .. }
        | Command::Man
        | Command::Cc(_)
        | Command::Record(_) => None,
    }
}

/// Run a parsed command line; returns the process exit code.
pub fn run(mut cli: Cli, out: &mut impl Write) -> Result<i32> {
    // Cleared when this returns, before main prints an error or the output.
    let _progress = crate::progress::start(cli.quiet);
    // --lenient: read a cleaned copy of the trace (kept until the command ends).
    let _cleaned = match trace_input(&mut cli.command) {
        Some((path, format)) if cli.lenient => {
            let cleaned = crate::trace::lenient::clean(path, format)?;
            if let Some(c) = &cleaned {
                crate::trace::lenient::report(c);
                *path = c.path.to_path_buf();
            }
            cleaned
        }
        _ => None,
    };
    match cli.command {
        Command::Stats {
            trace,
            format,
            input_format,
        } => {
            crate::progress::phase("counting");
            let mut counts = crate::tools::stats::Counts::default();
            let (names, load, _) =
                trace::stream(&trace, input_format, |id, ev| counts.add(id, ev))?;
            let v = crate::tools::stats::to_json(&counts, &names, &load);
            match format {
                StatsFormat::Json => writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?,
                StatsFormat::Text => write!(out, "{}", crate::tools::stats::to_text(&v))?,
            }
            Ok(0)
        }
        Command::Convert {
            trace,
            to,
            output,
            input_format,
            rapid,
        } => crate::tools::convert::run(
            &crate::tools::convert::Args {
                trace,
                to,
                output,
                input_format,
                rapid,
            },
            out,
        ),
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut cmd, "cprace", out);
            Ok(0)
        }
        Command::Man => {
            let cmd = <Cli as clap::CommandFactory>::command();
            clap_mangen::Man::new(cmd).render(out)?;
            Ok(0)
        }
        Command::Gen(args) => run_gen(&args),
        Command::Sweep(args) => crate::tools::sweep::run_cli(&args, out),
        Command::Query(args) => run_query(&args, out),
        Command::Cc(args) => crate::record::run_cc(&args),
        Command::Record(args) => crate::record::run_record(&args, out),
        Command::Analyze {
            trace,
            relation,
            engine,
            window,
            max_distance,
            format,
            input_format,
            first_race,
            order_races,
            all,
            max_reports,
            witness,
            witness_out,
        } => {
            let reporting = if first_race {
                crate::race::cp::Reporting::FirstRace
            } else if order_races {
                crate::race::cp::Reporting::OrderRaces
            } else {
                crate::race::cp::Reporting::All
            };
            let (window, max_distance) = match (relation, window, max_distance) {
                (Relation::Cp, w, d) => (
                    w.map_or(race::default_window(relation), |w| w.0),
                    d.and_then(|d| d.0),
                ),
                (_, Some(_), Some(_)) => {
                    return Err(crate::UsageError(format!(
                        "on --relation {}, --window is an alias of --max-distance; give one of them",
                        relation.name()
                    ))
                    .into());
                }
                (_, w, d) => (None, w.or(d).and_then(|d| d.0)),
            };
            let opts = Options {
                relation,
                engine,
                window,
                max_distance,
                input_format,
                reporting,
                // The summary needs only counts; other streaming formats
                // read the races back from a temporary file.
                keep: match format {
                    OutputFormat::Summary => crate::report::Keep::Count,
                    f if f.streams() => crate::report::Keep::Spill,
                    _ => crate::report::Keep::Collect,
                },
            };
            let (report, names) = if witness {
                // Witnesses need the whole trace; the report is collected.
                let opts = Options {
                    keep: crate::report::Keep::Collect,
                    ..opts
                };
                let t = trace::load(&trace, input_format)?;
                let mut report = race::analyze_trace(&t, &opts)?;
                crate::witness::attach(&mut report, &t);
                if let Some(dir) = witness_out {
                    let n = crate::witness::write_dir(&report, &t, &dir)?;
                    report.notes.push(format!(
                        "wrote {n} reordered traces (witness, then the two racy events) to {}",
                        dir.display()
                    ));
                }
                (report, t.names)
            } else {
                race::analyze_path(&trace, &opts)?
            };
            // Notes qualify the result in every format, so they go to stderr.
            for n in &report.notes {
                eprintln!("cprace: note: {}", crate::report::printable(n));
            }
            let layout = crate::report::Layout { all, max_reports };
            if format.streams() {
                // The analysis succeeded; stream (a spilled report is never
                // held in memory, not even as output).
                crate::output::to_stdout(|w| report.write(&names, format, &layout, w))?;
            } else {
                report.write(&names, format, &layout, out)?;
            }
            let code = report.exit_code();
            let big = report.events > crate::alloc::BIG;
            crate::alloc::drop_later((report, names), big);
            Ok(code)
        }
        Command::Verify {
            trace,
            witness,
            input_format,
        } => crate::witness::verify::run_cli(&trace, &witness, input_format, out),
    }
}

/// `cprace query`: dumps and facts stream straight to standard output (they
/// can be far larger than memory); an explained pair goes to `out`.
fn run_query(args: &QueryArgs, out: &mut impl Write) -> Result<i32> {
    use crate::tools::query::{DumpFormat, Request};
    let usage = |m: &str| anyhow::Error::new(crate::UsageError(m.into()));
    let json = match (args.format, args.pair.is_some()) {
        (Some(QueryFormat::Csv), true) => {
            return Err(usage("--pair prints text or json, not csv"));
        }
        (Some(QueryFormat::Text), false) => {
            return Err(usage(
                "dumps and --facts print csv or json; text is for --pair",
            ));
        }
        (f, _) => f == Some(QueryFormat::Json),
    };
    if args.pair.is_some() && args.relation.is_none() {
        return Err(usage("--pair needs --relation hb, cp, wcp or shb"));
    }
    let t = trace::load(&args.trace, args.input_format)?;
    crate::progress::phase("query: computing");
    let Some(relation) = args.relation.map(Relation::from) else {
        if let Some(dir) = &args.facts_dir {
            crate::tools::query::export::write_facts_dir(&t, dir)?;
        }
        if args.facts {
            crate::output::to_stdout(|w| crate::tools::query::export::write_facts(&t, json, w))?;
        }
        return Ok(0);
    };
    let window = args.window.map_or(race::default_window(relation), |w| w.0);
    match args.pair {
        Some(Pair(from, to)) => {
            let req = Request::Pair { from, to, json };
            crate::tools::query::run(&t, relation, window, &req, out)?;
        }
        None => {
            let format = if json {
                DumpFormat::Json
            } else {
                DumpFormat::Csv
            };
            // Compute before writing, so errors never leave partial output.
            let engine = crate::tools::query::engine(&t, relation, window)?;
            crate::output::to_stdout(|w| {
                crate::tools::query::write_dump(&t, engine.as_ref(), format, w)
            })?;
        }
    }
    Ok(0)
}

/// Parse a count: digits with an optional k, M or G suffix (10M = 10^7);
/// `_` separators are allowed. Every numeric option accepts this form.
pub fn parse_count(s: &str) -> Result<u64, String> {
    let t = s.trim().replace('_', "");
    let (num, mul) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 1_000),
        Some('m' | 'M') => (&t[..t.len() - 1], 1_000_000),
        Some('g' | 'G') => (&t[..t.len() - 1], 1_000_000_000),
        _ => (&t[..], 1),
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mul))
        .ok_or_else(|| {
            format!(
                "`{s}` is not a count; expected digits with an optional k, M or G suffix (e.g. 10M)"
            )
        })
}

/// [`parse_count`] for options held in 32 bits.
fn parse_u32(s: &str) -> Result<u32, String> {
    let n = parse_count(s)?;
    u32::try_from(n).map_err(|_| format!("`{s}` is too large; expected at most {}", u32::MAX))
}

fn parse_share(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(p) if (0.0..=1.0).contains(&p) => Ok(p),
        _ => Err(format!(
            "`{s}` is not a share; expected a number from 0 to 1"
        )),
    }
}

fn parse_profile(s: &str) -> Result<String, String> {
    if crate::tools::generate::Config::profile(s).is_some() {
        Ok(s.to_string())
    } else {
        Err(format!(
            "unknown profile `{s}`; expected one of: {}",
            crate::tools::generate::Config::PROFILES.join(", ")
        ))
    }
}

/// Options of `cprace gen`: a profile, then knobs overriding it.
#[derive(clap::Args, Debug)]
pub struct GenArgs {
    /// Named profile giving the defaults: small, ftpserver, long-cs, many-threads, threads-256, bench, arrays.
    #[arg(long, default_value = "bench", value_parser = parse_profile)]
    pub profile: String,
    /// Number of events to write (k, M, G suffixes: 10M is ten million).
    #[arg(short = 'n', long, default_value = "1M", value_parser = parse_count)]
    pub events: u64,
    /// Seed of the random generator: same seed and options, same bytes.
    #[arg(long, default_value = "0", value_parser = parse_count)]
    pub seed: u64,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ConvertFormat::Csv)]
    pub format: ConvertFormat,
    /// Output file (standard output when omitted).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Threads (1 to 65536).
    #[arg(long, value_parser = parse_u32)]
    pub threads: Option<u32>,
    /// Locks (0 disables locking).
    #[arg(long, value_parser = parse_u32)]
    pub locks: Option<u32>,
    /// Data variables (at least 1).
    #[arg(long, value_parser = parse_u32)]
    pub vars: Option<u32>,
    /// Volatile variables (0 disables volatile accesses).
    #[arg(long, value_parser = parse_u32)]
    pub volatiles: Option<u32>,
    /// Share of events that are volatile accesses (when there are volatiles).
    #[arg(long, value_parser = parse_share)]
    pub volatile_share: Option<f64>,
    /// Deepest lock nesting per thread.
    #[arg(long, value_parser = parse_u32)]
    pub nesting: Option<u32>,
    /// Mean critical-section length in events, acquire and release included.
    #[arg(long)]
    pub cs_length: Option<f64>,
    /// Share of data accesses made while holding a lock (reached within about
    /// 0.01; `cprace stats` reports it as accesses_under_locks).
    #[arg(long, value_parser = parse_share)]
    pub locked_share: Option<f64>,
    /// Share of data accesses that are writes.
    #[arg(long, value_parser = parse_share)]
    pub write_share: Option<f64>,
    /// Thread T0 forks the others and joins them when they finish (true), or
    /// all threads run from the start (false).
    #[arg(long)]
    pub fork_join: Option<bool>,
    /// Chance per acquire attempt of re-acquiring a lock already held.
    #[arg(long, value_parser = parse_share)]
    pub reentrant: Option<f64>,
    /// Chance that a release is not of the innermost lock held.
    #[arg(long, value_parser = parse_share)]
    pub out_of_nesting: Option<f64>,
    /// Distinct program locations per thread (at least 1).
    #[arg(long, value_parser = parse_u32)]
    pub locations: Option<u32>,
    /// Share of accesses going to a few hot variables (contention).
    #[arg(long, value_parser = parse_share)]
    pub hot: Option<f64>,
}

impl GenArgs {
    /// The generator configuration: the profile, overridden by each knob given.
    pub fn config(&self) -> Result<crate::tools::generate::Config> {
        let usage = |m: String| anyhow::Error::new(crate::UsageError(m));
        let mut c = crate::tools::generate::Config::profile(&self.profile)
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
        if c.vars.checked_add(c.volatiles).is_none() {
            return Err(usage("--vars plus --volatiles must stay below 2^32".into()));
        }
        Ok(c)
    }
}

/// `cprace gen --format rapidbin`: the trace, and with `-o` its side file
/// of names (both replaced only when complete).
fn run_gen_rapidbin(args: &GenArgs, cfg: &crate::tools::generate::Config) -> Result<i32> {
    use crate::tools::generate::{rapidbin_names, rapidbin_problem, write_rapidbin};
    if let Some(p) = rapidbin_problem(cfg) {
        return Err(crate::UsageError(format!("cannot generate RapidBin: {p}")).into());
    }
    match &args.output {
        Some(p) => {
            let mut named = 0;
            crate::output::write_file(p, |w| {
                named = write_rapidbin(cfg, &mut &mut *w)
                    .with_context(|| format!("cannot write {}", p.display()))?
                    .1;
                Ok(())
            })?;
            let side = crate::trace::rapid_bin::side_path(p);
            let [threads, locks, vars, locs] = rapidbin_names(cfg, named);
            crate::output::write_file(&side, |w| {
                crate::trace::rapid_bin::write_side(
                    &threads,
                    &locks,
                    &vars[..],
                    &locs,
                    &mut &mut *w,
                )
                .with_context(|| format!("cannot write {}", side.display()))
            })?;
        }
        None => crate::output::to_stdout(|w| write_rapidbin(cfg, &mut &mut *w).map(|_| ()))?,
    }
    Ok(0)
}

/// `cprace gen`: stream a generated trace to a file or standard output.
fn run_gen(args: &GenArgs) -> Result<i32> {
    use crate::tools::generate::{TextFormat, write};
    let cfg = args.config()?;
    let fmt = match args.format {
        ConvertFormat::Csv => TextFormat::Csv,
        ConvertFormat::Std => TextFormat::Std,
        ConvertFormat::Rapidbin => return run_gen_rapidbin(args, &cfg),
    };
    match &args.output {
        Some(p) => {
            crate::output::write_file(p, |w| {
                write(&cfg, fmt, &mut &mut *w)
                    .map(|_| ())
                    .with_context(|| format!("cannot write {}", p.display()))
            })?;
        }
        // Streamed: the trace may be far larger than memory.
        None => crate::output::to_stdout(|w| write(&cfg, fmt, &mut &mut *w).map(|_| ()))?,
    }
    Ok(0)
}
