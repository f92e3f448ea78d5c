//! Speed of the messages that dominate traffic: decoding a client's `move` (what the
//! server decodes most) and a v1 `state` or a v2 `moved` (what a client decodes most),
//! and encoding that `state` or `moved` (what the server encodes for every move), in both
//! encodings, read from the golden vectors.
//! `cargo bench -p jumpgate-protocol --bench codec`

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use jumpgate_protocol::codec::{self, Encoding};

/// The frame stored in `tests/vectors/NAME.json` or `NAME.msgpack.hex`.
fn vector(name: &str, encoding: Encoding) -> Vec<u8> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors");
    let file = match encoding {
        Encoding::Json => format!("{name}.json"),
        Encoding::MsgPack => format!("{name}.msgpack.hex"),
    };
    let text = std::fs::read_to_string(dir.join(&file)).expect("golden vector");
    let text = text.trim_end();
    match encoding {
        Encoding::Json => text.as_bytes().to_vec(),
        Encoding::MsgPack => (0..text.len())
            .step_by(2)
            .map(|at| u8::from_str_radix(&text[at..at + 2], 16).expect("hex"))
            .collect(),
    }
}

fn label(encoding: Encoding) -> &'static str {
    match encoding {
        Encoding::MsgPack => "msgpack",
        Encoding::Json => "json",
    }
}

fn bench_decode(c: &mut Criterion) {
    let mut group = c.benchmark_group("decode");
    for encoding in Encoding::ALL {
        let bytes = vector("client_move_notation", encoding);
        group.bench_function(format!("client_move_{}", label(encoding)), |b| {
            b.iter(|| codec::decode_client(encoding, black_box(&bytes)).expect("a move"))
        });
        let bytes = vector("client_create_lobby", encoding);
        group.bench_function(format!("client_create_lobby_{}", label(encoding)), |b| {
            b.iter(|| codec::decode_client(encoding, black_box(&bytes)).expect("a lobby"))
        });
        let bytes = vector("server_state_playing", encoding);
        group.bench_function(format!("server_state_{}", label(encoding)), |b| {
            b.iter(|| codec::decode_server(encoding, black_box(&bytes)).expect("a state"))
        });
        let bytes = vector("server_v2_moved", encoding);
        group.bench_function(format!("server_v2_moved_{}", label(encoding)), |b| {
            b.iter(|| codec::decode_server(encoding, black_box(&bytes)).expect("a move"))
        });
    }
    // A refusal: what a broken or hostile client costs the server per message.
    let refused = b"\x83\xa4type\x05\xa3seq\x03\xa8notation\xa511-15";
    group.bench_function("client_refused_msgpack", |b| {
        b.iter(|| codec::decode_client(Encoding::MsgPack, black_box(refused)))
    });
    group.finish();
}

fn bench_encode(c: &mut Criterion) {
    let mut group = c.benchmark_group("encode");
    for encoding in Encoding::ALL {
        for name in ["server_state_playing", "server_v2_moved"] {
            let message =
                codec::decode_server(encoding, &vector(name, encoding)).expect("a message");
            group.bench_function(format!("{name}_{}", label(encoding)), |b| {
                b.iter(|| codec::encode_server(encoding, black_box(&message)))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench_decode, bench_encode);
criterion_main!(benches);
