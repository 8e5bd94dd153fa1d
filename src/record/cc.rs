//! `cprace cc`: run a C/C++ compiler with ThreadSanitizer instrumentation but
//! link the recorder runtime instead of libtsan.
//!
//! gcc adds libtsan to any link given `-fsanitize=thread`, so the flag goes
//! to compile steps only: a command that compiles and links at once is split
//! into one `-c` per source file (objects in a temporary directory) and a link
//! without the flag, with `-lcprace_rt` (and an rpath to it) first.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

/// File name of the runtime library `cargo build` puts next to `cprace`.
pub(crate) const RUNTIME: &str = "libcprace_rt.so";

/// The directory holding the runtime: `$CPRACE_RT_DIR`, else the directory of
/// the running `cprace` executable or its `deps` (where cargo builds it as a
/// dependency of cprace), whichever holds the newer runtime.
pub(crate) fn runtime_dir() -> Result<PathBuf> {
    let dir = match std::env::var_os("CPRACE_RT_DIR") {
        Some(d) => PathBuf::from(d),
        None => {
            let exe_dir = std::env::current_exe()
                .context("cannot locate the cprace executable")?
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default();
            // `cargo build` puts the runtime in both (one file, hard-linked),
            // `cargo test` only updates `deps`: take the newer, so a test run
            // never links a runtime older than the cprace it runs.
            let deps = exe_dir.join("deps");
            let modified = |d: &Path| {
                std::fs::metadata(d.join(RUNTIME))
                    .and_then(|m| m.modified())
                    .ok()
            };
            match (modified(&exe_dir), modified(&deps)) {
                (None, Some(_)) => deps,
                (Some(e), Some(d)) if d > e => deps,
                _ => exe_dir,
            }
        }
    };
    if !dir.join(RUNTIME).is_file() {
        bail!(
            "the recorder runtime {RUNTIME} is not in {} (build it with `cargo build`, which builds it next to cprace, or point CPRACE_RT_DIR at it)",
            dir.display()
        );
    }
    Ok(dir)
}

/// Options whose value is the next argument.
const TAKES_VALUE: &[&str] = &[
    "-o",
    "-I",
    "-D",
    "-U",
    "-include",
    "-imacros",
    "-isystem",
    "-iquote",
    "-idirafter",
    "-isysroot",
    "-x",
    "-MF",
    "-MT",
    "-MQ",
    "-L",
    "-l",
    "-T",
    "-Xlinker",
    "-Xpreprocessor",
    "-Xassembler",
    "-u",
    "-z",
    "-aux-info",
    "--param",
    "-e",
];

const SOURCE_EXTS: &[&str] = &["c", "cc", "cp", "cpp", "cxx", "c++", "C", "CPP", "i", "ii"];

fn is_source(arg: &OsStr) -> bool {
    let p = Path::new(arg);
    !arg.to_string_lossy().starts_with('-')
        && p.extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| SOURCE_EXTS.contains(&e))
}

/// True when the command only compiles, preprocesses or assembles.
fn no_link(args: &[OsString]) -> bool {
    args.iter().any(|a| {
        matches!(
            a.to_str(),
            Some("-c" | "-S" | "-E" | "-M" | "-MM" | "-fsyntax-only")
        )
    })
}

/// Linker-only arguments, dropped from the per-source compile steps.
fn link_only(a: &str) -> bool {
    a.starts_with("-l") || a.starts_with("-L") || a.starts_with("-Wl,")
}

/// True when `arg` is a file a compiler reads rather than the compiler: a
/// source, header, object or library.
fn is_input_file(arg: &OsStr) -> bool {
    is_source(arg)
        || Path::new(arg)
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| ["h", "hpp", "hh", "o", "a", "so", "s", "S"].contains(&e))
}

/// Runs `compiler args` the `cprace cc` way; returns the compiler's exit code.
/// A `compiler` that is an option or an input file is an error saying that
/// the first argument names the compiler.
pub fn run(compiler: &OsStr, args: &[OsString]) -> Result<i32> {
    if compiler.to_string_lossy().starts_with('-') || is_input_file(compiler) {
        let mut example = String::from("cprace cc gcc");
        for a in std::iter::once(compiler).chain(args.iter().map(OsString::as_os_str)) {
            example.push(' ');
            example.push_str(&a.to_string_lossy());
        }
        bail!(
            "`{}` is not a compiler: the first argument of `cprace cc` names the compiler to run (gcc, clang, g++, ...), e.g. `{example}`",
            compiler.to_string_lossy()
        );
    }
    let args: Vec<OsString> = args
        .iter()
        .filter(|a| a.as_os_str() != "-fsanitize=thread")
        .cloned()
        .collect();
    if no_link(&args) || args.is_empty() || args.iter().any(|a| a == "--version" || a == "-v") {
        let mut c = Command::new(compiler);
        c.arg("-fsanitize=thread").args(&args);
        return status(c, compiler);
    }
    let rt = runtime_dir()?;
    // Split the arguments: sources, and everything else (with option values).
    let mut sources = Vec::new();
    let mut compile = Vec::new();
    let mut link = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let s = a.to_string_lossy();
        if TAKES_VALUE.contains(&s.as_ref()) && i + 1 < args.len() {
            let pair = [a.clone(), args[i + 1].clone()];
            if s != "-o"
                && s != "-L"
                && s != "-l"
                && s != "-Xlinker"
                && s != "-T"
                && s != "-u"
                && s != "-z"
            {
                compile.extend(pair.iter().cloned());
            }
            link.extend(pair);
            i += 2;
            continue;
        }
        if is_source(a) {
            sources.push((i, a.clone()));
            link.push(OsString::new()); // replaced by the object below
        } else {
            let is_input = !s.starts_with('-');
            if !link_only(&s) && !is_input {
                compile.push(a.clone());
            }
            link.push(a.clone());
        }
        i += 1;
    }
    let tmp = tempfile::tempdir().context("cannot create a temporary directory")?;
    let mut objs = sources.iter().map(|_| PathBuf::new()).collect::<Vec<_>>();
    for (n, (_, src)) in sources.iter().enumerate() {
        let stem = Path::new(src)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let obj = tmp.path().join(format!("{n}-{stem}.o"));
        let mut c = Command::new(compiler);
        c.arg("-fsanitize=thread")
            .args(&compile)
            .arg("-c")
            .arg(src)
            .arg("-o")
            .arg(&obj);
        let code = status(c, compiler)?;
        if code != 0 {
            return Ok(code);
        }
        objs[n] = obj;
    }
    let mut n = 0;
    let link: Vec<OsString> = link
        .into_iter()
        .map(|a| {
            if a.is_empty() {
                n += 1;
                objs[n - 1].clone().into_os_string()
            } else {
                a
            }
        })
        .collect();
    let mut c = Command::new(compiler);
    c.arg("-Wl,--push-state,--no-as-needed")
        .arg(format!("-L{}", rt.display()))
        .arg(format!("-Wl,-rpath,{}", rt.display()))
        .arg("-lcprace_rt")
        .arg("-Wl,--pop-state")
        .args(&link);
    status(c, compiler)
}

fn status(mut c: Command, compiler: &OsStr) -> Result<i32> {
    let st = c
        .status()
        .with_context(|| format!("cannot run the compiler `{}`", compiler.to_string_lossy()))?;
    Ok(super::exit_code(st))
}
