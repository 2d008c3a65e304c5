//! Flat package listings read as what they list: `pip freeze`, `pip list` (as a table or
//! `--format=json`) and `npm ls --depth=0` each name packages at versions. Two listings of
//! one environment, taken by different commands, say the same facts in other words; the
//! turn-level repeats pass says the later one as a [`Reference`]: the earlier listing, what
//! differs from it, and the command whose print [`render`] gives back byte for byte. A
//! listing whose print does not come back exactly that way stays as sent.

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
    pub format: Format,
    pub packages: BTreeMap<String, (String, String)>,
    pub head: Option<String>,
}

/// Which command printed a listing, and so how it is printed again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    Freeze,
    Table,
    Json,
    Npm,
}

impl Format {
    const ALL: [Format; 4] = [Format::Freeze, Format::Table, Format::Json, Format::Npm];

    fn command(self) -> &'static str {
        match self {
            Format::Freeze => "pip freeze",
            Format::Table => "pip list",
            Format::Json => "pip list --format=json",
            Format::Npm => "npm ls --depth=0",
        }
    }

    /// How the format's names compare across listings: pip's normal form, npm's as written.
    fn key(self, name: &str) -> String {
        match self {
            Format::Npm => name.to_owned(),
            _ => normal(name),
        }
    }
}

/// What a later listing adds to an earlier one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
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
                // another version, or the name written otherwise (`pydantic_core`)
                Some((was_name, was)) if was != version || was_name != name => {
                    delta.changed.push((name.clone(), version.clone()));
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

impl Listing {
    /// `self` changed by `delta`, printed as `format` under `head`.
    pub fn with(&self, delta: &Delta, format: Format, head: Option<String>) -> Listing {
        let mut packages = self.packages.clone();
        for name in &delta.removed {
            packages.remove(&format.key(name));
        }
        for (name, version) in delta.changed.iter().chain(&delta.added) {
            packages.insert(format.key(name), (name.clone(), version.clone()));
        }
        Listing {
            format,
            packages,
            head,
        }
    }
}

/// A listing as its command prints it: pip freeze in name order, npm in the order of its
/// `name@version` lines, pip list's table
/// (names padded to the longest, under a rule of dashes) and its JSON in pip's normal order.
pub(crate) fn render(listing: &Listing) -> String {
    let mut entries: Vec<&(String, String)> = listing.packages.values().collect();
    match listing.format {
        Format::Freeze => entries.sort_by_key(|(name, _)| name.to_lowercase()),
        // npm sorts what it prints (`express-session@…` before `express@…`)
        Format::Npm => entries.sort_by_key(|(name, version)| format!("{name}@{version}")),
        Format::Table | Format::Json => {}
    }
    match listing.format {
        Format::Freeze => entries
            .iter()
            .map(|(name, version)| format!("{name}=={version}"))
            .collect::<Vec<_>>()
            .join("\n"),
        Format::Table => {
            let longest = |title: &str, f: fn(&(String, String)) -> usize| {
                entries
                    .iter()
                    .map(|e| f(e))
                    .max()
                    .unwrap_or(0)
                    .max(title.len())
            };
            let w = longest("Package", |e| e.0.len());
            let v = longest("Version", |e| e.1.len());
            let mut out = format!(
                "{:<w$} Version\n{} {}",
                "Package",
                "-".repeat(w),
                "-".repeat(v)
            );
            for (name, version) in entries {
                out.push_str(&format!("\n{name:<w$} {version}"));
            }
            out
        }
        Format::Json => format!(
            "[{}]",
            entries
                .iter()
                .map(|(name, version)| format!(
                    "{{\"name\": \"{name}\", \"version\": \"{version}\"}}"
                ))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Format::Npm => {
            let mut out = listing.head.clone().unwrap_or_default();
            for (i, (name, version)) in entries.iter().enumerate() {
                let glyph = if i + 1 == entries.len() {
                    "└── "
                } else {
                    "├── "
                };
                out.push_str(&format!("\n{glyph}{name}@{version}"));
            }
            out
        }
    }
}

/// A listing said as an earlier one and what differs from it, on one line (npm's root
/// line above it):
///
/// ```text
/// [… 98 packages as pip list prints them: those the earlier tool result of call c1 lists, which is above, at the versions it gives; at another version here: anyio 4.17.0; less: six; and besides: pip 24.0, setuptools 65.5.0 …]
/// ```
///
/// [`Reference::parse`] reads back what [`Reference::text`] writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Reference {
    pub format: Format,
    pub count: usize,
    /// The earlier listing: its tool call's id, or its place among the results (from 1).
    pub call: Result<String, usize>,
    pub delta: Delta,
    pub head: Option<String>,
}

const THOSE: &str = ": those ";
const BY_CALL: &str = "the earlier tool result of call ";
const BY_PLACE: &str = "earlier tool result #";

/// An earlier tool result as a reference names it: by its call's id, or by its place
/// among the results (from 1) where it has none.
pub(crate) fn earlier_result(call: &Result<String, usize>) -> String {
    match call {
        Ok(id) => format!("{BY_CALL}{id}"),
        Err(n) => format!("{BY_PLACE}{n}"),
    }
}
const ABOVE: &str = " lists, which is above, at the versions it gives";
const CHANGED: &str = "at another version here: ";
const LESS: &str = "less: ";
const ADDED: &str = "and besides: ";

impl Reference {
    pub fn text(&self) -> String {
        let whose = earlier_result(&self.call);
        let pairs = |list: &[(String, String)]| {
            list.iter()
                .map(|(name, version)| format!("{name} {version}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut text = format!(
            "[… {} packages as {} prints them{THOSE}{whose}{ABOVE}",
            self.count,
            self.format.command()
        );
        if !self.delta.changed.is_empty() {
            text.push_str(&format!("; {CHANGED}{}", pairs(&self.delta.changed)));
        }
        if !self.delta.removed.is_empty() {
            text.push_str(&format!("; {LESS}{}", self.delta.removed.join(", ")));
        }
        if !self.delta.added.is_empty() {
            text.push_str(&format!("; {ADDED}{}", pairs(&self.delta.added)));
        }
        text.push_str(" …]");
        match &self.head {
            Some(head) => format!("{head}\n{text}"),
            None => text,
        }
    }

    pub fn parse(text: &str) -> Option<Reference> {
        let (head, line) = match text.rsplit_once('\n') {
            Some((head, line)) => (Some(head.to_owned()), line),
            None => (None, text),
        };
        let body = line.strip_prefix("[… ")?.strip_suffix(" …]")?;
        let (count, rest) = body.split_once(" packages as ")?;
        let (command, rest) = rest.split_once(" prints them")?;
        let format = Format::ALL.into_iter().find(|f| f.command() == command)?;
        let (whose, rest) = rest.strip_prefix(THOSE)?.split_once(ABOVE)?;
        let call = match whose.strip_prefix(BY_CALL) {
            Some(id) => Ok(id.to_owned()),
            None => Err(whose.strip_prefix(BY_PLACE)?.parse().ok()?),
        };
        let pairs = |list: &str| -> Option<Vec<(String, String)>> {
            list.split(", ")
                .map(|p| p.split_once(' ').map(|(n, v)| (n.to_owned(), v.to_owned())))
                .collect()
        };
        let mut delta = Delta::default();
        let mut parts = rest.split("; ");
        if parts.next() != Some("") {
            return None;
        }
        for part in parts {
            if let Some(list) = part.strip_prefix(CHANGED) {
                delta.changed = pairs(list)?;
            } else if let Some(list) = part.strip_prefix(LESS) {
                delta.removed = list.split(", ").map(str::to_owned).collect();
            } else {
                delta.added = pairs(part.strip_prefix(ADDED)?)?;
            }
        }
        if head.is_some() != (format == Format::Npm) {
            return None;
        }
        Some(Reference {
            format,
            count: count.parse().ok()?,
            call,
            delta,
            head,
        })
    }

    /// The listing this reference stands for, from the one it names.
    pub fn listing(&self, earlier: &Listing) -> Listing {
        earlier.with(&self.delta, self.format, self.head.clone())
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
        format: Format::Freeze,
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
        format: Format::Table,
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
        format: Format::Json,
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
        format: Format::Npm,
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

    /// `names(n)` as pip freeze prints them.
    fn frozen(n: usize) -> String {
        names(n)
            .iter()
            .map(|(n, v)| format!("{n}=={v}\n"))
            .collect()
    }

    /// Real outputs of one environment: pip freeze, then pip list, then its JSON. Each is
    /// read as a listing and printed back byte for byte; the list is the freeze and two
    /// packages more, and the JSON the list, and each prints back from the one before.
    #[test]
    fn real_listings_print_back_and_from_each_other() {
        let freeze = include_str!("fixtures/pip_freeze.txt");
        let list = include_str!("fixtures/pip_list.txt");
        let json = include_str!("fixtures/pip_list_json.txt");
        let npm = include_str!("compact/fixtures/npm_ls_depth0.txt");
        for text in [freeze, list, json, npm] {
            let listing = read(text).unwrap();
            assert_eq!(render(&listing), text.trim_end());
        }
        let (freeze, list, json) = (
            read(freeze).unwrap(),
            read(list).unwrap(),
            read(json).unwrap(),
        );
        let delta = list.since(&freeze);
        assert_eq!(delta.len(), 2, "{delta:?}");
        let reference = Reference {
            format: list.format,
            count: list.packages.len(),
            call: Ok("call_1".into()),
            delta,
            head: None,
        };
        assert_eq!(Reference::parse(&reference.text()), Some(reference.clone()));
        assert_eq!(reference.listing(&freeze), list);
        assert_eq!(json.since(&list), Delta::default());
    }

    /// A reference reads back as written, npm's root line with it; text that only opens
    /// like one does not read.
    #[test]
    fn references_read_back() {
        let reference = Reference {
            format: Format::Npm,
            count: 12,
            call: Err(3),
            delta: Delta {
                added: vec![("@types/node".into(), "20.1.0".into())],
                removed: vec!["left-pad".into()],
                changed: vec![
                    ("zod".into(), "3.23.0".into()),
                    ("react".into(), "19.0.0".into()),
                ],
            },
            head: Some("app@1.0.0 /srv/app".into()),
        };
        assert_eq!(Reference::parse(&reference.text()), Some(reference));
        for text in [
            "[… 12 packages as pip list prints them: those earlier tool result #2 lists …]",
            "[… 12 packages as cargo tree prints them: those earlier tool result #2 lists, which is above, at the versions it gives …]",
            "[… 12 packages as pip freeze prints them: those earlier tool result #2 lists, which is above, at the versions it gives; maybe: x …]",
            "a head\n[… 12 packages as pip freeze prints them: those earlier tool result #2 lists, which is above, at the versions it gives …]",
        ] {
            assert_eq!(Reference::parse(text), None, "{text}");
        }
    }

    /// What a later listing adds, drops and changes, by name.
    #[test]
    fn a_delta_names_what_differs() {
        let earlier: String = frozen(10);
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
        let freeze: String = frozen(10);
        for text in [
            freeze.clone() + "-e git+https://example.com/x.git#egg=x\n",
            freeze.clone() + "WARNING: something\n",
            freeze.clone() + "mypkg @ file:///tmp/mypkg\n",
            freeze.clone() + "Pkg-1==9.9\n",
            frozen(7),
            "app@1.0.0 /srv/app\n├── a@1 deduped\n".repeat(9),
            format!("[{}]", (0..9).map(|i| format!("{{\"name\": \"a{i}\", \"version\": \"1\", \"editable_project_location\": \"/x\"}}")).collect::<Vec<_>>().join(", ")),
            "Package Version Location\n------- ------- --------\na 1 /x\n".to_owned(),
        ] {
            assert_eq!(read(&text), None, "{text}");
        }
    }

    proptest::proptest! {
        /// Any set of packages printed as each command prints it reads back as the same
        /// set and prints back byte for byte; any reference reads back as written.
        #[test]
        fn printed_listings_and_references_read_back(
            packages in proptest::collection::btree_map("[a-z][a-z0-9_.-]{0,12}", "[0-9]{1,3}(\\.[0-9a-z]{1,4}){0,3}", 8..40),
            format in 0usize..4,
            removed in proptest::collection::vec("[a-z][a-z0-9-]{0,8}", 0..3),
        ) {
            let format = Format::ALL[format];
            let mut listing = Listing {
                format,
                packages: BTreeMap::new(),
                head: (format == Format::Npm).then(|| "app@1.0.0 /srv/app".to_owned()),
            };
            for (name, version) in &packages {
                listing.packages.insert(format.key(name), (name.clone(), version.clone()));
            }
            proptest::prop_assume!(listing.packages.len() == packages.len());
            let printed = render(&listing);
            proptest::prop_assert_eq!(read(&printed), Some(listing));
            let reference = Reference {
                format,
                count: packages.len(),
                call: Ok("toolu_01".into()),
                delta: Delta { added: packages.clone().into_iter().take(2).collect(), removed, changed: vec![] },
                head: (format == Format::Npm).then(|| "app@1.0.0 /srv/app".to_owned()),
            };
            proptest::prop_assert_eq!(Reference::parse(&reference.text()), Some(reference));
        }
    }
}
