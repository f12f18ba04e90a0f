'use strict';
// payments_node: POST /payments with an Idempotency-Key header; keys in PostgreSQL; a PSP moves the money.
//
//   node src/service.js serve                        HTTP API on $HOST:$PORT (HOST defaults to 127.0.0.1)
//   node src/service.js resolve --min-age S          settle unknown/orphaned keys from the PSP's query API
//   node src/service.js reprocess --max-attempts N   resend keys that definitely never reached the PSP
//   node src/service.js purge --retention S          expire settled keys older than S seconds
//
// Environment: PORT, DATABASE_URL, PSP_URL, PSP_TIMEOUT_MS.
const http = require('node:http');
const { Store, ST, log } = require('./db');
const psp = require('./psp');
const P = require('./payments');

const MAX_BODY = 64 * 1024;

function send(res, status, body, headers = {}) {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

function answer(res, outcome) {
  const headers = outcome.status === ST.NOT_SENT || outcome.status === ST.UNKNOWN ? { 'retry-after': '1' } : {};
  send(res, outcome.httpStatus, outcome.body, headers);
}

function replay(res, row, payment) {
  if (row.response_status && row.response_body !== null) {
    return send(res, row.response_status, row.response_body, { 'idempotent-replayed': 'true' });
  }
  return answer(res, P.unknown(row.idempotency_key, payment, 502, 'the outcome is being reconciled'));
}

async function handlePayment(store, req, res, raw, t0) {
  const key = P.parseKey(req.headers['idempotency-key']);
  if (!key) return send(res, 400, { error: 'idempotency_key_missing', message: 'an Idempotency-Key header (1 to 255 visible ASCII characters) is required' });
  const parsed = P.parsePayment(raw);
  if (parsed.error) return send(res, 400, { error: 'invalid_request', message: parsed.error });
  const payment = parsed.payment;
  const request = P.canonical(payment);
  const hash = P.fingerprint(payment);

  const T = psp.timeoutMs();
  const deadline = t0 + T + 900; // answer within the PSP time-out plus a little, whatever the database does
  const pspTimeout = () => Math.min(T, Math.max(deadline - 250 - Date.now(), Math.min(T, 500)));
  const run = async () => P.execute(store, key, payment, pspTimeout(), () => deadline);

  for (let round = 0; round < 5; round++) {
    // 1. Claim the key: one INSERT that tells whether this request won; committed before any PSP call.
    if (await store.claimNew(key, hash, request, 600)) return answer(res, await run());
    const row = await store.get(key, 600);
    if (!row) continue; // expired between the two statements: claim again
    // 2. The key exists: same payload or not?
    if (row.request_hash !== hash) {
      return send(res, 422, { error: 'idempotency_key_reused', message: 'this Idempotency-Key was already used with a different request payload' });
    }
    switch (row.status) {
      case ST.IN_PROGRESS:
        return send(res, 409, { error: 'idempotency_key_in_use', message: 'a request with this Idempotency-Key is still being processed; retry later' }, { 'retry-after': '1' });
      case ST.SUCCEEDED:
      case ST.REFUSED:
      case ST.UNKNOWN: // never resent blindly: the stored "unknown" answer until reconciliation settles it
        return replay(res, row, payment);
      case ST.NOT_SENT: { // nothing ever reached the PSP: claim it back atomically and try again
        if (await store.claimNotSent(key, hash, 600)) return answer(res, await run());
        continue; // someone else claimed it: look again
      }
      default:
        return send(res, 500, { error: 'internal_error', message: `key in unexpected state ${row.status}` });
    }
  }
  return send(res, 409, { error: 'idempotency_key_in_use', message: 'this Idempotency-Key is changing state; retry later' }, { 'retry-after': '1' });
}

async function initStore(store, forMs) {
  const until = Date.now() + forMs;
  for (;;) {
    try { await store.init(); return; } catch (err) {
      if (Date.now() > until) throw err;
      log('db not ready yet:', err.message);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

async function serve() {
  const port = Number(process.env.PORT);
  if (!Number.isInteger(port) || port <= 0) throw new Error('PORT is not set');
  const host = process.env.HOST || '127.0.0.1';
  const store = new Store(process.env.DATABASE_URL);
  await initStore(store, 30000);

  const server = http.createServer((req, res) => {
    const t0 = Date.now();
    const url = new URL(req.url, 'http://localhost');
    if (url.pathname === '/health') {
      req.resume();
      return req.method === 'GET' ? send(res, 200, { status: 'ok' }) : send(res, 405, { error: 'method_not_allowed' });
    }
    if (url.pathname !== '/payments') { req.resume(); return send(res, 404, { error: 'not_found' }); }
    if (req.method !== 'POST') { req.resume(); return send(res, 405, { error: 'method_not_allowed' }, { allow: 'POST' }); }
    const chunks = [];
    let size = 0;
    let tooBig = false;
    req.on('data', (c) => { size += c.length; if (size > MAX_BODY) tooBig = true; else chunks.push(c); });
    req.on('end', () => {
      if (tooBig) return send(res, 400, { error: 'invalid_request', message: 'body too large' });
      handlePayment(store, req, res, Buffer.concat(chunks).toString('utf8'), t0).catch((err) => {
        log('request failed:', err.stack || err.message);
        // Nothing is known to have been sent when we get here before the PSP call; after a claim the
        // key stays in_progress and is reconciled. Either way: not a definite answer.
        if (!res.headersSent) send(res, 503, { error: 'temporarily_unavailable', message: 'the request could not be processed; retry with the same key' }, { 'retry-after': '1' });
      });
    });
    req.on('error', () => {});
  });
  server.keepAliveTimeout = 5000;
  server.on('clientError', (err, socket) => { if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n'); });
  await new Promise((resolve, reject) => { server.once('error', reject); server.listen(port, host, 511, resolve); });
  log(`serving on http://${host}:${port}`);
  const stop = () => { server.close(); store.close().finally(() => process.exit(0)); setTimeout(() => process.exit(0), 2000).unref(); };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

// Batch: every unknown key, and every in_progress key orphaned by a crash, at least minAge old:
// ask the PSP. Executed → succeeded (the answer built as serve builds it). Not found → not_sent
// (a retry or reprocess may send it again). The query fails → leave the row as it is.
async function resolve(store, minAge) {
  const rows = await store.olderThan([ST.UNKNOWN, ST.IN_PROGRESS], minAge);
  let settled = 0;
  for (const row of rows) {
    const payment = JSON.parse(row.request);
    const r = await psp.lookup(row.idempotency_key, psp.timeoutMs());
    let outcome = null;
    if (r.kind === 'answer' && r.status === 200) outcome = P.succeeded(row.idempotency_key, payment, P.transferIdOf(r.body));
    else if (r.kind === 'answer' && r.status === 404) outcome = P.notSent(row.idempotency_key, payment, 'the payment provider never executed it');
    if (!outcome) { log(`resolve ${row.idempotency_key}: query gave no answer (${r.kind === 'answer' ? `HTTP ${r.status}` : r.error}); left ${row.status}`); continue; }
    const ok = await store.settle(row.idempotency_key, row.status, outcome, 5000, row.attempts);
    if (ok) settled++;
    log(`resolve ${row.idempotency_key}: ${row.status} -> ${ok ? outcome.status : '(changed meanwhile, left)'}`);
  }
  log(`resolve: ${rows.length} candidate(s), ${settled} settled`);
}

// Batch: resend keys that definitely never reached the PSP, fewer than maxAttempts calls so far,
// each claimed atomically first (two runs, or a run and a client retry, never both send).
async function reprocess(store, maxAttempts) {
  const rows = await store.olderThan([ST.NOT_SENT], 0);
  for (const row of rows) {
    if (row.attempts >= maxAttempts) continue;
    const claimed = await store.claimNotSent(row.idempotency_key, row.request_hash, 5000, maxAttempts);
    if (!claimed) continue;
    const outcome = await P.execute(store, row.idempotency_key, JSON.parse(claimed.request), psp.timeoutMs(), () => Date.now() + 5000);
    log(`reprocess ${row.idempotency_key}: attempt ${claimed.attempts} -> ${outcome.status}`);
  }
}

async function purge(store, retention) {
  log(`purge: ${await store.purgeDone(retention)} settled key(s) older than ${retention}s deleted`);
}

function numberArg(argv, name) {
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === name && i + 1 < argv.length) return Number(argv[i + 1]);
    if (argv[i].startsWith(`${name}=`)) return Number(argv[i].slice(name.length + 1));
  }
  return NaN;
}

async function batch(cmd, argv) {
  const store = new Store(process.env.DATABASE_URL);
  try {
    await initStore(store, 5000);
    if (cmd === 'resolve') {
      const s = numberArg(argv, '--min-age');
      if (!(s >= 0)) throw new Error('resolve needs --min-age SECONDS');
      await resolve(store, s);
    } else if (cmd === 'reprocess') {
      const n = numberArg(argv, '--max-attempts');
      if (!(n >= 0)) throw new Error('reprocess needs --max-attempts N');
      await reprocess(store, n);
    } else {
      const s = numberArg(argv, '--retention');
      if (!(s >= 0)) throw new Error('purge needs --retention SECONDS');
      await purge(store, s);
    }
  } finally {
    await store.close().catch(() => {});
  }
}

async function main() {
  const [cmd, ...argv] = process.argv.slice(2);
  if (cmd === 'serve') return serve();
  if (['resolve', 'reprocess', 'purge'].includes(cmd)) { await batch(cmd, argv); process.exit(0); }
  throw new Error('usage: service.js serve | resolve --min-age S | reprocess --max-attempts N | purge --retention S');
}

main().catch((err) => { log('fatal:', err.stack || err.message); process.exit(1); });
