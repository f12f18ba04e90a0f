//! The batch commands (contract section 5): resolve, reprocess, purge.

use crate::account::{self, QueryOutcome};
use crate::config::Config;
use crate::ledger::{self, retry};
use crate::payload;
use rusqlite::params;
use std::time::Duration;

const DB_WAIT: Duration = Duration::from_secs(10);

/// For every UNKNOWN row, and every SENT row, at least `min_age` seconds old: ask the query API.
pub fn resolve(cfg: &Config, min_age: f64) -> Result<(), String> {
    let conn = ledger::open(&cfg.ledger_path)?;
    let cutoff = ledger::now() - min_age;
    let rows: Vec<(String, String, i64)> = retry(DB_WAIT, || {
        let mut st = conn.prepare(
            "SELECT guid, status, attempts FROM ledger
             WHERE status IN ('UNKNOWN', 'SENT') AND updated_at <= ?1 ORDER BY updated_at",
        )?;
        let rows = st.query_map(params![cutoff], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        rows.collect()
    })
    .map_err(|e| format!("read the ledger: {e}"))?;
    let (mut done, mut failed, mut kept) = (0, 0, 0);
    for (guid, status, attempts) in rows {
        let changed = match account::query(&cfg.account, &guid, cfg.account_timeout) {
            QueryOutcome::Found { code, message } => {
                let msg = message.unwrap_or_else(|| "resolved from the account system's query API".into());
                let response = payload::answer(Some(&guid), &code, &msg);
                let n = retry(DB_WAIT, || {
                    conn.execute(
                        "UPDATE ledger SET status = 'DONE', resp_code = ?4, response = ?5, updated_at = ?6
                         WHERE guid = ?1 AND status = ?2 AND attempts = ?3",
                        params![guid, status, attempts, code, response, ledger::now()],
                    )
                })
                .map_err(|e| format!("record {guid}: {e}"))?;
                done += n;
                n
            }
            QueryOutcome::NotFound => {
                let n = retry(DB_WAIT, || {
                    conn.execute(
                        "UPDATE ledger SET status = 'FAILED', updated_at = ?4
                         WHERE guid = ?1 AND status = ?2 AND attempts = ?3",
                        params![guid, status, attempts, ledger::now()],
                    )
                })
                .map_err(|e| format!("record {guid}: {e}"))?;
                failed += n;
                n
            }
            QueryOutcome::Failed(why) => {
                eprintln!("relay resolve: {guid}: query failed, left {status}: {why}");
                kept += 1;
                1
            }
        };
        if changed == 0 {
            eprintln!("relay resolve: {guid} changed meanwhile; left as it is");
        }
    }
    eprintln!("relay resolve: {done} DONE, {failed} FAILED, {kept} left as they were");
    Ok(())
}

/// For every FAILED row with attempts < max_attempts: claim it, resend it with the same GUID, record.
pub fn reprocess(cfg: &Config, max_attempts: i64) -> Result<(), String> {
    let conn = ledger::open(&cfg.ledger_path)?;
    let guids: Vec<String> = retry(DB_WAIT, || {
        let mut st = conn.prepare("SELECT guid FROM ledger WHERE status = 'FAILED' AND attempts < ?1 ORDER BY updated_at")?;
        let rows = st.query_map(params![max_attempts], |r| r.get(0))?;
        rows.collect()
    })
    .map_err(|e| format!("read the ledger: {e}"))?;
    let mut sent = 0;
    for guid in guids {
        let Some(row) = ledger::get(&conn, &guid).map_err(|e| format!("read {guid}: {e}"))? else { continue };
        let t = match payload::parse_transfer(row.request.as_bytes()) {
            Ok(t) if t.guid == guid => t,
            _ => {
                eprintln!("relay reprocess: {guid}: stored request unreadable; left FAILED");
                continue;
            }
        };
        let Some(attempt) = ledger::claim_failed(&conn, &guid, Some(max_attempts)).map_err(|e| format!("claim {guid}: {e}"))?
        else {
            continue; // claimed by someone else, or no longer FAILED
        };
        let answer = crate::server::call_and_record(&t, attempt, &cfg.account, cfg.account_timeout, &conn);
        eprintln!("relay reprocess: {guid} attempt {attempt}: {answer}");
        sent += 1;
    }
    eprintln!("relay reprocess: {sent} resent");
    Ok(())
}

/// Deletes DONE rows at least `retention` seconds old; never any other status.
pub fn purge(cfg: &Config, retention: f64) -> Result<(), String> {
    let conn = ledger::open(&cfg.ledger_path)?;
    let cutoff = ledger::now() - retention;
    let n = retry(DB_WAIT, || conn.execute("DELETE FROM ledger WHERE status = 'DONE' AND updated_at <= ?1", params![cutoff]))
        .map_err(|e| format!("purge: {e}"))?;
    eprintln!("relay purge: {n} DONE rows deleted");
    Ok(())
}
