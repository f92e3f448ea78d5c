//! What can be read of a message before knowing its type: its `type` and `seq` entries
//! and, in MessagePack, whether it keeps to what JSON can say.
//!
//! serde is lenient with MessagePack: it reads an integer `type` as a variant index, a
//! `bin` as a string and an integer map key as a field index. The codec reads a
//! MessagePack message's outline first and refuses any of that, so both encodings
//! accept exactly the same messages. The outline also names the `seq` to put in the
//! `error` for a refused message.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// How deep values may nest (the top-level map is 1). Messages nest a handful of levels;
/// serde_json stops at about this depth too.
const MAX_DEPTH: usize = 128;

/// The `type` entry of a message's top-level map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TypeEntry<'a> {
    /// There is none.
    Missing,
    /// It is not a string, or there is more than one.
    Unreadable,
    /// It is this string.
    Named(Cow<'a, str>),
}

/// The parts of a message's top-level map that mean the same in every message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Outline<'a> {
    /// The `type` entry.
    pub(crate) kind: TypeEntry<'a>,
    /// The `seq` entry, when there is exactly one and it is an integer in `u32`'s range.
    pub(crate) seq: Option<u32>,
    /// The first part of a MessagePack message that no JSON message could say (a `bin`,
    /// an extension, a map key that is not a string, a string that is not UTF-8) or bytes
    /// after its end. The message is malformed, but its `type` and `seq` were read.
    pub(crate) flaw: Option<&'static str>,
}

impl Outline<'_> {
    fn new() -> Self {
        Outline {
            kind: TypeEntry::Missing,
            seq: None,
            flaw: None,
        }
    }
}

/// Reads the outline of a MessagePack message in one pass over its bytes, without
/// allocating. `Err` when the bytes are not one whole MessagePack map (nothing can be
/// read from them then).
pub(crate) fn msgpack(payload: &[u8]) -> Result<Outline<'_>, &'static str> {
    let mut reader = MsgPackReader {
        rest: payload,
        flaw: None,
    };
    let Token::Map(entries) = reader.token()? else {
        return Err("a message must be a MessagePack map");
    };
    let mut outline = Outline::new();
    let mut seqs = 0;
    for _ in 0..entries {
        let name = reader.key(1)?;
        let value = reader.token()?;
        match name {
            Some("type") => {
                outline.kind = match (&outline.kind, value) {
                    (TypeEntry::Missing, Token::Str(bytes)) => utf8(bytes)
                        .map_or(TypeEntry::Unreadable, |name| {
                            TypeEntry::Named(Cow::Borrowed(name))
                        }),
                    _ => TypeEntry::Unreadable,
                };
            }
            Some("seq") => {
                seqs += 1;
                outline.seq = match value {
                    Token::UInt(n) => u32::try_from(n).ok(),
                    Token::Int(n) => u32::try_from(n).ok(),
                    _ => None,
                };
            }
            _ => {}
        }
        reader.skip(value, 1)?;
    }
    if seqs > 1 {
        outline.seq = None;
    }
    if !reader.rest.is_empty() {
        reader.flaw("bytes after the end of the message");
    }
    outline.flaw = reader.flaw;
    Ok(outline)
}

/// Reads the `type` and `seq` of a JSON message whose top level is an object, ignoring
/// anything after the object; `None` when that much is not valid JSON. Only used to
/// explain a message that failed to decode, so it need not be fast.
pub(crate) fn json(payload: &[u8]) -> Option<Outline<'_>> {
    let mut deserializer = serde_json::Deserializer::from_slice(payload);
    JsonOutline::deserialize(&mut deserializer)
        .ok()
        .map(|outline| outline.0)
}

/// One MessagePack item: a scalar, or the header of an array or map.
#[derive(Debug, Clone, Copy)]
enum Token<'a> {
    Nil,
    Bool,
    UInt(u64),
    Int(i64),
    Float,
    Str(&'a [u8]),
    Bin,
    Ext,
    Array(u32),
    Map(u32),
}

struct MsgPackReader<'a> {
    rest: &'a [u8],
    flaw: Option<&'static str>,
}

/// Why some bytes are not a whole MessagePack map.
type SyntaxError = &'static str;

const ENDS_EARLY: SyntaxError = "the message ends early";

/// The bytes as a string, if they are UTF-8.
#[inline]
fn utf8(bytes: &[u8]) -> Option<&str> {
    std::str::from_utf8(bytes).ok()
}

impl<'a> MsgPackReader<'a> {
    #[inline]
    fn take(&mut self, len: usize) -> Result<&'a [u8], SyntaxError> {
        let (taken, rest) = self.rest.split_at_checked(len).ok_or(ENDS_EARLY)?;
        self.rest = rest;
        Ok(taken)
    }

    #[inline]
    fn array<const N: usize>(&mut self) -> Result<[u8; N], SyntaxError> {
        let (taken, rest) = self.rest.split_first_chunk::<N>().ok_or(ENDS_EARLY)?;
        self.rest = rest;
        Ok(*taken)
    }

    /// An unsigned big-endian integer 1, 2, 4 or 8 bytes wide, as `marker`'s low two
    /// bits say (0 to 3).
    #[inline]
    fn uint(&mut self, marker: u8) -> Result<u64, SyntaxError> {
        Ok(match marker & 3 {
            0 => u64::from(self.array::<1>()?[0]),
            1 => u64::from(u16::from_be_bytes(self.array()?)),
            2 => u64::from(u32::from_be_bytes(self.array()?)),
            _ => u64::from_be_bytes(self.array()?),
        })
    }

    /// A signed big-endian integer, as [`MsgPackReader::uint`].
    #[inline]
    fn int(&mut self, marker: u8) -> Result<i64, SyntaxError> {
        Ok(match marker & 3 {
            0 => i64::from(i8::from_be_bytes(self.array()?)),
            1 => i64::from(i16::from_be_bytes(self.array()?)),
            2 => i64::from(i32::from_be_bytes(self.array()?)),
            _ => i64::from_be_bytes(self.array()?),
        })
    }

    /// A length 1, 2 or 4 bytes wide (`width_log2` 0, 1 or 2).
    #[inline]
    fn len(&mut self, width_log2: u8) -> Result<usize, SyntaxError> {
        let len = match width_log2 {
            0 => u32::from(self.array::<1>()?[0]),
            1 => u32::from(u16::from_be_bytes(self.array()?)),
            _ => u32::from_be_bytes(self.array()?),
        };
        usize::try_from(len).map_err(|_| ENDS_EARLY)
    }

    #[inline]
    fn token(&mut self) -> Result<Token<'a>, SyntaxError> {
        let marker = self.array::<1>()?[0];
        Ok(match marker {
            0x00..=0x7f => Token::UInt(u64::from(marker)),
            0x80..=0x8f => Token::Map(u32::from(marker & 0x0f)),
            0x90..=0x9f => Token::Array(u32::from(marker & 0x0f)),
            0xa0..=0xbf => Token::Str(self.take(usize::from(marker & 0x1f))?),
            0xc0 => Token::Nil,
            0xc1 => return Err("0xc1 is not a MessagePack marker"),
            0xc2 | 0xc3 => Token::Bool,
            0xc4..=0xc6 => {
                let len = self.len(marker - 0xc4)?;
                self.take(len)?;
                Token::Bin
            }
            0xc7..=0xc9 => {
                let len = self.len(marker - 0xc7)?;
                self.take(len.checked_add(1).ok_or(ENDS_EARLY)?)?;
                Token::Ext
            }
            0xca => {
                self.take(4)?;
                Token::Float
            }
            0xcb => {
                self.take(8)?;
                Token::Float
            }
            0xcc..=0xcf => Token::UInt(self.uint(marker)?),
            0xd0..=0xd3 => Token::Int(self.int(marker)?),
            0xd4..=0xd8 => {
                self.take(1 + (1 << (marker - 0xd4)))?;
                Token::Ext
            }
            0xd9..=0xdb => {
                let len = self.len(marker - 0xd9)?;
                Token::Str(self.take(len)?)
            }
            0xdc | 0xdd => Token::Array(self.len(marker - 0xdb)? as u32),
            0xde | 0xdf => Token::Map(self.len(marker - 0xdd)? as u32),
            0xe0..=0xff => Token::Int(i64::from(marker as i8)),
        })
    }

    #[inline]
    fn flaw(&mut self, flaw: &'static str) {
        self.flaw.get_or_insert(flaw);
    }

    /// Reads past the rest of the value that starts with `token`, at nesting `depth`,
    /// noting the first flaw in it.
    fn skip(&mut self, token: Token<'a>, depth: usize) -> Result<(), SyntaxError> {
        match token {
            Token::Nil | Token::Bool | Token::UInt(_) | Token::Int(_) | Token::Float => {}
            Token::Str(bytes) => {
                if utf8(bytes).is_none() {
                    self.flaw("a string that is not UTF-8");
                }
            }
            Token::Bin => self.flaw("a `bin` value (strings are `str`)"),
            Token::Ext => self.flaw("a MessagePack extension value"),
            Token::Array(items) => {
                let depth = nest(depth)?;
                for _ in 0..items {
                    let item = self.token()?;
                    self.skip(item, depth)?;
                }
            }
            Token::Map(entries) => {
                let depth = nest(depth)?;
                for _ in 0..entries {
                    self.key(depth)?;
                    let value = self.token()?;
                    self.skip(value, depth)?;
                }
            }
        }
        Ok(())
    }

    /// Reads a map key at nesting `depth`: its name if it is a string.
    fn key(&mut self, depth: usize) -> Result<Option<&'a str>, SyntaxError> {
        match self.token()? {
            Token::Str(bytes) => {
                let name = utf8(bytes);
                if name.is_none() {
                    self.flaw("a string that is not UTF-8");
                }
                Ok(name)
            }
            key => {
                self.flaw("a map key that is not a string");
                self.skip(key, depth)?;
                Ok(None)
            }
        }
    }
}

fn nest(depth: usize) -> Result<usize, SyntaxError> {
    if depth >= MAX_DEPTH {
        return Err("values nested too deep");
    }
    Ok(depth + 1)
}

/// The outline of a JSON object, read with serde_json.
struct JsonOutline<'de>(Outline<'de>);

impl<'de> Deserialize<'de> for JsonOutline<'de> {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(JsonOutlineVisitor)
    }
}

struct JsonOutlineVisitor;

impl<'de> Visitor<'de> for JsonOutlineVisitor {
    type Value = JsonOutline<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut outline = Outline::new();
        let mut seqs = 0;
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Type => {
                    outline.kind = match (&outline.kind, map.next_value::<Scalar<'de>>()?) {
                        (TypeEntry::Missing, Scalar::Str(name)) => TypeEntry::Named(name),
                        _ => TypeEntry::Unreadable,
                    };
                }
                Key::Seq => {
                    seqs += 1;
                    outline.seq = match map.next_value::<Scalar<'de>>()? {
                        Scalar::U32(seq) => Some(seq),
                        _ => None,
                    };
                }
                Key::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        if seqs > 1 {
            outline.seq = None;
        }
        Ok(JsonOutline(outline))
    }
}

/// A key of the top-level object, as far as the outline cares.
enum Key {
    Type,
    Seq,
    Other,
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;

        impl Visitor<'_> for KeyVisitor {
            type Value = Key;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a field name")
            }

            fn visit_str<E: de::Error>(self, name: &str) -> Result<Key, E> {
                Ok(match name {
                    "type" => Key::Type,
                    "seq" => Key::Seq,
                    _ => Key::Other,
                })
            }
        }

        deserializer.deserialize_identifier(KeyVisitor)
    }
}

/// A value of the top-level object, as far as the outline cares: a string, an integer
/// that could be a `seq`, or anything else (read past).
enum Scalar<'de> {
    Str(Cow<'de, str>),
    U32(u32),
    Other,
}

impl<'de> Deserialize<'de> for Scalar<'de> {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ScalarVisitor;

        impl<'de> Visitor<'de> for ScalarVisitor {
            type Value = Scalar<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any value")
            }

            fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Self::Value, E> {
                Ok(Scalar::Str(Cow::Borrowed(text)))
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
                Ok(Scalar::Str(Cow::Owned(text.to_owned())))
            }

            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Self::Value, E> {
                Ok(u32::try_from(n).map_or(Scalar::Other, Scalar::U32))
            }

            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Self::Value, E> {
                Ok(u32::try_from(n).map_or(Scalar::Other, Scalar::U32))
            }

            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Scalar::Other)
            }

            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Scalar::Other)
            }

            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Scalar::Other)
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Scalar::Other)
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Scalar::Other)
            }
        }

        deserializer.deserialize_any(ScalarVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(name: &str) -> TypeEntry<'_> {
        TypeEntry::Named(Cow::Borrowed(name))
    }

    #[test]
    fn msgpack_reads_type_and_seq_wherever_they_are() {
        // {"seq": 7, "x": [1, {"a": nil}], "type": "ping"}
        let bytes = b"\x83\xa3seq\x07\xa1x\x92\x01\x81\xa1a\xc0\xa4type\xa4ping";
        let outline = msgpack(bytes).unwrap();
        assert_eq!(outline.kind, named("ping"));
        assert_eq!(outline.seq, Some(7));
        assert_eq!(outline.flaw, None);
    }

    #[test]
    fn msgpack_seq_in_any_integer_format() {
        for (seq, expected) in [
            (&b"\xcc\xff"[..], Some(255)),
            (b"\xce\xff\xff\xff\xff", Some(u32::MAX)),
            (b"\xcf\x00\x00\x00\x01\x00\x00\x00\x00", None),
            (b"\xd0\x05", Some(5)),
            (b"\xd2\x00\x01\x00\x00", Some(65_536)),
            (b"\xff", None),
            (b"\xd1\xff\xfe", None),
            (b"\xa15", None),
            (b"\xcb\x40\x14\x00\x00\x00\x00\x00\x00", None),
        ] {
            let mut bytes = b"\x81\xa3seq".to_vec();
            bytes.extend_from_slice(seq);
            assert_eq!(msgpack(&bytes).unwrap().seq, expected, "{seq:x?}");
        }
    }

    #[test]
    fn msgpack_flaws_keep_type_and_seq() {
        for (bytes, flaw) in [
            (&b"\x82\xa4type\xc4\x04ping\xa3seq\x05"[..], "bin"),
            (b"\x82\xa3seq\x05\x01\xa4ping", "key"),
            (b"\x82\xa3seq\x05\xa1x\xd4\x01\x00", "extension"),
            (b"\x82\xa3seq\x05\xa1x\x91\xa2\xff\xfe", "UTF-8"),
            (b"\x81\xa3seq\x05\xc0", "after the end"),
        ] {
            let outline = msgpack(bytes).unwrap();
            assert_eq!(outline.seq, Some(5), "{bytes:x?}");
            let found = outline.flaw.unwrap_or_default();
            assert!(found.contains(flaw), "{bytes:x?}: {found}");
        }
    }

    #[test]
    fn msgpack_type_must_be_one_string() {
        let unreadable = [
            &b"\x81\xa4type\x05"[..],
            b"\x81\xa4type\x91\xa4ping",
            b"\x82\xa4type\xa4ping\xa4type\xa4ping",
        ];
        for bytes in unreadable {
            assert_eq!(msgpack(bytes).unwrap().kind, TypeEntry::Unreadable);
        }
        assert_eq!(msgpack(b"\x80").unwrap().kind, TypeEntry::Missing);
    }

    #[test]
    fn msgpack_outline_needs_one_whole_map() {
        for bytes in [
            &b""[..],
            b"\xc1",
            b"\x92\xa4ping\x05",
            b"\x82\xa4type\xa4ping",
            b"\xdf\xff\xff\xff\xff",
            b"\x81\xa1x\xc6\xff\xff\xff\xff",
        ] {
            assert!(msgpack(bytes).is_err(), "{bytes:x?}");
        }
        let mut deep = b"\x81\xa1x".to_vec();
        deep.extend(std::iter::repeat_n(0x91, MAX_DEPTH));
        deep.push(0xc0);
        assert!(msgpack(&deep).is_err());
        deep.truncate(3);
        deep.extend(std::iter::repeat_n(0x91, MAX_DEPTH - 1));
        deep.push(0xc0);
        assert!(msgpack(&deep).is_ok());
    }

    #[test]
    fn json_reads_type_and_seq_of_any_object() {
        let outline = json(br#"{"a":[{"type":1}],"seq":9,"type":"move"} trailing"#).unwrap();
        assert_eq!(outline.kind, named("move"));
        assert_eq!(outline.seq, Some(9));

        let outline = json(br#"{"type":{"move":null},"seq":9,"seq":9}"#).unwrap();
        assert_eq!(outline.kind, TypeEntry::Unreadable);
        assert_eq!(outline.seq, None);

        let outline = json(br#"{"type":"m\u006fve","seq":-1}"#).unwrap();
        assert_eq!(outline.kind, named("move"));
        assert_eq!(outline.seq, None);

        assert!(json(b"[1]").is_none());
        assert!(json(br#"{"seq":1"#).is_none());
    }
}
