package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	_ "modernc.org/sqlite"
)

// Ledger statuses (contract §4).
const (
	statusReceived = "RECEIVED"
	statusSent     = "SENT"
	statusDone     = "DONE"
	statusUnknown  = "UNKNOWN"
	statusFailed   = "FAILED"
)

const schema = `CREATE TABLE IF NOT EXISTS ledger (
  guid       TEXT PRIMARY KEY,
  status     TEXT NOT NULL,
  resp_code  TEXT,
  request    TEXT NOT NULL,
  response   TEXT,
  attempts   INTEGER NOT NULL,
  updated_at REAL NOT NULL
)`

// row is one ledger row as the relay reads it.
type row struct {
	GUID      string
	Status    string
	RespCode  sql.NullString
	Request   string
	Response  sql.NullString
	Attempts  int64
	UpdatedAt float64
}

type ledger struct {
	db *sql.DB
}

func nowSec() float64 {
	return float64(time.Now().UnixNano()) / 1e9
}

// openLedger opens (and, when needed, creates) the ledger: WAL mode so the
// harness can read while we write, and a busy timeout so that two serve
// processes or batch runs on one file wait for each other instead of failing.
func openLedger(path string) (*ledger, error) {
	if path == "" {
		return nil, errors.New("LEDGER_PATH is not set")
	}
	if strings.ContainsRune(path, '?') {
		return nil, fmt.Errorf("LEDGER_PATH %q may not contain '?'", path)
	}
	dsn := path + "?_busy_timeout=5000&_journal_mode=WAL&_synchronous=NORMAL"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	// One connection per process: statements are short, and the account call
	// never happens while the connection is held. Writers within a process
	// then queue in Go rather than in SQLite's sleep-and-retry busy handler.
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)

	// Two processes may create the schema or switch to WAL at the same time;
	// retry for a while rather than fail on a transient lock.
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, err = db.Exec(schema)
		if err == nil {
			return &ledger{db: db}, nil
		}
		if time.Now().After(deadline) {
			db.Close()
			return nil, fmt.Errorf("creating the ledger schema: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (l *ledger) close() { l.db.Close() }

// claimNew inserts a SENT row for a GUID seen for the first time. It reports
// whether this call won the row (and so must make the account call).
func (l *ledger) claimNew(ctx context.Context, guid, request string) (bool, error) {
	res, err := l.db.ExecContext(ctx, `INSERT INTO ledger
		(guid, status, resp_code, request, response, attempts, updated_at)
		VALUES (?, 'SENT', NULL, ?, NULL, 1, ?)
		ON CONFLICT(guid) DO NOTHING`, guid, request, nowSec())
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// claimFailed moves a FAILED row back to SENT, attempts + 1. It reports the
// new attempt count, or 0 when the row was not FAILED (someone else won it).
// maxAttempts > 0 also requires attempts < maxAttempts.
func (l *ledger) claimFailed(ctx context.Context, guid string, maxAttempts int64) (int64, error) {
	q := `UPDATE ledger SET status = 'SENT', attempts = attempts + 1, updated_at = ?
		WHERE guid = ? AND status = 'FAILED'`
	args := []any{nowSec(), guid}
	if maxAttempts > 0 {
		q += ` AND attempts < ?`
		args = append(args, maxAttempts)
	}
	var attempts int64
	err := l.db.QueryRowContext(ctx, q+` RETURNING attempts`, args...).Scan(&attempts)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return attempts, err
}

// get reads one row; ok is false when there is none.
func (l *ledger) get(ctx context.Context, guid string) (row, bool, error) {
	var r row
	err := l.db.QueryRowContext(ctx, `SELECT guid, status, resp_code, request,
		response, attempts, updated_at FROM ledger WHERE guid = ?`, guid).Scan(
		&r.GUID, &r.Status, &r.RespCode, &r.Request, &r.Response, &r.Attempts, &r.UpdatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return r, false, nil
	}
	return r, err == nil, err
}

// record stores the outcome of the account call made under claim `attempts`.
// Only the SENT row this process claimed is changed.
func (l *ledger) record(ctx context.Context, guid string, attempts int64, o outcome) error {
	var response any
	if o.Status == statusDone {
		response = string(o.Body)
	}
	var err error
	for {
		var res sql.Result
		res, err = l.db.ExecContext(ctx, `UPDATE ledger
			SET status = ?, resp_code = ?, response = ?, updated_at = ?
			WHERE guid = ? AND status = 'SENT' AND attempts = ?`,
			o.Status, o.Code, response, nowSec(), guid, attempts)
		if err == nil {
			if n, _ := res.RowsAffected(); n != 1 {
				return fmt.Errorf("row %s was no longer SENT with attempts=%d", guid, attempts)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// listStale returns the rows in one of the statuses whose updated_at is at
// least minAge seconds old.
func (l *ledger) listStale(ctx context.Context, statuses []string, minAge float64) ([]row, error) {
	marks := strings.TrimSuffix(strings.Repeat("?,", len(statuses)), ",")
	args := []any{}
	for _, s := range statuses {
		args = append(args, s)
	}
	args = append(args, nowSec()-minAge)
	return l.list(ctx, `WHERE status IN (`+marks+`) AND updated_at <= ? ORDER BY updated_at`, args...)
}

func (l *ledger) list(ctx context.Context, where string, args ...any) ([]row, error) {
	rows, err := l.db.QueryContext(ctx, `SELECT guid, status, resp_code, request,
		response, attempts, updated_at FROM ledger `+where, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.GUID, &r.Status, &r.RespCode, &r.Request,
			&r.Response, &r.Attempts, &r.UpdatedAt); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
