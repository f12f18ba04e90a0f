package main

// Batch jobs, run from cron (or any scheduler) next to the serving instances,
// on the same database and PSP:
//
//	payments reconcile --older-than 10m   settle keys whose PSP outcome is unknown
//	payments expire --older-than 24h      delete settled keys (Stripe keeps keys 24 h)
//
// Both take their age as a Go duration (1500ms, 30s, 24h) and measure it on the
// database clock against the row's updated_at.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// batchJobs are the subcommands besides serve.
var batchJobs = map[string]func(ctx context.Context, b *batch, olderThan time.Duration) error{
	"reconcile": reconcile,
	"expire":    expire,
}

const batchUsage = "payments reconcile --older-than DURATION | payments expire --older-than DURATION"

// batch is what a job works with: the database, the PSP, the lease length.
type batch struct {
	pool *pgxpool.Pool
	srv  *Server // its store, PSP client and outcome(): answers built as serve builds them
	log  *slog.Logger
}

// runBatch runs one batch job: args are its flags (after the job's name).
func runBatch(name string, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	olderThan := fs.Duration("older-than", -1, "only keys whose last change is at least this old (e.g. 1500ms, 30s, 24h)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (usage: %s)", fs.Arg(0), batchUsage)
	}
	if *olderThan < 0 {
		return fmt.Errorf("%s needs --older-than DURATION, e.g. --older-than 30s (usage: %s)", name, batchUsage)
	}
	cfg, err := configFromEnv()
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil)).With("job", name)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	pcfg, err := pgxpool.ParseConfig(cfg.DatabaseURL)
	if err != nil {
		return fmt.Errorf("invalid DATABASE_URL: %v", err)
	}
	pcfg.MaxConns = 2
	if pcfg.ConnConfig.ConnectTimeout == 0 {
		pcfg.ConnConfig.ConnectTimeout = 5 * time.Second
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return fmt.Errorf("database: %v", err)
	}
	defer pool.Close()
	if err := migrate(ctx, pool); err != nil {
		return fmt.Errorf("database unreachable or table not created: %v", err)
	}
	srv := &Server{store: &pgStore{pool: pool}, psp: NewPSPClient(cfg.PSPURL, cfg.PSPTimeout),
		lease: cfg.Lease, grace: cfg.Grace, log: logger}
	return batchJobs[name](ctx, &batch{pool: pool, srv: srv, log: logger}, *olderThan)
}

// reconcile settles every key in status unknown or started whose last change
// is at least olderThan old, by asking the PSP (GET /v1/transfers?reference=key).
// It never sends a transfer:
//
//   - the PSP has the same transfer (amount, debtor, creditor, currency) ->
//     succeeded, with the 201 answer serve would have given;
//   - the PSP has a different transfer under the reference -> left as it is,
//     logged for an operator;
//   - the PSP has none -> left as it is: the next request with the key asks
//     the PSP again and sends it (after the resend grace), as serve does;
//   - the lookup fails -> left as it is.
//
// A key whose lease is free is taken under a lease of its own first, so a
// request with the key meanwhile gets 409 and two runs never work on one key.
// A started key whose lease is still live (its instance died, or its PSP call
// has not ended) is asked about without taking the lease and settled only when
// the PSP has the same transfer, and only if its holder has not stored an
// outcome meanwhile: a live holder would have stored the same. An unknown key
// under a live lease is being recovered by a request right now: left to it.
func reconcile(ctx context.Context, b *batch, olderThan time.Duration) error {
	keys, err := b.keys(ctx, `
SELECT idempotency_key FROM payments_idempotency
 WHERE status IN ('started', 'unknown') AND updated_at <= now() - make_interval(secs => $1)
 ORDER BY updated_at`, olderThan.Seconds())
	if err != nil {
		return err
	}
	settled := 0
	for _, key := range keys {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		ok, err := b.reconcileOne(ctx, key, olderThan)
		if err != nil {
			return err
		}
		if ok {
			settled++
		}
	}
	b.log.Info("reconcile done", "candidates", len(keys), "settled", settled, "older_than", olderThan)
	return nil
}

func (b *batch) reconcileOne(ctx context.Context, key string, olderThan time.Duration) (bool, error) {
	rec, token, owned, err := b.take(ctx, key, olderThan)
	if err != nil {
		return false, fmt.Errorf("taking key %q: %v", key, err)
	}
	if rec == nil {
		b.log.Info("changed meanwhile, or being recovered by a request: left", "key", key)
		return false, nil
	}
	q := b.srv.psp.Lookup(ctx, rec.Reference)
	switch {
	case q.kind == pspExecuted && sameTransfer(rec, q.found) == "":
		stored, err := b.srv.store.Finish(ctx, key, token, b.srv.outcome(rec, q))
		if err != nil {
			return false, fmt.Errorf("storing key %q as succeeded: %v", key, err)
		}
		b.log.Info("settled from the PSP's record", "key", key, "was", rec.Status, "transfer", q.transferID,
			"stored", stored)
		return stored, nil
	case q.kind == pspExecuted:
		b.log.Warn("provider has a different transfer under this reference; left for an operator", "key", key,
			"status", rec.Status, "transfer", q.transferID, "differs", sameTransfer(rec, q.found))
	case q.kind == pspNotFound:
		b.log.Info("PSP has no transfer under this reference; left, the next request with the key sends it",
			"key", key, "status", rec.Status)
	default:
		b.log.Warn("PSP lookup failed; left as it is", "key", key, "status", rec.Status, "detail", q.detail)
	}
	if !owned {
		return false, nil
	}
	if _, err := b.pool.Exec(ctx, `
UPDATE payments_idempotency SET lock_token = NULL, locked_until = NULL
 WHERE idempotency_key = $1 AND lock_token = $2`, key, token); err != nil {
		return false, fmt.Errorf("releasing key %q: %v", key, err)
	}
	return false, nil
}

// take finds a key still open and at least olderThan old, with the lease token
// that may store its outcome: a lease of reconcile's own when the key's is free
// (owned), else, for a started key, its holder's (nil: nothing to do). Neither
// touches updated_at: a key reconcile leaves as it is keeps its age.
func (b *batch) take(ctx context.Context, key string, olderThan time.Duration) (*Record, string, bool, error) {
	token := newID("reconcile_")
	rec, err := scanRecord(b.pool.QueryRow(ctx, `
UPDATE payments_idempotency
   SET lock_token = $2, locked_until = now() + make_interval(secs => $3)
 WHERE idempotency_key = $1
   AND status IN ('started', 'unknown')
   AND (locked_until IS NULL OR locked_until <= now())
   AND updated_at <= now() - make_interval(secs => $4)
RETURNING `+selectCols, key, token, b.srv.lease.Seconds(), olderThan.Seconds()))
	if rec != nil || err != nil {
		return rec, token, true, err
	}
	var holder string
	err = b.pool.QueryRow(ctx, `
SELECT lock_token FROM payments_idempotency
 WHERE idempotency_key = $1 AND status = 'started' AND lock_token IS NOT NULL
   AND updated_at <= now() - make_interval(secs => $2)`, key, olderThan.Seconds()).Scan(&holder)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, "", false, nil
	}
	if err != nil {
		return nil, "", false, err
	}
	rec, err = b.srv.store.Get(ctx, key)
	return rec, holder, false, err
}

// sameTransfer says how the PSP's transfer differs from the payment stored
// for the key ("" when it is the same one). An answer without amount, debtor
// or creditor cannot be told apart from another transfer, so it differs.
func sameTransfer(rec *Record, t *pspTransfer) string {
	p := rec.Payment
	switch {
	case t == nil:
		return "no transfer in the PSP's answer"
	case t.Reference != "" && t.Reference != rec.Reference:
		return fmt.Sprintf("reference %q, ours %q", t.Reference, rec.Reference)
	case t.Amount == nil:
		return "the PSP's answer has no amount"
	case *t.Amount != p.Amount:
		return fmt.Sprintf("amount %d, ours %d", *t.Amount, p.Amount)
	case t.DebtorAccount != p.Debtor:
		return fmt.Sprintf("debtor %q, ours %q", t.DebtorAccount, p.Debtor)
	case t.CreditorAccount != p.Creditor:
		return fmt.Sprintf("creditor %q, ours %q", t.CreditorAccount, p.Creditor)
	case t.Currency != "" && t.Currency != p.Currency:
		return fmt.Sprintf("currency %q, ours %q", t.Currency, p.Currency)
	}
	return ""
}

// expire deletes settled keys (succeeded, refused) whose last change is at
// least olderThan old; a request with such a key afterwards is a new payment.
// Keys still started or unknown are never deleted: their outcome is not known.
func expire(ctx context.Context, b *batch, olderThan time.Duration) error {
	tag, err := b.pool.Exec(ctx, `
DELETE FROM payments_idempotency
 WHERE status IN ('succeeded', 'refused')
   AND (locked_until IS NULL OR locked_until <= now())
   AND updated_at <= now() - make_interval(secs => $1)`, olderThan.Seconds())
	if err != nil {
		return fmt.Errorf("deleting settled keys: %v", err)
	}
	b.log.Info("expire done", "deleted", tag.RowsAffected(), "older_than", olderThan)
	return nil
}

func (b *batch) keys(ctx context.Context, sql string, args ...any) ([]string, error) {
	rows, err := b.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("finding keys: %v", err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("finding keys: %v", err)
	}
	return keys, nil
}
