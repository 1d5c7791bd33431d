//! Package tools: init, create (from a project or a source), validate, pack and publish.

mod create;
mod init;
mod pack;
mod publish;
mod validate;

pub use crate::packages::build::IncludedArtifact;
pub use create::{PkgCreate, PkgCreateInput, PkgCreateOutput};
pub use init::{PkgInit, PkgInitInput, PkgInitOutput};
pub use pack::{PkgPack, PkgPackInput, PkgPackOutput};
pub use publish::{PkgPublish, PkgPublishInput, PkgPublishOutput};
pub use validate::{PkgValidate, PkgValidateInput, PkgValidateOutput};

const DEFAULT_VERSION: &str = "0.1.0";
