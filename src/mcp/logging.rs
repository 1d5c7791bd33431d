//! MCP logging: `logging/setLevel` and `notifications/message`.
//!
//! A tracing layer (installed by `aam mcp serve`) hands each of aam's own log
//! events (target `aam::…`; never rmcp's, which hold whole payloads) to every
//! session that asked for its level or a lower one. Each session has a task
//! that sends the notifications, so logging never waits on a client. Over
//! stateless HTTP `logging/setLevel` is accepted but there is no stream to
//! send on, so nothing is sent.
//!
//! MCP logging is deprecated by SEP-2577 (rmcp marks it so); clients still use it.
#![expect(
    deprecated,
    reason = "MCP logging is deprecated (SEP-2577) but clients still call logging/setLevel"
)]

use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::{Peer, RoleServer};
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, Layer};

/// No session listens.
const SILENT: u8 = u8::MAX;

/// One log event, ready to send.
#[derive(Debug, Clone)]
struct Record {
    rank: u8,
    logger: String,
    data: Value,
}

struct Subscription {
    id: u64,
    rank: u8,
    sender: mpsc::UnboundedSender<Record>,
}

static SUBSCRIPTIONS: Mutex<Vec<Subscription>> = Mutex::new(Vec::new());
/// The lowest level any session listens at, so unwanted events cost one load.
static LOWEST: AtomicU8 = AtomicU8::new(SILENT);
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

fn subscriptions() -> MutexGuard<'static, Vec<Subscription>> {
    SUBSCRIPTIONS.lock().unwrap_or_else(|e| e.into_inner())
}

fn update_lowest(subscriptions: &[Subscription]) {
    let lowest = subscriptions.iter().map(|s| s.rank).min().unwrap_or(SILENT);
    LOWEST.store(lowest, Ordering::Relaxed);
}

/// An MCP level as a rank: `debug` 0 … `emergency` 7.
fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// A tracing level as a rank (`trace` and `debug` are MCP `debug`).
fn rank_of(level: &tracing::Level) -> u8 {
    match *level {
        tracing::Level::TRACE | tracing::Level::DEBUG => 0,
        tracing::Level::INFO => 1,
        tracing::Level::WARN => 3,
        tracing::Level::ERROR => 4,
    }
}

fn level_of(rank: u8) -> LoggingLevel {
    match rank {
        0 => LoggingLevel::Debug,
        1 => LoggingLevel::Info,
        2 => LoggingLevel::Notice,
        3 => LoggingLevel::Warning,
        4 => LoggingLevel::Error,
        5 => LoggingLevel::Critical,
        6 => LoggingLevel::Alert,
        _ => LoggingLevel::Emergency,
    }
}

/// One session's subscription, if it asked for log messages.
#[derive(Debug, Default)]
pub(super) struct Session {
    id: Mutex<Option<u64>>,
}

/// `logging/setLevel`: from now on `peer` gets aam's log events at `level`
/// and above. Called again, it changes the level.
pub(super) fn set_level(session: &Session, peer: Peer<RoleServer>, level: LoggingLevel) {
    let rank = rank(level);
    let mut all = subscriptions();
    let mut id = session.id.lock().unwrap_or_else(|e| e.into_inner());
    let existing = (*id).and_then(|id| all.iter_mut().find(|s| s.id == id && !s.sender.is_closed()));
    if let Some(subscription) = existing {
        subscription.rank = rank;
    } else {
        let (sender, mut records) = mpsc::unbounded_channel::<Record>();
        tokio::spawn(async move {
            while let Some(record) = records.recv().await {
                let param =
                    LoggingMessageNotificationParam::new(level_of(record.rank), record.data).with_logger(record.logger);
                if peer.notify_logging_message(param).await.is_err() {
                    break; // the client is gone
                }
            }
        });
        let new = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        all.push(Subscription { id: new, rank, sender });
        *id = Some(new);
    }
    update_lowest(&all);
}

/// Whether an event with this metadata may interest a session (cheap).
pub fn wanted(metadata: &tracing::Metadata<'_>) -> bool {
    let lowest = LOWEST.load(Ordering::Relaxed);
    lowest != SILENT && metadata.target().starts_with("aam") && rank_of(metadata.level()) >= lowest
}

/// The tracing layer that turns events into `notifications/message`; filter
/// it with [`wanted`].
pub struct McpLogLayer;

impl<S: tracing::Subscriber> Layer<S> for McpLogLayer {
    fn on_event(&self, event: &tracing::Event<'_>, _ctx: Context<'_, S>) {
        let metadata = event.metadata();
        let mut fields = Fields(Map::new());
        event.record(&mut fields);
        let record = Record {
            rank: rank_of(metadata.level()),
            logger: metadata.target().to_string(),
            data: Value::Object(fields.0),
        };
        let mut all = subscriptions();
        // Keep a session unless sending to it failed (it has gone).
        all.retain(|s| s.rank > record.rank || s.sender.send(record.clone()).is_ok());
        update_lowest(&all);
    }
}

/// An event's fields as a JSON object (`message` holds the text).
struct Fields(Map<String, Value>);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0
            .insert(field.name().to_string(), Value::from(format!("{value:?}")));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_string(), Value::from(value));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().to_string(), Value::from(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_string(), Value::from(value));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(field.name().to_string(), Value::from(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().to_string(), Value::from(value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_keep_their_order() {
        let ranks: Vec<u8> = (0..8).map(|r| rank(level_of(r))).collect();
        assert_eq!(ranks, (0..8).collect::<Vec<_>>());
        assert!(rank_of(&tracing::Level::WARN) == rank(LoggingLevel::Warning));
        assert!(rank_of(&tracing::Level::ERROR) > rank_of(&tracing::Level::WARN));
        assert_eq!(rank_of(&tracing::Level::TRACE), rank(LoggingLevel::Debug));
    }
}
