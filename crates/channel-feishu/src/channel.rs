//! [`FeishuChannel`]: the [`ApprovalChannel`] implementation.

use async_trait::async_trait;
use channel_core::{ApprovalCard, ApprovalChannel, CardState, ChannelError};

use crate::card::{approval_card, final_card};
use crate::client::{FeishuClient, idempotency_key};
use crate::config::FeishuConfig;

/// Feishu/Lark as an approval channel: cards go to the configured chat.
#[derive(Debug)]
pub struct FeishuChannel {
    client: FeishuClient,
}

impl FeishuChannel {
    /// A channel for `config`, sending through `http` (use
    /// [`crate::default_http_client`] in production; one client for the whole process).
    ///
    /// # Errors
    /// [`ChannelError::Config`] as [`FeishuClient::new`].
    pub fn new(config: FeishuConfig, http: reqwest::Client) -> Result<Self, ChannelError> {
        Ok(FeishuChannel { client: FeishuClient::new(config, http)? })
    }

    /// A channel over an existing client (e.g. one with a custom retry policy).
    pub fn from_client(client: FeishuClient) -> Self {
        FeishuChannel { client }
    }

    /// The underlying client.
    pub fn client(&self) -> &FeishuClient {
        &self.client
    }
}

#[async_trait]
impl ApprovalChannel for FeishuChannel {
    fn kind(&self) -> &str {
        "feishu"
    }

    /// Sends [`approval_card`] with `uuid` = [`idempotency_key`] of the confirmation id, so a
    /// re-send within Feishu's 1-hour idempotency window returns the same message.
    async fn send_approval(&self, card: &ApprovalCard) -> Result<String, ChannelError> {
        let key = idempotency_key(&card.confirmation_id);
        self.client.send_card(&approval_card(card), Some(&key)).await
    }

    /// Patches the message with [`final_card`]. Call it after the callback has been answered.
    async fn update_approval(
        &self,
        message_id: &str,
        card: &ApprovalCard,
        state: &CardState,
    ) -> Result<(), ChannelError> {
        self.client.patch_card(message_id, &final_card(card, state)).await
    }

    async fn send_text(&self, text: &str) -> Result<String, ChannelError> {
        self.client.send_text(text).await
    }
}
