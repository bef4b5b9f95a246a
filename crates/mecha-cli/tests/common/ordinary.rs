//! Running a test's program as an ordinary user (uid 1234) when the tests
//! run as root, where permissions would stop nothing.

use std::path::Path;
use std::process::Command;

pub const USER: &str = "1234";

pub fn as_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// `command` as the ordinary user: itself when the tests are not root, or
/// through `setpriv` with the same arguments, environment and directory,
/// and the same program unless `program` names another.
pub fn as_user(command: Command, program: Option<&Path>) -> Command {
    if !as_root() {
        return command;
    }
    let mut wrapped = Command::new("setpriv");
    wrapped
        .args(["--reuid", USER, "--regid", USER, "--clear-groups", "--"])
        .arg(program.map_or(command.get_program(), Path::as_os_str))
        .args(command.get_args())
        .env_clear();
    for (key, value) in command.get_envs() {
        if let Some(value) = value {
            wrapped.env(key, value);
        }
    }
    if let Some(dir) = command.get_current_dir() {
        wrapped.current_dir(dir);
    }
    wrapped
}
