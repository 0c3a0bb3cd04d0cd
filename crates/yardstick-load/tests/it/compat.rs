//! SSE and HTTP compatibility: tiny raw TCP servers in the test send nasty but legal framing
//! (and some broken responses); the real client must time and classify them correctly.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use yardstick_load::plan::{Lengths, PlannedRequest};
use yardstick_load::{
    Api, Client, ClientConfig, Clock, ErrorClass, PromptTokenSource, RequestRecord, TokenSource,
};

/// Reads one request (head and Content-Length body).
pub(crate) fn read_request(s: &mut TcpStream) -> String {
    let mut buf = Vec::new();
    let mut b = [0u8; 4096];
    loop {
        let n = s.read(&mut b).unwrap();
        assert!(n > 0, "client closed early");
        buf.extend_from_slice(&b[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..i]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map(|v| v.trim().parse().unwrap())
                .unwrap_or(0);
            while buf.len() < i + 4 + len {
                let n = s.read(&mut b).unwrap();
                buf.extend_from_slice(&b[..n]);
            }
            return String::from_utf8_lossy(&buf).into_owned();
        }
    }
}

/// Serves one connection with `respond` on a thread; returns the base URL.
fn serve_once(respond: impl FnOnce(&mut TcpStream, String) + Send + 'static) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        s.set_nodelay(true).unwrap();
        let req = read_request(&mut s);
        respond(&mut s, req);
    });
    format!("http://{addr}")
}

fn write_chunk(s: &mut TcpStream, piece: &[u8]) {
    let mut out = format!("{:x}\r\n", piece.len()).into_bytes();
    out.extend_from_slice(piece);
    out.extend_from_slice(b"\r\n");
    s.write_all(&out).unwrap();
    s.flush().unwrap();
}

const SSE_HEAD: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";

fn client(url: &str, api: Api, stream: bool, timeout: Duration) -> Client {
    let cfg = ClientConfig {
        url: url.to_string(),
        api,
        stream,
        request_timeout: timeout,
        bearer_env: None,
        max_idle: 1,
        ca_cert: None,
        retry: None,
    };
    Client::new(&cfg, Clock::new(), "t").unwrap()
}

fn plan() -> PlannedRequest {
    PlannedRequest {
        index: 0,
        lengths: Lengths {
            input: 3,
            output: Some(3),
        },
        body: bytes::Bytes::from_static(
            br#"{"model":"m","messages":[{"role":"user","content":"a b c"}]}"#,
        ),
        kind: None,
        image_bytes: None,
        class: None,
    }
}

async fn run(url: &str, stream: bool, timeout: Duration) -> (RequestRecord, Instant) {
    let c = client(url, Api::Chat, stream, timeout);
    let scheduled = Instant::now();
    let rec = c.execute(&plan(), scheduled, false).await;
    (rec, scheduled)
}

fn ms(a: u64, b: u64) -> f64 {
    (b as f64 - a as f64) / 1e6
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nasty_but_legal_stream_is_timed_from_the_first_content() {
    let url = serve_once(|s, req| {
        let id = yardstick_load::client::request_id("t", 0);
        assert!(req.contains(&format!("x-request-id: {id}")), "{req}");
        assert_eq!(id.len(), 36);
        s.write_all(SSE_HEAD).unwrap();
        // Keep-alive comment and a role-only chunk right away: neither is a token.
        write_chunk(s, b": keep-alive\r\n\r\n");
        write_chunk(
            s,
            b"data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\r\n\r\n",
        );
        std::thread::sleep(Duration::from_millis(80));
        // First content is reasoning, split mid-line, mid-CRLF and mid-field across reads.
        write_chunk(s, b"da");
        std::thread::sleep(Duration::from_millis(5));
        write_chunk(
            s,
            b"ta: {\"choices\":[{\"delta\":{\"reasoning_content\":\"hm",
        );
        std::thread::sleep(Duration::from_millis(5));
        write_chunk(s, b"m\"}}]}\r");
        std::thread::sleep(Duration::from_millis(5));
        write_chunk(s, b"\n\r\n");
        std::thread::sleep(Duration::from_millis(30));
        write_chunk(
            s,
            b"data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n: ping\n\n",
        );
        std::thread::sleep(Duration::from_millis(30));
        write_chunk(
            s,
            b"data: {\"choices\":[{\"delta\":{\"content\":\"!\"},\"finish_reason\":\"stop\"}]}\n\n",
        );
        // Usage-only last chunk, then [DONE], in one read.
        write_chunk(s, b"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":3}}\n\ndata: [DONE]\n\n");
        s.write_all(b"0\r\n\r\n").unwrap();
    });
    let (r, _) = run(&url, true, Duration::from_secs(10)).await;
    assert!(r.ok(), "{:?}", r.error_message);
    assert_eq!(r.status, Some(200));
    assert_eq!(r.content_events, 3);
    assert_eq!((r.prompt_tokens, r.output_tokens), (Some(3), Some(3)));
    assert_eq!(r.output_tokens_source, Some(TokenSource::ServerUsage));
    let ttft = r.ttft_ms().unwrap();
    // 80 ms of sleeps plus the split reads; a role-only chunk counted as TTFT would give ~0.
    assert!((88.0..400.0).contains(&ttft), "ttft {ttft}");
    let itl: Vec<f64> = r.itl_ms().collect();
    assert_eq!(itl.len(), 2);
    assert!(itl.iter().all(|g| (25.0..300.0).contains(g)), "{itl:?}");
    let e2e = r.e2e_ms().unwrap();
    assert!((e2e - ttft - itl.iter().sum::<f64>()).abs() < 1e-6);
    assert!((r.tpot_ms().unwrap() - (e2e - ttft) / 2.0).abs() < 1e-9);
    assert!(r.first_byte_ns.unwrap() < r.first_content_ns.unwrap());
    assert!(ms(r.scheduled_ns, r.sent_ns.unwrap()) >= 0.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_delimited_body_split_at_every_few_bytes() {
    // No chunked encoding: the body runs to EOF, and every few bytes are their own TCP write.
    let url = serve_once(|s, _| {
        s.write_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n",
        )
        .unwrap();
        let body = b"data: {\"choices\":[{\"text\":\"a\"}]}\r\n\r\ndata: {\"choices\":[{\"text\":\"b\"}]}\r\n\r\n\
data: {\"choices\":[{\"text\":\"c\"}]}\r\n\r\n";
        for piece in body.chunks(7) {
            s.write_all(piece).unwrap();
            s.flush().unwrap();
            std::thread::sleep(Duration::from_millis(2));
        }
        // No [DONE], no usage: the stream simply ends.
    });
    let c = client(&url, Api::Completions, true, Duration::from_secs(10));
    let r = c.execute(&plan(), Instant::now(), false).await;
    assert!(r.ok(), "{:?}", r.error_message);
    assert_eq!(r.content_events, 3);
    assert_eq!(r.output_tokens, Some(3));
    assert_eq!(r.output_tokens_source, Some(TokenSource::ContentEvents));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_responses_are_classified() {
    // A malformed event.
    let url = serve_once(|s, _| {
        s.write_all(SSE_HEAD).unwrap();
        write_chunk(
            s,
            b"data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n",
        );
        write_chunk(s, b"data: {\"choices\": [oops\n\n");
        write_chunk(s, b"data: [DONE]\n\n");
        s.write_all(b"0\r\n\r\n").unwrap();
    });
    let (r, _) = run(&url, true, Duration::from_secs(10)).await;
    assert_eq!(r.error, Some(ErrorClass::MalformedEvent));
    assert!(r.error_message.unwrap().contains("oops"));

    // The connection dies mid-stream.
    let url = serve_once(|s, _| {
        s.write_all(SSE_HEAD).unwrap();
        write_chunk(
            s,
            b"data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n",
        );
        write_chunk(s, b"data: {\"choi");
    });
    let (r, _) = run(&url, true, Duration::from_secs(10)).await;
    assert_eq!(
        r.error,
        Some(ErrorClass::StreamCut),
        "{:?}",
        r.error_message
    );
    assert_eq!(r.content_events, 1);

    // An error status with an OpenAI error body.
    let url = serve_once(|s, _| {
        let body = r#"{"error":{"message":"slow down","type":"rate_limit"}}"#;
        write!(
            s,
            "HTTP/1.1 429 Too Many Requests\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
    });
    let (r, _) = run(&url, true, Duration::from_secs(10)).await;
    assert_eq!((r.error, r.status), (Some(ErrorClass::Http4xx), Some(429)));
    assert!(r.error_message.unwrap().contains("slow down"));

    // An error inside a 200 stream.
    let url = serve_once(|s, _| {
        s.write_all(SSE_HEAD).unwrap();
        write_chunk(s, b"data: {\"error\":{\"message\":\"engine died\"}}\n\n");
        s.write_all(b"0\r\n\r\n").unwrap();
    });
    let (r, _) = run(&url, true, Duration::from_secs(10)).await;
    assert_eq!(r.error, Some(ErrorClass::MalformedEvent));

    // A server that never answers.
    let url = serve_once(|_, _| std::thread::sleep(Duration::from_secs(3)));
    let (r, _) = run(&url, true, Duration::from_millis(300)).await;
    assert_eq!(r.error, Some(ErrorClass::Timeout));
    let took = ms(r.scheduled_ns, r.done_ns.unwrap());
    assert!((290.0..2500.0).contains(&took), "{took}");

    // Nobody listening.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (r, _) = run(
        &format!("http://127.0.0.1:{port}"),
        true,
        Duration::from_secs(5),
    )
    .await;
    assert_eq!(r.error, Some(ErrorClass::Connect));
    assert!(r.sent_ns.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_streaming_response_and_bearer_token() {
    // SAFETY: set before any thread of this test reads the environment.
    unsafe { std::env::set_var("YARDSTICK_TEST_TOKEN", "s3cret") };
    let (tx, rx) = std::sync::mpsc::channel();
    let url = serve_once(move |s, req| {
        tx.send(req).unwrap();
        std::thread::sleep(Duration::from_millis(40));
        let body = r#"{"choices":[{"message":{"role":"assistant","content":"hello you"}}],"usage":{"prompt_tokens":3,"completion_tokens":2}}"#;
        write!(
            s,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
    });
    let cfg = ClientConfig {
        url: format!("{url}/v1/"),
        api: Api::Chat,
        stream: false,
        request_timeout: Duration::from_secs(10),
        bearer_env: Some("YARDSTICK_TEST_TOKEN".into()),
        max_idle: 1,
        ca_cert: None,
        retry: None,
    };
    let c = Client::new(&cfg, Clock::new(), "t").unwrap();
    let r = c.execute(&plan(), Instant::now(), false).await;
    assert!(r.ok(), "{:?}", r.error_message);
    let req = rx.recv().unwrap();
    assert!(
        req.starts_with("POST /v1/chat/completions HTTP/1.1"),
        "{req}"
    );
    assert!(
        req.to_ascii_lowercase()
            .contains("authorization: bearer s3cret")
    );
    assert_eq!(r.ttft_ms(), None, "no TTFT without a stream");
    assert!(r.e2e_ms().unwrap() >= 40.0);
    assert_eq!(r.output_tokens, Some(2));
    assert_eq!(r.prompt_tokens_source, Some(PromptTokenSource::ServerUsage));
    // The token is in no record and in no debug output.
    assert!(
        !serde_json::to_string(&r.to_json())
            .unwrap()
            .contains("s3cret")
    );
    assert!(!format!("{cfg:?}").contains("s3cret"));
    let missing = ClientConfig {
        bearer_env: Some("YARDSTICK_TEST_TOKEN_UNSET".into()),
        ..cfg
    };
    let err = Client::new(&missing, Clock::new(), "t")
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("YARDSTICK_TEST_TOKEN_UNSET") && !err.contains("s3cret"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_streaming_reasoning_counts_as_content() {
    // A reasoning model's non-streamed answer: the reasoning is output too, as in a stream.
    for (field, reasoning) in [("reasoning_content", "let me think"), ("reasoning", "hmm")] {
        let body = format!(
            r#"{{"choices":[{{"message":{{"role":"assistant","{field}":"{reasoning}","content":"42"}}}}]}}"#
        );
        let url = serve_once(move |s, _| {
            write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            )
            .unwrap();
        });
        let (r, _) = run(&url, false, Duration::from_secs(10)).await;
        assert!(r.ok(), "{:?}", r.error_message);
        assert_eq!(
            r.content_bytes,
            (reasoning.len() + "42".len()) as u64,
            "{field}"
        );
        // No usage and no tokenizer: the prompt count is the plan's word count, and says so.
        assert_eq!(r.prompt_tokens, None);
        assert_eq!(r.prompt_tokens_source, Some(PromptTokenSource::PlanWords));
    }
}

#[cfg(feature = "tokenizer")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_tokenizer_counts_output_without_usage() {
    let vocab: serde_json::Map<String, serde_json::Value> = ["[UNK]", "red", "fox", "ran"]
        .iter()
        .enumerate()
        .map(|(i, w)| (w.to_string(), i.into()))
        .collect();
    let json = serde_json::json!({
        "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
        "normalizer": null, "pre_tokenizer": {"type": "Whitespace"}, "post_processor": null,
        "decoder": null, "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"}
    });
    let dir = std::env::temp_dir().join(format!("ys-compat-tok-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("tokenizer.json");
    std::fs::write(&path, json.to_string()).unwrap();
    let tok =
        std::sync::Arc::new(yardstick_load::tokenizer::LocalTokenizer::from_file(&path).unwrap());
    // Two content events carrying three tokens; no usage.
    let url = serve_once(|s, _| {
        s.write_all(SSE_HEAD).unwrap();
        write_chunk(
            s,
            b"data: {\"choices\":[{\"delta\":{\"content\":\"red fox\"}}]}\n\n",
        );
        write_chunk(
            s,
            b"data: {\"choices\":[{\"delta\":{\"content\":\" ran\"}}]}\n\ndata: [DONE]\n\n",
        );
        s.write_all(b"0\r\n\r\n").unwrap();
    });
    let c = client(&url, Api::Chat, true, Duration::from_secs(10)).with_tokenizer(tok);
    let r = c.execute(&plan(), Instant::now(), false).await;
    assert!(r.ok(), "{:?}", r.error_message);
    assert_eq!(r.content_events, 2);
    assert_eq!(
        (r.output_tokens, r.output_tokens_source),
        (Some(3), Some(TokenSource::Tokenizer))
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
