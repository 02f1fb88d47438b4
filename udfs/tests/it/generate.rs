//! The generation functions on a toy task: the LLM function against a real HTTP server on
//! 127.0.0.1 (valid, malformed, schema-violating and check-failing answers, retries with the
//! reason, refused connections, the cache, the budget), the offline function, and the linters
//! through SQL.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use cxrlake_generate::{GenerationTask, PromptSet, TaskPrompt};
use cxrlake_llm::{LlmClient, LlmConfig};
use cxrlake_schemas::config::CxrlakeConfig;
use cxrlake_schemas::types::bboxes;
use cxrlake_udfs::generate::{GenerateFunc, LlmGenerateFunc};
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::logical_expr::ScalarUDF;
use datafusion::logical_expr::async_udf::AsyncScalarUDF;
use datafusion::prelude::{SessionConfig, SessionContext};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use url::Url;

/// The toy task's answer schema.
const SCHEMA: &str = r#"{
  "type": "object",
  "required": ["items"],
  "properties": {
    "items": {
      "type": "array",
      "items": {
        "type": "object",
        "required": ["text", "box"],
        "properties": {
          "text": {"type": "string"},
          "box": {"type": "array", "items": {"type": "number"}, "minItems": 4, "maxItems": 4}
        }
      }
    }
  }
}"#;

/// A task whose input rows are `{n, mode}`: the server answers by `mode`, `check` refuses items
/// whose text is `bad`, the offline generator writes one record per row and refuses negative n.
#[derive(Debug)]
struct ToyTask {
    prompts: PromptSet,
    prompt: TaskPrompt,
}

impl ToyTask {
    fn new() -> Arc<Self> {
        let prompts = PromptSet::from_files(&[
            (
                "prompts.toml",
                "version = \"7\"\n[toy]\ntemperature = 0.25\nmax_tokens = 200\nretries = 1\n",
            ),
            ("toy.md", "You describe rows. Style: <STYLE>\n"),
            ("toy.user.md", "Row <N>: <MODE>\n"),
            ("toy.schema.json", SCHEMA),
        ])
        .expect("toy prompts");
        let prompt = prompts.require("toy").expect("toy task").clone();
        Arc::new(Self { prompts, prompt })
    }
}

impl GenerationTask for ToyTask {
    fn name(&self) -> &str {
        "toy_generate"
    }

    fn prompt(&self) -> &TaskPrompt {
        &self.prompt
    }

    fn prompt_version(&self) -> &str {
        self.prompts.version()
    }

    fn placeholders(&self, input: &Value) -> Result<Vec<(&'static str, String)>, String> {
        let n = input["n"].as_i64().ok_or("the row has no n")?;
        let mode = input["mode"].as_str().unwrap_or("ok");
        Ok(vec![
            ("STYLE", "terse".into()),
            ("N", n.to_string()),
            ("MODE", mode.into()),
        ])
    }

    fn check(&self, input: &Value, answer: &Value) -> Result<Vec<Value>, String> {
        let items = answer["items"].as_array().cloned().unwrap_or_default();
        items
            .iter()
            .map(|item| {
                if item["text"] == "bad" {
                    return Err("item text 'bad' is not allowed".to_string());
                }
                Ok(json!({"text": item["text"], "n": input["n"], "boxes": [item["box"]]}))
            })
            .collect()
    }

    fn offline(&self, input: &Value) -> Result<Vec<Value>, String> {
        let n = input["n"].as_i64().ok_or("the row has no n")?;
        if n < 0 {
            return Err("negative n".into());
        }
        Ok(vec![
            json!({"text": format!("offline {n}"), "n": n, "boxes": [[0, 0, n, n + 1]]}),
        ])
    }

    fn offline_id(&self) -> &str {
        "offline-toy-1"
    }
}

/// The toy record type: `{text, n, boxes: [[x1, y1, x2, y2]]}`.
fn record_fields() -> Vec<Field> {
    vec![
        Field::new("text", DataType::Utf8, false),
        Field::new("n", DataType::Int32, true),
        bboxes("boxes"),
    ]
}

/// The server's answer to a chat request, by the mode in its first user message and the
/// attempt (the number of user messages).
fn toy_answer(body: &Value) -> String {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let user: Vec<&str> = messages
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str())
        .collect();
    let first = user.first().copied().unwrap_or_default();
    let (row, mode) = first
        .strip_prefix("Row ")
        .and_then(|rest| rest.split_once(": "))
        .unwrap_or(("?", "ok"));
    match (mode, user.len()) {
        ("malformed", 1) => "Sorry, I cannot produce that.".into(),
        ("malformed", _) => format!(
            "```json\n{{\"items\": [{{\"text\": \"row {row}\", \"box\": [1, 2, 3, 4],}},]}}\n```"
        ),
        ("schema", _) => r#"{"items": [{"text": 5, "box": [1, 2]}]}"#.into(),
        ("check", _) => r#"{"items": [{"text": "bad", "box": [1, 2, 3, 4]}]}"#.into(),
        ("none", _) => r#"{"items": []}"#.into(),
        _ => format!(r#"{{"items": [{{"text": "row {row}", "box": [10, 20, 30.5, 40]}}]}}"#),
    }
}

/// An OpenAI-compatible chat server on 127.0.0.1 answering with [`toy_answer`] and recording
/// every request body; stops when dropped.
struct ChatServer {
    address: SocketAddr,
    bodies: Arc<Mutex<Vec<Value>>>,
    accept_loop: JoinHandle<()>,
}

impl Drop for ChatServer {
    fn drop(&mut self) {
        self.accept_loop.abort();
    }
}

impl ChatServer {
    async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = listener.local_addr().expect("address");
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&bodies);
        let accept_loop = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, Arc::clone(&seen)));
            }
        });
        Self {
            address,
            bodies,
            accept_loop,
        }
    }

    fn endpoint(&self) -> Url {
        Url::parse(&format!("http://{}/v1", self.address)).expect("url")
    }

    fn bodies(&self) -> Vec<Value> {
        self.bodies.lock().expect("bodies").clone()
    }
}

/// Reads requests (head, then `Content-Length` bytes) and answers each, keeping the connection.
async fn serve(mut stream: TcpStream, bodies: Arc<Mutex<Vec<Value>>>) {
    let mut buffer: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        let head_end = loop {
            if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                break at + 4;
            }
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buffer[..head_end]).to_lowercase();
        let length: usize = head
            .lines()
            .find_map(|line| line.strip_prefix("content-length:"))
            .and_then(|value| value.trim().parse().ok())
            .unwrap_or(0);
        while buffer.len() < head_end + length {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
        }
        let body: Value =
            serde_json::from_slice(&buffer[head_end..head_end + length]).unwrap_or(Value::Null);
        buffer.drain(..head_end + length);
        let answer = toy_answer(&body);
        bodies.lock().expect("bodies").push(body);
        let reply = json!({
            "id": "chatcmpl-toy", "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": answer},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5},
        })
        .to_string();
        let response = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{reply}",
            reply.len()
        );
        if stream.write_all(response.as_bytes()).await.is_err() {
            return;
        }
    }
}

/// A session with `toy_generate` as the LLM function over `client`.
fn llm_session(task: Arc<ToyTask>, client: Arc<LlmClient>) -> SessionContext {
    let ctx = SessionContext::new();
    let func = LlmGenerateFunc::new(task, client, record_fields());
    ctx.register_udf(AsyncScalarUDF::new(Arc::new(func)).into_scalar_udf());
    ctx
}

fn client(endpoint: Url, max_retries: u32) -> Arc<LlmClient> {
    let mut config = LlmConfig::new(endpoint, "m");
    config.max_retries = max_retries;
    Arc::new(LlmClient::new(config).expect("client"))
}

/// The rows of `batches` as JSON objects (NULLs written out).
fn json_rows(batches: &[RecordBatch]) -> Vec<Value> {
    let mut buffer = Vec::new();
    {
        let mut writer = arrow_json::WriterBuilder::new()
            .with_explicit_nulls(true)
            .build::<_, arrow_json::writer::JsonArray>(&mut buffer);
        for batch in batches {
            writer.write(batch).expect("write json");
        }
        writer.finish().expect("finish json");
    }
    if buffer.is_empty() {
        return Vec::new();
    }
    serde_json::from_slice(&buffer).expect("json rows")
}

/// `(n, toy_generate(...))` over rows `(n, mode)`, in order of n; n = 0 is a NULL input, and
/// mode `nomode` an input without n.
async fn generate(
    ctx: &SessionContext,
    rows: &[(i64, &str)],
) -> datafusion::common::Result<Vec<Value>> {
    let values: Vec<String> = rows
        .iter()
        .map(|(n, mode)| format!("({n}, '{mode}')"))
        .collect();
    let sql = format!(
        "SELECT n, toy_generate(CASE \
            WHEN n = 0 THEN NULL \
            WHEN mode = 'nomode' THEN named_struct('n', CAST(NULL AS BIGINT), 'mode', mode) \
            ELSE named_struct('n', n, 'mode', mode) END) AS g \
         FROM (VALUES {}) AS t(n, mode) ORDER BY n",
        values.join(", ")
    );
    let batches = ctx.sql(&sql).await?.collect().await?;
    Ok(json_rows(&batches)
        .into_iter()
        .map(|row| json!([row["n"], row["g"]]))
        .collect())
}

/// The `g` of row `n`.
fn result_of(rows: &[Value], n: i64) -> Value {
    rows.iter()
        .find(|row| row[0] == n)
        .map(|row| row[1].clone())
        .unwrap_or_else(|| panic!("no row {n}"))
}

#[tokio::test]
async fn valid_answers_become_records_and_invalid_ones_are_asked_again() {
    let server = ChatServer::start().await;
    let task = ToyTask::new();
    let version = task.prompt_version().to_string();
    assert!(version.starts_with("7+"));
    let ctx = llm_session(task, client(server.endpoint(), 0));
    let rows = generate(
        &ctx,
        &[
            (1, "ok"),
            (2, "malformed"),
            (3, "schema"),
            (4, "check"),
            (5, "none"),
            (0, "null"),
            (6, "nomode"),
        ],
    )
    .await
    .expect("query");
    let generator = format!("llm:m@{version}");

    assert_eq!(
        result_of(&rows, 1),
        json!({"records": [{"text": "row 1", "n": 1, "boxes": [[10.0, 20.0, 30.5, 40.0]]}],
               "error": null, "raw": null, "attempts": 1, "generator": generator})
    );
    assert_eq!(
        result_of(&rows, 2),
        json!({"records": [{"text": "row 2", "n": 2, "boxes": [[1.0, 2.0, 3.0, 4.0]]}],
               "error": null, "raw": null, "attempts": 2, "generator": generator})
    );
    assert_eq!(
        result_of(&rows, 3),
        json!({"records": [],
               "error": "it does not follow the JSON schema: /items/0/box: 2 items, fewer \
                         than minItems 4; /items/0/text: expected string, found number",
               "raw": r#"{"items": [{"text": 5, "box": [1, 2]}]}"#,
               "attempts": 2, "generator": generator})
    );
    assert_eq!(
        result_of(&rows, 4),
        json!({"records": [], "error": "item text 'bad' is not allowed",
               "raw": r#"{"items": [{"text": "bad", "box": [1, 2, 3, 4]}]}"#,
               "attempts": 2, "generator": generator})
    );
    assert_eq!(
        result_of(&rows, 5),
        json!({"records": [], "error": null, "raw": null, "attempts": 1,
               "generator": generator})
    );
    assert_eq!(result_of(&rows, 0), Value::Null);
    assert_eq!(
        result_of(&rows, 6),
        json!({"records": [], "error": "cannot ask: the row has no n", "raw": null,
               "attempts": 0, "generator": generator})
    );

    // Five first attempts, three second ones (malformed, schema, check), none for the NULL row
    // and the row that could not be asked.
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 8);
    let first = bodies
        .iter()
        .find(|b| b["messages"][1]["content"] == "Row 1: ok")
        .expect("row 1 request");
    assert_eq!(first["model"], "m");
    assert_eq!(first["max_tokens"], 200);
    let temperature = first["temperature"].as_f64().expect("temperature");
    assert!((temperature - 0.25).abs() < 1e-6, "{temperature}");
    assert_eq!(first["messages"][0]["role"], "system");
    assert_eq!(
        first["messages"][0]["content"],
        "You describe rows. Style: terse"
    );
    let schema: Value = serde_json::from_str(SCHEMA).expect("schema");
    assert_eq!(first["response_format"]["type"], "json_schema");
    assert_eq!(first["response_format"]["json_schema"]["schema"], schema);
    assert_eq!(first["guided_json"], schema);

    let retry = bodies
        .iter()
        .find(|b| b["messages"][1]["content"] == "Row 2: malformed" && b["messages"][3].is_object())
        .expect("row 2 retry");
    assert_eq!(
        retry["messages"][2],
        json!({"role": "assistant", "content": "Sorry, I cannot produce that."})
    );
    assert_eq!(
        retry["messages"][3],
        json!({"role": "user", "content": "Your answer is not valid: not JSON (no JSON object \
              or array found). Answer again with JSON only."})
    );
    let retry = bodies
        .iter()
        .find(|b| b["messages"][1]["content"] == "Row 4: check" && b["messages"][3].is_object())
        .expect("row 4 retry");
    assert_eq!(
        retry["messages"][3]["content"],
        "Your answer is not valid: item text 'bad' is not allowed. Answer again with JSON only."
    );
}

#[tokio::test]
async fn a_rerun_is_answered_from_the_client_cache_except_unusable_answers() {
    let server = ChatServer::start().await;
    let ctx = llm_session(ToyTask::new(), client(server.endpoint(), 0));
    let rows = [(1, "ok"), (2, "malformed"), (3, "schema")];
    let first = generate(&ctx, &rows).await.expect("first run");
    let sent = server.bodies().len();
    assert_eq!(sent, 5);
    let second = generate(&ctx, &rows).await.expect("second run");
    assert_eq!(second, first);
    // Only the row that ended unusable (its answers never fit the schema) is asked again, both
    // its attempts; the repaired one is answered from the cache.
    assert_eq!(server.bodies().len(), sent + 2);
}

#[tokio::test]
async fn refused_connections_are_row_failures() {
    // A port that was just free: nothing listens there.
    let address = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("address")
    };
    let endpoint = Url::parse(&format!("http://{address}/v1")).expect("url");
    let ctx = llm_session(ToyTask::new(), client(endpoint, 0));
    let rows = generate(&ctx, &[(1, "ok"), (2, "check")])
        .await
        .expect("query");
    for n in [1, 2] {
        let result = result_of(&rows, n);
        let error = result["error"].as_str().expect("error");
        assert!(
            error.starts_with(cxrlake_udfs::extract::CALL_FAILED),
            "{error}"
        );
        assert_eq!(result["raw"], Value::Null);
        assert_eq!(result["attempts"], 1);
        assert_eq!(result["records"], json!([]));
    }
}

#[tokio::test]
async fn a_spent_budget_fails_the_query() {
    let server = ChatServer::start().await;
    let mut config = LlmConfig::new(server.endpoint(), "m");
    config.total_budget.max_requests = Some(1);
    let client = Arc::new(LlmClient::new(config).expect("client"));
    let ctx = llm_session(ToyTask::new(), client);
    let error = generate(&ctx, &[(1, "ok"), (2, "ok"), (3, "ok")])
        .await
        .expect_err("budget");
    assert!(error.to_string().contains("max_requests = 1"), "{error}");
}

#[tokio::test]
async fn the_offline_function_writes_the_tasks_offline_records() {
    let ctx = SessionContext::new();
    ctx.register_udf(ScalarUDF::from(GenerateFunc::new(
        ToyTask::new(),
        record_fields(),
    )));
    let rows = generate(&ctx, &[(3, "ok"), (-1, "ok"), (0, "null")])
        .await
        .expect("query");
    assert_eq!(
        result_of(&rows, 3),
        json!({"records": [{"text": "offline 3", "n": 3, "boxes": [[0.0, 0.0, 3.0, 4.0]]}],
               "error": null, "raw": null, "attempts": 0, "generator": "offline-toy-1"})
    );
    assert_eq!(
        result_of(&rows, -1),
        json!({"records": [], "error": "negative n", "raw": null, "attempts": 0,
               "generator": "offline-toy-1"})
    );
    assert_eq!(result_of(&rows, 0), Value::Null);
}

/// The single value of `sql` on a cxrlake session, as JSON.
async fn value(ctx: &SessionContext, sql: &str) -> Value {
    let batches = ctx
        .sql(&format!("SELECT {sql} AS v"))
        .await
        .expect("plan")
        .collect()
        .await
        .expect("run");
    json_rows(&batches)[0]["v"].clone()
}

#[tokio::test]
async fn the_linters_in_sql() {
    let ctx = cxrlake_udfs::session_context(
        SessionConfig::new().with_option_extension(CxrlakeConfig::default()),
    );
    assert_eq!(
        value(
            &ctx,
            "check_choices('single-choice', ['A: x', 'B: y', 'C: z', 'D: w'], 'B')"
        )
        .await,
        Value::Null
    );
    assert_eq!(
        value(
            &ctx,
            "check_choices('multi-choice', ['A: x', 'B: y', 'C: z'], 'A, B')"
        )
        .await,
        "3 choices instead of 4"
    );
    assert_eq!(
        value(&ctx, "check_choices('closed-ended', [], 'Maybe')").await,
        "a closed-ended answer is yes or no, not 'Maybe'"
    );
    assert_eq!(
        value(&ctx, "check_choices('open-ended', NULL, 'Atelectasis.')").await,
        Value::Null
    );
    assert_eq!(
        value(&ctx, "check_choices(NULL, NULL, NULL)").await,
        "the answer is empty"
    );

    assert_eq!(
        value(
            &ctx,
            "lint_banned_terms('Is the effusion unchanged compared with the prior study?')"
        )
        .await,
        json!([
            "comparison: compared",
            "comparison: prior",
            "comparison: unchanged",
            "other view or scan: prior study"
        ])
    );
    assert_eq!(
        value(
            &ctx,
            "lint_banned_terms('Is there a left pleural effusion?')"
        )
        .await,
        json!([])
    );
    assert_eq!(value(&ctx, "lint_banned_terms(NULL)").await, Value::Null);

    assert_eq!(
        value(
            &ctx,
            "near_duplicates(['Is there a pleural effusion?', 'Is the heart enlarged?', \
             NULL, 'Is there a pleural effusion ?', 'is there a pleural effusion?'], 0.95)"
        )
        .await,
        json!([null, null, null, 1, 1])
    );
    assert_eq!(
        value(
            &ctx,
            "near_duplicates(['Is there a pleural effusion?', 'Is there a pleural effusion?'], \
             1.5)"
        )
        .await,
        json!([null, null])
    );
    assert_eq!(
        value(&ctx, "near_duplicates(['a'], NULL)").await,
        Value::Null
    );
    // The embedder is the session's.
    ctx.sql("SET cxrlake.embedder = 'nonsense'")
        .await
        .expect("set")
        .collect()
        .await
        .expect("set runs");
    let error = ctx
        .sql("SELECT near_duplicates(['a', 'b'], 0.9)")
        .await
        .expect("plan")
        .collect()
        .await
        .expect_err("unknown embedder");
    assert!(
        error.to_string().contains("unknown embedder 'nonsense'"),
        "{error}"
    );
}
