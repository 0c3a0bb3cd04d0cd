//! docs/metrics.md's catalogue section is the metric catalogue (`yardstick metrics`), so the two
//! never drift. `YARDSTICK_UPDATE_DOCS=1 cargo test -p yardstick-spec --test it catalogue::`
//! rewrites the section from the catalogue.

use yardstick_spec::metrics::markdown_table;

const START: &str =
    "<!-- catalogue:start (generated from crates/yardstick-spec/src/metrics.rs) -->\n";
const END: &str = "<!-- catalogue:end -->";

#[test]
fn docs_metrics_md_lists_the_catalogue() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/metrics.md");
    let doc = std::fs::read_to_string(path).unwrap();
    let (Some(a), Some(z)) = (doc.find(START), doc.find(END)) else {
        panic!("docs/metrics.md has no catalogue section ({START:?} ... {END:?})");
    };
    let have = &doc[a + START.len()..z];
    let want = markdown_table();
    if have != want && std::env::var("YARDSTICK_UPDATE_DOCS").as_deref() == Ok("1") {
        let new = format!("{}{START}{want}{}", &doc[..a], &doc[z..]);
        std::fs::write(path, new).unwrap();
        return;
    }
    assert_eq!(
        have, want,
        "docs/metrics.md's catalogue differs from the metric catalogue; rerun with \
         YARDSTICK_UPDATE_DOCS=1 to rewrite it"
    );
}
