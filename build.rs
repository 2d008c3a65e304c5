//! Links `trimgate` without unwind tables (`.eh_frame`, 1.1 MB of a 16 MB binary) in the
//! builds that never use them: the profiles that inherit `release` (`panic = "abort"`) and
//! carry no debug info (`release`, `fast`). Nothing unwinds in them: a panic prints its
//! message and where it happened, then aborts; only the backtrace under it goes, and in a
//! stripped binary that was addresses without names. `profiling` keeps the tables (perf
//! reads them), and so do debug builds and the tests, which unwind.

use std::{env, error::Error, fs, path::PathBuf};

/// Added to the linker's own script (`INSERT`): the unwind tables are dropped.
const NO_UNWIND_TABLES: &str =
    "SECTIONS { /DISCARD/ : { *(.eh_frame) *(.eh_frame_hdr) } } INSERT AFTER .text;\n";

fn main() -> Result<(), Box<dyn Error>> {
    println!("cargo::rerun-if-changed=build.rs");
    let release = env::var("PROFILE").is_ok_and(|p| p == "release");
    let no_debug_info = env::var("DEBUG").is_ok_and(|d| d == "false" || d == "0");
    let linux = env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    if release && no_debug_info && linux {
        let script =
            PathBuf::from(env::var_os("OUT_DIR").ok_or("no OUT_DIR")?).join("no-unwind-tables.ld");
        fs::write(&script, NO_UNWIND_TABLES)?;
        println!(
            "cargo::rustc-link-arg-bin=trimgate=-Wl,-T,{}",
            script.display()
        );
    }
    Ok(())
}
