'use strict';
// The payment logic shared by the HTTP server and the batch jobs: validating a payment, turning a
// PSP exchange into an outcome (and the answer the client gets for it), and executing a claimed key.
const crypto = require('node:crypto');
const psp = require('./psp');
const { ST, log } = require('./db');

const FIELDS = ['amount', 'currency', 'debtor', 'creditor'];
const ACCOUNT_RE = /^[^\x00-\x1f\x7f]{1,128}$/;
const CURRENCY_RE = /^[A-Z]{3}$/;
const KEY_RE = /^[\x21-\x7e]{1,255}$/;

// The Idempotency-Key header: a Structured Field String per the IETF draft ("..."), or a bare token as
// Stripe's clients send it. Returns the key, or null when missing/invalid.
function parseKey(value) {
  if (typeof value !== 'string') return null;
  let v = value.trim();
  if (v.length >= 2 && v.startsWith('"') && v.endsWith('"')) {
    v = v.slice(1, -1).replace(/\\(["\\])/g, '$1');
  }
  return KEY_RE.test(v) ? v : null;
}

// A payment body: exactly {amount: int > 0, currency: "EUR", debtor: str, creditor: str}.
function parsePayment(raw) {
  let obj;
  try { obj = JSON.parse(raw); } catch { return { error: 'body is not valid JSON' }; }
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) return { error: 'body must be a JSON object' };
  for (const f of Object.keys(obj)) if (!FIELDS.includes(f)) return { error: `unknown field "${f}"` };
  for (const f of FIELDS) if (!(f in obj)) return { error: `missing field "${f}"` };
  const { amount, currency, debtor, creditor } = obj;
  if (!Number.isSafeInteger(amount) || amount <= 0) return { error: '"amount" must be an integer > 0 (minor units)' };
  if (typeof currency !== 'string' || !CURRENCY_RE.test(currency)) return { error: '"currency" must be an ISO 4217 code' };
  if (typeof debtor !== 'string' || !ACCOUNT_RE.test(debtor)) return { error: '"debtor" must be an account id' };
  if (typeof creditor !== 'string' || !ACCOUNT_RE.test(creditor)) return { error: '"creditor" must be an account id' };
  return { payment: { amount, currency, debtor, creditor } };
}

function canonical(payment) {
  return JSON.stringify({ amount: payment.amount, currency: payment.currency, debtor: payment.debtor, creditor: payment.creditor });
}

function fingerprint(payment) {
  return crypto.createHash('sha256').update(canonical(payment)).digest('hex');
}

function paymentBody(key, payment, extra) {
  return JSON.stringify({
    object: 'payment', idempotency_key: key, amount: payment.amount, currency: payment.currency,
    debtor: payment.debtor, creditor: payment.creditor, ...extra,
  });
}

// Outcomes: what the key's row becomes, and the answer (status and body) the client gets.
function succeeded(key, payment, transferId) {
  return { status: ST.SUCCEEDED, httpStatus: 201, pspCode: 'executed',
    body: paymentBody(key, payment, { status: 'succeeded', psp_transfer_id: transferId }) };
}

function refused(key, payment, code, reason) {
  return { status: ST.REFUSED, httpStatus: 402, pspCode: code,
    body: paymentBody(key, payment, { status: 'refused', code, reason }) };
}

function unknown(key, payment, httpStatus, reason) {
  return { status: ST.UNKNOWN, httpStatus, pspCode: null,
    body: paymentBody(key, payment, { status: 'unknown', reason }) };
}

function notSent(key, payment, reason) {
  return { status: ST.NOT_SENT, httpStatus: 503, pspCode: null,
    body: paymentBody(key, payment, { status: 'not_sent', reason: `${reason}; nothing was sent, retry with the same key` }) };
}

function transferIdOf(body) {
  const t = Array.isArray(body) ? body[0] : body;
  return t && typeof t === 'object' && typeof t.id === 'string' ? t.id : null;
}

// A transfer call's result → an outcome. Only 201 and 422 are definite; a PSP 5xx is treated as
// unknown (the PSP may have executed before failing), and so is anything unexpected.
function classifyTransfer(key, payment, result) {
  if (result.kind === 'not_sent') return notSent(key, payment, `payment provider unreachable (${result.error})`);
  if (result.kind === 'unknown') return unknown(key, payment, 504, `no answer from the payment provider (${result.error}); the outcome will be reconciled`);
  if (result.status === 201) return succeeded(key, payment, transferIdOf(result.body));
  if (result.status === 422) {
    const b = result.body || {};
    return refused(key, payment, typeof b.code === 'string' ? b.code : 'refused', typeof b.error === 'string' ? b.error : 'refused by the payment provider');
  }
  return unknown(key, payment, 502, `payment provider answered HTTP ${result.status}; the outcome will be reconciled`);
}

function sleep(ms) { return new Promise((r) => setTimeout(r, ms)); }

// Call the PSP for a key whose row this process has just claimed (status in_progress, committed),
// then record the outcome. Returns the answer to give. If the outcome cannot be recorded, the answer
// is "unknown" (the row stays in_progress and `resolve` settles it from the PSP's query API).
async function execute(store, key, payment, pspTimeoutMs, recordDeadline) {
  const result = await psp.transfer(key, payment, pspTimeoutMs);
  const outcome = classifyTransfer(key, payment, result);
  log(`key ${key}: PSP ${result.kind === 'answer' ? `HTTP ${result.status}` : `${result.kind} (${result.error})`} -> ${outcome.status}`);
  for (let i = 0; i < 3; i++) {
    const left = recordDeadline() - Date.now();
    if (left < 20 && i > 0) break;
    try {
      if (await store.settle(key, ST.IN_PROGRESS, outcome, Math.max(left, 200))) return outcome;
      const row = await store.get(key, Math.max(recordDeadline() - Date.now(), 200));
      if (row && row.status === outcome.status && row.response_body === outcome.body) return outcome;
      break;
    } catch (err) {
      log(`key ${key}: recording ${outcome.status} failed: ${err.message}`);
      await sleep(20);
    }
  }
  if (outcome.status === ST.UNKNOWN) return outcome;
  return unknown(key, payment, 502, 'the outcome could not be recorded; it will be reconciled');
}

module.exports = {
  parseKey, parsePayment, canonical, fingerprint, classifyTransfer, execute,
  succeeded, refused, unknown, notSent, transferIdOf,
};
