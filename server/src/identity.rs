//! Who is connected: guests, carried by tokens the server signs itself
//! (HS256), and accounts, carried by JWTs from an external issuer whose
//! keys (HS256 secrets, RS256 or EdDSA public keys, each with a `kid`) are
//! configured. An account's email is never kept. Whatever a token says,
//! the identity it yields is bounded: a display name is normalised
//! ([`normalise_name`]) and an id has at most [`MAX_SUB_BYTES`] after its
//! prefix, so no token can make a `welcome` or a `state` large.

use std::collections::HashMap;

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

/// Clock skew allowed on `exp` and `nbf`, in seconds.
pub const LEEWAY_SECS: u64 = 30;

/// How long a guest token stays valid.
const GUEST_TOKEN_DAYS: u64 = 30;
const ISSUER: &str = "jumpgate";

/// A display name has at most this many characters (Unicode scalar values,
/// so at most 96 bytes of UTF-8) after normalisation.
pub const MAX_NAME_CHARS: usize = 24;

/// The longest `sub` accepted, in bytes: it becomes the id every client in
/// the room sees.
pub const MAX_SUB_BYTES: usize = 128;

/// The longest token accepted, in bytes. `welcome` echoes the token, and
/// must stay within the protocol's 16 KiB.
pub const MAX_TOKEN_BYTES: usize = 8 * 1024;

/// The name of an account whose `name` is missing or empty once normalised.
const ACCOUNT_FALLBACK_NAME: &str = "Player";
/// The name of a guest whose token's name is empty once normalised (never
/// one this server issued).
const GUEST_FALLBACK_NAME: &str = "Guest";

pub use jumpgate_lobby::Identity;

#[derive(Debug, Serialize, Deserialize)]
struct GuestClaims {
    sub: String,
    name: String,
    iss: String,
    exp: u64,
    guest: bool,
}

/// Why a token does not prove an identity. The message is safe to show the
/// client (it never echoes the token).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidToken {
    #[error("the token is not a well-formed JWT")]
    Malformed,
    #[error("the token is longer than {MAX_TOKEN_BYTES} bytes")]
    TooLong,
    #[error("the token names no key (kid) and is not a guest token")]
    MissingKid,
    #[error("the token's key (kid) is not one this server knows")]
    UnknownKey,
    #[error("the token's algorithm does not match its key")]
    WrongAlgorithm,
    #[error("the token has expired")]
    Expired,
    #[error("the token is not valid yet")]
    NotYetValid,
    #[error("the token is from another issuer")]
    WrongIssuer,
    #[error("the token is meant for another audience")]
    WrongAudience,
    #[error("the token's signature is invalid")]
    BadSignature,
    #[error("the token lacks a required claim or has one of the wrong type")]
    BadClaims,
}

fn classify(e: &jsonwebtoken::errors::Error) -> InvalidToken {
    use jsonwebtoken::errors::ErrorKind as K;
    match e.kind() {
        K::ExpiredSignature => InvalidToken::Expired,
        K::ImmatureSignature => InvalidToken::NotYetValid,
        K::InvalidIssuer => InvalidToken::WrongIssuer,
        K::InvalidAudience => InvalidToken::WrongAudience,
        K::InvalidSignature => InvalidToken::BadSignature,
        K::InvalidAlgorithm | K::InvalidAlgorithmName => InvalidToken::WrongAlgorithm,
        K::MissingRequiredClaim(_) | K::InvalidClaimFormat(_) | K::Json(_) => {
            InvalidToken::BadClaims
        }
        _ => InvalidToken::Malformed,
    }
}

/// The external issuer's settings.
#[derive(Clone, Debug, Default)]
pub struct AccountSettings {
    pub issuer: String,
    pub audience: String,
    /// `(kid, secret)`.
    pub hs256: Vec<(String, Vec<u8>)>,
    /// `(kid, public key PEM)`.
    pub rs256: Vec<(String, Vec<u8>)>,
    /// `(kid, public key PEM)`.
    pub eddsa: Vec<(String, Vec<u8>)>,
}

/// Checks account tokens from the external issuer.
struct AccountIssuer {
    keys: HashMap<String, (Algorithm, DecodingKey)>,
    issuer: String,
    audience: String,
}

#[derive(Debug, Deserialize)]
struct AccountClaims {
    sub: String,
    /// A string only: the JWT library alone would also take a list that
    /// contains our issuer.
    iss: String,
    #[serde(default)]
    name: Option<String>,
    // `email` may be present; it is deliberately not read.
}

/// A `sub` that can be an id: not blank, not long, and no control
/// characters (it is shown to clients and written to logs).
fn sub_valid(sub: &str) -> bool {
    !sub.trim().is_empty() && sub.len() <= MAX_SUB_BYTES && !sub.chars().any(char::is_control)
}

/// Characters dropped from names: they are invisible or reorder the text
/// around them (soft hyphen, zero-width space, directional marks, embeddings,
/// overrides and isolates, word joiners and invisible operators, byte-order
/// mark). The zero-width joiner and non-joiner stay: emoji sequences and
/// some scripts need them.
fn invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{180E}'
            | '\u{200B}'
            | '\u{200E}'
            | '\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{2069}'
            | '\u{FEFF}'
            | '\u{FFF9}'..='\u{FFFB}'
    )
}

/// A display name as the server shows it: control and invisible
/// characters dropped, every run of whitespace (line breaks included) made
/// one space, trimmed, and cut to [`MAX_NAME_CHARS`] characters; `fallback`
/// when nothing is left.
pub fn normalise_name(raw: &str, fallback: &str) -> String {
    let mut name = String::new();
    let mut chars = 0;
    let mut pending_space = false;
    for c in raw.chars() {
        if c.is_whitespace() {
            pending_space = !name.is_empty();
            continue;
        }
        if c.is_control() || invisible(c) {
            continue;
        }
        if pending_space {
            if chars + 1 >= MAX_NAME_CHARS {
                break;
            }
            name.push(' ');
            chars += 1;
            pending_space = false;
        }
        if chars == MAX_NAME_CHARS {
            break;
        }
        name.push(c);
        chars += 1;
    }
    // A cut can leave a joiner with nothing to join.
    let name = name.trim_end_matches(['\u{200C}', '\u{200D}', ' ']);
    if name.is_empty() {
        fallback.to_owned()
    } else {
        name.to_owned()
    }
}

impl AccountIssuer {
    fn new(settings: &AccountSettings) -> Result<AccountIssuer, String> {
        let mut keys = HashMap::new();
        for (kid, secret) in &settings.hs256 {
            let key = DecodingKey::from_secret(secret).map_err(|e| format!("{kid}: {e}"))?;
            keys.insert(kid.clone(), (Algorithm::HS256, key));
        }
        for (kid, pem) in &settings.rs256 {
            let key = DecodingKey::from_rsa_pem(pem).map_err(|e| format!("{kid}: {e}"))?;
            keys.insert(kid.clone(), (Algorithm::RS256, key));
        }
        for (kid, pem) in &settings.eddsa {
            let key = DecodingKey::from_ed_pem(pem).map_err(|e| format!("{kid}: {e}"))?;
            keys.insert(kid.clone(), (Algorithm::EdDSA, key));
        }
        Ok(AccountIssuer {
            keys,
            issuer: settings.issuer.clone(),
            audience: settings.audience.clone(),
        })
    }

    fn verify(
        &self,
        token: &str,
        kid: Option<&str>,
        alg: Algorithm,
    ) -> Result<Identity, InvalidToken> {
        let kid = kid.ok_or(InvalidToken::MissingKid)?;
        let (expected, key) = self.keys.get(kid).ok_or(InvalidToken::UnknownKey)?;
        if *expected != alg {
            return Err(InvalidToken::WrongAlgorithm);
        }
        let mut validation = Validation::new(*expected);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "sub", "iss", "aud"]);
        validation.validate_nbf = true;
        validation.leeway = LEEWAY_SECS;
        let data = jsonwebtoken::decode::<AccountClaims>(token, key, &validation)
            .map_err(|e| classify(&e))?;
        let claims = data.claims;
        if !sub_valid(&claims.sub) || claims.iss != self.issuer {
            return Err(InvalidToken::BadClaims);
        }
        Ok(Identity {
            id: format!("a_{}", claims.sub),
            name: normalise_name(
                claims.name.as_deref().unwrap_or_default(),
                ACCOUNT_FALLBACK_NAME,
            ),
            guest: false,
        })
    }
}

/// Issues and checks identity tokens.
pub struct Identities {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
    accounts: Option<AccountIssuer>,
}

impl std::fmt::Debug for Identities {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Identities { .. }")
    }
}

impl Identities {
    /// Guests only.
    pub fn new(secret: &[u8]) -> Identities {
        Identities::with_accounts(secret, None).expect("no account keys to read")
    }

    /// Guests, and accounts from the configured issuer.
    pub fn with_accounts(
        secret: &[u8],
        accounts: Option<&AccountSettings>,
    ) -> Result<Identities, String> {
        let accounts = accounts.map(AccountIssuer::new).transpose()?;
        let mut identities = Identities::guests_only(secret);
        identities.accounts = accounts;
        Ok(identities)
    }

    fn guests_only(secret: &[u8]) -> Identities {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.set_issuer(&[ISSUER]);
        validation.set_required_spec_claims(&["exp", "iss", "sub"]);
        validation.leeway = LEEWAY_SECS;
        Identities {
            encoding: EncodingKey::from_secret(secret).expect("an HMAC key takes any secret"),
            decoding: DecodingKey::from_secret(secret).expect("an HMAC key takes any secret"),
            validation,
            accounts: None,
        }
    }

    /// A new guest and the token that brings them back.
    pub fn new_guest(&self) -> (Identity, String) {
        let id = format!("g_{}", nanoid::nanoid!(16));
        let suffix: String = nanoid::nanoid!(4, &crate::code::ALPHABET);
        let identity = Identity {
            id,
            name: format!("Guest-{suffix}"),
            guest: true,
        };
        let token = self.token_for(&identity);
        (identity, token)
    }

    /// The guest under a name they chose, normalised as every name is, and a
    /// token that carries it. A name that normalises to nothing keeps the
    /// guest's current name.
    pub fn rename_guest(&self, guest: &Identity, chosen: &str) -> (Identity, String) {
        let identity = Identity {
            id: guest.id.clone(),
            name: normalise_name(chosen, &guest.name),
            guest: true,
        };
        let token = self.token_for(&identity);
        (identity, token)
    }

    fn token_for(&self, identity: &Identity) -> String {
        let now = crate::sync::now_secs();
        let claims = GuestClaims {
            sub: identity.id.clone(),
            name: identity.name.clone(),
            iss: ISSUER.to_owned(),
            exp: now + GUEST_TOKEN_DAYS * 24 * 3600,
            guest: true,
        };
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.encoding)
            .expect("HS256 signing cannot fail with an in-memory key")
    }

    /// The identity a token proves: an account token when it names a key
    /// (`kid`), otherwise one of our guest tokens.
    pub fn verify(&self, token: &str) -> Result<Identity, InvalidToken> {
        if token.len() > MAX_TOKEN_BYTES {
            return Err(InvalidToken::TooLong);
        }
        let header = jsonwebtoken::decode_header(token).map_err(|_| InvalidToken::Malformed)?;
        if header.kid.is_some() {
            return match &self.accounts {
                Some(issuer) => issuer.verify(token, header.kid.as_deref(), header.alg),
                None => Err(InvalidToken::UnknownKey),
            };
        }
        if header.alg != Algorithm::HS256 {
            return Err(InvalidToken::WrongAlgorithm);
        }
        let data = jsonwebtoken::decode::<GuestClaims>(token, &self.decoding, &self.validation)
            .map_err(|e| classify(&e))?;
        if !data.claims.guest || !sub_valid(&data.claims.sub) {
            return Err(InvalidToken::BadClaims);
        }
        Ok(Identity {
            id: data.claims.sub,
            name: normalise_name(&data.claims.name, GUEST_FALLBACK_NAME),
            guest: data.claims.guest,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guest_chooses_a_name_normalised_and_carried_by_the_token() {
        let ids = Identities::new(b"secret-one");
        let (who, _) = ids.new_guest();
        let (named, token) = ids.rename_guest(&who, "  Ann\u{202E}\t  the\nBold  ");
        assert_eq!(named.id, who.id);
        assert_eq!(named.name, "Ann the Bold");
        assert!(named.guest);
        assert_eq!(ids.verify(&token).unwrap(), named);
        let long = "x".repeat(100);
        assert_eq!(
            ids.rename_guest(&who, &long).0.name.chars().count(),
            MAX_NAME_CHARS
        );
        // Nothing left after normalising: the name stays as it was.
        let (same, _) = ids.rename_guest(&named, " \u{200B} ");
        assert_eq!(same.name, "Ann the Bold");
    }

    #[test]
    fn guest_tokens_round_trip_and_foreign_tokens_fail() {
        let ids = Identities::new(b"secret-one");
        let (who, token) = ids.new_guest();
        assert_eq!(ids.verify(&token).unwrap(), who);
        assert!(Identities::new(b"secret-two").verify(&token).is_err());
        assert!(ids.verify("not a token").is_err());
    }

    const ISSUER_SECRET: &[u8] = b"account-issuer-secret";

    fn with_accounts() -> Identities {
        let settings = AccountSettings {
            issuer: "https://id.test".into(),
            audience: "jumpgate".into(),
            hs256: vec![("k1".into(), ISSUER_SECRET.to_vec())],
            ..AccountSettings::default()
        };
        Identities::with_accounts(b"guest-secret", Some(&settings)).unwrap()
    }

    /// An account token with these claims over the usual `aud` and `exp`.
    fn account_token(claims: serde_json::Value) -> String {
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some("k1".into());
        let mut all = serde_json::json!({"aud": "jumpgate", "exp": u64::MAX / 2});
        all.as_object_mut()
            .unwrap()
            .extend(claims.as_object().unwrap().clone());
        let key = EncodingKey::from_secret(ISSUER_SECRET).unwrap();
        jsonwebtoken::encode(&header, &all, &key).unwrap()
    }

    #[test]
    fn names_are_normalised() {
        let cases = [
            ("  Ada   Lovelace ", "Ada Lovelace"),
            ("Ada\n\t\u{2028}Lovelace", "Ada Lovelace"),
            ("A\u{0}d\u{7}a\u{1b}[31m", "Ada[31m"),
            ("\u{202E}evil\u{200B}\u{FEFF}", "evil"),
            // An emoji sequence keeps its joiner.
            (
                "\u{1F469}\u{200D}\u{1F4BB} dev",
                "\u{1F469}\u{200D}\u{1F4BB} dev",
            ),
            ("", "Player"),
            (" \u{200B}\n\u{0} ", "Player"),
        ];
        for (raw, want) in cases {
            assert_eq!(normalise_name(raw, "Player"), want, "{raw:?}");
        }
        // Cut to 24 characters, on character boundaries.
        let emoji = "\u{1F600}".repeat(100);
        let name = normalise_name(&emoji, "Player");
        assert_eq!(name, "\u{1F600}".repeat(MAX_NAME_CHARS));
        assert_eq!(name.len(), 4 * MAX_NAME_CHARS);
        // No trailing space or joiner after a cut.
        let name = normalise_name(&format!("{} {}", "a".repeat(23), "b".repeat(9)), "P");
        assert_eq!(name, "a".repeat(23));
        let name = normalise_name(&format!("{}\u{200D}\u{1F4BB}", "a".repeat(23)), "P");
        assert_eq!(name, "a".repeat(23));
    }

    #[test]
    fn account_names_and_ids_are_bounded() {
        let ids = with_accounts();
        let token = account_token(serde_json::json!({
            "sub": "u1", "iss": "https://id.test",
            "name": format!("  {}\u{0}  ", "\u{1F600}".repeat(1000)),
        }));
        let who = ids.verify(&token).unwrap();
        assert_eq!(who.id, "a_u1");
        assert_eq!(who.name, "\u{1F600}".repeat(MAX_NAME_CHARS));
        for name in [serde_json::json!(" \u{200B} "), serde_json::json!(null)] {
            let token = account_token(
                serde_json::json!({"sub": "u1", "iss": "https://id.test", "name": name}),
            );
            assert_eq!(ids.verify(&token).unwrap().name, "Player");
        }
        let token = account_token(serde_json::json!({"sub": "u1", "iss": "https://id.test"}));
        assert_eq!(ids.verify(&token).unwrap().name, "Player");
        let sub = "s".repeat(MAX_SUB_BYTES);
        let token = account_token(serde_json::json!({"sub": sub, "iss": "https://id.test"}));
        assert_eq!(ids.verify(&token).unwrap().id, format!("a_{sub}"));
    }

    #[test]
    fn doubtful_claims_are_refused() {
        let ids = with_accounts();
        for claims in [
            serde_json::json!({"sub": "   ", "iss": "https://id.test"}),
            serde_json::json!({"sub": "", "iss": "https://id.test"}),
            serde_json::json!({"sub": "u1\nu2", "iss": "https://id.test"}),
            serde_json::json!({"sub": "s".repeat(MAX_SUB_BYTES + 1), "iss": "https://id.test"}),
            serde_json::json!({"sub": "u1", "iss": ["https://id.test"]}),
            serde_json::json!({"sub": "u1", "iss": ["https://id.test", "https://other"]}),
            serde_json::json!({"sub": "u1", "iss": "https://id.test", "name": 7}),
        ] {
            assert_eq!(
                ids.verify(&account_token(claims.clone())),
                Err(InvalidToken::BadClaims),
                "{claims}"
            );
        }
        let token = account_token(serde_json::json!({"sub": "u1", "iss": "https://other"}));
        assert_eq!(ids.verify(&token), Err(InvalidToken::WrongIssuer));
        // A token too long to echo in `welcome` is not read at all.
        let token = account_token(serde_json::json!({
            "sub": "u1", "iss": "https://id.test", "pad": "x".repeat(MAX_TOKEN_BYTES),
        }));
        assert_eq!(ids.verify(&token), Err(InvalidToken::TooLong));
    }

    #[test]
    fn guest_tokens_are_held_to_the_same_bounds() {
        let ids = Identities::new(b"guest-secret");
        let guest = |sub: &str, name: &str| {
            let claims = GuestClaims {
                sub: sub.into(),
                name: name.into(),
                iss: ISSUER.into(),
                exp: u64::MAX / 2,
                guest: true,
            };
            let key = EncodingKey::from_secret(b"guest-secret").unwrap();
            jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &key).unwrap()
        };
        let who = ids.verify(&guest("g_1", &"\u{1F600}".repeat(50))).unwrap();
        assert_eq!(who.name, "\u{1F600}".repeat(MAX_NAME_CHARS));
        assert_eq!(ids.verify(&guest("g_1", "\u{0}")).unwrap().name, "Guest");
        assert_eq!(ids.verify(&guest(" ", "x")), Err(InvalidToken::BadClaims));
        let (who, _) = ids.new_guest();
        assert_eq!(normalise_name(&who.name, "Guest"), who.name);
    }
}
