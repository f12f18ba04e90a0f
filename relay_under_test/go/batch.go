package main

import (
	"context"
	"fmt"
	"log"
	"sync"
	"time"
)

const batchWorkers = 8

// forEach runs fn on every row, a few at a time.
func forEach(rows []row, fn func(row)) {
	work := make(chan row)
	var wg sync.WaitGroup
	for range min(batchWorkers, len(rows)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range work {
				fn(r)
			}
		}()
	}
	for _, r := range rows {
		work <- r
	}
	close(work)
	wg.Wait()
}

// runResolve settles UNKNOWN rows, and SENT rows orphaned by a crash, that are
// at least minAge seconds old, by asking the account system's query API.
func runResolve(cfg config, minAge float64) error {
	l, err := openLedger(cfg.ledgerPath)
	if err != nil {
		return err
	}
	defer l.close()
	ctx := context.Background()
	rows, err := l.listStale(ctx, []string{statusUnknown, statusSent}, minAge)
	if err != nil {
		return err
	}
	account := newAccountClient(cfg.accountURL, cfg.timeout)
	var mu sync.Mutex
	counts := map[string]int{}
	forEach(rows, func(r row) {
		result, code := account.query(r.GUID)
		var status, respCode string
		var response any
		switch result {
		case queryFound:
			status, respCode = statusDone, code
			response = string(answerBody(r.GUID, code, "outcome found by resolve through the account system's query API"))
		case queryNotFound:
			status, respCode = statusFailed, "E902"
		default:
			mu.Lock()
			counts["left"]++
			mu.Unlock()
			return // the query failed: leave the row as it is
		}
		// Only if the row is still exactly as we read it.
		res, err := l.db.ExecContext(ctx, `UPDATE ledger
			SET status = ?, resp_code = ?, response = ?, updated_at = ?
			WHERE guid = ? AND status = ? AND attempts = ? AND updated_at = ?`,
			status, respCode, response, nowSec(), r.GUID, r.Status, r.Attempts, r.UpdatedAt)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			log.Printf("resolve: guid %s: %v", r.GUID, err)
			counts["left"]++
			return
		}
		if n, _ := res.RowsAffected(); n == 1 {
			counts[status]++
		} else {
			counts["changed meanwhile"]++
		}
	})
	log.Printf("resolve: %d rows looked at: %v", len(rows), counts)
	return nil
}

// runReprocess resends FAILED rows with attempts < maxAttempts, each claimed
// atomically first so that no GUID is sent twice by concurrent runs.
func runReprocess(cfg config, maxAttempts int64) error {
	l, err := openLedger(cfg.ledgerPath)
	if err != nil {
		return err
	}
	defer l.close()
	ctx := context.Background()
	rows, err := l.list(ctx, `WHERE status = 'FAILED' AND attempts < ? ORDER BY updated_at`, maxAttempts)
	if err != nil {
		return err
	}
	account := newAccountClient(cfg.accountURL, cfg.timeout)
	var mu sync.Mutex
	counts := map[string]int{}
	count := func(k string) { mu.Lock(); counts[k]++; mu.Unlock() }
	forEach(rows, func(r row) {
		t, _, err := parseTransfer([]byte(r.Request))
		if err != nil {
			log.Printf("reprocess: guid %s: stored request unreadable: %v", r.GUID, err)
			count("unreadable")
			return
		}
		attempts, err := l.claimFailed(ctx, r.GUID, maxAttempts)
		if err != nil {
			log.Printf("reprocess: guid %s: claim: %v", r.GUID, err)
			count("left")
			return
		}
		if attempts == 0 {
			count("claimed by someone else")
			return
		}
		o := account.transfer(time.Time{}, t.payload())
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := l.record(rctx, r.GUID, attempts, o); err != nil {
			log.Printf("reprocess: guid %s: recording %s: %v", r.GUID, o.Status, err)
		}
		count(o.Status)
	})
	log.Printf("reprocess: %d rows looked at: %v", len(rows), counts)
	return nil
}

// runPurge deletes DONE rows at least retention seconds old; no other status.
func runPurge(cfg config, retention float64) error {
	l, err := openLedger(cfg.ledgerPath)
	if err != nil {
		return err
	}
	defer l.close()
	res, err := l.db.Exec(`DELETE FROM ledger WHERE status = 'DONE' AND updated_at <= ?`,
		nowSec()-retention)
	if err != nil {
		return fmt.Errorf("purge: %w", err)
	}
	n, _ := res.RowsAffected()
	log.Printf("purge: deleted %d DONE rows", n)
	return nil
}
