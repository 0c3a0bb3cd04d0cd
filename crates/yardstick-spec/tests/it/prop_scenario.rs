//! Property tests: the scenario grammar (`D(100,100)`, `N(480,240)/(300,150)`, ...) parses any
//! string into a scenario or a clear error, never a panic, and what it accepts prints back to a
//! string that parses to the same scenario.

use crate::props;

use std::cell::Cell;
use std::str::FromStr;

use proptest::prelude::*;
use yardstick_spec::scenario::Scenario;

#[test]
fn scenario_strings_parse_or_fail_clearly() {
    let num = "-?[0-9]{1,25}(\\.[0-9]{0,5})?|1e308|NaN|inf|-0";
    let shaped = (
        "[DNUEX]|[a-z]{1,2}",
        prop::collection::vec(num, 0..4),
        prop::option::of(prop::collection::vec(num, 0..3)),
    )
        .prop_map(|(k, a, b)| {
            let mut s = format!("{k}({})", a.join(","));
            if let Some(b) = b {
                s.push_str(&format!("/({})", b.join(",")));
            }
            s
        });
    let inputs = prop_oneof![
        shaped,
        props::mutations("N(480,240)/(300,150)".to_string()),
        "\\PC{0,30}",
    ];
    let cases = Cell::new(0usize);
    let accepted = Cell::new(0usize);
    props::runner()
        .run(&inputs, |s| {
            cases.set(cases.get() + 1);
            match Scenario::from_str(&s) {
                Ok(sc) => {
                    accepted.set(accepted.get() + 1);
                    let printed = sc.to_string();
                    let again = Scenario::from_str(&printed);
                    prop_assert!(again.is_ok(), "{s:?} -> {printed:?} does not parse");
                    prop_assert_eq!(again.unwrap().to_string(), printed);
                }
                Err(e) => prop_assert!(!e.to_string().is_empty()),
            }
            Ok(())
        })
        .unwrap();
    assert!(
        accepted.get() > 0,
        "no generated scenario was valid: the generator is broken"
    );
    assert!(Scenario::from_str("D(100,100)").is_ok());
    props::report("scenario grammar", cases.get());
}
