//! A project's `mecha.toml` layered over the user's settings: it may only
//! narrow them (see [`Settings::narrow_by_project`]).

use std::path::Path;

use super::*;

impl Settings {
    /// Applies a project file: `enabled` intersects, `disabled` unions, and
    /// limits may only come down.
    pub(super) fn narrow_by_project(
        &mut self,
        path: &Path,
        project: ProjectConfig,
    ) -> Result<(), ConfigError> {
        if project.mcp.is_some() || project.mcp_files.is_some() {
            return Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                message: "a project's mecha.toml cannot add MCP servers: a cloned repository \
                          would start programs of its choosing. Add them to \
                          $MECHA_HOME/config.toml, or pass --mcp-file for one run"
                    .to_owned(),
            });
        }
        subagents::refuse_in_project(path, project.subagent.as_ref())?;
        hooks::refuse_in_project(path, project.hook.as_ref())?;
        self.project_compact_at = compaction::project_compact_at(path, project.provider)?;
        if let Some(rule) = project.rule.iter().find(|r| r.action == RuleAction::Allow) {
            return Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                message: format!(
                    "a project's mecha.toml cannot add an `allow` [[rule]] (for `{}`): it may only \
                     narrow, with `forbid` or `prompt`. Put allow rules in $MECHA_HOME/config.toml",
                    rule.tool
                ),
            });
        }
        self.rules.extend(project.rule);
        self.narrow_sandbox(path, project.sandbox)?;
        let mut dropped = self.skills.narrow_by_project(&project.skills, path);
        self.warnings.append(&mut dropped);
        let agent = project.agent;
        if agent.timezone.is_some() {
            return Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                message: "a project's mecha.toml cannot set [agent] timezone; it is yours, in \
                          $MECHA_HOME/config.toml"
                    .to_owned(),
            });
        }
        if let Some(files) = instructions::check(path, agent.instructions_files)? {
            self.instructions_files = files;
        }
        let user_file = self.global_file.clone();
        let mut narrowing = Narrowing::new(path, &user_file);
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
