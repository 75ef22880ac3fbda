//! Orgs, users and API keys.

use sea_orm::{ActiveValue::Set, ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder};
use sha2::{Digest, Sha256};

use crate::entities::{api_keys, orgs, users};
use crate::error::corrupt;
use crate::model::{CreatedApiKey, NewUser, Org, Role, User};
use crate::{Store, StoreError, new_id, now};

impl Store {
    /// Creates an org (not read-only).
    pub async fn create_org(&self, name: &str) -> Result<Org, StoreError> {
        let org = Org { id: new_id(), name: name.to_owned(), read_only: false, created_at: now() };
        orgs::Entity::insert(orgs::ActiveModel {
            id: Set(org.id.clone()),
            name: Set(org.name.clone()),
            read_only: Set(org.read_only),
            created_at: Set(org.created_at),
        })
        .exec_without_returning(&self.db)
        .await?;
        Ok(org)
    }

    /// The org `id`, if it exists.
    pub async fn get_org(&self, id: &str) -> Result<Option<Org>, StoreError> {
        Ok(orgs::Entity::find_by_id(id.to_owned()).one(&self.db).await?.map(org_from))
    }

    /// The oldest org named `name` (names are not unique), if any.
    pub async fn find_org_by_name(&self, name: &str) -> Result<Option<Org>, StoreError> {
        Ok(orgs::Entity::find()
            .filter(orgs::Column::Name.eq(name))
            .order_by_asc(orgs::Column::CreatedAt)
            .order_by_asc(orgs::Column::Id)
            .one(&self.db)
            .await?
            .map(org_from))
    }

    /// How many orgs exist.
    pub async fn count_orgs(&self) -> Result<u64, StoreError> {
        Ok(orgs::Entity::find().count(&self.db).await?)
    }

    /// Sets `orgs.read_only`; the read-only guard sees it on the very next call.
    ///
    /// Errors: [`StoreError::NotFound`] for an unknown org.
    pub async fn set_org_read_only(&self, id: &str, read_only: bool) -> Result<Org, StoreError> {
        let result = orgs::Entity::update_many()
            .col_expr(orgs::Column::ReadOnly, sea_orm::sea_query::Expr::value(read_only))
            .filter(orgs::Column::Id.eq(id))
            .exec(&self.db)
            .await?;
        if result.rows_affected == 0 {
            return Err(StoreError::NotFound(format!("org {id}")));
        }
        self.get_org(id).await?.ok_or_else(|| StoreError::NotFound(format!("org {id}")))
    }

    /// Creates a user.
    ///
    /// Errors: [`StoreError::Conflict`] when another user of the org has the same
    /// `feishu_open_id`; [`StoreError::Database`] for an unknown org (foreign key).
    pub async fn create_user(&self, new: &NewUser) -> Result<User, StoreError> {
        let user = User {
            id: new_id(),
            org_id: new.org_id.clone(),
            name: new.name.clone(),
            role: new.role,
            feishu_open_id: new.feishu_open_id.clone(),
            created_at: now(),
        };
        users::Entity::insert(users::ActiveModel {
            id: Set(user.id.clone()),
            org_id: Set(user.org_id.clone()),
            name: Set(user.name.clone()),
            role: Set(user.role.as_str().to_owned()),
            feishu_open_id: Set(user.feishu_open_id.clone()),
            created_at: Set(user.created_at),
        })
        .exec_without_returning(&self.db)
        .await?;
        Ok(user)
    }

    /// The user `id`, if it exists.
    pub async fn get_user(&self, id: &str) -> Result<Option<User>, StoreError> {
        users::Entity::find_by_id(id.to_owned()).one(&self.db).await?.map(user_from).transpose()
    }

    /// The user of `org_id` whose `feishu_open_id` is `open_id`.
    pub async fn user_by_open_id(&self, org_id: &str, open_id: &str) -> Result<Option<User>, StoreError> {
        users::Entity::find()
            .filter(users::Column::OrgId.eq(org_id))
            .filter(users::Column::FeishuOpenId.eq(open_id))
            .one(&self.db)
            .await?
            .map(user_from)
            .transpose()
    }

    /// The users of an org, oldest first.
    pub async fn list_users(&self, org_id: &str) -> Result<Vec<User>, StoreError> {
        users::Entity::find()
            .filter(users::Column::OrgId.eq(org_id))
            .order_by_asc(users::Column::CreatedAt)
            .order_by_asc(users::Column::Id)
            .all(&self.db)
            .await?
            .into_iter()
            .map(user_from)
            .collect()
    }

    /// Creates an API key for `user_id` and returns the plaintext once; only its SHA-256 (hex)
    /// and its prefix are stored.
    ///
    /// Errors: [`StoreError::NotFound`] for an unknown user.
    pub async fn create_api_key(&self, user_id: &str) -> Result<CreatedApiKey, StoreError> {
        if self.get_user(user_id).await?.is_none() {
            return Err(StoreError::NotFound(format!("user {user_id}")));
        }
        let mut random = [0u8; 32];
        chacha20poly1305::aead::rand_core::RngCore::fill_bytes(&mut chacha20poly1305::aead::OsRng, &mut random);
        let api_key = format!("tg_{}", hex::encode(random));
        let created = CreatedApiKey { id: new_id(), prefix: api_key[..11].to_owned(), api_key };
        api_keys::Entity::insert(api_keys::ActiveModel {
            id: Set(created.id.clone()),
            user_id: Set(user_id.to_owned()),
            key_hash: Set(hash_key(&created.api_key)),
            prefix: Set(created.prefix.clone()),
            created_at: Set(now()),
            revoked_at: Set(None),
        })
        .exec_without_returning(&self.db)
        .await?;
        Ok(created)
    }

    /// The user owning the unrevoked key `api_key`, or `None` (unknown or revoked key).
    pub async fn authenticate_api_key(&self, api_key: &str) -> Result<Option<User>, StoreError> {
        let Some(key) = api_keys::Entity::find()
            .filter(api_keys::Column::KeyHash.eq(hash_key(api_key)))
            .filter(api_keys::Column::RevokedAt.is_null())
            .one(&self.db)
            .await?
        else {
            return Ok(None);
        };
        self.get_user(&key.user_id).await
    }

    /// Revokes the key `id` (sets `revoked_at`; revoking twice keeps the first time).
    ///
    /// Errors: [`StoreError::NotFound`] for an unknown key.
    pub async fn revoke_api_key(&self, id: &str) -> Result<(), StoreError> {
        let Some(key) = api_keys::Entity::find_by_id(id.to_owned()).one(&self.db).await? else {
            return Err(StoreError::NotFound(format!("api key {id}")));
        };
        if key.revoked_at.is_none() {
            api_keys::Entity::update_many()
                .col_expr(api_keys::Column::RevokedAt, sea_orm::sea_query::Expr::value(now()))
                .filter(api_keys::Column::Id.eq(id))
                .filter(api_keys::Column::RevokedAt.is_null())
                .exec(&self.db)
                .await?;
        }
        Ok(())
    }
}

fn hash_key(api_key: &str) -> String {
    hex::encode(Sha256::digest(api_key.as_bytes()))
}

fn org_from(m: orgs::Model) -> Org {
    Org { id: m.id, name: m.name, read_only: m.read_only, created_at: m.created_at }
}

pub(crate) fn user_from(m: users::Model) -> Result<User, StoreError> {
    Ok(User {
        role: Role::parse(&m.role).ok_or_else(|| corrupt("users.role", &m.role))?,
        id: m.id,
        org_id: m.org_id,
        name: m.name,
        feishu_open_id: m.feishu_open_id,
        created_at: m.created_at,
    })
}
