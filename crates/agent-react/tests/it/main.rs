mod support;

mod config;
mod delegation;
mod http_tool;
mod loop_snapshots;
mod openai_run;
mod sql_tool;
