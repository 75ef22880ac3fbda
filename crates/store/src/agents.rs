//! Agents and conversations.

use sea_orm::{ActiveValue::Set, ColumnTrait, EntityTrait, QueryFilter, QueryOrder};

use crate::connectors::parse_json;
use crate::entities::{agents, conversations};
use crate::model::{Agent, Conversation, NewAgent, NewConversation};
use crate::{Store, StoreError, new_id, now};

impl Store {
    /// Creates an agent; `model_config` is stored as `model_config_json`.
    ///
    /// Errors: [`StoreError::Database`] for an unknown org.
    pub async fn create_agent(&self, new: &NewAgent) -> Result<Agent, StoreError> {
        let agent = Agent {
            id: new_id(),
            org_id: new.org_id.clone(),
            owner_user_id: new.owner_user_id.clone(),
            name: new.name.clone(),
            instructions: new.instructions.clone(),
            require_confirmation_for_all: new.require_confirmation_for_all,
            model_config: new.model_config.clone(),
            created_at: now(),
        };
        agents::Entity::insert(agents::ActiveModel {
            id: Set(agent.id.clone()),
            org_id: Set(agent.org_id.clone()),
            owner_user_id: Set(agent.owner_user_id.clone()),
            name: Set(agent.name.clone()),
            instructions: Set(agent.instructions.clone()),
            require_confirmation_for_all: Set(agent.require_confirmation_for_all),
            model_config_json: Set(agent.model_config.to_string()),
            created_at: Set(agent.created_at),
        })
        .exec_without_returning(&self.db)
        .await?;
        Ok(agent)
    }

    /// The agent `id`, if it exists.
    pub async fn get_agent(&self, id: &str) -> Result<Option<Agent>, StoreError> {
        agents::Entity::find_by_id(id.to_owned()).one(&self.db).await?.map(agent_from).transpose()
    }

    /// The agents of an org, oldest first.
    pub async fn list_agents(&self, org_id: &str) -> Result<Vec<Agent>, StoreError> {
        agents::Entity::find()
            .filter(agents::Column::OrgId.eq(org_id))
            .order_by_asc(agents::Column::CreatedAt)
            .order_by_asc(agents::Column::Id)
            .all(&self.db)
            .await?
            .into_iter()
            .map(agent_from)
            .collect()
    }

    /// Creates a conversation.
    pub async fn create_conversation(&self, new: &NewConversation) -> Result<Conversation, StoreError> {
        let at = now();
        let conversation = Conversation {
            id: new_id(),
            org_id: new.org_id.clone(),
            agent_id: new.agent_id.clone(),
            user_id: new.user_id.clone(),
            title: new.title.clone(),
            created_at: at,
            updated_at: at,
        };
        conversations::Entity::insert(conversations::ActiveModel {
            id: Set(conversation.id.clone()),
            org_id: Set(conversation.org_id.clone()),
            agent_id: Set(conversation.agent_id.clone()),
            user_id: Set(conversation.user_id.clone()),
            title: Set(conversation.title.clone()),
            created_at: Set(at),
            updated_at: Set(at),
        })
        .exec_without_returning(&self.db)
        .await?;
        Ok(conversation)
    }

    /// The conversation `id`, if it exists.
    pub async fn get_conversation(&self, id: &str) -> Result<Option<Conversation>, StoreError> {
        Ok(conversations::Entity::find_by_id(id.to_owned()).one(&self.db).await?.map(|m| Conversation {
            id: m.id,
            org_id: m.org_id,
            agent_id: m.agent_id,
            user_id: m.user_id,
            title: m.title,
            created_at: m.created_at,
            updated_at: m.updated_at,
        }))
    }
}

fn agent_from(m: agents::Model) -> Result<Agent, StoreError> {
    Ok(Agent {
        model_config: parse_json("agents.model_config_json", &m.model_config_json)?,
        id: m.id,
        org_id: m.org_id,
        owner_user_id: m.owner_user_id,
        name: m.name,
        instructions: m.instructions,
        require_confirmation_for_all: m.require_confirmation_for_all,
        created_at: m.created_at,
    })
}
