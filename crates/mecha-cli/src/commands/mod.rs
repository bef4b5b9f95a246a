//! One module per subcommand.

pub mod tools;
