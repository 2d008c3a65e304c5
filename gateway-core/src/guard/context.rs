//! The tests rules delegate to code: whether a name says secret, whether a value could
//! be one, whether a JWT is one. Pure functions of their inputs.
//!
//! The traps are the point. What an agent reads every day is full of names with `key`,
//! `token` or `auth` in them whose values are not secrets (`max_tokens`, `sort_key`,
//! `password: string`, `"js-tokens": "^4.0.0"`, `API_KEY=${API_KEY}`), and a secret
//! replaced wrongly costs the model the text it needed.

use base64::Engine;

/// Words that say a name's value is secret, on their own (`token`, `client_secret`).
const STRONG_WORDS: &[&str] = &[
    "secret",
    "secrets",
    "token",
    "password",
    "passwords",
    "passwd",
    "passphrase",
    "credential",
    "credentials",
    "creds",
];

/// Endings of a word glued from several (`clientsecret`, `authtoken`, `dbpassword`)
/// that say the same.
const STRONG_ENDINGS: &[&str] = &[
    "secret",
    "token",
    "password",
    "passwd",
    "passphrase",
    "credential",
    "credentials",
];

/// Words that say it only beside another word (`DB_PASS`, `MYSQL_PWD`, `BASIC_AUTH`):
/// alone they are a test's verdict (`PASS:`), the shell's directory (`PWD`), a switch
/// (`auth: true`).
const WEAK_WORDS: &[&str] = &[
    "pass",
    "pwd",
    "auth",
    "basicauth",
    "nextauth",
    "httpauth",
    "proxyauth",
];

/// Glued words ending in a kind of key (`apikey`, `secretKey` written as one word).
const KEY_ENDINGS: &[&str] = &[
    "apikey",
    "secretkey",
    "accesskey",
    "privatekey",
    "authkey",
    "signingkey",
    "masterkey",
    "encryptionkey",
];

/// A word before `key` that makes it a secret key in any naming style (`api_key`,
/// `signingKey`); an upper-case environment name (`STRIPE_KEY`) needs none of these.
const KEY_QUALIFIERS: &[&str] = &[
    "api",
    "secret",
    "private",
    "access",
    "signing",
    "sign",
    "master",
    "encryption",
    "encrypt",
    "crypt",
    "crypto",
    "client",
    "app",
    "application",
    "auth",
    "service",
    "account",
    "license",
    "licence",
    "admin",
    "session",
    "deploy",
    "webhook",
    "shared",
    "hmac",
    "ssh",
    "aes",
    "rsa",
    "jwt",
    "subscription",
    "consumer",
    "root",
    "token",
    "secure",
    "security",
    "server",
    "gpg",
    "pgp",
    "ingest",
    "management",
    "developer",
];

/// A word before `key` that makes it a lookup key, even in an environment name.
const KEY_NOT_SECRET: &[&str] = &[
    "public",
    "publishable",
    "primary",
    "foreign",
    "sort",
    "cache",
    "partition",
    "idempotency",
    "hot",
    "shortcut",
    "routing",
    "object",
    "bucket",
    "lookup",
    "search",
    "index",
    "unique",
    "composite",
    "registry",
    "feature",
    "map",
    "group",
    "row",
    "column",
    "hash",
    "dedup",
    "dedupe",
    "lock",
    "storage",
    "kv",
    "i18n",
    "translation",
    "locale",
    "cursor",
    "page",
    "pagination",
    "range",
    "shard",
    "order",
    "natural",
    "surrogate",
    "compound",
    "site",
    "anon",
    "dict",
    "dictionary",
    "message",
    "label",
    "record",
    "item",
    "entry",
    "field",
    "sequence",
    "schema",
    "namespace",
    "prefix",
    "ssh-host",
    "host",
];

/// A last word that makes the value something about a secret, not the secret
/// (`API_KEY_ID`, `TOKEN_URL`, `SECRET_NAME`, `PASSWORD_MIN_LENGTH`).
const NOT_SECRET_LAST: &[&str] = &[
    "id",
    "ids",
    "name",
    "names",
    "url",
    "urls",
    "uri",
    "uris",
    "endpoint",
    "endpoints",
    "path",
    "paths",
    "file",
    "files",
    "filename",
    "dir",
    "directory",
    "type",
    "types",
    "kind",
    "length",
    "len",
    "size",
    "host",
    "hostname",
    "port",
    "region",
    "user",
    "username",
    "email",
    "enabled",
    "enable",
    "disabled",
    "disable",
    "required",
    "method",
    "methods",
    "mode",
    "header",
    "headers",
    "prefix",
    "suffix",
    "format",
    "version",
    "alias",
    "arn",
    "expiry",
    "expires",
    "expiration",
    "expire",
    "ttl",
    "timeout",
    "lifetime",
    "age",
    "scheme",
    "provider",
    "providers",
    "field",
    "fields",
    "env",
    "var",
    "count",
    "max",
    "min",
    "limit",
    "limits",
    "policy",
    "rotation",
    "algorithm",
    "alg",
    "location",
    "store",
    "storage",
    "backend",
    "source",
    "ref",
    "label",
    "hint",
    "option",
    "options",
    "config",
    "settings",
    "manager",
    "handler",
    "callback",
    "redirect",
    "strategy",
    "generator",
    "class",
    "module",
    "plugin",
    "param",
    "parameter",
    "usage",
    "used",
    "at",
    "date",
    "time",
    "timestamp",
    "seconds",
    "secs",
    "ms",
    "minutes",
    "hours",
    "days",
    "period",
    "interval",
    "bits",
    "pattern",
    "regex",
    "schema",
    "validation",
    "rule",
    "rules",
    "error",
    "message",
    "output",
    "input",
    "cookie",
    "list",
    "issuer",
    "audience",
    "scope",
    "scopes",
    "service",
    "mechanism",
    "server",
    "number",
    "num",
];

/// A word anywhere in a name that says its value is not a live secret: something about
/// one (`AUTH_TYPE_OIDC`), a public half, a made-up one, or an opaque cursor
/// (`next_page_token`, `continuation_token`) that grants nothing.
const NOT_SECRET_ANYWHERE: &[&str] = &[
    "public",
    "publishable",
    "csrf",
    "xsrf",
    "fake",
    "dummy",
    "example",
    "sample",
    "mock",
    "placeholder",
    "type",
    "types",
    "kind",
    "mode",
    "method",
    "page",
    "pagination",
    "continuation",
    "cursor",
    "resume",
    "sync",
];

/// Whole values that are words about a secret, types or switches, not secrets; and the
/// defaults every tutorial and image ships with (`postgres`, `guest`, `hunter2`), which
/// guard nothing a reader does not already know.
const NOT_SECRET_VALUES: &[&str] = &[
    "true",
    "false",
    "yes",
    "no",
    "on",
    "off",
    "null",
    "nil",
    "none",
    "undefined",
    "nan",
    "string",
    "str",
    "number",
    "int",
    "integer",
    "float",
    "double",
    "bool",
    "boolean",
    "any",
    "object",
    "array",
    "required",
    "optional",
    "secret",
    "secrets",
    "password",
    "passwd",
    "token",
    "key",
    "apikey",
    "api_key",
    "value",
    "default",
    "disabled",
    "enabled",
    "hidden",
    "empty",
    "unset",
    "notset",
    "not_set",
    "n/a",
    "na",
    "tbd",
    "todo",
    "changeme",
    "change_me",
    "change-me",
    "redacted",
    "masked",
    "private",
    "public",
    "sensitive",
    "env",
    "environment",
    "auto",
    "inherit",
    "bearer",
    "basic",
    "pass",
    "pwd",
    "admin",
    "root",
    "guest",
    "user",
    "postgres",
    "mysql",
    "redis",
    "rabbitmq",
    "changeit",
    "hunter2",
    "s3cret",
    "letmein",
    "qwerty",
    "test",
    "foo",
    "bar",
    "baz",
];

/// Pieces of a value that say it is made up (`fake_key_for_tests`, `your-api-key-here`,
/// AWS's documented `…EXAMPLEKEY`).
const MADE_UP: &[&str] = &[
    "example",
    "dummy",
    "fake",
    "sample",
    "placeholder",
    "changeme",
    "change_me",
    "change-me",
    "replace_me",
    "replaceme",
    "replace-me",
    "your_",
    "your-",
    "yourkey",
    "yourtoken",
    "yoursecret",
    "yourpassword",
    "insert_",
    "insert-",
    "redacted",
    "notreal",
    "not_real",
    "not-real",
    "not-a-real",
    "invalid",
    "foobar",
    "mock",
    "hunter2",
    "s3cret",
    "xxxx",
    "****",
    "...",
    "…",
];

/// Words a value holds when it stands for a secret rather than being one: tests and docs
/// name their stand-ins after what they stand for (`token-1`, `auth_tokens/tok_123`,
/// `sk-test-key`, `a secret`), and types are named after what they hold
/// (`X25519PrivateKey`). A live credential is random and says none of these.
const ILLUSTRATIVE: &[&str] = &[
    "token",
    "secret",
    "password",
    "passwd",
    "test",
    "demo",
    "apikey",
    "api_key",
    "api-key",
    "privatekey",
    "publickey",
];

/// How strict to be with a value, by what found it.
#[derive(Clone, Copy, Debug)]
pub(super) struct ValuePolicy {
    pub min_len: usize,
    /// A value of letters only (and `_.-`) may be a secret: true where the context
    /// leaves no doubt (a URL's password, an environment file's upper-case name); in code
    /// such a value is a variable or a type (`password: string`, `token = token`).
    pub words: bool,
    /// A number may be a secret (a URL's numeric password); elsewhere it is a port, a
    /// count, a version.
    pub numbers: bool,
    /// Reject what reads as code: calls, member paths.
    pub code: bool,
}

impl ValuePolicy {
    /// A URL's password: the URL leaves no doubt, so only placeholders are refused.
    pub const PASSWORD: ValuePolicy = ValuePolicy {
        min_len: 1,
        words: true,
        numbers: true,
        code: false,
    };

    /// A credential known by where it stands (a header's, a named key's).
    pub const CREDENTIAL: ValuePolicy = ValuePolicy {
        min_len: 8,
        words: false,
        numbers: false,
        code: true,
    };

    /// An assignment's value. Six characters at least: shorter values of secret-sounding
    /// names are switches and modes (`auth=basic`, `token: none`), and a real password
    /// that short is rare. A value of words alone is a secret only under an
    /// environment-style name that says so outright (`JWT_SECRET=supersecretvalue`);
    /// in code it is a variable or a type (`password: string`, `token = token`).
    fn assignment(name: &str, value: &str, strength: Strength) -> ValuePolicy {
        ValuePolicy {
            min_len: 6,
            words: strength == Strength::Strong
                && is_env_name(name)
                && !is_env_name(value)
                && !value.contains(['_', '.']),
            numbers: false,
            code: true,
        }
    }
}

/// How sure a name is that its value is secret.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Strength {
    /// `DB_PASS`, `API_KEY`: a key or a pass, but values of words alone are not believed.
    Weak,
    /// `DB_PASSWORD`, `client_secret`, `GITHUB_TOKEN`.
    Strong,
}

/// Whether an assignment (`name`, its `value`, and the text after the value) holds a
/// secret. A bare value followed by `(`, `[`, `<`, `,` or `)` is code: a call, an index,
/// a generic type, an argument (`password = base64.b64decode(…)`,
/// `private_key: PKCS7Types,`, `secret: Aligned64<[u8; 64]>`).
pub(super) fn assignment_holds_secret(name: &str, value: &str, after: &str) -> bool {
    let Some(strength) = secret_name(name) else {
        return false;
    };
    if matches!(
        after.trim_start_matches([' ', '\t']).chars().next(),
        Some('(' | '[' | '<' | ',' | ')')
    ) {
        return false;
    }
    // `self.token = token`, `self._auth_cls = auth_cls`: a variable handed on.
    let last = name
        .rsplit('.')
        .next()
        .unwrap_or(name)
        .trim_start_matches('_');
    if value.eq_ignore_ascii_case(last)
        || (value.len() > 3
            && last
                .to_ascii_lowercase()
                .ends_with(&value.to_ascii_lowercase())
            && value
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_'))
    {
        return false;
    }
    plausible_value(value, ValuePolicy::assignment(name, value, strength))
}

/// An upper-case environment-style name (`STRIPE_KEY`, `DB_PASSWORD`).
fn is_env_name(name: &str) -> bool {
    name.bytes().next().is_some_and(|b| b.is_ascii_uppercase())
        && name
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

/// A name's words, lower case: split at `_ - . /`, spaces, and case changes
/// (`clientSecret`, `APIKey` → `api`, `key`).
fn words(name: &str) -> Vec<String> {
    let chars: Vec<char> = name.chars().collect();
    let mut words = Vec::new();
    let mut word = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_ascii_alphanumeric() {
            if !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
            continue;
        }
        if c.is_ascii_uppercase() && !word.is_empty() {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
            if prev.is_ascii_lowercase()
                || prev.is_ascii_digit()
                || (prev.is_ascii_uppercase() && next_lower)
            {
                words.push(std::mem::take(&mut word));
            }
        }
        word.push(c.to_ascii_lowercase());
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// Whether an assignment's name says its value is a secret, and how surely.
pub(super) fn secret_name(name: &str) -> Option<Strength> {
    // The shell's working directory, not a password.
    if name.eq_ignore_ascii_case("pwd") || name.eq_ignore_ascii_case("oldpwd") {
        return None;
    }
    // A dotted name is judged by its last part: `config.password` holds a password,
    // `Token.Comment` (a highlighter's style table) a comment's style.
    let name = name.rsplit('.').next().unwrap_or(name);
    let words = words(name);
    let last = words.last()?;
    if NOT_SECRET_LAST.contains(&last.as_str())
        || words
            .iter()
            .any(|w| NOT_SECRET_ANYWHERE.contains(&w.as_str()))
    {
        return None;
    }
    let strong = words.iter().any(|word| {
        STRONG_WORDS.contains(&word.as_str())
            || STRONG_ENDINGS.iter().any(|end| word.ends_with(end))
    });
    if strong {
        return Some(Strength::Strong);
    }
    let env = is_env_name(name);
    let weak = words.iter().enumerate().any(|(i, word)| {
        if KEY_ENDINGS.iter().any(|end| word.ends_with(end)) {
            return true;
        }
        if WEAK_WORDS.contains(&word.as_str()) {
            return words.len() > 1;
        }
        if word != "key" {
            return false;
        }
        let Some(prev) = i.checked_sub(1).and_then(|p| words.get(p)) else {
            return false;
        };
        KEY_QUALIFIERS.contains(&prev.as_str()) || (env && !KEY_NOT_SECRET.contains(&prev.as_str()))
    });
    weak.then_some(Strength::Weak)
}

/// Whether a value could be a secret rather than a placeholder, a reference to one, or
/// something else a secret-sounding name holds.
pub(super) fn plausible_value(value: &str, policy: ValuePolicy) -> bool {
    let value = value.trim();
    if value.len() < policy.min_len {
        return false;
    }
    let lower = value.to_ascii_lowercase();
    if NOT_SECRET_VALUES.contains(&lower.as_str())
        || MADE_UP.iter().any(|piece| lower.contains(piece))
        || ILLUSTRATIVE.iter().any(|word| lower.contains(word))
        || one_character(value)
        || is_reference(value)
    {
        return false;
    }
    if !policy.numbers && is_number_like(value) {
        return false;
    }
    if policy.code && (is_path(value) || is_url(value) || is_email(value) || is_code(value)) {
        return false;
    }
    if !policy.words
        && value
            .bytes()
            .all(|b| b.is_ascii_alphabetic() || matches!(b, b'_' | b'.' | b'-'))
    {
        return false;
    }
    true
}

/// `xxxxxx`, `******`, `000000`.
fn one_character(value: &str) -> bool {
    let mut chars = value.chars();
    chars
        .next()
        .is_some_and(|first| chars.all(|c| c.eq_ignore_ascii_case(&first)))
}

/// A reference to a secret kept elsewhere, or a template's hole: `$VAR`, `${VAR}`,
/// `$DIR/key.pem`, `$(cmd)`, `{{ .Values.x }}`, `%VAR%`, `<your token>`, `[REDACTED]`,
/// `os.environ/API_KEY` (LiteLLM's), `name:/etc/keys/name` (systemd's `LoadCredential`),
/// a colour (`#cccccc`), a flag (`--username=`), a pointer type (`*const c_char`), an
/// object, a list, a template.
fn is_reference(value: &str) -> bool {
    let bytes = value.as_bytes();
    let (Some(&first), Some(&last)) = (bytes.first(), bytes.last()) else {
        return false;
    };
    if first == b'$' {
        return bytes
            .get(1)
            .is_some_and(|&b| b.is_ascii_alphabetic() || matches!(b, b'_' | b'{' | b'('));
    }
    if matches!(first, b'{' | b'[' | b'#' | b':' | b'*' | b'&') || value.starts_with("--") {
        return true;
    }
    let hole = value
        .find('<')
        .is_some_and(|open| value[open..].contains('>'));
    matches!((first, last), (b'%', b'%') | (b'@', b'@'))
        || hole
        || value.contains(['{', '}'])
        || value.starts_with("os.environ")
        || (value.contains(":/") && !value.contains("://"))
}

/// A number, version, date or duration: `8080`, `^4.0.0`, `>=1.2`, `2024-01-01`, `30s`.
fn is_number_like(value: &str) -> bool {
    let rest = value.trim_start_matches(['^', '~', '<', '>', '=', 'v', ' ']);
    let Some(first) = rest.bytes().next() else {
        return false;
    };
    if !first.is_ascii_digit() {
        return false;
    }
    let digits = rest.bytes().take_while(|b| b.is_ascii_digit()).count();
    let unit = &rest[digits..];
    if matches!(
        unit,
        "ms" | "s" | "m" | "h" | "d" | "w" | "y" | "k" | "kb" | "mb" | "gb" | "g"
    ) {
        return true;
    }
    rest.bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'_' | b',' | b':' | b'-' | b'x' | b'*'))
}

fn is_path(value: &str) -> bool {
    let bytes = value.as_bytes();
    value.starts_with('/')
        || value.starts_with("./")
        || value.starts_with("../")
        || value.starts_with("~/")
        || (bytes.len() > 2
            && bytes[0].is_ascii_alphabetic()
            && bytes[1] == b':'
            && matches!(bytes[2], b'\\' | b'/'))
}

/// A URL without credentials (one with them is the URL rules' to find).
fn is_url(value: &str) -> bool {
    match value.find("://") {
        Some(at) if at > 0 => value[..at]
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'.' | b'-')),
        _ => false,
    }
}

fn is_email(value: &str) -> bool {
    match value.split_once('@') {
        Some((user, domain)) => {
            !user.is_empty()
                && !user.contains(':')
                && domain.contains('.')
                && domain
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-'))
        }
        None => false,
    }
}

/// Code rather than a literal: a call, an operator, or a member path
/// (`process.env.API_KEY`, `settings.SECRET`, `env::var`, `self->token`). A "path" with
/// long segments or several digits is random text with dots in it (`SG.<22>.<43>`, a
/// generated password), not a path.
fn is_code(value: &str) -> bool {
    if value.contains(['(', ')'])
        || ["::", "->", "=>", " = ", " == ", "&&", "||"]
            .iter()
            .any(|op| value.contains(op))
    {
        return true;
    }
    let normalized = value.replace("?.", ".");
    let segments: Vec<&str> = normalized.split('.').collect();
    segments.len() >= 2
        && value.bytes().filter(u8::is_ascii_digit).count() <= 3
        && segments.iter().all(|s| {
            s.len() <= 24
                && s.bytes()
                    .next()
                    .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_' || b == b'$')
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'$')
        })
}

/// Whether a PEM block's body is key material: between its BEGIN and END lines, only
/// base64 (and `Name: value` headers of encrypted keys), 64 characters of it at least.
/// A line of code naming the markers (`("-----BEGIN RSA PRIVATE KEY-----", …)`) or a
/// document's `<key bytes>` is not a key.
pub(super) fn pem_body_is_key(block: &str) -> bool {
    let Some(header_end) = block.find("-----").and_then(|start| {
        let after = start + 5;
        block[after..].find("-----").map(|end| after + end + 5)
    }) else {
        return false;
    };
    let Some(footer) = block.rfind("-----END") else {
        return false;
    };
    if footer < header_end {
        return false;
    }
    // Escaped newlines count as newlines: a key inside a JSON string scanned as it is.
    let body = block[header_end..footer]
        .replace("\\n", "\n")
        .replace("\\r", "\n");
    let mut base64 = 0;
    for line in body.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if line.contains(':') {
            continue;
        }
        if !line
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
        {
            return false;
        }
        base64 += line.len();
    }
    base64 >= 64
}

/// Whether a JWT-shaped token is one: its header is base64url of a JSON object with an
/// `alg`, as every JWT's is (RFC 7519). A dotted run of base64 that is not a JWT (a
/// minified bundle's identifiers, a signed cookie) fails this.
pub(super) fn jwt_header_names_alg(token: &str) -> bool {
    let Some(header) = token.split('.').next() else {
        return false;
    };
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::URL_SAFE,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent)
            .with_decode_allow_trailing_bits(true),
    );
    let Ok(json) = engine.decode(header.trim_end_matches('=')) else {
        return false;
    };
    serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(&json)
        .is_ok_and(|object| object.contains_key("alg"))
}

/// Shannon entropy in bits per byte, as gitleaks computes it for its thresholds.
pub(super) fn entropy(value: &str) -> f64 {
    if value.is_empty() {
        return 0.0;
    }
    let mut counts = [0u32; 256];
    for b in value.bytes() {
        counts[usize::from(b)] += 1;
    }
    let len = value.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / len;
            -p * p.log2()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_every_style() {
        assert_eq!(words("OPENAI_API_KEY"), ["openai", "api", "key"]);
        assert_eq!(words("clientSecret"), ["client", "secret"]);
        assert_eq!(words("APIKey"), ["api", "key"]);
        assert_eq!(words("client-key-data"), ["client", "key", "data"]);
        assert_eq!(words("s3Key"), ["s3", "key"]);
    }

    /// Names that say secret, in every naming style agents meet.
    #[test]
    fn secret_names() {
        for name in [
            "DB_PASSWORD",
            "MYSQL_PASSWD",
            "client_secret",
            "clientSecret",
            "GITHUB_TOKEN",
            "aws_session_token",
            "NEXTAUTH_SECRET",
            "SECRET_KEY_BASE",
            "authToken",
            "JWT_SECRET",
            "passphrase",
            "credentials",
        ] {
            assert_eq!(secret_name(name), Some(Strength::Strong), "{name}");
        }
        for name in [
            "OPENAI_API_KEY",
            "apiKey",
            "STRIPE_KEY",
            "signingKey",
            "client-key-data",
            "db_pass",
            "MYSQL_PWD",
            "BASIC_AUTH",
        ] {
            assert_eq!(secret_name(name), Some(Strength::Weak), "{name}");
        }
    }

    /// Names with a secret-sounding word whose value is not a secret.
    #[test]
    fn not_secret_names() {
        for name in [
            "PWD",
            "PASS",
            "auth",
            "max_tokens",
            "prompt_tokens",
            "token_number",
            "key",
            "sort_key",
            "cacheKey",
            "PUBLIC_KEY",
            "STRIPE_PUBLISHABLE_KEY",
            "API_KEY_ID",
            "aws_access_key_id",
            "TOKEN_URL",
            "SECRET_NAME",
            "PASSWORD_MIN_LENGTH",
            "AUTH_TYPE_OIDC_FEDERATION",
            "next_page_token",
            "continuation_token",
            "author",
            "Author",
            "authority",
            "tokenizer",
            "keyboard",
            "monkey",
            "csrf_token",
            "fake_key",
            "DUMMY_TOKEN",
            "API_KEY_PLACEHOLDER",
            "certificate-authority-data",
            "AUTH_PROVIDER",
            "integrity",
            "checksum",
        ] {
            assert_eq!(secret_name(name), None, "{name}");
        }
    }

    /// Values that are no secret whatever their name: placeholders, references,
    /// switches, numbers, paths, code, stand-ins named after what they stand for.
    #[test]
    fn implausible_values() {
        for value in [
            "",
            "abc",
            "changeme",
            "xxxxxxxx",
            "********",
            "<your-api-key>",
            "your-api-key-here",
            "${API_KEY}",
            "$API_KEY",
            "$CARGO_TARGET_DIR/test.key",
            "$(cat /run/secrets/key)",
            "{{ .Values.token }}",
            "{ file = ",
            "%API_KEY%",
            "#cccccc",
            "true",
            "false",
            "123456",
            "^4.0.0",
            "2024-01-01",
            "/etc/secret",
            "~/.ssh/id_rsa",
            "anthropic_api_key:/etc/trimgate/keys/anthropic_api_key",
            "os.environ/OPENAI_API_KEY",
            "https://auth.example.com",
            "process.env.API_KEY",
            "x25519.X25519PrivateKey",
            "rust_openssl.hpke.MLKEM768X25519PrivateKey",
            "settings.SECRET_KEY",
            "PassTokens::saved",
            "getToken()",
            "string",
            "supersecret",
            "fake_key_for_tests",
            "sk-mock-openai",
            "token-1",
            "hunter2-pw",
            "--username=",
            "Odyssey\"}",
            "auth_tokens/tok_123",
            "requires_openai_auth = true",
            "-----BEGIN EC PRIVATE KEY-----\\n<key bytes>\\n-----END",
            "sk-...",
            "[REDACTED]",
            "hunter2",
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        ] {
            assert!(!assignment_holds_secret("api_key", value, ""), "{value:?}");
        }
    }

    #[test]
    fn plausible_values() {
        for value in [
            "hunt3r-2x9",
            "Zx9-pQ2_mL7",
            "c2VjcmV0LXZhbHVl==",
            "dPB026qUYzLV3BQo4_.QQteGLkU",
            "SG.abc-DEF_ghi.jklMNOpqrSTUvwxYZ0123456789abcDEF",
        ] {
            assert!(assignment_holds_secret("api_key", value, ""), "{value:?}");
        }
        // Code: the value is called or passed on.
        assert!(!assignment_holds_secret(
            "password",
            "b16encode",
            "(random)"
        ));
        assert!(!assignment_holds_secret(
            "auth_mechanisms",
            "dbus_new0",
            " (char*)"
        ));
        assert!(!assignment_holds_secret(
            "custom_secret",
            "Aligned64",
            "<[u8; 64]>"
        ));
        assert!(!assignment_holds_secret("password", "*const", " c_char,"));
        assert!(!assignment_holds_secret("private_key", "PKCS7Types", ","));
        // Words alone: a secret under an environment name that says so, else a variable.
        assert!(assignment_holds_secret(
            "JWT_PASSPHRASE",
            "correcthorsebattery",
            ""
        ));
        assert!(!assignment_holds_secret(
            "jwt_passphrase",
            "correcthorsebattery",
            ""
        ));
        assert!(!assignment_holds_secret("GEMINI_API_KEY", "anything", ""));
        assert!(!assignment_holds_secret("API_TOKEN", "DEFAULT_VALUE", ""));
        assert!(!assignment_holds_secret(
            "AUTH_TOKEN",
            "oidc_federation",
            ""
        ));
        assert!(!assignment_holds_secret(
            "self._sigv4_auth",
            "sigv4_auth",
            ""
        ));
        assert!(!assignment_holds_secret(
            "Token.Comment",
            "italic #A3AAB2",
            ""
        ));
        assert!(assignment_holds_secret(
            "spring.datasource.password",
            "Kq8-zL2x9",
            ""
        ));
        // A URL's password may be a word or a number, but not a default or a stand-in.
        assert!(plausible_value("Kx9vPq", ValuePolicy::PASSWORD));
        assert!(plausible_value("1234", ValuePolicy::PASSWORD));
        assert!(!plausible_value("${DB_PASSWORD}", ValuePolicy::PASSWORD));
        assert!(!plausible_value("password", ValuePolicy::PASSWORD));
        assert!(!plausible_value("postgres", ValuePolicy::PASSWORD));
        assert!(!plausible_value("trimgate-test", ValuePolicy::PASSWORD));
    }

    /// A PEM block is a key when its body is base64 key material.
    #[test]
    fn pem_bodies() {
        let body = "MIIEowIBAAKCAQEAq8Zt3Kf9Lm2Rx7Vb4Nc1Wd6YQm3vT8xK2pL9nR4wZ7yB1cF6hJ0s";
        assert!(pem_body_is_key(&format!(
            "-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----"
        )));
        // Escaped newlines, as in a JSON string scanned as it is; encrypted-key headers.
        assert!(pem_body_is_key(&format!(
            "-----BEGIN RSA PRIVATE KEY-----\\nProc-Type: 4,ENCRYPTED\\n{body}\\n-----END RSA PRIVATE KEY-----"
        )));
        assert!(!pem_body_is_key(
            "-----BEGIN RSA PRIVATE KEY-----\", \"-----END RSA PRIVATE KEY-----\")\n_PKCS8_MARKER = (\"-----BEGIN PRIVATE KEY-----"
        ));
        assert!(!pem_body_is_key(
            "-----BEGIN EC PRIVATE KEY-----\n<key bytes>\n-----END EC PRIVATE KEY-----"
        ));
    }

    #[test]
    fn jwt_header() {
        // {"alg":"HS256","typ":"JWT"}
        assert!(jwt_header_names_alg(
            "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.e30.x"
        ));
        // {"typ":"JWT"}: no alg.
        assert!(!jwt_header_names_alg("eyJ0eXAiOiJKV1QifQ.e30.x"));
        assert!(!jwt_header_names_alg("eyJub3QganNvbg.e30.x"));
    }

    #[test]
    fn entropy_matches_gitleaks() {
        assert_eq!(entropy(""), 0.0);
        assert_eq!(entropy("aaaa"), 0.0);
        assert!((entropy("ab") - 1.0).abs() < 1e-9);
        assert!((entropy("0123456789abcdef") - 4.0).abs() < 1e-9);
    }
}
