//! The data file's tables: created on first use, checked on every open
//! (a file of another format or a newer schema is refused), and the
//! deletion of expired rows.

use rusqlite::{Connection, OptionalExtension, params};

use super::db::Tx;

/// Every table, by the part of the store that owns it.
const TABLES: [&str; 5] = [
    super::rooms::TABLES,
    super::seen::TABLES,
    super::wallet::TABLES,
    super::records::TABLES,
    super::leaderboard::TABLES,
];

/// Makes a new file a data file of `format` at `version`, or checks that
/// an existing one is.
pub(super) fn create_or_check(conn: &Connection, format: &str, version: i64) -> Result<(), String> {
    let tables: i64 = conn
        .query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))
        .map_err(|e| e.to_string())?;
    if tables == 0 {
        let mut sql = String::from(
            "BEGIN IMMEDIATE;
             CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;",
        );
        for t in TABLES {
            sql.push_str(t);
        }
        sql.push_str(&format!(
            "INSERT INTO meta VALUES ('format', '{format}'), ('schema', '{version}');
             COMMIT;"
        ));
        return conn.execute_batch(&sql).map_err(|e| e.to_string());
    }
    let meta = |key: &str| {
        conn.query_row("SELECT value FROM meta WHERE key = ?1", params![key], |r| {
            r.get::<_, String>(0)
        })
        .optional()
    };
    let found = meta("format").map_err(|_| "it has no Jumpgate format mark".to_owned())?;
    if found.as_deref() != Some(format) {
        return Err(format!("its format is {found:?}, not {format:?}"));
    }
    let schema: i64 = meta("schema")
        .map_err(|e| e.to_string())?
        .and_then(|s| s.parse().ok())
        .ok_or("it has no schema version")?;
    if schema != version {
        return Err(format!(
            "it was written with schema {schema}; this build reads schema {version}"
        ));
    }
    Ok(())
}

/// Deletes the rows whose time ran out (each part's own rule), as Redis
/// expires keys; reads never return them meanwhile.
pub(super) fn purge(t: &Tx<'_>) -> rusqlite::Result<()> {
    super::rooms::purge(t)?;
    super::wallet::purge(t)?;
    super::records::purge(t)?;
    super::leaderboard::purge(t)
}
