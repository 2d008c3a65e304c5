//! The routes editor's check (`POST /routes/check`): what is wrong with a draft of the
//! routes, and which route a model would take through it. Read-only: the draft is
//! validated by the config's own validation ([`edit::with_routes`], as a save would) and
//! the model resolved by the proxy's own table ([`crate::routing::RouteTable::resolve`]).

use super::*;

use crate::error::GatewayError;
use crate::routing::Via;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CheckIn {
    /// The unsaved draft; absent: the routes in force.
    #[serde(default)]
    routes: Option<Vec<RouteEdit>>,
    #[serde(default)]
    model: Option<String>,
}

pub(super) async fn check_routes(State(state): State<AdminState>, body: Bytes) -> Response {
    answer((|| {
        let CheckIn { routes, model } = parse(&body)?;
        let running = state.config();
        let (config, problems) = match routes {
            None => (Some(running), Vec::new()),
            Some(draft) => {
                let path = config_file(state.admin()?)?;
                match edit::with_routes(&path, &running, &draft) {
                    Ok(config) => (Some(Arc::new(config)), Vec::new()),
                    Err(EditError::Invalid(problems)) => (None, problems),
                    Err(other) => return Err(AdminError::from(other)),
                }
            }
        };
        let model = model.as_deref().map(str::trim).filter(|m| !m.is_empty());
        let answer = match (&config, model) {
            (Some(config), Some(model)) => explain(&state, config, model),
            _ => Value::Null,
        };
        let problems: Vec<Value> = problems
            .iter()
            .map(|p| json!({"path": p.path, "message": p.message}))
            .collect();
        ok(json!({ "problems": problems, "answer": answer }))
    })())
}

/// Where a request for `model` would go under `config`, or the error its client would get.
fn explain(state: &AdminState, config: &Config, model: &str) -> Value {
    let Some(target) = config.routes.resolve(model) else {
        let error = GatewayError::UnknownModel {
            model: model.to_owned(),
            served: config.routes.served_summary(),
        };
        return json!({
            "model": model,
            "via": "none",
            "error": {
                "status": error.status().as_u16(),
                "type": error.metric_label(),
                "message": error.to_string(),
            },
        });
    };
    let steps: Vec<(&Arc<Provider>, &str)> = target.steps(model).collect();
    // The running gateway's health: a draft only reorders routes over the same providers.
    let health = state
        .health
        .report_for(steps.iter().map(|(p, _)| p.name.as_str()), Instant::now());
    let step = |i: usize| {
        let (provider, sent) = steps[i];
        let h = health.iter().find(|h| h.provider == provider.name);
        json!({
            "provider": provider.name,
            "model": sent,
            "state": h.map_or("up", |h| h.state),
            "retry_in_secs": h.and_then(|h| h.retry_in_secs),
        })
    };
    let first = step(0);
    let (via, route, pattern) = match target.via {
        Via::ProviderPrefix => ("provider_model", None, None),
        Via::Default => ("default", None, None),
        Via::Route { source, pattern } => match route_index(source) {
            Some(i) => ("route", Some(i), Some(pattern)),
            None => ("provider_family", None, Some(pattern)),
        },
    };
    json!({
        "model": model,
        "via": via,
        "route": route,
        "pattern": pattern,
        "provider": first["provider"],
        "upstream_model": first["model"],
        "state": first["state"],
        "cooling_down": first["state"] == "cooling_down",
        "retry_in_secs": first["retry_in_secs"],
        "fallbacks": (1..steps.len()).map(step).collect::<Vec<_>>(),
        "max_attempts": target.max_attempts.unwrap_or(config.retry.max_attempts),
        "error": Value::Null,
    })
}

/// `routes[2]` → 2; a kind's families (`providers.x.kind`) are no route of the list.
fn route_index(source: &str) -> Option<usize> {
    source
        .strip_prefix("routes[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::MemoryRecorder;
    use crate::secrets::MemoryStore;

    const CONFIG: &str = r#"
[retry]
cooldown_failures = 1

[providers.cheap]
kind = "openai_compatible"
base_url = "http://127.0.0.1:9/v1"
models = ["m-small"]

[providers.big]
kind = "openai_compatible"
base_url = "http://127.0.0.1:9/v1"
models = ["m-large"]

[providers.ant]
kind = "anthropic"
"#;

    /// A gateway on `CONFIG`, its file in a directory of its own.
    fn gateway() -> (AdminState, PathBuf, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, CONFIG).unwrap();
        let config = Config::load(&path).unwrap();
        let gateway = AppState::new(
            config,
            Arc::new(MemoryStore::default()),
            Arc::new(MemoryRecorder::new(8)),
        )
        .unwrap();
        let admin = Some(Arc::new(Admin::new(Some(path.clone()), None)));
        (AdminState { gateway, admin }, path, dir)
    }

    async fn check(state: &AdminState, body: Value) -> Value {
        let response = check_routes(State(state.clone()), Bytes::from(body.to_string())).await;
        assert_eq!(response.status(), StatusCode::OK);
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    fn draft(order: &[(&str, &str, Option<&str>)]) -> Value {
        order
            .iter()
            .map(|(pattern, provider, model)| json!({"match": pattern, "provider": provider, "model": model}))
            .collect()
    }

    #[tokio::test]
    async fn the_drafts_order_decides_and_nothing_is_written() {
        let (state, path, _dir) = gateway();
        let narrow = ("claude-haiku-*", "cheap", Some("m-small"));
        let broad = ("claude-*", "big", Some("m-large"));
        let got = check(
            &state,
            json!({"routes": draft(&[narrow, broad]), "model": "claude-haiku-4-5"}),
        )
        .await;
        assert_eq!(got["problems"], json!([]));
        let a = &got["answer"];
        assert_eq!(
            (a["via"].as_str(), a["route"].as_u64()),
            (Some("route"), Some(0))
        );
        assert_eq!(
            (a["provider"].as_str(), a["upstream_model"].as_str()),
            (Some("cheap"), Some("m-small"))
        );
        assert_eq!(a["pattern"], "claude-haiku-*");

        let got = check(
            &state,
            json!({"routes": draft(&[broad, narrow]), "model": "claude-haiku-4-5"}),
        )
        .await;
        let a = &got["answer"];
        assert_eq!(
            (a["route"].as_u64(), a["provider"].as_str()),
            (Some(0), Some("big"))
        );
        assert_eq!(a["upstream_model"], "m-large");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), CONFIG);
    }

    #[tokio::test]
    async fn a_glob_that_does_not_compile_is_named_by_its_path() {
        let (state, path, _dir) = gateway();
        let routes = draft(&[
            ("fast", "cheap", Some("m-small")),
            ("claude-[", "big", None),
        ]);
        let got = check(&state, json!({"routes": routes, "model": "fast"})).await;
        assert_eq!(got["problems"][0]["path"], "routes[1].match", "{got}");
        assert!(got["problems"][0]["message"]
            .as_str()
            .unwrap()
            .contains("not a valid glob"));
        assert_eq!(got["answer"], Value::Null);
        let got = check(&state, json!({"routes": draft(&[("x", "nobody", None)])})).await;
        assert_eq!(got["problems"][0]["path"], "routes[0].provider");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), CONFIG);
    }

    #[tokio::test]
    async fn without_a_route_the_table_says_which_rule_or_the_clients_error() {
        let (state, _, _dir) = gateway();
        // No draft: the routes in force (none), so a kind's own families answer.
        let a = check(&state, json!({"model": "claude-sonnet-5"})).await["answer"].clone();
        assert_eq!(
            (a["via"].as_str(), a["provider"].as_str()),
            (Some("provider_family"), Some("ant"))
        );
        assert_eq!(
            (a["route"].clone(), a["pattern"].as_str()),
            (Value::Null, Some("claude-*"))
        );
        let a = check(&state, json!({"model": "cheap/m-tiny"})).await["answer"].clone();
        assert_eq!(
            (a["via"].as_str(), a["upstream_model"].as_str()),
            (Some("provider_model"), Some("m-tiny"))
        );
        let a = check(&state, json!({"model": "llama3"})).await["answer"].clone();
        assert_eq!(a["via"], "none");
        assert_eq!(
            (a["error"]["status"].as_u64(), a["error"]["type"].as_str()),
            (Some(404), Some("unknown_model"))
        );
        assert!(
            a["error"]["message"].as_str().unwrap().contains("m-small"),
            "{a}"
        );
        // No model: problems only.
        assert_eq!(
            check(&state, json!({"routes": []})).await["answer"],
            Value::Null
        );
    }

    #[tokio::test]
    async fn the_answer_names_a_provider_cooling_down_and_the_fallbacks_in_order() {
        let (state, _, _dir) = gateway();
        let config = state.config();
        state
            .health
            .failed("cheap", &config.retry, None, Instant::now());
        let routes = json!([{"match": "fast", "provider": "cheap", "model": "m-small",
                             "fallbacks": ["big/m-large", "ant"], "max_attempts": 4}]);
        let a = check(&state, json!({"routes": routes, "model": "fast"})).await["answer"].clone();
        assert_eq!(
            (a["state"].as_str(), a["cooling_down"].as_bool()),
            (Some("cooling_down"), Some(true))
        );
        assert!(a["retry_in_secs"].as_f64().unwrap() > 0.0);
        assert_eq!(
            a["fallbacks"],
            json!([{"provider": "big", "model": "m-large", "state": "up", "retry_in_secs": null},
                   {"provider": "ant", "model": "fast", "state": "up", "retry_in_secs": null}])
        );
        assert_eq!(a["max_attempts"], 4);
    }

    #[tokio::test]
    async fn a_body_it_does_not_know_is_refused() {
        let (state, _, _dir) = gateway();
        let response =
            check_routes(State(state), Bytes::from(r#"{"model": "x", "route": []}"#)).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    }

    #[test]
    fn only_the_lists_own_routes_have_an_index() {
        assert_eq!(route_index("routes[0]"), Some(0));
        assert_eq!(route_index("routes[12]"), Some(12));
        assert_eq!(route_index("providers.ant.kind"), None);
        assert_eq!(route_index("routes[x]"), None);
    }
}
