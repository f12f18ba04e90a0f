'use strict';
// The PSP client. The PSP is NOT idempotent: every POST /v1/transfers moves money again.
//   POST {PSP_URL}/v1/transfers  {"amount", "currency", "debtor_account", "creditor_account", "reference": <key>}
//     201 executed {"id": "tr_...", "status": "executed", "reference": <key>}
//     422 refused  {"error": ..., "code": "B20x"}
//   GET  {PSP_URL}/v1/transfers?reference=<key>   200 the executed transfer, 404 none was executed
const http = require('node:http');
const https = require('node:https');

// One HTTP exchange on a fresh connection (no keep-alive: a reused, half-dead socket would turn a
// request that never left into an "unknown"). Resolves to one of
//   { kind: 'answer', status, body }   the PSP answered
//   { kind: 'not_sent', error }        the connection was never established: nothing reached the PSP
//   { kind: 'unknown', error }         connected, then a time-out or a broken connection: it may have gone out
function exchange(method, url, payload, timeoutMs) {
  return new Promise((resolve) => {
    const u = new URL(url);
    const lib = u.protocol === 'https:' ? https : http;
    const data = payload === undefined ? null : Buffer.from(JSON.stringify(payload));
    const headers = { accept: 'application/json', connection: 'close' };
    if (data) { headers['content-type'] = 'application/json'; headers['content-length'] = data.length; }
    let connected = false;
    let done = false;
    const finish = (r) => { if (!done) { done = true; clearTimeout(timer); resolve(r); } };
    const req = lib.request(u, { method, headers, agent: false });
    const timer = setTimeout(() => req.destroy(new Error(`no answer within ${timeoutMs} ms`)), Math.max(1, timeoutMs));
    req.on('socket', (sock) => {
      if (!sock.connecting) connected = true;
      sock.once('connect', () => { connected = true; });
      sock.once('secureConnect', () => { connected = true; });
    });
    req.on('error', (err) => {
      finish({ kind: connected ? 'unknown' : 'not_sent', error: err.message });
    });
    req.on('response', (res) => {
      const chunks = [];
      let size = 0;
      res.on('data', (c) => {
        size += c.length;
        if (size > 1 << 20) { req.destroy(new Error('answer too large')); return; }
        chunks.push(c);
      });
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body = null;
        try { body = text ? JSON.parse(text) : null; } catch { body = null; }
        finish({ kind: 'answer', status: res.statusCode, body, text });
      });
      res.on('error', (err) => finish({ kind: 'unknown', error: err.message }));
      res.on('close', () => { if (!res.complete) finish({ kind: 'unknown', error: 'answer cut short' }); });
    });
    if (data) req.write(data);
    req.end();
  });
}

function baseUrl() {
  const u = process.env.PSP_URL;
  if (!u) throw new Error('PSP_URL is not set');
  return u.replace(/\/+$/, '');
}

function timeoutMs() {
  const t = Number(process.env.PSP_TIMEOUT_MS || 2000);
  return Number.isFinite(t) && t > 0 ? t : 2000;
}

function transfer(key, payment, tmo) {
  return exchange('POST', `${baseUrl()}/v1/transfers`, {
    amount: payment.amount,
    currency: payment.currency,
    debtor_account: payment.debtor,
    creditor_account: payment.creditor,
    reference: key,
  }, tmo);
}

function lookup(key, tmo) {
  return exchange('GET', `${baseUrl()}/v1/transfers?reference=${encodeURIComponent(key)}`, undefined, tmo);
}

module.exports = { transfer, lookup, timeoutMs };
