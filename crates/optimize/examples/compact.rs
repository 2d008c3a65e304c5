//! Compacts one file as a tool result and reports the effect:
//! `cargo run --release -p trimgate-optimize --example compact -- FILE [light|standard|aggressive|auto] [--print]`;
//! `… -- FILE count` prints only the file's o200k token count.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use trimgate_optimize::compact::{compact, Level};
use trimgate_optimize::tokens::count;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let text = std::fs::read_to_string(&args[1]).unwrap();
    if args.get(2).is_some_and(|a| a == "count") {
        println!("{}", count(&text));
        return;
    }
    let level = match args.get(2).map_or("auto", String::as_str) {
        "light" => Level::Light,
        "standard" => Level::Standard,
        "aggressive" => Level::Aggressive,
        _ => Level::Auto,
    };
    let t = std::time::Instant::now();
    let out = compact(&text, level);
    let ms = t.elapsed().as_secs_f64() * 1e3;
    let before = count(&text);
    match out {
        None => println!("{}: unchanged ({before} tokens, {ms:.2} ms)", args[1]),
        Some(new) => {
            let after = count(&new);
            println!(
                "{}: {before} → {after} tokens ({:.0} % saved), {} → {} bytes, {ms:.2} ms",
                args[1],
                100.0 * (1.0 - after as f64 / before as f64),
                text.len(),
                new.len()
            );
            if args.iter().any(|a| a == "--print") {
                println!("{new}");
            }
        }
    }
}
