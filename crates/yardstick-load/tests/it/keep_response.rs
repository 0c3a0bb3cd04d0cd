//! `Client::keeping_responses`: the text and the whole body survive `execute` (accuracy evals
//! and perplexity read them); without it nothing is kept.

use std::io::Write;
use std::net::TcpListener;
use std::time::{Duration, Instant};

use yardstick_load::plan::{Lengths, PlannedRequest};
use yardstick_load::{Api, Client, ClientConfig, Clock, TokenSource};

use crate::compat::read_request;

/// Answers `n` requests on one keep-alive connection with `body` (`sse`: as an event stream).
fn serve(n: usize, body: &'static str, sse: bool) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        for _ in 0..n {
            read_request(&mut s);
            let ct = if sse {
                "text/event-stream"
            } else {
                "application/json"
            };
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: {ct}\r\nContent-Length: {}\r\n\r\n",
                body.len()
            );
            s.write_all(head.as_bytes()).unwrap();
            s.write_all(body.as_bytes()).unwrap();
            s.flush().unwrap();
        }
    });
    format!("http://{addr}")
}

fn client(url: &str, stream: bool) -> Client {
    let cfg = ClientConfig {
        url: url.to_string(),
        api: Api::Completions,
        stream,
        request_timeout: Duration::from_secs(10),
        bearer_env: None,
        max_idle: 1,
        ca_cert: None,
        retry: None,
    };
    Client::new(&cfg, Clock::new(), "k").unwrap()
}

fn plan(i: u64) -> PlannedRequest {
    PlannedRequest {
        index: i,
        lengths: Lengths {
            input: 1,
            output: None,
        },
        body: bytes::Bytes::from_static(br#"{"model":"m","prompt":"2+2="}"#),
        kind: None,
        image_bytes: None,
        class: None,
    }
}

const JSON: &str = r#"{"choices":[{"text":" 4","logprobs":{"token_logprobs":[null,-0.5]}}],"usage":{"prompt_tokens":3,"completion_tokens":1}}"#;

#[tokio::test]
async fn kept_body_and_text_survive_execute_and_the_connection_is_reused() {
    let url = serve(2, JSON, false);
    let c = client(&url, false).keeping_responses();
    for i in 0..2 {
        let rec = c.execute(&plan(i), Instant::now(), false).await;
        assert!(rec.ok(), "{:?}", rec.error_message);
        assert_eq!(rec.content_text.as_deref(), Some(" 4"));
        assert_eq!(rec.response_body.as_deref(), Some(JSON.as_bytes()));
        assert_eq!(rec.output_tokens, Some(1));
        assert_eq!(rec.output_tokens_source, Some(TokenSource::ServerUsage));
    }
}

#[tokio::test]
async fn streamed_text_is_kept_without_a_body() {
    let sse = "data: {\"choices\":[{\"text\":\"\"}]}\n\ndata: {\"choices\":[{\"text\":\"ab\"}]}\n\ndata: {\"choices\":[{\"text\":\"c\"}]}\n\ndata: [DONE]\n\n";
    let url = serve(1, sse, true);
    let rec = client(&url, true)
        .keeping_responses()
        .execute(&plan(0), Instant::now(), false)
        .await;
    assert!(rec.ok(), "{:?}", rec.error_message);
    assert_eq!(rec.content_text.as_deref(), Some("abc"));
    assert!(rec.response_body.is_none());
    assert_eq!(rec.content_events, 2);
}

#[test]
fn request_ids_are_uuid_shaped_and_distinct() {
    use yardstick_load::client::request_id;
    let a = request_id("ys1-p0", 7);
    assert_eq!(a.len(), 36);
    let groups: Vec<&str> = a.split('-').collect();
    assert_eq!(
        groups.iter().map(|g| g.len()).collect::<Vec<_>>(),
        [8, 4, 4, 4, 12]
    );
    assert!(a.chars().all(|c| c == '-' || c.is_ascii_hexdigit()));
    assert!(groups[2].starts_with('8') && "89ab".contains(&groups[3][..1]));
    assert_ne!(a, request_id("ys1-p0", 8));
    assert_ne!(a, request_id("ys1-p1", 7));
    assert_eq!(a, request_id("ys1-p0", 7));
}

#[tokio::test]
async fn nothing_is_kept_by_default() {
    let url = serve(1, JSON, false);
    let rec = client(&url, false)
        .execute(&plan(0), Instant::now(), false)
        .await;
    assert!(rec.ok(), "{:?}", rec.error_message);
    assert!(rec.content_text.is_none());
    assert!(rec.response_body.is_none());
}
