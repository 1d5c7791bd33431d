//! `aam watch`: watches the project and answers the commands run in it until
//! stopped, so they skip the check of every recorded file (what `aam mcp
//! serve` does besides serving; see `project::ask`).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::Output;
use crate::error::{Error, ErrorCode, Result};
use crate::project::ask::Listening;
use crate::tools::Context;

#[derive(Debug, Args)]
pub(super) struct WatchArgs {
    /// Project folder to watch (default: the working directory's project).
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Stop after this many seconds with no command asking (default: run until stopped).
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    idle_timeout: Option<u64>,
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
    let Some(listening) = ctx.answer_commands()? else {
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
    let idle_timeout = args.idle_timeout.map(Duration::from_secs);
    let why = wait_for_stop(&listening, idle_timeout)?;
    tracing::info!("stopped watching `{}`: {why}", project.display());
    Ok(0)
}

/// How often a watcher looks at its socket and at how long it has been idle.
const LOOK_EVERY: Duration = Duration::from_secs(1);

/// Blocks until the process is told to stop (Ctrl-C, `SIGTERM`), no command
/// asked for `idle_timeout`, or commands can no longer reach it (its socket
/// was removed or taken over); returns which.
fn wait_for_stop(listening: &Listening, idle_timeout: Option<Duration>) -> Result<&'static str> {
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
                _ = tokio::signal::ctrl_c() => Ok("interrupted"),
                _ = terminate.recv() => Ok("terminated"),
                why = unneeded(listening, idle_timeout) => Ok(why),
            }
        }
        #[cfg(not(unix))]
        tokio::select! {
            _ = tokio::signal::ctrl_c() => Ok("interrupted"),
            why = unneeded(listening, idle_timeout) => Ok(why),
        }
    })
}

/// Returns once no command asked for `idle_timeout`, or commands can no
/// longer reach the watcher; which of the two.
async fn unneeded(listening: &Listening, idle_timeout: Option<Duration>) -> &'static str {
    loop {
        tokio::time::sleep(LOOK_EVERY).await;
        if !listening.is_reachable() {
            return "its socket was removed or taken over";
        }
        if idle_timeout.is_some_and(|limit| listening.idle_for() >= limit) {
            return "no command asked within the idle timeout";
        }
    }
}
