//! Secrets at rest: [`SecretBox`].

use std::fmt;
use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use chacha20poly1305::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use chacha20poly1305::{Key, XChaCha20Poly1305, XNonce};

use crate::error::StoreError;

const PREFIX: &str = "v1:";
const NONCE_LEN: usize = 24;

/// An XChaCha20-Poly1305 AEAD keyed once; encrypts and decrypts the secret columns.
///
/// Key: 32 bytes, given as `TOLLGATE_SECRET_KEY` in standard base64 (44 characters, e.g. the
/// output of `openssl rand -base64 32`) or as 64 hex characters. Without it, a SQLite store uses a
/// generated key kept in a file beside the database (`<database path>.key`, mode 0600, base64) and
/// logs a warning; a PostgreSQL store has no key, and writing or reading a secret fails with
/// [`StoreError::Config`].
///
/// Ciphertext format (text column): `v1:` + base64(24-byte random nonce ‖ ciphertext ‖ 16-byte
/// tag). The associated data binds each ciphertext to its column and row (e.g.
/// `channels.config:<id>`), so a ciphertext copied to another row does not decrypt.
#[derive(Clone)]
pub struct SecretBox {
    cipher: XChaCha20Poly1305,
}

impl fmt::Debug for SecretBox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretBox(..)")
    }
}

impl SecretBox {
    /// A box keyed by `key` (32 bytes).
    pub fn new(key: &[u8; 32]) -> SecretBox {
        SecretBox { cipher: XChaCha20Poly1305::new(Key::from_slice(key)) }
    }

    /// Parses a key as `TOLLGATE_SECRET_KEY` gives it: 64 hex characters or standard base64 of 32
    /// bytes (surrounding whitespace ignored).
    ///
    /// Errors: [`StoreError::Config`] for anything else (the message never echoes the key).
    pub fn from_key_text(text: &str) -> Result<SecretBox, StoreError> {
        let text = text.trim();
        let bytes = if text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
            hex::decode(text).ok()
        } else {
            BASE64.decode(text).ok()
        };
        match bytes.as_deref().map(<[u8; 32]>::try_from) {
            Some(Ok(key)) => Ok(SecretBox::new(&key)),
            _ => Err(StoreError::Config(
                "TOLLGATE_SECRET_KEY must be 32 bytes as standard base64 (44 characters) or 64 hex characters"
                    .to_owned(),
            )),
        }
    }

    /// A fresh random key, in the base64 text form [`SecretBox::from_key_text`] reads.
    pub fn generate_key_text() -> String {
        BASE64.encode(XChaCha20Poly1305::generate_key(&mut OsRng))
    }

    /// Loads the key file at `path`, or creates it (mode 0600 on Unix) with a fresh key.
    ///
    /// Errors: [`StoreError::Config`] when the file cannot be read or written or holds no key.
    pub fn from_key_file(path: &Path) -> Result<SecretBox, StoreError> {
        let shown = path.display();
        match std::fs::read_to_string(path) {
            Ok(text) => SecretBox::from_key_text(&text)
                .map_err(|_| StoreError::Config(format!("key file {shown} does not hold a valid key"))),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                let text = SecretBox::generate_key_text();
                write_new_private_file(path, &text)
                    .map_err(|err| StoreError::Config(format!("cannot create key file {shown}: {err}")))?;
                // A concurrent creator may have won the race: the file on disk is the truth.
                let text = std::fs::read_to_string(path)
                    .map_err(|err| StoreError::Config(format!("cannot read key file {shown}: {err}")))?;
                SecretBox::from_key_text(&text)
            }
            Err(err) => Err(StoreError::Config(format!("cannot read key file {shown}: {err}"))),
        }
    }

    /// Encrypts `plaintext`, bound to `aad` (`<table>.<column>:<row id>`).
    pub fn seal(&self, aad: &str, plaintext: &[u8]) -> Result<String, StoreError> {
        let nonce = XChaCha20Poly1305::generate_nonce(&mut OsRng);
        let sealed = self
            .cipher
            .encrypt(&nonce, Payload { msg: plaintext, aad: aad.as_bytes() })
            .map_err(|_| StoreError::Crypto)?;
        let mut out = Vec::with_capacity(NONCE_LEN + sealed.len());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        Ok(format!("{PREFIX}{}", BASE64.encode(out)))
    }

    /// Decrypts what [`SecretBox::seal`] produced with the same `aad`.
    ///
    /// Errors: [`StoreError::Crypto`] for a wrong key, another row's ciphertext, or tampering.
    pub fn open(&self, aad: &str, sealed: &str) -> Result<Vec<u8>, StoreError> {
        let body = sealed.strip_prefix(PREFIX).ok_or(StoreError::Crypto)?;
        let bytes = BASE64.decode(body).map_err(|_| StoreError::Crypto)?;
        if bytes.len() < NONCE_LEN {
            return Err(StoreError::Crypto);
        }
        let (nonce, ciphertext) = bytes.split_at(NONCE_LEN);
        self.cipher
            .decrypt(XNonce::from_slice(nonce), Payload { msg: ciphertext, aad: aad.as_bytes() })
            .map_err(|_| StoreError::Crypto)
    }
}

#[cfg(unix)]
fn write_new_private_file(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    match std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path) {
        Ok(mut file) => file.write_all(text.as_bytes()),
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(err) => Err(err),
    }
}

#[cfg(not(unix))]
fn write_new_private_file(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    match std::fs::OpenOptions::new().write(true).create_new(true).open(path) {
        Ok(mut file) => file.write_all(text.as_bytes()),
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(err) => Err(err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_binding() {
        let sb = SecretBox::from_key_text(&SecretBox::generate_key_text()).unwrap();
        let sealed = sb.seal("channels.config:a", b"hunter2").unwrap();
        assert!(!sealed.contains("hunter2"));
        assert_eq!(sb.open("channels.config:a", &sealed).unwrap(), b"hunter2");
        assert_eq!(sb.open("channels.config:b", &sealed), Err(StoreError::Crypto));
        let other = SecretBox::from_key_text(&"ab".repeat(32)).unwrap();
        assert_eq!(other.open("channels.config:a", &sealed), Err(StoreError::Crypto));
    }

    #[test]
    fn key_text_formats() {
        assert!(SecretBox::from_key_text(&"0f".repeat(32)).is_ok());
        assert!(SecretBox::from_key_text(&BASE64.encode([7u8; 32])).is_ok());
        assert!(matches!(SecretBox::from_key_text("short"), Err(StoreError::Config(_))));
        assert!(matches!(SecretBox::from_key_text(&BASE64.encode([7u8; 31])), Err(StoreError::Config(_))));
    }
}
