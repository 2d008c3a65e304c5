//! Reading a `GenerateContentRequest` (or a `countTokens` body) the way Google's front end
//! does: proto field names in camelCase or snake_case, unknown names refused, values of the
//! wrong type refused with the field's path, a single value taken where a list is expected;
//! then what the mock needs of it.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// The request's JSON names, camelCase; each is also accepted in snake_case.
const REQUEST_FIELDS: &[&str] = &[
    "model",
    "contents",
    "tools",
    "toolConfig",
    "safetySettings",
    "systemInstruction",
    "generationConfig",
    "cachedContent",
];
const GENERATION_FIELDS: &[&str] = &[
    "stopSequences",
    "responseMimeType",
    "responseSchema",
    "responseJsonSchema",
    "_responseJsonSchema",
    "responseJsonSchemaOrdered",
    "responseModalities",
    "candidateCount",
    "maxOutputTokens",
    "temperature",
    "topP",
    "topK",
    "seed",
    "presencePenalty",
    "frequencyPenalty",
    "responseLogprobs",
    "logprobs",
    "enableEnhancedCivicAnswers",
    "speechConfig",
    "thinkingConfig",
    "imageConfig",
    "mediaResolution",
];
const THINKING_FIELDS: &[&str] = &["includeThoughts", "thinkingBudget", "thinkingLevel"];
const TOOL_CONFIG_FIELDS: &[&str] = &["functionCallingConfig", "retrievalConfig"];
const CALLING_FIELDS: &[&str] = &["mode", "allowedFunctionNames"];
const CONTENT_FIELDS: &[&str] = &["role", "parts"];
const PART_FIELDS: &[&str] = &[
    "text",
    "inlineData",
    "fileData",
    "functionCall",
    "functionResponse",
    "executableCode",
    "codeExecutionResult",
    "thought",
    "thoughtSignature",
    "partMetadata",
    "videoMetadata",
    "mediaResolution",
];
/// The fields of a part that hold its data (the proto's `data` oneof).
const DATA_FIELDS: &[&str] = &[
    "text",
    "inlineData",
    "fileData",
    "functionCall",
    "functionResponse",
    "executableCode",
    "codeExecutionResult",
];
const TOOL_FIELDS: &[&str] = &[
    "functionDeclarations",
    "googleSearchRetrieval",
    "codeExecution",
    "googleSearch",
    "computerUse",
    "urlContext",
    "fileSearch",
    "googleMaps",
    "mcpServers",
];
const DECLARATION_FIELDS: &[&str] = &[
    "name",
    "description",
    "behavior",
    "parameters",
    "parametersJsonSchema",
    "response",
    "responseJsonSchema",
];
const COUNT_FIELDS: &[&str] = &["contents", "generateContentRequest"];
/// The OpenAPI subset `parameters` and `responseSchema` take (`parametersJsonSchema` takes
/// any JSON Schema).
const SCHEMA_FIELDS: &[&str] = &[
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "anyOf",
    "propertyOrdering",
    "default",
    "items",
    "minimum",
    "maximum",
];

const MODES: &[&str] = &["MODE_UNSPECIFIED", "AUTO", "ANY", "NONE", "VALIDATED"];
const THINKING_LEVELS: &[&str] = &[
    "THINKING_LEVEL_UNSPECIFIED",
    "MINIMAL",
    "LOW",
    "MEDIUM",
    "HIGH",
];

/// Google's complaint about a function name, which it words as a proto validation failure.
const INVALID_FUNCTION_NAME: &str = "[FIELD_INVALID] Invalid function name. Must start with a \
    letter or an underscore. Must be a-z, A-Z, 0-9, or contain underscores (_), dots (.), colons \
    (:), or dashes (-), with a maximum length of 64.";

/// What the mock reads of a `generateContent` request.
pub(crate) struct GenerateRequest {
    pub contents: Vec<Content>,
    /// Every function declaration, in the order the tools list them.
    pub declarations: Vec<Declaration>,
    pub mode: Mode,
    pub allowed: Vec<String>,
    pub max_output_tokens: Option<u64>,
    pub stop_sequences: Vec<String>,
    pub candidate_count: u32,
    pub include_thoughts: bool,
    pub thinking_budget: Option<i64>,
    /// The prompt in blocks for the implicit cache: what precedes the turns, then each turn.
    pub cache_blocks: Vec<String>,
    /// `responseMimeType: application/json`: the answer is JSON, shaped by this schema
    /// (`responseJsonSchema` or `responseSchema`) when there is one.
    pub json: Option<Option<Value>>,
}

pub(crate) struct Content {
    pub role: Role,
    pub parts: Vec<Part>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    User,
    Model,
}

pub(crate) struct Part {
    pub data: Data,
    pub thought: bool,
    pub signature: Option<String>,
}

pub(crate) enum Data {
    Text(String),
    Call { name: String },
    Response { response: Value },
    Other,
}

pub(crate) struct Declaration {
    pub name: String,
    /// `parametersJsonSchema`, else `parameters` with its OpenAPI type names in lowercase.
    pub schema: Option<Value>,
}

/// `toolConfig.functionCallingConfig.mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    Auto,
    Any,
    None,
    Validated,
}

/// A 400 `INVALID_ARGUMENT`: the message, and the `BadRequest` field violations behind it.
#[derive(Debug)]
pub(crate) struct Rejection {
    pub message: String,
    pub violations: Vec<Violation>,
}

#[derive(Debug)]
pub(crate) struct Violation {
    pub field: Option<String>,
    pub description: String,
}

impl Rejection {
    fn single(field: Option<String>, description: String) -> Self {
        Self {
            message: description.clone(),
            violations: vec![Violation { field, description }],
        }
    }

    /// A message made of the violations' descriptions, one a line.
    fn joined(violations: Vec<Violation>) -> Self {
        let message = violations
            .iter()
            .map(|v| v.description.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        Self {
            message,
            violations,
        }
    }
}

impl Content {
    pub fn has_call(&self) -> bool {
        self.parts
            .iter()
            .any(|p| matches!(p.data, Data::Call { .. }))
    }

    pub fn has_response(&self) -> bool {
        self.parts
            .iter()
            .any(|p| matches!(p.data, Data::Response { .. }))
    }

    fn count(&self, call: bool) -> usize {
        self.parts
            .iter()
            .filter(|p| match p.data {
                Data::Call { .. } => call,
                Data::Response { .. } => !call,
                _ => false,
            })
            .count()
    }

    /// The last text the user typed (thoughts aside).
    pub fn last_text(&self) -> Option<&str> {
        self.parts.iter().rev().find_map(|p| match &p.data {
            Data::Text(text) if !p.thought => Some(text.as_str()),
            _ => None,
        })
    }
}

impl GenerateRequest {
    /// Google's complaint when a function response turn does not answer the function call
    /// turn right before it, call for call.
    pub fn misplaced_response(&self) -> Option<&'static str> {
        self.contents.iter().enumerate().find_map(|(i, content)| {
            if !content.has_response() {
                return None;
            }
            let previous = i.checked_sub(1).and_then(|p| self.contents.get(p));
            match previous {
                Some(call) if call.role == Role::Model && call.has_call() => {
                    (call.count(true) != content.count(false)).then_some(
                        "Please ensure that the number of function response parts is equal to \
                         the number of function call parts of the function call turn.",
                    )
                }
                _ => Some(
                    "Please ensure that function response turn comes immediately after a \
                     function call turn.",
                ),
            }
        })
    }

    /// Where the current turn (the model's steps after the last user text) has a step whose
    /// first function call carries no thought signature: that call's name and its turn's
    /// 1-based position, as Gemini 3 reports them.
    pub fn unsigned_call(&self) -> Option<(&str, usize)> {
        let start = self
            .contents
            .iter()
            .rposition(|c| c.role == Role::User && c.last_text().is_some())
            .map_or(0, |i| i + 1);
        self.contents
            .iter()
            .enumerate()
            .skip(start)
            .filter(|(_, c)| c.role == Role::Model)
            .find_map(|(i, content)| {
                let first = content
                    .parts
                    .iter()
                    .find(|p| matches!(p.data, Data::Call { .. }))?;
                let Data::Call { name } = &first.data else {
                    return None;
                };
                first
                    .signature
                    .as_deref()
                    .is_none_or(str::is_empty)
                    .then_some((name.as_str(), i + 1))
            })
    }
}

/// Reads a `generateContent` (or `streamGenerateContent`) body for API version `ver`.
pub(crate) fn generate(body: &[u8], ver: &str) -> Result<GenerateRequest, Rejection> {
    let object = object(body)?;
    let reader = Reader {
        ver,
        root: "GenerateContentRequest",
        prefix: "",
    };
    reader.check_names(&object)?;
    reader.generate(&object, true)
}

/// Reads a `countTokens` body: the bytes counted, those of `generateContentRequest` when it
/// is given (`contents` is then ignored), else the whole body's.
pub(crate) fn count(body: &[u8], ver: &str) -> Result<usize, Rejection> {
    #[derive(Deserialize)]
    struct Wrapped<'a> {
        #[serde(
            borrow,
            rename = "generateContentRequest",
            alias = "generate_content_request"
        )]
        inner: Option<&'a RawValue>,
    }
    let object = object(body)?;
    let mut unknown = Vec::new();
    unknown_names(&object, COUNT_FIELDS, "", &mut unknown);
    if !unknown.is_empty() {
        return Err(Rejection::joined(unknown));
    }
    if let Some(inner) = get(&object, "generateContentRequest") {
        let reader = Reader {
            ver,
            root: "CountTokensRequest",
            prefix: "generate_content_request",
        };
        let Value::Object(inner) = inner else {
            return Err(invalid(
                "generate_content_request",
                &reader.message_type("GenerateContentRequest"),
                inner,
            ));
        };
        reader.check_names(inner)?;
        reader.generate(inner, true)?;
        let wrapped: Wrapped<'_> = serde_json::from_slice(body).map_err(|e| bad_json(&e))?;
        return Ok(wrapped.inner.map_or(body.len(), |raw| raw.get().len()));
    }
    let reader = Reader {
        ver,
        root: "CountTokensRequest",
        prefix: "",
    };
    reader.check_names(&object)?;
    reader.contents(&object, false)?;
    Ok(body.len())
}

/// The body as a JSON object, or Google's complaint about its syntax.
fn object(body: &[u8]) -> Result<Map<String, Value>, Rejection> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(_) => Err(Rejection::single(
            None,
            "Invalid JSON payload received. Expected an object.".to_owned(),
        )),
        Err(e) => Err(bad_json(&e)),
    }
}

fn bad_json(e: &serde_json::Error) -> Rejection {
    Rejection::single(
        None,
        format!(
            "Invalid JSON payload received. Unexpected token at line {} column {}.",
            e.line(),
            e.column()
        ),
    )
}

struct Reader<'a> {
    ver: &'a str,
    /// The request message's name, in requirement violations (`* GenerateContentRequest.…`).
    root: &'a str,
    /// Where the request sits in the body, for paths: `generate_content_request` or nothing.
    prefix: &'a str,
}

impl Reader<'_> {
    fn message_type(&self, name: &str) -> String {
        format!(
            "type.googleapis.com/google.ai.generativelanguage.{}.{name}",
            self.ver
        )
    }

    fn path(&self, relative: &str) -> String {
        if self.prefix.is_empty() {
            relative.to_owned()
        } else {
            format!("{}.{relative}", self.prefix)
        }
    }

    /// Every unknown name in the parts of the request the mock knows, reported together.
    fn check_names(&self, request: &Map<String, Value>) -> Result<(), Rejection> {
        let mut unknown = Vec::new();
        unknown_names(request, REQUEST_FIELDS, self.prefix, &mut unknown);
        if let Some(Value::Object(config)) = get(request, "generationConfig") {
            let at = self.path("generation_config");
            unknown_names(config, GENERATION_FIELDS, &at, &mut unknown);
            if let Some(Value::Object(thinking)) = get(config, "thinkingConfig") {
                let at = format!("{at}.thinking_config");
                unknown_names(thinking, THINKING_FIELDS, &at, &mut unknown);
            }
            if let Some(Value::Object(schema)) = get(config, "responseSchema") {
                schema_names(schema, &format!("{at}.response_schema"), &mut unknown);
            }
        }
        if let Some(Value::Object(config)) = get(request, "toolConfig") {
            let at = self.path("tool_config");
            unknown_names(config, TOOL_CONFIG_FIELDS, &at, &mut unknown);
            if let Some(Value::Object(calling)) = get(config, "functionCallingConfig") {
                let at = format!("{at}.function_calling_config");
                unknown_names(calling, CALLING_FIELDS, &at, &mut unknown);
            }
        }
        if let Some(Value::Object(system)) = get(request, "systemInstruction") {
            content_names(system, &self.path("system_instruction"), &mut unknown);
        }
        for (i, content) in items(get(request, "contents")).into_iter().enumerate() {
            if let Value::Object(content) = content {
                content_names(content, &self.path(&format!("contents[{i}]")), &mut unknown);
            }
        }
        for (i, tool) in items(get(request, "tools")).into_iter().enumerate() {
            let Value::Object(tool) = tool else { continue };
            let at = self.path(&format!("tools[{i}]"));
            unknown_names(tool, TOOL_FIELDS, &at, &mut unknown);
            let declarations = items(get(tool, "functionDeclarations"));
            for (j, declaration) in declarations.into_iter().enumerate() {
                if let Value::Object(declaration) = declaration {
                    let at = format!("{at}.function_declarations[{j}]");
                    unknown_names(declaration, DECLARATION_FIELDS, &at, &mut unknown);
                    for name in ["parameters", "response"] {
                        if let Some(Value::Object(schema)) = get(declaration, name) {
                            schema_names(schema, &format!("{at}.{name}"), &mut unknown);
                        }
                    }
                }
            }
        }
        if unknown.is_empty() {
            Ok(())
        } else {
            Err(Rejection::joined(unknown))
        }
    }

    /// The typed read, first wrong value first; then the requirements, all of them.
    fn generate(
        &self,
        request: &Map<String, Value>,
        need_contents: bool,
    ) -> Result<GenerateRequest, Rejection> {
        let mut cache_blocks = Vec::new();
        let mut preamble = Map::new();
        if let Some(system) = get(request, "systemInstruction") {
            let path = self.path("system_instruction");
            let Value::Object(system) = system else {
                return Err(invalid(&path, &self.message_type("Content"), system));
            };
            self.content(system, &path, &mut Vec::new())?;
            preamble.insert(
                "systemInstruction".to_owned(),
                Value::Object(system.clone()),
            );
        }
        let (declarations, requirements) = self.tools(request)?;
        if let Some(tools) = get(request, "tools") {
            preamble.insert("tools".to_owned(), tools.clone());
        }
        let (mode, allowed) = self.tool_config(request)?;
        let generation = self.generation(request)?;
        if let Some(cached) = get(request, "cachedContent") {
            if !cached.is_string() {
                return Err(invalid(&self.path("cached_content"), "TYPE_STRING", cached));
            }
        }
        self.string(request, "model", &self.path("model"))?;
        for (i, setting) in items(get(request, "safetySettings"))
            .into_iter()
            .enumerate()
        {
            if !setting.is_object() {
                let path = self.path(&format!("safety_settings[{i}]"));
                return Err(invalid(&path, &self.message_type("SafetySetting"), setting));
            }
        }
        let contents = self.contents(request, need_contents)?;
        if !requirements.is_empty() {
            let lines: Vec<String> = requirements
                .iter()
                .map(|v| {
                    format!(
                        "  * {}: {}",
                        v.field.as_deref().unwrap_or_default(),
                        v.description
                    )
                })
                .collect();
            return Err(Rejection {
                message: format!(
                    "The GenerateContentRequest proto is invalid:\n{}",
                    lines.join("\n")
                ),
                violations: requirements,
            });
        }
        if !preamble.is_empty() {
            cache_blocks.push(Value::Object(preamble).to_string());
        }
        cache_blocks.extend(
            items(get(request, "contents"))
                .iter()
                .map(|c| c.to_string()),
        );
        Ok(GenerateRequest {
            contents,
            declarations,
            mode,
            allowed,
            max_output_tokens: generation.max_output_tokens,
            stop_sequences: generation.stop_sequences,
            candidate_count: generation.candidate_count,
            include_thoughts: generation.include_thoughts,
            thinking_budget: generation.thinking_budget,
            cache_blocks,
            json: generation.json,
        })
    }

    /// `contents`, typed, with the requirements Google words as `* Request.field: …` lines.
    fn contents(
        &self,
        request: &Map<String, Value>,
        required: bool,
    ) -> Result<Vec<Content>, Rejection> {
        let values = items(get(request, "contents"));
        let mut contents = Vec::with_capacity(values.len());
        let mut requirements = Vec::new();
        for (i, value) in values.iter().enumerate() {
            let path = self.path(&format!("contents[{i}]"));
            let Value::Object(content) = value else {
                return Err(invalid(&path, &self.message_type("Content"), value));
            };
            contents.push(self.content(content, &path, &mut requirements)?);
        }
        if required && contents.is_empty() {
            requirements.insert(
                0,
                Violation {
                    field: Some(self.path("contents")),
                    description: "contents is not specified".to_owned(),
                },
            );
        }
        if requirements.is_empty() {
            return Ok(contents);
        }
        let message = requirements
            .iter()
            .map(|v| {
                format!(
                    "* {}.{}: {}\n",
                    self.root,
                    v.field.as_deref().unwrap_or_default(),
                    v.description
                )
            })
            .collect();
        Err(Rejection {
            message,
            violations: requirements,
        })
    }

    fn content(
        &self,
        content: &Map<String, Value>,
        path: &str,
        requirements: &mut Vec<Violation>,
    ) -> Result<Content, Rejection> {
        let role = match get(content, "role") {
            None => Role::User,
            Some(Value::String(role)) => match role.as_str() {
                "" | "user" | "function" => Role::User,
                "model" => Role::Model,
                _ => {
                    return Err(Rejection::single(
                        None,
                        "Please use a valid role: user, model.".to_owned(),
                    ))
                }
            },
            Some(other) => return Err(invalid(&format!("{path}.role"), "TYPE_STRING", other)),
        };
        let values = items(get(content, "parts"));
        if values.is_empty() {
            requirements.push(Violation {
                field: Some(format!("{path}.parts")),
                description: "contents.parts must not be empty.".to_owned(),
            });
        }
        let mut parts = Vec::with_capacity(values.len());
        for (j, value) in values.iter().enumerate() {
            let path = format!("{path}.parts[{j}]");
            let Value::Object(part) = value else {
                return Err(invalid(&path, &self.message_type("Part"), value));
            };
            match self.part(part, &path)? {
                Some(part) => parts.push(part),
                None => requirements.push(Violation {
                    field: Some(format!("{path}.data")),
                    description: "required oneof field 'data' must have one initialized field"
                        .to_owned(),
                }),
            }
        }
        Ok(Content { role, parts })
    }

    /// A part, or `None` when it holds no data.
    fn part(&self, part: &Map<String, Value>, path: &str) -> Result<Option<Part>, Rejection> {
        let thought = self.boolean(part, "thought", &format!("{path}.thought"))?;
        let signature = match get(part, "thoughtSignature") {
            None => None,
            Some(Value::String(signature)) if is_base64(signature) => Some(signature.clone()),
            Some(Value::String(signature)) => {
                let path = format!("{path}.thought_signature");
                let description = format!(
                    "Invalid value at '{path}' (TYPE_BYTES), Base64 decoding failed for \
                     \"{signature}\""
                );
                return Err(Rejection::single(Some(path), description));
            }
            Some(other) => {
                return Err(invalid(
                    &format!("{path}.thought_signature"),
                    "TYPE_BYTES",
                    other,
                ))
            }
        };
        let data = if let Some(text) = self.string(part, "text", &format!("{path}.text"))? {
            Data::Text(text.to_owned())
        } else if let Some(call) = self.message(part, "functionCall", path, "FunctionCall")? {
            let at = format!("{path}.function_call");
            let name = self.string(call, "name", &format!("{at}.name"))?;
            self.message(call, "args", &at, "google.protobuf.Struct")?;
            self.string(call, "id", &format!("{at}.id"))?;
            Data::Call {
                name: name.unwrap_or_default().to_owned(),
            }
        } else if let Some(response) =
            self.message(part, "functionResponse", path, "FunctionResponse")?
        {
            let at = format!("{path}.function_response");
            self.string(response, "name", &format!("{at}.name"))?;
            self.string(response, "id", &format!("{at}.id"))?;
            let body = self.message(response, "response", &at, "google.protobuf.Struct")?;
            Data::Response {
                response: body.cloned().map_or(Value::Null, Value::Object),
            }
        } else if DATA_FIELDS.iter().any(|name| get(part, name).is_some()) {
            for (name, kind) in [
                ("inlineData", "Blob"),
                ("fileData", "FileData"),
                ("executableCode", "ExecutableCode"),
                ("codeExecutionResult", "CodeExecutionResult"),
            ] {
                self.message(part, name, path, kind)?;
            }
            Data::Other
        } else {
            return Ok(None);
        };
        Ok(Some(Part {
            data,
            thought: thought.unwrap_or(false),
            signature,
        }))
    }

    /// The function declarations in order, and the names Google would refuse.
    fn tools(
        &self,
        request: &Map<String, Value>,
    ) -> Result<(Vec<Declaration>, Vec<Violation>), Rejection> {
        let mut declarations = Vec::new();
        let mut requirements = Vec::new();
        for (i, tool) in items(get(request, "tools")).into_iter().enumerate() {
            let path = self.path(&format!("tools[{i}]"));
            let Value::Object(tool) = tool else {
                return Err(invalid(&path, &self.message_type("Tool"), tool));
            };
            let listed = items(get(tool, "functionDeclarations"));
            for (j, declaration) in listed.into_iter().enumerate() {
                let relative = format!("tools[{i}].function_declarations[{j}]");
                let path = self.path(&relative);
                let Value::Object(declaration) = declaration else {
                    return Err(invalid(
                        &path,
                        &self.message_type("FunctionDeclaration"),
                        declaration,
                    ));
                };
                let name = self
                    .string(declaration, "name", &format!("{path}.name"))?
                    .unwrap_or_default();
                if !is_function_name(name) {
                    requirements.push(Violation {
                        field: Some(format!("{relative}.name")),
                        description: INVALID_FUNCTION_NAME.to_owned(),
                    });
                }
                let schema = match get(declaration, "parametersJsonSchema") {
                    Some(schema) => Some(schema.clone()),
                    None => self
                        .message(declaration, "parameters", &path, "Schema")?
                        .map(|schema| lowercase_types(Value::Object(schema.clone()))),
                };
                declarations.push(Declaration {
                    name: name.to_owned(),
                    schema,
                });
            }
        }
        Ok((declarations, requirements))
    }

    fn tool_config(&self, request: &Map<String, Value>) -> Result<(Mode, Vec<String>), Rejection> {
        let Some(config) = self.message(request, "toolConfig", self.prefix, "ToolConfig")? else {
            return Ok((Mode::Auto, Vec::new()));
        };
        let at = self.path("tool_config");
        let Some(calling) = self.message(
            config,
            "functionCallingConfig",
            &at,
            "FunctionCallingConfig",
        )?
        else {
            return Ok((Mode::Auto, Vec::new()));
        };
        let at = format!("{at}.function_calling_config");
        let mode = self.enumeration(calling, "mode", &at, "FunctionCallingConfig.Mode", MODES)?;
        let mode = match mode {
            Some("ANY") => Mode::Any,
            Some("NONE") => Mode::None,
            Some("VALIDATED") => Mode::Validated,
            _ => Mode::Auto,
        };
        let mut allowed = Vec::new();
        let names = items(get(calling, "allowedFunctionNames"));
        for (i, name) in names.into_iter().enumerate() {
            match name {
                Value::String(name) => allowed.push(name.clone()),
                other => {
                    let path = format!("{at}.allowed_function_names[{i}]");
                    return Err(invalid(&path, "TYPE_STRING", other));
                }
            }
        }
        Ok((mode, allowed))
    }

    fn generation(&self, request: &Map<String, Value>) -> Result<Generation, Rejection> {
        let mut generation = Generation {
            candidate_count: 1,
            ..Generation::default()
        };
        let Some(config) =
            self.message(request, "generationConfig", self.prefix, "GenerationConfig")?
        else {
            return Ok(generation);
        };
        let at = self.path("generation_config");
        let field = |name: &str| format!("{at}.{}", snake(name));
        for name in ["temperature", "topP", "presencePenalty", "frequencyPenalty"] {
            self.float(config, name, &field(name))?;
        }
        for name in ["topK", "seed", "logprobs"] {
            self.int(config, name, &field(name))?;
        }
        for name in ["responseLogprobs", "enableEnhancedCivicAnswers"] {
            self.boolean(config, name, &field(name))?;
        }
        let mime = self.string(config, "responseMimeType", &field("responseMimeType"))?;
        if mime == Some("application/json") {
            let schema = ["responseJsonSchema", "responseSchema"]
                .into_iter()
                .find_map(|name| get(config, name))
                .cloned();
            generation.json = Some(schema);
        }
        self.message(config, "responseSchema", &at, "Schema")?;
        generation.max_output_tokens = self
            .int(config, "maxOutputTokens", &field("maxOutputTokens"))?
            .and_then(|n| u64::try_from(n).ok())
            .filter(|&n| n > 0);
        generation.candidate_count = self
            .int(config, "candidateCount", &field("candidateCount"))?
            .and_then(|n| u32::try_from(n).ok())
            .map_or(1, |n| n.clamp(1, 8));
        let stops = items(get(config, "stopSequences"));
        for (i, stop) in stops.into_iter().enumerate() {
            match stop {
                Value::String(stop) => generation.stop_sequences.push(stop.clone()),
                other => {
                    let path = format!("{}[{i}]", field("stopSequences"));
                    return Err(invalid(&path, "TYPE_STRING", other));
                }
            }
        }
        if let Some(thinking) = self.message(config, "thinkingConfig", &at, "ThinkingConfig")? {
            let at = field("thinkingConfig");
            generation.include_thoughts = self
                .boolean(
                    thinking,
                    "includeThoughts",
                    &format!("{at}.include_thoughts"),
                )?
                .unwrap_or(false);
            generation.thinking_budget =
                self.int(thinking, "thinkingBudget", &format!("{at}.thinking_budget"))?;
            self.enumeration(
                thinking,
                "thinkingLevel",
                &at,
                "ThinkingConfig.ThinkingLevel",
                THINKING_LEVELS,
            )?;
        }
        Ok(generation)
    }

    fn string<'v>(
        &self,
        object: &'v Map<String, Value>,
        name: &str,
        path: &str,
    ) -> Result<Option<&'v str>, Rejection> {
        match get(object, name) {
            None => Ok(None),
            Some(Value::String(text)) => Ok(Some(text)),
            Some(other) => Err(invalid(path, "TYPE_STRING", other)),
        }
    }

    fn boolean(
        &self,
        object: &Map<String, Value>,
        name: &str,
        path: &str,
    ) -> Result<Option<bool>, Rejection> {
        match get(object, name) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(invalid(path, "TYPE_BOOL", other)),
        }
    }

    /// An int32, given as a JSON number or a string of digits (proto JSON takes both).
    fn int(
        &self,
        object: &Map<String, Value>,
        name: &str,
        path: &str,
    ) -> Result<Option<i64>, Rejection> {
        let Some(value) = get(object, name) else {
            return Ok(None);
        };
        let n = match value {
            Value::Number(n) => n.as_i64(),
            Value::String(s) => s.trim().parse::<i64>().ok(),
            _ => None,
        };
        n.filter(|n| i32::try_from(*n).is_ok())
            .map(Some)
            .ok_or_else(|| invalid(path, "TYPE_INT32", value))
    }

    fn float(
        &self,
        object: &Map<String, Value>,
        name: &str,
        path: &str,
    ) -> Result<Option<f64>, Rejection> {
        let Some(value) = get(object, name) else {
            return Ok(None);
        };
        let n = match value {
            Value::Number(n) => n.as_f64(),
            Value::String(s) => s.trim().parse::<f64>().ok(),
            _ => None,
        };
        n.map(Some)
            .ok_or_else(|| invalid(path, "TYPE_FLOAT", value))
    }

    /// A nested message: `name` of `object` at `at`, which must be a JSON object.
    fn message<'v>(
        &self,
        object: &'v Map<String, Value>,
        name: &str,
        at: &str,
        kind: &str,
    ) -> Result<Option<&'v Map<String, Value>>, Rejection> {
        match get(object, name) {
            None => Ok(None),
            Some(Value::Object(inner)) => Ok(Some(inner)),
            Some(other) => {
                let path = if at.is_empty() {
                    snake(name)
                } else {
                    format!("{at}.{}", snake(name))
                };
                let kind = if kind.starts_with("google.protobuf.") {
                    format!("type.googleapis.com/{kind}")
                } else {
                    self.message_type(kind)
                };
                Err(invalid(&path, &kind, other))
            }
        }
    }

    /// An enum value by name (any case, as Google takes `"low"` for `LOW`) or number; the
    /// name in capitals.
    fn enumeration(
        &self,
        object: &Map<String, Value>,
        name: &str,
        at: &str,
        kind: &str,
        values: &'static [&'static str],
    ) -> Result<Option<&'static str>, Rejection> {
        let Some(value) = get(object, name) else {
            return Ok(None);
        };
        let found = match value {
            Value::String(text) => values.iter().find(|v| v.eq_ignore_ascii_case(text)),
            Value::Number(n) => n
                .as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .and_then(|n| values.get(n)),
            _ => None,
        };
        found.copied().map(Some).ok_or_else(|| {
            let path = format!("{at}.{}", snake(name));
            invalid(&path, &self.message_type(kind), value)
        })
    }
}

#[derive(Default)]
struct Generation {
    max_output_tokens: Option<u64>,
    stop_sequences: Vec<String>,
    candidate_count: u32,
    include_thoughts: bool,
    thinking_budget: Option<i64>,
    json: Option<Option<Value>>,
}

/// `Invalid value at 'path' (KIND), value`, as Google words a value of the wrong type.
fn invalid(path: &str, kind: &str, value: &Value) -> Rejection {
    let description = format!("Invalid value at '{path}' ({kind}), {value}");
    Rejection::single(Some(path.to_owned()), description)
}

fn content_names(content: &Map<String, Value>, at: &str, unknown: &mut Vec<Violation>) {
    unknown_names(content, CONTENT_FIELDS, at, unknown);
    for (j, part) in items(get(content, "parts")).into_iter().enumerate() {
        if let Value::Object(part) = part {
            unknown_names(part, PART_FIELDS, &format!("{at}.parts[{j}]"), unknown);
        }
    }
}

/// The names an OpenAPI-subset schema may not use, down through its properties (named, as
/// Google names a map entry, `properties[i].value`; `i` counts in the mock's key order,
/// which is alphabetical), items and alternatives. A list of types (`["string", "null"]`)
/// is refused as Google's parser refuses it.
fn schema_names(schema: &Map<String, Value>, at: &str, unknown: &mut Vec<Violation>) {
    unknown_names(schema, SCHEMA_FIELDS, at, unknown);
    if let Some(Value::Array(_)) = get(schema, "type") {
        unknown.push(Violation {
            field: Some(at.to_owned()),
            description: format!(
                "Invalid JSON payload received. Unknown name \"type\" at '{at}': Proto field is \
                 not repeating, cannot start list."
            ),
        });
    }
    if let Some(Value::Object(properties)) = get(schema, "properties") {
        for (i, property) in properties.values().enumerate() {
            if let Value::Object(property) = property {
                schema_names(property, &format!("{at}.properties[{i}].value"), unknown);
            }
        }
    }
    if let Some(Value::Object(items)) = get(schema, "items") {
        schema_names(items, &format!("{at}.items"), unknown);
    }
    for (i, alternative) in items(get(schema, "anyOf")).into_iter().enumerate() {
        if let Value::Object(alternative) = alternative {
            schema_names(alternative, &format!("{at}.any_of[{i}]"), unknown);
        }
    }
}

/// Adds a violation for each key of `object` that is none of `known` (camelCase or snake_case).
fn unknown_names(
    object: &Map<String, Value>,
    known: &[&str],
    at: &str,
    unknown: &mut Vec<Violation>,
) {
    for key in object.keys() {
        if known.iter().any(|k| *k == key.as_str() || snake(k) == *key) {
            continue;
        }
        let description = if at.is_empty() {
            format!("Invalid JSON payload received. Unknown name \"{key}\": Cannot find field.")
        } else {
            format!(
                "Invalid JSON payload received. Unknown name \"{key}\" at '{at}': Cannot find \
                 field."
            )
        };
        unknown.push(Violation {
            field: (!at.is_empty()).then(|| at.to_owned()),
            description,
        });
    }
}

/// A field by its camelCase name or its snake_case one; `null` is absent, as in proto JSON.
pub(crate) fn get<'v>(object: &'v Map<String, Value>, camel: &str) -> Option<&'v Value> {
    object
        .get(camel)
        .or_else(|| object.get(&snake(camel)))
        .filter(|v| !v.is_null())
}

/// A repeated field's values; a single value stands for a list of one, as Google takes it.
fn items(value: Option<&Value>) -> Vec<&Value> {
    match value {
        None => Vec::new(),
        Some(Value::Array(values)) => values.iter().collect(),
        Some(single) => vec![single],
    }
}

/// `maxOutputTokens` → `max_output_tokens`.
fn snake(camel: &str) -> String {
    let mut out = String::with_capacity(camel.len() + 4);
    for c in camel.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// Standard or URL-safe base64, padded or not, as a proto `bytes` field takes it.
fn is_base64(text: &str) -> bool {
    let body = text.trim_end_matches('=');
    text.len() - body.len() <= 2
        && body.len() % 4 != 1
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'-' | b'_'))
}

/// A letter or underscore, then up to 63 of letters, digits, `_`, `.`, `:` and `-`.
fn is_function_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.len() <= 64
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-'))
}

/// The OpenAPI subset writes types in capitals (`"OBJECT"`); JSON Schema, which the reply's
/// argument maker reads, in lowercase.
fn lowercase_types(schema: Value) -> Value {
    match schema {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(key, value)| {
                    let value = match (key.as_str(), value) {
                        ("type", Value::String(kind)) => Value::String(kind.to_ascii_lowercase()),
                        (_, other) => lowercase_types(other),
                    };
                    (key, value)
                })
                .collect(),
        ),
        Value::Array(values) => Value::Array(values.into_iter().map(lowercase_types).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rejection(body: Value) -> Rejection {
        match generate(body.to_string().as_bytes(), "v1beta") {
            Ok(_) => panic!("accepted {body}"),
            Err(rejection) => rejection,
        }
    }

    #[test]
    fn snake_case_names_are_accepted_and_types_lowercased() {
        let body = json!({
            "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
            "system_instruction": {"parts": [{"text": "be brief"}]},
            "generation_config": {"max_output_tokens": "12", "stop_sequences": "END",
                                  "thinking_config": {"include_thoughts": true}},
            "tools": [{"function_declarations": [{"name": "edit", "parameters": {
                "type": "OBJECT", "properties": {"n": {"type": "INTEGER"}}, "required": ["n"]}}]}],
        });
        let request = generate(body.to_string().as_bytes(), "v1beta").unwrap();
        assert_eq!(request.max_output_tokens, Some(12));
        assert_eq!(request.stop_sequences, ["END"]);
        assert!(request.include_thoughts);
        assert_eq!(
            request.declarations[0].schema,
            Some(
                json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
            )
        );
        assert_eq!(request.cache_blocks.len(), 2);
    }

    #[test]
    fn unknown_names_are_all_reported_with_where_they_are() {
        let r = rejection(
            json!({"contents": [{"parts": [{"text": "x", "type": "text"}]}],
            "foo": 1, "generationConfig": {"max_tokens": 5}}),
        );
        assert_eq!(
            r.message,
            "Invalid JSON payload received. Unknown name \"foo\": Cannot find field.\n\
             Invalid JSON payload received. Unknown name \"max_tokens\" at 'generation_config': \
             Cannot find field.\n\
             Invalid JSON payload received. Unknown name \"type\" at 'contents[0].parts[0]': \
             Cannot find field."
        );
        assert_eq!(r.violations[1].field.as_deref(), Some("generation_config"));
        assert_eq!(r.violations[0].field, None);
    }

    #[test]
    fn json_schema_words_in_an_openapi_schema_are_unknown_names() {
        let r = rejection(json!({"contents": [{"parts": [{"text": "x"}]}],
            "tools": [{"functionDeclarations": [{"name": "f", "parameters": {
                "$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
                "properties": {"a": {"type": "string"}, "b": {"type": ["string", "null"],
                    "additionalProperties": false}}}}]}]}));
        assert_eq!(
            r.message,
            "Invalid JSON payload received. Unknown name \"$schema\" at \
             'tools[0].function_declarations[0].parameters': Cannot find field.\n\
             Invalid JSON payload received. Unknown name \"additionalProperties\" at \
             'tools[0].function_declarations[0].parameters.properties[1].value': Cannot find field.\n\
             Invalid JSON payload received. Unknown name \"type\" at \
             'tools[0].function_declarations[0].parameters.properties[1].value': Proto field is \
             not repeating, cannot start list."
        );
        // Any JSON Schema goes in `parametersJsonSchema`.
        let body = json!({"contents": [{"parts": [{"text": "x"}]}],
            "tools": [{"functionDeclarations": [{"name": "f", "parametersJsonSchema": {
                "$schema": "x", "type": ["object"], "additionalProperties": false}}]}]});
        assert!(generate(body.to_string().as_bytes(), "v1beta").is_ok());
    }

    #[test]
    fn wrong_types_name_the_field_and_its_proto_type() {
        let r = rejection(json!({"contents": [{"parts": [{"text": "x"}]}],
            "generationConfig": {"maxOutputTokens": "many"}}));
        assert_eq!(
            r.message,
            "Invalid value at 'generation_config.max_output_tokens' (TYPE_INT32), \"many\""
        );
        let r = rejection(json!({"contents": "hi"}));
        assert_eq!(
            r.message,
            "Invalid value at 'contents[0]' \
             (type.googleapis.com/google.ai.generativelanguage.v1beta.Content), \"hi\""
        );
        let r = rejection(json!({"contents": [{"parts": [{"text": 5}]}]}));
        assert_eq!(
            r.message,
            "Invalid value at 'contents[0].parts[0].text' (TYPE_STRING), 5"
        );
    }

    #[test]
    fn missing_contents_parts_and_data_are_requirement_lines() {
        let r = rejection(json!({}));
        assert_eq!(
            r.message,
            "* GenerateContentRequest.contents: contents is not specified\n"
        );
        let r = rejection(json!({"contents": [{"role": "user", "parts": []}, {"parts": [{}]}]}));
        assert_eq!(
            r.message,
            "* GenerateContentRequest.contents[0].parts: contents.parts must not be empty.\n\
             * GenerateContentRequest.contents[1].parts[0].data: required oneof field 'data' \
             must have one initialized field\n"
        );
    }

    #[test]
    fn function_names_follow_googles_rule() {
        for good in ["edit", "_x", "a.b:c-d_1", &"a".repeat(64)] {
            assert!(is_function_name(good), "{good}");
        }
        for bad in ["", "1x", "a b", "a/b", &"a".repeat(65)] {
            assert!(!is_function_name(bad), "{bad}");
        }
        let r = rejection(json!({"contents": [{"parts": [{"text": "x"}]}],
            "tools": [{"functionDeclarations": [{"name": "mcp/read"}]}]}));
        assert!(r.message.starts_with(
            "The GenerateContentRequest proto is invalid:\n  * tools[0].function_declarations[0].name: \
             [FIELD_INVALID] Invalid function name."
        ));
    }

    #[test]
    fn signatures_must_be_base64_of_either_alphabet() {
        for good in [
            "skip_thought_signature_validator",
            "context_engineering_is_the_way_to_go",
            "Zm9vYmE=",
            "ab+/cd-_",
        ] {
            assert!(is_base64(good), "{good}");
        }
        for bad in ["sig!", "a", "abc==="] {
            assert!(!is_base64(bad), "{bad}");
        }
    }

    #[test]
    fn count_reads_the_wrapped_request_or_the_whole_body() {
        let inner = r#"{"contents":[{"parts":[{"text":"count me"}]}]}"#;
        let wrapped = format!(r#"{{"generateContentRequest": {inner}}}"#);
        assert_eq!(count(wrapped.as_bytes(), "v1beta").unwrap(), inner.len());
        assert_eq!(count(inner.as_bytes(), "v1beta").unwrap(), inner.len());
        let r = count(br#"{"generateContentRequest": {"contents": []}}"#, "v1beta").unwrap_err();
        assert_eq!(
            r.message,
            "* CountTokensRequest.generate_content_request.contents: contents is not specified\n"
        );
        assert!(count(br#"{"model": "x"}"#, "v1beta").is_err());
    }
}
