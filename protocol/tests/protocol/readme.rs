//! The README's first example is `examples/first_session.rs`, word for word
//! (the e2e tests run that example against a real server until its series
//! ends, so the README's code is known to finish).

#[test]
fn the_readme_session_is_the_first_session_example() {
    let root = env!("CARGO_MANIFEST_DIR");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
    let example = std::fs::read_to_string(format!("{root}/examples/first_session.rs")).unwrap();
    let opening = "## A session in a few lines";
    let section = &readme[readme.find(opening).expect("the README has the section")..];
    let start = section.find("```rust,no_run\n").expect("a Rust block") + "```rust,no_run\n".len();
    let block = &section[start..];
    let block = &block[..block.find("```\n").expect("the block ends")];
    assert_eq!(
        block, example,
        "protocol/README.md's session differs from examples/first_session.rs: keep them the same"
    );
}
