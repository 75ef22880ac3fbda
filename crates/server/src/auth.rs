//! Who is calling: the platform admin (the `TOLLGATE_ADMIN_TOKEN` bearer) or a user (a per-user
//! API key). Every org-scoped query goes through [`Caller::org_member`] or [`Caller::org_admin`],
//! so another org's ids answer 404.

use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use sha2::{Digest, Sha256};
use store::{Role, User};
use subtle::ConstantTimeEq;

use crate::error::ApiError;
use crate::state::AppState;

/// The authenticated caller.
#[derive(Debug, Clone)]
pub enum Caller {
    /// The platform admin: may act on every org.
    Admin,
    /// A user of one org.
    User(User),
}

impl Caller {
    /// The caller's user id (`None` for the platform admin).
    pub fn user_id(&self) -> Option<&str> {
        match self {
            Caller::Admin => None,
            Caller::User(user) => Some(&user.id),
        }
    }

    /// Allows the admin and users of `org_id`; another org's resources answer 404 (`what`).
    pub fn org_member(&self, org_id: &str, what: &str) -> Result<(), ApiError> {
        match self {
            Caller::Admin => Ok(()),
            Caller::User(user) if user.org_id == org_id => Ok(()),
            Caller::User(_) => Err(ApiError::not_found(what)),
        }
    }

    /// Allows the admin and admins of `org_id`; members answer 403, other orgs 404.
    pub fn org_admin(&self, org_id: &str, what: &str) -> Result<(), ApiError> {
        self.org_member(org_id, what)?;
        match self {
            Caller::User(user) if user.role != Role::Admin => {
                Err(ApiError::Forbidden("this needs an admin of the organization".to_owned()))
            }
            _ => Ok(()),
        }
    }

    /// The platform admin only.
    pub fn platform_admin(&self) -> Result<(), ApiError> {
        match self {
            Caller::Admin => Ok(()),
            Caller::User(_) => Err(ApiError::Forbidden("this needs the platform admin token".to_owned())),
        }
    }
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        let header = parts
            .headers
            .get(AUTHORIZATION)
            .ok_or_else(|| ApiError::Unauthorized("missing `Authorization: Bearer <token>`".to_owned()))?;
        let token = header
            .to_str()
            .ok()
            .and_then(|h| h.strip_prefix("Bearer ").or_else(|| h.strip_prefix("bearer ")))
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| ApiError::Unauthorized("expected `Authorization: Bearer <token>`".to_owned()))?;
        if let Some(admin) = &state.config().admin_token {
            // Compare digests in constant time so the token's length and prefix do not leak.
            let given = Sha256::digest(token.as_bytes());
            let expected = Sha256::digest(admin.as_bytes());
            if bool::from(given.ct_eq(&expected)) {
                return Ok(Caller::Admin);
            }
        }
        match state.store().authenticate_api_key(token).await? {
            Some(user) => Ok(Caller::User(user)),
            None => Err(ApiError::Unauthorized("unknown or revoked token".to_owned())),
        }
    }
}
