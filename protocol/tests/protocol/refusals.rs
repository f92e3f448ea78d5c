//! Golden refusals: frames a decoder must refuse, with the error code and `seq` the
//! `error` answering each must carry. They pin the strict decoding rules: `type` is a
//! string, enum values are their names, a MessagePack message says only what JSON can,
//! and a refusal keeps the `seq` whenever the frame is a well-formed map with one
//! integer `seq`.
//!
//! For each refusal `NAME`, `tests/vectors/NAME.json` and `NAME.msgpack.hex` hold the
//! frame (only the MessagePack one where JSON cannot say it), and
//! `tests/vectors/refusals.index.json` lists every refusal with the decoder that refuses it
//! (`client` for messages a client sends, `server` for messages the server sends), the
//! error `code` and the `seq` (or `null`). Both encodings of a refusal are refused alike.

use std::path::Path;

use jumpgate_protocol::ErrorCode;
use jumpgate_protocol::codec::{self, DecodeError, Encoding};
use serde::Serialize;

use crate::golden::{check_file, from_hex, to_hex};
use crate::wire_value::{Value, map, str};

const MALFORMED: ErrorCode = ErrorCode::MalformedMessage;
const UNKNOWN_TYPE: ErrorCode = ErrorCode::UnknownMessageType;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Decoder {
    Client,
    Server,
}

impl Decoder {
    pub fn decode(self, encoding: Encoding, payload: &[u8]) -> Result<(), DecodeError> {
        match self {
            Decoder::Client => codec::decode_client(encoding, payload).map(drop),
            Decoder::Server => codec::decode_server(encoding, payload).map(drop),
        }
    }
}

/// One refused frame, in one or both encodings.
struct Refusal {
    name: &'static str,
    about: &'static str,
    decoder: Decoder,
    json: Option<String>,
    msgpack: Vec<u8>,
    code: ErrorCode,
    seq: Option<u32>,
}

/// The line `refusals.index.json` holds for a refusal.
#[derive(Serialize)]
struct ManifestEntry<'a> {
    name: &'a str,
    decoder: Decoder,
    code: ErrorCode,
    seq: Option<u32>,
    about: &'a str,
}

fn refusal(
    name: &'static str,
    about: &'static str,
    message: Value,
    code: ErrorCode,
    seq: Option<u32>,
) -> Refusal {
    Refusal {
        name,
        about,
        decoder: Decoder::Client,
        json: message.to_json(),
        msgpack: message.to_msgpack(),
        code,
        seq,
    }
}

fn int(n: i64) -> Value {
    Value::Int(n)
}

fn bin(text: &str) -> Value {
    Value::Bin(text.as_bytes().to_vec())
}

fn move_11_15(kind: Value) -> Value {
    Value::Map(vec![
        (str("type"), kind),
        (str("seq"), int(3)),
        (str("notation"), str("11-15")),
    ])
}

fn create_lobby(rule_set: Value) -> Value {
    map(&[
        ("type", str("create_lobby")),
        ("seq", int(2)),
        ("rule_set", rule_set),
    ])
}

fn ping(seq: Value) -> Value {
    map(&[("type", str("ping")), ("seq", seq)])
}

fn server_error(code: Value) -> Value {
    map(&[
        ("type", str("error")),
        ("seq", int(5)),
        ("code", code),
        ("message", str("c3 cannot move there")),
    ])
}

fn refusals() -> Vec<Refusal> {
    let mut list = vec![
        // `type`
        refusal(
            "refused_client_type_integer",
            "`type` is an integer (5 would be `move`'s index)",
            move_11_15(int(5)),
            MALFORMED,
            Some(3),
        ),
        refusal(
            "refused_client_type_array",
            "`type` is an array",
            move_11_15(Value::Array(vec![str("move")])),
            MALFORMED,
            Some(3),
        ),
        refusal(
            "refused_client_type_bin",
            "`type` is a MessagePack bin, not a str",
            move_11_15(bin("move")),
            MALFORMED,
            Some(3),
        ),
        refusal(
            "refused_client_type_null",
            "`type` is null",
            move_11_15(Value::Nil),
            MALFORMED,
            Some(3),
        ),
        refusal(
            "refused_client_type_missing",
            "no `type`",
            map(&[("seq", int(3)), ("notation", str("11-15"))]),
            MALFORMED,
            Some(3),
        ),
        refusal(
            "refused_client_type_twice",
            "two `type` entries",
            map(&[
                ("type", str("ping")),
                ("seq", int(3)),
                ("type", str("ping")),
            ]),
            MALFORMED,
            Some(3),
        ),
        refusal(
            "refused_client_type_unknown",
            "a string `type` naming no client message",
            map(&[
                ("type", str("teleport")),
                ("seq", int(7)),
                ("to", str("h8")),
            ]),
            UNKNOWN_TYPE,
            Some(7),
        ),
        refusal(
            "refused_client_type_of_server_message",
            "a server message's `type` sent by a client",
            map(&[("type", str("ack")), ("seq", int(7))]),
            UNKNOWN_TYPE,
            Some(7),
        ),
        // Enum values
        refusal(
            "refused_client_enum_integer",
            "`rule_set` is an integer (3 would be `spanish`'s index)",
            create_lobby(int(3)),
            MALFORMED,
            Some(2),
        ),
        refusal(
            "refused_client_enum_externally_tagged",
            "`rule_set` in serde's externally tagged form {\"spanish\":null}",
            create_lobby(map(&[("spanish", Value::Nil)])),
            MALFORMED,
            Some(2),
        ),
        refusal(
            "refused_client_enum_unknown_name",
            "`rule_set` names no rule set",
            create_lobby(str("chess")),
            MALFORMED,
            Some(2),
        ),
        refusal(
            "refused_client_enum_bin",
            "`rule_set` is a MessagePack bin, not a str",
            create_lobby(bin("spanish")),
            MALFORMED,
            Some(2),
        ),
        refusal(
            "refused_client_enum_level_integer",
            "`start_solo.level` is an integer",
            map(&[
                ("type", str("start_solo")),
                ("seq", int(4)),
                ("mode", str("computer")),
                ("level", int(3)),
            ]),
            MALFORMED,
            Some(4),
        ),
        refusal(
            "refused_client_enum_mode_externally_tagged",
            "`start_solo.mode` in the externally tagged form",
            map(&[
                ("type", str("start_solo")),
                ("seq", int(4)),
                ("mode", map(&[("same_device", Value::Nil)])),
            ]),
            MALFORMED,
            Some(4),
        ),
        // Other fields and shapes
        refusal(
            "refused_client_field_wrong_type",
            "`notation` is an integer",
            map(&[
                ("type", str("move")),
                ("seq", int(3)),
                ("notation", int(1115)),
            ]),
            MALFORMED,
            Some(3),
        ),
        refusal(
            "refused_client_string_bin",
            "`notation` is a MessagePack bin, not a str",
            map(&[
                ("type", str("move")),
                ("seq", int(3)),
                ("notation", bin("11-15")),
            ]),
            MALFORMED,
            Some(3),
        ),
        refusal(
            "refused_client_key_integer",
            "a MessagePack map key that is an integer (0 would be `seq`'s field index)",
            Value::Map(vec![(str("type"), str("ping")), (int(0), int(5))]),
            MALFORMED,
            None,
        ),
        refusal(
            "refused_client_key_bin",
            "the `seq` key is a MessagePack bin, so there is no `seq`",
            Value::Map(vec![(str("type"), str("ping")), (bin("seq"), int(5))]),
            MALFORMED,
            None,
        ),
        refusal(
            "refused_client_extension",
            "a MessagePack extension value in a field the server does not know",
            map(&[
                ("type", str("ping")),
                ("seq", int(5)),
                ("x", Value::Ext(1, vec![0])),
            ]),
            MALFORMED,
            Some(5),
        ),
        refusal(
            "refused_client_not_a_map",
            "an array, `type` first, where serde would read the message from its fields in order",
            Value::Array(vec![str("move"), int(3), str("11-15")]),
            MALFORMED,
            None,
        ),
        // `seq`
        refusal(
            "refused_client_seq_negative",
            "`seq` is negative: not readable",
            ping(int(-1)),
            MALFORMED,
            None,
        ),
        refusal(
            "refused_client_seq_too_large",
            "`seq` is 2^32: not readable",
            ping(Value::UInt(1 << 32)),
            MALFORMED,
            None,
        ),
        refusal(
            "refused_client_seq_string",
            "`seq` is a string: not readable",
            ping(str("5")),
            MALFORMED,
            None,
        ),
        refusal(
            "refused_client_seq_twice",
            "two `seq` entries: not readable",
            map(&[("type", str("ping")), ("seq", int(5)), ("seq", int(5))]),
            MALFORMED,
            None,
        ),
        // The server's messages, as a client decodes them
        refusal(
            "refused_server_type_integer",
            "`type` is an integer (1 would be `ack`'s index)",
            map(&[("type", int(1)), ("seq", int(5))]),
            MALFORMED,
            Some(5),
        ),
        refusal(
            "refused_server_enum_integer",
            "`error.code` is an integer",
            server_error(int(15)),
            MALFORMED,
            Some(5),
        ),
        refusal(
            "refused_server_enum_externally_tagged",
            "`error.code` in the externally tagged form",
            server_error(map(&[("illegal_move", Value::Nil)])),
            MALFORMED,
            Some(5),
        ),
    ];
    for refusal in &mut list {
        if refusal.name.starts_with("refused_server_") {
            refusal.decoder = Decoder::Server;
        }
    }

    // Frames no value tree gives: bytes after the map, and a map cut short.
    let whole = ping(int(5));
    let mut trailing = whole.to_msgpack();
    trailing.push(0xc0);
    list.push(Refusal {
        name: "refused_client_trailing_bytes",
        about: "a whole message followed by more bytes",
        decoder: Decoder::Client,
        json: Some(format!("{} {{}}", whole.to_json().unwrap())),
        msgpack: trailing,
        code: MALFORMED,
        seq: Some(5),
    });
    let mut truncated = whole.to_msgpack();
    truncated.pop();
    let mut truncated_json = whole.to_json().unwrap();
    truncated_json.pop();
    list.push(Refusal {
        name: "refused_client_truncated",
        about: "a message cut short: not a well-formed map, so no `seq`",
        decoder: Decoder::Client,
        json: Some(truncated_json),
        msgpack: truncated,
        code: MALFORMED,
        seq: None,
    });
    let mut not_utf8 =
        map(&[("type", str("ping")), ("seq", int(5)), ("x", str("ab"))]).to_msgpack();
    let last = not_utf8.len() - 1;
    not_utf8[last] = 0xff;
    list.push(Refusal {
        name: "refused_client_string_not_utf8",
        about: "a MessagePack str that is not UTF-8",
        decoder: Decoder::Client,
        json: None,
        msgpack: not_utf8,
        code: MALFORMED,
        seq: Some(5),
    });
    list
}

/// Checks every refusal against its files (writing them when blessing) and the decoders;
/// returns the names of the files it used.
pub fn check_refusals(dir: &Path) -> Vec<String> {
    let mut files = Vec::new();
    let mut manifest = Vec::new();
    for refusal in refusals() {
        let expect = |encoding: Encoding, payload: &[u8], file: &str| {
            let err = refusal
                .decoder
                .decode(encoding, payload)
                .expect_err(&format!("{file} must be refused"));
            assert_eq!(
                (err.code(), err.seq()),
                (refusal.code, refusal.seq),
                "{file}: {err}"
            );
        };
        let hex_name = format!("{}.msgpack.hex", refusal.name);
        let stored = check_file(&dir.join(&hex_name), &to_hex(&refusal.msgpack));
        expect(Encoding::MsgPack, &from_hex(&stored), &hex_name);
        files.push(hex_name);
        if let Some(json) = &refusal.json {
            let json_name = format!("{}.json", refusal.name);
            let stored = check_file(&dir.join(&json_name), json);
            expect(Encoding::Json, stored.as_bytes(), &json_name);
            files.push(json_name);
        }
        manifest.push(
            serde_json::to_string(&ManifestEntry {
                name: refusal.name,
                decoder: refusal.decoder,
                code: refusal.code,
                seq: refusal.seq,
                about: refusal.about,
            })
            .unwrap(),
        );
    }
    let manifest = format!("[\n  {}\n]", manifest.join(",\n  "));
    check_file(&dir.join("refusals.index.json"), &manifest);
    files.push("refusals.index.json".into());
    files
}
