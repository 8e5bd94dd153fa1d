//! `cprace cc`: a compiler run with the recording instrumentation.

use std::ffi::OsString;

use super::Outcome;

#[derive(clap::Args, Debug)]
/// Run a C/C++ compiler with the recording instrumentation and runtime
///
/// Compiles with gcc/clang's -fsanitize=thread instrumentation but links
/// libcprace_rt (next to cprace) instead of ThreadSanitizer's runtime.
///
/// The first argument is always the compiler: an option (`-g`) or an input
/// file (`prog.c`) in its place is an error (exit 2) that shows the command
/// with a compiler; $CC is not guessed (it may itself be `cprace cc`).
///
/// Examples:
///   cprace cc gcc -O1 -g prog.c -o prog -lpthread
///   CC="cprace cc gcc" make
#[command(verbatim_doc_comment)]
pub(crate) struct CcArgs {
    /// The compiler to run (gcc, clang, g++, ...): always the first argument.
    // Hyphen values reach `run`, which explains what the first argument is.
    #[arg(allow_hyphen_values = true)]
    compiler: OsString,
    /// The compiler's arguments, passed through.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<OsString>,
}

/// `cprace cc COMPILER ARGS...`: the compiler's exit status.
pub(crate) fn run(args: CcArgs) -> Outcome {
    Ok(cprace::record::cc::run(&args.compiler, &args.args)?)
}
