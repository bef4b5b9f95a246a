//! Every spelling of a declared argument that a `forbid` or `prompt` rule
//! must see: the raw value, and what the tool will actually act on.
//!
//! A forbidden `secrets/*` must also catch `./secrets/key`,
//! `notes/../secrets/key` and the absolute path; a forbidden `http://*` must
//! also catch `HTTP://…`, `http:\\…` and `" http://…"`. So paths are judged
//! as the jail resolves them and URLs as the tool parses them. Allow rules
//! never look here: they stay as strict as the raw text.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;
use url::Url;

use crate::{ArgKind, JailError, ResolvedPath, Tool, ToolCtx, parse_url};

/// The spellings of one call's declared path and URL arguments, beyond the
/// raw values.
#[derive(Debug, Default)]
pub struct Spellings {
    /// Argument name to its other spellings.
    forms: BTreeMap<String, Vec<String>>,
}

impl Spellings {
    /// Resolves every path argument `tool` declares, with the resolver the
    /// tool will use (a writer's refuses protected directories), and
    /// normalizes every URL argument. A path the jail refuses is an error:
    /// the call cannot run, so nobody should be asked about it.
    pub fn of(tool: &dyn Tool, input: &Value, ctx: &ToolCtx) -> Result<Self, JailError> {
        let mut forms = BTreeMap::new();
        for &(key, kind) in tool.argument_kinds() {
            // A missing or non-string argument is the schema's business; the
            // tool then uses its default (fs_list's workspace) or refuses.
            let Some(raw) = input.get(key).and_then(Value::as_str) else {
                continue;
            };
            let extra = match kind {
                ArgKind::ReadPath => path_forms(&ctx.resolve(raw)?, ctx.workspace()),
                ArgKind::WritePath => path_forms(&ctx.resolve_in_workspace(raw)?, ctx.workspace()),
                ArgKind::Url => url_forms(raw),
            };
            forms.insert(key.to_owned(), extra);
        }
        Ok(Self { forms })
    }

    /// The raw value, then every other spelling of argument `key`.
    pub(super) fn of_value<'a>(&'a self, key: &str, raw: &'a str) -> impl Iterator<Item = &'a str> {
        std::iter::once(raw).chain(
            self.forms
                .get(key)
                .into_iter()
                .flatten()
                .map(String::as_str),
        )
    }
}

/// The canonical absolute path and, when it lies in the workspace, the
/// path relative to the workspace root (`.` for the root itself).
fn path_forms(resolved: &ResolvedPath, workspace: &Path) -> Vec<String> {
    let absolute = resolved.absolute();
    let mut forms = vec![absolute.display().to_string()];
    if let Ok(relative) = absolute.strip_prefix(workspace) {
        forms.push(if relative.as_os_str().is_empty() {
            ".".to_owned()
        } else {
            relative.display().to_string()
        });
    }
    forms
}

/// The URL as the tool will request it, the same without its user part,
/// each without a host's trailing dot (`example.com.` is `example.com`),
/// and each without the lone `/` path the parser adds, so `https://host`
/// in a rule still matches.
fn url_forms(raw: &str) -> Vec<String> {
    let Ok(url) = parse_url(raw) else {
        // The tool refuses what it cannot parse, so there is nothing else
        // it could act on.
        return Vec::new();
    };
    let mut urls = vec![url.clone()];
    // `https://x@evil.com/` goes to evil.com: a rule on the host must see
    // it without the user part the parser keeps.
    if !url.username().is_empty() || url.password().is_some() {
        let mut anonymous = url.clone();
        if anonymous.set_username("").is_ok() && anonymous.set_password(None).is_ok() {
            urls.push(anonymous);
        }
    }
    for url in urls.clone() {
        push_undotted(&mut urls, &url);
    }
    let mut forms = Vec::new();
    for u in &urls {
        forms.push(u.as_str().to_owned());
        if let Some(bare) = bare_root(u) {
            forms.push(bare);
        }
    }
    forms
}

/// Adds `url` without its host's trailing dot, if it has one.
fn push_undotted(urls: &mut Vec<Url>, url: &Url) {
    if let Some(host) = url.host_str().filter(|h| h.ends_with('.')) {
        let mut undotted = url.clone();
        if undotted.set_host(Some(host.trim_end_matches('.'))).is_ok() {
            urls.push(undotted);
        }
    }
}

/// `https://host` for `https://host/`, when nothing follows the `/`.
fn bare_root(url: &Url) -> Option<String> {
    let root_only = url.path() == "/" && url.query().is_none() && url.fragment().is_none();
    root_only
        .then(|| url.as_str().strip_suffix('/').map(str::to_owned))
        .flatten()
}
