//! `mecha completions SHELL`: a completion script, generated from the same
//! definition the parser uses.

use clap::Args;
use clap_complete::Shell;

use crate::Failure;

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell to complete for (bash, zsh, fish, elvish, powershell).
    shell: Shell,
}

pub fn run(args: &CompletionsArgs) -> Result<u8, Failure> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut crate::cli_command(), "mecha", &mut script);
    crate::output::out(&String::from_utf8_lossy(&script));
    Ok(0)
}
