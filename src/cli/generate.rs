//! What the shell and `man` read, generated from the clap definitions so they cannot drift:
//! `throng completions SHELL` and `throng man`.

use std::io::Write;

use clap::CommandFactory;

use super::args::{CompletionsArgs, ManArgs};
use super::{Cli, CliError, EXIT_OK};

/// Prints the completion script for a shell.
pub(crate) fn completions(a: &CompletionsArgs) -> Result<u8, CliError> {
    let mut out = Vec::new();
    clap_complete::generate(a.shell, &mut Cli::command(), "throng", &mut out);
    write_stdout(&out)
}

/// Prints throng(1), or writes it and a page for each subcommand into a directory.
pub(crate) fn man(a: &ManArgs) -> Result<u8, CliError> {
    match &a.dir {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .and_then(|()| clap_mangen::generate_to(Cli::command(), dir))
                .map_err(|e| CliError::Usage(format!("--dir {}: {e}", dir.display())))?;
            Ok(EXIT_OK)
        }
        None => {
            // As generate_to makes it: `throng help` has no page of its own to list.
            let mut out = Vec::new();
            clap_mangen::Man::new(Cli::command().disable_help_subcommand(true))
                .render(&mut out)
                .map_err(|e| CliError::Runtime(e.into()))?;
            write_stdout(&out)
        }
    }
}

/// Writes the whole text at once; a closed pipe (`| head`) is no error.
fn write_stdout(text: &[u8]) -> Result<u8, CliError> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text).and_then(|()| stdout.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(CliError::Runtime(e.into())),
        _ => Ok(EXIT_OK),
    }
}
