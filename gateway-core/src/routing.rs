//! Model name → provider. Checked in order, first match wins:
//! 1. the `provider/model` form, when `provider` names a configured provider;
//! 2. the routes, as listed (exact names and globs; a route with `model` is an alias);
//! 3. each well-known provider's own model families (`claude-*`, `gpt-*`, `deepseek-*`);
//! 4. the default provider.

use std::sync::Arc;

use globset::{Glob, GlobMatcher};

/// What the table needs of a provider: routing is a pure decision over names, so it does
/// not know the config's provider type (which is `config::Provider`).
pub trait Destination {
    /// The name `provider/model` uses.
    fn name(&self) -> &str;
    /// Models it serves by name, for listings.
    fn models(&self) -> &[String];
}

/// A route as validated from config, before its pattern is compiled.
#[derive(Debug)]
pub struct RouteSpec<P> {
    pub pattern: String,
    pub provider: Arc<P>,
    pub model: Option<String>,
    /// Where the request goes when the provider fails before answering, in order.
    pub fallbacks: Vec<Step<P>>,
    /// Attempts for a request of this route, all steps together; `None` takes `[retry]`'s.
    pub max_attempts: Option<u32>,
}

/// One step of a fallback chain: a provider, and the model name it is sent (`None` keeps
/// the client's).
#[derive(Debug)]
pub struct Step<P> {
    pub provider: Arc<P>,
    pub model: Option<String>,
}

/// A route whose pattern is not a valid glob: where it is in the config, and why.
#[derive(Debug)]
pub struct BadPattern {
    pub path: String,
    pub message: String,
}

#[derive(Debug)]
struct Route<P> {
    /// Where it came from in the config (`routes[2]`, or `providers.x.kind` for a kind's
    /// families), so an answer can say which route it took.
    source: String,
    pattern: String,
    matcher: Option<GlobMatcher>,
    provider: Arc<P>,
    model: Option<String>,
    fallbacks: Vec<Step<P>>,
    max_attempts: Option<u32>,
}

impl<P> Route<P> {
    fn matches(&self, model: &str) -> bool {
        match &self.matcher {
            Some(m) => m.is_match(model),
            None => self.pattern == model,
        }
    }
}

/// Where a request goes.
#[derive(Debug, Clone)]
pub struct Target<'a, P> {
    pub provider: &'a Arc<P>,
    /// The model name to send upstream, when it differs from the one the client sent.
    pub rewrite: Option<&'a str>,
    /// The route's fallback chain (empty without a route, or when it lists none).
    pub fallbacks: &'a [Step<P>],
    pub max_attempts: Option<u32>,
    /// Which rule of the table chose it.
    pub via: Via<'a>,
}

/// The rule that resolved a model, in the order they are tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via<'a> {
    /// `provider/model`, the prefix naming a configured provider.
    ProviderPrefix,
    /// A route: `source` is its config path (`routes[2]`, or `providers.x.kind` for the
    /// model families of a provider's kind).
    Route { source: &'a str, pattern: &'a str },
    /// No route matched: the default provider.
    Default,
}

impl<'a, P> Target<'a, P> {
    /// Each step a request for `requested` may take, in order: the provider and the model
    /// name it is sent (the route's rename, a fallback's own, else the client's).
    pub fn steps(&self, requested: &'a str) -> impl Iterator<Item = (&'a Arc<P>, &'a str)> {
        let first = (self.provider, self.rewrite.unwrap_or(requested));
        let fallbacks = self
            .fallbacks
            .iter()
            .map(move |s| (&s.provider, s.model.as_deref().unwrap_or(requested)));
        std::iter::once(first).chain(fallbacks)
    }
}

/// A route as the table holds it, for listing what is served.
#[derive(Debug, Clone, Copy)]
pub struct RouteView<'a, P> {
    pub pattern: &'a str,
    pub glob: bool,
    pub provider: &'a Arc<P>,
    /// The provider's model, when the route renames.
    pub model: Option<&'a str>,
    pub fallbacks: &'a [Step<P>],
}

#[derive(Debug)]
pub struct RouteTable<P> {
    routes: Vec<Route<P>>,
    providers: Vec<Arc<P>>,
    default: Option<Arc<P>>,
    served: Vec<String>,
}

impl<P> Default for RouteTable<P> {
    fn default() -> Self {
        RouteTable {
            routes: Vec::new(),
            providers: Vec::new(),
            default: None,
            served: Vec::new(),
        }
    }
}

fn is_glob(pattern: &str) -> bool {
    pattern.contains(['*', '?', '[', '{'])
}

impl<P: Destination> RouteTable<P> {
    /// The table, and the routes left out because their pattern is not a valid glob.
    pub fn build(
        specs: Vec<(String, RouteSpec<P>)>,
        providers: Vec<Arc<P>>,
        default: Option<Arc<P>>,
    ) -> (RouteTable<P>, Vec<BadPattern>) {
        let mut problems = Vec::new();
        let mut routes = Vec::with_capacity(specs.len());
        for (path, spec) in specs {
            let matcher = if is_glob(&spec.pattern) {
                match Glob::new(&spec.pattern) {
                    Ok(glob) => Some(glob.compile_matcher()),
                    Err(e) => {
                        problems.push(BadPattern {
                            path: format!("{path}.match"),
                            message: format!(
                                "{:?} is not a valid glob: {}",
                                spec.pattern,
                                e.kind()
                            ),
                        });
                        continue;
                    }
                }
            } else {
                None
            };
            routes.push(Route {
                source: path,
                pattern: spec.pattern,
                matcher,
                provider: spec.provider,
                model: spec.model,
                fallbacks: spec.fallbacks,
                max_attempts: spec.max_attempts,
            });
        }
        let mut served: Vec<String> = Vec::new();
        let mut push = |name: String| {
            if !served.contains(&name) {
                served.push(name);
            }
        };
        for route in &routes {
            if route.matcher.is_none() {
                push(route.pattern.clone());
            }
        }
        for provider in &providers {
            for model in provider.models() {
                push(model.clone());
            }
        }
        let table = RouteTable {
            routes,
            providers,
            default,
            served,
        };
        (table, problems)
    }

    /// Resolves the client's model name to a provider, or `None` when nothing serves it.
    pub fn resolve<'a>(&'a self, model: &'a str) -> Option<Target<'a, P>> {
        if let Some((prefix, rest)) = model.split_once('/') {
            if !rest.is_empty() {
                if let Some(provider) = self.providers.iter().find(|p| p.name() == prefix) {
                    return Some(Target {
                        provider,
                        rewrite: Some(rest),
                        fallbacks: &[],
                        max_attempts: None,
                        via: Via::ProviderPrefix,
                    });
                }
            }
        }
        if let Some(route) = self.routes.iter().find(|r| r.matches(model)) {
            return Some(Target {
                provider: &route.provider,
                rewrite: route.model.as_deref().filter(|m| *m != model),
                fallbacks: &route.fallbacks,
                max_attempts: route.max_attempts,
                via: Via::Route {
                    source: &route.source,
                    pattern: &route.pattern,
                },
            });
        }
        self.default.as_ref().map(|provider| Target {
            provider,
            rewrite: None,
            fallbacks: &[],
            max_attempts: None,
            via: Via::Default,
        })
    }

    /// Model names the config serves by name (aliases, exact routes, providers' model lists).
    pub fn served_models(&self) -> &[String] {
        &self.served
    }

    /// Every route in the order it is tried: the config's own, then the providers' families.
    pub fn routes(&self) -> impl Iterator<Item = RouteView<'_, P>> {
        self.routes.iter().map(|r| RouteView {
            pattern: &r.pattern,
            glob: r.matcher.is_some(),
            provider: &r.provider,
            model: r.model.as_deref(),
            fallbacks: &r.fallbacks,
        })
    }

    /// What an unknown-model error lists: names, then the patterns that would match.
    pub fn served_summary(&self) -> Vec<String> {
        let mut out = self.served.clone();
        for route in &self.routes {
            if route.matcher.is_some() && !out.contains(&route.pattern) {
                out.push(route.pattern.clone());
            }
        }
        out
    }

    /// The provider that serves `model` when listed, for `GET /v1/models`.
    pub fn owner_of<'a>(&'a self, model: &'a str) -> Option<&'a Arc<P>> {
        self.resolve(model).map(|t| t.provider)
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;

    fn table() -> Config {
        let text = r#"
            default_provider = "local"
            [providers.oai]
            kind = "openai"
            models = ["gpt-5"]
            [providers.ant]
            kind = "anthropic"
            models = []
            [providers.local]
            kind = "openai_compatible"
            base_url = "http://127.0.0.1:11434/v1"
            [[routes]]
            match = "fast"
            provider = "oai"
            model = "gpt-5-mini"
            [[routes]]
            match = "claude-3-*"
            provider = "local"
        "#;
        match Config::from_toml(text, "t") {
            Ok(c) => c,
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn first_match_wins_in_documented_order() {
        let config = table();
        let r = &config.routes;
        let t = r.resolve("fast").unwrap();
        assert_eq!(
            (t.provider.name.as_str(), t.rewrite),
            ("oai", Some("gpt-5-mini"))
        );
        // The explicit route comes before anthropic's implicit claude-* family.
        assert_eq!(r.resolve("claude-3-haiku").unwrap().provider.name, "local");
        assert_eq!(r.resolve("claude-sonnet-5-5").unwrap().provider.name, "ant");
        assert_eq!(r.resolve("gpt-5.1").unwrap().provider.name, "oai");
        let t = r.resolve("ant/claude-x").unwrap();
        assert_eq!(
            (t.provider.name.as_str(), t.rewrite),
            ("ant", Some("claude-x"))
        );
        // An unknown prefix is just part of a model name (OpenRouter style) and falls to the default.
        let t = r.resolve("meta-llama/llama-3").unwrap();
        assert_eq!((t.provider.name.as_str(), t.rewrite), ("local", None));
    }

    #[test]
    fn a_target_names_the_rule_that_chose_it_and_its_steps() {
        use super::Via;
        let config = table();
        let r = &config.routes;
        let t = r.resolve("fast").unwrap();
        assert_eq!(
            t.via,
            Via::Route {
                source: "routes[0]",
                pattern: "fast"
            }
        );
        let steps: Vec<(&str, &str)> = t.steps("fast").map(|(p, m)| (p.name.as_str(), m)).collect();
        assert_eq!(steps, [("oai", "gpt-5-mini")]);
        assert_eq!(
            r.resolve("claude-3-haiku").unwrap().via,
            Via::Route {
                source: "routes[1]",
                pattern: "claude-3-*"
            }
        );
        assert_eq!(
            r.resolve("claude-sonnet-5-5").unwrap().via,
            Via::Route {
                source: "providers.ant.kind",
                pattern: "claude-*"
            }
        );
        assert_eq!(r.resolve("ant/claude-x").unwrap().via, Via::ProviderPrefix);
        assert_eq!(r.resolve("llama3").unwrap().via, Via::Default);
    }

    #[test]
    fn without_a_default_unknown_models_resolve_to_nothing() {
        let config =
            match crate::config::Config::from_toml("[providers.oai]\nkind = \"openai\"\n", "t") {
                Ok(c) => c,
                Err(e) => panic!("{e}"),
            };
        assert!(config.routes.resolve("llama3").is_none());
        assert!(config.routes.served_summary().contains(&"gpt-*".to_owned()));
    }

    #[test]
    fn served_models_list_aliases_and_provider_models() {
        let config = table();
        assert_eq!(
            config.routes.served_models(),
            &["fast".to_owned(), "gpt-5".to_owned()]
        );
    }
}
