package main

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Status values of an idempotency record.
const (
	StatusStarted   = "started"   // key claimed, PSP call in progress (or its owner died)
	StatusSucceeded = "succeeded" // PSP executed the transfer; 201 stored, replayed
	StatusRefused   = "refused"   // PSP refused (422); 402 stored, replayed
	StatusUnknown   = "unknown"   // PSP outcome unknown; a retry asks the PSP
)

func isFinal(status string) bool { return status == StatusSucceeded || status == StatusRefused }

// Record is one row of payments_idempotency.
type Record struct {
	Key          string
	PaymentID    string
	Fingerprint  string
	Status       string
	Reference    string
	RequestBody  []byte
	Payment      PaymentRequest
	TransferID   string
	ResponseCode int
	ResponseBody []byte
	Attempts     int
	Locked       bool          // a live lease is held by some request
	ResendWait   time.Duration // time left before a blind re-send is allowed (after a time-out)
}

// Outcome is what a request learnt from the PSP, to be stored.
type Outcome struct {
	Status       string
	ResponseCode int
	ResponseBody []byte
	TransferID   string
	ResendAfter  time.Duration // only for StatusUnknown: grace before a re-send
}

// Store keeps idempotency records. All methods must be atomic across every
// instance sharing the store.
type Store interface {
	// Claim inserts rec in state "started" with a lease held by rec's token.
	// It reports whether this call created the row.
	Claim(ctx context.Context, rec *Record, token string, lease time.Duration) (bool, error)
	// Get returns the record or nil.
	Get(ctx context.Context, key string) (*Record, error)
	// TryLock takes the lease of a started/unknown record whose lease is free
	// or expired. It returns nil if the record is final or leased by another.
	TryLock(ctx context.Context, key, token string, lease time.Duration) (*Record, error)
	// Renew extends the lease just before a re-send and counts the attempt;
	// false means the lease was lost.
	Renew(ctx context.Context, key, token string, lease time.Duration) (bool, error)
	// Finish stores the outcome and frees the lease, if token still holds it.
	Finish(ctx context.Context, key, token string, out Outcome) (bool, error)
	// Release frees the lease without changing the outcome.
	Release(ctx context.Context, key, token string) error
}

// ---------------------------------------------------------------- PostgreSQL

const schemaSQL = `
CREATE TABLE IF NOT EXISTS payments_idempotency (
    idempotency_key   text        PRIMARY KEY,
    payment_id        text        NOT NULL UNIQUE,
    fingerprint       text        NOT NULL,
    status            text        NOT NULL
                      CHECK (status IN ('started', 'succeeded', 'refused', 'unknown')),
    psp_reference     text        NOT NULL,
    request_body      text        NOT NULL,
    amount            bigint      NOT NULL,
    currency          text        NOT NULL,
    debtor            text        NOT NULL,
    creditor          text        NOT NULL,
    psp_transfer_id   text,
    response_code     integer,
    response_body     text,
    psp_attempts      integer     NOT NULL DEFAULT 0,
    lock_token        text,
    locked_until      timestamptz,
    resend_not_before timestamptz,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS payments_idempotency_open_idx
    ON payments_idempotency (updated_at) WHERE status IN ('started', 'unknown');
`

func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	// Serialise concurrent start-ups: CREATE TABLE IF NOT EXISTS is not
	// race-free between sessions.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(8127364501)`); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, schemaSQL); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

type pgStore struct {
	pool            *pgxpool.Pool
	checkThenInsert bool // mutant check_then_insert
}

const insertSQL = `
INSERT INTO payments_idempotency
    (idempotency_key, payment_id, fingerprint, status, psp_reference, request_body,
     amount, currency, debtor, creditor, psp_attempts, lock_token, locked_until)
VALUES ($1, $2, $3, 'started', $4, $5, $6, $7, $8, $9, 1, $10, now() + make_interval(secs => $11))
ON CONFLICT (idempotency_key) DO NOTHING`

const selectCols = `idempotency_key, payment_id, fingerprint, status, psp_reference, request_body,
    amount, currency, debtor, creditor, coalesce(psp_transfer_id, ''), coalesce(response_code, 0),
    coalesce(response_body, ''), psp_attempts,
    (locked_until IS NOT NULL AND locked_until > now()),
    coalesce(greatest(0, extract(epoch FROM resend_not_before - now()))::float8, 0)`

func scanRecord(row pgx.Row) (*Record, error) {
	var r Record
	var reqBody, respBody string
	var wait float64
	err := row.Scan(&r.Key, &r.PaymentID, &r.Fingerprint, &r.Status, &r.Reference, &reqBody,
		&r.Payment.Amount, &r.Payment.Currency, &r.Payment.Debtor, &r.Payment.Creditor,
		&r.TransferID, &r.ResponseCode, &respBody, &r.Attempts, &r.Locked, &wait)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	r.RequestBody, r.ResponseBody = []byte(reqBody), []byte(respBody)
	r.ResendWait = time.Duration(wait * float64(time.Second))
	return &r, nil
}

func (s *pgStore) Claim(ctx context.Context, rec *Record, token string, lease time.Duration) (bool, error) {
	args := []any{rec.Key, rec.PaymentID, rec.Fingerprint, rec.Reference, string(rec.RequestBody),
		rec.Payment.Amount, rec.Payment.Currency, rec.Payment.Debtor, rec.Payment.Creditor,
		token, lease.Seconds()}
	if s.checkThenInsert {
		// MUTANT check_then_insert: look, then insert, in two statements and
		// without a lock; whoever saw "absent" believes it owns the key.
		var one int
		err := s.pool.QueryRow(ctx, `SELECT 1 FROM payments_idempotency WHERE idempotency_key = $1`, rec.Key).Scan(&one)
		if err == nil {
			return false, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return false, err
		}
		_, err = s.pool.Exec(ctx, insertSQL, args...)
		return err == nil, err
	}
	tag, err := s.pool.Exec(ctx, insertSQL, args...) // autocommit: committed before the PSP call
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() == 1, nil
}

func (s *pgStore) Get(ctx context.Context, key string) (*Record, error) {
	return scanRecord(s.pool.QueryRow(ctx,
		`SELECT `+selectCols+` FROM payments_idempotency WHERE idempotency_key = $1`, key))
}

func (s *pgStore) TryLock(ctx context.Context, key, token string, lease time.Duration) (*Record, error) {
	return scanRecord(s.pool.QueryRow(ctx, `
UPDATE payments_idempotency
   SET lock_token = $2, locked_until = now() + make_interval(secs => $3), updated_at = now()
 WHERE idempotency_key = $1
   AND status IN ('started', 'unknown')
   AND (locked_until IS NULL OR locked_until <= now())
RETURNING `+selectCols, key, token, lease.Seconds()))
}

func (s *pgStore) Renew(ctx context.Context, key, token string, lease time.Duration) (bool, error) {
	tag, err := s.pool.Exec(ctx, `
UPDATE payments_idempotency
   SET psp_attempts = psp_attempts + 1, locked_until = now() + make_interval(secs => $3), updated_at = now()
 WHERE idempotency_key = $1 AND lock_token = $2 AND locked_until > now()`, key, token, lease.Seconds())
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() == 1, nil
}

func (s *pgStore) Finish(ctx context.Context, key, token string, out Outcome) (bool, error) {
	tag, err := s.pool.Exec(ctx, `
UPDATE payments_idempotency
   SET status = $3, response_code = $4, response_body = $5,
       psp_transfer_id = coalesce(nullif($6, ''), psp_transfer_id),
       resend_not_before = CASE WHEN $3 = 'unknown' THEN now() + make_interval(secs => $7) END,
       lock_token = NULL, locked_until = NULL, updated_at = now()
 WHERE idempotency_key = $1 AND lock_token = $2`,
		key, token, out.Status, out.ResponseCode, string(out.ResponseBody), out.TransferID,
		out.ResendAfter.Seconds())
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() == 1, nil
}

func (s *pgStore) Release(ctx context.Context, key, token string) error {
	_, err := s.pool.Exec(ctx, `
UPDATE payments_idempotency SET lock_token = NULL, locked_until = NULL, updated_at = now()
 WHERE idempotency_key = $1 AND lock_token = $2`, key, token)
	return err
}

// ------------------------------------------------- in-memory (mutant only)

// memStore is the in_memory_keys mutant: the same semantics, but kept in a
// process-local map, so keys are lost on restart and not shared between
// instances.
type memStore struct {
	mu   sync.Mutex
	rows map[string]*memRow
}

type memRow struct {
	rec         Record
	token       string
	lockedUntil time.Time
	resendAfter time.Time
}

func newMemStore() *memStore { return &memStore{rows: map[string]*memRow{}} }

func (m *memStore) snapshot(r *memRow) *Record {
	c := r.rec
	now := time.Now()
	c.Locked = r.token != "" && r.lockedUntil.After(now)
	if r.resendAfter.After(now) {
		c.ResendWait = r.resendAfter.Sub(now)
	}
	return &c
}

func (m *memStore) Claim(_ context.Context, rec *Record, token string, lease time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.rows[rec.Key]; ok {
		return false, nil
	}
	c := *rec
	c.Status, c.Attempts = StatusStarted, 1
	m.rows[rec.Key] = &memRow{rec: c, token: token, lockedUntil: time.Now().Add(lease)}
	return true, nil
}

func (m *memStore) Get(_ context.Context, key string) (*Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.rows[key]; ok {
		return m.snapshot(r), nil
	}
	return nil, nil
}

func (m *memStore) TryLock(_ context.Context, key, token string, lease time.Duration) (*Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.rows[key]
	if !ok || isFinal(r.rec.Status) || (r.token != "" && r.lockedUntil.After(time.Now())) {
		return nil, nil
	}
	r.token, r.lockedUntil = token, time.Now().Add(lease)
	return m.snapshot(r), nil
}

func (m *memStore) Renew(_ context.Context, key, token string, lease time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.rows[key]
	if !ok || r.token != token || !r.lockedUntil.After(time.Now()) {
		return false, nil
	}
	r.rec.Attempts++
	r.lockedUntil = time.Now().Add(lease)
	return true, nil
}

func (m *memStore) Finish(_ context.Context, key, token string, out Outcome) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.rows[key]
	if !ok || r.token != token {
		return false, nil
	}
	r.rec.Status, r.rec.ResponseCode, r.rec.ResponseBody = out.Status, out.ResponseCode, out.ResponseBody
	if out.TransferID != "" {
		r.rec.TransferID = out.TransferID
	}
	r.resendAfter = time.Time{}
	if out.Status == StatusUnknown {
		r.resendAfter = time.Now().Add(out.ResendAfter)
	}
	r.token, r.lockedUntil = "", time.Time{}
	return true, nil
}

func (m *memStore) Release(_ context.Context, key, token string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.rows[key]; ok && r.token == token {
		r.token, r.lockedUntil = "", time.Time{}
	}
	return nil
}
