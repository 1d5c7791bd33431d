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
    /// Stop the process that watches the project (it stops answering at once and exits within a few seconds),
    /// instead of watching.
    #[arg(long, conflicts_with = "idle_timeout")]
    stop: bool,
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
    if args.stop {
        return stop(ctx, out, &project);
    }
    let ctx = Context::new(ctx.home.clone(), project.clone()).watching();
    let Some(listening) = ctx.answer_commands()? else {
        return Err(Error::new(
            ErrorCode::Conflict,
            format!("another aam process already watches `{}`", project.display()),
        )
        .with_hint("commands run in the project already ask it; `aam watch --stop` stops it"));
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
    let started = Identities::now(&ctx);
    let why = wait_for_stop(&listening, idle_timeout, || started.moved(&ctx))?;
    tracing::info!("stopped watching `{}`: {why}", project.display());
    Ok(0)
}

/// `aam watch --stop`: removes the socket of the process watching `project`,
/// which then stops (an MCP server goes on serving, without answering commands).
fn stop(ctx: &Context, out: &Output, project: &std::path::Path) -> Result<i32> {
    let key = crate::project::key(project);
    let stopped = crate::project::ask::stop_answering(&ctx.home, &key)?;
    let report = serde_json::json!({ "project": project, "stopped": stopped });
    out.emit(&report, |_| match stopped {
        true => format!(
            "the process watching `{}` no longer answers its commands (`aam watch` exits within a few \
             seconds, an MCP server goes on serving); they check its files, and one that checks a large \
             project starts a new watcher (`aam config set project.auto_watch 0` turns that off)\n",
            project.display()
        ),
        false => format!("no process watches `{}`\n", project.display()),
    })
}

/// The files a watcher depends on, by identity (device, inode).
struct Identities {
    catalog: Option<(u64, u64)>,
    exe: Option<(PathBuf, (u64, u64))>,
}

impl Identities {
    fn now(ctx: &Context) -> Self {
        use std::os::unix::fs::MetadataExt;
        let exe = std::env::current_exe()
            .ok()
            .and_then(|path| std::fs::metadata(&path).ok().map(|m| (path, (m.dev(), m.ino()))));
        Self {
            catalog: ctx.home.catalog_identity(),
            exe,
        }
    }

    /// What was replaced since: the catalog file (the watcher's versions tell
    /// nothing about the new one) or aam's executable (an upgrade: the next
    /// command starts a watcher of the new version); or the project folder is
    /// gone (deleted, with nothing made at its path).
    fn moved(&self, ctx: &Context) -> Option<&'static str> {
        if !ctx.cwd.is_dir() {
            return Some("its project folder is gone");
        }
        let catalog = ctx.home.catalog_path();
        if self.catalog.is_some_and(|was| replaced(&catalog, was)) {
            return Some("its catalog file was replaced");
        }
        match &self.exe {
            Some((path, was)) if replaced(path, *was) => Some("aam's executable was replaced"),
            _ => None,
        }
    }
}

/// Whether the file at `path` is gone or another file than `was` (a failure
/// to look, such as a stale network handle, is neither).
fn replaced(path: &std::path::Path, was: (u64, u64)) -> bool {
    use std::os::unix::fs::MetadataExt;
    match std::fs::metadata(path) {
        Ok(meta) => (meta.dev(), meta.ino()) != was,
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
    }
}

/// How often a watcher looks at its socket and at how long it has been idle.
const LOOK_EVERY: Duration = Duration::from_secs(1);

/// Blocks until the process is told to stop (Ctrl-C, `SIGTERM`), no command
/// asked for `idle_timeout`, commands can no longer reach it (its socket was
/// removed or taken over), or `replaced` names a file it depends on that was
/// replaced; returns which.
fn wait_for_stop(
    listening: &Listening,
    idle_timeout: Option<Duration>,
    replaced: impl Fn() -> Option<&'static str>,
) -> Result<&'static str> {
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
                why = unneeded(listening, idle_timeout, &replaced) => Ok(why),
            }
        }
        #[cfg(not(unix))]
        tokio::select! {
            _ = tokio::signal::ctrl_c() => Ok("interrupted"),
            why = unneeded(listening, idle_timeout, &replaced) => Ok(why),
        }
    })
}

/// Returns once no command asked for `idle_timeout`, commands can no longer
/// reach the watcher, or `replaced` names a replaced file; why.
async fn unneeded(
    listening: &Listening,
    idle_timeout: Option<Duration>,
    replaced: impl Fn() -> Option<&'static str>,
) -> &'static str {
    loop {
        tokio::time::sleep(LOOK_EVERY).await;
        if !listening.is_reachable() {
            return "its socket was removed or taken over";
        }
        if let Some(why) = replaced() {
            return why;
        }
        if idle_timeout.is_some_and(|limit| listening.idle_for() >= limit) {
            return "no command asked within the idle timeout";
        }
    }
}
