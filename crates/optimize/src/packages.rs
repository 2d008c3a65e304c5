//! Flat package listings read as what they list: `pip freeze`, `pip list` (as a table or
//! `--format=json`) and `npm ls --depth=0` each name packages at versions. Two listings of
//! one environment, taken by different commands, say the same facts in other words; the
//! turn-level repeats pass says the later one as what it adds to the earlier.

use std::collections::BTreeMap;

/// Fewest packages a listing must name to be read as one.
const MIN_PACKAGES: usize = 8;

/// Longest text read as a listing: tens of thousands of packages, more than any
/// environment holds.
const MAX_BYTES: usize = 1 << 20;

/// What a listing names: each package by its normalized name, with the name as the
/// listing writes it and its version; and the line that opens it where that line holds a
/// fact of its own (npm's root package and its directory).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Listing {
    pub packages: BTreeMap<String, (String, String)>,
    pub head: Option<String>,
}

/// What a later listing adds to an earlier one.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Delta {
    /// Packages the earlier listing does not name: (name, version).
    pub added: Vec<(String, String)>,
    /// Packages only the earlier listing names.
    pub removed: Vec<String>,
    /// Packages named by both at another version: (name, version now).
    pub changed: Vec<(String, String)>,
}

impl Delta {
    pub fn len(&self) -> usize {
        self.added.len() + self.removed.len() + self.changed.len()
    }
}

impl Listing {
    /// How `self` differs from `earlier`.
    pub fn since(&self, earlier: &Listing) -> Delta {
        let mut delta = Delta::default();
        for (key, (name, version)) in &self.packages {
            match earlier.packages.get(key) {
                None => delta.added.push((name.clone(), version.clone())),
                Some((_, was)) if was != version => {
                    delta.changed.push((name.clone(), version.clone()))
                }
                Some(_) => {}
            }
        }
        delta.removed = earlier
            .packages
            .iter()
            .filter(|(key, _)| !self.packages.contains_key(*key))
            .map(|(_, (name, _))| name.clone())
            .collect();
        delta
    }
}

/// The listing `output` is, or `None` when any line of it is not part of one (a pinned
/// URL, an editable install, npm's `deduped` or `UNMET`, a warning).
pub(crate) fn read(output: &str) -> Option<Listing> {
    let text = output.trim();
    if text.len() > MAX_BYTES {
        return None;
    }
    let listing = if text.starts_with("[{\"name\":") {
        json_list(text)?
    } else if text.starts_with("Package ") {
        pip_list(text)?
    } else if let Some((head, tree)) = text
        .split_once('\n')
        .filter(|(_, t)| t.starts_with("├── ") || t.starts_with("└── "))
    {
        npm_ls(head, tree)?
    } else {
        pip_freeze(text)?
    };
    (listing.packages.len() >= MIN_PACKAGES).then_some(listing)
}

/// PEP 503's normal form, which pip's commands each print differently (`ast_serialize`,
/// `ast-serialize`); npm names are compared as written.
fn normal(name: &str) -> String {
    name.to_ascii_lowercase().replace(['_', '.'], "-")
}

/// A name and version as a package manager writes them: no blanks, nothing that opens a
/// URL or a path.
fn plain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 100
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.+!".contains(c))
}

/// npm's names may be scoped (`@types/node`).
fn npm_name(s: &str) -> bool {
    let bare = s
        .strip_prefix('@')
        .and_then(|s| s.split_once('/'))
        .map_or(s, |(scope, name)| if plain(scope) { name } else { "" });
    plain(bare)
}

/// Each entry's name (as `key` normalizes it) with the name as written and its version;
/// `None` if an entry is missing or malformed, or a name comes twice.
fn collect<'a>(
    entries: impl Iterator<Item = Option<(&'a str, &'a str)>>,
    key: fn(&str) -> String,
) -> Option<BTreeMap<String, (String, String)>> {
    let mut packages = BTreeMap::new();
    for entry in entries {
        let (name, version) = entry.filter(|(n, v)| (plain(n) || npm_name(n)) && plain(v))?;
        // a name twice is not one environment's listing
        if packages
            .insert(key(name), (name.to_owned(), version.to_owned()))
            .is_some()
        {
            return None;
        }
    }
    Some(packages)
}

/// `name==version` a line.
fn pip_freeze(text: &str) -> Option<Listing> {
    let packages = collect(text.lines().map(|l| l.trim_end().split_once("==")), normal)?;
    Some(Listing {
        packages,
        head: None,
    })
}

/// `Package  Version` over a rule of dashes, then `name  version` a line.
fn pip_list(text: &str) -> Option<Listing> {
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next()?.split_whitespace().collect();
    let rule = lines.next()?;
    if header != ["Package", "Version"] || !rule.bytes().all(|b| b == b'-' || b == b' ') {
        return None;
    }
    let packages = collect(
        lines.map(|l| {
            let mut cells = l.split_whitespace();
            match (cells.next(), cells.next(), cells.next()) {
                (Some(name), Some(version), None) => Some((name, version)),
                _ => None,
            }
        }),
        normal,
    )?;
    Some(Listing {
        packages,
        head: None,
    })
}

/// `pip list --format=json`: an array of objects with exactly a name and a version.
fn json_list(text: &str) -> Option<Listing> {
    let items: Vec<BTreeMap<String, String>> = serde_json::from_str(text).ok()?;
    let pairs: Vec<(String, String)> = items
        .into_iter()
        .map(|item| {
            let mut keys = item.into_iter();
            match (keys.next(), keys.next(), keys.next()) {
                (Some((n, name)), Some((v, version)), None) if n == "name" && v == "version" => {
                    Some((name, version))
                }
                _ => None,
            }
        })
        .collect::<Option<_>>()?;
    let packages = collect(
        pairs.iter().map(|(n, v)| Some((n.as_str(), v.as_str()))),
        normal,
    )?;
    Some(Listing {
        packages,
        head: None,
    })
}

/// `npm ls --depth=0`: the root line, then `├── name@version` a line (`└── ` last).
fn npm_ls(head: &str, tree: &str) -> Option<Listing> {
    let packages = collect(
        tree.lines().map(|l| {
            let entry = l.strip_prefix("├── ").or_else(|| l.strip_prefix("└── "))?;
            let at = entry.rfind('@').filter(|&at| at > 0)?;
            Some((entry.get(..at)?, entry.get(at + 1..)?))
        }),
        |name| name.to_owned(),
    )?;
    Some(Listing {
        packages,
        head: Some(head.to_owned()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: usize) -> Vec<(String, String)> {
        (0..n)
            .map(|i| (format!("Pkg_{i}"), format!("1.{i}.0")))
            .collect()
    }

    /// The same environment as pip freeze, pip list and its JSON print it reads the same.
    #[test]
    fn three_listings_of_one_environment_read_alike() {
        let pkgs = names(10);
        let freeze: String = pkgs.iter().map(|(n, v)| format!("{n}=={v}\n")).collect();
        let list = format!(
            "Package   Version\n--------- -------\n{}",
            pkgs.iter()
                .map(|(n, v)| format!("{:<9} {v}\n", n.replace('_', "-").to_lowercase()))
                .collect::<String>()
        );
        let json = serde_json::to_string(
            &pkgs
                .iter()
                .map(|(n, v)| serde_json::json!({"name": n, "version": v}))
                .collect::<Vec<_>>(),
        )
        .unwrap();
        let (a, b, c) = (
            read(&freeze).unwrap(),
            read(&list).unwrap(),
            read(&json).unwrap(),
        );
        assert_eq!(b.since(&a), Delta::default());
        assert_eq!(c.since(&b), Delta::default());
        assert_eq!(a.packages.len(), 10);
    }

    /// What a later listing adds, drops and changes, by name.
    #[test]
    fn a_delta_names_what_differs() {
        let earlier: String = names(10)
            .iter()
            .map(|(n, v)| format!("{n}=={v}\n"))
            .collect();
        let later = earlier
            .replace("Pkg_3==1.3.0\n", "")
            .replace("1.5.0", "2.0.0")
            + "pip==24.0\n";
        let delta = read(&later).unwrap().since(&read(&earlier).unwrap());
        assert_eq!(delta.added, [("pip".to_owned(), "24.0".to_owned())]);
        assert_eq!(delta.removed, ["Pkg_3"]);
        assert_eq!(delta.changed, [("Pkg_5".to_owned(), "2.0.0".to_owned())]);
    }

    /// npm's root line is kept as the listing's own fact; its entries read as name and
    /// version, scoped names whole.
    #[test]
    fn npm_ls_depth_0_reads_with_its_root() {
        let tree = "app@1.0.0 /srv/app\n".to_owned()
            + &(0..9)
                .map(|i| format!("├── @scope/p{i}@1.0.{i}\n"))
                .collect::<String>()
            + "└── zod@3.22.4";
        let listing = read(&tree).unwrap();
        assert_eq!(listing.head.as_deref(), Some("app@1.0.0 /srv/app"));
        assert_eq!(listing.packages["@scope/p3"].1, "1.0.3");
        assert_eq!(listing.packages.len(), 10);
    }

    /// Anything else in the text, or too few packages, is not a listing.
    #[test]
    fn other_text_is_not_a_listing() {
        let freeze: String = names(10)
            .iter()
            .map(|(n, v)| format!("{n}=={v}\n"))
            .collect();
        for text in [
            freeze.clone() + "-e git+https://example.com/x.git#egg=x\n",
            freeze.clone() + "WARNING: something\n",
            freeze.clone() + "mypkg @ file:///tmp/mypkg\n",
            freeze.clone() + "Pkg-1==9.9\n",
            names(7).iter().map(|(n, v)| format!("{n}=={v}\n")).collect(),
            "app@1.0.0 /srv/app\n├── a@1 deduped\n".repeat(9),
            format!("[{}]", (0..9).map(|i| format!("{{\"name\": \"a{i}\", \"version\": \"1\", \"editable_project_location\": \"/x\"}}")).collect::<Vec<_>>().join(", ")),
            "Package Version Location\n------- ------- --------\na 1 /x\n".to_owned(),
        ] {
            assert_eq!(read(&text), None, "{text}");
        }
    }
}
