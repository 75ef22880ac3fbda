//! Workflows: versioned definitions and an engine whose AGENT and CONNECTOR nodes call tools
//! through the agent's hooks (`surface = workflow`, `node_id` set).
