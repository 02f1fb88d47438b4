//! Fault handling of single requests: retries, Retry-After, timeouts, resets, bad bodies.

use std::time::{Duration, Instant};

use cxrlake_llm::{ChatMessage, LlmClient, LlmConfig, LlmError, LlmRequest, LlmResponse, Result};
use serde_json::json;

use crate::server::TestServer;

/// Fast-retrying config for `server`.
pub fn test_config(server: &TestServer) -> LlmConfig {
    let mut config = LlmConfig::new(server.endpoint(), "test-model");
    config.request_timeout = Duration::from_millis(400);
    config.max_retries = 3;
    config.backoff_base = Duration::from_millis(5);
    config.backoff_max = Duration::from_millis(20);
    config.concurrency = 8;
    config
}

async fn run_one(server: &TestServer, prompt: &str) -> (Result<LlmResponse>, LlmClient) {
    let client = LlmClient::new(test_config(server)).expect("client");
    let mut results = client.complete_all(&[LlmRequest::completion(prompt)]).await;
    (results.remove(0), client)
}

#[tokio::test]
async fn server_error_then_success_is_retried() {
    let server = TestServer::start(Duration::ZERO).await;
    let (result, client) = run_one(&server, "500,ok|effusion?").await;
    let response = result.expect("retried to success");
    assert_eq!(response.attempts, 2);
    assert_eq!(response.text, "answer to 500,ok|effusion?");
    assert_eq!(server.requests(), 2);
    let stats = client.stats();
    assert_eq!((stats.sent, stats.retries, stats.failures), (1, 1, 0));
}

#[tokio::test]
async fn too_many_requests_honours_retry_after() {
    let server = TestServer::start(Duration::ZERO).await;
    let started = Instant::now();
    let (result, _) = run_one(&server, "429,ok|pneumothorax?").await;
    assert_eq!(result.expect("retried after 429").attempts, 2);
    assert!(
        started.elapsed() >= Duration::from_millis(950),
        "waited {:?}, Retry-After: 1 asks for 1 s",
        started.elapsed()
    );
}

#[tokio::test]
async fn slow_response_times_out_and_is_retried() {
    let server = TestServer::start(Duration::ZERO).await;
    let started = Instant::now();
    let (result, client) = run_one(&server, "slow,ok|cardiomegaly?").await;
    assert_eq!(result.expect("retried after timeout").attempts, 2);
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "timed out early"
    );
    assert_eq!(client.stats().retries, 1);
}

#[tokio::test]
async fn connection_reset_is_retried() {
    let server = TestServer::start(Duration::ZERO).await;
    let (result, _) = run_one(&server, "reset,reset,ok|nodule?").await;
    assert_eq!(result.expect("retried after resets").attempts, 3);
    assert_eq!(server.requests(), 3);
}

#[tokio::test]
async fn truncated_body_is_retried_once_then_recorded() {
    let server = TestServer::start(Duration::ZERO).await;
    let (recovered, _) = run_one(&server, "truncated,ok|edema?").await;
    assert_eq!(recovered.expect("second attempt succeeds").attempts, 2);

    let (result, client) = run_one(&server, "truncated|atelectasis?").await;
    match result {
        Err(LlmError::Malformed {
            attempts, detail, ..
        }) => {
            assert_eq!(attempts, 2, "malformed bodies are retried once");
            assert!(detail.contains("truncated"), "{detail}");
        }
        other => panic!("expected a malformed-response error, got {other:?}"),
    }
    assert_eq!(client.stats().failures, 1);
    assert_eq!(server.requests(), 4);
}

#[tokio::test]
async fn non_json_body_is_a_parse_error() {
    let server = TestServer::start(Duration::ZERO).await;
    let (result, _) = run_one(&server, "nonjson|consolidation?").await;
    match result {
        Err(LlmError::Malformed {
            attempts, detail, ..
        }) => {
            assert_eq!(attempts, 2);
            assert!(detail.contains("not an OpenAI completion"), "{detail}");
        }
        other => panic!("expected a malformed-response error, got {other:?}"),
    }
    assert_eq!(server.requests(), 2);
}

#[tokio::test]
async fn bad_request_is_not_retried_and_names_endpoint_and_status() {
    let server = TestServer::start(Duration::ZERO).await;
    let (result, client) = run_one(&server, "400|fracture?").await;
    let error = result.expect_err("400 is final");
    assert!(
        matches!(error, LlmError::Status { status: 400, .. }),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(message.contains(server.endpoint().as_str()), "{message}");
    assert!(message.contains("400"), "{message}");
    assert_eq!(server.requests(), 1);
    assert_eq!(client.stats().retries, 0);
}

#[tokio::test]
async fn persistent_server_errors_exhaust_the_retries() {
    let server = TestServer::start(Duration::ZERO).await;
    let (result, client) = run_one(&server, "503|mass?").await;
    match result {
        Err(LlmError::RetriesExhausted { attempts, last, .. }) => {
            assert_eq!(attempts, 4, "1 attempt + max_retries 3");
            assert!(last.contains("503"), "{last}");
        }
        other => panic!("expected exhausted retries, got {other:?}"),
    }
    let stats = client.stats();
    assert_eq!((stats.sent, stats.retries, stats.failures), (1, 3, 1));
}

#[tokio::test]
async fn chat_request_sends_guided_json_both_ways_and_reads_usage() {
    let server = TestServer::start(Duration::ZERO).await;
    let client = LlmClient::new(test_config(&server)).expect("client");
    let schema = json!({"type": "object", "properties": {"present": {"type": "boolean"}}});
    let request = LlmRequest::chat(vec![
        ChatMessage::system("You answer chest X-ray questions."),
        ChatMessage::user("Is there a left pleural effusion?"),
    ])
    .with_temperature(0.2)
    .with_max_tokens(16)
    .with_stop(vec!["</s>".into()])
    .with_guided_json(schema.clone());
    let response = client
        .complete_all(&[request])
        .await
        .remove(0)
        .expect("answer");
    assert_eq!(response.text, "answer to Is there a left pleural effusion?");
    assert_eq!(response.prompt_tokens, 6);
    assert_eq!(response.completion_tokens, 3);
    assert_eq!(response.finish_reason.as_deref(), Some("stop"));
    assert!(!response.from_cache);

    let (path, body) = server.bodies().remove(0);
    assert_eq!(path, "/v1/chat/completions");
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["max_tokens"], 16);
    assert_eq!(body["stop"], json!(["</s>"]));
    assert_eq!(body["guided_json"], schema);
    assert_eq!(body["response_format"]["type"], "json_schema");
    assert_eq!(body["response_format"]["json_schema"]["schema"], schema);
    let stats = client.stats();
    assert_eq!((stats.prompt_tokens, stats.completion_tokens), (6, 3));
}

#[tokio::test]
async fn failed_requests_do_not_fail_the_batch() {
    let server = TestServer::start(Duration::ZERO).await;
    let client = LlmClient::new(test_config(&server)).expect("client");
    let requests = [
        LlmRequest::completion("ok|a"),
        LlmRequest::completion("400|b"),
        LlmRequest::completion("nonjson|c"),
        LlmRequest::completion("500,ok|d"),
    ];
    let results = client.complete_all(&requests).await;
    assert_eq!(results.len(), 4);
    assert_eq!(results[0].as_ref().expect("a").text, "answer to ok|a");
    assert!(matches!(
        results[1],
        Err(LlmError::Status { status: 400, .. })
    ));
    assert!(matches!(results[2], Err(LlmError::Malformed { .. })));
    assert_eq!(results[3].as_ref().expect("d").attempts, 2);
    assert_eq!(client.stats().failures, 2);
}

#[tokio::test]
async fn a_redirect_off_the_endpoint_is_refused_and_one_home_followed() {
    let server = TestServer::start(Duration::ZERO).await;
    // 307 to a public address: the report would leave the network; refused, not retried.
    let (result, _) = run_one(&server, "away|patient report text").await;
    let error = result.expect_err("refused").to_string();
    assert!(
        error.contains("refusing LLM endpoint http://203.0.113.7:8080/")
            && error.contains("never followed"),
        "{error}"
    );
    assert_eq!(server.requests(), 1, "asked once, never again");
    // 307 to the same server: followed.
    let (result, _) = run_one(&server, "home,ok|effusion?").await;
    assert_eq!(
        result.expect("followed").text,
        "answer to home,ok|effusion?"
    );
}
