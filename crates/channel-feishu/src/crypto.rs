//! Feishu's callback cryptography: AES-256-CBC decryption and the two request signatures.
//!
//! Source: Feishu open-platform docs, "Encrypt Key" configuration and request signature
//! verification; the shapes match the official SDKs (see `tests/fixtures/feishu/crypto_vectors.json`).

use aes::cipher::{BlockDecryptMut, KeyIvInit, block_padding::Pkcs7};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use sha1::Sha1;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

type Aes256CbcDec = cbc::Decryptor<aes::Aes256>;

/// Why an `encrypt` field could not be decrypted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecryptError {
    #[error("the ciphertext is not valid base64")]
    Base64,
    #[error("the ciphertext is not an IV plus a positive whole number of 16-byte blocks")]
    Length,
    #[error("bad PKCS#7 padding (wrong key or corrupted ciphertext)")]
    Padding,
}

/// The AES-256 key for an Encrypt Key: SHA-256 of its UTF-8 bytes (32 bytes).
pub fn aes_key(encrypt_key: &str) -> [u8; 32] {
    Sha256::digest(encrypt_key.as_bytes()).into()
}

/// Decrypts Feishu's `encrypt` field: base64 (standard alphabet, padded) of IV (16 bytes) ‖
/// AES-256-CBC ciphertext with PKCS#7 padding, key = [`aes_key`]. Returns the plaintext bytes
/// (normally UTF-8 JSON; the caller parses them).
///
/// # Errors
/// [`DecryptError`] when the base64, the length or the padding is wrong. A wrong key is reported
/// as bad padding, or yields garbage that fails later JSON parsing.
pub fn decrypt(key: &[u8; 32], encrypt: &str) -> Result<Vec<u8>, DecryptError> {
    let data = BASE64.decode(encrypt.trim().as_bytes()).map_err(|_| DecryptError::Base64)?;
    if data.len() < 32 || data.len() % 16 != 0 {
        return Err(DecryptError::Length);
    }
    let (iv, ciphertext) = data.split_at(16);
    let decryptor = Aes256CbcDec::new_from_slices(key, iv).map_err(|_| DecryptError::Length)?;
    decryptor.decrypt_padded_vec_mut::<Pkcs7>(ciphertext).map_err(|_| DecryptError::Padding)
}

/// The new-style request signature: lowercase hex SHA-256 of
/// `timestamp ‖ nonce ‖ encrypt_key ‖ raw_body` (the exact request bytes), as sent in
/// `X-Lark-Signature`.
pub fn signature_sha256(timestamp: &str, nonce: &str, encrypt_key: &str, body: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update(timestamp.as_bytes());
    h.update(nonce.as_bytes());
    h.update(encrypt_key.as_bytes());
    h.update(body);
    hex::encode(h.finalize())
}

/// The legacy card-callback signature: lowercase hex SHA-1 of
/// `timestamp ‖ nonce ‖ verification_token ‖ raw_body`, as sent in `X-Lark-Signature`.
pub fn signature_sha1(timestamp: &str, nonce: &str, verification_token: &str, body: &[u8]) -> String {
    let mut h = Sha1::new();
    h.update(timestamp.as_bytes());
    h.update(nonce.as_bytes());
    h.update(verification_token.as_bytes());
    h.update(body);
    hex::encode(h.finalize())
}

/// Compares two secrets or signatures in constant time (for equal lengths). Hex signatures are
/// compared case-insensitively by the caller lowering the received one first.
pub fn ct_eq(a: &str, b: &str) -> bool {
    a.as_bytes().ct_eq(b.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn official_hello_world_vector_decrypts() {
        let plain = decrypt(&aes_key("test key"), "P37w+VZImNgPEO1RBhJ6RtKl7n6zymIbEG1pReEzghk=").unwrap();
        assert_eq!(plain, b"hello world");
    }

    #[test]
    fn short_or_ragged_ciphertext_is_a_length_error() {
        let key = aes_key("k");
        assert_eq!(decrypt(&key, &BASE64.encode([0u8; 16])), Err(DecryptError::Length));
        assert_eq!(decrypt(&key, &BASE64.encode([0u8; 40])), Err(DecryptError::Length));
        assert_eq!(decrypt(&key, "%%%"), Err(DecryptError::Base64));
    }

    #[test]
    fn ct_eq_distinguishes() {
        assert!(ct_eq("abc", "abc"));
        assert!(!ct_eq("abc", "abd"));
        assert!(!ct_eq("abc", "ab"));
    }
}
