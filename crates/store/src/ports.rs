//! The `hook-builtins` ports, implemented on [`Store`]. Each method delegates to the repository
//! function of the same meaning; a [`crate::StoreError`] becomes a `PortError` with its message.

use hook_builtins::ports::{
    Approver, ApproverDirectory, AuditSink, ConfirmationRecord, ConfirmationStatus, ConfirmationStore,
    ConnectorCallRecord, DecideOutcome, DecisionUpdate, NewConfirmation, OrgPolicy, PortError,
};

use crate::Store;
use crate::model::User;

#[async_trait::async_trait]
impl AuditSink for Store {
    async fn record_connector_call(&self, record: &ConnectorCallRecord) -> Result<(), PortError> {
        Store::record_connector_call(self, record).await?;
        Ok(())
    }
}

#[async_trait::async_trait]
impl OrgPolicy for Store {
    async fn is_read_only(&self, org_id: &str) -> Result<bool, PortError> {
        match self.get_org(org_id).await? {
            Some(org) => Ok(org.read_only),
            None => Err(PortError::new(format!("unknown org {org_id}"))),
        }
    }
}

#[async_trait::async_trait]
impl ConfirmationStore for Store {
    async fn find_by_call(&self, run_id: &str, tool_call_id: &str) -> Result<Option<ConfirmationRecord>, PortError> {
        Ok(self.find_confirmation_by_call(run_id, tool_call_id).await?)
    }

    async fn insert_pending(&self, new: &NewConfirmation) -> Result<ConfirmationRecord, PortError> {
        Ok(self.insert_pending_confirmation(new).await?)
    }

    async fn set_message_id(&self, id: &str, message_id: &str) -> Result<(), PortError> {
        Ok(self.set_confirmation_message_id(id, message_id).await?)
    }

    async fn get(&self, id: &str) -> Result<Option<ConfirmationRecord>, PortError> {
        Ok(self.get_confirmation(id).await?)
    }

    async fn statuses(&self, ids: &[String]) -> Result<Vec<(String, ConfirmationStatus)>, PortError> {
        Ok(self.confirmation_statuses(ids).await?)
    }

    async fn decide(&self, id: &str, update: &DecisionUpdate) -> Result<DecideOutcome, PortError> {
        Ok(self.decide_confirmation(id, update).await?)
    }
}

#[async_trait::async_trait]
impl ApproverDirectory for Store {
    async fn user_by_open_id(&self, org_id: &str, open_id: &str) -> Result<Option<Approver>, PortError> {
        Ok(Store::user_by_open_id(self, org_id, open_id).await?.map(approver_from))
    }

    async fn user(&self, user_id: &str) -> Result<Option<Approver>, PortError> {
        Ok(self.get_user(user_id).await?.map(approver_from))
    }

    async fn agent_owner(&self, agent_id: &str) -> Result<Option<String>, PortError> {
        Ok(self.get_agent(agent_id).await?.and_then(|agent| agent.owner_user_id))
    }

    async fn agent_name(&self, agent_id: &str) -> Result<Option<String>, PortError> {
        Ok(self.get_agent(agent_id).await?.map(|agent| agent.name))
    }
}

fn approver_from(user: User) -> Approver {
    Approver {
        user_id: user.id,
        org_id: user.org_id,
        name: user.name,
        role: user.role.as_str().to_owned(),
        feishu_open_id: user.feishu_open_id,
    }
}
