//! Integration tests: the real `aam` binary against real git repositories,
//! a real SQLite catalog and a temporary `AAM_HOME` per test.

mod agents;
mod audit;
mod audit_findings;
mod candidates;
mod contract;
mod corpus;
mod errors;
mod human;
mod install;
mod inventory;
mod mcp;
mod mcp_protocol;
mod merge;
mod newcomer;
mod packages;
mod project_catalog;
mod quickstart;
mod restore;
mod safety;
mod search;
mod shapes;
mod skills_mcp;
mod sources;
mod support;
mod tool_cli;
