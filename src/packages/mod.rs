//! Packages: the `aam.yaml` manifest, the package layout, reproducible archives
//! and the local registry.

pub mod archive;
pub mod build;
pub mod layout;
pub mod lock;
pub mod manifest;
pub mod registry;
pub mod resolve;
pub mod store;
pub mod validate;
