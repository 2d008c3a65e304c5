//! Today's figures, as the tray menu shows them: tokens and dollars saved and spent since
//! local midnight (the day the window's Overview calls "today"), and each provider's health
//! (the same report as `GET /admin/api/health`). One function computes them, and the tray
//! and the `tray_figures` command both call it, so what a test reads is what the menu says.

use std::time::Instant;

use gateway_core::ledger::stats::{self, By};
use gateway_core::optimize::compact::thousands;
use serde::Serialize;

use crate::core::Core;

/// Today's totals and the providers' health.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Figures {
    /// Local midnight, in Unix milliseconds: the start of "today".
    pub since_ms: i64,
    /// Whether there is a ledger to count from (`[ledger] enabled = false` has none).
    pub ledger: bool,
    pub requests: i64,
    /// Tokens the optimizer kept from the providers.
    pub tokens_saved: i64,
    pub usd_saved: f64,
    /// Input and output tokens the providers reported.
    pub tokens_spent: i64,
    pub usd_spent: f64,
    /// Set when the ledger could not be read; the figures are then zero.
    pub error: Option<String>,
    pub providers: Vec<ProviderState>,
}

/// A provider (or a key of a provider's pool) and its health.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProviderState {
    pub provider: String,
    /// `up`, `cooling down` or `probing`.
    pub state: String,
    /// Seconds until it is probed, while cooling down.
    pub retry_in_secs: Option<f64>,
}

/// The menu's informational lines, in menu order.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Lines {
    pub saved: String,
    pub spent: String,
    /// One line per provider; a single line saying there is none, when there is none.
    pub providers: Vec<String>,
}

/// What `tray_figures` answers: the figures and the exact texts the menu shows.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TrayFigures {
    pub figures: Figures,
    pub lines: Lines,
}

/// Today's figures from the running gateway's ledger and health.
pub async fn today(core: &Core) -> Figures {
    let since_ms = local_midnight_ms(gateway_core::clock::now_ms());
    let config = core.state().config();
    let providers = core
        .state()
        .health
        .report_for(
            config.providers.iter().map(|p| p.name.as_str()),
            Instant::now(),
        )
        .into_iter()
        .map(|h| ProviderState {
            provider: h.provider,
            state: h.state.replace('_', " "),
            retry_in_secs: h.retry_in_secs,
        })
        .collect();
    let mut figures = Figures {
        since_ms,
        providers,
        ..Figures::default()
    };
    let Some(pool) = core.ledger() else {
        return figures;
    };
    figures.ledger = true;
    match stats::totals(pool, since_ms, By::Provider).await {
        Ok(rows) => {
            let all = stats::sum(&rows);
            figures.requests = all.requests;
            figures.tokens_saved = all.saved_tokens;
            figures.usd_saved = all.saved_usd;
            figures.tokens_spent = all.input_tokens + all.output_tokens;
            figures.usd_spent = all.cost_usd;
        }
        // A quit during start (the tray's first figures) closes the ledger under the query.
        Err(e) if core.stopping() => {
            tracing::debug!(error = %e, "tray figures: the gateway is stopping");
            figures.error = Some(e.to_string());
        }
        Err(e) => {
            tracing::warn!(error = %e, "tray figures: cannot read the ledger");
            figures.error = Some(e.to_string());
        }
    }
    figures
}

/// The figures and the menu's texts for them.
pub async fn tray(core: &Core) -> TrayFigures {
    let figures = today(core).await;
    let lines = lines(&figures);
    TrayFigures { figures, lines }
}

/// The menu's texts for `figures`.
pub fn lines(figures: &Figures) -> Lines {
    let (saved, spent) = if !figures.ledger {
        (
            "Saved today: not recorded (no ledger)".to_owned(),
            "Spent today: not recorded (no ledger)".to_owned(),
        )
    } else if figures.error.is_some() {
        (
            "Saved today: the ledger cannot be read".to_owned(),
            "Spent today: the ledger cannot be read".to_owned(),
        )
    } else {
        (
            format!(
                "Saved today: {} tokens, {}",
                tokens(figures.tokens_saved),
                usd(figures.usd_saved)
            ),
            format!(
                "Spent today: {} tokens, {}",
                tokens(figures.tokens_spent),
                usd(figures.usd_spent)
            ),
        )
    };
    let providers = if figures.providers.is_empty() {
        vec!["No providers yet".to_owned()]
    } else {
        figures.providers.iter().map(provider_line).collect()
    };
    Lines {
        saved,
        spent,
        providers,
    }
}

fn provider_line(p: &ProviderState) -> String {
    match p.retry_in_secs {
        Some(secs) if p.state == "cooling down" => {
            format!("{}: cooling down ({} s)", p.provider, secs.ceil().max(0.0))
        }
        _ => format!("{}: {}", p.provider, p.state),
    }
}

/// 950 → "950", 12_345 → "12.3k", 4_200_000 → "4.2M": as the window's `formatTokens`.
pub fn tokens(n: i64) -> String {
    let sign = if n < 0 { "-" } else { "" };
    let a = n.unsigned_abs() as f64;
    let scaled =
        |value: f64, small: bool| trim_zero(&format!("{value:.*}", if small { 2 } else { 1 }));
    let text = if a < 1_000.0 {
        format!("{a}")
    } else if a < 1_000_000.0 {
        format!("{}k", scaled(a / 1e3, a < 1e4))
    } else if a < 1_000_000_000.0 {
        format!("{}M", scaled(a / 1e6, a < 1e7))
    } else {
        format!("{}B", scaled(a / 1e9, true))
    };
    format!("{sign}{text}")
}

/// US dollars as the window's `formatUsd` shows them: cents from a dollar up, and enough
/// digits below that for a fraction of a cent to show.
pub fn usd(n: f64) -> String {
    if !n.is_finite() {
        return "–".to_owned();
    }
    let sign = if n < 0.0 { "-" } else { "" };
    let a = n.abs();
    let text = if a == 0.0 {
        return "$0.00".to_owned();
    } else if a >= 1000.0 {
        format!("${}", thousands(a.round() as usize))
    } else if a >= 1.0 {
        format!("${a:.2}")
    } else if a >= 0.01 {
        let three = format!("{a:.3}");
        format!("${}", three.strip_suffix('0').unwrap_or(&three))
    } else if a >= 0.0001 {
        format!("${a:.4}")
    } else {
        return format!("{sign}<$0.0001");
    };
    format!("{sign}{text}")
}

fn trim_zero(text: &str) -> String {
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        text.to_owned()
    }
}

/// The start of the local day holding `now_ms`, in Unix milliseconds. The window's Overview
/// counts "today" from local midnight; so does the tray. Where the time zone cannot be
/// read, jiff uses UTC.
pub fn local_midnight_ms(now_ms: i64) -> i64 {
    let day_start = jiff::Timestamp::from_millisecond(now_ms)
        .map(|t| t.to_zoned(jiff::tz::TimeZone::system()))
        .and_then(|z| z.start_of_day());
    match day_start {
        Ok(start) => start.timestamp().as_millisecond(),
        Err(_) => now_ms - now_ms.rem_euclid(86_400_000),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures() -> Figures {
        Figures {
            since_ms: 0,
            ledger: true,
            requests: 3,
            tokens_saved: 12_345,
            usd_saved: 0.0421,
            tokens_spent: 4_200_000,
            usd_spent: 1.234,
            error: None,
            providers: vec![
                ProviderState {
                    provider: "openai".into(),
                    state: "up".into(),
                    retry_in_secs: None,
                },
                ProviderState {
                    provider: "anthropic".into(),
                    state: "cooling down".into(),
                    retry_in_secs: Some(11.2),
                },
                ProviderState {
                    provider: "deepseek".into(),
                    state: "probing".into(),
                    retry_in_secs: None,
                },
            ],
        }
    }

    #[test]
    fn the_menu_lines_name_tokens_dollars_and_each_provider() {
        let lines = lines(&figures());
        assert_eq!(lines.saved, "Saved today: 12.3k tokens, $0.042");
        assert_eq!(lines.spent, "Spent today: 4.2M tokens, $1.23");
        assert_eq!(
            lines.providers,
            [
                "openai: up",
                "anthropic: cooling down (12 s)",
                "deepseek: probing"
            ]
        );
    }

    #[test]
    fn without_a_ledger_or_providers_the_lines_say_so() {
        let mut f = figures();
        f.ledger = false;
        f.providers.clear();
        let lines = lines(&f);
        assert_eq!(lines.saved, "Saved today: not recorded (no ledger)");
        assert_eq!(lines.spent, "Spent today: not recorded (no ledger)");
        assert_eq!(lines.providers, ["No providers yet"]);
        let mut f = figures();
        f.error = Some("disk I/O error".into());
        assert_eq!(
            super::lines(&f).saved,
            "Saved today: the ledger cannot be read"
        );
    }

    #[test]
    fn tokens_read_like_the_window() {
        for (n, text) in [
            (0, "0"),
            (950, "950"),
            (1_000, "1k"),
            (1_234, "1.23k"),
            (12_345, "12.3k"),
            (999_999, "1000k"),
            (4_200_000, "4.2M"),
            (12_000_000, "12M"),
            (2_500_000_000, "2.5B"),
            (-1_500, "-1.5k"),
        ] {
            assert_eq!(tokens(n), text, "{n}");
        }
    }

    #[test]
    fn dollars_read_like_the_window() {
        for (n, text) in [
            (0.0, "$0.00"),
            (1234.4, "$1,234"),
            (1_234_567.0, "$1,234,567"),
            (12.345, "$12.35"),
            (1.0, "$1.00"),
            (0.42, "$0.42"),
            (0.0421, "$0.042"),
            (0.005, "$0.0050"),
            (0.00004, "<$0.0001"),
            (-0.5, "-$0.50"),
            (f64::NAN, "–"),
        ] {
            assert_eq!(usd(n), text, "{n}");
        }
    }

    #[test]
    fn today_starts_at_a_midnight_no_later_than_now() {
        let now = 1_796_130_000_000; // 2026-12-01 13:00 UTC
        let start = local_midnight_ms(now);
        assert!(
            start <= now && now - start < 86_400_000 + 3_600_000,
            "{start}"
        );
        assert_eq!(local_midnight_ms(start), start);
    }
}
