//! `trimgate stats --by session`: the latest sessions, their cache breaks, and the net
//! savings against the held-out control group (the formula is
//! [`gateway_core::ledger::stats::Holdout`]'s).

use gateway_core::ledger::stats::{SessionsReport, Side};

pub fn print(report: &SessionsReport, json: bool, prices_date: &str) -> Result<(), String> {
    if json {
        let text = serde_json::to_string_pretty(report).map_err(|e| e.to_string())?;
        println!("{text}");
        return Ok(());
    }
    println!(
        "{:<36} {:<20} {:<16} {:>8} {:>11} {:>10} {:>10} {:>11} {:>9} {:>9} {:>8}  group",
        "session",
        "model",
        "last",
        "requests",
        "input tok",
        "cache rd",
        "cache wr",
        "removed tok",
        "cost $",
        "saved $",
        "breaks"
    );
    for s in &report.sessions {
        println!(
            "{:<36} {:<20} {:<16} {:>8} {:>11} {:>10} {:>10} {:>11} {:>9.4} {:>9.4} {:>8}  {}",
            s.session,
            s.model,
            crate::format_minute(s.last_ms),
            s.requests,
            s.input_tokens,
            s.cache_read_tokens,
            s.cache_write_tokens,
            s.saved_tokens,
            s.cost_usd,
            s.saved_usd,
            format!(
                "{}/{}/{}",
                s.breaks.gateway, s.breaks.client, s.breaks.provider
            ),
            if s.held_out { "held out" } else { "optimized" }
        );
    }
    let b = &report.breaks;
    println!(
        "{} sessions (showing {}); cache breaks (g/c/p): gateway {}, client {}, provider {}",
        report.session_count,
        report.sessions.len(),
        b.gateway,
        b.client,
        b.provider
    );
    let h = &report.holdout;
    println!("holdout comparison (same model, $ per million input-equivalent tokens):");
    println!("  optimized  {}", side(&h.optimized));
    println!("  held out   {}", side(&h.held_out));
    match (h.net_saved_usd, h.expected_usd) {
        (Some(net), Some(expected)) => println!(
            "  net saved  ${net:.4} ({:.1}% of ${expected:.4}, what the optimized traffic of {} would have cost at the held-out rate)",
            h.net_saved_share.unwrap_or(0.0) * 100.0,
            h.models.join(", ")
        ),
        _ => println!("  {}", h.note.as_deref().unwrap_or("no comparison")),
    }
    eprintln!("prices: list prices of {prices_date} (override with [[pricing]])");
    Ok(())
}

fn side(s: &Side) -> String {
    format!(
        "{} sessions, {} requests, {} tok, ${:.4}{}",
        s.sessions,
        s.requests,
        s.tokens,
        s.cost_usd,
        s.usd_per_mtok()
            .map_or(String::new(), |r| format!(" (${r:.4}/Mtok)"))
    )
}
