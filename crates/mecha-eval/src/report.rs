//! Reports: one entry per run of a case, the set's totals, pass@1 and
//! pass@K over repeats, shard reports merged, and two reports compared.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::checks::{CheckResult, TracedCall};

/// One run of one case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseReport {
    pub name: String,
    pub passed: bool,
    pub checks: Vec<CheckResult>,
    pub turns: u32,
    pub tokens: u64,
    pub seconds: f64,
    /// Which of `--repeat`'s runs this is, from 1.
    #[serde(default = "first")]
    pub attempt: u32,
    /// Why the run itself did not end in an answer, if it did not.
    #[serde(default)]
    pub error: Option<String>,
    /// The calls the model made, in order.
    #[serde(default)]
    pub trace: Vec<TracedCall>,
}

fn first() -> u32 {
    1
}

/// A whole set's report, as `--json` writes it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub cases: Vec<CaseReport>,
    pub passed: usize,
    pub failed: usize,
    /// The mean share of runs that passed, per case.
    #[serde(default)]
    pub pass_at_1: f64,
    /// The share of cases with at least one passing run.
    #[serde(default)]
    pub pass_at_k: f64,
    /// Runs per case.
    #[serde(default = "first")]
    pub repeat: u32,
    #[serde(default)]
    pub model: Option<String>,
}

impl Report {
    /// The report of `cases` (every run of every case), totals computed.
    pub fn of(mut cases: Vec<CaseReport>, model: Option<String>) -> Self {
        cases.sort_by(|a, b| a.name.cmp(&b.name).then(a.attempt.cmp(&b.attempt)));
        let passed = cases.iter().filter(|c| c.passed).count();
        let mut by_case: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
        for case in &cases {
            let entry = by_case.entry(&case.name).or_default();
            entry.0 += usize::from(case.passed);
            entry.1 += 1;
        }
        let count = by_case.len().max(1) as f64;
        let pass_at_1 = by_case
            .values()
            .map(|(p, n)| *p as f64 / *n as f64)
            .sum::<f64>()
            / count;
        let pass_at_k = by_case.values().filter(|(p, _)| *p > 0).count() as f64 / count;
        let repeat = by_case.values().map(|(_, n)| *n).max().unwrap_or(1) as u32;
        Self {
            failed: cases.len() - passed,
            passed,
            pass_at_1,
            pass_at_k,
            repeat,
            model,
            cases,
        }
    }

    /// Shard reports as one; a case in two of them is an error (the shards
    /// were not of one set, or one was given twice).
    pub fn merge(reports: Vec<Report>) -> Result<Self, String> {
        let mut seen: BTreeMap<(String, u32), ()> = BTreeMap::new();
        let mut cases = Vec::new();
        let mut models: Vec<Option<String>> = Vec::new();
        for report in reports {
            if !models.contains(&report.model) {
                models.push(report.model.clone());
            }
            for case in report.cases {
                if seen.insert((case.name.clone(), case.attempt), ()).is_some() {
                    return Err(format!(
                        "case `{}` (run {}) is in two of the reports; merge each shard's report \
                         once",
                        case.name, case.attempt
                    ));
                }
                cases.push(case);
            }
        }
        let model = match models.as_slice() {
            [one] => one.clone(),
            _ => None,
        };
        Ok(Self::of(cases, model))
    }

    /// Whether each case passed (all its runs).
    fn outcomes(&self) -> BTreeMap<&str, bool> {
        let mut out: BTreeMap<&str, bool> = BTreeMap::new();
        for case in &self.cases {
            let entry = out.entry(&case.name).or_insert(true);
            *entry &= case.passed;
        }
        out
    }

    /// The lines that say what changed from `old` to this report.
    pub fn compared_to(&self, old: &Report) -> Vec<String> {
        let (before, after) = (old.outcomes(), self.outcomes());
        let word = |passed: bool| if passed { "pass" } else { "FAIL" };
        let mut lines = Vec::new();
        for (name, now) in &after {
            match before.get(name) {
                Some(then) if then != now => {
                    lines.push(format!("{name}: {} -> {}", word(*then), word(*now)));
                }
                Some(_) => {}
                None => lines.push(format!("{name}: new, {}", word(*now))),
            }
        }
        for name in before.keys().filter(|name| !after.contains_key(*name)) {
            lines.push(format!("{name}: gone"));
        }
        let same = after
            .iter()
            .filter(|(name, now)| before.get(*name) == Some(*now))
            .count();
        lines.push(format!(
            "{same} cases unchanged; passed {} -> {} of {} -> {}",
            before.values().filter(|p| **p).count(),
            after.values().filter(|p| **p).count(),
            before.len(),
            after.len()
        ));
        lines
    }

    /// The table: one row per run, then the totals.
    pub fn table(&self) -> String {
        let width = self
            .cases
            .iter()
            .map(|c| c.name.len())
            .max()
            .unwrap_or(4)
            .max(4);
        let mut out = format!(
            "{:<width$}  {:<6}  {:>5}  {:>8}  {:>7}  why\n",
            "case", "result", "turns", "tokens", "seconds"
        );
        for case in &self.cases {
            let why = case.error.clone().map(|e| format!("run: {e}")).or_else(|| {
                case.checks
                    .iter()
                    .find(|c| !c.passed)
                    .map(|c| format!("{}: {}", c.kind, c.why))
            });
            let why = why.unwrap_or_default();
            let name = match self.repeat {
                1 => case.name.clone(),
                _ => format!("{} #{}", case.name, case.attempt),
            };
            out.push_str(&format!(
                "{name:<width$}  {:<6}  {:>5}  {:>8}  {:>7.2}  {why}\n",
                if case.passed { "pass" } else { "FAIL" },
                case.turns,
                case.tokens,
                case.seconds
            ));
        }
        out.push_str(&format!("{} passed, {} failed", self.passed, self.failed));
        if self.repeat > 1 {
            out.push_str(&format!(
                "; pass@1 {:.2}, pass@{} {:.2}",
                self.pass_at_1, self.repeat, self.pass_at_k
            ));
        }
        out.push('\n');
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(name: &str, attempt: u32, passed: bool) -> CaseReport {
        CaseReport {
            name: name.into(),
            passed,
            checks: vec![],
            turns: 1,
            tokens: 10,
            seconds: 0.1,
            attempt,
            error: None,
            trace: vec![],
        }
    }

    #[test]
    fn pass_at_1_and_pass_at_k_over_repeats() {
        let report = Report::of(
            vec![
                run("a", 1, true),
                run("a", 2, false),
                run("b", 1, false),
                run("b", 2, false),
            ],
            None,
        );
        assert_eq!((report.passed, report.failed, report.repeat), (1, 3, 2));
        assert!((report.pass_at_1 - 0.25).abs() < 1e-9);
        assert!((report.pass_at_k - 0.5).abs() < 1e-9);
    }

    #[test]
    fn shards_merge_and_a_case_twice_is_refused() {
        let a = Report::of(vec![run("a", 1, true)], Some("m".into()));
        let b = Report::of(vec![run("b", 1, false)], Some("m".into()));
        let merged = Report::merge(vec![a.clone(), b]).unwrap();
        assert_eq!((merged.passed, merged.failed), (1, 1));
        assert_eq!(merged.model.as_deref(), Some("m"));
        let twice = Report::merge(vec![a.clone(), a]).unwrap_err();
        assert!(twice.contains("two of the reports"), "{twice}");
    }

    #[test]
    fn a_comparison_names_what_changed() {
        let old = Report::of(
            vec![run("a", 1, true), run("b", 1, false), run("c", 1, true)],
            None,
        );
        let new = Report::of(
            vec![run("a", 1, true), run("b", 1, true), run("d", 1, false)],
            None,
        );
        let lines = new.compared_to(&old);
        assert!(lines.contains(&"b: FAIL -> pass".to_owned()), "{lines:?}");
        assert!(lines.contains(&"d: new, FAIL".to_owned()), "{lines:?}");
        assert!(lines.contains(&"c: gone".to_owned()), "{lines:?}");
        assert!(!lines.iter().any(|l| l.starts_with("a:")), "{lines:?}");
    }
}
