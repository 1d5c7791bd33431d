//! The one tracing set-up of the process, for every front end: the CLI's
//! commands log to stderr for people (`warning: message`), `aam mcp serve` logs
//! as text or JSON to stderr or a file and adds the layer that forwards events to
//! MCP clients. `AAM_LOG` (a tracing filter) wins over the default filter each
//! front end derives from `-v` or `--log-level`; `rmcp` stays at `warn` unless
//! asked for (its debug level logs whole payloads).
//!
//! Never writes stdout: in `mcp serve` over stdio only the protocol does.

use std::io::IsTerminal;
use std::path::PathBuf;

use tracing_subscriber::Layer as _;
use tracing_subscriber::fmt::writer::BoxMakeWriter;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Registry};

use crate::error::{Error, Result};

/// A layer of the process's subscriber.
pub type BoxedLayer = Box<dyn tracing_subscriber::Layer<Registry> + Send + Sync>;

/// How log lines look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// `warning: message`, fields after the message; colours on a terminal.
    People,
    /// tracing's full text format (time, level, target), no colours.
    Text,
    /// One JSON object per line.
    Json,
}

/// What one front end asks of logging.
pub struct Logging {
    /// The filter when `AAM_LOG` is unset or empty.
    pub default_filter: String,
    /// How lines look.
    pub style: Style,
    /// Append to this file instead of writing stderr.
    pub file: Option<PathBuf>,
    /// Further layers (the MCP server's forwarding to clients), each with its own
    /// filter; the output filter does not apply to them.
    pub extra: Vec<BoxedLayer>,
}

/// The CLI's default filter for `-v` given `verbose` times.
pub fn verbosity_filter(verbose: u8) -> String {
    let level = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    format!("{level},rmcp=warn")
}

/// The MCP server's default filter for `--log-level`; refuses a name that is no level.
pub fn level_filter(given: &str) -> Result<String> {
    let level = given.to_ascii_lowercase();
    if !["error", "warn", "info", "debug", "trace"].contains(&level.as_str()) {
        return Err(Error::invalid_argument(format!("`{given}` is not a log level"))
            .with_hint("use error, warn, info, debug or trace"));
    }
    Ok(format!("{level},rmcp=warn,refinery_core=warn"))
}

/// The filter in force: `AAM_LOG` when set, else `default`.
fn filter(default: &str) -> EnvFilter {
    let text = std::env::var("AAM_LOG")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| default.to_string());
    EnvFilter::new(text)
}

/// Installs the process's subscriber; fails when the log file cannot be opened
/// or a subscriber is already installed.
pub fn init(logging: Logging) -> Result<()> {
    let (writer, terminal) = match &logging.file {
        Some(path) => {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| Error::io("open", path, e))?;
            (BoxMakeWriter::new(std::sync::Mutex::new(file)), false)
        }
        None => (BoxMakeWriter::new(std::io::stderr), std::io::stderr().is_terminal()),
    };
    let filter = filter(&logging.default_filter);
    let output = tracing_subscriber::fmt::layer().with_writer(writer);
    let output: BoxedLayer = match logging.style {
        Style::People => output
            .with_ansi(terminal)
            .event_format(LogLine)
            .with_filter(filter)
            .boxed(),
        Style::Text => output.with_ansi(false).with_filter(filter).boxed(),
        Style::Json => output.with_ansi(false).json().with_filter(filter).boxed(),
    };
    let mut layers = vec![output];
    layers.extend(logging.extra);
    tracing_subscriber::registry()
        .with(layers)
        .try_init()
        .map_err(|e| Error::internal(format!("cannot set up logging: {e}")))
}

/// Log lines for people: `warning: message`, fields after the message.
struct LogLine;

impl<S, N> tracing_subscriber::fmt::FormatEvent<S, N> for LogLine
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut writer: tracing_subscriber::fmt::format::Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        let level = match *event.metadata().level() {
            tracing::Level::ERROR => "error",
            tracing::Level::WARN => "warning",
            tracing::Level::INFO => "info",
            tracing::Level::DEBUG => "debug",
            tracing::Level::TRACE => "trace",
        };
        write!(writer, "{level}: ")?;
        ctx.field_format().format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_filters_keep_rmcp_quiet() {
        assert_eq!(verbosity_filter(0), "warn,rmcp=warn");
        assert_eq!(verbosity_filter(2), "debug,rmcp=warn");
        assert_eq!(verbosity_filter(9), "trace,rmcp=warn");
        assert_eq!(level_filter("INFO").unwrap(), "info,rmcp=warn,refinery_core=warn");
        let err = level_filter("Loud").unwrap_err();
        assert_eq!(err.code(), crate::error::ErrorCode::InvalidArgument);
        assert_eq!(err.message(), "`Loud` is not a log level");
    }
}
