//! A value tree that writes itself as MessagePack bytes or JSON text, including what the
//! codec's own encoder never writes (`bin`, extensions, keys that are not strings,
//! repeated keys), for the refusal vectors and the fuzz targets.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, MapAccess, SeqAccess, Visitor};

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Nil,
    Bool(bool),
    /// Written as a negative integer format when negative, else as an unsigned one.
    Int(i64),
    UInt(u64),
    Float(f64),
    Str(String),
    Bin(Vec<u8>),
    Ext(i8, Vec<u8>),
    Array(Vec<Value>),
    /// Entries in order; keys may repeat.
    Map(Vec<(Value, Value)>),
}

/// A map from string keys, in order. (`Value`'s `Deserialize` reads JSON the same way,
/// keeping the order and any repeats of keys.)
pub fn map(entries: &[(&str, Value)]) -> Value {
    Value::Map(
        entries
            .iter()
            .map(|(key, value)| (str(key), value.clone()))
            .collect(),
    )
}

pub fn str(text: &str) -> Value {
    Value::Str(text.into())
}

impl Value {
    /// The value of the only entry with string key `key`, if this is a map with exactly
    /// one such entry.
    pub fn only(&self, key: &str) -> Option<&Value> {
        let Value::Map(entries) = self else {
            return None;
        };
        let mut found = entries
            .iter()
            .filter(|(k, _)| matches!(k, Value::Str(name) if name == key));
        match (found.next(), found.next()) {
            (Some((_, value)), None) => Some(value),
            _ => None,
        }
    }

    /// The `seq` a decoder must report when it refuses this message: the only `seq` of
    /// a top-level map, if it is an integer in `u32`'s range.
    pub fn readable_seq(&self) -> Option<u32> {
        match self.only("seq")? {
            Value::UInt(n) => u32::try_from(*n).ok(),
            Value::Int(n) => u32::try_from(*n).ok(),
            _ => None,
        }
    }

    /// How many nodes the tree has (this one included).
    pub fn size(&self) -> usize {
        1 + match self {
            Value::Array(items) => items.iter().map(Value::size).sum(),
            Value::Map(entries) => entries.iter().map(|(k, v)| k.size() + v.size()).sum(),
            _ => 0,
        }
    }

    /// The `index`th node in pre-order (keys before their values).
    pub fn node_mut(&mut self, index: usize) -> Option<&mut Value> {
        let mut index = index;
        Self::nth(self, &mut index)
    }

    fn nth<'a>(value: &'a mut Value, index: &mut usize) -> Option<&'a mut Value> {
        if *index == 0 {
            return Some(value);
        }
        *index -= 1;
        match value {
            Value::Array(items) => {
                for item in items {
                    let size = item.size();
                    if *index < size {
                        return Self::nth(item, index);
                    }
                    *index -= size;
                }
                None
            }
            Value::Map(entries) => {
                for (k, v) in entries {
                    for part in [k, v] {
                        let size = part.size();
                        if *index < size {
                            return Self::nth(part, index);
                        }
                        *index -= size;
                    }
                }
                None
            }
            _ => None,
        }
    }

    pub fn to_msgpack(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write_msgpack(&mut out);
        out
    }

    fn write_msgpack(&self, out: &mut Vec<u8>) {
        match self {
            Value::Nil => out.push(0xc0),
            Value::Bool(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
            Value::Int(n) if *n >= 0 => Value::UInt(*n as u64).write_msgpack(out),
            Value::Int(n) => {
                let n = *n;
                if n >= -32 {
                    out.push(n as u8);
                } else if n >= i64::from(i8::MIN) {
                    out.push(0xd0);
                    out.push(n as u8);
                } else if n >= i64::from(i16::MIN) {
                    out.push(0xd1);
                    out.extend_from_slice(&(n as i16).to_be_bytes());
                } else if n >= i64::from(i32::MIN) {
                    out.push(0xd2);
                    out.extend_from_slice(&(n as i32).to_be_bytes());
                } else {
                    out.push(0xd3);
                    out.extend_from_slice(&n.to_be_bytes());
                }
            }
            Value::UInt(n) => {
                let n = *n;
                if n <= 0x7f {
                    out.push(n as u8);
                } else if n <= 0xff {
                    out.extend_from_slice(&[0xcc, n as u8]);
                } else if n <= 0xffff {
                    out.push(0xcd);
                    out.extend_from_slice(&(n as u16).to_be_bytes());
                } else if n <= 0xffff_ffff {
                    out.push(0xce);
                    out.extend_from_slice(&(n as u32).to_be_bytes());
                } else {
                    out.push(0xcf);
                    out.extend_from_slice(&n.to_be_bytes());
                }
            }
            Value::Float(x) => {
                out.push(0xcb);
                out.extend_from_slice(&x.to_be_bytes());
            }
            Value::Str(text) => {
                write_len(out, text.len(), Some(0xa0), 31, [0xd9, 0xda, 0xdb]);
                out.extend_from_slice(text.as_bytes());
            }
            Value::Bin(bytes) => {
                write_len(out, bytes.len(), None, 0, [0xc4, 0xc5, 0xc6]);
                out.extend_from_slice(bytes);
            }
            Value::Ext(kind, bytes) => {
                match bytes.len() {
                    1 => out.push(0xd4),
                    2 => out.push(0xd5),
                    4 => out.push(0xd6),
                    8 => out.push(0xd7),
                    16 => out.push(0xd8),
                    len => write_len(out, len, None, 0, [0xc7, 0xc8, 0xc9]),
                }
                out.push(*kind as u8);
                out.extend_from_slice(bytes);
            }
            Value::Array(items) => {
                write_len16(out, items.len(), 0x90, [0xdc, 0xdd]);
                for item in items {
                    item.write_msgpack(out);
                }
            }
            Value::Map(entries) => {
                write_len16(out, entries.len(), 0x80, [0xde, 0xdf]);
                for (key, value) in entries {
                    key.write_msgpack(out);
                    value.write_msgpack(out);
                }
            }
        }
    }

    /// The JSON text, when JSON can say it: no `bin`, extension, key that is not a
    /// string, or float that is not finite.
    pub fn to_json(&self) -> Option<String> {
        let mut out = String::new();
        self.write_json(&mut out).then_some(out)
    }

    fn write_json(&self, out: &mut String) -> bool {
        match self {
            Value::Nil => out.push_str("null"),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Int(n) => out.push_str(&n.to_string()),
            Value::UInt(n) => out.push_str(&n.to_string()),
            Value::Float(x) if x.is_finite() => out.push_str(&serde_json::to_string(x).unwrap()),
            Value::Str(text) => out.push_str(&serde_json::to_string(text).unwrap()),
            Value::Float(_) | Value::Bin(_) | Value::Ext(..) => return false,
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    if !item.write_json(out) {
                        return false;
                    }
                }
                out.push(']');
            }
            Value::Map(entries) => {
                out.push('{');
                for (i, (key, value)) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    if !matches!(key, Value::Str(_)) || !key.write_json(out) {
                        return false;
                    }
                    out.push(':');
                    if !value.write_json(out) {
                        return false;
                    }
                }
                out.push('}');
            }
        }
        true
    }
}

fn write_len(out: &mut Vec<u8>, len: usize, fix: Option<u8>, fix_max: usize, wide: [u8; 3]) {
    match fix {
        Some(marker) if len <= fix_max => out.push(marker | len as u8),
        _ if len <= 0xff => out.extend_from_slice(&[wide[0], len as u8]),
        _ if len <= 0xffff => {
            out.push(wide[1]);
            out.extend_from_slice(&(len as u16).to_be_bytes());
        }
        _ => {
            out.push(wide[2]);
            out.extend_from_slice(&(len as u32).to_be_bytes());
        }
    }
}

fn write_len16(out: &mut Vec<u8>, len: usize, fix: u8, wide: [u8; 2]) {
    if len <= 15 {
        out.push(fix | len as u8);
    } else if len <= 0xffff {
        out.push(wide[0]);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(wide[1]);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ValueVisitor;

        impl<'de> Visitor<'de> for ValueVisitor {
            type Value = Value;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }

            fn visit_unit<E>(self) -> Result<Value, E> {
                Ok(Value::Nil)
            }

            fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
                Ok(Value::Bool(b))
            }

            fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
                Ok(Value::Int(n))
            }

            fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
                Ok(Value::UInt(n))
            }

            fn visit_f64<E>(self, x: f64) -> Result<Value, E> {
                Ok(Value::Float(x))
            }

            fn visit_str<E>(self, text: &str) -> Result<Value, E> {
                Ok(Value::Str(text.into()))
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Value::Array(items))
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
                let mut entries = Vec::new();
                while let Some((key, value)) = map.next_entry::<String, Value>()? {
                    entries.push((Value::Str(key), value));
                }
                Ok(Value::Map(entries))
            }
        }

        deserializer.deserialize_any(ValueVisitor)
    }
}
