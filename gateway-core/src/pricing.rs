//! What a request cost, per usage bucket, from a price table bundled with its date
//! (`gateway-core/pricing.toml`) and entries from the config matched before it.
//!
//! An entry may carry a second set of rates for long prompts: a request whose prompt
//! (input including cache reads and writes) is over `long_prompt.above` tokens is billed
//! at those rates on every token, output included, as the providers bill it.

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
        let model = model.rsplit('/').next().unwrap_or(model);
        self.entries
            .iter()
            .find(|(m, _)| m.is_match(model))
            .map(|(_, p)| *p)
    }

    /// [`Prices::cost`] on `model`'s prices; `None` for a model the table does not know.
    pub fn cost(&self, model: &str, usage: &Usage, saved_tokens: i64) -> Option<Cost> {
        Some(self.prices(model)?.cost(usage, saved_tokens))
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
}
