//! `mecha eval`'s model of a case set, without running anything:
//!
//! - [`cases`]: the case file (`[[case]]` with its `[[case.check]]`s),
//!   checked whole before any case runs, and the deterministic shards.
//! - [`checks`]: grading one check against what a run left: its answer,
//!   its trace, its workspace, and a command's exit status.
//! - [`report`]: each case's result, the set's, merging shard reports,
//!   pass@1 and pass@K, and what changed between two reports.
//!
//! The CLI runs each case (a copy of its fixture, a `mecha run` of its
//! own) and hands what it observed here.

pub mod cases;
pub mod checks;
pub mod report;

pub use cases::{Case, CaseSet, Check};
pub use checks::{CheckResult, Observed, TracedCall, grade};
pub use report::{CaseReport, Report};
