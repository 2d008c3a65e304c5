//! The config from environment variables, for containers and clusters, where a file is one
//! more thing to mount: `TRIMGATE__<SECTION>__<KEY>=value` sets `[section] key = value`.
//! `__` separates levels, a number indexes a list (`TRIMGATE__ROUTES__0__MATCH`), and names
//! are lower-cased (`TRIMGATE__PROVIDERS__OPENAI__API_KEY__ENV=OPENAI_API_KEY`). A value is
//! read as a TOML value (a number, `true`, `["a", "b"]`, `{ env = "X" }`) and, when it is
//! not one, as a string. The variables go over the file when there is one.
//!
//! A problem with a value set here is reported under the variable's name, so that the
//! operator knows which line of their deployment to fix.

use toml::{Table, Value};

use super::{ConfigError, ConfigProblem};

/// The variables' common prefix.
pub const PREFIX: &str = "TRIMGATE__";

/// One variable, read.
#[derive(Debug, Clone)]
pub struct Var {
    /// `TRIMGATE__SERVER__LISTEN`
    pub name: String,
    path: Vec<Segment>,
    value: Value,
}

#[derive(Debug, Clone, PartialEq)]
enum Segment {
    Key(String),
    Index(usize),
}

impl Var {
    /// The config path it sets, as problems name paths: `routes[0].fallbacks`.
    pub fn config_path(&self) -> String {
        let mut out = String::new();
        for segment in &self.path {
            match segment {
                Segment::Key(k) => {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(k);
                }
                Segment::Index(i) => out.push_str(&format!("[{i}]")),
            }
        }
        out
    }
}

/// The `TRIMGATE__` variables among `vars`, in name order (so lists fill from index 0).
pub fn read(vars: impl IntoIterator<Item = (String, String)>) -> Result<Vec<Var>, ConfigError> {
    let mut out = Vec::new();
    for (name, raw) in vars {
        let Some(rest) = name.strip_prefix(PREFIX) else {
            continue;
        };
        let bad = |detail: &str| ConfigError::Parse {
            path: name.clone(),
            detail: detail.to_owned(),
        };
        let mut path = Vec::new();
        for part in rest.split("__") {
            if part.is_empty() {
                return Err(bad("an empty name between `__`s"));
            }
            path.push(match part.parse::<usize>() {
                Ok(i) => Segment::Index(i),
                Err(_) => Segment::Key(part.to_ascii_lowercase()),
            });
        }
        if !matches!(path.first(), Some(Segment::Key(_))) {
            return Err(bad(
                "the first name after TRIMGATE__ must be a section or key",
            ));
        }
        out.push(Var {
            value: value_of(&raw),
            name,
            path,
        });
    }
    out.sort_by_cached_key(|v| natural(&v.path));
    Ok(out)
}

/// Orders paths so that `ROUTES__2` comes before `ROUTES__10`.
fn natural(path: &[Segment]) -> Vec<(u8, String, usize)> {
    path.iter()
        .map(|s| match s {
            Segment::Key(k) => (0, k.clone(), 0),
            Segment::Index(i) => (1, String::new(), *i),
        })
        .collect()
}

/// A TOML value when the text is one, else the text as a string.
fn value_of(raw: &str) -> Value {
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return Value::String(String::new());
    }
    match toml::from_str::<Table>(&format!("v = {trimmed}")) {
        Ok(mut t) => t
            .remove("v")
            .unwrap_or_else(|| Value::String(raw.to_owned())),
        Err(_) => Value::String(raw.to_owned()),
    }
}

/// Sets each variable's value in `table`, making the tables and list entries on its way.
pub fn apply(table: &mut Table, vars: &[Var]) -> Result<(), ConfigError> {
    for var in vars {
        set(table, &var.path, var.value.clone()).map_err(|detail| ConfigError::Parse {
            path: var.name.clone(),
            detail,
        })?;
    }
    Ok(())
}

fn set(table: &mut Table, path: &[Segment], value: Value) -> Result<(), String> {
    let (Segment::Key(first), rest) = path.split_first().ok_or("no name")? else {
        return Err("a list index where a name belongs".into());
    };
    if rest.is_empty() {
        table.insert(first.clone(), value);
        return Ok(());
    }
    let next_is_index = matches!(rest[0], Segment::Index(_));
    let slot = table.entry(first.clone()).or_insert_with(|| {
        if next_is_index {
            Value::Array(Vec::new())
        } else {
            Value::Table(Table::new())
        }
    });
    set_in(slot, first, rest, value)
}

fn set_in(slot: &mut Value, name: &str, rest: &[Segment], value: Value) -> Result<(), String> {
    match (&rest[0], slot) {
        (Segment::Key(_), Value::Table(t)) => set(t, rest, value),
        (Segment::Index(i), Value::Array(items)) => {
            if *i > items.len() {
                return Err(format!(
                    "`{name}` has {} entries so far: set index {} before {i}",
                    items.len(),
                    items.len()
                ));
            }
            if rest.len() == 1 {
                if *i == items.len() {
                    items.push(value);
                } else {
                    items[*i] = value;
                }
                return Ok(());
            }
            if *i == items.len() {
                items.push(match rest[1] {
                    Segment::Index(_) => Value::Array(Vec::new()),
                    Segment::Key(_) => Value::Table(Table::new()),
                });
            }
            set_in(&mut items[*i], name, &rest[1..], value)
        }
        (Segment::Key(k), _) => Err(format!("`{name}` is not a table, so it has no `{k}`")),
        (Segment::Index(_), _) => Err(format!("`{name}` is not a list")),
    }
}

/// Names the variable behind each problem whose path it set (or a path inside it).
pub fn attribute(problems: Vec<ConfigProblem>, vars: &[Var]) -> Vec<ConfigProblem> {
    problems
        .into_iter()
        .map(|mut p| {
            let from = vars.iter().find(|v| {
                let path = v.config_path();
                p.path == path
                    || p.path.starts_with(&format!("{path}."))
                    || p.path.starts_with(&format!("{path}["))
            });
            if let Some(var) = from {
                p.message = format!("{} (set by {})", p.message, var.name);
            }
            p
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vec<Var> {
        read(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string()))).unwrap()
    }

    #[test]
    fn names_become_paths_and_values_are_toml_or_strings() {
        let vars = vars(&[
            ("TRIMGATE__SERVER__LISTEN", "0.0.0.0:8788"),
            ("TRIMGATE__SERVER__MAX_IN_FLIGHT", "64"),
            ("TRIMGATE__PROVIDERS__OPENAI__KIND", "openai"),
            (
                "TRIMGATE__PROVIDERS__OPENAI__API_KEY__ENV",
                "OPENAI_API_KEY",
            ),
            ("TRIMGATE__ROUTES__0__MATCH", "claude-*"),
            ("TRIMGATE__ROUTES__0__FALLBACKS", r#"["openai/gpt-5"]"#),
            ("TRIMGATE__ROUTES__1__MATCH", "gpt-*"),
            ("TRIMGATE__LEDGER__ENABLED", "false"),
            ("OPENAI_API_KEY", "sk-not-read-here"),
        ]);
        assert_eq!(vars.len(), 8);
        let mut table = Table::new();
        apply(&mut table, &vars).unwrap();
        let expected: Table = toml::from_str(
            r#"
            [server]
            listen = "0.0.0.0:8788"
            max_in_flight = 64
            [providers.openai]
            kind = "openai"
            api_key = { env = "OPENAI_API_KEY" }
            [[routes]]
            match = "claude-*"
            fallbacks = ["openai/gpt-5"]
            [[routes]]
            match = "gpt-*"
            [ledger]
            enabled = false
            "#,
        )
        .unwrap();
        assert_eq!(table, expected);
        assert_eq!(vars[0].name, "TRIMGATE__LEDGER__ENABLED");
        let route = vars.iter().find(|v| v.name.ends_with("FALLBACKS")).unwrap();
        assert_eq!(route.config_path(), "routes[0].fallbacks");
    }

    #[test]
    fn lists_fill_in_order_and_a_gap_or_a_clash_names_the_variable() {
        // 10 after 2, not before: the order is by number.
        let mut numbered: Vec<(String, String)> = (0..11)
            .map(|i| (format!("TRIMGATE__ROUTES__{i}__MATCH"), format!("m{i}")))
            .collect();
        numbered.reverse();
        let mut table = Table::new();
        apply(&mut table, &read(numbered).unwrap()).unwrap();
        assert_eq!(table["routes"].as_array().unwrap().len(), 11);
        assert_eq!(table["routes"][10]["match"].as_str(), Some("m10"));

        let gap = vars(&[("TRIMGATE__ROUTES__1__MATCH", "x")]);
        let err = apply(&mut Table::new(), &gap).unwrap_err().to_string();
        assert!(err.contains("TRIMGATE__ROUTES__1__MATCH"), "{err}");
        assert!(err.contains("set index 0 before 1"), "{err}");

        let clash = vars(&[
            ("TRIMGATE__SERVER", "1"),
            ("TRIMGATE__SERVER__LISTEN", "0.0.0.0:1"),
        ]);
        let err = apply(&mut Table::new(), &clash).unwrap_err().to_string();
        assert!(err.contains("TRIMGATE__SERVER__LISTEN"), "{err}");
        assert!(err.contains("not a table"), "{err}");

        let bad = read([("TRIMGATE__SERVER____LISTEN".to_string(), "x".to_string())]);
        assert!(bad
            .unwrap_err()
            .to_string()
            .contains("TRIMGATE__SERVER____LISTEN"));
    }

    #[test]
    fn a_problem_under_a_variables_path_names_it() {
        let vars = vars(&[("TRIMGATE__ROUTES__0__FALLBACKS", r#"["nope/x"]"#)]);
        let problems = attribute(
            vec![
                ConfigProblem {
                    path: "routes[0].fallbacks[0]".into(),
                    message: "unknown provider `nope`".into(),
                },
                ConfigProblem {
                    path: "routes[0].provider".into(),
                    message: "missing".into(),
                },
            ],
            &vars,
        );
        assert_eq!(
            problems[0].message,
            "unknown provider `nope` (set by TRIMGATE__ROUTES__0__FALLBACKS)"
        );
        assert_eq!(problems[1].message, "missing");
    }
}
