//! A payment relay following the relay contract v1.1.
//! One binary, four subcommands: serve, resolve, reprocess, purge.

mod account;
mod batch;
mod config;
mod ledger;
mod payload;
mod server;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(cmd) = args.first() else {
        eprintln!("usage: relay serve|resolve --min-age S|reprocess --max-attempts N|purge --retention S");
        return ExitCode::from(2);
    };
    let cfg = match config::Config::from_env() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("relay: {e}");
            return ExitCode::from(2);
        }
    };
    let rest = &args[1..];
    let result = match cmd.as_str() {
        "serve" => server::serve(&cfg),
        "resolve" => config::float_arg(rest, "--min-age").and_then(|s| batch::resolve(&cfg, s)),
        "reprocess" => config::int_arg(rest, "--max-attempts").and_then(|n| batch::reprocess(&cfg, n)),
        "purge" => config::float_arg(rest, "--retention").and_then(|s| batch::purge(&cfg, s)),
        other => Err(format!("unknown command {other:?}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("relay {cmd}: {e}");
            ExitCode::from(1)
        }
    }
}
