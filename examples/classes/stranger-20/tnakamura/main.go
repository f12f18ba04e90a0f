// Command relay: forwards transfers to the account system, exactly once per GUID.
// T. Nakamura -- pure Go, modernc.org/sqlite, static binary.
package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	_ "modernc.org/sqlite"
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

var guidRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

type transfer struct {
	GUID   string `json:"guid"`
	From   string `json:"from"`
	To     string `json:"to"`
	Amount int64  `json:"amount"`
}

type answer struct {
	GUID    string `json:"guid"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

func body(guid, code, msg string) string {
	b, _ := json.Marshal(answer{guid, code, msg})
	return string(b)
}

func now() float64 { return float64(time.Now().UnixNano()) / 1e9 }

type relay struct {
	db      *sql.DB
	account *url.URL
	timeout time.Duration
}

func openDB() (*sql.DB, error) {
	path := os.Getenv("LEDGER_PATH")
	if path == "" {
		return nil, errors.New("LEDGER_PATH not set")
	}
	dsn := "file:" + path + "?_pragma=busy_timeout(15000)&_pragma=journal_mode(WAL)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(8)
	if _, err := db.Exec(schema); err != nil {
		return nil, err
	}
	return db, nil
}

func newRelay() (*relay, error) {
	db, err := openDB()
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(os.Getenv("ACCOUNT_URL"))
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("bad ACCOUNT_URL %q", os.Getenv("ACCOUNT_URL"))
	}
	ms, err := strconv.Atoi(os.Getenv("ACCOUNT_TIMEOUT_MS"))
	if err != nil || ms <= 0 {
		ms = 2000
	}
	return &relay{db: db, account: u, timeout: time.Duration(ms) * time.Millisecond}, nil
}

// ---------------------------------------------------------------- account calls

// do performs one HTTP exchange on a fresh connection. connected reports
// whether a TCP connection was ever established (if not, nothing was sent).
func (r *relay) do(method, path string, payload []byte) (status int, respBody []byte, connected bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	dialer := &net.Dialer{}
	tr := &http.Transport{
		DisableKeepAlives: true,
		Proxy:             nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			if err == nil {
				connected = true
			}
			return c, err
		},
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	var rd io.Reader
	if payload != nil {
		rd = bytes.NewReader(payload)
	}
	u := strings.TrimRight(r.account.String(), "/") + path
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, nil, false, err
	}
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, connected, err
	}
	defer resp.Body.Close()
	respBody, err = io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, true, err
	}
	return resp.StatusCode, respBody, true, nil
}

// send posts the transfer once and classifies the outcome.
func (r *relay) send(t transfer) (status, code, resp string) {
	payload, _ := json.Marshal(t)
	_, b, connected, err := r.do("POST", "/transfer", payload)
	if err != nil {
		if !connected {
			return "FAILED", "E902", body(t.GUID, "E902", "could not connect to the account system")
		}
		return "UNKNOWN", "E901", body(t.GUID, "E901", "sent, no answer: outcome unknown")
	}
	var a struct {
		Code    *string         `json:"code"`
		Message json.RawMessage `json:"message"`
	}
	if json.Unmarshal(b, &a) != nil || a.Code == nil || *a.Code == "" {
		return "UNKNOWN", "E901", body(t.GUID, "E901", "unreadable answer from account system")
	}
	var msg string
	if json.Unmarshal(a.Message, &msg) != nil {
		msg = string(a.Message)
	}
	return "DONE", *a.Code, body(t.GUID, *a.Code, msg)
}

// ---------------------------------------------------------------- ledger ops

func (r *relay) claimNew(guid, raw string) (bool, error) {
	res, err := r.db.Exec(`INSERT INTO ledger (guid, status, request, attempts, updated_at)
		VALUES (?, 'SENT', ?, 1, ?) ON CONFLICT(guid) DO NOTHING`, guid, raw, now())
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func (r *relay) claimFailed(guid string, maxAttempts int) (bool, error) {
	q := `UPDATE ledger SET status='SENT', attempts=attempts+1, updated_at=? WHERE guid=? AND status='FAILED'`
	args := []any{now(), guid}
	if maxAttempts > 0 {
		q += ` AND attempts < ?`
		args = append(args, maxAttempts)
	}
	res, err := r.db.Exec(q, args...)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func (r *relay) settle(guid, status, code, resp string) error {
	var err error
	for i := 0; i < 20; i++ { // the row must not stay SENT because of a transient lock
		_, err = r.db.Exec(`UPDATE ledger SET status=?, resp_code=?, response=?, updated_at=?
			WHERE guid=? AND status='SENT'`, status, code, resp, now(), guid)
		if err == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return err
}

type row struct {
	status, request string
	response        sql.NullString
}

func (r *relay) get(guid string) (*row, error) {
	var x row
	err := r.db.QueryRow(`SELECT status, request, response FROM ledger WHERE guid=?`, guid).
		Scan(&x.status, &x.request, &x.response)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &x, nil
}

// ---------------------------------------------------------------- HTTP API

func parseTransfer(raw []byte) (transfer, bool) {
	var t transfer
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || m == nil {
		return t, false
	}
	for _, f := range []string{"guid", "from", "to", "amount"} {
		v, ok := m[f]
		if !ok {
			return t, false
		}
		switch f {
		case "amount":
			s := strings.TrimSpace(string(v))
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n <= 0 {
				return t, false
			}
			t.Amount = n
		default:
			var s string
			if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &s) != nil {
				return t, false
			}
			switch f {
			case "guid":
				t.GUID = s
			case "from":
				t.From = s
			case "to":
				t.To = s
			}
		}
	}
	if !guidRe.MatchString(t.GUID) {
		return t, false
	}
	return t, true
}

func write(w http.ResponseWriter, status int, b string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	io.WriteString(w, b)
}

func (r *relay) handleTransfer(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		write(w, http.StatusMethodNotAllowed, `{"code":"E405"}`)
		return
	}
	raw, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	if err != nil {
		write(w, http.StatusBadRequest, body("", "E400", "unreadable body"))
		return
	}
	t, ok := parseTransfer(raw)
	if !ok {
		write(w, http.StatusBadRequest, body(t.GUID, "E400", "malformed request"))
		return
	}
	out, err := r.process(t, string(raw))
	if err != nil {
		log.Printf("guid %s: ledger error: %v", t.GUID, err)
		write(w, http.StatusInternalServerError, body(t.GUID, "E500", "relay ledger error"))
		return
	}
	write(w, http.StatusOK, out)
}

func (r *relay) process(t transfer, raw string) (string, error) {
	won, err := r.claimNew(t.GUID, raw)
	if err != nil {
		return "", err
	}
	if !won {
		x, err := r.get(t.GUID)
		if err != nil {
			return "", err
		}
		if x == nil { // purged between our two statements
			if won, err = r.claimNew(t.GUID, raw); err != nil {
				return "", err
			}
			if !won {
				return body(t.GUID, "E903", "being sent"), nil
			}
		} else {
			var old transfer
			_ = json.Unmarshal([]byte(x.request), &old)
			if old.From != t.From || old.To != t.To || old.Amount != t.Amount {
				return body(t.GUID, "E904", "guid already used for a different request"), nil
			}
			switch x.status {
			case "DONE":
				return x.response.String, nil
			case "UNKNOWN":
				return body(t.GUID, "E901", "outcome unknown"), nil
			case "FAILED":
				ok, err := r.claimFailed(t.GUID, 0)
				if err != nil {
					return "", err
				}
				if !ok {
					return body(t.GUID, "E903", "being sent"), nil
				}
			default: // SENT, RECEIVED
				return body(t.GUID, "E903", "being sent"), nil
			}
		}
	}
	st, code, out := r.send(t)
	if err := r.settle(t.GUID, st, code, out); err != nil {
		log.Printf("guid %s: could not record %s: %v", t.GUID, st, err)
	}
	return out, nil
}

func serve() error {
	r, err := newRelay()
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, _ *http.Request) { write(w, 200, `{"status":"ok"}`) })
	mux.HandleFunc("/transfer", r.handleTransfer)
	addr := net.JoinHostPort(os.Getenv("RELAY_HOST"), os.Getenv("RELAY_PORT"))
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 30 * time.Second}
	return srv.ListenAndServe()
}

// ---------------------------------------------------------------- batch commands

func resolve(minAge float64) error {
	r, err := newRelay()
	if err != nil {
		return err
	}
	rows, err := r.db.Query(`SELECT guid, status, updated_at FROM ledger
		WHERE status IN ('UNKNOWN','SENT') AND updated_at <= ?`, now()-minAge)
	if err != nil {
		return err
	}
	type item struct {
		guid, status string
		ts           float64
	}
	var items []item
	for rows.Next() {
		var it item
		if err := rows.Scan(&it.guid, &it.status, &it.ts); err != nil {
			rows.Close()
			return err
		}
		items = append(items, it)
	}
	rows.Close()
	for _, it := range items {
		st, b, _, err := r.do("GET", "/transfer/"+url.PathEscape(it.guid), nil)
		if err != nil {
			continue
		}
		var q struct {
			Found *bool   `json:"found"`
			Code  *string `json:"code"`
		}
		if json.Unmarshal(b, &q) != nil || q.Found == nil {
			continue
		}
		switch {
		case st == 200 && *q.Found && q.Code != nil:
			_, err = r.db.Exec(`UPDATE ledger SET status='DONE', resp_code=?, response=?, updated_at=?
				WHERE guid=? AND status=? AND updated_at=?`,
				*q.Code, body(it.guid, *q.Code, "resolved by query"), now(), it.guid, it.status, it.ts)
		case st == 404 && !*q.Found:
			_, err = r.db.Exec(`UPDATE ledger SET status='FAILED', resp_code='E902', updated_at=?
				WHERE guid=? AND status=? AND updated_at=?`, now(), it.guid, it.status, it.ts)
		}
		if err != nil {
			log.Printf("resolve %s: %v", it.guid, err)
		}
	}
	return nil
}

func reprocess(maxAttempts int) error {
	r, err := newRelay()
	if err != nil {
		return err
	}
	rows, err := r.db.Query(`SELECT guid FROM ledger WHERE status='FAILED' AND attempts < ?`, maxAttempts)
	if err != nil {
		return err
	}
	var guids []string
	for rows.Next() {
		var g string
		if err := rows.Scan(&g); err != nil {
			rows.Close()
			return err
		}
		guids = append(guids, g)
	}
	rows.Close()
	for _, g := range guids {
		ok, err := r.claimFailed(g, maxAttempts)
		if err != nil || !ok {
			continue
		}
		x, err := r.get(g)
		if err != nil || x == nil {
			continue
		}
		var t transfer
		if err := json.Unmarshal([]byte(x.request), &t); err != nil {
			continue
		}
		t.GUID = g
		st, code, out := r.send(t)
		if err := r.settle(g, st, code, out); err != nil {
			log.Printf("reprocess %s: %v", g, err)
		}
	}
	return nil
}

func purge(retention float64) error {
	r, err := newRelay()
	if err != nil {
		return err
	}
	_, err = r.db.Exec(`DELETE FROM ledger WHERE status='DONE' AND updated_at <= ?`, now()-retention)
	return err
}

func main() {
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: relay serve|resolve|reprocess|purge")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	minAge := fs.Float64("min-age", -1, "")
	maxAtt := fs.Int("max-attempts", -1, "")
	ret := fs.Float64("retention", -1, "")
	fs.Parse(os.Args[2:])
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve()
	case "resolve":
		if *minAge < 0 {
			err = errors.New("--min-age required")
		} else {
			err = resolve(*minAge)
		}
	case "reprocess":
		if *maxAtt < 0 {
			err = errors.New("--max-attempts required")
		} else {
			err = reprocess(*maxAtt)
		}
	case "purge":
		if *ret < 0 {
			err = errors.New("--retention required")
		} else {
			err = purge(*ret)
		}
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		log.Print(err)
		os.Exit(1)
	}
}
