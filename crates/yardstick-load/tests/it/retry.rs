//! Refusals and retries: a server that answers 429 (with or without `Retry-After`) before it
//! serves. Without a retry policy the refusal is the request's failure, its `Retry-After` kept;
//! with one, the client waits as told (or backs off) and the record keeps every refusal, its
//! latencies counted from when the request was scheduled.

use std::io::Write;
use std::net::TcpListener;
use std::time::{Duration, Instant};

use yardstick_load::plan::{Lengths, PlannedRequest};
use yardstick_load::{Api, Client, ClientConfig, Clock, ErrorClass, RetryPolicy};

use crate::compat::read_request;

const OK: &str = r#"{"choices":[{"text":" 4"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}"#;

/// Answers one request per connection: `refusals` times 429 with the `Retry-After` given (none
/// for `None`), then 200.
fn serve(refusals: usize, retry_after: Option<&'static str>) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for i in 0..=refusals {
            let (mut s, _) = l.accept().unwrap();
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            read_request(&mut s);
            let (status, body, extra) = if i < refusals {
                (
                    "429 Too Many Requests",
                    r#"{"error":{"message":"busy"}}"#,
                    retry_after
                        .map(|v| format!("Retry-After: {v}\r\n"))
                        .unwrap_or_default(),
                )
            } else {
                ("200 OK", OK, String::new())
            };
            let head = format!(
                "HTTP/1.1 {status}\r\nContent-Type: application/json\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            s.write_all(head.as_bytes()).unwrap();
            s.write_all(body.as_bytes()).unwrap();
            s.flush().unwrap();
        }
    });
    format!("http://{addr}")
}

fn client(url: &str, retry: Option<RetryPolicy>) -> Client {
    let cfg = ClientConfig {
        url: url.to_string(),
        api: Api::Completions,
        stream: false,
        request_timeout: Duration::from_secs(10),
        bearer_env: None,
        max_idle: 1,
        ca_cert: None,
        retry,
    };
    Client::new(&cfg, Clock::new(), "r").unwrap()
}

fn plan() -> PlannedRequest {
    PlannedRequest {
        index: 0,
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

#[tokio::test]
async fn without_a_policy_a_refusal_is_the_failure_and_keeps_its_retry_after() {
    let url = serve(1, Some("7"));
    let rec = client(&url, None)
        .execute(&plan(), Instant::now(), false)
        .await;
    assert_eq!(rec.status, Some(429));
    assert_eq!(rec.error, Some(ErrorClass::Http4xx));
    assert_eq!(rec.retry_after_s, Some(7.0));
    assert!(rec.retries.is_empty());
    assert_eq!(rec.attempts(), 1);
}

#[tokio::test]
async fn a_policy_waits_what_retry_after_says_and_latency_counts_the_wait() {
    let url = serve(2, Some("1"));
    let scheduled = Instant::now();
    let rec = client(&url, Some(RetryPolicy::default()))
        .execute(&plan(), scheduled, false)
        .await;
    assert!(rec.ok(), "{:?}", rec.error_message);
    assert_eq!(rec.status, Some(200));
    assert_eq!(rec.attempts(), 3);
    for r in &rec.retries {
        assert_eq!(
            (r.status, r.retry_after_s, r.waited_ms),
            (429, Some(1.0), 1000.0)
        );
    }
    // Two one-second waits are in the latency the user saw; the client's own queue is the first
    // attempt's.
    let e2e = rec.e2e_ms().unwrap();
    assert!(e2e >= 2000.0, "{e2e}");
    assert!(rec.client_queue_ms().unwrap() < 1000.0);
    assert!(scheduled.elapsed() >= Duration::from_secs(2));
}

#[tokio::test]
async fn ignoring_retry_after_backs_off_exponentially_and_gives_up_after_max_attempts() {
    let url = serve(5, Some("30"));
    let policy = RetryPolicy {
        max_attempts: 3,
        honour_retry_after: false,
        backoff: Duration::from_millis(40),
        ..RetryPolicy::default()
    };
    let rec = client(&url, Some(policy))
        .execute(&plan(), Instant::now(), false)
        .await;
    // Three attempts, all refused: the last refusal is the failure.
    assert_eq!(rec.status, Some(429));
    assert!(!rec.ok());
    assert_eq!(rec.attempts(), 3);
    let waits: Vec<f64> = rec.retries.iter().map(|r| r.waited_ms).collect();
    // 40 ms then 80 ms, each with a jitter of up to half: far below the 30 s it was told.
    assert!((20.0..40.0).contains(&waits[0]), "{waits:?}");
    assert!((40.0..80.0).contains(&waits[1]), "{waits:?}");
}

#[test]
fn retry_after_is_seconds_or_an_http_date() {
    use std::time::UNIX_EPOCH;
    use yardstick_load::client::parse_retry_after;
    let now = UNIX_EPOCH + Duration::from_secs(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
    assert_eq!(parse_retry_after(" 120 ", now), Some(120.0));
    assert_eq!(parse_retry_after("1.5", now), Some(1.5));
    assert_eq!(
        parse_retry_after("Sun, 06 Nov 1994 08:50:07 GMT", now),
        Some(30.0)
    );
    // A date past is "now".
    assert_eq!(
        parse_retry_after("Sun, 06 Nov 1994 08:49:00 GMT", now),
        Some(0.0)
    );
    assert_eq!(parse_retry_after("-3", now), None);
    assert_eq!(parse_retry_after("soon", now), None);
}
