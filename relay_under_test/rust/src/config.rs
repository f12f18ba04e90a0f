//! The environment every command gets (contract section 1) and the batch arguments.

use std::time::Duration;

pub struct Config {
    pub relay_host: String,
    pub relay_port: u16,
    pub account: AccountUrl,
    pub ledger_path: String,
    pub account_timeout: Duration,
}

/// `http://host:port[/prefix]`, split once.
#[derive(Clone)]
pub struct AccountUrl {
    pub host: String,
    pub port: u16,
    pub prefix: String,
}

impl Config {
    pub fn from_env() -> Result<Config, String> {
        let get = |k: &str| std::env::var(k).map_err(|_| format!("{k} is not set"));
        let relay_host = std::env::var("RELAY_HOST").unwrap_or_else(|_| "127.0.0.1".into());
        let relay_port = match std::env::var("RELAY_PORT") {
            Ok(p) => p.trim().parse().map_err(|_| format!("RELAY_PORT {p:?} is not a port"))?,
            Err(_) => 0,
        };
        let account = parse_url(&get("ACCOUNT_URL")?)?;
        let ledger_path = get("LEDGER_PATH")?;
        let ms: u64 = match std::env::var("ACCOUNT_TIMEOUT_MS") {
            Ok(v) => v.trim().parse::<f64>().map_err(|_| format!("ACCOUNT_TIMEOUT_MS {v:?} is not a number"))? as u64,
            Err(_) => 2000,
        };
        Ok(Config { relay_host, relay_port, account, ledger_path, account_timeout: Duration::from_millis(ms.max(1)) })
    }
}

fn parse_url(url: &str) -> Result<AccountUrl, String> {
    let rest = url
        .trim()
        .strip_prefix("http://")
        .ok_or_else(|| format!("ACCOUNT_URL {url:?} is not an http:// URL"))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let (host, port) = match authority.rfind(':') {
        Some(i) if !authority.ends_with(']') => (
            &authority[..i],
            authority[i + 1..].parse::<u16>().map_err(|_| format!("bad port in ACCOUNT_URL {url:?}"))?,
        ),
        _ => (authority, 80),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']').to_string();
    Ok(AccountUrl { host, port, prefix: path.trim_end_matches('/').to_string() })
}

fn arg_value<'a>(args: &'a [String], name: &str) -> Result<&'a str, String> {
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == name {
            return it.next().map(|s| s.as_str()).ok_or_else(|| format!("{name} needs a value"));
        }
        if let Some(v) = a.strip_prefix(name).and_then(|v| v.strip_prefix('=')) {
            return Ok(v);
        }
    }
    Err(format!("{name} is required"))
}

pub fn float_arg(args: &[String], name: &str) -> Result<f64, String> {
    let v = arg_value(args, name)?;
    match v.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        _ => Err(format!("{name} {v:?} is not a non-negative number")),
    }
}

pub fn int_arg(args: &[String], name: &str) -> Result<i64, String> {
    let v = arg_value(args, name)?;
    v.trim().parse::<i64>().map_err(|_| format!("{name} {v:?} is not an integer"))
}
