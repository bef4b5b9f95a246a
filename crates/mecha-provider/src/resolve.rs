//! Which provider the `[provider]` settings and the environment pick, and
//! where each of its values came from: config, a variable, or mecha's
//! default. [`crate::build`] and `mecha config` both read this, so what is
//! shown is what a run uses.

use crate::ProviderError;
use crate::config::{
    DEFAULT_ANTHROPIC_BASE_URL, DEFAULT_ANTHROPIC_MODEL, DEFAULT_OPENAI_BASE_URL, HOW_TO_CONFIGURE,
    Kind, ProviderSettings,
};

/// Where one provider value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// `[provider]` in config.
    Config,
    /// This environment variable.
    Env(String),
    /// mecha's own default.
    Default,
}

/// A value and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sourced<T> {
    pub value: T,
    pub source: Source,
}

/// The provider the settings and the environment pick. Holds no key: only
/// the variable's name and whether it is set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub kind: Sourced<Kind>,
    /// `None`: an OpenAI-compatible provider with no model named yet, or
    /// the scripted provider (which has none).
    pub model: Option<Sourced<String>>,
    /// As written, not yet checked to be a URL; `None` for the scripted
    /// provider.
    pub base_url: Option<Sourced<String>>,
    /// The variable the API key is read from; `None` for the scripted
    /// provider.
    pub key_env: Option<String>,
    pub key_set: bool,
}

/// Picks the provider kind and fills the gaps config left from the
/// environment (an empty variable counts as unset), then the defaults.
pub fn resolve(
    settings: &ProviderSettings,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Resolved, ProviderError> {
    let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    let from_env = |name: &str| {
        var(name).map(|value| Sourced {
            value,
            source: Source::Env(name.to_owned()),
        })
    };
    let first_set = |names: &[&'static str]| names.iter().copied().find(|n| var(n).is_some());
    let kind = match settings.kind {
        Some(kind) => Sourced {
            value: kind,
            source: Source::Config,
        },
        None => match (
            first_set(&["ANTHROPIC_API_KEY"]),
            first_set(&["OPENAI_API_KEY", "OPENAI_BASE_URL"]),
        ) {
            (Some(name), _) => Sourced {
                value: Kind::Anthropic,
                source: Source::Env(name.to_owned()),
            },
            (None, Some(name)) => Sourced {
                value: Kind::OpenAi,
                source: Source::Env(name.to_owned()),
            },
            (None, None) if settings.script.is_some() => Sourced {
                value: Kind::Scripted,
                source: Source::Config,
            },
            // An Anthropic endpoint named but no key: the key is what is
            // missing, not a provider.
            (None, None) if var("ANTHROPIC_BASE_URL").is_some() => {
                return Err(ProviderError::NotConfigured(
                    "ANTHROPIC_BASE_URL is set but ANTHROPIC_API_KEY is not: set the key too \
                     (any value, for a local server that checks none), or add a [provider] \
                     section with kind = \"anthropic\" and api_key_env naming the variable \
                     that holds it"
                        .to_owned(),
                ));
            }
            (None, None) => return Err(ProviderError::NotConfigured(HOW_TO_CONFIGURE.to_owned())),
        },
    };
    let configured = |value: &Option<String>| {
        value.clone().map(|value| Sourced {
            value,
            source: Source::Config,
        })
    };
    let default = |value: &str| Sourced {
        value: value.to_owned(),
        source: Source::Default,
    };
    let (model, base_url, key_env) = match kind.value {
        Kind::Anthropic => (
            configured(&settings.model)
                .or_else(|| from_env("ANTHROPIC_MODEL"))
                .or_else(|| Some(default(DEFAULT_ANTHROPIC_MODEL))),
            configured(&settings.base_url)
                .or_else(|| from_env("ANTHROPIC_BASE_URL"))
                .or_else(|| Some(default(DEFAULT_ANTHROPIC_BASE_URL))),
            Some("ANTHROPIC_API_KEY"),
        ),
        Kind::OpenAi => (
            configured(&settings.model).or_else(|| from_env("OPENAI_MODEL")),
            configured(&settings.base_url)
                .or_else(|| from_env("OPENAI_BASE_URL"))
                .or_else(|| Some(default(DEFAULT_OPENAI_BASE_URL))),
            Some("OPENAI_API_KEY"),
        ),
        Kind::Scripted => (None, None, None),
    };
    let key_env = key_env.map(|conventional| {
        settings
            .api_key_env
            .clone()
            .unwrap_or_else(|| conventional.to_owned())
    });
    let key_set = key_env.as_deref().is_some_and(|name| var(name).is_some());
    Ok(Resolved {
        kind,
        model,
        base_url,
        key_env,
        key_set,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn each_value_says_whether_config_a_variable_or_the_default_gave_it() {
        let env = env_of(&[
            ("ANTHROPIC_API_KEY", "k"),
            ("ANTHROPIC_MODEL", "from-env"),
            ("OPENAI_MODEL", "other"),
        ]);
        let r = resolve(&ProviderSettings::default(), &env).unwrap();
        assert_eq!(r.kind.value, Kind::Anthropic);
        assert_eq!(r.kind.source, Source::Env("ANTHROPIC_API_KEY".into()));
        let model = r.model.unwrap();
        assert_eq!(model.value, "from-env");
        assert_eq!(model.source, Source::Env("ANTHROPIC_MODEL".into()));
        assert_eq!(r.base_url.unwrap().source, Source::Default);
        assert_eq!(r.key_env.as_deref(), Some("ANTHROPIC_API_KEY"));
        assert!(r.key_set);

        let settings = ProviderSettings {
            kind: Some(Kind::OpenAi),
            model: Some("configured".into()),
            api_key_env: Some("MY_KEY".into()),
            ..ProviderSettings::default()
        };
        let r = resolve(&settings, &env).unwrap();
        assert_eq!(r.kind.source, Source::Config);
        assert_eq!(r.model.unwrap().source, Source::Config);
        assert_eq!(r.key_env.as_deref(), Some("MY_KEY"));
        assert!(!r.key_set);
    }

    #[test]
    fn an_empty_variable_is_unset() {
        let env = env_of(&[
            ("ANTHROPIC_API_KEY", "  "),
            ("OPENAI_BASE_URL", "http://h/v1"),
        ]);
        let r = resolve(&ProviderSettings::default(), &env).unwrap();
        assert_eq!(r.kind.value, Kind::OpenAi);
        assert_eq!(r.kind.source, Source::Env("OPENAI_BASE_URL".into()));
        assert_eq!(r.model, None);
        assert!(!r.key_set);
    }
}
