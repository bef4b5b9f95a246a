//! The run's tool surface once something narrowed it (a skill with
//! `tools:`): which registered tools a call may still reach.
//!
//! Three rules, the spec's: the surface is the union of every narrowing so
//! far (each names what its own procedure needs, so intersecting would
//! strand a run that loaded two), plus the tool that made each narrowing
//! call (the skill tool always stays reachable, or a procedure saying "now
//! load the follow-up" would name a vanished tool), intersected with what
//! is registered (a union of subsets is still a subset: it never grows past
//! the unrestricted surface). There is no unload: it lasts the session.
//!
//! A load gates the calls beside it in its turn too: they run concurrently
//! with it, so the turn is judged by the surface the load will leave
//! ([`Surface::for_turn`]).

use std::collections::BTreeSet;

use mecha_core::{Narrowing, Registry, ToolDefinition};

/// The tools a narrowed run may still call, and what narrowed it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Surface {
    /// What narrowed it, in the order the narrowings came, each once.
    by: Vec<String>,
    /// Sorted, like the registry: the definitions sent keep its order.
    tools: BTreeSet<String>,
    /// Only on the surface a turn is judged by, never on the session's:
    /// the skills whose load in that turn narrowed it, so a call refused
    /// beside the load is told why.
    loading: Vec<String>,
}

impl Surface {
    /// A surface as a session recorded it, for a resumed session: what
    /// narrowed it and the tools it kept.
    pub fn restored(by: Vec<String>, tools: impl IntoIterator<Item = String>) -> Self {
        Self {
            by,
            tools: tools.into_iter().collect(),
            loading: Vec::new(),
        }
    }

    /// The surface one turn's calls are judged by: `session`'s, narrowed as
    /// each of `loads` (what a call of the turn will narrow to, and the
    /// tool called) will narrow it. `None`: nothing narrows this turn.
    pub(crate) fn for_turn(
        session: Option<&Surface>,
        loads: &[(Narrowing, &str)],
        registry: &Registry,
    ) -> Option<Surface> {
        let mut surface = session.cloned();
        for (narrowing, caller) in loads {
            // A skill loaded before narrows nothing new.
            let again = surface
                .as_ref()
                .is_some_and(|s| s.by.contains(&narrowing.by));
            Surface::apply(&mut surface, narrowing, caller, registry);
            if !again && let Some(surface) = &mut surface {
                surface.loading.push(narrowing.by.clone());
            }
        }
        surface
    }

    /// Whether a call to `tool` may go ahead.
    pub fn allows(&self, tool: &str) -> bool {
        self.tools.contains(tool)
    }

    /// What narrowed the surface (skills' names), in order.
    pub fn by(&self) -> &[String] {
        &self.by
    }

    /// The tools it keeps, in name order.
    pub fn tools(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().map(String::as_str)
    }

    /// Applies `narrowing`, which a call to `caller` asked for, to the
    /// session's surface (`None`: unrestricted). Names `registry` does not
    /// hold add nothing. Returns whether the surface changed.
    pub(crate) fn apply(
        surface: &mut Option<Surface>,
        narrowing: &Narrowing,
        caller: &str,
        registry: &Registry,
    ) -> bool {
        let before = surface.clone();
        let current = surface.get_or_insert_with(Surface::default);
        let named = narrowing.tools.iter().map(String::as_str);
        for name in named.chain([caller]) {
            if registry.contains(name) {
                current.tools.insert(name.to_owned());
            }
        }
        if !current.by.contains(&narrowing.by) {
            current.by.push(narrowing.by.clone());
        }
        before.as_ref() != Some(current)
    }

    /// The definitions of the tools the surface keeps, in the order given
    /// (the registry's, which is sorted).
    pub(crate) fn definitions(&self, all: &[ToolDefinition]) -> Vec<ToolDefinition> {
        all.iter()
            .filter(|d| self.allows(&d.name))
            .cloned()
            .collect()
    }

    /// The refusal of a call to `tool`, registered but outside the surface:
    /// what narrowed it and what is left, so the model can finish with those
    /// or hand the question to the user.
    pub(crate) fn refusal(&self, tool: &str, registry: &Registry) -> String {
        let left: Vec<&str> = self.tools().filter(|t| registry.contains(t)).collect();
        let beside = match self.loading.as_slice() {
            [] => String::new(),
            [one] => format!(
                " The skill `{one}` is loaded in this same turn, and its `tools:` gate the calls \
                 made beside the load too."
            ),
            many => format!(
                " The skills {} are loaded in this same turn, and their `tools:` gate the calls \
                 made beside the loads too.",
                names(many)
            ),
        };
        format!(
            "`{tool}` is outside this run's tool surface: {who} narrowed it to {}.{beside} Finish \
             with those tools, or ask the user.",
            left.join(", "),
            who = match self.by.as_slice() {
                [] => "a skill".to_owned(),
                [one] => format!("the skill `{one}`"),
                many => format!("the skills {}", names(many)),
            },
        )
    }
}

/// `a`, `b` and `c`, each in backquotes.
fn names(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match quoted.as_slice() {
        [init @ .., last] if !init.is_empty() => format!("{} and {last}", init.join(", ")),
        _ => quoted.concat(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::sync::Arc;

    use async_trait::async_trait;
    use mecha_core::{Tool, ToolCtx, ToolOutput};
    use serde_json::{Value, json};

    use super::*;

    struct Named(&'static str);

    #[async_trait]
    impl Tool for Named {
        fn name(&self) -> &str {
            self.0
        }
        fn description(&self) -> &str {
            "test"
        }
        fn input_schema(&self) -> Value {
            json!({"type": "object"})
        }
        async fn call(&self, _: Value, _: &ToolCtx) -> anyhow::Result<ToolOutput> {
            Ok(ToolOutput::ok(""))
        }
    }

    fn registry(names: &[&'static str]) -> Registry {
        let mut r = Registry::new();
        for name in names {
            r.register(Arc::new(Named(name))).unwrap();
        }
        r
    }

    fn narrowing(by: &str, tools: &[&str]) -> Narrowing {
        Narrowing {
            by: by.into(),
            tools: tools.iter().map(|t| (*t).to_owned()).collect(),
        }
    }

    #[test]
    fn the_same_narrowing_twice_changes_nothing_the_second_time() {
        let r = registry(&["a", "b", "skill"]);
        let mut surface = None;
        let n = narrowing("review", &["a"]);
        assert!(Surface::apply(&mut surface, &n, "skill", &r));
        assert!(!Surface::apply(&mut surface, &n, "skill", &r));
        assert_eq!(surface.unwrap().by(), ["review"]);
    }

    #[test]
    fn the_refusal_names_every_skill_that_narrowed() {
        let r = registry(&["a", "b", "c", "skill"]);
        let mut surface = None;
        for (by, tool) in [("one", "a"), ("two", "b"), ("three", "c")] {
            Surface::apply(&mut surface, &narrowing(by, &[tool]), "skill", &r);
        }
        let refusal = surface.unwrap().refusal("w", &r);
        assert!(
            refusal.contains("the skills `one`, `two` and `three` narrowed it to a, b, c, skill."),
            "{refusal}"
        );
    }
}
