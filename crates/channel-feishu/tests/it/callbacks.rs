//! `decode_callback` on every fixture, the tolerant parsing rules and the negative cases.

use channel_core::Decision;
use channel_feishu::crypto::{aes_key, decrypt, signature_sha1};
use channel_feishu::{
    Callback, CallbackError, CardAction, MAX_BODY_BYTES, ToastKind, card_action_response, challenge_response,
    decode_callback,
};
use chrono::{Duration, TimeZone, Utc};
use http::HeaderMap;
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::support::*;

fn card_action(result: Result<Callback, CallbackError>) -> CardAction {
    match result {
        Ok(Callback::CardAction(action)) => action,
        other => panic!("expected a card action, got {other:?}"),
    }
}

fn encrypted_fixture() -> (HeaderMap, Vec<u8>) {
    let v = &vectors()["encrypted_card_action"];
    (headers_from(&v["headers"]), v["raw_body"].as_str().unwrap().as_bytes().to_vec())
}

fn legacy_fixture() -> (HeaderMap, Vec<u8>) {
    let v = &vectors()["legacy_card_action_sha1"];
    (headers_from(&v["headers"]), v["raw_body"].as_str().unwrap().as_bytes().to_vec())
}

// --- fixtures ---------------------------------------------------------------------------------

#[test]
fn official_hello_world_vector() {
    let v = &vectors()["official_hello_world"];
    let key = aes_key(v["encrypt_key"].as_str().unwrap());
    let plain = decrypt(&key, v["encrypt"].as_str().unwrap()).unwrap();
    assert_eq!(plain, v["plaintext"].as_str().unwrap().as_bytes());
}

#[test]
fn encrypted_signed_card_action_fixture_decodes_to_the_plaintext_fixture() {
    let v = &vectors()["encrypted_card_action"];
    assert_eq!(v["encrypt_key"], ENCRYPT_KEY);
    assert_eq!(v["verification_token"], TOKEN);
    // The ciphertext holds exactly card_action_trigger_v2.json.
    let outer: Value = serde_json::from_str(v["raw_body"].as_str().unwrap()).unwrap();
    let plain = decrypt(&aes_key(ENCRYPT_KEY), outer["encrypt"].as_str().unwrap()).unwrap();
    let plain: Value = serde_json::from_slice(&plain).unwrap();
    assert_eq!(plain, fixture(v["plaintext_file"].as_str().unwrap()));

    let (headers, body) = encrypted_fixture();
    let action = card_action(decode_callback(&headers, &body, &secrets(Some(ENCRYPT_KEY)), fixture_now()));
    assert_eq!(
        action,
        CardAction {
            confirmation_id: Some("0193a0c4-7b1e-7c55-9e0a-5c1f2b3d4e5f".into()),
            decision: Some(Decision::Approve),
            value: json!({"confirmation_id": "0193a0c4-7b1e-7c55-9e0a-5c1f2b3d4e5f", "decision": "approve"}),
            action_name: Some("btn_approve_0193a0c4".into()),
            operator_open_id: Some("ou_example00000000000000000000007".into()),
            operator_user_id: Some("example_user_7".into()),
            open_message_id: Some("om_example00000000000000000000007".into()),
            open_chat_id: Some("oc_example00000000000000000000007".into()),
            token: Some("c-example-update-token-0007".into()),
            event_id: Some("5e3702a84e847582be8db7fb73283c02".into()),
            create_time: Some(Utc.timestamp_opt(FIXTURE_TS, 0).unwrap()),
            tenant_key: Some("example_tenant_0001".into()),
            legacy: false,
        }
    );
    assert_eq!(action.dedup_key(), "5e3702a84e847582be8db7fb73283c02");
    assert_eq!(action.operator_id(), Some("ou_example00000000000000000000007"));
}

#[test]
fn plaintext_card_action_fixture_without_encrypt_key() {
    let body = fixture_text("card_action_trigger_v2.json");
    let action = card_action(decode_callback(&HeaderMap::new(), body.as_bytes(), &secrets(None), fixture_now()));
    assert_eq!(action.decision, Some(Decision::Approve));
    assert_eq!(action.event_id.as_deref(), Some("5e3702a84e847582be8db7fb73283c02"));
    assert!(!action.legacy);
}

#[test]
fn plain_url_verification_fixture() {
    let body = fixture_text("url_verification.json");
    for key in [None, Some(ENCRYPT_KEY)] {
        let got = decode_callback(&HeaderMap::new(), body.as_bytes(), &secrets(key), fixture_now());
        assert_eq!(got, Ok(Callback::UrlVerification { challenge: "example-challenge-9c1d".into() }));
    }
}

#[test]
fn encrypted_url_verification_fixture_needs_no_signature() {
    let v = &vectors()["encrypted_url_verification"];
    let body = v["raw_body"].as_str().unwrap().as_bytes();
    let got = decode_callback(&HeaderMap::new(), body, &secrets(Some(ENCRYPT_KEY)), fixture_now()).unwrap();
    let Callback::UrlVerification { challenge } = got else { panic!("{got:?}") };
    assert_eq!(challenge_response(&challenge), v["expected_response"]);
}

#[test]
fn legacy_sha1_fixture() {
    let (headers, body) = legacy_fixture();
    // The plaintext fixture and the signed body are the same callback.
    assert_eq!(serde_json::from_slice::<Value>(&body).unwrap(), fixture("card_action_legacy_v1.json"));
    for key in [None, Some(ENCRYPT_KEY)] {
        let action = card_action(decode_callback(&headers, &body, &secrets(key), fixture_now()));
        assert!(action.legacy);
        assert_eq!(action.decision, Some(Decision::Reject));
        assert_eq!(action.confirmation_id.as_deref(), Some("0193a0c4-7b1e-7c55-9e0a-5c1f2b3d4e5f"));
        assert_eq!(action.operator_id(), Some("ou_example00000000000000000000007"));
        assert_eq!(action.open_message_id.as_deref(), Some("om_example00000000000000000000007"));
        assert_eq!(action.open_chat_id.as_deref(), Some("oc_example00000000000000000000007"));
        assert_eq!(action.token.as_deref(), Some("c-example-update-token-0007"));
        assert_eq!(action.event_id, None);
        assert!(action.dedup_key().starts_with("legacy:"));
    }
}

#[test]
fn callback_response_examples_fixture() {
    let examples = fixture("callback_response_examples.json");
    assert_eq!(card_action_response(ToastKind::Success, "Approval recorded.", None), examples["toast_only"]);
    let card = examples["toast_and_card"]["card"]["data"].clone();
    assert_eq!(
        card_action_response(ToastKind::Info, "This request was already approved.", Some(card)),
        examples["toast_and_card"]
    );
}

// --- tolerant parsing ---------------------------------------------------------------------------

fn v2_event(event: Value) -> Vec<u8> {
    json!({
        "schema": "2.0",
        "header": {
            "event_id": "ev-1", "token": TOKEN, "create_time": 1_767_225_600_123_i64,
            "event_type": "card.action.trigger",
        },
        "event": event,
    })
    .to_string()
    .into_bytes()
}

fn decode_plain_v2(event: Value) -> CardAction {
    card_action(decode_callback(&HeaderMap::new(), &v2_event(event), &secrets(None), fixture_now()))
}

#[test]
fn action_value_as_a_json_string() {
    let action = decode_plain_v2(json!({
        "operator": {"open_id": "ou_1"},
        "action": {"value": "{\"confirmation_id\":\"c-1\",\"decision\":\"reject\"}"},
        "context": {"open_message_id": "om_1", "open_chat_id": "oc_1"},
    }));
    assert_eq!(action.confirmation_id.as_deref(), Some("c-1"));
    assert_eq!(action.decision, Some(Decision::Reject));
    assert_eq!(action.value, json!({"confirmation_id": "c-1", "decision": "reject"}));
    assert_eq!(action.create_time, Some(Utc.timestamp_opt(FIXTURE_TS, 123_000_000).unwrap()));
}

#[test]
fn absent_or_foreign_action_value_is_not_an_approval() {
    for event in [
        json!({"operator": {"open_id": "ou_1"}, "action": {"tag": "button"}}),
        json!({"operator": {"open_id": "ou_1"}}),
        json!({"operator": {"open_id": "ou_1"}, "action": {"value": "not json"}}),
        json!({"operator": {"open_id": "ou_1"}, "action": {"value": {"decision": "maybe", "confirmation_id": "c"}}}),
    ] {
        let action = decode_plain_v2(event.clone());
        assert_eq!(action.decision, None, "{event}");
        assert_eq!(action.operator_id(), Some("ou_1"));
    }
    let action = decode_plain_v2(json!({"action": {"value": "not json"}}));
    assert_eq!(action.value, json!("not json"));
    assert_eq!(action.confirmation_id, None);
}

#[test]
fn operator_falls_back_to_user_id_and_ids_to_top_level() {
    let action = decode_plain_v2(json!({
        "operator": {"user_id": "u_7"},
        "open_message_id": "om_top",
        "open_chat_id": "oc_top",
        "action": {"value": {"confirmation_id": 42, "decision": "Approved"}},
    }));
    assert_eq!(action.operator_open_id, None);
    assert_eq!(action.operator_id(), Some("u_7"));
    assert_eq!(action.open_message_id.as_deref(), Some("om_top"));
    assert_eq!(action.open_chat_id.as_deref(), Some("oc_top"));
    assert_eq!(action.confirmation_id.as_deref(), Some("42"));
    assert_eq!(action.decision, Some(Decision::Approve));
}

#[test]
fn unknown_event_types_are_acknowledged() {
    let body = json!({
        "schema": "2.0",
        "header": {"event_id": "ev-9", "token": TOKEN, "event_type": "im.message.receive_v1"},
        "event": {"message": {}},
    })
    .to_string();
    let got = decode_callback(&HeaderMap::new(), body.as_bytes(), &secrets(None), fixture_now());
    assert_eq!(got, Ok(Callback::Other { event_type: "im.message.receive_v1".into(), event_id: Some("ev-9".into()) }));

    let v1 = json!({"uuid": "u-1", "token": TOKEN, "ts": "1", "type": "event_callback", "event": {"type": "message"}});
    let got = decode_callback(&HeaderMap::new(), v1.to_string().as_bytes(), &secrets(None), fixture_now());
    assert_eq!(got, Ok(Callback::Other { event_type: "message".into(), event_id: Some("u-1".into()) }));
}

#[test]
fn own_encrypted_event_round_trips() {
    let plain = fixture_text("card_action_trigger_v2.json");
    let (headers, body) = encrypted_request(ENCRYPT_KEY, plain.as_bytes(), FIXTURE_TS + 30);
    let action = card_action(decode_callback(&headers, &body, &secrets(Some(ENCRYPT_KEY)), fixture_now()));
    assert_eq!(action.decision, Some(Decision::Approve));
}

#[test]
fn legacy_dedup_key_depends_on_every_part() {
    let (headers, body) = legacy_fixture();
    let base = card_action(decode_callback(&headers, &body, &secrets(None), fixture_now()));
    let mut keys = std::collections::HashSet::new();
    keys.insert(base.dedup_key());
    let mut changed = base.clone();
    changed.open_message_id = Some("om_other".into());
    keys.insert(changed.dedup_key());
    let mut changed = base.clone();
    changed.operator_open_id = Some("ou_other".into());
    keys.insert(changed.dedup_key());
    let mut changed = base.clone();
    changed.value = json!({"decision": "approve"});
    keys.insert(changed.dedup_key());
    let mut changed = base.clone();
    changed.token = Some("c-other".into());
    keys.insert(changed.dedup_key());
    assert_eq!(keys.len(), 5);
    assert_eq!(base.dedup_key(), base.clone().dedup_key());
}

// --- negative cases -----------------------------------------------------------------------------

fn check_err(headers: &HeaderMap, body: &[u8], key: Option<&str>, expected: CallbackError, status: u16) {
    let got = decode_callback(headers, body, &secrets(key), fixture_now());
    assert_eq!(got, Err(expected.clone()));
    assert_eq!(expected.http_status(), status);
}

#[test]
fn tampered_encrypted_body_is_a_bad_signature() {
    let (headers, mut body) = encrypted_fixture();
    let at = body.len() - 10;
    body[at] = if body[at] == b'A' { b'B' } else { b'A' };
    check_err(&headers, &body, Some(ENCRYPT_KEY), CallbackError::BadSignature, 401);
}

#[test]
fn tampered_legacy_body_is_a_bad_signature() {
    let (headers, body) = legacy_fixture();
    let tampered = String::from_utf8(body).unwrap().replace("reject", "approve");
    check_err(&headers, tampered.as_bytes(), None, CallbackError::BadSignature, 401);
}

#[test]
fn wrong_encrypt_key_is_a_bad_signature() {
    let (headers, body) = encrypted_fixture();
    check_err(&headers, &body, Some("another key"), CallbackError::BadSignature, 401);
}

#[test]
fn wrong_key_on_an_unsigned_challenge_is_undecryptable() {
    // Unsigned challenges skip the signature, so a wrong key shows up as bad padding (or garbage).
    let v = &vectors()["encrypted_url_verification"];
    let got = decode_callback(
        &HeaderMap::new(),
        v["raw_body"].as_str().unwrap().as_bytes(),
        &secrets(Some("another key")),
        fixture_now(),
    );
    let err = got.unwrap_err();
    assert!(matches!(err, CallbackError::Undecryptable(_) | CallbackError::Malformed(_)), "{err:?}");
    assert_eq!(err.http_status(), 400);
}

#[test]
fn wrong_verification_token() {
    let body = fixture_text("card_action_trigger_v2.json").replace(TOKEN, "someone_elses_token");
    check_err(&HeaderMap::new(), body.as_bytes(), None, CallbackError::BadToken, 401);
    let challenge = fixture_text("url_verification.json").replace(TOKEN, "nope");
    check_err(&HeaderMap::new(), challenge.as_bytes(), None, CallbackError::BadToken, 401);
    // Inside an encrypted, correctly signed body too.
    let (headers, body) = encrypted_request(ENCRYPT_KEY, body.as_bytes(), FIXTURE_TS);
    check_err(&headers, &body, Some(ENCRYPT_KEY), CallbackError::BadToken, 401);
    // The legacy SHA-1 signature is keyed with the verification token.
    let (headers, body) = legacy_fixture();
    let got = decode_callback(&headers, &body, &wrong_token_secrets(), fixture_now());
    assert_eq!(got, Err(CallbackError::BadSignature));
}

fn wrong_token_secrets() -> channel_feishu::CallbackSecrets {
    channel_feishu::CallbackSecrets { verification_token: "wrong".into(), encrypt_key: None }
}

#[test]
fn replayed_or_stale_timestamps_are_refused() {
    let (headers, body) = encrypted_fixture();
    for now in [fixture_now() + Duration::seconds(301), fixture_now() - Duration::seconds(301)] {
        let got = decode_callback(&headers, &body, &secrets(Some(ENCRYPT_KEY)), now);
        let err = got.unwrap_err();
        assert!(matches!(err, CallbackError::Stale { timestamp: FIXTURE_TS, .. }), "{err:?}");
        assert_eq!(err.http_status(), 401);
    }
    // Within five minutes it is fine.
    let ok = decode_callback(&headers, &body, &secrets(Some(ENCRYPT_KEY)), fixture_now() + Duration::seconds(300));
    assert!(matches!(ok, Ok(Callback::CardAction(_))));

    let (headers, body) = legacy_fixture();
    let got = decode_callback(&headers, &body, &secrets(None), fixture_now() + Duration::hours(1));
    assert!(matches!(got, Err(CallbackError::Stale { .. })));
}

#[test]
fn replayed_event_has_the_same_dedup_key() {
    // A replay within the window decodes again; the server refuses it through the store by key.
    let (headers, body) = encrypted_fixture();
    let first = card_action(decode_callback(&headers, &body, &secrets(Some(ENCRYPT_KEY)), fixture_now()));
    let again = card_action(decode_callback(
        &headers,
        &body,
        &secrets(Some(ENCRYPT_KEY)),
        fixture_now() + Duration::seconds(60),
    ));
    assert_eq!(first.dedup_key(), again.dedup_key());
    assert_eq!(CallbackError::Duplicate { key: first.dedup_key() }.http_status(), 200);
}

#[test]
fn truncated_ciphertext() {
    let outer: Value = serde_json::from_str(vectors()["encrypted_card_action"]["raw_body"].as_str().unwrap()).unwrap();
    let encrypt = outer["encrypt"].as_str().unwrap();
    // Cut to a whole number of base64 quanta that is not a whole number of AES blocks.
    let cut = &encrypt[..encrypt.len() - 8];
    let (headers, body) = signed_body(&json!({"encrypt": cut}).to_string());
    let err = decode_callback(&headers, &body, &secrets(Some(ENCRYPT_KEY)), fixture_now()).unwrap_err();
    assert!(matches!(err, CallbackError::Undecryptable(_)), "{err:?}");
    assert_eq!(err.http_status(), 400);
    // Only an IV, no blocks.
    let (headers, body) = signed_body(&json!({"encrypt": &encrypt[..24]}).to_string());
    let err = decode_callback(&headers, &body, &secrets(Some(ENCRYPT_KEY)), fixture_now()).unwrap_err();
    assert!(matches!(err, CallbackError::Undecryptable(_)), "{err:?}");
}

/// Signs an arbitrary body with the fixture key at the fixture time.
fn signed_body(body: &str) -> (HeaderMap, Vec<u8>) {
    let ts = FIXTURE_TS.to_string();
    let sig = channel_feishu::crypto::signature_sha256(&ts, "n", ENCRYPT_KEY, body.as_bytes());
    (signed_headers(&ts, "n", &sig), body.as_bytes().to_vec())
}

#[test]
fn bad_padding() {
    // Encrypt 32 bytes without padding: the last block then ends in 0x10-less garbage.
    let key = aes_key(ENCRYPT_KEY);
    let iv = [1u8; 16];
    let mut blocks = [b'{'; 32];
    blocks[31] = 0; // A final padding byte of 0 is never valid PKCS#7.
    use aes::cipher::{BlockEncryptMut, KeyIvInit, block_padding::NoPadding};
    let ct = cbc::Encryptor::<aes::Aes256>::new(&key.into(), &iv.into()).encrypt_padded_vec_mut::<NoPadding>(&blocks);
    let mut data = iv.to_vec();
    data.extend(ct);
    use base64::Engine as _;
    let encrypt = base64::engine::general_purpose::STANDARD.encode(data);
    let (headers, body) = signed_body(&json!({"encrypt": encrypt}).to_string());
    let err = decode_callback(&headers, &body, &secrets(Some(ENCRYPT_KEY)), fixture_now()).unwrap_err();
    assert_eq!(err, CallbackError::Undecryptable("bad PKCS#7 padding (wrong key or corrupted ciphertext)".into()));
}

#[test]
fn non_json_plaintext_is_malformed() {
    for plain in [&b"hello world"[..], b"[1,2,3]", b"\xff\xfe"] {
        let (headers, body) = encrypted_request(ENCRYPT_KEY, plain, FIXTURE_TS);
        let err = decode_callback(&headers, &body, &secrets(Some(ENCRYPT_KEY)), fixture_now()).unwrap_err();
        assert!(matches!(err, CallbackError::Malformed(_)), "{err:?}");
        assert_eq!(err.http_status(), 400);
    }
}

#[test]
fn plain_event_refused_when_an_encrypt_key_is_configured() {
    let body = fixture_text("card_action_trigger_v2.json");
    check_err(&HeaderMap::new(), body.as_bytes(), Some(ENCRYPT_KEY), CallbackError::NotEncrypted, 401);
}

#[test]
fn encrypted_event_without_signature_headers_is_refused() {
    let (_, body) = encrypted_fixture();
    check_err(&HeaderMap::new(), &body, Some(ENCRYPT_KEY), CallbackError::MissingSignature("X-Lark-Signature"), 401);
}

#[test]
fn encrypted_body_without_a_configured_key_is_undecryptable() {
    let (headers, body) = encrypted_fixture();
    let err = decode_callback(&headers, &body, &secrets(None), fixture_now()).unwrap_err();
    assert!(matches!(err, CallbackError::Undecryptable(_)));
}

#[test]
fn legacy_callback_needs_its_signature() {
    let (headers, body) = legacy_fixture();
    check_err(&HeaderMap::new(), &body, None, CallbackError::MissingSignature("X-Lark-Signature"), 401);
    let mut no_nonce = headers.clone();
    no_nonce.remove("x-lark-request-nonce");
    check_err(&no_nonce, &body, None, CallbackError::MissingSignature("X-Lark-Request-Nonce"), 401);
    // The signature is accepted in upper-case hex too.
    let ts = FIXTURE_TS.to_string();
    let sig = signature_sha1(&ts, "n", TOKEN, &body).to_ascii_uppercase();
    let got = decode_callback(&signed_headers(&ts, "n", &sig), &body, &secrets(None), fixture_now());
    assert!(matches!(got, Ok(Callback::CardAction(_))));
}

#[test]
fn too_large_and_not_json() {
    let big = vec![b' '; MAX_BODY_BYTES + 1];
    check_err(
        &HeaderMap::new(),
        &big,
        None,
        CallbackError::TooLarge { size: MAX_BODY_BYTES + 1, max: MAX_BODY_BYTES },
        400,
    );
    for body in [&b""[..], b"not json", b"[]", b"{\"encrypt\": 5}", b"{\"something\": 1}"] {
        let err = decode_callback(&HeaderMap::new(), body, &secrets(None), fixture_now()).unwrap_err();
        assert!(matches!(err, CallbackError::Malformed(_)), "{err:?}");
    }
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(body in proptest::collection::vec(any::<u8>(), 0..512), ts in any::<i64>()) {
        let headers = signed_headers(&ts.to_string(), "n", "00");
        for key in [None, Some(ENCRYPT_KEY)] {
            let _ = decode_callback(&headers, &body, &secrets(key), fixture_now());
            let _ = decode_callback(&HeaderMap::new(), &body, &secrets(key), fixture_now());
        }
    }

    #[test]
    fn arbitrary_encrypted_plaintexts_never_panic(plain in proptest::collection::vec(any::<u8>(), 0..256)) {
        let (headers, body) = encrypted_request(ENCRYPT_KEY, &plain, FIXTURE_TS);
        let _ = decode_callback(&headers, &body, &secrets(Some(ENCRYPT_KEY)), fixture_now());
    }

    #[test]
    fn arbitrary_card_events_never_panic(event in json_value(), create_time in json_value()) {
        // A correctly tokened envelope, so parsing reaches every tolerant field lookup.
        let body = json!({
            "schema": "2.0",
            "header": {"token": TOKEN, "event_type": "card.action.trigger", "create_time": create_time},
            "event": event,
        });
        let got = decode_callback(&HeaderMap::new(), body.to_string().as_bytes(), &secrets(None), fixture_now());
        prop_assert!(matches!(got, Ok(Callback::CardAction(_)) | Err(CallbackError::Malformed(_))));
    }

    #[test]
    fn arbitrary_json_values_never_panic(s in "\\{(\"(schema|header|event|action|value|type|token|encrypt|operator|context)\":(\"[a-z.]*\"|\\{\\}|1|null),?){0,6}\\}") {
        let _ = decode_callback(&HeaderMap::new(), s.as_bytes(), &secrets(None), fixture_now());
    }
}

/// Arbitrary JSON, biased towards the keys a card callback uses.
fn json_value() -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        Just("action".to_owned()),
        Just("value".to_owned()),
        Just("operator".to_owned()),
        Just("open_id".to_owned()),
        Just("user_id".to_owned()),
        Just("context".to_owned()),
        Just("open_message_id".to_owned()),
        Just("confirmation_id".to_owned()),
        Just("decision".to_owned()),
        Just("token".to_owned()),
        "[a-z_]{0,8}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        prop_oneof![Just("approve".to_owned()), Just("{\"decision\":\"reject\"}".to_owned()), ".{0,12}"]
            .prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            proptest::collection::btree_map(key.clone(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}
