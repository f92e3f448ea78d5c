//! Who is connected: guests, carried by tokens the server signs itself
//! (HS256), and accounts, carried by JWTs from an external issuer whose
//! keys (HS256 secrets, RS256 or EdDSA public keys, each with a `kid`) are
//! configured. An account's email is never kept.

use std::collections::HashMap;

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

/// Clock skew allowed on `exp` and `nbf`, in seconds.
pub const LEEWAY_SECS: u64 = 30;

/// How long a guest token stays valid.
const GUEST_TOKEN_DAYS: u64 = 30;
const ISSUER: &str = "jumpgate";

/// A player as the server knows them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    /// Stable id, shown to other clients (never an email).
    pub id: String,
    /// Display name.
    pub name: String,
    pub guest: bool,
}

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
    #[serde(default)]
    name: Option<String>,
    // `email` may be present; it is deliberately not read.
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
        if claims.sub.is_empty() {
            return Err(InvalidToken::BadClaims);
        }
        Ok(Identity {
            id: format!("a_{}", claims.sub),
            name: claims
                .name
                .filter(|n| !n.trim().is_empty())
                .unwrap_or_else(|| "Player".to_owned()),
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

    fn token_for(&self, identity: &Identity) -> String {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
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
        if !data.claims.guest {
            return Err(InvalidToken::BadClaims);
        }
        Ok(Identity {
            id: data.claims.sub,
            name: data.claims.name,
            guest: data.claims.guest,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guest_tokens_round_trip_and_foreign_tokens_fail() {
        let ids = Identities::new(b"secret-one");
        let (who, token) = ids.new_guest();
        assert_eq!(ids.verify(&token).unwrap(), who);
        assert!(Identities::new(b"secret-two").verify(&token).is_err());
        assert!(ids.verify("not a token").is_err());
    }
}
