//! Row ids of the catalog's tables as types of their own, so a source id can
//! never be passed where an artifact id is meant. Each is the SQLite rowid,
//! stored and serialized as the plain integer (`#[serde(transparent)]`), so
//! JSON outputs and the install journal read as before.

use rusqlite::ToSql;
use rusqlite::types::{FromSql, FromSqlResult, ToSqlOutput, ValueRef};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

macro_rules! row_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
        #[serde(transparent)]
        pub struct $name(pub i64);

        impl ToSql for $name {
            fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
                self.0.to_sql()
            }
        }

        impl FromSql for $name {
            fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
                i64::column_result(value).map(Self)
            }
        }

        impl From<$name> for rusqlite::types::Value {
            fn from(id: $name) -> Self {
                Self::Integer(id.0)
            }
        }

        impl std::str::FromStr for $name {
            type Err = std::num::ParseIntError;

            fn from_str(text: &str) -> Result<Self, Self::Err> {
                text.parse().map(Self)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.fmt(f)
            }
        }
    };
}

row_id! {
    /// A source (`sources.id`).
    SourceId
}

row_id! {
    /// An artifact (`artifacts.id`).
    ArtifactId
}

row_id! {
    /// A project the catalog records (`projects.id`).
    ProjectId
}

row_id! {
    /// A package (`packages.id`).
    PackageId
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_plain_integers_in_json_and_sql() {
        assert_eq!(serde_json::to_string(&ArtifactId(42)).unwrap(), "42");
        assert_eq!(serde_json::from_str::<SourceId>("7").unwrap(), SourceId(7));
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let back: ArtifactId = conn.query_row("SELECT ?1", [ArtifactId(9)], |r| r.get(0)).unwrap();
        assert_eq!(back, ArtifactId(9));
        let schema = serde_json::to_value(schemars::schema_for!(SourceId)).unwrap();
        assert_eq!(schema["type"], "integer");
    }
}
