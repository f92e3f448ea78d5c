//! Room codes: 8 characters from `23456789ABCDEFGHJKLMNPQRSTUVWXYZ` (no 0,
//! 1, I or O, which people misread), accepted in any case.

use std::fmt;

/// The characters a room code is drawn from.
pub const ALPHABET: [char; 32] = [
    '2', '3', '4', '5', '6', '7', '8', '9', 'A', 'B', 'C', 'D', 'E', 'F', 'G', 'H', 'J', 'K', 'L',
    'M', 'N', 'P', 'Q', 'R', 'S', 'T', 'U', 'V', 'W', 'X', 'Y', 'Z',
];

pub const LENGTH: usize = 8;

/// An 8-character room code, always upper case.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RoomCode(String);

impl RoomCode {
    /// A fresh random code.
    pub fn generate() -> RoomCode {
        RoomCode(nanoid::nanoid!(LENGTH, &ALPHABET))
    }

    /// Reads a code typed by a person: surrounding space ignored, any case.
    pub fn parse(text: &str) -> Option<RoomCode> {
        let upper = text.trim().to_ascii_uppercase();
        let ok = upper.chars().count() == LENGTH && upper.chars().all(|c| ALPHABET.contains(&c));
        ok.then_some(RoomCode(upper))
    }

    /// The code that routes a lobby code or a solo game's id (`S` + a code).
    pub fn routing(id: &str) -> Option<RoomCode> {
        match id.strip_prefix('S') {
            Some(code) if code.len() == LENGTH => RoomCode::parse(code),
            _ => RoomCode::parse(id),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RoomCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_codes_parse_in_any_case() {
        for _ in 0..100 {
            let code = RoomCode::generate();
            assert_eq!(code.as_str().len(), 8);
            assert_eq!(RoomCode::parse(&code.as_str().to_lowercase()), Some(code));
        }
    }

    #[test]
    fn solo_ids_route_by_their_code_and_lobby_codes_as_they_are() {
        let code = RoomCode::parse("SABCDEFG").unwrap();
        assert_eq!(RoomCode::routing("SABCDEFG"), Some(code.clone()));
        assert_eq!(RoomCode::routing("SSABCDEFG"), Some(code));
        assert_eq!(RoomCode::routing("S23456789"), RoomCode::parse("23456789"));
        // Eight characters starting with S are a lobby code, not a solo id.
        assert_eq!(RoomCode::routing("S2345678"), RoomCode::parse("S2345678"));
        assert_eq!(RoomCode::routing("S234567"), None);
        assert_eq!(RoomCode::routing(""), None);
    }

    #[test]
    fn look_alikes_and_wrong_lengths_are_refused() {
        assert_eq!(RoomCode::parse("ABCDEFG0"), None);
        assert_eq!(RoomCode::parse("ABCDEFGI"), None);
        assert_eq!(RoomCode::parse("ABCDEFG"), None);
        assert_eq!(RoomCode::parse("ABCDEFGHJ"), None);
        assert!(RoomCode::parse(" abcdefgh ").is_some());
    }
}
