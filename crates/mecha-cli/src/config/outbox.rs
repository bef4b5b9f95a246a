//! `[[outbox]]`: the user's actions that stage for review.

use std::path::Path;

use super::ConfigError;

/// `[[outbox]]` entries, each one usable or an error naming what to fix.
pub(super) fn checked(
    path: &Path,
    actions: Vec<mecha_unattended::outbox::OutboxAction>,
) -> Result<Vec<mecha_unattended::outbox::OutboxAction>, ConfigError> {
    for action in &actions {
        action.check().map_err(|message| ConfigError::Invalid {
            path: path.to_owned(),
            message,
        })?;
    }
    Ok(actions)
}
