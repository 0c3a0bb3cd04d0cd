//! Property tests: the SSE parser and the dataset reader take hostile bytes without a panic or
//! a hang, and the SSE parser's events do not depend on how the stream was cut into reads.

use crate::props;

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
    // Bytes, not text: a file that is not UTF-8 must be refused naming its line too.
    let inputs = prop_oneof![
        props::mutations(valid).prop_map(String::into_bytes),
        prop::collection::vec(any::<u8>(), 0..400),
        // Valid lines, then one with a byte that cannot start a UTF-8 character.
        (1usize..4, any::<u8>()).prop_map(|(good, b)| {
            let mut v = "{\"prompt\": \"a\"}\n".repeat(good).into_bytes();
            v.extend([b'{', 0x80 | (b & 0x3f), b'}', b'\n']);
            v
        }),
        "(\\{\"prompt\": (\"[^\"]{0,20}\"|[0-9e+-]{1,30}|null|\\[\\]), \"output_tokens\": (-?[0-9]{1,25}|1e999|\"x\"|null)\\}\n){1,5}"
            .prop_map(String::into_bytes),
        Just("[".repeat(10_000).into_bytes()),
        Just("{\"conversations\": ".repeat(3000).into_bytes()),
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
                if e.to_string().contains("UTF-8") {
                    prop_assert!(e.to_string().contains("line "), "{e}");
                }
            }
            Ok(())
        })
        .unwrap();
    props::report("dataset JSONL", cases.get());
}

/// The planner draws token counts from any scenario the grammar accepts: every draw is within
/// `1..=MAX_TOKENS` (a normal tail once asked for prompts past it, and building one overflowed),
/// and a scenario past the limit does not parse at all.
#[test]
fn planned_lengths_stay_within_what_a_scenario_may_ask_for() {
    use yardstick_load::plan::sample_lengths;
    use yardstick_spec::scenario::{MAX_TOKENS, Scenario};
    use yardstick_timing::rng::Rng;
    let max = MAX_TOKENS as f64;
    let count = prop_oneof![
        4 => (0.0..=max).prop_map(|v| v.round()),
        1 => prop::sample::select(vec![0.0, 1.0, max, max + 1.0, 1e300, f64::MAX]),
    ];
    let scenarios = prop_oneof![
        (count.clone(), count.clone(), count.clone(), count.clone())
            .prop_map(|(a, b, c, d)| format!("N({a},{b})/({c},{d})")),
        (count.clone(), count.clone(), count.clone(), count.clone())
            .prop_map(|(a, b, c, d)| format!("U({a},{b})/({c},{d})")),
        (count.clone(), count.clone()).prop_map(|(a, b)| format!("D({a},{b})")),
        count.prop_map(|a| format!("E({a})")),
    ];
    let cases = Cell::new(0usize);
    props::runner()
        .run(&(scenarios, any::<u64>()), |(text, seed)| {
            cases.set(cases.get() + 1);
            let Ok(sc) = text.parse::<Scenario>() else {
                return Ok(());
            };
            for i in 0..16 {
                let l = sample_lengths(&sc, &mut Rng::new(seed, i));
                prop_assert!(l.input <= MAX_TOKENS, "{text}: {l:?}");
                if let Some(o) = l.output {
                    prop_assert!(o <= MAX_TOKENS, "{text}: {l:?}");
                }
                if matches!(sc, Scenario::Normal { .. }) {
                    prop_assert!(l.input >= 1, "{text}: {l:?}");
                }
            }
            Ok(())
        })
        .unwrap();
    props::report("planner token counts", cases.get());
}
