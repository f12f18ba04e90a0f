'use strict';
// The idempotency-key store in PostgreSQL: one row per key, claimed before the PSP is called.
const { Pool } = require('pg');

// Statuses of a key (the row's `status` column).
const ST = Object.freeze({
  IN_PROGRESS: 'in_progress', // claimed and committed; the PSP call is (or may be) under way
  SUCCEEDED: 'succeeded',     // the PSP executed the transfer; the answer is saved
  REFUSED: 'refused',         // the PSP refused it (nothing moved); the answer is saved
  UNKNOWN: 'unknown',         // sent, no definite answer (time-out, broken connection, PSP 5xx)
  NOT_SENT: 'not_sent',       // definitely never reached the PSP (connection refused/not made)
});

const SCHEMA = `
CREATE TABLE IF NOT EXISTS idempotency_keys (
  idempotency_key TEXT PRIMARY KEY,
  status          TEXT NOT NULL,
  request_hash    TEXT NOT NULL,
  request         TEXT NOT NULL,
  response_status INTEGER,
  response_body   TEXT,
  psp_code        TEXT,
  attempts        INTEGER NOT NULL,
  created_at      DOUBLE PRECISION NOT NULL,
  updated_at      DOUBLE PRECISION NOT NULL
);
CREATE INDEX IF NOT EXISTS idempotency_keys_status_updated
  ON idempotency_keys (status, updated_at);
`;

const NOW = 'extract(epoch from clock_timestamp())';

class Store {
  constructor(url) {
    if (!url) throw new Error('DATABASE_URL is not set');
    this.pool = new Pool({
      connectionString: url,
      max: 8,
      connectionTimeoutMillis: 2000,
      idleTimeoutMillis: 10000,
    });
    // An idle client losing its connection must not crash the process.
    this.pool.on('error', (err) => log('db: idle client error:', err.message));
  }

  // One statement on its own connection, autocommit, bounded in time. A statement that times out
  // may still have committed: callers treat a time-out as "do not know" and never call the PSP on it.
  async q(sql, params, timeoutMs = 2000) {
    const client = await this.pool.connect();
    let timer;
    let broken = false;
    try {
      const pending = client.query(sql, params);
      pending.catch(() => {});
      const timeout = new Promise((_, reject) => {
        timer = setTimeout(() => { broken = true; reject(new Error(`db statement timed out after ${timeoutMs} ms`)); }, Math.max(1, timeoutMs));
      });
      return await Promise.race([pending, timeout]);
    } catch (err) {
      if (!err.code) broken = true; // connection-level trouble: do not reuse this client
      throw err;
    } finally {
      clearTimeout(timer);
      client.release(broken ? true : undefined);
    }
  }

  // Whoever opens the database first creates the schema; an advisory lock serialises two servers.
  async init() {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('SELECT pg_advisory_xact_lock(727274)');
      await client.query(SCHEMA);
      await client.query('COMMIT');
      client.release();
    } catch (err) {
      client.release(true);
      throw err;
    }
  }

  // Atomic claim of a new key: true when *this* request inserted the row (and it is committed).
  async claimNew(key, hash, request, timeoutMs) {
    const r = await this.q(
      `INSERT INTO idempotency_keys
         (idempotency_key, status, request_hash, request, attempts, created_at, updated_at)
       VALUES ($1, '${ST.IN_PROGRESS}', $2, $3, 1, ${NOW}, ${NOW})
       ON CONFLICT (idempotency_key) DO NOTHING
       RETURNING attempts`,
      [key, hash, request], timeoutMs);
    return r.rowCount === 1;
  }

  // Atomic claim back of a key that definitely never reached the PSP.
  async claimNotSent(key, hash, timeoutMs, maxAttempts = null) {
    const r = await this.q(
      `UPDATE idempotency_keys
          SET status = '${ST.IN_PROGRESS}', attempts = attempts + 1, updated_at = ${NOW}
        WHERE idempotency_key = $1 AND status = '${ST.NOT_SENT}' AND request_hash = $2
          AND ($3::int IS NULL OR attempts < $3::int)
        RETURNING attempts, request`,
      [key, hash, maxAttempts], timeoutMs);
    return r.rowCount === 1 ? r.rows[0] : null;
  }

  async get(key, timeoutMs) {
    const r = await this.q(
      `SELECT idempotency_key, status, request_hash, request, response_status, response_body, attempts
         FROM idempotency_keys WHERE idempotency_key = $1`,
      [key], timeoutMs);
    return r.rows[0] || null;
  }

  // Record an outcome, only if the row is still in the state the caller saw (no lost updates):
  // the same status and, when given, the same attempt count.
  async settle(key, fromStatus, outcome, timeoutMs, fromAttempts = null) {
    const r = await this.q(
      `UPDATE idempotency_keys
          SET status = $3, response_status = $4, response_body = $5, psp_code = $6, updated_at = ${NOW}
        WHERE idempotency_key = $1 AND status = $2 AND ($7::int IS NULL OR attempts = $7::int)`,
      [key, fromStatus, outcome.status, outcome.httpStatus, outcome.body, outcome.pspCode || null, fromAttempts],
      timeoutMs);
    return r.rowCount === 1;
  }

  async olderThan(statuses, ageS) {
    const r = await this.q(
      `SELECT idempotency_key, status, request_hash, request, attempts, updated_at
         FROM idempotency_keys
        WHERE status = ANY($1::text[]) AND updated_at <= ${NOW} - $2::double precision
        ORDER BY updated_at`,
      [statuses, ageS], 10000);
    return r.rows;
  }

  async purgeDone(retentionS) {
    const r = await this.q(
      `DELETE FROM idempotency_keys
        WHERE status IN ('${ST.SUCCEEDED}', '${ST.REFUSED}')
          AND updated_at <= ${NOW} - $1::double precision`,
      [retentionS], 10000);
    return r.rowCount;
  }

  async close() { await this.pool.end(); }
}

function log(...args) {
  process.stderr.write(`[payments_node ${new Date().toISOString()}] ${args.join(' ')}\n`);
}

module.exports = { Store, ST, log };
