//! Who is connected: guest identities carried by tokens the server signs
//! itself (HS256 JWTs). Accounts from an external issuer will sit beside
//! guests here.

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

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

/// A token that does not prove an identity.
#[derive(Debug, thiserror::Error)]
#[error("invalid or expired token")]
pub struct InvalidToken;

/// Issues and checks identity tokens.
pub struct Identities {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
}

impl std::fmt::Debug for Identities {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Identities { .. }")
    }
}

impl Identities {
    pub fn new(secret: &[u8]) -> Identities {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.set_issuer(&[ISSUER]);
        validation.set_required_spec_claims(&["exp", "iss", "sub"]);
        validation.leeway = 30;
        Identities {
            encoding: EncodingKey::from_secret(secret).expect("an HMAC key takes any secret"),
            decoding: DecodingKey::from_secret(secret).expect("an HMAC key takes any secret"),
            validation,
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

    /// The identity a token proves.
    pub fn verify(&self, token: &str) -> Result<Identity, InvalidToken> {
        let data = jsonwebtoken::decode::<GuestClaims>(token, &self.decoding, &self.validation)
            .map_err(|_| InvalidToken)?;
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
