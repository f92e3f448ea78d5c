//! The JSON Schemas in `protocol/schema/`: generated from the message types, and in
//! agreement with the codec on every golden vector, refusal and corpus input.
//!
//! After a deliberate change to the message types, rewrite the files with
//! `JUMPGATE_BLESS=1 cargo test -p jumpgate-protocol --test protocol schema` and review
//! the diff.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use jsonschema::Validator;
use jumpgate_protocol::codec::{self, Encoding};
use jumpgate_protocol::{ClientMessage, ServerMessage, schema};
use serde_json::{Value, json};

use crate::golden::{blessing, from_hex, vectors_dir};
use crate::refusals::Decoder;
use crate::wire_value::Value as WireValue;

/// Which side sends a message, and so which schema describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Client,
    Server,
}

impl From<Decoder> for Direction {
    fn from(decoder: Decoder) -> Self {
        match decoder {
            Decoder::Client => Direction::Client,
            Decoder::Server => Direction::Server,
        }
    }
}

impl Direction {
    /// The direction of a vector or corpus file, from its name's prefix.
    fn of_file(name: &str) -> Option<Direction> {
        if name.starts_with("client_") {
            Some(Direction::Client)
        } else if name.starts_with("server_") {
            Some(Direction::Server)
        } else {
            None
        }
    }

    fn schema_file(self) -> PathBuf {
        schema_dir().join(match self {
            Direction::Client => "client-message.schema.json",
            Direction::Server => "server-message.schema.json",
        })
    }

    fn generated(self) -> schemars::Schema {
        match self {
            Direction::Client => schema::client_message(),
            Direction::Server => schema::server_message(),
        }
    }

    /// The checked-in schema, compiled once.
    fn validator(self) -> &'static Validator {
        static VALIDATORS: OnceLock<[Validator; 2]> = OnceLock::new();
        let [client, server] = VALIDATORS.get_or_init(|| {
            [Direction::Client, Direction::Server].map(|direction| {
                jsonschema::validator_for(&direction.stored())
                    .unwrap_or_else(|err| panic!("{}: {err}", direction.schema_file().display()))
            })
        });
        match self {
            Direction::Client => client,
            Direction::Server => server,
        }
    }

    /// The checked-in schema; when blessing, the one about to be written, so that the
    /// other tests need not wait for the file.
    fn stored(self) -> Value {
        if blessing() {
            return serde_json::to_value(self.generated()).unwrap();
        }
        let path = self.schema_file();
        let text = fs::read_to_string(&path)
            .unwrap_or_else(|err| panic!("{}: {err}; {REGENERATE}", path.display()));
        serde_json::from_str(&text).unwrap()
    }

    /// Whether the codec decodes this JSON text as a message of this direction.
    fn codec_accepts(self, json: &str) -> bool {
        match self {
            Direction::Client => codec::decode_client(Encoding::Json, json.as_bytes()).is_ok(),
            Direction::Server => codec::decode_server(Encoding::Json, json.as_bytes()).is_ok(),
        }
    }

    /// Every `type` this direction has.
    fn types(self) -> BTreeSet<&'static str> {
        match self {
            Direction::Client => ClientMessage::TYPES.iter().copied().collect(),
            Direction::Server => ServerMessage::TYPES.iter().copied().collect(),
        }
    }
}

const REGENERATE: &str = "regenerate the schemas with \
    `JUMPGATE_BLESS=1 cargo test -p jumpgate-protocol --test protocol schema` \
    and review the diff";

fn schema_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("schema")
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

/// Why `value` does not validate, or `None` if it does.
fn refusal(validator: &Validator, value: &Value) -> Option<String> {
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|err| format!("{err} at {}", err.instance_path()))
        .collect();
    (!errors.is_empty()).then(|| errors.join("; "))
}

#[test]
fn schema_files_match_the_message_types() {
    if blessing() {
        fs::create_dir_all(schema_dir()).unwrap();
    }
    for direction in [Direction::Client, Direction::Server] {
        let path = direction.schema_file();
        let generated = serde_json::to_string_pretty(&direction.generated()).unwrap() + "\n";
        if blessing() {
            fs::write(&path, &generated).unwrap();
        }
        let stored = fs::read_to_string(&path)
            .unwrap_or_else(|err| panic!("{}: {err}; {REGENERATE}", path.display()));
        assert!(
            stored == generated,
            "{} differs from the schema generated from the message types; {REGENERATE}",
            path.display()
        );
        jsonschema::meta::validate(&direction.stored())
            .unwrap_or_else(|err| panic!("{} is not a valid schema: {err}", path.display()));
    }
}

/// Every golden vector, in both encodings, validates against its direction's schema, and
/// the MessagePack frame reads as the same JSON value as the JSON frame.
#[test]
fn every_golden_vector_validates() {
    let mut seen: Vec<(Direction, String)> = Vec::new();
    for entry in fs::read_dir(vectors_dir()).unwrap() {
        let file = entry.unwrap().file_name().into_string().unwrap();
        let Some(name) = file.strip_suffix(".json") else {
            continue;
        };
        let Some(direction) = Direction::of_file(name) else {
            continue;
        };
        let validator = direction.validator();

        let text = fs::read_to_string(vectors_dir().join(&file)).unwrap();
        let from_json: Value = serde_json::from_str(&text).unwrap();
        if let Some(why) = refusal(validator, &from_json) {
            panic!("{file} does not validate: {why}");
        }

        let hex_file = format!("{name}.msgpack.hex");
        let hex = fs::read_to_string(vectors_dir().join(&hex_file)).unwrap();
        let from_msgpack: Value = rmp_serde::from_slice(&from_hex(hex.trim_end())).unwrap();
        if let Some(why) = refusal(validator, &from_msgpack) {
            panic!("{hex_file} does not validate: {why}");
        }
        assert_eq!(
            from_msgpack, from_json,
            "{hex_file} and {file} say different things"
        );

        seen.push((direction, from_json["type"].as_str().unwrap().to_owned()));
    }
    for direction in [Direction::Client, Direction::Server] {
        let types: BTreeSet<&str> = seen
            .iter()
            .filter(|(side, _)| *side == direction)
            .map(|(_, kind)| kind.as_str())
            .collect();
        assert_eq!(
            types,
            direction.types(),
            "{direction:?} types with a vector"
        );
    }
    assert!(seen.len() >= 40, "only {} vectors found", seen.len());
}

/// Refusals the schema cannot see: JSON Schema validates a parsed value, and these are
/// refused for how their text is written. Every other refusal with a JSON form must be
/// refused by the schema too.
const REFUSED_FOR_THEIR_TEXT: &[(&str, &str)] = &[
    (
        "refused_client_type_twice",
        "a repeated key: a parser keeps one",
    ),
    (
        "refused_client_seq_twice",
        "a repeated key: a parser keeps one",
    ),
    ("refused_client_trailing_bytes", "not one JSON value"),
    ("refused_client_truncated", "not one JSON value"),
];

#[test]
fn every_refusal_with_a_json_form_is_refused_by_the_schema() {
    let index: Vec<Value> = serde_json::from_str(
        &fs::read_to_string(vectors_dir().join("refusals.index.json")).unwrap(),
    )
    .unwrap();
    let names: BTreeSet<&str> = index
        .iter()
        .map(|refusal| refusal["name"].as_str().unwrap())
        .collect();
    for (name, _) in REFUSED_FOR_THEIR_TEXT {
        assert!(names.contains(name), "{name} is not a refusal any more");
    }

    let mut checked = 0;
    for refused in &index {
        let name = refused["name"].as_str().unwrap();
        let path = vectors_dir().join(format!("{name}.json"));
        if !path.exists() || REFUSED_FOR_THEIR_TEXT.iter().any(|(skip, _)| *skip == name) {
            continue;
        }
        let validator = match refused["decoder"].as_str().unwrap() {
            "client" => Direction::Client.validator(),
            "server" => Direction::Server.validator(),
            other => panic!("{name}: decoder {other}"),
        };
        let text = fs::read_to_string(&path).unwrap();
        let value: Value = serde_json::from_str(&text)
            .unwrap_or_else(|err| panic!("{name} is not one JSON value ({err})"));
        assert!(
            !validator.is_valid(&value),
            "{name} is refused by the codec but valid by the schema"
        );
        checked += 1;
    }
    assert!(checked >= 15, "only {checked} refusals checked");
}

/// The corpus holds inputs the codec accepts that the golden vectors do not show (`type`
/// last, `null` for an absent field, every integer width in MessagePack); the schema
/// must agree with the codec on each.
#[test]
fn schema_and_codec_agree_on_the_corpus() {
    let mut checked = 0;
    for entry in fs::read_dir(corpus_dir()).unwrap() {
        let file = entry.unwrap().file_name().into_string().unwrap();
        let Some(direction) = Direction::of_file(&file) else {
            continue;
        };
        let path = corpus_dir().join(&file);
        let (value, accepted) = if file.ends_with(".msgpack.hex") {
            let bytes = from_hex(fs::read_to_string(&path).unwrap().trim_end());
            let accepted = match direction {
                Direction::Client => codec::decode_client(Encoding::MsgPack, &bytes).is_ok(),
                Direction::Server => codec::decode_server(Encoding::MsgPack, &bytes).is_ok(),
            };
            (rmp_serde::from_slice::<Value>(&bytes).unwrap(), accepted)
        } else if file.ends_with(".json") {
            let text = fs::read_to_string(&path).unwrap();
            let text = text.strip_suffix('\n').unwrap_or(&text);
            (
                serde_json::from_str(text).unwrap(),
                direction.codec_accepts(text),
            )
        } else {
            continue;
        };
        let why = refusal(direction.validator(), &value);
        assert_eq!(
            why.is_none(),
            accepted,
            "{file}: the codec {} it, the schema {}",
            if accepted { "accepts" } else { "refuses" },
            why.as_deref().unwrap_or("accepts it")
        );
        checked += 1;
    }
    assert!(checked >= 5, "only {checked} corpus inputs checked");
}

/// Hand-written messages on both sides of the line, each checked against the codec too so
/// that the schema and the decoder cannot drift apart on them.
#[test]
fn schema_and_codec_agree_on_edge_cases() {
    let cases: &[(Direction, bool, &str, Value)] = &[
        // Refused.
        (
            Direction::Client,
            false,
            "an unknown type",
            json!({"type": "teleport", "seq": 1}),
        ),
        (
            Direction::Client,
            false,
            "a server message's type",
            json!({"type": "ack", "seq": 1}),
        ),
        (Direction::Client, false, "no type", json!({"seq": 1})),
        (
            Direction::Client,
            false,
            "not an object",
            json!(["ping", 1]),
        ),
        (Direction::Client, false, "no seq", json!({"type": "ping"})),
        (
            Direction::Client,
            false,
            "resync without since",
            json!({"type": "resync", "seq": 5}),
        ),
        (
            Direction::Client,
            false,
            "join_lobby without code",
            json!({"type": "join_lobby", "seq": 5}),
        ),
        (
            Direction::Client,
            false,
            "an unknown rule set",
            json!({"type": "create_lobby", "seq": 6, "rule_set": "chess"}),
        ),
        (
            Direction::Client,
            false,
            "a rule set that is null",
            json!({"type": "create_lobby", "seq": 6, "rule_set": null}),
        ),
        (
            Direction::Client,
            false,
            "an unknown pace",
            json!({"type": "create_lobby", "seq": 6, "pace": "blitz"}),
        ),
        (
            Direction::Client,
            false,
            "a level in capitals",
            json!({"type": "start_solo", "seq": 6, "level": "Tamer"}),
        ),
        (
            Direction::Client,
            false,
            "a seq of 2^32",
            json!({"type": "ping", "seq": 4_294_967_296_u64}),
        ),
        (
            Direction::Client,
            false,
            "a negative since",
            json!({"type": "resync", "seq": 1, "since": -1}),
        ),
        (
            Direction::Client,
            false,
            "a series length of 256",
            json!({"type": "create_lobby", "seq": 6, "series_length": 256}),
        ),
        (
            Direction::Client,
            false,
            "a path of numbers",
            json!({"type": "move", "seq": 3, "path": [1, 2]}),
        ),
        (
            Direction::Client,
            false,
            "a string boolean",
            json!({"type": "create_lobby", "seq": 6, "invite_only": "yes"}),
        ),
        (
            Direction::Server,
            false,
            "an unknown error code",
            json!({"type": "error", "code": "oops", "message": "m"}),
        ),
        (
            Direction::Server,
            false,
            "an error without message",
            json!({"type": "error", "code": "not_now"}),
        ),
        (
            Direction::Server,
            false,
            "a client message's type",
            json!({"type": "hello", "seq": 1}),
        ),
        (
            Direction::Server,
            false,
            "a state without version",
            json!({"type": "state"}),
        ),
        (
            Direction::Server,
            false,
            "a welcome with a bad identity",
            json!({
                "type": "welcome", "server_version": "0.1.0", "protocols": [1],
                "identity": {"id": "u", "name": "n"}, "token": "t"
            }),
        ),
        // Accepted.
        (
            Direction::Client,
            true,
            "create_lobby with every default",
            json!({"type": "create_lobby", "seq": 2}),
        ),
        (
            Direction::Client,
            true,
            "null for absent options",
            json!({"type": "move", "seq": 9, "notation": "11-15", "path": null}),
        ),
        (
            Direction::Client,
            true,
            "a seq of 2^32 - 1",
            json!({"type": "ping", "seq": 4_294_967_295_u32}),
        ),
        (
            Direction::Client,
            true,
            "unknown fields",
            json!({"type": "ping", "seq": 4, "colour": "blue", "nested": {"a": [1, 2]}}),
        ),
        (
            Direction::Server,
            true,
            "an error without seq",
            json!({"type": "error", "code": "rate_limited", "message": "slow down"}),
        ),
        (
            Direction::Server,
            true,
            "an error with a null seq",
            json!({"type": "error", "seq": null, "code": "rate_limited", "message": "slow down"}),
        ),
        (
            Direction::Server,
            true,
            "a welcome without accounts",
            json!({
                "type": "welcome", "server_version": "0.1.0", "protocols": [1],
                "identity": {"id": "u", "name": "n", "guest": true}, "token": "t"
            }),
        ),
    ];
    for (direction, valid, about, value) in cases {
        let why = refusal(direction.validator(), value);
        assert_eq!(why.is_none(), *valid, "{direction:?} {about}: {why:?}");
        assert_eq!(
            direction.codec_accepts(&value.to_string()),
            *valid,
            "{direction:?} {about}: the codec disagrees"
        );
    }
}

/// What the schema cannot say (`PROTOCOL.md`, "JSON Schemas"): the codec refuses these,
/// the schema accepts the value a JSON parser makes of them. Pinned so that the
/// documentation of the gap stays true.
#[test]
fn what_only_the_codec_refuses() {
    let validator = Direction::Client.validator();
    for text in [
        r#"{"type":"ping","seq":3.0}"#,
        r#"{"type":"ping","seq":3e0}"#,
        r#"{"type":"ping","seq":3,"seq":3}"#,
    ] {
        let value: Value = serde_json::from_str(text).unwrap();
        assert!(validator.is_valid(&value), "{text}");
        assert!(!Direction::Client.codec_accepts(text), "{text}");
    }
}

/// The fuzz targets' schema check (`crate::fuzz`): whenever the schema can judge a tree,
/// it accepts the tree's JSON exactly when the decoder does.
pub fn check_tree(decoder: Decoder, tree: &WireValue, json: &str, accepted: bool) {
    if !schema_can_judge(tree) {
        return;
    }
    let value: Value = serde_json::from_str(json).unwrap();
    let why = refusal(Direction::from(decoder).validator(), &value);
    assert_eq!(
        why.is_none(),
        accepted,
        "{decoder:?}: the codec {} {json}, the schema {}",
        if accepted { "accepts" } else { "refuses" },
        why.as_deref().unwrap_or("accepts it")
    );
}

/// Whether JSON Schema sees all the decoders do in a tree: no map repeats a key (a
/// parser keeps one) and no float is a whole number (JSON Schema counts `3.0` as an
/// integer; the decoders refuse it).
fn schema_can_judge(tree: &WireValue) -> bool {
    match tree {
        WireValue::Float(x) => x.fract() != 0.0,
        WireValue::Array(items) => items.iter().all(schema_can_judge),
        WireValue::Map(entries) => {
            let mut keys = BTreeSet::new();
            entries.iter().all(|(key, value)| {
                let new_key = match key {
                    WireValue::Str(name) => keys.insert(name.as_str()),
                    _ => true,
                };
                new_key && schema_can_judge(value)
            })
        }
        _ => true,
    }
}
