package main

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

type relay struct {
	ledger  *ledger
	account *accountClient
	timeout time.Duration
}

// reply is what the channel gets: an HTTP status and a JSON body.
type reply struct {
	status int
	body   []byte
}

func ok(guid, code, message string) reply {
	return reply{http.StatusOK, answerBody(guid, code, message)}
}

func runServe(cfg config) error {
	l, err := openLedger(cfg.ledgerPath)
	if err != nil {
		return err
	}
	defer l.close()
	r := &relay{ledger: l, account: newAccountClient(cfg.accountURL, cfg.timeout), timeout: cfg.timeout}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		write(w, reply{http.StatusOK, []byte(`{"status":"ok"}`)})
	})
	mux.HandleFunc("POST /transfer", r.handleTransfer)

	addr := net.JoinHostPort(cfg.host, cfg.port)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 30 * time.Second}
	log.Printf("serve: listening on %s, ledger %s, account %s, timeout %s",
		addr, cfg.ledgerPath, cfg.accountURL, cfg.timeout)

	// On SIGTERM/SIGINT, let the calls in flight finish and be recorded.
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-stop:
		ctx, cancel := context.WithTimeout(context.Background(), cfg.timeout+2*time.Second)
		defer cancel()
		return srv.Shutdown(ctx)
	}
}

func write(w http.ResponseWriter, rep reply) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rep.status)
	w.Write(rep.body)
}

func (r *relay) handleTransfer(w http.ResponseWriter, req *http.Request) {
	// Everything below runs on its own clock: a channel that hangs up must
	// not cut short an account call that is already on its way.
	started := time.Now()
	body, err := io.ReadAll(io.LimitReader(req.Body, maxBody+1))
	if err != nil {
		write(w, reply{http.StatusBadRequest, answerBody(nil, "E400", "could not read the request body")})
		return
	}
	if len(body) > maxBody {
		write(w, reply{http.StatusBadRequest, answerBody(nil, "E400", "request body too large")})
		return
	}
	t, guid, err := parseTransfer(body)
	if err != nil {
		var g any
		if guid != "" {
			g = guid
		}
		write(w, reply{http.StatusBadRequest, answerBody(g, "E400", "malformed request: "+err.Error())})
		return
	}
	// Budget: the contract wants an answer within ACCOUNT_TIMEOUT_MS + 1 s.
	deadline := started.Add(r.timeout + 900*time.Millisecond)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	write(w, r.process(ctx, deadline, t, string(body)))
}

// process applies the contract's table "What the relay does with a GUID".
func (r *relay) process(ctx context.Context, deadline time.Time, t transfer, body string) reply {
	for range 20 {
		won, err := r.ledger.claimNew(ctx, t.GUID, body)
		if err != nil {
			return ledgerDown(t.GUID, err)
		}
		if won {
			return r.send(deadline, t, 1)
		}
		cur, found, err := r.ledger.get(ctx, t.GUID)
		if err != nil {
			return ledgerDown(t.GUID, err)
		}
		if !found {
			continue // purged between the two statements: claim afresh
		}
		if prev, _, err := parseTransfer([]byte(cur.Request)); err == nil && !sameRequest(prev, t) {
			return ok(t.GUID, "E904", "this GUID was already used for a different request")
		}
		switch cur.Status {
		case statusDone:
			if cur.Response.Valid {
				return reply{http.StatusOK, []byte(cur.Response.String)}
			}
			return ok(t.GUID, cur.RespCode.String, "")
		case statusUnknown:
			return ok(t.GUID, "E901", "sent earlier, but no answer came: outcome unknown")
		case statusFailed:
			attempts, err := r.ledger.claimFailed(ctx, t.GUID, 0)
			if err != nil {
				return ledgerDown(t.GUID, err)
			}
			if attempts > 0 {
				return r.send(deadline, t, attempts)
			}
			continue // another process claimed it first: look again
		default: // SENT, RECEIVED
			return ok(t.GUID, "E903", "this GUID is being sent right now")
		}
	}
	return ok(t.GUID, "E903", "this GUID is being sent right now")
}

// send makes the account call for a row this process has claimed (and
// committed as SENT), records the outcome, and builds the channel's answer.
// The call leaves 100 ms of the channel's budget for recording.
func (r *relay) send(deadline time.Time, t transfer, attempts int64) reply {
	o := r.account.transfer(deadline.Add(-100*time.Millisecond), t.payload())
	// Recording is not cut short by the channel's budget (a row left SENT
	// would answer E903 until resolve), but the channel is not kept waiting
	// past its budget for it either.
	recorded := make(chan struct{})
	go func() {
		defer close(recorded)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := r.ledger.record(ctx, t.GUID, attempts, o); err != nil {
			log.Printf("serve: guid %s: recording %s failed: %v", t.GUID, o.Status, err)
		}
	}()
	select {
	case <-recorded:
	case <-time.After(time.Until(deadline)):
		log.Printf("serve: guid %s: answering before the outcome is recorded", t.GUID)
	}
	return answerFor(t.GUID, o)
}

func answerFor(guid string, o outcome) reply {
	switch o.Status {
	case statusDone:
		return reply{http.StatusOK, o.Body}
	case statusFailed:
		return ok(guid, "E902", "not sent: could not connect to the account system ("+o.Detail+")")
	default:
		return ok(guid, "E901", "sent, but no answer came: outcome unknown ("+o.Detail+")")
	}
}

// ledgerDown answers when the ledger cannot be read or written. No account
// call has been made in that case, so E902 (definitely not sent), with the
// HTTP 200 the contract gives every non-E400 answer.
func ledgerDown(guid string, err error) reply {
	log.Printf("serve: guid %s: ledger error: %v", guid, err)
	msg := "ledger unavailable; nothing sent"
	if errors.Is(err, context.DeadlineExceeded) {
		msg = "ledger busy; nothing sent"
	}
	return reply{http.StatusOK, answerBody(guid, "E902", msg)}
}
