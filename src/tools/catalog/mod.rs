//! Catalog maintenance tools: reindex, export, statistics, check and repair.

mod check;
mod export;
mod reindex;
mod repair;
mod stats;

pub use check::{Check, CheckInput};
pub use export::{CSV_COLUMNS, Export, ExportFormat, ExportInput, ExportOutput};
pub use reindex::{Reindex, ReindexInput, ReindexOutput};
pub use repair::{Repair, RepairAction, RepairInput, RepairOutput};
pub use stats::{DiskUsage, IndexStat, SourceStat, Stats, StatsInput, StatsOutput, TypeCounts};
