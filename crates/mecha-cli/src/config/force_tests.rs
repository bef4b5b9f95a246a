//! `[tools.NAME] force` and `[agent] distrust_workspace`: parsed for any
//! tool name, misspellings still errors, and a project may add distrust but
//! never take it away.

use mecha_core::{Egress, ForcedCapabilities, ForcedEgress};

use super::tests::{load, one_warning};

fn forced(global: &str, project: Option<&str>, tool: &str) -> ForcedCapabilities {
    load(Some(global), project).unwrap().forcing()[tool]
}

#[test]
fn force_parses_for_built_ins_mcp_tools_and_the_sectioned_tools() {
    let s = load(
        Some(
            "[tools.fs_read]\nforce = { untrusted_input = true }\n\
             [tools.\"notes__send_report\"]\nforce = { egress = \"chosen\" }\n\
             [tools.shell]\nmax_timeout_s = 600\nforce = { destructive = true, private_data = true }\n\
             [tools.http_fetch]\nforce = { egress = \"blind\" }\n",
        ),
        None,
    )
    .unwrap();
    let forcing = s.forcing();
    assert!(forcing["fs_read"].untrusted_input);
    assert_eq!(
        forcing["notes__send_report"].capabilities().egress,
        Egress::Chosen
    );
    assert!(forcing["shell"].destructive && forcing["shell"].private_data);
    assert_eq!(s.builtins.shell.max_timeout.as_secs(), 600);
    assert_eq!(forcing["http_fetch"].egress, ForcedEgress::Blind);
    // A table that forces nothing is no entry.
    let s = load(
        Some("[tools.todo]\nforce = { untrusted_input = false }\n"),
        None,
    )
    .unwrap();
    assert!(s.forcing().is_empty());
}

#[test]
fn a_misspelt_key_is_still_an_error_that_names_it() {
    let err = |text: &str| load(Some(text), None).unwrap_err().to_string();
    let inner = err("[tools.fs_read]\nforse = { untrusted_input = true }\n");
    assert!(inner.contains("config.toml:2:"), "{inner}");
    assert!(
        inner.contains("unknown field `forse`, expected `force`"),
        "{inner}"
    );
    let axis = err("[tools.fs_read]\nforce = { untrusted = true }\n");
    assert!(axis.contains("unknown field `untrusted`"), "{axis}");
    let word = err("[tools.shell]\nforce = { egress = \"anywhere\" }\n");
    assert!(word.contains("unknown variant `anywhere`"), "{word}");
    // A setting of [tools] misspelt is not taken for a tool's table.
    let setting = err("[tools]\noutput_budget_byte = 50000\n");
    assert!(
        setting.contains("unknown field `output_budget_byte`, expected one of `enabled`"),
        "{setting}"
    );
    assert!(setting.contains("config.toml:2:"), "{setting}");
}

#[test]
fn distrust_workspace_forces_untrusted_on_the_workspace_readers() {
    let s = load(Some("[agent]\ndistrust_workspace = true\n"), None).unwrap();
    let forcing = s.forcing();
    for tool in ["fs_read", "fs_list", "shell"] {
        assert_eq!(forcing[tool], ForcedCapabilities::UNTRUSTED, "{tool}");
    }
    assert!(!forcing.contains_key("fs_write"));
    assert!(load(None, None).unwrap().forcing().is_empty());
}

#[test]
fn a_project_may_add_distrust_and_force_but_not_take_them_away() {
    let s = load(
        Some("[tools.todo]\nforce = { egress = \"chosen\" }\n"),
        Some(
            "[agent]\ndistrust_workspace = true\n[tools.todo]\nforce = { untrusted_input = true, \
             egress = \"none\" }\n",
        ),
    )
    .unwrap();
    assert!(s.distrust_workspace);
    let todo = s.forcing()["todo"];
    assert!(todo.untrusted_input, "the project's force was not added");
    assert_eq!(todo.egress, ForcedEgress::Chosen, "the project narrowed");
    let shell = forced(
        "[tools.shell]\nforce = { untrusted_input = true }\n",
        Some("[tools.shell]\nforce = { untrusted_input = false }\n"),
        "shell",
    );
    assert!(shell.untrusted_input);
    one_warning(
        "[agent]\ndistrust_workspace = true\n",
        "[agent]\ndistrust_workspace = false\n",
        &[
            "[agent] distrust_workspace = false has no effect",
            "stays true",
        ],
    );
}
