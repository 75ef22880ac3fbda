//! In-memory ports and a fake channel.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use channel_core::{ApprovalCard, ApprovalChannel, CardState, ChannelError};
use chrono::Utc;
use hook_builtins::ports::*;
use hook_builtins::{ConfirmationEvents, ConfirmationGateHook, ConfirmationHub, GateConfig, GateDeps};
use hook_core::{HookContext, meta};
use serde_json::Value;
use tokio::sync::mpsc;

#[derive(Default)]
pub struct MemStore {
    pub rows: Mutex<HashMap<String, ConfirmationRecord>>,
    pub down: AtomicBool,
    pub fail_set_message_id: AtomicBool,
    pub statuses_calls: AtomicU64,
    pub inserts: AtomicU64,
    /// Simulates a decision landing during the gate's final check: the next CAS to `expired`
    /// finds the row already approved by alice.
    pub approve_before_expire: AtomicBool,
}

impl MemStore {
    fn check(&self) -> Result<(), PortError> {
        if self.down.load(Ordering::SeqCst) { Err(PortError::new("database is down")) } else { Ok(()) }
    }

    pub fn row(&self, id: &str) -> ConfirmationRecord {
        self.rows.lock().unwrap().get(id).cloned().expect("row exists")
    }

    pub fn only_row(&self) -> ConfirmationRecord {
        let rows = self.rows.lock().unwrap();
        assert_eq!(rows.len(), 1, "exactly one confirmation row");
        rows.values().next().unwrap().clone()
    }

    pub fn len(&self) -> usize {
        self.rows.lock().unwrap().len()
    }

    /// Puts a row in place directly (for restart-style scenarios).
    pub fn put(&self, record: ConfirmationRecord) {
        self.rows.lock().unwrap().insert(record.id.clone(), record);
    }
}

#[async_trait::async_trait]
impl ConfirmationStore for MemStore {
    async fn find_by_call(&self, run_id: &str, tool_call_id: &str) -> Result<Option<ConfirmationRecord>, PortError> {
        self.check()?;
        Ok(self.rows.lock().unwrap().values().find(|r| r.run_id == run_id && r.tool_call_id == tool_call_id).cloned())
    }

    async fn insert_pending(&self, new: &NewConfirmation) -> Result<ConfirmationRecord, PortError> {
        self.check()?;
        let mut rows = self.rows.lock().unwrap();
        if let Some(existing) = rows.values().find(|r| r.run_id == new.run_id && r.tool_call_id == new.tool_call_id) {
            return Ok(existing.clone());
        }
        self.inserts.fetch_add(1, Ordering::SeqCst);
        let now = Utc::now();
        let record = ConfirmationRecord {
            id: new.id.clone(),
            status: ConfirmationStatus::Pending,
            run_id: new.run_id.clone(),
            tool_call_id: new.tool_call_id.clone(),
            agent_id: new.agent_id.clone(),
            user_id: new.user_id.clone(),
            org_id: new.org_id.clone(),
            channel_id: new.channel_id.clone(),
            tool_name: new.tool_name.clone(),
            tool_args: new.tool_args.clone(),
            args_sha256: new.args_sha256.clone(),
            mode: new.mode,
            approver_scope: new.approver_scope,
            message_id: None,
            expires_at: new.expires_at,
            responded_at: None,
            responded_by_open_id: None,
            responded_by_user_id: None,
            reason: None,
            created_at: now,
            updated_at: now,
        };
        rows.insert(record.id.clone(), record.clone());
        Ok(record)
    }

    async fn set_message_id(&self, id: &str, message_id: &str) -> Result<(), PortError> {
        self.check()?;
        if self.fail_set_message_id.load(Ordering::SeqCst) {
            return Err(PortError::new("update failed"));
        }
        let mut rows = self.rows.lock().unwrap();
        let row = rows.get_mut(id).ok_or_else(|| PortError::new("no such row"))?;
        row.message_id = Some(message_id.to_owned());
        Ok(())
    }

    async fn get(&self, id: &str) -> Result<Option<ConfirmationRecord>, PortError> {
        self.check()?;
        Ok(self.rows.lock().unwrap().get(id).cloned())
    }

    async fn statuses(&self, ids: &[String]) -> Result<Vec<(String, ConfirmationStatus)>, PortError> {
        self.statuses_calls.fetch_add(1, Ordering::SeqCst);
        self.check()?;
        let rows = self.rows.lock().unwrap();
        Ok(ids.iter().filter_map(|id| rows.get(id).map(|r| (id.clone(), r.status))).collect())
    }

    async fn decide(&self, id: &str, update: &DecisionUpdate) -> Result<DecideOutcome, PortError> {
        self.check()?;
        let mut rows = self.rows.lock().unwrap();
        let Some(row) = rows.get_mut(id) else { return Ok(DecideOutcome::NotFound) };
        if update.status == ConfirmationStatus::Expired && self.approve_before_expire.swap(false, Ordering::SeqCst) {
            row.status = ConfirmationStatus::Approved;
            row.responded_by_user_id = Some("alice".into());
            row.responded_at = Some(update.at);
        }
        if row.status != ConfirmationStatus::Pending {
            return Ok(DecideOutcome::AlreadyDecided(row.status));
        }
        row.status = update.status;
        row.responded_at = Some(update.at);
        row.responded_by_open_id = update.responded_by_open_id.clone();
        row.responded_by_user_id = update.responded_by_user_id.clone();
        row.reason = update.reason.clone();
        row.updated_at = update.at;
        Ok(DecideOutcome::Decided(row.clone()))
    }
}

#[derive(Default)]
pub struct MemDirectory {
    pub users: Mutex<Vec<Approver>>,
    pub owners: Mutex<HashMap<String, String>>,
}

impl MemDirectory {
    /// org `org1`: alice (admin, ou_alice), bob (member, ou_bob); org `org2`: eve (admin, ou_eve).
    /// Agent `agent1` is owned by bob.
    pub fn standard() -> Self {
        let user = |id: &str, org: &str, role: &str| Approver {
            user_id: id.into(),
            org_id: org.into(),
            name: format!("{id} name"),
            role: role.into(),
            feishu_open_id: Some(format!("ou_{id}")),
        };
        let dir = MemDirectory::default();
        *dir.users.lock().unwrap() =
            vec![user("alice", "org1", "admin"), user("bob", "org1", "member"), user("eve", "org2", "admin")];
        dir.owners.lock().unwrap().insert("agent1".into(), "bob".into());
        dir
    }
}

#[async_trait::async_trait]
impl ApproverDirectory for MemDirectory {
    async fn user_by_open_id(&self, org_id: &str, open_id: &str) -> Result<Option<Approver>, PortError> {
        Ok(self
            .users
            .lock()
            .unwrap()
            .iter()
            .find(|u| u.org_id == org_id && u.feishu_open_id.as_deref() == Some(open_id))
            .cloned())
    }

    async fn user(&self, user_id: &str) -> Result<Option<Approver>, PortError> {
        Ok(self.users.lock().unwrap().iter().find(|u| u.user_id == user_id).cloned())
    }

    async fn agent_owner(&self, agent_id: &str) -> Result<Option<String>, PortError> {
        Ok(self.owners.lock().unwrap().get(agent_id).cloned())
    }
}

#[derive(Default)]
pub struct FakeChannel {
    pub sent: Mutex<Vec<ApprovalCard>>,
    pub updates: Mutex<Vec<(String, CardState)>>,
    pub fail_send: AtomicBool,
}

impl FakeChannel {
    pub fn sent_count(&self) -> usize {
        self.sent.lock().unwrap().len()
    }

    pub fn updates(&self) -> Vec<(String, CardState)> {
        self.updates.lock().unwrap().clone()
    }
}

#[async_trait::async_trait]
impl ApprovalChannel for FakeChannel {
    fn kind(&self) -> &str {
        "fake"
    }

    async fn send_approval(&self, card: &ApprovalCard) -> Result<String, ChannelError> {
        if self.fail_send.load(Ordering::SeqCst) {
            return Err(ChannelError::Transport { channel: "fake", message: "connection refused".into() });
        }
        let mut sent = self.sent.lock().unwrap();
        sent.push(card.clone());
        Ok(format!("msg-{}", card.confirmation_id))
    }

    async fn update_approval(
        &self,
        message_id: &str,
        _card: &ApprovalCard,
        state: &CardState,
    ) -> Result<(), ChannelError> {
        self.updates.lock().unwrap().push((message_id.to_owned(), state.clone()));
        Ok(())
    }

    async fn send_text(&self, _text: &str) -> Result<String, ChannelError> {
        Ok("text".into())
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Awaiting { id: String, tool_call_id: String },
    Resolved { id: String, status: ConfirmationStatus },
}

pub struct EventLog {
    pub tx: mpsc::UnboundedSender<Event>,
}

impl ConfirmationEvents for EventLog {
    fn on_awaiting(&self, _ctx: &HookContext, record: &ConfirmationRecord) {
        let _ = self.tx.send(Event::Awaiting { id: record.id.clone(), tool_call_id: record.tool_call_id.clone() });
    }

    fn on_resolved(&self, _ctx: &HookContext, record: &ConfirmationRecord) {
        let _ = self.tx.send(Event::Resolved { id: record.id.clone(), status: record.status });
    }
}

/// A gate wired to in-memory ports.
pub struct Rig {
    pub store: Arc<MemStore>,
    pub directory: Arc<MemDirectory>,
    pub hub: Arc<ConfirmationHub>,
    pub channel: Arc<FakeChannel>,
    pub events: mpsc::UnboundedReceiver<Event>,
    pub gate: Arc<ConfirmationGateHook>,
}

impl Rig {
    pub fn new(config: GateConfig) -> Rig {
        Self::build(config, true)
    }

    pub fn without_channel(config: GateConfig) -> Rig {
        Self::build(config, false)
    }

    fn build(config: GateConfig, with_channel: bool) -> Rig {
        let store = Arc::new(MemStore::default());
        let directory = Arc::new(MemDirectory::standard());
        let hub = ConfirmationHub::new(store.clone());
        let channel = Arc::new(FakeChannel::default());
        let (tx, events) = mpsc::unbounded_channel();
        let deps = GateDeps {
            store: store.clone(),
            directory: directory.clone(),
            hub: hub.clone(),
            channel: if with_channel { Some(channel.clone()) } else { None },
            events: Some(Arc::new(EventLog { tx })),
        };
        let gate = Arc::new(ConfirmationGateHook::new(deps, config));
        Rig { store, directory, hub, channel, events, gate }
    }

    /// Same ports and channel, a fresh gate and hub: a restarted process.
    pub fn restarted(&self, config: GateConfig) -> Rig {
        let hub = ConfirmationHub::new(self.store.clone());
        let (tx, events) = mpsc::unbounded_channel();
        let deps = GateDeps {
            store: self.store.clone(),
            directory: self.directory.clone(),
            hub: hub.clone(),
            channel: Some(self.channel.clone()),
            events: Some(Arc::new(EventLog { tx })),
        };
        Rig {
            store: self.store.clone(),
            directory: self.directory.clone(),
            hub,
            channel: self.channel.clone(),
            events,
            gate: Arc::new(ConfirmationGateHook::new(deps, config)),
        }
    }

    /// The next `awaiting` event's confirmation id.
    pub async fn awaiting(&mut self) -> String {
        loop {
            match self.events.recv().await.expect("event stream open") {
                Event::Awaiting { id, .. } => return id,
                Event::Resolved { .. } => continue,
            }
        }
    }

    pub fn deps(&self) -> hook_builtins::DecideDeps<'_> {
        hook_builtins::DecideDeps {
            store: &*self.store,
            directory: &*self.directory,
            notifier: &*self.hub,
            channel: Some(&*self.channel),
        }
    }
}

/// A gated Pre context in org1, run `run1`, started by alice with agent1.
pub fn gated_ctx(tool_call_id: &str, args: Value) -> HookContext {
    let mut ctx = HookContext::pre_tool_use("erp__create_payment", args);
    ctx.agent_id = Some("agent1".into());
    ctx.user_id = Some("alice".into());
    ctx.metadata.insert(meta::ORG_ID.into(), "org1".into());
    ctx.metadata.insert(meta::RUN_ID.into(), "run1".into());
    ctx.metadata.insert(meta::TOOL_CALL_ID.into(), tool_call_id.into());
    ctx.metadata.insert(meta::REQUIRES_CONFIRMATION.into(), true.into());
    ctx
}
