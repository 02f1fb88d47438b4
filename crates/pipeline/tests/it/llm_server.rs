//! A loopback OpenAI-compatible server that answers cxrlake's prompts like a (very literal) LLM:
//! by default the three extraction prompts (one sentence per report line, one observation per
//! cluster, and an indication object; clusters mentioning `GARBLE` get an unparseable answer), or
//! with any answer function ([`ExtractionServer::start_answering`]). Every answer is
//! counted per prompt, so tests can assert that nothing answered was asked again; after
//! `answer_limit` answers the server holds further requests forever (a client to be killed).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// The running server; stops when dropped.
#[derive(Debug)]
pub struct ExtractionServer {
    address: SocketAddr,
    state: Arc<State>,
    accept_loop: JoinHandle<()>,
}

/// How the server misbehaves (the LLM fault matrix); `None` answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Answers.
    None,
    /// This status with a JSON error body (`429` also sends `Retry-After: 1`).
    Status(u16),
    /// Never answers (the client's timeout ends the request).
    Hang,
    /// Closes the connection without answering.
    Reset,
    /// Announces a longer body than it sends, then closes.
    Truncated,
    /// 200 with a JSON body that is not an OpenAI completion.
    WrongSchema,
    /// 200 with `"choices": []`.
    EmptyChoices,
    /// 200 with an answer of 20 MB.
    Huge,
    /// 307 to a host under `.invalid` (never resolves): the PHI guard must refuse it.
    Redirect,
}

#[derive(Debug)]
struct State {
    fault: Mutex<Fault>,
    answer: fn(&str) -> String,
    latency: Duration,
    answer_limit: AtomicUsize,
    answers: Mutex<HashMap<String, usize>>,
}

impl Drop for ExtractionServer {
    fn drop(&mut self) {
        self.accept_loop.abort();
    }
}

impl ExtractionServer {
    /// Starts the server; every answer is delayed by `latency`, at most `answer_limit` are given.
    pub async fn start(latency: Duration, answer_limit: usize) -> Self {
        Self::start_answering(answer, latency, answer_limit).await
    }

    /// Starts a server that answers each prompt with `answer(prompt)`.
    pub async fn start_answering(
        answer: fn(&str) -> String,
        latency: Duration,
        answer_limit: usize,
    ) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = listener.local_addr().expect("address");
        let state = Arc::new(State {
            fault: Mutex::new(Fault::None),
            answer,
            latency,
            answer_limit: AtomicUsize::new(answer_limit),
            answers: Mutex::new(HashMap::new()),
        });
        let shared = state.clone();
        let accept_loop = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, shared.clone()));
            }
        });
        Self {
            address,
            state,
            accept_loop,
        }
    }

    /// Makes every later request meet `fault`.
    pub fn set_fault(&self, fault: Fault) {
        *self.state.fault.lock().expect("lock") = fault;
    }

    /// Lifts the answer limit.
    pub fn unlimit(&self) {
        self.state.answer_limit.store(usize::MAX, Ordering::SeqCst);
    }

    /// The `/v1` base URL.
    pub fn endpoint(&self) -> String {
        format!("http://{}/v1", self.address)
    }

    /// Answers given.
    pub fn answers(&self) -> usize {
        self.state.answers.lock().expect("lock").values().sum()
    }

    /// Prompts answered more than once.
    pub fn repeated(&self) -> usize {
        let answers = self.state.answers.lock().expect("lock");
        answers.values().filter(|n| **n > 1).count()
    }
}

async fn serve(mut stream: TcpStream, state: Arc<State>) {
    let mut buffer = Vec::new();
    loop {
        let Some(body) = read_request(&mut stream, &mut buffer).await else {
            return;
        };
        let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let prompt = request["messages"]
            .as_array()
            .and_then(|m| m.last())
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default()
            .to_string();
        tokio::time::sleep(state.latency).await;
        let fault = *state.fault.lock().expect("lock");
        if fault != Fault::None {
            if misbehave(&mut stream, fault).await {
                continue;
            }
            return;
        }
        let answered = {
            let mut answers = state.answers.lock().expect("lock");
            let given: usize = answers.values().sum();
            let allowed = given < state.answer_limit.load(Ordering::SeqCst);
            if allowed {
                *answers.entry(prompt.clone()).or_default() += 1;
            }
            allowed
        };
        if !answered {
            std::future::pending::<()>().await;
        }
        let text = (state.answer)(&prompt);
        let body = json!({
            "choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt.len() / 4, "completion_tokens": text.len() / 4},
        })
        .to_string();
        let reply = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        if stream.write_all(reply.as_bytes()).await.is_err() {
            return;
        }
    }
}

/// Meets a request with `fault`; whether the connection stays usable.
async fn misbehave(stream: &mut TcpStream, fault: Fault) -> bool {
    let ok = |content: &str| {
        json!({"choices": [{"message": {"role": "assistant", "content": content}}]}).to_string()
    };
    let (head, body) = match fault {
        Fault::None => return true,
        Fault::Hang => {
            std::future::pending::<()>().await;
            return false;
        }
        Fault::Reset => return false,
        Fault::Truncated => {
            let body = ok("OPTIMAL");
            let reply = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{}",
                body.len() + 100,
                &body[..body.len() / 2]
            );
            let _ = stream.write_all(reply.as_bytes()).await;
            return false;
        }
        Fault::Status(status) => (
            format!(
                "HTTP/1.1 {status} Fault\r\n{}",
                if status == 429 { "retry-after: 1\r\n" } else { "" }
            ),
            json!({"error": {"message": "injected fault", "code": status}}).to_string(),
        ),
        Fault::WrongSchema => ("HTTP/1.1 200 OK\r\n".into(), json!({"result": "OPTIMAL"}).to_string()),
        Fault::EmptyChoices => ("HTTP/1.1 200 OK\r\n".into(), json!({"choices": []}).to_string()),
        Fault::Huge => {
            // Built once and written as it is: many clients may be asking at once.
            static HUGE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
            let body = HUGE.get_or_init(|| ok(&"OPTIMAL ".repeat(20 << 17)));
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                body.len()
            );
            return stream.write_all(head.as_bytes()).await.is_ok()
                && stream.write_all(body.as_bytes()).await.is_ok();
        }
        Fault::Redirect => (
            "HTTP/1.1 307 Temporary Redirect\r\nlocation: http://llm.invalid/v1/chat/completions\r\n"
                .into(),
            String::new(),
        ),
    };
    let reply = format!(
        "{head}content-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(reply.as_bytes()).await.is_ok()
}

/// Reads one request from a keep-alive connection; `None` at its end.
async fn read_request(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> Option<Vec<u8>> {
    loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buffer[..end]).to_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            while buffer.len() < end + 4 + length {
                let mut chunk = [0u8; 65536];
                let n = stream.read(&mut chunk).await.ok()?;
                if n == 0 {
                    return None;
                }
                buffer.extend_from_slice(&chunk[..n]);
            }
            let body = buffer[end + 4..end + 4 + length].to_vec();
            buffer.drain(..end + 4 + length);
            return Some(body);
        }
        let mut chunk = [0u8; 65536];
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
}

/// The text after the last `start` marker, up to `end` (or the end).
pub fn last_between<'a>(text: &'a str, start: &str, end: &str) -> &'a str {
    let from = text.rfind(start).map_or(0, |i| i + start.len());
    let rest = &text[from..];
    rest.find(end).map_or(rest, |i| &rest[..i]).trim()
}

fn answer(prompt: &str) -> String {
    if prompt.contains("--- START OF REPORT ---") {
        let report = last_between(prompt, "--- START OF REPORT ---", "--- END OF REPORT ---");
        let mut section = "FINAL_REPORT_NO_SECTION".to_string();
        let mut lines = vec!["Here are the sentences:".to_string()];
        for line in report.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let (header, text) = match line.split_once(':') {
                Some((h, t)) if h.chars().all(|c| c.is_ascii_uppercase() || c == ' ') => {
                    (Some(h), t.trim())
                }
                _ => (None, line),
            };
            if let Some(header) = header {
                section = header.trim().replace(' ', "_");
            }
            if text.is_empty() || text == "FINAL REPORT" {
                continue;
            }
            let kind = match section.as_str() {
                "INDICATION" | "HISTORY" | "CLINICAL_HISTORY" => "INDICATION",
                "FINDINGS" => "FINDINGS",
                "IMPRESSION" => "IMPRESSION",
                "COMPARISON" => "IGNORE",
                _ => "EXAM_TECHNIQUE",
            };
            lines.push(format!(
                "[S{:02}] {section}({kind}) - merge with []: {text}",
                lines.len()
            ));
        }
        return lines.join("\n");
    }
    if prompt.contains("Output JSON-List:") {
        let sentences = last_between(prompt, "Sentence(s):", "Output JSON-List:");
        if sentences.contains("GARBLE") {
            return "I am sorry, I cannot help with that.".into();
        }
        let observation = json!([{
            "name": sentences.trim_end_matches('.'),
            "entity": sentences.split_whitespace().last().unwrap_or("finding").trim_end_matches('.'),
            "probability": if sentences.starts_with("No ") { "negative" } else { "positive" },
            "change": null,
            "summary_sentence": sentences,
            "change_sentence": null,
            "regions": [],
            "modifiers": [],
        }]);
        return format!("```json\n{observation:#}\n```");
    }
    if prompt.contains("**Output JSON:**") {
        let indication = last_between(prompt, "INDICATION:", "FINDINGS:");
        return json!({
            "patient_info": null,
            "indication": indication,
            "evaluation": "Evaluate for acute process.",
            "indication_summary": indication,
            "associated_findings": ["S03"],
            "answer_for_indication": "Evaluation for acute process is negative.",
        })
        .to_string();
    }
    "unexpected prompt".into()
}
