//! Skills: procedures the user writes as `SKILL.md` files (the Agent Skills
//! standard: YAML frontmatter, then markdown), disclosed progressively.
//! Level 1 is [`level1_block`], a line per skill in the system prompt;
//! level 2 and 3 are the [`SkillTool`], which returns a body or a file
//! bundled beside it, proved to lie inside the skill's own folder.
//!
//! [`Store::load`] reads the global store and says, per folder, why a skill
//! did not load. YAML is parsed with budgets after the frontmatter is split
//! off by hand with a size cap, so hostile frontmatter costs bounded time
//! and memory; the one common authoring slip (an unquoted `: `) is read
//! leniently and reported.
//!
//! It deliberately has no way to install, fetch or write a skill: the user
//! writing them is the safety argument. It knows nothing of config, of which
//! skills a run selects, or of how the loop applies a narrowing.

mod bundled;
mod frontmatter;
mod lenient;
mod level1;
mod store;
mod tool;
mod yaml;

pub use frontmatter::MAX_FRONTMATTER_BYTES;
pub use level1::level1_block;
pub use store::{LoadFailure, MAX_SKILL_FILE_BYTES, Skill, Store};
pub use tool::SkillTool;
