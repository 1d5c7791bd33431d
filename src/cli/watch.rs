//! `aam watch`: watches the project and answers the commands run in it until
//! stopped, so they skip the check of every recorded file (what `aam mcp
//! serve` does besides serving; see `project::ask`).

use std::path::PathBuf;

use clap::Args;

use super::Output;
use crate::error::{Error, ErrorCode, Result};
use crate::tools::Context;

#[derive(Debug, Args)]
pub(super) struct WatchArgs {
    /// Project folder to watch (default: the working directory's project).
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
}

pub(super) fn run(ctx: &Context, out: &Output, args: WatchArgs) -> Result<i32> {
    let root = match args.root {
        Some(dir) => std::path::absolute(ctx.cwd.join(dir)).map_err(|e| Error::io("resolve", &ctx.cwd, e))?,
        None => ctx.cwd.clone(),
    };
    if !root.is_dir() {
        return Err(Error::invalid_argument(format!("`{}` is not a folder", root.display()))
            .with_hint("pass the project folder to watch with `--root`"));
    }
    let project = crate::project::root(&root);
    let ctx = Context::new(ctx.home.clone(), project.clone()).watching();
    let Some(_listening) = ctx.answer_commands()? else {
        return Err(Error::new(
            ErrorCode::Conflict,
            format!("another aam process already watches `{}`", project.display()),
        )
        .with_hint("commands run in the project already ask it; stop it first to watch from here"));
    };
    let started = serde_json::json!({ "watching": project, "home": ctx.home.root() });
    out.emit(&started, |_| {
        format!(
            "watching `{}`: aam commands run in it ask this process instead of checking its files; \
             Ctrl-C stops\n",
            project.display()
        )
    })?;
    wait_for_stop()?;
    Ok(0)
}

/// Blocks until the process is told to stop (Ctrl-C, `SIGTERM`).
fn wait_for_stop() -> Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::internal(format!("cannot start the async runtime: {e}")))?;
    runtime.block_on(async {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let mut terminate = signal(SignalKind::terminate())
                .map_err(|e| Error::internal(format!("cannot wait for SIGTERM: {e}")))?;
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = terminate.recv() => {}
            }
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
        Ok(())
    })
}
