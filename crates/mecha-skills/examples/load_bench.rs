//! Start-up cost of the skill store: loads 10, 100 and 1,000 skills from a
//! temporary store and prints the load time and the level-1 block's size.
//!
//! `cargo run --release -p mecha-skills --example load_bench`

use std::time::Instant;

use mecha_skills::{Store, level1_block};

fn main() -> std::io::Result<()> {
    for count in [10, 100, 1000] {
        let store = tempfile::tempdir()?;
        for i in 0..count {
            let name = format!("skill-{i:04}");
            let dir = store.path().join(&name);
            std::fs::create_dir_all(dir.join("reference"))?;
            std::fs::write(
                dir.join("SKILL.md"),
                format!(
                    "---\nname: {name}\ndescription: How to handle task {i}. Use whenever \
                     someone asks about task {i}, its deadlines or its paperwork.\n\
                     triggers: [task{i}, deadline, paperwork]\n---\n\n# Task {i}\n\n{}",
                    "1. A step of the procedure, written out in full.\n".repeat(40)
                ),
            )?;
            std::fs::write(dir.join("reference/notes.md"), "notes")?;
        }
        // Best of five, so a cold page cache does not decide the figure.
        let mut best = f64::MAX;
        let mut block = String::new();
        for _ in 0..5 {
            let started = Instant::now();
            let loaded = Store::load(store.path());
            block = level1_block(&loaded.skills);
            best = best.min(started.elapsed().as_secs_f64() * 1000.0);
            assert_eq!(loaded.skills.len(), count);
        }
        println!(
            "{count:>5} skills: load + level-1 block {best:.2} ms; block {} bytes ({} per skill)",
            block.len(),
            block.len() / count
        );
    }
    Ok(())
}
