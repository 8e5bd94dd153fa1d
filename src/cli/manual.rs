//! `cprace completions` and `cprace man`: the command line describing itself.

use std::io::Write;

use super::Outcome;
use clap::CommandFactory;

use super::Cli;

#[derive(clap::Args, Debug)]
/// Print a shell completion script
///
/// Examples:
///   cprace completions bash > ~/.local/share/bash-completion/completions/cprace
///   cprace completions zsh > ~/.zfunc/_cprace
///   cprace completions fish > ~/.config/fish/completions/cprace.fish
#[command(verbatim_doc_comment)]
pub(crate) struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

/// `cprace completions SHELL`.
pub(crate) fn completions(args: CompletionsArgs, out: &mut dyn Write) -> Outcome {
    let mut cmd = Cli::command();
    clap_complete::generate(args.shell, &mut cmd, "cprace", out);
    Ok(0)
}

/// `cprace man`.
pub(crate) fn man(out: &mut dyn Write) -> Outcome {
    clap_mangen::Man::new(Cli::command()).render(out)?;
    Ok(0)
}
