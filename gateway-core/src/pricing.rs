//! What a request cost, per usage bucket, from a price table bundled with its date
//! (`gateway-core/pricing.toml`) and entries from the config matched before it.
//!
//! An entry may carry a second set of rates for long prompts: a request whose prompt
//! (input including cache reads and writes) is over `long_prompt.above` tokens is billed
//! at those rates on every token, output included, as the providers bill it.
//!
//! A request a cloud served (Azure OpenAI, Bedrock, Vertex) is priced by the cloud's own
//! entries, found by a key made from where it was sent ([`cloud_key`]): the same model
//! costs more on a cloud's regional endpoint than on its global one, and a Bedrock answer
//! names Anthropic's model, not the id that was billed.

use globset::{Glob, GlobMatcher};
use serde::Deserialize;

use crate::usage::Usage;

const BUNDLED: &str = include_str!("../pricing.toml");

/// US dollars per million tokens, by usage bucket.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rates {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
}

/// The rates a request pays once its prompt is over `above` tokens.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LongPrompt {
    pub above: u64,
    pub rates: Rates,
}

/// One model's prices: `base`, or `long_prompt` for a request with a long prompt.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Prices {
    pub base: Rates,
    pub long_prompt: Option<LongPrompt>,
}

impl Prices {
    /// The rates for a request whose prompt, cache reads and writes included, is
    /// `prompt` tokens.
    pub fn rates_for(&self, prompt: u64) -> Rates {
        match self.long_prompt {
            Some(long) if prompt > long.above => long.rates,
            _ => self.base,
        }
    }

    /// What `usage` cost at these prices, and the value of `saved_tokens` input tokens
    /// the optimizer removed (what the same request would have cost with them, as fresh
    /// input, less what it cost).
    pub fn cost(&self, usage: &Usage, saved_tokens: i64) -> Cost {
        let cost = bill(self, usage);
        let unoptimized = Usage {
            input: usage.input.saturating_add_signed(saved_tokens),
            ..*usage
        };
        Cost {
            cost,
            saved: bill(self, &unoptimized) - cost,
        }
    }
}

/// A price entry as the config writes it (`[[pricing]]`) and the bundled table lists it
/// (`[[model]]`). `cache_read` and `cache_write` default to `input`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PriceConfig {
    #[serde(rename = "match")]
    pub pattern: String,
    pub input: f64,
    pub output: f64,
    pub cache_read: Option<f64>,
    pub cache_write: Option<f64>,
    pub long_prompt: Option<LongPromptConfig>,
}

/// `long_prompt = { above = 100000, input = …, output = …, cache_read = …, cache_write = … }`:
/// the rates for a request whose prompt is over `above` tokens; the caches default to
/// this `input`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LongPromptConfig {
    pub above: u64,
    pub input: f64,
    pub output: f64,
    pub cache_read: Option<f64>,
    pub cache_write: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    date: String,
    model: Vec<PriceConfig>,
}

/// The price table: config entries first, then the bundled ones.
#[derive(Debug, Clone)]
pub struct Pricing {
    /// Date of the bundled prices.
    pub date: String,
    entries: Vec<(GlobMatcher, Prices)>,
}

/// What one request cost and what the optimizer saved, in US dollars.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Cost {
    pub cost: f64,
    pub saved: f64,
}

fn rates(
    pattern: &str,
    input: f64,
    output: f64,
    read: Option<f64>,
    write: Option<f64>,
) -> Result<Rates, String> {
    let values = [Some(input), Some(output), read, write];
    if values.iter().flatten().any(|v| !v.is_finite() || *v < 0.0) {
        return Err(format!(
            "prices for {pattern:?} must be non-negative numbers"
        ));
    }
    Ok(Rates {
        input,
        output,
        cache_read: read.unwrap_or(input),
        cache_write: write.unwrap_or(input),
    })
}

fn entry(config: &PriceConfig) -> Result<(GlobMatcher, Prices), String> {
    let PriceConfig {
        pattern,
        input,
        output,
        cache_read,
        cache_write,
        long_prompt,
    } = config;
    let base = rates(pattern, *input, *output, *cache_read, *cache_write)?;
    let long_prompt = match long_prompt {
        None => None,
        Some(LongPromptConfig {
            above,
            input,
            output,
            cache_read,
            cache_write,
        }) => Some(LongPrompt {
            above: *above,
            rates: rates(pattern, *input, *output, *cache_read, *cache_write)
                .map_err(|e| format!("long_prompt: {e}"))?,
        }),
    };
    // The glob syntax accepts `a{,-*}` but never matches `a` with it: refuse it rather
    // than leave a model silently unpriced.
    if ["{,", ",}", ",,"]
        .iter()
        .any(|empty| pattern.contains(empty))
    {
        return Err(format!(
            "{pattern:?} has an empty alternative, which never matches; write each name out, as {{a,a-*}}"
        ));
    }
    let glob = Glob::new(pattern).map_err(|e| format!("{pattern:?} is not a valid glob: {e}"))?;
    Ok((glob.compile_matcher(), Prices { base, long_prompt }))
}

/// What `usage` costs at `prices`: each bucket at the rates its prompt length selects.
fn bill(prices: &Prices, usage: &Usage) -> f64 {
    let r = prices.rates_for(usage.input);
    let fresh = usage
        .input
        .saturating_sub(usage.cache_read)
        .saturating_sub(usage.cache_write);
    let per = |tokens: u64, price: f64| tokens as f64 * price / 1e6;
    per(fresh, r.input)
        + per(usage.cache_read, r.cache_read)
        + per(usage.cache_write, r.cache_write)
        + per(usage.output, r.output)
}

impl Pricing {
    /// The bundled table with `overrides` matched first.
    pub fn new(overrides: &[PriceConfig]) -> Result<Pricing, String> {
        let table: Table =
            toml::from_str(BUNDLED).map_err(|e| format!("bundled price table: {e}"))?;
        let entries = overrides
            .iter()
            .chain(&table.model)
            .map(entry)
            .collect::<Result<_, _>>()?;
        Ok(Pricing {
            date: table.date,
            entries,
        })
    }

    /// The bundled table alone (it is checked by a test, so it always loads).
    pub fn bundled() -> Pricing {
        Pricing::new(&[]).unwrap_or(Pricing {
            date: String::new(),
            entries: Vec::new(),
        })
    }

    pub fn prices(&self, model: &str) -> Option<Prices> {
        // `provider/model` names are priced by the model.
        self.matching(model.rsplit('/').next().unwrap_or(model))
    }

    /// The first entry whose pattern matches `name` as it is.
    fn matching(&self, name: &str) -> Option<Prices> {
        self.entries
            .iter()
            .find(|(m, _)| m.is_match(name))
            .map(|(_, p)| *p)
    }

    /// A request's prices. One a cloud served is priced by `priced_as` ([`cloud_key`])
    /// alone, and gets none when no entry names it, rather than a first-party price —
    /// except an Azure deployment no entry names, which is priced by the model its
    /// answer names (`model`: the served model, else the requested one), since Azure's
    /// answers carry OpenAI's model names. Any other request is priced by `model`.
    pub fn for_request(&self, priced_as: Option<&str>, model: Option<&str>) -> Option<Prices> {
        if let Some(key) = priced_as {
            let found = self.matching(key);
            if found.is_some() {
                return found;
            }
            // Google lists Gemini on Vertex AI at the Gemini API's prices: a Vertex model
            // with no entry of its own (not Claude, whose cloud prices differ) is priced by
            // the Gemini API's entry for the same name.
            if let Some(vertex) = key
                .strip_prefix("vertex:global:")
                .or_else(|| key.strip_prefix("vertex:regional:"))
            {
                return (!vertex.contains("claude"))
                    .then(|| self.prices(vertex))
                    .flatten();
            }
            if !key.starts_with(AZURE_PREFIX) {
                return None;
            }
        }
        self.prices(model?)
    }

    /// [`Prices::cost`] on `model`'s prices; `None` for a model the table does not know.
    pub fn cost(&self, model: &str, usage: &Usage, saved_tokens: i64) -> Option<Cost> {
        Some(self.prices(model)?.cost(usage, saved_tokens))
    }
}

/// Where a cloud served a model, as its price depends on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Site {
    /// Azure OpenAI: the model is a deployment, named by the user.
    Azure,
    /// Amazon Bedrock: the model is a model id, an inference profile or an ARN.
    Bedrock,
    /// Google Vertex AI, at its `global` location or at another (a region, or a
    /// multi-region such as `us`).
    Vertex { global: bool },
}

const AZURE_PREFIX: &str = "azure:";
/// A cloud's global endpoint: the list price.
const GLOBAL: &str = "global";
/// A regional or multi-region endpoint (Bedrock's geographic profiles and in-Region ids):
/// from Claude Sonnet 4.5 on, 10% over the global price.
const REGIONAL: &str = "regional";

/// The name the price table knows a request to `site` for `model` by:
///
/// - `azure:<deployment>`;
/// - `bedrock:global:<id>` for a `global.` inference profile, `bedrock:regional:<id>` for a
///   geographic profile (`us.`, `eu.`, `apac.`, …) or an in-Region model id; an ARN is
///   read for the id it names, and an application inference profile or a provisioned
///   model, whose ARN names no model, is `bedrock:profile:<arn>`;
/// - `vertex:global:<model>` or `vertex:regional:<model>`, by the provider's location.
pub fn cloud_key(site: Site, model: &str) -> String {
    match site {
        Site::Azure => format!("{AZURE_PREFIX}{model}"),
        Site::Vertex { global } => {
            format!("vertex:{}:{model}", if global { GLOBAL } else { REGIONAL })
        }
        Site::Bedrock => {
            let id = match model.strip_prefix("arn:") {
                // arn:partition:bedrock:region:account:type/id (the id may hold `:`).
                Some(arn) => match arn.splitn(5, ':').nth(4).and_then(|r| r.split_once('/')) {
                    Some(("foundation-model" | "inference-profile", id)) => id,
                    _ => return format!("bedrock:profile:{model}"),
                },
                None => model,
            };
            let endpoint = if id.starts_with("global.") {
                GLOBAL
            } else {
                REGIONAL
            };
            format!("bedrock:{endpoint}:{id}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Input, cache read, cache write and output, per million tokens.
    type Buckets = (f64, f64, f64, f64);

    fn buckets(r: Rates) -> Buckets {
        (r.input, r.cache_read, r.cache_write, r.output)
    }

    fn usage(fresh: u64, cache_read: u64, cache_write: u64, output: u64) -> Usage {
        Usage {
            input: fresh + cache_read + cache_write,
            output,
            cache_read,
            cache_write,
            reasoning: 0,
        }
    }

    #[test]
    fn bundled_table_loads_and_specific_names_win() {
        let pricing = Pricing::new(&[]).unwrap();
        assert_eq!(pricing.date, "2026-12-01");
        let base = |m: &str| buckets(pricing.prices(m).unwrap().base);
        assert_eq!(base("gpt-5-mini").0, 0.25);
        assert_eq!(base("gpt-5").0, 1.25);
        assert_eq!(base("openai/gpt-4o-mini-2024-07-18").3, 0.60);
        // Families come after their specific names.
        assert_eq!(base("claude-sonnet-5-5"), (2.0, 0.10, 2.50, 10.0));
        assert_eq!(base("claude-sonnet-5"), (2.0, 0.20, 2.50, 10.0));
        assert_eq!(base("claude-opus-4-8"), (5.0, 0.50, 6.25, 25.0));
        assert_eq!(base("claude-opus-4-1"), (15.0, 1.50, 18.75, 75.0));
        assert_eq!(base("claude-fable-5-1"), (10.0, 0.25, 12.50, 50.0));
        assert_eq!(base("claude-fable-5"), (10.0, 1.0, 12.50, 50.0));
        assert!(pricing.prices("mystery-model").is_none());
    }

    /// Every current model the official SDKs list (and their dated snapshots) resolves
    /// to the entry for that model, not to an older sibling's family.
    #[test]
    fn current_model_names_resolve_to_their_own_prices() {
        let pricing = Pricing::new(&[]).unwrap();
        let expected: &[(&str, Buckets)] = &[
            ("claude-fable-5-1", (10.0, 0.25, 12.50, 50.0)),
            ("claude-mythos-5-1", (10.0, 0.25, 12.50, 50.0)),
            ("claude-fable-5", (10.0, 1.0, 12.50, 50.0)),
            ("claude-mythos-5", (10.0, 1.0, 12.50, 50.0)),
            ("claude-opus-5-5", (4.0, 0.20, 5.0, 20.0)),
            ("claude-opus-5", (5.0, 0.50, 6.25, 25.0)),
            ("claude-opus-4-8", (5.0, 0.50, 6.25, 25.0)),
            ("claude-opus-4-7", (5.0, 0.50, 6.25, 25.0)),
            ("claude-opus-4-6", (5.0, 0.50, 6.25, 25.0)),
            ("claude-opus-4-5", (5.0, 0.50, 6.25, 25.0)),
            ("claude-opus-4-5-20251101", (5.0, 0.50, 6.25, 25.0)),
            ("claude-opus-4-1-20250805", (15.0, 1.50, 18.75, 75.0)),
            ("claude-opus-4-20250514", (15.0, 1.50, 18.75, 75.0)),
            ("claude-sonnet-5-5", (2.0, 0.10, 2.50, 10.0)),
            ("claude-sonnet-5", (2.0, 0.20, 2.50, 10.0)),
            ("claude-sonnet-4-6", (3.0, 0.30, 3.75, 15.0)),
            ("claude-sonnet-4-5", (3.0, 0.30, 3.75, 15.0)),
            ("claude-sonnet-4-5-20250929", (3.0, 0.30, 3.75, 15.0)),
            ("claude-haiku-5-5", (0.10, 0.01, 0.125, 0.50)),
            ("claude-haiku-4-5", (1.0, 0.10, 1.25, 5.0)),
            ("claude-haiku-4-5-20251001", (1.0, 0.10, 1.25, 5.0)),
            ("gpt-6.2-sol", (2.0, 0.10, 2.50, 10.0)),
            ("gpt-6-luna", (0.10, 0.01, 0.125, 0.50)),
            ("gpt-5.6-luna", (0.20, 0.02, 0.25, 1.20)),
            ("gpt-5", (1.25, 0.125, 1.25, 10.0)),
            ("gpt-5-2025-08-07", (1.25, 0.125, 1.25, 10.0)),
            ("gpt-5-mini-2025-08-07", (0.25, 0.025, 0.25, 2.0)),
            ("gpt-5-nano", (0.05, 0.005, 0.05, 0.40)),
            ("gpt-4.1-mini-2025-04-14", (0.40, 0.10, 0.40, 1.60)),
            ("o3-2025-04-16", (2.0, 0.50, 2.0, 8.0)),
            ("gemini-3.1-pro-preview", (2.0, 0.20, 2.0, 12.0)),
            ("gemini-3-pro-preview", (2.0, 0.20, 2.0, 12.0)),
            ("gemini-3-flash-preview", (0.50, 0.05, 0.50, 3.0)),
            ("gemini-2.5-pro", (1.25, 0.125, 1.25, 10.0)),
            ("gemini-2.5-flash", (0.30, 0.03, 0.30, 2.50)),
            ("gemini-2.5-flash-lite", (0.10, 0.01, 0.10, 0.40)),
        ];
        for (model, prices) in expected {
            let found = pricing.prices(model).map(|p| buckets(p.base));
            assert_eq!(found, Some(*prices), "{model}");
        }
    }

    /// Models whose current price was not on the provider's page, or that are gone, get
    /// no price: no family glob catches them at a sibling's price.
    #[test]
    fn unverified_models_are_not_priced_by_a_sibling_family() {
        let pricing = Pricing::new(&[]).unwrap();
        for model in [
            "claude-fable-5-2",
            "claude-mythos-5-2",
            "claude-fable-5-2-20261109",
            "claude-mythos-preview",
            "gpt-6.2-astra",
            "gpt-6-astra",
            "gpt-6.1-sol",
            "gpt-6-sol",
            "gpt-6.1-terra",
            "gpt-5.6-sol",
            "gpt-5.6",
            "gpt-5.6-terra",
            "gpt-5.5",
            "gpt-5.5-pro",
            "gpt-5.4",
            "gpt-5.4-mini",
            "gpt-5.4-nano",
            "gpt-5.3-chat-latest",
            "gpt-5.2",
            "gpt-5.2-pro",
            "gpt-5.1",
            "gpt-5.1-codex",
            "gpt-5.1-mini",
            "gpt-5-pro",
            "o3-pro",
            "deepseek-flash",
            "deepseek-v4-pro",
        ] {
            assert!(pricing.prices(model).is_none(), "{model} has a price");
        }
    }

    /// The tiers the providers publish: Haiku 5.5 over 100,000 prompt tokens, OpenAI's
    /// GPT-5.6 and later over 272,000 input tokens (cached input counted).
    #[test]
    fn bundled_long_prompt_tiers() {
        let pricing = Pricing::new(&[]).unwrap();
        let long = |m: &str| {
            let l = pricing.prices(m).unwrap().long_prompt.unwrap();
            (l.above, buckets(l.rates))
        };
        assert_eq!(
            long("claude-haiku-5-5"),
            (100_000, (0.50, 0.05, 0.625, 2.50))
        );
        assert_eq!(long("gpt-6.2-sol"), (272_000, (4.0, 0.20, 5.0, 15.0)));
        assert_eq!(long("gpt-6-luna"), (272_000, (0.20, 0.02, 0.25, 0.75)));
        assert_eq!(long("gpt-5.6-luna"), (272_000, (0.40, 0.04, 0.50, 1.80)));
        for flat in [
            "claude-sonnet-5-5",
            "claude-opus-5-5",
            "claude-fable-5-1",
            "gpt-5",
        ] {
            assert!(
                pricing.prices(flat).unwrap().long_prompt.is_none(),
                "{flat}"
            );
        }
        let openai = usage(200_000, 72_001, 0, 0);
        let c = pricing.cost("gpt-6.2-sol", &openai, 0).unwrap();
        let long = (200_000.0 * 4.0 + 72_001.0 * 0.20) / 1e6;
        assert!((c.cost - long).abs() < 1e-12, "{}", c.cost);
    }

    #[test]
    fn each_bucket_is_priced_on_its_own() {
        let pricing = Pricing::new(&[]).unwrap();
        // Sonnet: 3 in, 0.30 cache read, 3.75 cache write, 15 out per million.
        let usage = usage(1_000_000, 2_000_000, 100_000, 10_000);
        let c = pricing.cost("claude-sonnet-4-5", &usage, 500_000).unwrap();
        let expected = 3.0 + 0.6 + 0.375 + 0.15;
        assert!((c.cost - expected).abs() < 1e-9, "{}", c.cost);
        assert!((c.saved - 1.5).abs() < 1e-9);
    }

    /// A config entry priced as Haiku 5.5 is: 5x for a prompt over 100,000 tokens.
    fn long_prompt_pricing() -> Pricing {
        let entry: PriceConfig = toml::from_str(
            r#"
            match = "tiered"
            input = 0.10
            cache_read = 0.01
            cache_write = 0.125
            output = 0.50
            long_prompt = { above = 100000, input = 0.50, cache_read = 0.05, cache_write = 0.625, output = 2.50 }
            "#,
        )
        .unwrap();
        Pricing::new(&[entry]).unwrap()
    }

    /// A request whose prompt (cache reads and writes included) is over the threshold is
    /// billed at the long-prompt rates on every token, output included; at the threshold
    /// it is not.
    #[test]
    fn a_long_prompt_reprices_the_whole_request() {
        let pricing = long_prompt_pricing();
        let at_limit = usage(40_000, 50_000, 10_000, 1_000_000);
        let c = pricing.cost("tiered", &at_limit, 0).unwrap();
        let short = (40_000.0 * 0.10 + 50_000.0 * 0.01 + 10_000.0 * 0.125) / 1e6 + 0.50;
        assert!((c.cost - short).abs() < 1e-12, "{}", c.cost);

        let over = usage(40_001, 50_000, 10_000, 1_000_000);
        let c = pricing.cost("tiered", &over, 0).unwrap();
        let long = (40_001.0 * 0.50 + 50_000.0 * 0.05 + 10_000.0 * 0.625) / 1e6 + 2.50;
        assert!((c.cost - long).abs() < 1e-12, "{}", c.cost);
    }

    /// What the optimizer removed is valued as the difference it made: here the tokens
    /// it removed would have pushed the prompt over the threshold.
    #[test]
    fn savings_that_kept_a_prompt_short_count_the_long_rates_avoided() {
        let pricing = long_prompt_pricing();
        let sent = usage(90_000, 0, 0, 1_000);
        let c = pricing.cost("tiered", &sent, 20_000).unwrap();
        let cost = (90_000.0 * 0.10 + 1_000.0 * 0.50) / 1e6;
        let without_optimizer = (110_000.0 * 0.50 + 1_000.0 * 2.50) / 1e6;
        assert!((c.cost - cost).abs() < 1e-12);
        assert!(
            (c.saved - (without_optimizer - cost)).abs() < 1e-12,
            "{}",
            c.saved
        );
    }

    #[test]
    fn config_entries_come_first_and_are_checked() {
        let mine = PriceConfig {
            pattern: "gpt-5*".into(),
            input: 1.0,
            output: 2.0,
            ..PriceConfig::default()
        };
        let pricing = Pricing::new(&[mine]).unwrap();
        let p = pricing.prices("gpt-5").unwrap();
        assert_eq!(buckets(p.base), (1.0, 1.0, 1.0, 2.0));
        assert!(p.long_prompt.is_none());
        let bad = PriceConfig {
            pattern: "x".into(),
            input: -1.0,
            output: 1.0,
            ..PriceConfig::default()
        };
        assert!(Pricing::new(&[bad]).is_err());
        let empty_alternative = PriceConfig {
            pattern: "my-model{,-*}".into(),
            input: 1.0,
            output: 1.0,
            ..PriceConfig::default()
        };
        let err = Pricing::new(&[empty_alternative]).unwrap_err();
        assert!(err.contains("empty alternative"), "{err}");
    }

    /// A `[[pricing]]` entry writes long-prompt rates as the bundled table does; its
    /// cache rates default to its own input rate, and bad prices in it are refused.
    #[test]
    fn config_entries_can_price_long_prompts() {
        let mine: PriceConfig = toml::from_str(
            r#"
            match = "my-model"
            input = 1.0
            output = 4.0
            long_prompt = { above = 1000, input = 2.0, output = 8.0, cache_read = 0.5 }
            "#,
        )
        .unwrap();
        let pricing = Pricing::new(&[mine]).unwrap();
        let p = pricing.prices("my-model").unwrap();
        let long = p.long_prompt.unwrap();
        assert_eq!(long.above, 1000);
        assert_eq!(buckets(long.rates), (2.0, 0.5, 2.0, 8.0));
        assert_eq!(buckets(p.rates_for(1000)), (1.0, 1.0, 1.0, 4.0));
        assert_eq!(p.rates_for(1001), long.rates);

        let bad: PriceConfig = toml::from_str(
            r#"
            match = "my-model"
            input = 1.0
            output = 4.0
            long_prompt = { above = 1000, input = -2.0, output = 8.0 }
            "#,
        )
        .unwrap();
        let err = Pricing::new(&[bad]).unwrap_err();
        assert!(err.contains("long_prompt"), "{err}");

        let unknown = toml::from_str::<PriceConfig>(
            r#"
            match = "my-model"
            input = 1.0
            output = 4.0
            long_prompt = { over = 1000, input = 2.0, output = 8.0 }
            "#,
        );
        assert!(unknown.is_err());
    }

    /// The key says where the model was served: a Bedrock id's `global.` profile or any
    /// other (geographic, in-Region), an ARN read for the id it names, the Vertex location.
    #[test]
    fn cloud_keys_say_where_the_model_was_served() {
        let bedrock = |m: &str| cloud_key(Site::Bedrock, m);
        assert_eq!(
            bedrock("global.anthropic.claude-sonnet-4-5-20250929-v1:0"),
            "bedrock:global:global.anthropic.claude-sonnet-4-5-20250929-v1:0"
        );
        for regional in [
            "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
            "eu.anthropic.claude-opus-5",
            "apac.anthropic.claude-haiku-4-5-20251001-v1:0",
            "anthropic.claude-sonnet-4-5-20250929-v1:0",
        ] {
            assert_eq!(bedrock(regional), format!("bedrock:regional:{regional}"));
        }
        assert_eq!(
            bedrock("arn:aws:bedrock:us-east-1:123456789012:inference-profile/global.anthropic.claude-opus-4-6-v1"),
            "bedrock:global:global.anthropic.claude-opus-4-6-v1"
        );
        assert_eq!(
            bedrock("arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-haiku-4-5-20251001-v1:0"),
            "bedrock:regional:anthropic.claude-haiku-4-5-20251001-v1:0"
        );
        let app = "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3";
        assert_eq!(bedrock(app), format!("bedrock:profile:{app}"));
        assert_eq!(
            cloud_key(Site::Vertex { global: true }, "claude-sonnet-4-5@20250929"),
            "vertex:global:claude-sonnet-4-5@20250929"
        );
        assert_eq!(
            cloud_key(Site::Vertex { global: false }, "claude-opus-4-6"),
            "vertex:regional:claude-opus-4-6"
        );
        assert_eq!(cloud_key(Site::Azure, "prod-gpt5"), "azure:prod-gpt5");
    }

    /// Claude on Bedrock and Vertex: a global endpoint at the Claude API's price, a
    /// regional or multi-region one 10% over it, whichever way the id is written.
    #[test]
    fn claude_on_a_cloud_is_priced_by_its_endpoint() {
        let pricing = Pricing::new(&[]).unwrap();
        let on = |site: Site, model: &str| {
            let key = cloud_key(site, model);
            pricing
                .for_request(Some(&key), Some("ignored"))
                .map(|p| buckets(p.base))
                .unwrap_or_else(|| panic!("{key} has no price"))
        };
        let vertex_global = Site::Vertex { global: true };
        let vertex_regional = Site::Vertex { global: false };
        let sonnet = (3.0, 0.30, 3.75, 15.0);
        let sonnet_regional = (3.30, 0.33, 4.125, 16.50);
        assert_eq!(
            on(
                Site::Bedrock,
                "global.anthropic.claude-sonnet-4-5-20250929-v1:0"
            ),
            sonnet
        );
        assert_eq!(
            on(
                Site::Bedrock,
                "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
            ),
            sonnet_regional
        );
        assert_eq!(
            on(Site::Bedrock, "anthropic.claude-sonnet-4-5-20250929-v1:0"),
            sonnet_regional
        );
        assert_eq!(on(vertex_global, "claude-sonnet-4-5@20250929"), sonnet);
        assert_eq!(
            on(vertex_regional, "claude-sonnet-4-5@20250929"),
            sonnet_regional
        );
        assert_eq!(on(vertex_global, "claude-sonnet-4-6"), sonnet);
        assert_eq!(
            on(Site::Bedrock, "jp.anthropic.claude-sonnet-4-6"),
            sonnet_regional
        );

        let opus = (5.0, 0.50, 6.25, 25.0);
        let opus_regional = (5.50, 0.55, 6.875, 27.50);
        assert_eq!(
            on(Site::Bedrock, "global.anthropic.claude-opus-4-6-v1"),
            opus
        );
        assert_eq!(
            on(Site::Bedrock, "us.anthropic.claude-opus-4-5-20251101-v1:0"),
            opus_regional
        );
        assert_eq!(
            on(Site::Bedrock, "eu.anthropic.claude-opus-5"),
            opus_regional
        );
        assert_eq!(on(vertex_global, "claude-opus-4-8"), opus);
        assert_eq!(
            on(vertex_regional, "claude-opus-4-5@20251101"),
            opus_regional
        );
        assert_eq!(
            on(Site::Bedrock, "global.anthropic.claude-opus-5-5"),
            (4.0, 0.20, 5.0, 20.0)
        );
        assert_eq!(
            on(vertex_regional, "claude-opus-5-5"),
            (4.40, 0.22, 5.50, 22.0)
        );
        assert_eq!(
            on(Site::Bedrock, "global.anthropic.claude-fable-5-1"),
            (10.0, 0.25, 12.50, 50.0)
        );
        assert_eq!(
            on(vertex_regional, "claude-fable-5-1"),
            (11.0, 0.275, 13.75, 55.0)
        );
        assert_eq!(
            on(vertex_regional, "claude-mythos-5"),
            (11.0, 1.10, 13.75, 55.0)
        );
        assert_eq!(
            on(Site::Bedrock, "us.anthropic.claude-sonnet-5"),
            (2.20, 0.22, 2.75, 11.0)
        );
        assert_eq!(
            on(
                Site::Bedrock,
                "global.anthropic.claude-haiku-4-5-20251001-v1:0"
            ),
            (1.0, 0.10, 1.25, 5.0)
        );
        assert_eq!(
            on(vertex_regional, "claude-haiku-4-5@20251001"),
            (1.10, 0.11, 1.375, 5.50)
        );
        // Haiku 5.5's long prompts cost 5x there too, the regional uplift on top.
        let key = cloud_key(Site::Bedrock, "us.anthropic.claude-haiku-5-5");
        let long = pricing
            .for_request(Some(&key), None)
            .unwrap()
            .long_prompt
            .unwrap();
        assert_eq!(
            (long.above, buckets(long.rates)),
            (100_000, (0.55, 0.055, 0.6875, 2.75))
        );
    }

    /// A cloud's request is priced by where it went, never by the first-party name its
    /// answer carries (Bedrock's answers name Anthropic's model): what the table does not
    /// know there gets no price, not the Claude API's.
    #[test]
    fn a_cloud_request_is_not_priced_by_the_model_its_answer_names() {
        let pricing = Pricing::new(&[]).unwrap();
        let served = Some("claude-sonnet-4-5-20250929");
        let key = cloud_key(
            Site::Bedrock,
            "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        );
        assert_eq!(
            pricing.for_request(Some(&key), served).unwrap().base.input,
            3.30
        );
        assert_eq!(pricing.for_request(None, served).unwrap().base.input, 3.0);
        for (site, model, answer) in [
            // Sonnet 5.5's cloud price after the Claude API's cut is unknown.
            (
                Site::Bedrock,
                "global.anthropic.claude-sonnet-5-5",
                "claude-sonnet-5-5",
            ),
            (
                Site::Vertex { global: true },
                "claude-sonnet-5-5",
                "claude-sonnet-5-5",
            ),
            // Models before Sonnet 4.5 keep cloud prices the sources do not give.
            (
                Site::Bedrock,
                "us.anthropic.claude-sonnet-4-20250514-v1:0",
                "claude-sonnet-4-20250514",
            ),
            (
                Site::Vertex { global: false },
                "claude-opus-4-1@20250805",
                "claude-opus-4-1-20250805",
            ),
            (
                Site::Bedrock,
                "anthropic.claude-3-5-haiku-20241022-v1:0",
                "claude-3-5-haiku-20241022",
            ),
            // Newer siblings are not caught by an older one's pattern.
            (
                Site::Bedrock,
                "global.anthropic.claude-fable-5-2",
                "claude-fable-5-2",
            ),
            (
                Site::Vertex { global: true },
                "claude-haiku-5-6",
                "claude-haiku-5-6",
            ),
            // Other models, and Gemini on Vertex.
            (
                Site::Bedrock,
                "us.amazon.nova-pro-v1:0",
                "us.amazon.nova-pro-v1:0",
            ),
            (
                Site::Vertex { global: true },
                "llama-4-maverick-17b-128e-instruct-maas",
                "llama-4-maverick-17b-128e-instruct-maas",
            ),
            // An application inference profile names no model.
            (
                Site::Bedrock,
                "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3",
                "claude-sonnet-4-5-20250929",
            ),
        ] {
            let key = cloud_key(site, model);
            assert!(
                pricing.for_request(Some(&key), Some(answer)).is_none(),
                "{key}"
            );
        }
    }

    /// Azure's deployments are named by the user: one a `[[pricing]]` entry names is
    /// priced by it, any other by the OpenAI model its answer names.
    #[test]
    fn azure_is_priced_by_its_deployment_else_the_model_its_answer_names() {
        let pricing = Pricing::new(&[]).unwrap();
        let key = cloud_key(Site::Azure, "prod-chat");
        let p = pricing
            .for_request(Some(&key), Some("gpt-5-2025-08-07"))
            .unwrap();
        assert_eq!(buckets(p.base), (1.25, 0.125, 1.25, 10.0));
        assert!(pricing
            .for_request(Some(&key), Some("my-fine-tune"))
            .is_none());
        assert!(pricing.for_request(Some(&key), None).is_none());

        let data_zone: PriceConfig = toml::from_str(
            "match = \"azure:prod-chat\"\ninput = 1.375\ncache_read = 0.1375\noutput = 11.0",
        )
        .unwrap();
        let pricing = Pricing::new(&[data_zone]).unwrap();
        let p = pricing
            .for_request(Some(&key), Some("gpt-5-2025-08-07"))
            .unwrap();
        assert_eq!(buckets(p.base), (1.375, 0.1375, 1.375, 11.0));
    }

    /// `[[pricing]]` entries match cloud keys as they match names: before the bundled
    /// table, so a negotiated Bedrock price wins, and an application inference profile
    /// can be priced by its ARN.
    #[test]
    fn config_entries_can_price_cloud_requests() {
        let entries: Vec<PriceConfig> = [
            "match = \"bedrock:*:*claude-sonnet-4-5*\"\ninput = 2.7\noutput = 13.5",
            "match = \"bedrock:profile:*/a1b2c3\"\ninput = 3.3\noutput = 16.5",
        ]
        .iter()
        .map(|t| toml::from_str(t).unwrap())
        .collect();
        let pricing = Pricing::new(&entries).unwrap();
        let price = |model: &str| {
            let key = cloud_key(Site::Bedrock, model);
            pricing.for_request(Some(&key), None).map(|p| p.base.input)
        };
        assert_eq!(
            price("us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
            Some(2.7)
        );
        assert_eq!(
            price("global.anthropic.claude-sonnet-4-5-20250929-v1:0"),
            Some(2.7)
        );
        assert_eq!(
            price("arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3"),
            Some(3.3)
        );
        // The Claude API's own names are not touched by a cloud's entry.
        assert_eq!(
            pricing
                .for_request(None, Some("claude-sonnet-4-5"))
                .unwrap()
                .base
                .input,
            3.0
        );
    }

    /// Gemini on Vertex is priced as on the Gemini API; Claude on Vertex never falls back
    /// to Anthropic's own price, and a model neither table knows has none.
    #[test]
    fn gemini_on_vertex_takes_the_gemini_api_price_and_claude_only_its_own() {
        let pricing = Pricing::bundled();
        let price = |model: &str, global: bool| {
            let key = cloud_key(Site::Vertex { global }, model);
            pricing
                .for_request(Some(&key), Some("anything"))
                .map(|p| p.base.input)
        };
        let gemini = pricing.prices("gemini-2.5-pro").unwrap().base.input;
        assert_eq!(price("gemini-2.5-pro", false), Some(gemini));
        assert_eq!(price("gemini-2.5-pro", true), Some(gemini));
        assert_eq!(price("claude-sonnet-3-7@20250219", false), None);
        assert_eq!(price("llama-4-maverick", false), None);
    }
}
