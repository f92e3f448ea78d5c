//! Fuzz targets for the decoders, run inside `cargo test` for a bounded number of cases
//! (proptest, so a failure shrinks to a small input and is saved in
//! `fuzz.proptest-regressions`, then tried first on every run).
//!
//! The seed corpus is every frame in `tests/vectors/` (the examples and the golden
//! refusals) and in `tests/corpus/`. The targets mutate seeds as value trees (replacing,
//! removing, repeating and wrapping parts, turning strings into integers or `bin`) and
//! as bytes, and also try arbitrary bytes and arbitrary valid client messages. Beyond
//! "no panic", they check:
//!
//! - a decoded message encodes and decodes back to itself, in both encodings;
//! - a tree JSON can say is decoded alike from its JSON and its MessagePack: the same
//!   message, or the same error code and `seq`;
//! - a refusal carries the `seq` exactly when the frame is a map with one integer `seq`
//!   in `u32`'s range, and is `unknown_message_type` exactly when `type` is one string
//!   naming no message;
//! - the JSON Schemas (`protocol/schema/`) accept a tree exactly when the decoder does,
//!   wherever a schema can judge it (no repeated key, no whole-number float).
//!
//! `JUMPGATE_FUZZ_CASES=100000 cargo test -p jumpgate-protocol --test protocol fuzz
//! --release` runs each target longer.

use std::fmt::Debug;
use std::fs;
use std::path::Path;
use std::sync::OnceLock;

use jumpgate_protocol::codec::{self, DecodeError, Encoding};
use jumpgate_protocol::{
    BotLevel, ClientMessage, Color, ErrorCode, GameEndReason, MAX_MESSAGE_BYTES, Phase, RuleSet,
    SeriesEndReason, ServerMessage, SoloMode,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence};

use crate::golden::{from_hex, vectors_dir};
use crate::refusals::Decoder;
use crate::wire_value::Value;

/// Cases per target: `JUMPGATE_FUZZ_CASES`, or `default` (what CI runs).
fn config(default: u32) -> Config {
    let cases = std::env::var("JUMPGATE_FUZZ_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(default);
    Config {
        cases,
        // Beside this file, as the other property tests keep theirs.
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        // Mutated seeds are refused far more often than not; that is the point.
        max_global_rejects: cases * 4,
        ..Config::default()
    }
}

struct Corpus {
    /// Every seed frame.
    frames: Vec<(Encoding, Vec<u8>)>,
    /// The seeds that are valid JSON, as trees.
    trees: Vec<Value>,
}

fn corpus() -> &'static Corpus {
    static CORPUS: OnceLock<Corpus> = OnceLock::new();
    CORPUS.get_or_init(|| {
        let mut corpus = Corpus {
            frames: Vec::new(),
            trees: Vec::new(),
        };
        let extra = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
        for dir in [vectors_dir(), extra] {
            let mut entries: Vec<_> = fs::read_dir(&dir)
                .unwrap()
                .map(|entry| entry.unwrap().path())
                .collect();
            entries.sort();
            for path in entries {
                let name = path.file_name().unwrap().to_str().unwrap().to_owned();
                let text = fs::read_to_string(&path).unwrap();
                let frame = text.strip_suffix('\n').unwrap_or(&text);
                if name.ends_with(".msgpack.hex") {
                    corpus.frames.push((Encoding::MsgPack, from_hex(frame)));
                } else if name.ends_with(".json") && !name.ends_with(".index.json") {
                    corpus
                        .frames
                        .push((Encoding::Json, frame.as_bytes().to_vec()));
                    if let Ok(tree) = serde_json::from_str::<Value>(frame) {
                        corpus.trees.push(tree);
                    }
                }
            }
        }
        assert!(corpus.trees.len() > 30, "the corpus is missing");
        corpus
    })
}

/// What a decoder made of a frame, comparable across encodings.
#[derive(Debug, PartialEq)]
enum Outcome {
    Client(ClientMessage),
    Server(Box<ServerMessage>),
    Refused(ErrorCode, Option<u32>),
}

fn round_trips<M: PartialEq + Debug>(
    message: &M,
    encode: impl Fn(Encoding, &M) -> codec::Frame,
    decode: impl Fn(Encoding, &[u8]) -> Result<M, DecodeError>,
) {
    for encoding in Encoding::ALL {
        let frame = encode(encoding, message);
        assert_eq!(
            decode(encoding, frame.as_bytes()).as_ref(),
            Ok(message),
            "{encoding} does not round-trip"
        );
    }
}

/// Decodes a frame and checks what holds for any frame: a decoded message round-trips,
/// and a refusal has a decoding error code.
fn decode(decoder: Decoder, encoding: Encoding, payload: &[u8]) -> Outcome {
    let refused = |err: DecodeError| {
        let code = err.code();
        match err {
            DecodeError::TooLarge { .. } => assert!(payload.len() > MAX_MESSAGE_BYTES),
            DecodeError::Malformed { .. } | DecodeError::UnknownType { .. } => {}
            DecodeError::WrongFrameKind { .. } => panic!("no frame kind was given"),
        }
        assert!(err.to_string().len() < 512, "{err}");
        Outcome::Refused(code, err.seq())
    };
    match decoder {
        Decoder::Client => match codec::decode_client(encoding, payload) {
            Ok(message) => {
                round_trips(&message, codec::encode_client, codec::decode_client);
                Outcome::Client(message)
            }
            Err(err) => refused(err),
        },
        Decoder::Server => match codec::decode_server(encoding, payload) {
            Ok(message) => {
                round_trips(&message, codec::encode_server, codec::decode_server);
                Outcome::Server(Box::new(message))
            }
            Err(err) => refused(err),
        },
    }
}

/// Checks both decoders on a value tree, in both encodings where JSON can say it.
fn check_tree(tree: &Value) {
    let msgpack = tree.to_msgpack();
    if msgpack.len() > MAX_MESSAGE_BYTES {
        return;
    }
    let json = tree.to_json();
    let kind = match tree.only("type") {
        Some(Value::Str(kind)) => Some(kind.as_str()),
        _ => None,
    };
    for (decoder, known) in [
        (Decoder::Client, ClientMessage::TYPES),
        (Decoder::Server, ServerMessage::TYPES),
    ] {
        let outcome = decode(decoder, Encoding::MsgPack, &msgpack);
        match &outcome {
            Outcome::Refused(code, seq) => {
                assert_eq!(
                    *seq,
                    tree.readable_seq(),
                    "the seq rule, {decoder:?}: {tree:?}"
                );
                let unknown = kind.is_some_and(|kind| !known.contains(&kind));
                assert_eq!(
                    *code == ErrorCode::UnknownMessageType,
                    unknown,
                    "{decoder:?}: {tree:?}"
                );
            }
            Outcome::Client(message) => {
                assert_eq!(Some(message.kind()), kind);
                assert_eq!(Some(message.seq()), tree.readable_seq());
            }
            Outcome::Server(message) => assert_eq!(Some(message.kind()), kind),
        }
        if let Some(json) = &json
            && json.len() <= MAX_MESSAGE_BYTES
        {
            assert_eq!(
                decode(decoder, Encoding::Json, json.as_bytes()),
                outcome,
                "{decoder:?}: JSON and MessagePack disagree on {json}"
            );
            let accepted = !matches!(outcome, Outcome::Refused(..));
            crate::schema::check_tree(decoder, tree, json, accepted);
        }
    }
}

fn check_frame(payload: &[u8]) {
    for decoder in [Decoder::Client, Decoder::Server] {
        for encoding in Encoding::ALL {
            decode(decoder, encoding, payload);
        }
    }
}

/// Strings worth trying: every name the protocol knows, and some it does not.
fn words() -> Vec<&'static str> {
    let mut words = vec![
        "type",
        "seq",
        "notation",
        "path",
        "rule_set",
        "mode",
        "level",
        "code",
        "invite",
        "since",
        "protocol",
        "client",
        "token",
        "series_length",
        "invite_only",
        "stake",
        "ranked",
        "message",
        "teleport",
        "",
        "11-15",
        "c3",
        "Type",
        "type ",
    ];
    words.extend(ClientMessage::TYPES);
    words.extend(ServerMessage::TYPES);
    words.extend(RuleSet::ALL.iter().map(|v| v.as_str()));
    words.extend(SoloMode::ALL.iter().map(|v| v.as_str()));
    words.extend(BotLevel::ALL.iter().map(|v| v.as_str()));
    words.extend(Color::ALL.iter().map(|v| v.as_str()));
    words.extend(Phase::ALL.iter().map(|v| v.as_str()));
    words.extend(GameEndReason::ALL.iter().map(|v| v.as_str()));
    words.extend(SeriesEndReason::ALL.iter().map(|v| v.as_str()));
    words.extend(ErrorCode::ALL.iter().map(|v| v.as_str()));
    words
}

fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(words()).prop_map(str::to_owned),
        1 => ".{0,12}",
    ]
}

fn integer() -> impl Strategy<Value = Value> {
    prop_oneof![
        (0u64..40).prop_map(Value::UInt),
        any::<u32>().prop_map(|n| Value::UInt(n.into())),
        prop::sample::select(vec![
            u64::from(u32::MAX),
            u64::from(u32::MAX) + 1,
            u64::MAX,
            1 << 53,
        ])
        .prop_map(Value::UInt),
        (-40i64..0).prop_map(Value::Int),
        any::<i64>().prop_map(Value::Int),
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        1 => Just(Value::Nil),
        1 => any::<bool>().prop_map(Value::Bool),
        3 => integer(),
        1 => prop::num::f64::NORMAL.prop_map(Value::Float),
        4 => word().prop_map(Value::Str),
        1 => word().prop_map(|w| Value::Bin(w.into_bytes())),
        1 => (any::<i8>(), prop::collection::vec(any::<u8>(), 0..5))
            .prop_map(|(kind, bytes)| Value::Ext(kind, bytes)),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec(
                (
                    prop_oneof![5 => word().prop_map(Value::Str), 1 => integer()],
                    inner
                ),
                0..4
            )
            .prop_map(Value::Map),
        ]
    })
}

/// One change to a tree, at the node with this pre-order index (modulo the tree's size).
#[derive(Debug, Clone)]
enum TreeMutation {
    Replace(usize, Value),
    /// Removes a child of a container.
    Remove(usize, usize),
    /// Repeats a child of a container.
    Repeat(usize, usize),
    /// Wraps the node as the only value of a map with this key (serde's externally
    /// tagged form), or in an array when the key is `None`.
    Wrap(usize, Option<String>),
    /// A string becomes an integer (a variant index, say).
    StringToInteger(usize, u8),
    StringToBin(usize),
}

fn tree_mutation() -> impl Strategy<Value = TreeMutation> {
    let at = any::<usize>();
    prop_oneof![
        4 => (at, value()).prop_map(|(at, with)| TreeMutation::Replace(at, with)),
        2 => (at, at).prop_map(|(at, child)| TreeMutation::Remove(at, child)),
        1 => (at, at).prop_map(|(at, child)| TreeMutation::Repeat(at, child)),
        2 => (at, prop::option::of(word())).prop_map(|(at, key)| TreeMutation::Wrap(at, key)),
        3 => (at, 0u8..20).prop_map(|(at, n)| TreeMutation::StringToInteger(at, n)),
        1 => at.prop_map(TreeMutation::StringToBin),
    ]
}

impl TreeMutation {
    fn apply(&self, tree: &mut Value) {
        let size = tree.size();
        let at = |index: usize| index % size;
        match self {
            TreeMutation::Replace(index, with) => {
                *tree.node_mut(at(*index)).unwrap() = with.clone();
            }
            TreeMutation::Remove(index, child) => match tree.node_mut(at(*index)).unwrap() {
                Value::Array(items) if !items.is_empty() => {
                    items.remove(child % items.len());
                }
                Value::Map(entries) if !entries.is_empty() => {
                    entries.remove(child % entries.len());
                }
                _ => {}
            },
            TreeMutation::Repeat(index, child) => match tree.node_mut(at(*index)).unwrap() {
                Value::Array(items) if !items.is_empty() => {
                    items.push(items[child % items.len()].clone());
                }
                Value::Map(entries) if !entries.is_empty() => {
                    entries.push(entries[child % entries.len()].clone());
                }
                _ => {}
            },
            TreeMutation::Wrap(index, key) => {
                let node = tree.node_mut(at(*index)).unwrap();
                let inner = std::mem::replace(node, Value::Nil);
                *node = match key {
                    Some(key) => Value::Map(vec![(Value::Str(key.clone()), inner)]),
                    None => Value::Array(vec![inner]),
                };
            }
            TreeMutation::StringToInteger(index, n) => {
                let node = tree.node_mut(at(*index)).unwrap();
                if matches!(node, Value::Str(_)) {
                    *node = Value::UInt((*n).into());
                }
            }
            TreeMutation::StringToBin(index) => {
                let node = tree.node_mut(at(*index)).unwrap();
                if let Value::Str(text) = node {
                    *node = Value::Bin(text.clone().into_bytes());
                }
            }
        }
    }
}

/// One change to a frame's bytes, at positions taken modulo its length.
#[derive(Debug, Clone)]
enum ByteMutation {
    Flip(usize, u8),
    Set(usize, u8),
    Insert(usize, u8),
    Delete(usize, usize),
    Truncate(usize),
    /// Copies a run of another seed frame over this position.
    Splice(usize, usize, usize, usize),
}

fn byte_mutation() -> impl Strategy<Value = ByteMutation> {
    let at = any::<usize>();
    prop_oneof![
        (at, 0u8..8).prop_map(|(at, bit)| ByteMutation::Flip(at, bit)),
        (at, any::<u8>()).prop_map(|(at, byte)| ByteMutation::Set(at, byte)),
        (at, any::<u8>()).prop_map(|(at, byte)| ByteMutation::Insert(at, byte)),
        (at, 1usize..8).prop_map(|(at, len)| ByteMutation::Delete(at, len)),
        at.prop_map(ByteMutation::Truncate),
        (any::<usize>(), at, at, 1usize..32)
            .prop_map(|(seed, from, to, len)| ByteMutation::Splice(seed, from, to, len)),
    ]
}

impl ByteMutation {
    fn apply(&self, bytes: &mut Vec<u8>) {
        let len = bytes.len();
        let at = |index: usize| if len == 0 { 0 } else { index % len };
        match *self {
            ByteMutation::Flip(index, bit) if len > 0 => bytes[at(index)] ^= 1 << bit,
            ByteMutation::Set(index, byte) if len > 0 => bytes[at(index)] = byte,
            ByteMutation::Insert(index, byte) => bytes.insert(index % (len + 1), byte),
            ByteMutation::Delete(index, run) if len > 0 => {
                let start = at(index);
                bytes.drain(start..(start + run).min(len));
            }
            ByteMutation::Truncate(index) => bytes.truncate(index % (len + 1)),
            ByteMutation::Splice(seed, from, to, run) => {
                let frames = &corpus().frames;
                let other = &frames[seed % frames.len()].1;
                if !other.is_empty() {
                    let from = from % other.len();
                    let piece = &other[from..(from + run).min(other.len())];
                    let to = to % (len + 1);
                    bytes.splice(to..(to + piece.len()).min(len), piece.iter().copied());
                }
            }
            _ => {}
        }
    }
}

fn arbitrary_text() -> impl Strategy<Value = String> {
    ".{0,24}"
}

fn client_message() -> impl Strategy<Value = ClientMessage> {
    let seq = any::<u32>();
    let text = arbitrary_text;
    let rule_set = prop::sample::select(RuleSet::ALL.to_vec());
    prop_oneof![
        (
            seq,
            any::<u32>(),
            prop::option::of(text()),
            text(),
            prop::option::of(text())
        )
            .prop_map(
                |(seq, protocol, token, client, name)| ClientMessage::Hello {
                    seq,
                    protocol,
                    token,
                    client,
                    name
                }
            ),
        (
            seq,
            rule_set.clone(),
            any::<u8>(),
            any::<bool>(),
            prop::option::of(any::<u32>())
        )
            .prop_map(|(seq, rule_set, series_length, invite_only, stake)| {
                ClientMessage::CreateLobby {
                    seq,
                    rule_set,
                    series_length,
                    invite_only,
                    stake,
                    pace: None,
                    draw_rules: None,
                }
            }),
        (seq, text(), prop::option::of(text()))
            .prop_map(|(seq, code, invite)| ClientMessage::JoinLobby { seq, code, invite }),
        (seq, text(), prop::option::of(text()))
            .prop_map(|(seq, code, invite)| ClientMessage::Watch { seq, code, invite }),
        (
            seq,
            prop::option::of(text()),
            prop::option::of(prop::collection::vec(text(), 0..4))
        )
            .prop_map(|(seq, notation, path)| ClientMessage::Move {
                seq,
                notation,
                path
            }),
        (seq, any::<u64>()).prop_map(|(seq, since)| ClientMessage::Resync { seq, since }),
        (
            seq,
            rule_set,
            prop::sample::select(SoloMode::ALL.to_vec()),
            prop::option::of(prop::sample::select(BotLevel::ALL.to_vec())),
            any::<bool>()
        )
            .prop_map(
                |(seq, rule_set, mode, level, ranked)| ClientMessage::StartSolo {
                    seq,
                    rule_set,
                    mode,
                    level,
                    ranked
                }
            ),
        (seq, 0..11).prop_map(|(seq, which)| match which {
            0 => ClientMessage::Leave { seq },
            1 => ClientMessage::OfferDraw { seq },
            2 => ClientMessage::AcceptDraw { seq },
            3 => ClientMessage::DeclineDraw { seq },
            4 => ClientMessage::Resign { seq },
            5 => ClientMessage::NextRound { seq },
            6 => ClientMessage::Rematch { seq },
            7 => ClientMessage::EndMatch { seq },
            8 => ClientMessage::Ping { seq },
            9 => ClientMessage::Undo { seq },
            _ => ClientMessage::ResumeSolo { seq },
        }),
    ]
}

/// The oracle agrees with itself on every seed as it stands.
#[test]
fn fuzz_seeds_hold_the_invariants() {
    for tree in &corpus().trees {
        check_tree(tree);
    }
    for (_, frame) in &corpus().frames {
        check_frame(frame);
    }
}

proptest! {
    #![proptest_config(config(3_000))]

    /// Structure-aware: seeds mutated as value trees, decoded from both encodings.
    #[test]
    fn fuzz_mutated_trees(
        seed in any::<prop::sample::Index>(),
        mutations in prop::collection::vec(tree_mutation(), 1..4),
    ) {
        let trees = &corpus().trees;
        let mut tree = trees[seed.index(trees.len())].clone();
        for mutation in &mutations {
            mutation.apply(&mut tree);
        }
        check_tree(&tree);
    }

    /// Seeds mutated as bytes, decoded by both decoders in both encodings.
    #[test]
    fn fuzz_mutated_bytes(
        seed in any::<prop::sample::Index>(),
        mutations in prop::collection::vec(byte_mutation(), 1..5),
    ) {
        let frames = &corpus().frames;
        let mut bytes = frames[seed.index(frames.len())].1.clone();
        for mutation in &mutations {
            mutation.apply(&mut bytes);
        }
        check_frame(&bytes);
    }
}

proptest! {
    #![proptest_config(config(2_000))]

    /// Arbitrary bytes.
    #[test]
    fn fuzz_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        check_frame(&bytes);
    }

    /// Arbitrary trees, mostly not messages at all.
    #[test]
    fn fuzz_arbitrary_trees(tree in value()) {
        check_tree(&tree);
    }

    /// Every valid client message decodes to itself in both encodings.
    #[test]
    fn fuzz_client_messages_round_trip(message in client_message()) {
        round_trips(&message, codec::encode_client, codec::decode_client);
    }
}
