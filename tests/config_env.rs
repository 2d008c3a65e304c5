//! The config from `TRIMGATE__` environment variables alone, as a container gets it, and
//! over a file: `trimgate check` takes it, and names the variable at fault when a value
//! does not fit.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::{Command, Output};

/// `trimgate check` with only `vars` (no config file in reach).
fn check(vars: &[(&str, &str)], file: Option<&str>) -> Output {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_trimgate"));
    cmd.arg("check");
    if let Some(text) = file {
        let path = home.path().join("config.toml");
        std::fs::write(&path, text).unwrap();
        cmd.arg("--config").arg(path);
    }
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .env("XDG_DATA_HOME", home.path().join("data"));
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

const PROVIDER: [(&str, &str); 3] = [
    ("TRIMGATE__PROVIDERS__UPSTREAM__KIND", "openai"),
    (
        "TRIMGATE__PROVIDERS__UPSTREAM__BASE_URL",
        "http://127.0.0.1:9/v1",
    ),
    (
        "TRIMGATE__PROVIDERS__UPSTREAM__API_KEY",
        "{ file = \"/run/secrets/openai\" }",
    ),
];

#[test]
fn a_config_from_variables_alone_is_taken_and_described() {
    let mut vars = PROVIDER.to_vec();
    vars.extend([
        ("TRIMGATE__SERVER__LISTEN", "0.0.0.0:8788"),
        ("TRIMGATE__SERVER__MAX_IN_FLIGHT", "64"),
        ("TRIMGATE__ROUTES__0__MATCH", "gpt-*"),
        ("TRIMGATE__ROUTES__0__PROVIDER", "upstream"),
    ]);
    let out = check(&vars, None);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("config is valid"), "{stdout}");
    assert!(
        stderr.contains("upstream"),
        "the provider is described: {stderr}"
    );
    assert!(
        stderr.contains("7 TRIMGATE__ variable(s), no file"),
        "{stderr}"
    );
}

#[test]
fn a_value_that_does_not_fit_names_its_variable() {
    let mut vars = PROVIDER.to_vec();
    vars.push(("TRIMGATE__SERVER__MAX_IN_FLIGHT", "lots"));
    let out = check(&vars, None);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("TRIMGATE__SERVER__MAX_IN_FLIGHT"),
        "{stderr}"
    );

    // A problem validation finds, under a path a variable set.
    let mut vars = PROVIDER.to_vec();
    vars.extend([
        ("TRIMGATE__ROUTES__0__MATCH", "gpt-*"),
        ("TRIMGATE__ROUTES__0__PROVIDER", "upstream"),
        ("TRIMGATE__ROUTES__0__FALLBACKS", "[\"nowhere/x\"]"),
    ]);
    let out = check(&vars, None);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("routes[0].fallbacks[0]"), "{stderr}");
    assert!(
        stderr.contains("(set by TRIMGATE__ROUTES__0__FALLBACKS)"),
        "{stderr}"
    );

    // A list entry skipped.
    let out = check(&[("TRIMGATE__ROUTES__1__MATCH", "x")], None);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("TRIMGATE__ROUTES__1__MATCH"), "{stderr}");
}

#[test]
fn variables_go_over_the_file() {
    let file = "[providers.upstream]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key = { env = \"OPENAI_API_KEY\" }\n\n[server]\nlisten = \"127.0.0.1:8788\"\n";
    // The file alone is valid; a variable over it that breaks it is the one named.
    assert!(check(&[], Some(file)).status.success());
    let out = check(
        &[("TRIMGATE__SERVER__LISTEN", "not an address")],
        Some(file),
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("server.listen"), "{stderr}");
    assert!(stderr.contains("TRIMGATE__SERVER__LISTEN"), "{stderr}");
    let out = check(&[("TRIMGATE__SERVER__LISTEN", "0.0.0.0:9999")], Some(file));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `trimgate check` says where each cloud's credentials come from — a profile of the AWS
/// credential chain or a Bedrock API key, a service-account key file or Application
/// Default Credentials, Azure's api-key or an Entra ID token — by name and place, never a
/// value.
#[test]
fn check_names_where_each_clouds_credentials_come_from() {
    let file = r#"
[providers.bedrock-chain]
kind = "bedrock"
region = "us-east-1"
aws_profile = "work"

[providers.bedrock-key]
kind = "bedrock"
region = "eu-west-1"
api_key = { env = "BEDROCK_KEY" }

[providers.vertex-file]
kind = "vertex"
project = "my-project"
location = "global"
credentials_file = "/keys/vertex-sa.json"

[providers.vertex-adc]
kind = "vertex"
project = "my-project"
location = "us-east5"

[providers.azure-key]
kind = "azure_openai"
base_url = "https://my-resource.openai.azure.com"
api_key = { env = "AZURE_KEY" }

[providers.azure-app]
kind = "azure_openai"
base_url = "https://my-resource.openai.azure.com"
api_version = "2024-10-21"
entra = { tenant_id = "contoso.onmicrosoft.com", client_id = "my-app", client_secret = { env = "ENTRA_SECRET" } }
"#;
    let out = check(
        &[
            ("BEDROCK_KEY", "ABSK-not-shown"),
            ("ENTRA_SECRET", "entra-not-shown"),
        ],
        Some(file),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("config is valid"), "{stdout}");
    let line = |name: &str| {
        stderr
            .lines()
            .find(|l| l.starts_with(&format!("provider {name}:")))
            .unwrap_or_else(|| panic!("no line for {name}: {stderr}"))
            .to_owned()
    };
    assert!(line("bedrock-chain").contains("https://bedrock-runtime.us-east-1.amazonaws.com"));
    assert!(
        line("bedrock-chain")
            .ends_with("the AWS credential chain, profile \"work\", SigV4 in us-east-1"),
        "{stderr}"
    );
    assert!(
        line("bedrock-key").ends_with("a Bedrock API key from env var BEDROCK_KEY"),
        "{stderr}"
    );
    assert!(
        line("vertex-file").ends_with(
            "the service-account key file /keys/vertex-sa.json (project my-project, global)"
        ),
        "{stderr}"
    );
    assert!(
        line("vertex-adc")
            .ends_with("Application Default Credentials (project my-project, us-east5)"),
        "{stderr}"
    );
    assert!(
        line("azure-key").ends_with("the api-key from env var AZURE_KEY"),
        "{stderr}"
    );
    assert!(
        line("azure-app").ends_with(
            "a Microsoft Entra ID token for app my-app, its secret from env var ENTRA_SECRET"
        ),
        "{stderr}"
    );
    assert!(
        !stderr.contains("not-shown") && !stdout.contains("not-shown"),
        "no secret is printed: {stderr}"
    );
}
