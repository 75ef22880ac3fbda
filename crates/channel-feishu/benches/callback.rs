//! Verify + decrypt + parse of a typical encrypted `card.action.trigger` callback (the
//! `encrypted_card_action` fixture). Target: ≤ 50 µs per callback.

use std::hint::black_box;

use channel_feishu::{CallbackSecrets, decode_callback};
use chrono::{TimeZone, Utc};
use criterion::{Criterion, criterion_group, criterion_main};
use http::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

fn callback(c: &mut Criterion) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/feishu/crypto_vectors.json");
    let vectors: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let v = &vectors["encrypted_card_action"];
    let mut headers = HeaderMap::new();
    for (name, value) in v["headers"].as_object().unwrap() {
        headers.insert(
            HeaderName::from_bytes(name.as_bytes()).unwrap(),
            HeaderValue::from_str(value.as_str().unwrap()).unwrap(),
        );
    }
    let body = v["raw_body"].as_str().unwrap().as_bytes().to_vec();
    let secrets = CallbackSecrets {
        verification_token: v["verification_token"].as_str().unwrap().to_owned(),
        encrypt_key: Some(v["encrypt_key"].as_str().unwrap().to_owned()),
    };
    let now = Utc.timestamp_opt(1_767_225_600, 0).unwrap();
    assert!(decode_callback(&headers, &body, &secrets, now).is_ok());

    c.bench_function("decode_encrypted_card_action", |b| {
        b.iter(|| decode_callback(black_box(&headers), black_box(&body), &secrets, now))
    });
}

criterion_group!(benches, callback);
criterion_main!(benches);
