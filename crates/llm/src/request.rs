//! Requests and responses, and their OpenAI-compatible wire format.
//!
//! Chat requests go to `chat/completions`, plain prompts to `completions`. Guided JSON is sent
//! both as OpenAI `response_format: {type: json_schema, ...}` (chat only) and as vLLM
//! `guided_json`, so one request works on vLLM, llama.cpp server, Ollama and OpenAI.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ChatMessage {
    /// `system`, `user` or `assistant`.
    pub role: String,
    /// Message text.
    pub content: String,
}

impl ChatMessage {
    /// A message with the given role.
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            role: role.into(),
            content: content.into(),
        }
    }

    /// A `system` message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::new("system", content)
    }

    /// A `user` message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::new("user", content)
    }

    /// An `assistant` message (an earlier answer, when a conversation asks again).
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::new("assistant", content)
    }
}

/// Which endpoint a request uses.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RequestKind {
    /// `/v1/chat/completions` with a message list.
    Chat {
        /// The conversation.
        messages: Vec<ChatMessage>,
    },
    /// `/v1/completions` with a raw prompt.
    Completion {
        /// The prompt text.
        prompt: String,
    },
}

/// One completion request; every field is part of the cache key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LlmRequest {
    /// Chat or plain completion.
    pub kind: RequestKind,
    /// Sampling temperature.
    pub temperature: f32,
    /// Most tokens to generate.
    pub max_tokens: Option<u32>,
    /// Stop sequences.
    pub stop: Vec<String>,
    /// JSON schema the answer must follow.
    pub guided_json: Option<Value>,
}

impl LlmRequest {
    /// A chat request with temperature 0 and no limits.
    pub fn chat(messages: Vec<ChatMessage>) -> Self {
        Self::with_kind(RequestKind::Chat { messages })
    }

    /// A plain completion request with temperature 0 and no limits.
    pub fn completion(prompt: impl Into<String>) -> Self {
        Self::with_kind(RequestKind::Completion {
            prompt: prompt.into(),
        })
    }

    fn with_kind(kind: RequestKind) -> Self {
        Self {
            kind,
            temperature: 0.0,
            max_tokens: None,
            stop: Vec::new(),
            guided_json: None,
        }
    }

    /// Sets the temperature.
    pub fn with_temperature(mut self, temperature: f32) -> Self {
        self.temperature = temperature;
        self
    }

    /// Sets the token limit.
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// Sets the stop sequences.
    pub fn with_stop(mut self, stop: Vec<String>) -> Self {
        self.stop = stop;
        self
    }

    /// Constrains the answer to a JSON schema.
    pub fn with_guided_json(mut self, schema: Value) -> Self {
        self.guided_json = Some(schema);
        self
    }

    /// The JSON body sent to the server.
    pub fn wire_body(&self, model: &str) -> Value {
        let mut body = json!({
            "model": model,
            "temperature": self.temperature,
            "stream": false,
        });
        let fields = body
            .as_object_mut()
            .expect("json! object literal is an object");
        match &self.kind {
            RequestKind::Chat { messages } => {
                fields.insert("messages".into(), json!(messages));
                if let Some(schema) = &self.guided_json {
                    fields.insert(
                        "response_format".into(),
                        json!({
                            "type": "json_schema",
                            "json_schema": {"name": "answer", "schema": schema},
                        }),
                    );
                }
            }
            RequestKind::Completion { prompt } => {
                fields.insert("prompt".into(), json!(prompt));
            }
        }
        if let Some(schema) = &self.guided_json {
            fields.insert("guided_json".into(), schema.clone());
        }
        if let Some(max_tokens) = self.max_tokens {
            fields.insert("max_tokens".into(), json!(max_tokens));
        }
        if !self.stop.is_empty() {
            fields.insert("stop".into(), json!(self.stop));
        }
        body
    }
}

/// A successful completion.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LlmResponse {
    /// Generated text (chat `message.content` or completion `text`).
    pub text: String,
    /// Prompt tokens reported by the server (0 when not reported).
    pub prompt_tokens: u64,
    /// Generated tokens reported by the server (0 when not reported).
    pub completion_tokens: u64,
    /// Milliseconds from the first attempt to the answer, backoff included.
    pub latency_ms: u64,
    /// HTTP attempts it took.
    pub attempts: u32,
    /// `stop`, `length`, ... as reported by the server.
    pub finish_reason: Option<String>,
    /// Whether this answer was replayed from the cache rather than fetched now.
    #[serde(default)]
    pub from_cache: bool,
}

/// What the client reads from an OpenAI-shaped response body.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct ParsedCompletion {
    pub text: String,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireResponse {
    choices: Vec<WireChoice>,
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct WireChoice {
    text: Option<String>,
    message: Option<WireMessage>,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireMessage {
    content: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
}

/// Parses a chat or completion response body; the error says what was wrong.
pub(crate) fn parse_completion(body: &[u8]) -> Result<ParsedCompletion, String> {
    let wire: WireResponse = serde_json::from_slice(body).map_err(|error| {
        format!(
            "body is not an OpenAI completion ({error}; {} bytes)",
            body.len()
        )
    })?;
    let choice = wire
        .choices
        .into_iter()
        .next()
        .ok_or_else(|| "response has no choices".to_owned())?;
    let text = choice
        .message
        .and_then(|message| message.content)
        .or(choice.text)
        .ok_or_else(|| "first choice has neither message.content nor text".to_owned())?;
    let usage = wire.usage;
    Ok(ParsedCompletion {
        text,
        prompt_tokens: usage.as_ref().and_then(|u| u.prompt_tokens).unwrap_or(0),
        completion_tokens: usage.and_then(|u| u.completion_tokens).unwrap_or(0),
        finish_reason: choice.finish_reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chat_body_carries_both_guided_json_forms() {
        let schema = json!({"type": "object", "properties": {"answer": {"type": "string"}}});
        let request = LlmRequest::chat(vec![ChatMessage::user("Is there an effusion?")])
            .with_max_tokens(64)
            .with_stop(vec!["\n\n".into()])
            .with_guided_json(schema.clone());
        let body = request.wire_body("qwen");
        assert_eq!(body["model"], "qwen");
        assert_eq!(body["messages"][0]["role"], "user");
        assert_eq!(body["max_tokens"], 64);
        assert_eq!(body["stop"][0], "\n\n");
        assert_eq!(body["guided_json"], schema);
        assert_eq!(body["response_format"]["type"], "json_schema");
        assert_eq!(body["response_format"]["json_schema"]["schema"], schema);
    }

    #[test]
    fn completion_body_has_prompt_and_no_response_format() {
        let request = LlmRequest::completion("Findings:").with_guided_json(json!({}));
        let body = request.wire_body("m");
        assert_eq!(body["prompt"], "Findings:");
        assert!(body.get("response_format").is_none());
        assert!(body.get("guided_json").is_some());
        assert!(body.get("max_tokens").is_none());
    }

    #[test]
    fn parses_chat_and_completion_shapes() {
        let chat = br#"{"choices":[{"message":{"role":"assistant","content":"yes"},"finish_reason":"stop"}],"usage":{"prompt_tokens":7,"completion_tokens":1}}"#;
        let parsed = parse_completion(chat).expect("chat");
        assert_eq!(parsed.text, "yes");
        assert_eq!(parsed.prompt_tokens, 7);
        assert_eq!(parsed.finish_reason.as_deref(), Some("stop"));
        let completion = br#"{"choices":[{"text":"no","finish_reason":"length"}]}"#;
        let parsed = parse_completion(completion).expect("completion");
        assert_eq!(parsed.text, "no");
        assert_eq!(parsed.completion_tokens, 0);
    }

    #[test]
    fn malformed_bodies_are_errors_not_panics() {
        for body in [
            &b"not json"[..],
            br#"{"choices":[{"message":{"content":"tru"#,
            br#"{"choices":[]}"#,
            br#"{"choices":[{}]}"#,
            b"",
        ] {
            assert!(parse_completion(body).is_err());
        }
    }
}
