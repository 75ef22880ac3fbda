use std::collections::BTreeMap;
use std::sync::Arc;

use hook_core::{HookRegistry, PostToolUseHook, PreToolUseHook, SessionStartHook};
use serde_json::Value;

use crate::config::{AgentContextInfo, HookBuildError, HookFactory};

/// One hook as a builder returns it, for whichever point it serves.
#[derive(Clone)]
pub enum HookEntry {
    Pre(Arc<dyn PreToolUseHook>),
    Post(Arc<dyn PostToolUseHook>),
    SessionStart(Arc<dyn SessionStartHook>),
}

/// Builds a named hook for an agent from its `config` (`null` when the agent gave none).
/// `Err(reason)` becomes [`HookBuildError::BadConfig`].
pub type HookBuilder = dyn Fn(&AgentContextInfo, &Value) -> Result<Vec<HookEntry>, String> + Send + Sync;

/// A [`HookFactory`] from named builders — the usual way for the server to implement it.
///
/// Hooks registered with [`always`](Self::always) are attached to every agent (the confirmation
/// gate, the audit log); when an agent's `hooks.class_hooks` also names one, it is built once,
/// with the config given there. Every other `class_hooks` entry must name a hook registered with
/// [`named`](Self::named); an unknown name or a builder's error fails the whole build (the agent
/// does not run).
#[derive(Default, Clone)]
pub struct HookCatalog {
    always: Vec<String>,
    builders: BTreeMap<String, Arc<HookBuilder>>,
    /// alias → registered name.
    aliases: BTreeMap<String, String>,
}

impl std::fmt::Debug for HookEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HookEntry::Pre(h) => write!(f, "Pre({})", h.name()),
            HookEntry::Post(h) => write!(f, "Post({})", h.name()),
            HookEntry::SessionStart(h) => write!(f, "SessionStart({})", h.name()),
        }
    }
}

impl std::fmt::Debug for HookCatalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookCatalog")
            .field("always", &self.always)
            .field("named", &self.builders.keys().collect::<Vec<_>>())
            .field("aliases", &self.aliases)
            .finish()
    }
}

impl HookCatalog {
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `name`, attached to every agent.
    pub fn always(
        mut self,
        name: &str,
        builder: impl Fn(&AgentContextInfo, &Value) -> Result<Vec<HookEntry>, String> + Send + Sync + 'static,
    ) -> Self {
        self.always.push(name.to_owned());
        self.builders.insert(name.to_owned(), Arc::new(builder));
        self
    }

    /// Registers `name`, attached when an agent's `hooks.class_hooks` names it.
    pub fn named(
        mut self,
        name: &str,
        builder: impl Fn(&AgentContextInfo, &Value) -> Result<Vec<HookEntry>, String> + Send + Sync + 'static,
    ) -> Self {
        self.builders.insert(name.to_owned(), Arc::new(builder));
        self
    }

    /// Makes `alias` another name of `target` (e.g. `feishu_gate` for `confirmation_gate`): naming
    /// either in `class_hooks` means the same single hook.
    pub fn alias(mut self, alias: &str, target: &str) -> Self {
        self.aliases.insert(alias.to_owned(), target.to_owned());
        self
    }

    fn canonical<'a>(&'a self, name: &'a str) -> &'a str {
        self.aliases.get(name).map_or(name, String::as_str)
    }
}

impl HookFactory for HookCatalog {
    fn build(&self, agent: &AgentContextInfo) -> Result<HookRegistry, HookBuildError> {
        let mut configs: BTreeMap<&str, &Value> = BTreeMap::new();
        let mut order: Vec<&str> = Vec::new();
        for spec in &agent.config.hooks.class_hooks {
            let name = self.canonical(spec.name());
            if !self.builders.contains_key(name) {
                return Err(HookBuildError::UnknownHook { name: spec.name().to_owned() });
            }
            if configs.insert(name, spec.config()).is_some() {
                return Err(HookBuildError::BadConfig {
                    name: spec.name().to_owned(),
                    reason: "listed more than once".into(),
                });
            }
            order.push(name);
        }
        let mut names: Vec<&str> = self.always.iter().map(String::as_str).collect();
        names.extend(order.into_iter().filter(|n| !self.always.iter().any(|a| a == n)));

        let mut registry = HookRegistry::new();
        for name in names {
            let builder = &self.builders[name];
            let config = configs.get(name).copied().unwrap_or(&Value::Null);
            let entries =
                builder(agent, config).map_err(|reason| HookBuildError::BadConfig { name: name.to_owned(), reason })?;
            for entry in entries {
                match entry {
                    HookEntry::Pre(hook) => registry.register_pre(hook),
                    HookEntry::Post(hook) => registry.register_post(hook),
                    HookEntry::SessionStart(hook) => registry.register_session_start(hook),
                }
            }
        }
        Ok(registry)
    }
}
