//! The SQLite ledger (contract section 4): one row per GUID; every claim is one atomic statement.

use rusqlite::{params, Connection, OptionalExtension};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS ledger (
  guid       TEXT PRIMARY KEY,
  status     TEXT NOT NULL,
  resp_code  TEXT,
  request    TEXT NOT NULL,
  response   TEXT,
  attempts   INTEGER NOT NULL,
  updated_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS ledger_status_updated ON ledger(status, updated_at);";

pub fn now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

/// Retries `f` while SQLite reports the database busy or locked, up to `within`.
pub fn retry<T>(within: Duration, mut f: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
    let start = Instant::now();
    loop {
        match f() {
            Err(rusqlite::Error::SqliteFailure(e, m))
                if matches!(e.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
                    && start.elapsed() < within =>
            {
                let _ = m;
                std::thread::sleep(Duration::from_millis(10));
            }
            other => return other,
        }
    }
}

/// Opens the ledger, creating the file and schema if it is not there yet.
pub fn open(path: &str) -> Result<Connection, String> {
    let conn = Connection::open(path).map_err(|e| format!("open ledger {path}: {e}"))?;
    conn.busy_timeout(Duration::from_secs(5)).map_err(|e| e.to_string())?;
    let within = Duration::from_secs(10);
    retry(within, || conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0)))
        .map_err(|e| format!("set WAL mode on {path}: {e}"))?;
    retry(within, || conn.execute_batch(SCHEMA)).map_err(|e| format!("create schema in {path}: {e}"))?;
    Ok(conn)
}

/// A few open connections, shared by the request threads of `serve`.
pub struct Pool {
    path: String,
    idle: Mutex<Vec<Connection>>,
}

/// Something that lends a connection for one step.
pub trait Ledger {
    fn with<T>(&self, f: impl FnOnce(&Connection) -> T) -> Result<T, String>;
}

impl Ledger for Connection {
    fn with<T>(&self, f: impl FnOnce(&Connection) -> T) -> Result<T, String> {
        Ok(f(self))
    }
}

impl Pool {
    pub fn new(path: &str) -> Result<Pool, String> {
        let first = open(path)?;
        Ok(Pool { path: path.to_string(), idle: Mutex::new(vec![first]) })
    }

}

impl Ledger for Pool {
    fn with<T>(&self, f: impl FnOnce(&Connection) -> T) -> Result<T, String> {
        let conn = match self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop() {
            Some(c) => c,
            None => open(&self.path)?,
        };
        let out = f(&conn);
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        if idle.len() < 16 {
            idle.push(conn);
        }
        Ok(out)
    }
}

pub struct Row {
    pub status: String,
    pub resp_code: Option<String>,
    pub request: String,
    pub response: Option<String>,
}

const DB_WAIT: Duration = Duration::from_secs(5);

/// Claims a new GUID: true when this call inserted the SENT row (committed on return).
pub fn claim_new(c: &Connection, guid: &str, request: &str) -> rusqlite::Result<bool> {
    retry(DB_WAIT, || {
        c.execute(
            "INSERT INTO ledger (guid, status, resp_code, request, response, attempts, updated_at)
             VALUES (?1, 'SENT', NULL, ?2, NULL, 1, ?3) ON CONFLICT(guid) DO NOTHING",
            params![guid, request, now()],
        )
    })
    .map(|n| n == 1)
}

pub fn get(c: &Connection, guid: &str) -> rusqlite::Result<Option<Row>> {
    retry(DB_WAIT, || {
        c.query_row(
            "SELECT status, resp_code, request, response FROM ledger WHERE guid = ?1",
            params![guid],
            |r| {
                Ok(Row {
                    status: r.get(0)?,
                    resp_code: r.get(1)?,
                    request: r.get(2)?,
                    response: r.get(3)?,
                })
            },
        )
        .optional()
    })
}

/// Claims a FAILED row back to SENT (attempts + 1); the new attempt count when this call won.
/// `cap`: claim only while attempts < cap (reprocess's --max-attempts).
pub fn claim_failed(c: &Connection, guid: &str, cap: Option<i64>) -> rusqlite::Result<Option<i64>> {
    retry(DB_WAIT, || {
        c.query_row(
            "UPDATE ledger SET status = 'SENT', attempts = attempts + 1, updated_at = ?2
             WHERE guid = ?1 AND status = 'FAILED' AND (?3 IS NULL OR attempts < ?3)
             RETURNING attempts",
            params![guid, now(), cap],
            |r| r.get::<_, i64>(0),
        )
        .optional()
    })
}

/// Records the outcome of the call made under the claim `attempt` (only if the row is still that claim).
pub fn record(
    c: &Connection,
    guid: &str,
    attempt: i64,
    status: &str,
    resp_code: &str,
    response: Option<&str>,
) -> rusqlite::Result<bool> {
    retry(DB_WAIT, || {
        c.execute(
            "UPDATE ledger SET status = ?3, resp_code = ?4, response = ?5, updated_at = ?6
             WHERE guid = ?1 AND status = 'SENT' AND attempts = ?2",
            params![guid, attempt, status, resp_code, response, now()],
        )
    })
    .map(|n| n == 1)
}
