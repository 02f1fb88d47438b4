//! Batch behaviour: concurrency limit, cache replay and resume, budget, API key, PHI guard.

use std::sync::Arc;
use std::time::Duration;

use cxrlake_llm::{
    Budget, InMemoryCache, LlmClient, LlmConfig, LlmError, LlmRequest, ResponseCache,
};
use url::Url;

use crate::faults::test_config;
use crate::server::TestServer;

fn prompts(script: &str, n: usize) -> Vec<LlmRequest> {
    (0..n)
        .map(|i| LlmRequest::completion(format!("{script}|question {i}")))
        .collect()
}

#[tokio::test]
async fn concurrency_never_exceeds_the_limit() {
    let server = TestServer::start(Duration::ZERO).await;
    let mut config = test_config(&server);
    config.concurrency = 4;
    let client = LlmClient::new(config).expect("client");
    let results = client.complete_all(&prompts("sleep30", 40)).await;
    assert!(results.iter().all(Result::is_ok));
    assert_eq!(server.requests(), 40);
    assert_eq!(
        server.max_in_flight(),
        4,
        "keeps exactly `concurrency` in flight"
    );
    assert!(server.held() >= Duration::from_millis(40 * 30));
}

#[tokio::test]
async fn second_run_with_the_same_cache_sends_zero_requests() {
    let server = TestServer::start(Duration::ZERO).await;
    let cache: Arc<dyn ResponseCache> = Arc::new(InMemoryCache::new());
    let mut requests = prompts("ok", 10);
    requests.push(LlmRequest::completion("500,ok|retried"));
    requests.push(LlmRequest::completion("400|rejected"));
    requests.push(LlmRequest::completion("nonjson|garbled"));

    let first_client = LlmClient::new(test_config(&server))
        .expect("client")
        .with_cache(Arc::clone(&cache))
        .with_prompt_version("qa-v1");
    let first = first_client.complete_all(&requests).await;
    let sent_first = server.requests();
    assert_eq!(sent_first, 10 + 2 + 1 + 2);

    let second_client = LlmClient::new(test_config(&server))
        .expect("client")
        .with_cache(Arc::clone(&cache))
        .with_prompt_version("qa-v1");
    let second = second_client.complete_all(&requests).await;
    assert_eq!(server.requests(), sent_first, "the re-run sent requests");
    let stats = second_client.stats();
    assert_eq!((stats.requested, stats.cache_hits, stats.sent), (13, 13, 0));
    for (before, after) in first.iter().zip(&second) {
        match (before, after) {
            (Ok(before), Ok(after)) => {
                assert!(after.from_cache);
                assert_eq!(before.text, after.text);
                assert_eq!(before.attempts, after.attempts);
            }
            (Err(before), Err(after)) => assert_eq!(before, after),
            mismatch => panic!("outcome changed on replay: {mismatch:?}"),
        }
    }

    let new_version = LlmClient::new(test_config(&server))
        .expect("client")
        .with_cache(Arc::clone(&cache))
        .with_prompt_version("qa-v2");
    new_version.complete_all(&requests[..1]).await;
    assert_eq!(
        server.requests(),
        sent_first + 1,
        "a new prompt version is a new key"
    );
}

#[tokio::test]
async fn duplicate_requests_in_a_batch_are_sent_once() {
    let server = TestServer::start(Duration::ZERO).await;
    let client = LlmClient::new(test_config(&server)).expect("client");
    let request = LlmRequest::completion("ok|same question");
    let results = client
        .complete_all(&[request.clone(), request.clone(), request])
        .await;
    assert_eq!(server.requests(), 1);
    assert!(
        results
            .iter()
            .all(|result| result.as_ref().is_ok_and(|r| r.attempts == 1))
    );
    // Every request is accounted for: 1 sent, 2 answered by it, none from the cache.
    let stats = client.stats();
    assert_eq!(
        (stats.requested, stats.cache_hits, stats.sent, stats.merged),
        (3, 0, 1, 2)
    );
}

#[tokio::test]
async fn resume_after_a_kill_sends_only_the_unanswered_requests() {
    let server = TestServer::start(Duration::ZERO).await;
    let cache = Arc::new(InMemoryCache::new());
    let mut config = test_config(&server);
    config.concurrency = 2;
    let requests = prompts("sleep40", 20);
    let client = Arc::new(
        LlmClient::new(config.clone())
            .expect("client")
            .with_cache(Arc::clone(&cache) as Arc<dyn ResponseCache>),
    );
    let batch = {
        let client = Arc::clone(&client);
        let requests = requests.clone();
        tokio::spawn(async move { client.complete_all(&requests).await })
    };
    tokio::time::sleep(Duration::from_millis(250)).await;
    batch.abort();
    assert!(batch.await.is_err(), "the batch was killed mid-way");
    let answered = cache.len();
    assert!(
        (1..20).contains(&answered),
        "{answered} answered before the kill"
    );
    let sent_before = server.requests();

    let resumed = LlmClient::new(config)
        .expect("client")
        .with_cache(Arc::clone(&cache) as Arc<dyn ResponseCache>);
    let results = resumed.complete_all(&requests).await;
    assert!(results.iter().all(Result::is_ok));
    assert_eq!(
        resumed.stats().cache_hits,
        u64::try_from(answered).expect("small")
    );
    assert_eq!(server.requests() - sent_before, 20 - answered);
}

#[tokio::test]
async fn budget_refusals_are_not_cached_so_a_later_run_sends_them() {
    let server = TestServer::start(Duration::ZERO).await;
    let cache = Arc::new(InMemoryCache::new());
    let mut config = test_config(&server);
    config.concurrency = 1;
    config.total_budget = Budget {
        max_requests: Some(3),
        deadline: None,
    };
    let requests = prompts("ok", 5);
    let limited = LlmClient::new(config.clone())
        .expect("client")
        .with_cache(Arc::clone(&cache) as Arc<dyn ResponseCache>);
    let results = limited.complete_all(&requests).await;
    assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 3);
    assert_eq!(
        results
            .iter()
            .filter(|r| matches!(r, Err(LlmError::BudgetExhausted(_))))
            .count(),
        2
    );
    assert_eq!(cache.len(), 3);

    config.total_budget = Budget::default();
    let unlimited = LlmClient::new(config)
        .expect("client")
        .with_cache(Arc::clone(&cache) as Arc<dyn ResponseCache>);
    assert!(
        unlimited
            .complete_all(&requests)
            .await
            .iter()
            .all(Result::is_ok)
    );
    assert_eq!(server.requests(), 5);
}

#[tokio::test]
async fn passed_deadline_sends_nothing() {
    let server = TestServer::start(Duration::ZERO).await;
    let mut config = test_config(&server);
    config.total_budget = Budget {
        max_requests: None,
        deadline: Some(Duration::from_millis(1)),
    };
    let client = LlmClient::new(config).expect("client");
    tokio::time::sleep(Duration::from_millis(5)).await;
    let results = client.complete_all(&prompts("ok", 3)).await;
    assert!(
        results
            .iter()
            .all(|r| matches!(r, Err(LlmError::BudgetExhausted(_))))
    );
    assert_eq!(server.requests(), 0);
}

#[tokio::test]
async fn api_key_is_sent_as_bearer_and_never_debug_printed() {
    const SECRET: &str = "sk-test-9f8e7d6c5b4a";
    let server = TestServer::start(Duration::ZERO).await;
    let mut config = test_config(&server);
    config.api_key_env = Some("CXRLAKE_TEST_LLM_KEY".into());
    let client = LlmClient::with_key_lookup(config.clone(), |var| {
        (var == "CXRLAKE_TEST_LLM_KEY").then(|| SECRET.to_owned())
    })
    .expect("client");
    client.complete_all(&prompts("ok", 2)).await;
    assert_eq!(server.authorizations(), vec![format!("Bearer {SECRET}"); 2]);
    for debug in [
        format!("{config:?}"),
        format!("{client:?}"),
        format!("{client:#?}"),
    ] {
        assert!(!debug.contains(SECRET), "key leaked into Debug: {debug}");
        assert!(
            !debug.contains("9f8e7d6c5b4a"),
            "key leaked into Debug: {debug}"
        );
    }
    assert!(format!("{client:?}").contains("CXRLAKE_TEST_LLM_KEY"));
}

#[tokio::test]
async fn missing_api_key_variable_is_named() {
    let server = TestServer::start(Duration::ZERO).await;
    let mut config = test_config(&server);
    config.api_key_env = Some("CXRLAKE_TEST_UNSET_KEY".into());
    let error = LlmClient::with_key_lookup(config, |_| None).expect_err("no key");
    assert!(matches!(error, LlmError::MissingApiKey { .. }));
    assert!(error.to_string().contains("CXRLAKE_TEST_UNSET_KEY"));
}

#[tokio::test]
async fn remote_endpoints_need_allow_remote() {
    let remote = Url::parse("http://203.0.113.7:8000/v1").expect("url");
    let error = LlmClient::new(LlmConfig::new(remote.clone(), "m")).expect_err("refused");
    assert!(matches!(error, LlmError::RemoteEndpoint { .. }));
    assert!(error.to_string().contains("--allow-remote-llm"));
    let mut allowed = LlmConfig::new(remote, "m");
    allowed.allow_remote = true;
    assert!(LlmClient::new(allowed).is_ok());
    let localhost = Url::parse("http://localhost:1/v1").expect("url");
    assert!(LlmClient::new(LlmConfig::new(localhost, "m")).is_ok());
}

#[tokio::test]
async fn localhost_endpoint_is_checked_pinned_and_served() {
    let server = TestServer::start(Duration::ZERO).await;
    let mut config = test_config(&server);
    let port = server.endpoint().port().expect("port");
    config.endpoint = Url::parse(&format!("http://localhost:{port}/v1")).expect("url");
    let client = LlmClient::new(config).expect("localhost is loopback");
    let results = client.complete_all(&prompts("ok", 2)).await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    assert_eq!(server.requests(), 2);
}
