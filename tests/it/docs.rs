//! Every shell example in README.md and the book (docs/**/*.md) runs, and
//! prints what the page shows.
//!
//! The convention (the book's introduction states it for readers): a fenced
//! block whose language is `console`, `sh`, `bash` or `shell` is an example.
//! Its lines starting with `$ ` are commands (a line ending in `\` continues
//! on the next); the lines after a command, up to the next one, are its
//! output, standard output then standard error, compared line by line
//! (trailing spaces ignored): `[..]` in a line stands for any text, a line
//! `...` for any number of lines. A line `? N` gives the exit code (0
//! without one). A block marked `ignore` (```` ```console,ignore ````) is
//! not run: it needs what CI has not (a network, ThreadSanitizer, the Java
//! Grande traces, other tools).
//!
//! Commands run through `sh -c` with the built `cprace` first on PATH, in a
//! temporary directory per page (commands on one page share it, in page
//! order) where `data/` and `tests/` link to the repository's.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common::cli::BIN;

/// One command of an example with what the page says it prints.
struct Example {
    /// Page and line of the command, for failure messages.
    at: String,
    command: String,
    expected: Vec<String>,
    status: i32,
}

/// The pages: README.md and every Markdown file under docs/.
fn pages(root: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|e| e == "md") {
                out.push(p);
            }
        }
    }
    let mut out = vec![root.join("README.md")];
    walk(&root.join("docs"), &mut out);
    out
}

/// The examples of one page, and how many blocks are marked `ignore`.
fn examples(page: &str, text: &str) -> Result<(Vec<Example>, usize), String> {
    let mut out = Vec::new();
    let mut ignored = 0;
    let mut lines = text.lines().enumerate();
    while let Some((n, line)) = lines.next() {
        let trimmed = line.trim_start();
        let Some(info) = trimmed.strip_prefix("```") else {
            continue;
        };
        let indent = line.len() - trimmed.len();
        let mut words = info.split(|c: char| c == ',' || c.is_whitespace());
        let lang = words.next().unwrap_or("");
        let ignore = words.any(|w| w == "ignore");
        let mut body = Vec::new();
        for (_, l) in lines.by_ref() {
            if l.trim_start().starts_with("```") {
                break;
            }
            body.push(l.get(indent..).unwrap_or(l.trim_start()));
        }
        if !matches!(lang, "console" | "sh" | "bash" | "shell") {
            continue;
        }
        if ignore {
            ignored += 1;
            continue;
        }
        let first = out.len();
        let mut i = 0;
        while i < body.len() {
            let Some(cmd) = body[i].strip_prefix("$ ") else {
                if first == out.len() {
                    return Err(format!(
                        "{page}:{}: a shell block whose first line is not a `$ ` command (mark it `ignore` if it is not to run)",
                        n + 1
                    ));
                }
                i += 1;
                continue;
            };
            let at = format!("{page}:{}", n + 2 + i);
            let mut command = cmd.to_string();
            while command.ends_with('\\') && i + 1 < body.len() {
                command.pop();
                i += 1;
                command.push_str(body[i]);
            }
            i += 1;
            let mut expected = Vec::new();
            let mut status = 0;
            while i < body.len() && !body[i].starts_with("$ ") {
                match body[i].strip_prefix("? ") {
                    Some(code) => {
                        status = code
                            .trim()
                            .parse()
                            .map_err(|_| format!("{at}: bad exit code line `{}`", body[i]))?
                    }
                    None => expected.push(body[i].trim_end().to_string()),
                }
                i += 1;
            }
            out.push(Example {
                at,
                command,
                expected,
                status,
            });
        }
    }
    Ok((out, ignored))
}

/// Whether `line` matches `pattern`, where `[..]` stands for any text.
fn line_matches(pattern: &str, line: &str) -> bool {
    let parts: Vec<&str> = pattern.split("[..]").collect();
    if parts.len() == 1 {
        return pattern == line;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !line.starts_with(first) || line.len() < first.len() + last.len() || !line.ends_with(last) {
        return false;
    }
    let mut rest = &line[first.len()..line.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(p) => rest = &rest[p + part.len()..],
            None => return false,
        }
    }
    true
}

/// Whether `actual` matches `expected`, where a line `...` stands for any
/// number of lines.
fn matches(expected: &[String], actual: &[&str]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((e, rest)) if e == "..." => (0..=actual.len()).any(|k| matches(rest, &actual[k..])),
        Some((e, rest)) => {
            !actual.is_empty()
                && line_matches(e, actual[0].trim_end())
                && matches(rest, &actual[1..])
        }
    }
}

#[test]
fn the_documented_commands_print_what_the_pages_show() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bin_dir = Path::new(BIN).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut failures = Vec::new();
    let (mut run, mut ignored) = (0, 0);
    for page in pages(root) {
        let name = page.strip_prefix(root).unwrap().display().to_string();
        let text = std::fs::read_to_string(&page).unwrap();
        let (examples, skipped) = match examples(&name, &text) {
            Ok(e) => e,
            Err(e) => {
                failures.push(e);
                continue;
            }
        };
        ignored += skipped;
        if examples.is_empty() {
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        for link in ["data", "tests"] {
            std::os::unix::fs::symlink(root.join(link), dir.path().join(link)).unwrap();
        }
        for ex in examples {
            run += 1;
            let out = Command::new("sh")
                .arg("-c")
                .arg(&ex.command)
                .current_dir(dir.path())
                .env("PATH", &path)
                .stdin(Stdio::null())
                .output()
                .expect("run sh");
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            let actual: Vec<&str> = text.lines().collect();
            let status = out.status.code().unwrap_or(-1);
            if status != ex.status || !matches(&ex.expected, &actual) {
                failures.push(format!(
                    "{}: `{}` exited {status} (page: {}) and printed:\n{text}--- the page shows:\n{}\n",
                    ex.at,
                    ex.command,
                    ex.status,
                    ex.expected.join("\n")
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {run} documented commands differ from their pages:\n\n{}",
        failures.len(),
        failures.join("\n")
    );
    // A harness that finds nothing proves nothing.
    assert!(run >= 40, "only {run} documented commands found");
    eprintln!("{run} documented commands run, {ignored} blocks marked ignore");
}

#[test]
fn the_matcher_elides_only_what_it_is_told_to() {
    let e = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert!(matches(&e(&["a", "...", "d"]), &["a", "b", "c", "d"]));
    assert!(matches(&e(&["a", "..."]), &["a"]));
    assert!(!matches(&e(&["a"]), &["a", "b"]));
    assert!(!matches(&e(&["a", "c"]), &["a", "b"]));
    assert!(line_matches("took [..] s", "took 0.12 s"));
    assert!(line_matches("[..]x[..]", "axb"));
    assert!(!line_matches("took [..] s", "took 0.12 ms!"));
    assert!(!line_matches("ab[..]ba", "aba"));
}
