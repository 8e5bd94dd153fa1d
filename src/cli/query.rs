//! `cprace query`: its options, checked together, and the dump, facts or
//! explanation asked for.

use std::io::Write;
use std::path::PathBuf;

use super::Outcome;
use clap::ValueEnum;

use super::values::{Window, parse_count, parse_window};
use cprace::race;
use cprace::relation::Relation;
use cprace::trace::{self, Format};

/// The relations `query` answers for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum QueryRelation {
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

/// Output format of `query`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum QueryFormat {
    /// Readable text (--pair only; the default there).
    Text,
    /// One CSV table (dumps and --facts; the default there).
    Csv,
    /// One JSON object.
    Json,
}

/// Two event ids `E1,E2`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Pair(u64, u64);

fn parse_pair(s: &str) -> Result<Pair, String> {
    let bad = || format!("`{s}` is not a pair of event ids; expected E1,E2 such as 3,17");
    let (a, b) = s.split_once(',').ok_or_else(bad)?;
    let id = |x: &str| parse_count(x).map_err(|_| bad());
    Ok(Pair(id(a)?, id(b)?))
}

#[derive(clap::Args, Debug)]
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
pub(crate) struct QueryArgs {
    /// Trace file (`-` reads standard input).
    trace: PathBuf,
    /// The relation to dump or query (case-insensitive).
    #[arg(long, value_enum, ignore_case = true, required_unless_present_any = ["facts", "facts_dir"], conflicts_with_all = ["facts", "facts_dir"])]
    relation: Option<QueryRelation>,
    /// Window K (cp: 1000 by default; hb, wcp: none): dumps keep pairs less
    /// than K apart; windowed CP orders HB-ordered events K or more apart
    /// (HB and WCP stay exact).
    #[arg(long, allow_hyphen_values = true, value_parser = parse_window, conflicts_with_all = ["facts", "facts_dir"])]
    window: Option<Window>,
    /// Explain whether event E1 is ordered before event E2 (`E1,E2`).
    #[arg(long, allow_hyphen_values = true, value_parser = parse_pair, value_name = "E1,E2")]
    pair: Option<Pair>,
    /// Output format: text (--pair), csv (dumps, --facts) or json.
    #[arg(long, value_enum)]
    format: Option<QueryFormat>,
    /// Print the CP paper's input relations instead of a derived relation.
    #[arg(long)]
    facts: bool,
    /// Write the input relations as Souffle fact files into DIR.
    #[arg(long, value_name = "DIR")]
    facts_dir: Option<PathBuf>,
    /// Input format (detected when omitted).
    #[arg(long, value_enum)]
    input_format: Option<Format>,
    #[command(flatten)]
    lenient: super::Lenient,
}

impl QueryArgs {
    /// The trace this command reads, its input format and `--lenient`.
    pub(crate) fn input(&mut self) -> (&mut PathBuf, Option<Format>, bool) {
        (&mut self.trace, self.input_format, self.lenient.on)
    }
}

/// `cprace query`: dumps and facts stream straight to standard output (they
/// can be far larger than memory); an explained pair goes to `out`.
pub(crate) fn run(args: QueryArgs, out: &mut dyn Write) -> Outcome {
    use cprace::tools::query::{DumpFormat, Request};
    let usage = |m: &str| cprace::Error::Usage(m.into()).into();
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
    cprace::progress::phase("query: computing");
    let Some(relation) = args.relation.map(Relation::from) else {
        if let Some(dir) = &args.facts_dir {
            cprace::tools::query::export::write_facts_dir(&t, dir)?;
        }
        if args.facts {
            cprace::output::to_stdout(|w| cprace::tools::query::export::write_facts(&t, json, w))?;
        }
        return Ok(0);
    };
    let window = args.window.map_or(race::default_window(relation), |w| w.0);
    match args.pair {
        Some(Pair(from, to)) => {
            let req = Request::Pair { from, to, json };
            cprace::tools::query::run(&t, relation, window, &req, out)?;
        }
        None => {
            let format = if json {
                DumpFormat::Json
            } else {
                DumpFormat::Csv
            };
            // Compute before writing, so errors never leave partial output.
            let engine = cprace::tools::query::engine(&t, relation, window)?;
            cprace::output::to_stdout(|w| {
                cprace::tools::query::write_dump(&t, engine.as_ref(), format, w)
            })?;
        }
    }
    Ok(0)
}
