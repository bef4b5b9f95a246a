//! Checking a call's arguments against the tool's input schema before the
//! gate, so the model gets a precise complaint instead of the tool's guess.

use std::collections::HashMap;
use std::sync::Mutex;

use jsonschema::Validator;
use mecha_core::Tool;
use serde_json::Value;

/// Compiled validators, one per tool, built on first use.
#[derive(Default)]
pub struct SchemaCheck {
    compiled: Mutex<HashMap<String, std::sync::Arc<Option<Validator>>>>,
}

impl SchemaCheck {
    /// Drops every compiled validator: after the tool list changed, a tool
    /// may keep its name and change its schema.
    pub fn forget(&self) {
        if let Ok(mut map) = self.compiled.lock() {
            map.clear();
        }
    }

    /// `Err(message)` when `input` breaks the tool's schema. A schema that
    /// does not itself compile checks nothing (the tool still validates its
    /// own input), and is logged.
    pub fn check(&self, tool: &dyn Tool, input: &Value) -> Result<(), String> {
        let validator = {
            let Ok(mut map) = self.compiled.lock() else {
                return Ok(());
            };
            map.entry(tool.name().to_owned())
                .or_insert_with(|| {
                    let compiled = jsonschema::validator_for(&tool.input_schema());
                    if let Err(e) = &compiled {
                        tracing::warn!(tool = tool.name(), error = %e, "input schema does not compile");
                    }
                    std::sync::Arc::new(compiled.ok())
                })
                .clone()
        };
        let Some(validator) = validator.as_ref() else {
            return Ok(());
        };
        let problems: Vec<String> = validator
            .iter_errors(input)
            .take(5)
            .map(|e| {
                let at = e.instance_path().to_string();
                if at.is_empty() {
                    e.to_string()
                } else {
                    format!("at {at}: {e}")
                }
            })
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "the arguments for `{}` do not match its input schema: {}; fix them and call it again",
                tool.name(),
                problems.join("; ")
            ))
        }
    }
}
