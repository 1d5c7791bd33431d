//! The README's quick start: this checkout, scoped to `fixtures/sample`, as a source.

use std::path::Path;

use crate::support::TestEnv;

#[test]
fn the_checkout_scoped_to_the_sample_fixtures() {
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR"));
    assert!(
        checkout.join(".git").exists(),
        "{} is not a git checkout: the quick start indexes the checkout itself",
        checkout.display()
    );
    let env = TestEnv::new();
    let checkout = checkout.to_str().unwrap();
    let added = env.json(&[
        "source",
        "add",
        checkout,
        "--path",
        "fixtures/sample",
        "--name",
        "sample",
    ]);
    assert_eq!(added["path"], "fixtures/sample");
    let mut scan = env.json(&["source", "scan", "sample"]);
    scan["commit"] = "<commit>".into();
    insta::assert_json_snapshot!("sample_scan", scan);
}
