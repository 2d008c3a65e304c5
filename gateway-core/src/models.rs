//! `GET /v1/models`: the models this gateway serves, in the OpenAI list shape, or the
//! Anthropic one when the request carries `anthropic-version` (as Anthropic SDKs do).

use serde_json::{json, Value};

use crate::routing::RouteTable;

/// Fixed creation time for listed models: the gateway does not know when a provider made them.
const LISTED_CREATED: u64 = 1_700_000_000;
const LISTED_CREATED_RFC3339: &str = "2023-11-14T22:13:20Z";

pub fn openai_list(routes: &RouteTable) -> Value {
    let data: Vec<Value> = routes
        .served_models()
        .iter()
        .map(|id| {
            let owner = routes
                .owner_of(id)
                .map(|p| p.name.as_str())
                .unwrap_or("trimgate");
            json!({"id": id, "object": "model", "created": LISTED_CREATED, "owned_by": owner})
        })
        .collect();
    json!({"object": "list", "data": data})
}

pub fn anthropic_list(routes: &RouteTable) -> Value {
    let data: Vec<Value> = routes
        .served_models()
        .iter()
        .map(|id| json!({"type": "model", "id": id, "display_name": id, "created_at": LISTED_CREATED_RFC3339}))
        .collect();
    let first = routes.served_models().first();
    let last = routes.served_models().last();
    json!({"data": data, "has_more": false, "first_id": first, "last_id": last})
}
