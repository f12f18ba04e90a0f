//! The account system's client (contract section 2), a small HTTP/1.1 client on std::net so
//! that every way a call can end is classified exactly:
//! the connection could not be made -> NotSent (E902); anything after the connection was
//! made and no complete answer came in time -> Unknown (E901).

use crate::config::AccountUrl;
use crate::payload::Transfer;
use serde_json::Value;
use std::io::{ErrorKind, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

pub enum CallError {
    /// Definitely not sent: no connection was established.
    NotSent(String),
    /// The request may have gone out; no complete answer came.
    Unknown(String),
}

pub struct HttpAnswer {
    pub status: u16,
    pub body: Vec<u8>,
}

fn remaining(deadline: Instant) -> Option<Duration> {
    let now = Instant::now();
    if now >= deadline {
        None
    } else {
        Some(deadline - now)
    }
}

/// One request on a fresh connection, within `timeout` in all (connect, send, answer).
pub fn request(url: &AccountUrl, method: &str, path: &str, body: Option<&str>, timeout: Duration) -> Result<HttpAnswer, CallError> {
    let deadline = Instant::now() + timeout;
    let addrs: Vec<_> = (url.host.as_str(), url.port)
        .to_socket_addrs()
        .map_err(|e| CallError::NotSent(format!("cannot resolve {}: {e}", url.host)))?
        .collect();
    let mut last_err = String::from("no address");
    let mut stream = None;
    for addr in addrs {
        let Some(left) = remaining(deadline) else { break };
        match TcpStream::connect_timeout(&addr, left) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last_err = format!("connect {addr}: {e}"),
        }
    }
    let mut stream = stream.ok_or(CallError::NotSent(last_err))?;
    let _ = stream.set_nodelay(true);

    let body = body.unwrap_or("");
    let mut req = format!(
        "{method} {}{path} HTTP/1.1\r\nHost: {}:{}\r\nAccept: application/json\r\nConnection: close\r\n",
        url.prefix, url.host, url.port
    );
    if method == "POST" {
        req.push_str(&format!("Content-Type: application/json\r\nContent-Length: {}\r\n", body.len()));
    }
    req.push_str("\r\n");
    req.push_str(body);

    // From here on the request may have gone out, whatever happens.
    let left = remaining(deadline).ok_or_else(|| CallError::Unknown("timed out before sending".into()))?;
    stream.set_write_timeout(Some(left)).map_err(|e| CallError::Unknown(e.to_string()))?;
    stream.write_all(req.as_bytes()).map_err(|e| CallError::Unknown(format!("send: {e}")))?;
    let _ = stream.flush();

    read_answer(&mut stream, deadline).map_err(CallError::Unknown)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

enum Framing {
    Length(usize),
    Chunked,
    UntilClose,
}

fn read_answer(stream: &mut TcpStream, deadline: Instant) -> Result<HttpAnswer, String> {
    let mut buf: Vec<u8> = Vec::with_capacity(1024);
    let mut chunk = [0u8; 8192];
    let mut head: Option<(u16, Framing, usize)> = None; // status, framing, body start
    loop {
        if let Some((status, framing, start)) = &head {
            let body = &buf[*start..];
            match framing {
                Framing::Length(n) if body.len() >= *n => {
                    return Ok(HttpAnswer { status: *status, body: body[..*n].to_vec() });
                }
                Framing::Chunked => {
                    if let Some(b) = dechunk(body)? {
                        return Ok(HttpAnswer { status: *status, body: b });
                    }
                }
                _ => {}
            }
        }
        let left = remaining(deadline).ok_or("timed out waiting for the answer")?;
        stream.set_read_timeout(Some(left)).map_err(|e| e.to_string())?;
        let n = match stream.read(&mut chunk) {
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Err("timed out waiting for the answer".into())
            }
            Err(e) => return Err(format!("receive: {e}")),
        };
        if n == 0 {
            return match head {
                Some((status, Framing::UntilClose, start)) => Ok(HttpAnswer { status, body: buf[start..].to_vec() }),
                _ => Err("connection closed before a complete answer".into()),
            };
        }
        buf.extend_from_slice(&chunk[..n]);
        if head.is_none() {
            if let Some(end) = find(&buf, b"\r\n\r\n") {
                let (status, framing) = parse_head(&buf[..end])?;
                if status == 100 {
                    buf.drain(..end + 4);
                    continue;
                }
                head = Some((status, framing, end + 4));
            }
        }
    }
}

fn parse_head(head: &[u8]) -> Result<(u16, Framing), String> {
    let text = String::from_utf8_lossy(head);
    let mut lines = text.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let mut parts = status_line.split_whitespace();
    let proto = parts.next().unwrap_or("");
    if !proto.starts_with("HTTP/") {
        return Err(format!("not an HTTP answer: {status_line:?}"));
    }
    let status: u16 = parts.next().and_then(|s| s.parse().ok()).ok_or(format!("bad status line {status_line:?}"))?;
    let mut framing = Framing::UntilClose;
    for line in lines {
        let Some((k, v)) = line.split_once(':') else { continue };
        let (k, v) = (k.trim().to_ascii_lowercase(), v.trim());
        if k == "transfer-encoding" && v.to_ascii_lowercase().contains("chunked") {
            framing = Framing::Chunked;
        } else if k == "content-length" && !matches!(framing, Framing::Chunked) {
            framing = Framing::Length(v.parse().map_err(|_| format!("bad content-length {v:?}"))?);
        }
    }
    Ok((status, framing))
}

/// The decoded body once every chunk is in, `None` while more is needed.
fn dechunk(mut data: &[u8]) -> Result<Option<Vec<u8>>, String> {
    let mut out = Vec::new();
    loop {
        let Some(eol) = find(data, b"\r\n") else { return Ok(None) };
        let size_text = String::from_utf8_lossy(&data[..eol]);
        let size_hex = size_text.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_hex, 16).map_err(|_| format!("bad chunk size {size_hex:?}"))?;
        data = &data[eol + 2..];
        if size == 0 {
            return Ok(Some(out)); // trailers, if any, are not needed
        }
        if data.len() < size + 2 {
            return Ok(None);
        }
        out.extend_from_slice(&data[..size]);
        data = &data[size + 2..];
    }
}

/// The outcome of `POST /transfer`.
pub enum TransferOutcome {
    /// A definite answer: its code and message.
    Definite { code: String, message: String },
    NotSent(String),
    Unknown(String),
}

pub fn transfer(url: &AccountUrl, t: &Transfer, timeout: Duration) -> TransferOutcome {
    match request(url, "POST", "/transfer", Some(&t.account_body()), timeout) {
        Err(CallError::NotSent(e)) => TransferOutcome::NotSent(e),
        Err(CallError::Unknown(e)) => TransferOutcome::Unknown(e),
        Ok(ans) => {
            let v: Option<Value> = serde_json::from_slice(&ans.body).ok();
            let code = v.as_ref().and_then(|v| v.get("code")).and_then(Value::as_str);
            match code {
                Some(code) => TransferOutcome::Definite {
                    code: code.to_string(),
                    message: v
                        .as_ref()
                        .and_then(|v| v.get("message"))
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                },
                // An answer without a code cannot be recorded as definite: when in doubt, UNKNOWN.
                None => TransferOutcome::Unknown(format!(
                    "HTTP {} without a code: {}",
                    ans.status,
                    String::from_utf8_lossy(&ans.body).chars().take(200).collect::<String>()
                )),
            }
        }
    }
}

/// The outcome of `GET /transfer/{guid}`.
pub enum QueryOutcome {
    Found { code: String, message: Option<String> },
    NotFound,
    Failed(String),
}

pub fn query(url: &AccountUrl, guid: &str, timeout: Duration) -> QueryOutcome {
    let ans = match request(url, "GET", &format!("/transfer/{guid}"), None, timeout) {
        Ok(a) => a,
        Err(CallError::NotSent(e)) | Err(CallError::Unknown(e)) => return QueryOutcome::Failed(e),
    };
    let v: Option<Value> = serde_json::from_slice(&ans.body).ok();
    let found = v.as_ref().and_then(|v| v.get("found")).and_then(Value::as_bool);
    let code = v.as_ref().and_then(|v| v.get("code")).and_then(Value::as_str);
    match (ans.status, found, code) {
        (200, Some(true), Some(code)) => QueryOutcome::Found {
            code: code.to_string(),
            message: v.as_ref().and_then(|v| v.get("message")).and_then(Value::as_str).map(str::to_string),
        },
        (404, Some(false), _) => QueryOutcome::NotFound,
        (status, _, _) => QueryOutcome::Failed(format!(
            "HTTP {status}: {}",
            String::from_utf8_lossy(&ans.body).chars().take(200).collect::<String>()
        )),
    }
}
