//! Channels and connectors: the rows that hold secrets, encrypted with the store's `SecretBox`.

use std::collections::HashMap;

use sea_orm::{ActiveValue::Set, ColumnTrait, EntityTrait, QueryFilter, QueryOrder, TransactionTrait};
use serde_json::Value;

use crate::entities::{channels, connector_actions, connectors};
use crate::error::corrupt;
use crate::model::{
    Channel, Connector, ConnectorAction, ConnectorKind, NewChannel, NewConnector, RateLimit, SideEffect,
};
use crate::{Store, StoreError, new_id, now};

impl Store {
    /// Creates a channel; `config` is encrypted before it reaches the database.
    ///
    /// Errors: [`StoreError::Config`] without a secret key (PostgreSQL without
    /// `TOLLGATE_SECRET_KEY`); [`StoreError::Database`] for an unknown org.
    pub async fn create_channel(&self, new: &NewChannel) -> Result<Channel, StoreError> {
        let id = new_id();
        let sealed = self.seal_json(&channel_aad(&id), &new.config)?;
        let channel = Channel {
            id,
            org_id: new.org_id.clone(),
            kind: new.kind.clone(),
            name: new.name.clone(),
            config: new.config.clone(),
            is_active: new.is_active,
            created_at: now(),
        };
        channels::Entity::insert(channels::ActiveModel {
            id: Set(channel.id.clone()),
            org_id: Set(channel.org_id.clone()),
            kind: Set(channel.kind.clone()),
            name: Set(channel.name.clone()),
            config: Set(sealed),
            is_active: Set(channel.is_active),
            created_at: Set(channel.created_at),
        })
        .exec_without_returning(&self.db)
        .await?;
        Ok(channel)
    }

    /// The channel `id` with its config decrypted.
    ///
    /// Errors: [`StoreError::Crypto`] when the config does not decrypt with this key.
    pub async fn get_channel(&self, id: &str) -> Result<Option<Channel>, StoreError> {
        match channels::Entity::find_by_id(id.to_owned()).one(&self.db).await? {
            Some(m) => Ok(Some(self.channel_from(m)?)),
            None => Ok(None),
        }
    }

    /// The channels of an org, oldest first, configs decrypted.
    pub async fn list_channels(&self, org_id: &str) -> Result<Vec<Channel>, StoreError> {
        channels::Entity::find()
            .filter(channels::Column::OrgId.eq(org_id))
            .order_by_asc(channels::Column::CreatedAt)
            .order_by_asc(channels::Column::Id)
            .all(&self.db)
            .await?
            .into_iter()
            .map(|m| self.channel_from(m))
            .collect()
    }

    /// Creates a connector and its actions in one transaction; `auth` and `url` are encrypted.
    ///
    /// Errors: [`StoreError::Conflict`] when the org already has a connector of that name (or two
    /// actions share a name); [`StoreError::Config`] without a secret key when `auth` or `url` is
    /// given.
    pub async fn create_connector(&self, new: &NewConnector) -> Result<Connector, StoreError> {
        let id = new_id();
        let auth = match &new.auth {
            Some(auth) => Some(self.seal_json(&connector_aad("auth", &id), auth)?),
            None => None,
        };
        let url = match &new.url {
            Some(url) => Some(self.secrets()?.seal(&connector_aad("url", &id), url.as_bytes())?),
            None => None,
        };
        let rate_limit = new
            .rate_limit
            .map(|limit| serde_json::to_string(&limit))
            .transpose()
            .map_err(|err| StoreError::Database(err.to_string()))?;
        let created_at = now();
        let actions: Vec<ConnectorAction> = new
            .actions
            .iter()
            .map(|a| ConnectorAction {
                id: new_id(),
                connector_id: id.clone(),
                name: a.name.clone(),
                description: a.description.clone(),
                method: a.method.clone(),
                path: a.path.clone(),
                parameters_schema: a.parameters_schema.clone(),
                requires_confirmation: a.requires_confirmation,
                side_effect: a.side_effect,
            })
            .collect();

        // Every statement below runs on `txn` (never on the pool) and the first one writes, so
        // SQLite takes the write lock at once and the pool cannot deadlock.
        let txn = self.db.begin().await?;
        connectors::Entity::insert(connectors::ActiveModel {
            id: Set(id.clone()),
            org_id: Set(new.org_id.clone()),
            name: Set(new.name.clone()),
            kind: Set(new.kind.as_str().to_owned()),
            base_url: Set(new.base_url.clone()),
            url: Set(url),
            auth: Set(auth),
            rate_limit: Set(rate_limit),
            created_at: Set(created_at),
        })
        .exec_without_returning(&txn)
        .await?;
        for action in &actions {
            connector_actions::Entity::insert(connector_actions::ActiveModel {
                id: Set(action.id.clone()),
                connector_id: Set(id.clone()),
                name: Set(action.name.clone()),
                description: Set(action.description.clone()),
                method: Set(action.method.clone()),
                path: Set(action.path.clone()),
                parameters_schema: Set(action.parameters_schema.to_string()),
                requires_confirmation: Set(action.requires_confirmation),
                side_effect: Set(action.side_effect.as_str().to_owned()),
            })
            .exec_without_returning(&txn)
            .await?;
        }
        txn.commit().await?;

        let mut actions = actions;
        actions.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(Connector {
            id,
            org_id: new.org_id.clone(),
            name: new.name.clone(),
            kind: new.kind,
            base_url: new.base_url.clone(),
            url: new.url.clone(),
            auth: new.auth.clone(),
            rate_limit: new.rate_limit,
            created_at,
            actions,
        })
    }

    /// The connector `id` with its actions and decrypted secrets.
    pub async fn get_connector(&self, id: &str) -> Result<Option<Connector>, StoreError> {
        let Some(m) = connectors::Entity::find_by_id(id.to_owned()).one(&self.db).await? else {
            return Ok(None);
        };
        Ok(self.connectors_with_actions(vec![m]).await?.pop())
    }

    /// The connector of `org_id` named `name`, with its actions.
    pub async fn get_connector_by_name(&self, org_id: &str, name: &str) -> Result<Option<Connector>, StoreError> {
        let Some(m) = connectors::Entity::find()
            .filter(connectors::Column::OrgId.eq(org_id))
            .filter(connectors::Column::Name.eq(name))
            .one(&self.db)
            .await?
        else {
            return Ok(None);
        };
        Ok(self.connectors_with_actions(vec![m]).await?.pop())
    }

    /// The connectors of an org ordered by name, each with its actions.
    pub async fn list_connectors(&self, org_id: &str) -> Result<Vec<Connector>, StoreError> {
        let rows = connectors::Entity::find()
            .filter(connectors::Column::OrgId.eq(org_id))
            .order_by_asc(connectors::Column::Name)
            .all(&self.db)
            .await?;
        self.connectors_with_actions(rows).await
    }

    async fn connectors_with_actions(&self, rows: Vec<connectors::Model>) -> Result<Vec<Connector>, StoreError> {
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<String> = rows.iter().map(|m| m.id.clone()).collect();
        let mut by_connector: HashMap<String, Vec<ConnectorAction>> = HashMap::new();
        for a in connector_actions::Entity::find()
            .filter(connector_actions::Column::ConnectorId.is_in(ids))
            .order_by_asc(connector_actions::Column::Name)
            .all(&self.db)
            .await?
        {
            let action = ConnectorAction {
                side_effect: SideEffect::parse(&a.side_effect)
                    .ok_or_else(|| corrupt("connector_actions.side_effect", &a.side_effect))?,
                parameters_schema: parse_json("connector_actions.parameters_schema", &a.parameters_schema)?,
                id: a.id,
                connector_id: a.connector_id,
                name: a.name,
                description: a.description,
                method: a.method,
                path: a.path,
                requires_confirmation: a.requires_confirmation,
            };
            by_connector.entry(action.connector_id.clone()).or_default().push(action);
        }
        rows.into_iter()
            .map(|m| {
                let auth = match &m.auth {
                    Some(sealed) => Some(self.open_json(&connector_aad("auth", &m.id), sealed)?),
                    None => None,
                };
                let url = match &m.url {
                    Some(sealed) => {
                        let bytes = self.secrets()?.open(&connector_aad("url", &m.id), sealed)?;
                        Some(String::from_utf8(bytes).map_err(|_| StoreError::Crypto)?)
                    }
                    None => None,
                };
                let rate_limit = match &m.rate_limit {
                    Some(text) => Some(
                        serde_json::from_str::<RateLimit>(text).map_err(|err| corrupt("connectors.rate_limit", err))?,
                    ),
                    None => None,
                };
                Ok(Connector {
                    kind: ConnectorKind::parse(&m.kind).ok_or_else(|| corrupt("connectors.type", &m.kind))?,
                    actions: by_connector.remove(&m.id).unwrap_or_default(),
                    id: m.id,
                    org_id: m.org_id,
                    name: m.name,
                    base_url: m.base_url,
                    url,
                    auth,
                    rate_limit,
                    created_at: m.created_at,
                })
            })
            .collect()
    }

    fn channel_from(&self, m: channels::Model) -> Result<Channel, StoreError> {
        Ok(Channel {
            config: self.open_json(&channel_aad(&m.id), &m.config)?,
            id: m.id,
            org_id: m.org_id,
            kind: m.kind,
            name: m.name,
            is_active: m.is_active,
            created_at: m.created_at,
        })
    }

    fn seal_json(&self, aad: &str, value: &Value) -> Result<String, StoreError> {
        self.secrets()?.seal(aad, value.to_string().as_bytes())
    }

    fn open_json(&self, aad: &str, sealed: &str) -> Result<Value, StoreError> {
        let bytes = self.secrets()?.open(aad, sealed)?;
        serde_json::from_slice(&bytes).map_err(|_| StoreError::Crypto)
    }
}

fn channel_aad(id: &str) -> String {
    format!("channels.config:{id}")
}

fn connector_aad(column: &str, id: &str) -> String {
    format!("connectors.{column}:{id}")
}

pub(crate) fn parse_json(what: &str, text: &str) -> Result<Value, StoreError> {
    serde_json::from_str(text).map_err(|err| corrupt(what, err))
}
