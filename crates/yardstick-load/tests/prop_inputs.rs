//! Property tests: the SSE parser and the dataset reader take hostile bytes without a panic or
//! a hang, and the SSE parser's events do not depend on how the stream was cut into reads.

#[path = "../../../testsupport/prop.rs"]
mod props;

use std::cell::Cell;

use proptest::prelude::*;
use yardstick_load::plan::load_dataset;
use yardstick_load::sse::SseParser;

fn events(chunks: &[&[u8]]) -> Vec<Vec<u8>> {
    let mut p = SseParser::new();
    let mut out = Vec::new();
    for c in chunks {
        p.feed(c, |e| out.push(e.to_vec()));
    }
    out
}

/// Cuts `bytes` at the given points.
fn cut<'a>(bytes: &'a [u8], points: &[usize]) -> Vec<&'a [u8]> {
    let mut ps: Vec<usize> = points.iter().map(|p| p % (bytes.len() + 1)).collect();
    ps.sort();
    let mut out = Vec::new();
    let mut last = 0;
    for p in ps {
        out.push(&bytes[last..p]);
        last = p;
    }
    out.push(&bytes[last..]);
    out
}

#[test]
fn sse_events_survive_any_cutting_and_hostile_bytes() {
    let cases = Cell::new(0usize);
    // Well-formed streams: payloads (no line breaks) as `data:` events with mixed line endings,
    // comments and other fields, cut anywhere: exactly the payloads come out, in order.
    let payload = "[^\r\n]{0,40}";
    let stream = (
        prop::collection::vec((payload, 0usize..3, prop::bool::ANY), 0..8),
        prop::collection::vec(any::<usize>(), 0..12),
    );
    props::runner()
        .run(&stream, |(events_in, cuts)| {
            cases.set(cases.get() + 1);
            let mut bytes = Vec::new();
            for (data, eol, comment) in &events_in {
                let eol = ["\n", "\r\n", "\r"][*eol];
                if *comment {
                    bytes.extend_from_slice(format!(": keep-alive{eol}event: x{eol}").as_bytes());
                }
                bytes.extend_from_slice(format!("data: {data}{eol}{eol}").as_bytes());
            }
            let got = events(&cut(&bytes, &cuts));
            let want: Vec<Vec<u8>> = events_in
                .iter()
                .map(|(d, _, _)| d.as_bytes().to_vec())
                .collect();
            prop_assert_eq!(got, want);
            Ok(())
        })
        .unwrap();
    props::report("SSE parser (well-formed, any cut)", cases.get());

    // Arbitrary bytes: no panic, and the same events whole or cut into reads.
    let cases = Cell::new(0usize);
    let noise = (
        prop::collection::vec(any::<u8>(), 0..600),
        prop::collection::vec(any::<usize>(), 0..12),
    );
    props::runner()
        .run(&noise, |(bytes, cuts)| {
            cases.set(cases.get() + 1);
            let whole = events(&[&bytes]);
            prop_assert_eq!(events(&cut(&bytes, &cuts)), whole.clone());
            prop_assert!(whole.iter().map(Vec::len).sum::<usize>() <= bytes.len());
            Ok(())
        })
        .unwrap();
    props::report("SSE parser (arbitrary bytes)", cases.get());
}

#[test]
fn dataset_files_give_an_item_list_or_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data.jsonl");
    let valid = "{\"prompt\": \"hello there\", \"output_tokens\": 8}\n{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"max_tokens\": 4}\n{\"text\": \"x\"}\n".to_string();
    std::fs::write(&path, &valid).unwrap();
    assert_eq!(
        load_dataset(&path).unwrap().len(),
        3,
        "the valid sample loads"
    );
    let inputs = prop_oneof![
        props::mutations(valid),
        prop::collection::vec(any::<u8>(), 0..400)
            .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
        "(\\{\"prompt\": (\"[^\"]{0,20}\"|[0-9e+-]{1,30}|null|\\[\\]), \"output_tokens\": (-?[0-9]{1,25}|1e999|\"x\"|null)\\}\n){1,5}",
        Just("[".repeat(10_000)),
        Just("{\"conversations\": ".repeat(3000)),
    ];
    let cases = Cell::new(0usize);
    props::runner()
        .run(&inputs, |text| {
            cases.set(cases.get() + 1);
            std::fs::write(&path, &text).unwrap();
            let p = path.clone();
            let r = props::within("load_dataset", 30, move || {
                load_dataset(&p).map(|v| v.len())
            });
            if let Err(e) = r {
                prop_assert!(!e.to_string().is_empty());
                prop_assert!(e.to_string().contains("data.jsonl"), "{e}");
            }
            Ok(())
        })
        .unwrap();
    props::report("dataset JSONL", cases.get());
}
