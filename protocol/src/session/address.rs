//! Where a lobby is, as a player gives it: a room code or an invite link.

use std::fmt;
use std::str::FromStr;

/// A lobby's code and, for an invite-only lobby, its invite: what `join_lobby`,
/// `watch` and `lobby_info` need.
///
/// Parsed from what people paste: a bare code (`k7qp2dxm`, any case, spaces around
/// ignored) or an invite link (`https://host/r/K7QP2DXM?invite=…`).
///
/// ```
/// use jumpgate_protocol::session::LobbyAddress;
///
/// let link: LobbyAddress = "http://127.0.0.1:8080/r/K7QP2DXM?invite=x9Yz".parse().unwrap();
/// assert_eq!(link.code, "K7QP2DXM");
/// assert_eq!(link.invite.as_deref(), Some("x9Yz"));
///
/// let code: LobbyAddress = " k7qp2dxm ".parse().unwrap();
/// assert_eq!(code, LobbyAddress::code("K7QP2DXM"));
///
/// assert!("https://example.com/about".parse::<LobbyAddress>().is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LobbyAddress {
    /// The lobby's code, upper case.
    pub code: String,
    /// The invite of an invite-only lobby.
    pub invite: Option<String>,
}

/// Why a text is not a [`LobbyAddress`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a room code or an invite link: {0:?}")]
pub struct NotALobbyAddress(pub String);

impl LobbyAddress {
    /// A public lobby's address (the code is upper-cased).
    pub fn code(code: &str) -> LobbyAddress {
        LobbyAddress {
            code: code.trim().to_ascii_uppercase(),
            invite: None,
        }
    }
}

impl FromStr for LobbyAddress {
    type Err = NotALobbyAddress;

    fn from_str(text: &str) -> Result<LobbyAddress, NotALobbyAddress> {
        let text = text.trim();
        let refuse = || NotALobbyAddress(text.to_owned());
        if !text.contains('/') {
            let code = text.to_ascii_uppercase();
            return if is_code(&code) {
                Ok(LobbyAddress { code, invite: None })
            } else {
                Err(refuse())
            };
        }
        // A link: …/r/CODE, then an optional query with `invite=`.
        let (path, query) = text.split_once('?').unwrap_or((text, ""));
        let path = path.split_once('#').map_or(path, |(path, _)| path);
        let mut segments = path.trim_end_matches('/').rsplit('/');
        let code = segments.next().ok_or_else(refuse)?.to_ascii_uppercase();
        if segments.next() != Some("r") || !is_code(&code) {
            return Err(refuse());
        }
        let query = query.split_once('#').map_or(query, |(query, _)| query);
        let invite = query
            .split('&')
            .find_map(|pair| pair.strip_prefix("invite="))
            .filter(|invite| !invite.is_empty())
            .map(str::to_owned);
        Ok(LobbyAddress { code, invite })
    }
}

impl fmt::Display for LobbyAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.code)?;
        if let Some(invite) = &self.invite {
            write!(f, " (invite {invite})")?;
        }
        Ok(())
    }
}

/// Whether `text` can be a room code: letters and digits, at most 16 of them. (Room
/// codes are 8 characters and solo ids 9, but the server is the judge.)
fn is_code(text: &str) -> bool {
    !text.is_empty() && text.len() <= 16 && text.chars().all(|c| c.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<LobbyAddress, NotALobbyAddress> {
        text.parse()
    }

    #[test]
    fn links_give_their_code_and_invite() {
        let plain = parse("https://play.example/r/k7qp2dxm").unwrap();
        assert_eq!(plain, LobbyAddress::code("K7QP2DXM"));
        let trailing = parse("https://play.example/r/K7QP2DXM/").unwrap();
        assert_eq!(trailing, LobbyAddress::code("K7QP2DXM"));
        let invited = parse("http://127.0.0.1:8080/r/K7QP2DXM?x=1&invite=abc-_9#top").unwrap();
        assert_eq!(invited.invite.as_deref(), Some("abc-_9"));
        assert_eq!(parse("/r/K7QP2DXM?invite=").unwrap().invite, None);
    }

    #[test]
    fn other_texts_are_refused() {
        for text in [
            "",
            "K7 QP",
            "https://x/lobby/K7QP2DXM",
            "https://x/r/",
            "a/b",
        ] {
            assert!(parse(text).is_err(), "{text:?}");
        }
    }
}
