//! oi-tui: a terminal workbench in which a language model proposes code and a person stays
//! in control. This library holds everything; the binary only parses arguments and picks a
//! face.

pub mod cli;
pub mod config;
pub mod demo;
mod dirfd;
pub mod engine;
pub mod exec;
pub mod headless;
mod headless_live;
pub mod llm;
pub mod mcp;
pub mod models;
pub mod policy;
pub mod project_rules;
pub mod protocol;
pub mod replay;
pub mod rules_file;
pub mod run;
pub mod safe_text;
pub mod sandbox;
pub mod secrets;
pub mod sessions;
pub mod shutdown;
pub mod stdout;
pub mod store;
pub mod term;
pub mod trust_cmd;
pub mod tui;
