//! A project's `mecha.toml` layered over the user's settings: it may only
//! narrow them (see [`Settings::narrow_by_project`]).

use std::path::Path;

use super::*;

/// What only the user's file may set, whatever a project's says: the
/// setting, what stays instead, and why.
const USERS_ALONE: [(&str, &str, &str); 6] = [
    (
        "an MCP server ([[mcp]] or mcp_files)",
        "your servers stay",
        "a cloned repository must not start programs of its choosing; add servers to your \
         file, or pass --mcp-file for one run",
    ),
    (
        "[[subagent]]",
        "your profiles stay",
        "a cloned repository must not define agents; a project may switch one off, like any \
         tool, with [tools] disabled = [\"NAME\"]",
    ),
    (
        "[[hook]]",
        "your hooks stay",
        "a cloned repository must not run programs of its choosing; a project may narrow with \
         [[rule]] forbid or prompt instead",
    ),
    (
        "[[search]]",
        "your backends stay",
        "a cloned repository must not choose where your queries go; a project may switch \
         web_search off with [tools] disabled = [\"web_search\", \"web_open\"]",
    ),
    (
        "[[outbox]]",
        "your actions stay",
        "a cloned repository must not decide what can be sent in your name",
    ),
    (
        "[agent] timezone",
        "yours stays",
        "the timezone is yours, not the project's",
    ),
];

impl Settings {
    /// Applies a project file: `enabled` intersects, `disabled` unions, and
    /// limits may only come down. What it may not set is ignored with a
    /// warning ([`Narrowing`]); only a bad value of what it may set is an
    /// error.
    pub(super) fn narrow_by_project(
        &mut self,
        path: &Path,
        project: ProjectConfig,
    ) -> Result<(), ConfigError> {
        let user_file = self.global_file.clone();
        let mut narrowing = Narrowing::new(path, &user_file);
        let agent = project.agent;
        let present = [
            project.mcp.is_some() || project.mcp_files.is_some(),
            project.subagent.is_some(),
            project.hook.is_some(),
            project.search.is_some(),
            project.outbox.is_some(),
            agent.timezone.is_some(),
        ];
        for ((setting, stays, why), set) in USERS_ALONE.iter().zip(present) {
            if set {
                narrowing.not_the_projects(setting, stays, why);
            }
        }
        self.project_compact_at =
            compaction::project_compact_at(path, project.provider, &mut narrowing)?;
        let (allows, rules): (Vec<RuleConfig>, Vec<RuleConfig>) = project
            .rule
            .into_iter()
            .partition(|r| r.action == RuleAction::Allow);
        for rule in allows {
            narrowing.not_the_projects(
                &format!("an `allow` [[rule]] for `{}`", rule.tool),
                "it is left out",
                "a project may only narrow, with `forbid` or `prompt` rules; allow rules go in \
                 your file",
            );
        }
        self.rules.extend(rules);
        self.narrow_sandbox(project.sandbox, &mut narrowing);
        self.skills
            .narrow_by_project(&project.skills, path, &mut narrowing);
        self.narrow_checkpoint(project.checkpoint, &mut narrowing);
        if let Some(files) = instructions::check(path, agent.instructions_files)? {
            self.instructions_files = files;
        }
        narrowing.mode(&mut self.permission_mode, agent.permission_mode);
        narrowing.limit(
            "[agent] max_turns",
            &mut self.max_turns,
            agent.max_turns,
            |n| n,
        );
        narrowing.switch_on(
            "[agent] block_sends_after_private",
            &mut self.block_sends_after_private,
            agent.block_sends_after_private,
        );
        narrowing.switch_on(
            "[agent] distrust_workspace",
            &mut self.distrust_workspace,
            agent.distrust_workspace,
        );
        let tools = project.tools;
        // Forcing only distrusts further, so a project may add it.
        self.add_forced(&tools);
        narrowing.enabled(
            &tools.enabled,
            self.tools_enabled.as_ref(),
            &self.tools_disabled,
        );
        self.narrow_enabled(non_empty_set(&tools.enabled));
        self.tools_disabled.extend(tools.disabled);
        if let Some(budget) = tools.output_budget_bytes {
            self.turn_budget = self.turn_budget.min(budget);
            self.project_budget = Some(budget);
        }
        narrowing.limit(
            "[tools] spill_max_bytes",
            &mut self.spill_max_bytes,
            tools.spill_max_bytes,
            |b| b,
        );
        narrowing.limit(
            "[tools] defer_schemas_over_bytes",
            &mut self.defer_schemas,
            tools.defer_schemas_over_bytes,
            |d| d,
        );
        let secs = |s: Option<u64>| s.map(Duration::from_secs);
        let shown = |d: Duration| d.as_secs();
        let shell = &mut self.builtins.shell;
        narrowing.limit(
            "[tools.shell] default_timeout_s",
            &mut shell.default_timeout,
            secs(tools.shell.default_timeout_s),
            shown,
        );
        narrowing.limit(
            "[tools.shell] max_timeout_s",
            &mut shell.max_timeout,
            secs(tools.shell.max_timeout_s),
            shown,
        );
        shell.default_timeout = shell.default_timeout.min(shell.max_timeout);
        let fetch = &mut self.builtins.fetch;
        narrowing.limit(
            "[tools.http_fetch] timeout_s",
            &mut fetch.timeout,
            secs(tools.http_fetch.timeout_s),
            shown,
        );
        narrowing.limit(
            "[tools.http_fetch] max_body_bytes",
            &mut fetch.max_body_bytes,
            tools.http_fetch.max_body_bytes,
            |b| b,
        );
        self.warnings.append(&mut narrowing.warnings);
        self.validate(path)
    }
}
