//! DAG agents: a planner and a parallel executor of steps, each step a ReAct run whose tool calls
//! go through the agent's hooks (`surface = dag`, `step_id` set).
