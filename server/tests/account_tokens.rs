//! The account-token matrix: every malformed or misused token is refused
//! with a clear reason; good tokens of each algorithm are accepted.

use std::time::{SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use jumpgate_server::identity::{AccountSettings, Identities, InvalidToken};
use serde_json::json;

const RSA_PRIVATE: &[u8] = include_bytes!("keys/rsa_private.pem");
const RSA_PUBLIC: &[u8] = include_bytes!("keys/rsa_public.pem");
const ED_PRIVATE: &[u8] = include_bytes!("keys/ed25519_private.pem");
const ED_PUBLIC: &[u8] = include_bytes!("keys/ed25519_public.pem");
const HS_SECRET: &[u8] = b"issuer-shared-secret-for-tests";

fn identities() -> Identities {
    let settings = AccountSettings {
        issuer: "https://id.example".into(),
        audience: "jumpgate".into(),
        hs256: vec![("hs1".into(), HS_SECRET.to_vec())],
        rs256: vec![("rs1".into(), RSA_PUBLIC.to_vec())],
        eddsa: vec![("ed1".into(), ED_PUBLIC.to_vec())],
    };
    Identities::with_accounts(b"guest-secret", Some(&settings)).unwrap()
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn claims() -> serde_json::Value {
    json!({
        "sub": "u123",
        "name": "Ada",
        "email": "ada@example.com",
        "iss": "https://id.example",
        "aud": "jumpgate",
        "exp": now() + 600,
    })
}

fn sign(alg: Algorithm, kid: &str, key: &EncodingKey, claims: &serde_json::Value) -> String {
    let mut header = Header::new(alg);
    header.kid = Some(kid.into());
    jsonwebtoken::encode(&header, claims, key).unwrap()
}

fn hs(claims: &serde_json::Value) -> String {
    sign(
        Algorithm::HS256,
        "hs1",
        &EncodingKey::from_secret(HS_SECRET).unwrap(),
        claims,
    )
}

fn b64(bytes: &[u8]) -> String {
    // URL-safe base64 without padding, written out to keep the test
    // independent of the library under test.
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..=chunk.len() {
            out.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

#[test]
fn good_tokens_of_every_algorithm_are_accepted_without_the_email() {
    let ids = identities();
    let c = claims();
    let rs = sign(
        Algorithm::RS256,
        "rs1",
        &EncodingKey::from_rsa_pem(RSA_PRIVATE).unwrap(),
        &c,
    );
    let ed = sign(
        Algorithm::EdDSA,
        "ed1",
        &EncodingKey::from_ed_pem(ED_PRIVATE).unwrap(),
        &c,
    );
    for token in [hs(&c), rs, ed] {
        let who = ids.verify(&token).unwrap();
        assert_eq!(who.id, "a_u123");
        assert_eq!(who.name, "Ada");
        assert!(!who.guest);
        assert!(
            !format!("{who:?}").contains("ada@example.com"),
            "the email is not kept"
        );
    }
    // Within the leeway is still fine.
    let mut c = claims();
    c["exp"] = json!(now() - 10);
    assert!(ids.verify(&hs(&c)).is_ok());
}

#[test]
fn the_token_matrix_is_refused_with_clear_reasons() {
    let ids = identities();
    let mut cases: Vec<(&str, String, InvalidToken)> = Vec::new();

    let header = b64(br#"{"alg":"none","typ":"JWT","kid":"hs1"}"#);
    let payload = b64(claims().to_string().as_bytes());
    cases.push((
        "alg none",
        format!("{header}.{payload}."),
        InvalidToken::Malformed,
    ));

    let confused = sign(
        Algorithm::HS256,
        "rs1",
        &EncodingKey::from_secret(RSA_PUBLIC).unwrap(),
        &claims(),
    );
    cases.push((
        "HS256 with the RS256 public key",
        confused,
        InvalidToken::WrongAlgorithm,
    ));

    let wrong = sign(
        Algorithm::HS256,
        "hs1",
        &EncodingKey::from_secret(b"not the secret").unwrap(),
        &claims(),
    );
    cases.push(("wrong key", wrong, InvalidToken::BadSignature));

    let mut c = claims();
    c["exp"] = json!(now() - 120);
    cases.push(("expired beyond the leeway", hs(&c), InvalidToken::Expired));

    let mut c = claims();
    c["nbf"] = json!(now() + 600);
    cases.push(("nbf in the future", hs(&c), InvalidToken::NotYetValid));

    let mut c = claims();
    c.as_object_mut().unwrap().remove("exp");
    cases.push(("missing exp", hs(&c), InvalidToken::BadClaims));

    let mut c = claims();
    c["exp"] = json!((now() + 600).to_string());
    cases.push(("string exp", hs(&c), InvalidToken::BadClaims));

    let mut c = claims();
    c["iss"] = json!("https://evil.example");
    cases.push(("wrong iss", hs(&c), InvalidToken::WrongIssuer));

    let mut c = claims();
    c["aud"] = json!("someone-else");
    cases.push(("wrong aud", hs(&c), InvalidToken::WrongAudience));

    let unknown = sign(
        Algorithm::HS256,
        "nope",
        &EncodingKey::from_secret(HS_SECRET).unwrap(),
        &claims(),
    );
    cases.push(("unknown kid", unknown, InvalidToken::UnknownKey));

    let good = hs(&claims());
    let truncated = good[..good.len() - 6].to_owned();
    cases.push(("truncated signature", truncated, InvalidToken::Malformed));

    let mut failures = Vec::new();
    for (name, token, expected) in &cases {
        match ids.verify(token) {
            Ok(who) => failures.push(format!("{name}: accepted as {who:?}")),
            Err(got) if got != *expected => {
                failures.push(format!("{name}: refused as {got:?}, expected {expected:?}"))
            }
            Err(got) => assert!(!got.to_string().is_empty()),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn guest_tokens_still_work_and_accounts_are_off_without_an_issuer() {
    let ids = identities();
    let (guest, token) = ids.new_guest();
    assert_eq!(ids.verify(&token).unwrap(), guest);
    let guests_only = Identities::new(b"guest-secret");
    assert_eq!(
        guests_only.verify(&hs(&claims())),
        Err(InvalidToken::UnknownKey)
    );
}
