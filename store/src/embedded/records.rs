//! (to be written) The embedded records.

use super::db::Tx;

pub(super) const TABLES: &str = "";

pub(super) fn purge(_t: &Tx<'_>) -> rusqlite::Result<()> {
    Ok(())
}
