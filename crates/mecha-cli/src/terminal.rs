//! What reaches the user's terminal from outside: every line passes
//! [`printable`] (mecha-core's one statement of what a terminal obeys or
//! prints as nothing); errors quoting outside text go through [`report`].

pub use mecha_core::printable;

/// A line of mecha's own on stderr carrying outside text (an API's error
/// message, a server's reason), made printable.
pub fn report(message: &str) {
    crate::output::err_line(&format!("mecha: {}", printable(message)));
}

/// Whether colour and dimming may be sent: not when NO_COLOR is set to
/// anything but the empty string (no-color.org).
pub fn colour_allowed() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}
