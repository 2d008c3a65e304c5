//! What a request cost, per usage bucket, from a price table bundled with its date
//! (`gateway-core/pricing.toml`) and entries from the config matched before it.

use globset::{Glob, GlobMatcher};
use serde::Deserialize;

use crate::usage::Usage;

const BUNDLED: &str = include_str!("../pricing.toml");

/// US dollars per million tokens.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
pub struct Prices {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    #[serde(rename = "match")]
    pattern: String,
    input: f64,
    output: f64,
    cache_read: Option<f64>,
    cache_write: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    date: String,
    model: Vec<Entry>,
}

/// A price entry as the config writes it (`[[pricing]]`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PriceConfig {
    #[serde(rename = "match")]
    pub pattern: String,
    pub input: f64,
    pub output: f64,
    pub cache_read: Option<f64>,
    pub cache_write: Option<f64>,
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

fn entry(
    pattern: &str,
    input: f64,
    output: f64,
    read: Option<f64>,
    write: Option<f64>,
) -> Result<(GlobMatcher, Prices), String> {
    let values = [Some(input), Some(output), read, write];
    if values.iter().flatten().any(|v| !v.is_finite() || *v < 0.0) {
        return Err(format!(
            "prices for {pattern:?} must be non-negative numbers"
        ));
    }
    let glob = Glob::new(pattern).map_err(|e| format!("{pattern:?} is not a valid glob: {e}"))?;
    Ok((
        glob.compile_matcher(),
        Prices {
            input,
            output,
            cache_read: read.unwrap_or(input),
            cache_write: write.unwrap_or(input),
        },
    ))
}

impl Pricing {
    /// The bundled table with `overrides` matched first.
    pub fn new(overrides: &[PriceConfig]) -> Result<Pricing, String> {
        let table: Table =
            toml::from_str(BUNDLED).map_err(|e| format!("bundled price table: {e}"))?;
        let mut entries = Vec::new();
        for o in overrides {
            entries.push(entry(
                &o.pattern,
                o.input,
                o.output,
                o.cache_read,
                o.cache_write,
            )?);
        }
        for m in &table.model {
            entries.push(entry(
                &m.pattern,
                m.input,
                m.output,
                m.cache_read,
                m.cache_write,
            )?);
        }
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

    /// The cost of `usage` on `model`, and the value of `saved_tokens` input tokens the
    /// optimizer removed; `None` for a model the table does not know.
    pub fn cost(&self, model: &str, usage: &Usage, saved_tokens: i64) -> Option<Cost> {
        let p = self.prices(model)?;
        let fresh = usage
            .input
            .saturating_sub(usage.cache_read)
            .saturating_sub(usage.cache_write);
        let per = |tokens: f64, price: f64| tokens * price / 1e6;
        Some(Cost {
            cost: per(fresh as f64, p.input)
                + per(usage.cache_read as f64, p.cache_read)
                + per(usage.cache_write as f64, p.cache_write)
                + per(usage.output as f64, p.output),
            saved: per(saved_tokens as f64, p.input),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_table_loads_and_specific_names_win() {
        let pricing = Pricing::new(&[]).unwrap();
        assert!(!pricing.date.is_empty());
        assert_eq!(pricing.prices("gpt-5-mini").unwrap().input, 0.25);
        assert_eq!(pricing.prices("gpt-5").unwrap().input, 1.25);
        assert_eq!(
            pricing
                .prices("openai/gpt-4o-mini-2024-07-18")
                .unwrap()
                .output,
            0.60
        );
        assert!(pricing.prices("mystery-model").is_none());
    }

    #[test]
    fn each_bucket_is_priced_on_its_own() {
        let pricing = Pricing::new(&[]).unwrap();
        // Sonnet: 3 in, 0.30 cache read, 3.75 cache write, 15 out per million.
        let usage = Usage {
            input: 1_000_000 + 2_000_000 + 100_000,
            cache_read: 2_000_000,
            cache_write: 100_000,
            output: 10_000,
            reasoning: 0,
        };
        let c = pricing.cost("claude-sonnet-4-5", &usage, 500_000).unwrap();
        let expected = 3.0 + 0.6 + 0.375 + 0.15;
        assert!((c.cost - expected).abs() < 1e-9, "{}", c.cost);
        assert!((c.saved - 1.5).abs() < 1e-9);
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
        assert_eq!((p.input, p.cache_read, p.cache_write), (1.0, 1.0, 1.0));
        let bad = PriceConfig {
            pattern: "x".into(),
            input: -1.0,
            output: 1.0,
            ..PriceConfig::default()
        };
        assert!(Pricing::new(&[bad]).is_err());
    }
}
