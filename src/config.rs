//! Where aam keeps its state: `AAM_HOME` (default `~/.aam`).
//!
//! `AAM_HOME` holds `catalog.db` (the SQLite catalog), `cache/git/` (one bare
//! repository per remote) and `config.yaml` (settings). Nothing here touches the
//! catalog or git; it only names paths.

use std::path::{Path, PathBuf};

use crate::error::{Error, ErrorCode, Result};

/// The environment variable that overrides the home folder.
pub const HOME_ENV: &str = "AAM_HOME";

/// The folder holding aam's catalog, caches and settings.
#[derive(Debug, Clone)]
pub struct AamHome {
    root: PathBuf,
}

impl AamHome {
    /// Resolves `AAM_HOME`, falling back to `~/.aam`.
    pub fn from_env() -> Result<Self> {
        match std::env::var_os(HOME_ENV) {
            Some(value) if !value.is_empty() => Ok(Self::at(PathBuf::from(value))),
            _ => std::env::home_dir()
                .map(|home| Self::at(home.join(".aam")))
                .ok_or_else(|| {
                    Error::new(ErrorCode::InvalidArgument, "cannot find the home folder")
                        .with_hint("set `AAM_HOME` to the folder aam should keep its catalog in")
                }),
        }
    }

    /// A home at an explicit folder (made absolute against the working directory).
    pub fn at(root: PathBuf) -> Self {
        let root = std::path::absolute(&root).unwrap_or(root);
        Self { root }
    }

    /// The home folder itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The SQLite catalog file.
    pub fn catalog_path(&self) -> PathBuf {
        self.root.join("catalog.db")
    }

    /// The folder of bare git repositories, one per remote.
    pub fn git_cache_dir(&self) -> PathBuf {
        self.root.join("cache").join("git")
    }
}
