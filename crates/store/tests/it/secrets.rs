//! Secrets at rest: the raw tables hold no plaintext; the right key decrypts, a wrong one fails.

use serde_json::json;
use store::{ConnectorKind, NewChannel, NewConnector, StoreError};

use crate::support::{backends, open, raw_strings, sqlite};

const APP_SECRET: &str = "app-secret-5f2c9a";
const DB_PASSWORD: &str = "db-password-77e1";
const TOKEN: &str = "bearer-token-c0ffee";

#[tokio::test]
async fn no_plaintext_secret_in_the_tables() {
    for db in backends().await {
        let s = &db.store;
        let org = s.create_org("acme").await.unwrap();
        let config =
            json!({"app_id": "cli_1", "app_secret": APP_SECRET, "verification_token": "vt", "chat_id": "oc_1"});
        let channel = s
            .create_channel(&NewChannel {
                org_id: org.id.clone(),
                kind: "feishu".to_owned(),
                name: "ops".to_owned(),
                config: config.clone(),
                is_active: true,
            })
            .await
            .unwrap();
        let url = format!("postgres://reader:{DB_PASSWORD}@db.internal/sales");
        let connector = s
            .create_connector(&NewConnector {
                org_id: org.id.clone(),
                name: "sales".to_owned(),
                kind: ConnectorKind::Database,
                base_url: None,
                url: Some(url.clone()),
                auth: Some(json!({"token": TOKEN})),
                rate_limit: None,
                actions: vec![],
            })
            .await
            .unwrap();

        let mut raw = raw_strings(s, "SELECT * FROM channels").await;
        raw.extend(raw_strings(s, "SELECT * FROM connectors").await);
        assert!(!raw.is_empty());
        for secret in [APP_SECRET, DB_PASSWORD, TOKEN] {
            assert!(raw.iter().all(|v| !v.contains(secret)), "{}: {secret} stored in plaintext", db.label);
        }

        let got = s.get_channel(&channel.id).await.unwrap().unwrap();
        assert_eq!(got.config, config, "{}", db.label);
        assert_eq!(s.list_channels(&org.id).await.unwrap(), vec![got]);
        let got = s.get_connector(&connector.id).await.unwrap().unwrap();
        assert_eq!((got.url.as_deref(), got.auth), (Some(url.as_str()), Some(json!({"token": TOKEN}))));

        // Another key cannot read them.
        let wrong = open(&db.url, Some(&"ff".repeat(32))).await;
        assert_eq!(wrong.get_channel(&channel.id).await, Err(StoreError::Crypto), "{}", db.label);
        assert_eq!(wrong.get_connector(&connector.id).await, Err(StoreError::Crypto));
    }
}

#[tokio::test]
async fn sqlite_without_a_key_uses_a_private_key_file_that_survives_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("k.db");
    let url = format!("sqlite://{}?mode=rwc", db_path.display());
    let first = open(&url, None).await;
    first.migrate().await.unwrap();
    let org = first.create_org("acme").await.unwrap();
    let channel = first
        .create_channel(&NewChannel {
            org_id: org.id,
            kind: "feishu".to_owned(),
            name: "ops".to_owned(),
            config: json!({"app_secret": APP_SECRET}),
            is_active: true,
        })
        .await
        .unwrap();
    first.close().await.unwrap();

    let key_file = dir.path().join("k.db.key");
    assert!(key_file.exists());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        assert_eq!(std::fs::metadata(&key_file).unwrap().permissions().mode() & 0o777, 0o600);
    }
    let key_text = std::fs::read_to_string(&key_file).unwrap();
    assert!(!key_text.contains(APP_SECRET));

    let second = open(&url, None).await;
    let got = second.get_channel(&channel.id).await.unwrap().unwrap();
    assert_eq!(got.config, json!({"app_secret": APP_SECRET}));
}

#[tokio::test]
async fn a_malformed_key_is_a_config_error() {
    let db = sqlite().await;
    let mut config = store::StoreConfig::new(&db.url);
    config.secret_key = Some("not-a-key".to_owned());
    let err = store::Store::connect_with(config).await.unwrap_err();
    assert!(matches!(err, StoreError::Config(_)), "{err:?}");
    assert!(!err.to_string().contains("not-a-key"));
}
