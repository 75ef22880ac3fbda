//! Fixtures and a test-only encryptor that mirrors Feishu's.

use aes::cipher::{BlockEncryptMut, KeyIvInit, block_padding::Pkcs7};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use channel_feishu::CallbackSecrets;
use chrono::{DateTime, TimeZone, Utc};
use http::{HeaderMap, HeaderValue};
use serde_json::Value;

/// The timestamp every signed fixture carries (2026-01-01T00:00:00Z).
pub const FIXTURE_TS: i64 = 1_767_225_600;
pub const TOKEN: &str = "example_verification_token_0001";
pub const ENCRYPT_KEY: &str = "example_encrypt_key_for_tests";

pub fn fixture_text(name: &str) -> String {
    let path = format!("{}/../../tests/fixtures/feishu/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

pub fn fixture(name: &str) -> Value {
    serde_json::from_str(&fixture_text(name)).unwrap()
}

pub fn vectors() -> Value {
    fixture("crypto_vectors.json")
}

pub fn fixture_now() -> DateTime<Utc> {
    Utc.timestamp_opt(FIXTURE_TS, 0).unwrap()
}

pub fn secrets(encrypt_key: Option<&str>) -> CallbackSecrets {
    CallbackSecrets { verification_token: TOKEN.to_owned(), encrypt_key: encrypt_key.map(str::to_owned) }
}

/// Headers from a JSON object of name → value.
pub fn headers_from(obj: &Value) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for (name, value) in obj.as_object().unwrap() {
        headers.insert(
            http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            HeaderValue::from_str(value.as_str().unwrap()).unwrap(),
        );
    }
    headers
}

pub fn signed_headers(timestamp: &str, nonce: &str, signature: &str) -> HeaderMap {
    headers_from(&serde_json::json!({
        "X-Lark-Request-Timestamp": timestamp,
        "X-Lark-Request-Nonce": nonce,
        "X-Lark-Signature": signature,
    }))
}

/// Encrypts like Feishu: base64(IV ‖ AES-256-CBC(SHA-256(key), IV, PKCS#7(plaintext))).
pub fn encrypt(encrypt_key: &str, iv: [u8; 16], plaintext: &[u8]) -> String {
    let key = channel_feishu::crypto::aes_key(encrypt_key);
    let ciphertext =
        cbc::Encryptor::<aes::Aes256>::new(&key.into(), &iv.into()).encrypt_padded_vec_mut::<Pkcs7>(plaintext);
    let mut out = iv.to_vec();
    out.extend_from_slice(&ciphertext);
    BASE64.encode(out)
}

/// An encrypted, SHA-256-signed body with its headers, for `plaintext` at `timestamp`.
pub fn encrypted_request(encrypt_key: &str, plaintext: &[u8], timestamp: i64) -> (HeaderMap, Vec<u8>) {
    let body = serde_json::json!({ "encrypt": encrypt(encrypt_key, [7; 16], plaintext) }).to_string();
    let ts = timestamp.to_string();
    let sig = channel_feishu::crypto::signature_sha256(&ts, "nonce-1", encrypt_key, body.as_bytes());
    (signed_headers(&ts, "nonce-1", &sig), body.into_bytes())
}
