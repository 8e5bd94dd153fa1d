//! `cprace convert`: its options, turned into [`convert::Options`].

use std::io::Write;
use std::path::PathBuf;

use super::Outcome;

use cprace::tools::convert::{self, Target};
use cprace::trace::Format;

#[derive(clap::Args, Debug)]
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
/// A recording's byte masks (cprace's binary format) have no place in CSV,
/// STD or RapidBin: an access that starts inside its 8-byte cell gets the
/// variable named after its first byte (`s+4`, `0x7f30c4`), as `record`
/// itself writes those formats, so fields of one cell stay apart.
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
pub(crate) struct ConvertArgs {
    /// Trace file (`-` reads standard input).
    trace: PathBuf,
    /// Output format.
    #[arg(long, value_enum)]
    to: Target,
    /// Output file (standard output when omitted).
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Input format (detected when omitted).
    #[arg(long, value_enum)]
    input_format: Option<Format>,
    #[command(flatten)]
    lenient: super::Lenient,
    /// With --to std: integer locations RAPID can read, and the side table
    /// OUTPUT.locations.csv naming them (needs -o).
    #[arg(long, requires = "output")]
    rapid: bool,
}

impl ConvertArgs {
    /// The trace this command reads, its input format and `--lenient`.
    pub(crate) fn input(&mut self) -> (&mut PathBuf, Option<Format>, bool) {
        (&mut self.trace, self.input_format, self.lenient.on)
    }
}

/// `cprace convert`.
pub(crate) fn run(args: ConvertArgs, out: &mut dyn Write) -> Outcome {
    Ok(convert::run(
        &convert::Options {
            trace: args.trace,
            to: args.to,
            output: args.output,
            input_format: args.input_format,
            rapid: args.rapid,
        },
        out,
    )?)
}
