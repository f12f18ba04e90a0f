//! `serve`: the relay's HTTP API (contract section 3).

use crate::account::{self, TransferOutcome};
use crate::config::Config;
use crate::ledger::{self, Ledger, Pool};
use crate::payload::{self, Transfer};
use std::io::Read;
use std::sync::Arc;
use std::time::Duration;
use tiny_http::{Header, Method, Response, Server};

const MAX_BODY: u64 = 64 * 1024;

pub fn serve(cfg: &Config) -> Result<(), String> {
    let pool = Arc::new(Pool::new(&cfg.ledger_path)?);
    let addr = format!("{}:{}", cfg.relay_host, cfg.relay_port);
    let server = Server::http(&addr).map_err(|e| format!("listen on {addr}: {e}"))?;
    eprintln!("relay: serving on {addr}, ledger {}", cfg.ledger_path);
    let account = cfg.account.clone();
    let timeout = cfg.account_timeout;
    loop {
        let request = match server.recv() {
            Ok(r) => r,
            Err(e) => {
                eprintln!("relay: accept: {e}");
                continue;
            }
        };
        let pool = Arc::clone(&pool);
        let account = account.clone();
        let spawned = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || handle(request, &pool, &account, timeout));
        if let Err(e) = spawned {
            eprintln!("relay: cannot start a request thread: {e}");
        }
    }
}

fn json_response(status: u16, body: String) -> Response<std::io::Cursor<Vec<u8>>> {
    let header = Header::from_bytes(&b"Content-Type"[..], &b"application/json"[..]).expect("static header");
    Response::from_data(body.into_bytes()).with_status_code(status).with_header(header)
}

fn handle(mut request: tiny_http::Request, pool: &Pool, account: &crate::config::AccountUrl, timeout: Duration) {
    let path = request.url().split('?').next().unwrap_or("").to_string();
    let (status, body) = match (request.method(), path.as_str()) {
        (Method::Get, "/health") => (200, "{\"status\":\"ok\"}".to_string()),
        (Method::Post, "/transfer") => {
            let mut body = Vec::new();
            let read = request.as_reader().take(MAX_BODY + 1).read_to_end(&mut body);
            match read {
                Err(e) => (400, payload::answer(None, "E400", &format!("cannot read the body: {e}"))),
                Ok(_) if body.len() as u64 > MAX_BODY => (400, payload::answer(None, "E400", "body too large")),
                Ok(_) => transfer(&body, pool, account, timeout),
            }
        }
        (_, "/health") | (_, "/transfer") => (405, payload::answer(None, "E405", "method not allowed")),
        _ => (404, payload::answer(None, "E404", "not found")),
    };
    let _ = request.respond(json_response(status, body));
}

/// POST /transfer: the contract's table, "What the relay does with a GUID".
fn transfer(body: &[u8], pool: &Pool, account: &crate::config::AccountUrl, timeout: Duration) -> (u16, String) {
    let t = match payload::parse_transfer(body) {
        Ok(t) => t,
        Err(why) => return (400, payload::answer(None, "E400", &why)),
    };
    // Valid JSON is valid UTF-8: the request is stored as received.
    let raw = String::from_utf8_lossy(body).into_owned();
    match decide(&t, &raw, pool) {
        Ok(Decision::Answer(body)) => (200, body),
        Ok(Decision::Call(attempt)) => (200, call_and_record(&t, attempt, account, timeout, pool)),
        Err(e) => {
            // The ledger could not be read or written: nothing was sent, and the row (if any) is as it was.
            eprintln!("relay: ledger error for {}: {e}", t.guid);
            (200, payload::answer(Some(&t.guid), "E902", &format!("not sent: ledger unavailable ({e})")))
        }
    }
}

enum Decision {
    Answer(String),
    /// This request holds the SENT claim with this attempt number: call the account system.
    Call(i64),
}

fn decide(t: &Transfer, raw: &str, pool: &Pool) -> Result<Decision, String> {
    for _ in 0..20 {
        let step = pool.with(|c| -> rusqlite::Result<Option<Decision>> {
            if ledger::claim_new(c, &t.guid, raw)? {
                return Ok(Some(Decision::Call(1)));
            }
            let Some(row) = ledger::get(c, &t.guid)? else {
                return Ok(None); // deleted in between (purge): try the claim again
            };
            if let Ok(stored) = payload::parse_transfer(row.request.as_bytes()) {
                if !stored.same_request(t) {
                    return Ok(Some(Decision::Answer(payload::answer(Some(&t.guid), "E904", payload::MSG_E904))));
                }
            }
            Ok(Some(match row.status.as_str() {
                "SENT" | "RECEIVED" => Decision::Answer(payload::answer(Some(&t.guid), "E903", payload::MSG_E903)),
                "DONE" => Decision::Answer(match row.response {
                    Some(r) => r,
                    None => payload::answer(Some(&t.guid), row.resp_code.as_deref().unwrap_or("E500"), ""),
                }),
                "UNKNOWN" => Decision::Answer(payload::answer(Some(&t.guid), "E901", payload::MSG_E901)),
                "FAILED" => match ledger::claim_failed(c, &t.guid, None)? {
                    Some(attempt) => Decision::Call(attempt),
                    None => return Ok(None), // someone else claimed it: read it again
                },
                _ => Decision::Answer(payload::answer(Some(&t.guid), "E901", payload::MSG_E901)),
            }))
        })?;
        match step {
            Ok(Some(d)) => return Ok(d),
            Ok(None) => continue,
            Err(e) => return Err(e.to_string()),
        }
    }
    Err("the row kept changing".into())
}

/// Calls the account system under a SENT claim and records the outcome; returns the answer body.
/// Shared by `serve` and `reprocess`.
pub fn call_and_record(t: &Transfer, attempt: i64, account: &crate::config::AccountUrl, timeout: Duration, db: &impl Ledger) -> String {
    let (status, code, body, saved) = match account::transfer(account, t, timeout) {
        TransferOutcome::Definite { code, message } => {
            let body = payload::answer(Some(&t.guid), &code, &message);
            ("DONE", code, body.clone(), Some(body))
        }
        TransferOutcome::NotSent(why) => {
            eprintln!("relay: {} not sent: {why}", t.guid);
            ("FAILED", "E902".to_string(), payload::answer(Some(&t.guid), "E902", payload::MSG_E902), None)
        }
        TransferOutcome::Unknown(why) => {
            eprintln!("relay: {} outcome unknown: {why}", t.guid);
            ("UNKNOWN", "E901".to_string(), payload::answer(Some(&t.guid), "E901", payload::MSG_E901), None)
        }
    };
    let recorded = db.with(|c| ledger::record(c, &t.guid, attempt, status, &code, saved.as_deref()));
    match recorded {
        Ok(Ok(true)) => {}
        Ok(Ok(false)) => eprintln!("relay: {} changed under its claim; outcome {code} not recorded", t.guid),
        Ok(Err(e)) => eprintln!("relay: {}: cannot record outcome {code}: {e}", t.guid),
        Err(e) => eprintln!("relay: {}: cannot record outcome {code}: {e}", t.guid),
    }
    body
}
