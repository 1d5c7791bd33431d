//! aam: catalog, search, package and install AI-agent artifacts from git sources.
//!
//! Domain modules (`catalog`, `scan`, `sources`, `packages`, `deploy`, `install`) are synchronous libraries with no
//! knowledge of any front end. The tool registry (`tools`) defines every operation
//! once; the CLI (`cli`) is a thin layer that parses arguments, calls a tool and
//! renders its output, and the MCP server (`mcp`) offers the same tools to agents.

pub mod agents;
pub mod atomic;
pub mod audit;
pub mod cancel;
pub mod catalog;
pub mod cli;
pub mod config;
pub mod deploy;
pub mod error;
pub mod health;
pub mod install;
pub mod logging;
pub mod manifest;
pub mod mcp;
pub mod packages;
pub mod paths;
pub mod progress;
pub mod project;
pub mod scan;
pub mod search;
pub mod skills;
pub mod sources;
pub mod tools;
pub mod yaml;
