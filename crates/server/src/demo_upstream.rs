//! The demo's connector upstream, served by the server itself under `/demo-upstream`, so the demo
//! needs no network: a tiny ERP with payments, customers and a long report.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::extract::{Path, State};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Value, json};

/// The path prefix the upstream is mounted at.
pub const PREFIX: &str = "/demo-upstream";

#[derive(Debug)]
struct Upstream {
    next_payment: AtomicU64,
    started: chrono::DateTime<chrono::Utc>,
}

/// The upstream's routes, to be nested at [`PREFIX`].
pub fn router() -> Router {
    let state = Arc::new(Upstream { next_payment: AtomicU64::new(0), started: chrono::Utc::now() });
    Router::new()
        .route("/payments", post(create_payment))
        .route("/customers/{id}", get(get_customer).patch(update_customer))
        .route("/reports/{name}", get(report))
        .route("/fx/{currency}", get(fx_rate))
        .with_state(state)
}

async fn create_payment(State(up): State<Arc<Upstream>>, Json(body): Json<Value>) -> Json<Value> {
    // Unique across restarts: the start time plus a counter.
    let n = up.next_payment.fetch_add(1, Ordering::SeqCst) + 1;
    let started = up.started.format("%Y%m%d%H%M%S");
    Json(json!({"payment_id": format!("pay_{started}_{n:03}"), "status": "submitted", "request": body}))
}

async fn get_customer(Path(id): Path<String>) -> Json<Value> {
    Json(json!({"id": id, "name": "Acme Trading Co.", "tier": "gold", "credit_limit_cny": 200000}))
}

async fn update_customer(Path(id): Path<String>, Json(body): Json<Value>) -> Json<Value> {
    Json(json!({"id": id, "updated": body}))
}

/// A report long enough (≈ 18,600 characters as compact JSON) for `result_truncate` to cut.
async fn report(Path(name): Path<String>) -> Json<Value> {
    let rows: Vec<Value> = (1..=200)
        .map(|i| json!({"line": i, "account": format!("6001-{i:04}"), "memo": "quarterly reconciliation entry", "amount_cny": i * 137}))
        .collect();
    Json(json!({"report": name, "rows": rows}))
}

async fn fx_rate(Path(currency): Path<String>) -> Json<Value> {
    // Illustrative CNY rates, not market data.
    let rate = match currency.to_ascii_uppercase().as_str() {
        "USD" => 0.1384,
        "EUR" => 0.1271,
        "JPY" => 20.74,
        "HKD" => 1.0772,
        "GBP" => 0.1093,
        _ => 1.0,
    };
    Json(json!({"base": "CNY", "currency": currency, "rate": rate}))
}
