//! The window's files (`ui/dist`, built with npm): in a build without debug assertions
//! (release, fast) each is deflated into `OUT_DIR` and listed in `OUT_DIR/files.rs` for
//! `src/lib.rs` to embed (its 270 KB of script and style take 90 KB of the binary); debug
//! builds read them from the folder at run time, so one made before `npm run build` serves
//! them once they exist. Rebuilds when they change; the folder is made (empty) when missing.

use std::{env, error::Error, fmt::Write as _, fs, path::Path, path::PathBuf};

const DIST: &str = "../../ui/dist";

fn main() -> Result<(), Box<dyn Error>> {
    let _ = fs::create_dir_all(DIST);
    println!("cargo::rerun-if-changed={DIST}");
    let out = PathBuf::from(env::var_os("OUT_DIR").ok_or("no OUT_DIR")?);
    let mut files = Vec::new();
    if env::var_os("CARGO_CFG_DEBUG_ASSERTIONS").is_none() {
        walk(Path::new(DIST), "", &mut files)?;
    }
    files.sort();
    let mut list = String::from("&[\n");
    for (i, path) in files.iter().enumerate() {
        let packed =
            miniz_oxide::deflate::compress_to_vec(&fs::read(Path::new(DIST).join(path))?, 9);
        let name = format!("ui-{i}.deflate");
        fs::write(out.join(&name), packed)?;
        writeln!(
            list,
            "    ({path:?}, include_bytes!(concat!(env!(\"OUT_DIR\"), \"/{name}\"))),"
        )?;
    }
    list.push(']');
    fs::write(out.join("files.rs"), list)?;
    Ok(())
}

/// Every file under `dir`, as its path below `ui/dist` with `/` between the parts.
fn walk(dir: &Path, prefix: &str, files: &mut Vec<String>) -> Result<(), Box<dyn Error>> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry
            .file_name()
            .into_string()
            .map_err(|n| format!("{n:?} is not UTF-8"))?;
        let path = format!("{prefix}{name}");
        if entry.file_type()?.is_dir() {
            walk(&entry.path(), &format!("{path}/"), files)?;
        } else {
            files.push(path);
        }
    }
    Ok(())
}
