//! A scripted OpenAI-compatible HTTP/1.1 server on 127.0.0.1, for the client tests and bench.
//!
//! The prompt (completion `prompt`, or the last chat message) starts with a script:
//! `"<action>,<action>,...|rest"`. Attempt `n` of a given prompt performs action `n` (the last
//! action repeats). Actions:
//!
//! | action       | reply                                                        |
//! |--------------|--------------------------------------------------------------|
//! | `ok`         | 200 with a canned chat or completion body                    |
//! | `sleep<ms>`  | waits `<ms>` milliseconds, then `ok`                         |
//! | `slow`       | waits 2 s (beyond the tests' request timeout), then `ok`     |
//! | `500`, `503` | that status with a JSON error body                           |
//! | `429`        | 429 with `Retry-After: 1`                                    |
//! | `400`        | 400 (must not be retried)                                    |
//! | `reset`      | half a status line, then the socket is dropped               |
//! | `truncated`  | 200 with `Content-Length` of the full body, half of it sent  |
//! | `nonjson`    | 200 with an HTML body                                        |
//! | `away`       | 307 to a public address (TEST-NET-3, 203.0.113.7)             |
//! | `home`       | 307 to the same path on this server                          |
//!
//! A prompt without `|` is `ok`. The server also sleeps `fixed_latency` before every reply,
//! counts requests, the most requests it held at once and the total time it held them, and
//! records bodies and `Authorization` headers.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use url::Url;

/// Requests seen by the server.
#[derive(Debug, Default)]
struct State {
    fixed_latency: Duration,
    requests: AtomicUsize,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    held_micros: AtomicUsize,
    attempts: Mutex<HashMap<String, usize>>,
    bodies: Mutex<Vec<(String, Value)>>,
    authorizations: Mutex<Vec<String>>,
}

/// The running server; stops when dropped.
#[derive(Debug)]
pub struct TestServer {
    address: SocketAddr,
    state: Arc<State>,
    accept_loop: JoinHandle<()>,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.accept_loop.abort();
    }
}

impl TestServer {
    /// Starts a server that adds `fixed_latency` to every reply.
    pub async fn start(fixed_latency: Duration) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let address = listener.local_addr().expect("local addr");
        let state = Arc::new(State {
            fixed_latency,
            ..State::default()
        });
        let accept_state = Arc::clone(&state);
        let accept_loop = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve_connection(stream, Arc::clone(&accept_state)));
            }
        });
        Self {
            address,
            state,
            accept_loop,
        }
    }

    /// Base URL, `http://127.0.0.1:<port>/v1`.
    pub fn endpoint(&self) -> Url {
        Url::parse(&format!("http://{}/v1", self.address)).expect("endpoint url")
    }

    /// HTTP requests received so far.
    pub fn requests(&self) -> usize {
        self.state.requests.load(Ordering::SeqCst)
    }

    /// Most requests held at the same time.
    pub fn max_in_flight(&self) -> usize {
        self.state.max_in_flight.load(Ordering::SeqCst)
    }

    /// Total time requests were held, from parsed request to written reply.
    pub fn held(&self) -> Duration {
        let micros = self.state.held_micros.load(Ordering::SeqCst);
        Duration::from_micros(u64::try_from(micros).expect("fits"))
    }

    /// `(path, JSON body)` of every request, in arrival order.
    pub fn bodies(&self) -> Vec<(String, Value)> {
        self.state.bodies.lock().expect("bodies").clone()
    }

    /// `Authorization` header values received.
    pub fn authorizations(&self) -> Vec<String> {
        self.state.authorizations.lock().expect("auth").clone()
    }
}

async fn serve_connection(mut stream: TcpStream, state: Arc<State>) {
    let mut buffer: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        let head_end = loop {
            if let Some(position) = find(&buffer, b"\r\n\r\n") {
                break position + 4;
            }
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
        let mut lines = head.split("\r\n");
        let path = lines
            .next()
            .and_then(|line| line.split(' ').nth(1))
            .unwrap_or_default()
            .to_owned();
        let mut content_length = 0usize;
        for line in lines {
            let Some((name, value)) = line.split_once(':') else {
                continue;
            };
            let value = value.trim();
            if name.eq_ignore_ascii_case("content-length") {
                content_length = value.parse().unwrap_or(0);
            } else if name.eq_ignore_ascii_case("authorization") {
                state
                    .authorizations
                    .lock()
                    .expect("auth")
                    .push(value.to_owned());
            }
        }
        while buffer.len() < head_end + content_length {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
        }
        let body: Value = serde_json::from_slice(&buffer[head_end..head_end + content_length])
            .unwrap_or(Value::Null);
        buffer.drain(..head_end + content_length);

        state.requests.fetch_add(1, Ordering::SeqCst);
        let now = state.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        state.max_in_flight.fetch_max(now, Ordering::SeqCst);
        let received = Instant::now();
        let keep_alive = reply(&mut stream, &path, body, &state).await;
        let held = usize::try_from(received.elapsed().as_micros()).unwrap_or(usize::MAX);
        state.held_micros.fetch_add(held, Ordering::SeqCst);
        state.in_flight.fetch_sub(1, Ordering::SeqCst);
        if !keep_alive {
            return;
        }
    }
}

/// Performs the scripted action; returns whether the connection stays usable.
async fn reply(stream: &mut TcpStream, path: &str, body: Value, state: &State) -> bool {
    let prompt = prompt_of(&body);
    let action = {
        let mut attempts = state.attempts.lock().expect("attempts");
        let attempt = attempts.entry(prompt.clone()).or_insert(0);
        *attempt += 1;
        action_for(&prompt, *attempt)
    };
    let chat = path.ends_with("/chat/completions");
    state
        .bodies
        .lock()
        .expect("bodies")
        .push((path.to_owned(), body));
    if !state.fixed_latency.is_zero() {
        tokio::time::sleep(state.fixed_latency).await;
    }
    let action = match action.strip_prefix("sleep") {
        Some(millis) => {
            let millis = millis.parse().unwrap_or(0);
            tokio::time::sleep(Duration::from_millis(millis)).await;
            "ok".to_owned()
        }
        None => action,
    };
    let error_body = r#"{"error":{"message":"scripted failure"}}"#;
    match action.as_str() {
        "slow" => {
            tokio::time::sleep(Duration::from_secs(2)).await;
            write(stream, 200, "", &completion_body(chat, &prompt)).await
        }
        "500" => write(stream, 500, "", error_body).await,
        "503" => write(stream, 503, "", error_body).await,
        "429" => write(stream, 429, "Retry-After: 1\r\n", error_body).await,
        "400" => write(stream, 400, "", r#"{"error":{"message":"unknown field"}}"#).await,
        "reset" => {
            let _ = stream.write_all(b"HTTP/1.1 200 O").await;
            false
        }
        "truncated" => {
            let full = completion_body(chat, &prompt);
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                full.len()
            );
            let _ = stream.write_all(head.as_bytes()).await;
            let _ = stream.write_all(&full.as_bytes()[..full.len() / 2]).await;
            let _ = stream.flush().await;
            false
        }
        "nonjson" => write(stream, 200, "", "<html><body>502 Bad Gateway</body></html>").await,
        "away" => {
            let location = format!("Location: http://203.0.113.7:8080{path}\r\n");
            write(stream, 307, &location, error_body).await
        }
        "home" => write(stream, 307, &format!("Location: {path}\r\n"), error_body).await,
        _ => write(stream, 200, "", &completion_body(chat, &prompt)).await,
    }
}

fn action_for(prompt: &str, attempt: usize) -> String {
    let Some((script, _)) = prompt.split_once('|') else {
        return "ok".to_owned();
    };
    let actions: Vec<&str> = script.split(',').collect();
    actions[(attempt - 1).min(actions.len() - 1)].to_owned()
}

fn prompt_of(body: &Value) -> String {
    body.get("prompt")
        .and_then(Value::as_str)
        .or_else(|| {
            body.get("messages")
                .and_then(Value::as_array)
                .and_then(|messages| messages.last())
                .and_then(|message| message.get("content"))
                .and_then(Value::as_str)
        })
        .unwrap_or_default()
        .to_owned()
}

fn completion_body(chat: bool, prompt: &str) -> String {
    let answer = format!("answer to {prompt}");
    let usage = json!({"prompt_tokens": prompt.split_whitespace().count(), "completion_tokens": 3});
    let body = if chat {
        json!({
            "id": "chatcmpl-test", "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": answer},
                         "finish_reason": "stop"}],
            "usage": usage,
        })
    } else {
        json!({
            "id": "cmpl-test", "object": "text_completion",
            "choices": [{"index": 0, "text": answer, "finish_reason": "length"}],
            "usage": usage,
        })
    };
    body.to_string()
}

async fn write(stream: &mut TcpStream, status: u16, extra_headers: &str, body: &str) -> bool {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        307 => "Temporary Redirect",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        _ => "Service Unavailable",
    };
    let response = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n{extra_headers}\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes()).await.is_ok()
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}
