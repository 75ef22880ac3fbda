use std::fmt::Write as _;

use serde_json::Value;
use sha2::{Digest, Sha256};

/// The canonical JSON text of `value`: no whitespace, object keys sorted by their UTF-8 bytes at
/// every depth, strings and numbers as `serde_json` writes them. Independent of whether
/// `serde_json`'s `preserve_order` feature is enabled somewhere in the build.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

/// Hex (lowercase, 64 chars) SHA-256 of [`canonical_json`]`(args)`. The audit log hashes original
/// and effective arguments with it, and the confirmation gate binds an approval to exactly these
/// arguments (`confirmation_requests.args_sha256`).
pub fn args_sha256(args: &Value) -> String {
    hex::encode(Sha256::digest(canonical_json(args).as_bytes()))
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push('{');
            for (i, (key, value)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                // Serializing a string cannot fail.
                let _ = write!(out, "{}", Value::String(key.clone()));
                out.push(':');
                write_canonical(value, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => {
            let _ = write!(out, "{scalar}");
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn key_order_does_not_change_the_hash() {
        let a: Value = serde_json::from_str(r#"{"b":1,"a":{"y":[1,{"d":2,"c":3}],"x":"é"}}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"a":{"x":"é","y":[1,{"c":3,"d":2}]},"b":1}"#).unwrap();
        assert_eq!(canonical_json(&a), r#"{"a":{"x":"é","y":[1,{"c":3,"d":2}]},"b":1}"#);
        assert_eq!(args_sha256(&a), args_sha256(&b));
        assert_ne!(args_sha256(&a), args_sha256(&json!({"b": 2})));
        assert_eq!(args_sha256(&json!({})).len(), 64);
        // SHA-256("{}")
        assert_eq!(args_sha256(&json!({})), "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a");
    }
}
