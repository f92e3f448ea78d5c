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

/// The lines of a Rust block that say something: not blank, not hidden from the
/// rendered page (`# `), not a `use` (the example has its own), trimmed.
fn telling_lines(text: &str) -> Vec<&str> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && *l != "#" && !l.starts_with("# ") && !l.starts_with("use "))
        .filter(|l| !l.starts_with("//"))
        .collect()
}

/// Every Rust block of `document` (but those fenced as plain `rust`, which rustdoc
/// runs as doctests), as its telling lines.
fn rust_blocks(document: &str) -> Vec<(String, Vec<String>)> {
    let text = std::fs::read_to_string(document).unwrap();
    let mut blocks = Vec::new();
    let mut rest = text.as_str();
    while let Some(start) = rest.find("```rust") {
        let fence_end = start + rest[start..].find('\n').unwrap();
        let fence = &rest[start + 3..fence_end];
        let body_end = fence_end + rest[fence_end..].find("\n```").unwrap();
        if fence != "rust" {
            let body = &rest[fence_end + 1..body_end];
            blocks.push((
                fence.to_owned(),
                telling_lines(body).into_iter().map(str::to_owned).collect(),
            ));
        }
        rest = &rest[body_end + 4..];
    }
    blocks
}

/// CLIENTS.md's Rust blocks and the README's blocks that rustdoc only compiles
/// (`no_run`, `ignore`) are in an example the e2e tests run against a real server,
/// word for word: `first_session.rs` (the README's session) or `doc_snippets.rs`.
#[test]
fn every_rust_block_of_the_client_docs_is_in_an_example_that_runs() {
    let root = env!("CARGO_MANIFEST_DIR");
    let examples: Vec<String> = ["first_session", "doc_snippets"]
        .iter()
        .map(|name| std::fs::read_to_string(format!("{root}/examples/{name}.rs")).unwrap())
        .collect();
    let mut checked = 0;
    for document in [format!("{root}/README.md"), format!("{root}/../CLIENTS.md")] {
        for (fence, lines) in rust_blocks(&document) {
            let found = examples.iter().any(|example| {
                let example = telling_lines(example);
                example
                    .windows(lines.len())
                    .any(|window| window.iter().zip(&lines).all(|(a, b)| a == b))
            });
            assert!(
                found,
                "a ```{fence} block of {document} is in no example that runs:\n{}",
                lines.join("\n")
            );
            checked += 1;
        }
    }
    assert!(checked >= 5, "found {checked} blocks");
}
