//! JSON Schemas (draft 2020-12) of the two message sets, generated from the message types.
//!
//! [`client_message`] describes every message a client may send, [`server_message`]
//! every message the server sends. They are derived (with `schemars`) from the same types
//! and serde attributes the codec uses, so they say what the codec writes and accepts:
//! each message is an object whose `type` names it, with its fields beside it; optional
//! fields may be absent or `null`; enum values are their snake_case names; fields the
//! receiver does not know are allowed. Integers carry `minimum` and `maximum` for their
//! Rust type, and a `format` (`uint8`, `uint16`, `uint32`, `uint64`) that is only a hint
//! for code generators.
//!
//! `protocol/schema/` holds the generated files for authors in other languages; a test
//! checks they match these functions and that every golden vector validates against its
//! direction's schema. A few rules of strict decoding (`PROTOCOL.md`, "Strict decoding")
//! are not expressible in JSON Schema and are the codec's alone: a key given twice,
//! anything after the object, and an integer written with a fraction or an exponent
//! (`1.0`), which JSON Schema counts as an integer.

use schemars::Schema;
use schemars::generate::SchemaSettings;
use schemars::transform::RecursiveTransform;
use serde_json::Value;

use crate::message::{ClientMessage, ServerMessage};

/// The JSON Schema of every message a client may send.
///
/// Serializing it (with serde) writes its keywords in a readable order (`$schema`,
/// `title`, `description`, …, `$defs` last); converting it to a `serde_json::Value` first
/// would sort them.
pub fn client_message() -> Schema {
    generator().into_root_schema_for::<ClientMessage>()
}

/// The JSON Schema of every message the server sends; see [`client_message`].
pub fn server_message() -> Schema {
    generator().into_root_schema_for::<ServerMessage>()
}

fn generator() -> schemars::SchemaGenerator {
    SchemaSettings::draft2020_12()
        // What a receiver accepts: optional fields may be absent or `null`, defaulted
        // fields may be absent. What the codec writes is a subset of it.
        .for_deserialize()
        .with_transform(RecursiveTransform(bound_integers))
        .with_transform(RecursiveTransform(plain_descriptions))
        .into_generator()
}

/// Gives `u32` and `u64` fields the `maximum` schemars leaves out (it writes one for the
/// narrower types only), so that, say, a `seq` of 2^32 is refused by the schema as it is
/// by the codec.
fn bound_integers(schema: &mut Schema) {
    let maximum = match schema.get("format").and_then(Value::as_str) {
        Some("uint32") => Value::from(u32::MAX),
        Some("uint64") => Value::from(u64::MAX),
        _ => return,
    };
    if schema.get("maximum").is_none() {
        schema.insert("maximum".into(), maximum);
    }
}

/// Turns rustdoc links in descriptions ("[`Points`]", "[`X`](crate::X)") into plain code
/// spans: their targets mean nothing outside the Rust crate.
fn plain_descriptions(schema: &mut Schema) {
    if let Some(Value::String(text)) = schema.get_mut("description") {
        *text = without_doc_links(text);
    }
}

fn without_doc_links(text: &str) -> String {
    let mut plain = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("[`") {
        plain.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let Some(end) = after.find("`]") else {
            plain.push_str(&rest[start..]);
            return plain;
        };
        // The code span, backticks included.
        plain.push_str(&after[..end + 1]);
        rest = &after[end + 2..];
        if rest.starts_with('(')
            && let Some(close) = rest.find(')')
        {
            rest = &rest[close + 1..];
        }
    }
    plain.push_str(rest);
    plain
}

#[cfg(test)]
mod tests {
    use super::without_doc_links;

    #[test]
    fn doc_links_become_code_spans() {
        assert_eq!(
            without_doc_links("carries [`BoardGeometry`] and [`Points`]."),
            "carries `BoardGeometry` and `Points`."
        );
        assert_eq!(
            without_doc_links("larger than [`MAX`](crate::MAX)."),
            "larger than `MAX`."
        );
        assert_eq!(without_doc_links("a list [`a`, `b`"), "a list [`a`, `b`");
        assert_eq!(without_doc_links("[1, 2] `x`"), "[1, 2] `x`");
    }
}
