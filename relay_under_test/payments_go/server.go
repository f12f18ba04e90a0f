package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Mutant names (deliberate bugs, see README).
const (
	MutCheckThenInsert = "check_then_insert"
	MutStoreAfterCall  = "store_after_call"
	MutInMemoryKeys    = "in_memory_keys"
	MutRetryInFlight   = "retry_in_flight"
	MutResendUnknown   = "resend_unknown"
	MutConflictWaits   = "conflict_waits"
)

var knownMutants = map[string]bool{
	MutCheckThenInsert: true, MutStoreAfterCall: true, MutInMemoryKeys: true,
	MutRetryInFlight: true, MutResendUnknown: true, MutConflictWaits: true,
}

const maxKeyLen = 255
const maxBodyBytes = 1 << 20
const docURL = "https://example.com/payments/docs#idempotency"

// Server is one instance of the payment service.
type Server struct {
	store  Store
	psp    *PSPClient
	ping   func(context.Context) error
	mutant string
	lease  time.Duration // lifetime of a key's processing lease
	grace  time.Duration // after a PSP time-out: wait this long before a re-send
	log    *slog.Logger
}

func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /payments", s.handlePayments)
	mux.HandleFunc("GET /healthz", s.handleHealthz)
	return mux
}

// response is a fully-formed HTTP answer, as stored and replayed.
type response struct {
	code        int
	body        []byte
	contentType string
	replayed    bool
	retryAfter  time.Duration
}

func (r response) write(w http.ResponseWriter) {
	ct := r.contentType
	if ct == "" {
		ct = "application/json"
	}
	w.Header().Set("Content-Type", ct)
	if r.replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	if r.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(r.retryAfter.Seconds()))))
	}
	w.WriteHeader(r.code)
	w.Write(r.body)
	w.Write([]byte("\n"))
}

func jsonResp(code int, v any) response {
	b, _ := json.Marshal(v)
	return response{code: code, body: b, contentType: "application/json"}
}

// problem builds an RFC 9457 problem+json answer (the format the draft's
// examples use), with an extra machine-readable "error" member.
func problem(code int, errCode, title, detail string) response {
	b, _ := json.Marshal(map[string]any{
		"type": docURL, "title": title, "status": code, "detail": detail, "error": errCode,
	})
	return response{code: code, body: b, contentType: "application/problem+json"}
}

func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.ping(ctx); err != nil {
		problem(http.StatusServiceUnavailable, "database_unavailable", "Database unreachable", err.Error()).write(w)
		return
	}
	jsonResp(http.StatusOK, map[string]string{"status": "ok"}).write(w)
}

func (s *Server) handlePayments(w http.ResponseWriter, r *http.Request) {
	vals := r.Header.Values("Idempotency-Key")
	if len(vals) == 0 || strings.TrimSpace(vals[0]) == "" {
		problem(http.StatusBadRequest, "idempotency_key_missing", "Idempotency-Key is missing",
			"POST /payments requires an Idempotency-Key header, see "+docURL).write(w)
		return
	}
	if len(vals) > 1 {
		problem(http.StatusBadRequest, "idempotency_key_invalid", "More than one Idempotency-Key",
			"Send exactly one Idempotency-Key header field.").write(w)
		return
	}
	key := strings.TrimSpace(vals[0])
	if len(key) > maxKeyLen {
		problem(http.StatusBadRequest, "idempotency_key_invalid", "Idempotency-Key is too long",
			"Idempotency keys are at most 255 bytes.").write(w)
		return
	}

	body, err := readBody(w, r)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			problem(http.StatusRequestEntityTooLarge, "body_too_large", "Request body too large",
				"The body must be at most 1 MiB.").write(w)
			return
		}
		problem(http.StatusBadRequest, "invalid_body", "Request body could not be read", err.Error()).write(w)
		return
	}
	p, fp, canonical, err := parsePayment(body)
	if err != nil {
		problem(http.StatusBadRequest, "invalid_body", "Malformed payment request", err.Error()).write(w)
		return
	}

	// From here on the request must run to completion even if the channel
	// hangs up: a PSP call must never be abandoned half-recorded.
	ctx := context.WithoutCancel(r.Context())
	resp := s.process(ctx, key, fp, canonical, p)
	s.log.Info("payment", "key", key, "code", resp.code, "replayed", resp.replayed)
	resp.write(w)
}

func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	rd := http.MaxBytesReader(w, r.Body, maxBodyBytes)
	defer rd.Close()
	return io.ReadAll(rd)
}

func (s *Server) process(ctx context.Context, key, fp string, canonical []byte, p PaymentRequest) response {
	rec := &Record{Key: key, PaymentID: newID("pay_"), Fingerprint: fp, Status: StatusStarted,
		Reference: key, RequestBody: canonical, Payment: p}
	token := newID("lock_")

	if s.mutant == MutStoreAfterCall {
		return s.processStoreAfterCall(ctx, rec, token)
	}

	// Claim the key atomically; the row is committed before the PSP is called.
	claimed, err := s.store.Claim(ctx, rec, token, s.lease)
	if err != nil {
		s.log.Error("claim failed", "key", key, "err", err)
		return storageUnavailable()
	}
	if claimed {
		return s.send(ctx, rec, token)
	}
	return s.existing(ctx, rec, token)
}

// existing handles a key that already has a record.
func (s *Server) existing(ctx context.Context, req *Record, token string) response {
	cur, err := s.store.Get(ctx, req.Key)
	if err != nil {
		s.log.Error("lookup failed", "key", req.Key, "err", err)
		return storageUnavailable()
	}
	if cur == nil { // deleted in between (pruning): let the channel retry
		return storageUnavailable()
	}
	if cur.Fingerprint != req.Fingerprint {
		return problem(http.StatusUnprocessableEntity, "idempotency_key_reused", "Idempotency-Key is already used",
			"This Idempotency-Key was used with a different request payload; a key must not be reused across different payloads.")
	}
	if isFinal(cur.Status) {
		return replay(cur)
	}

	// started or unknown: take over the key if nobody is working on it.
	locked, err := s.store.TryLock(ctx, req.Key, token, s.lease)
	if err != nil {
		s.log.Error("lock failed", "key", req.Key, "err", err)
		return storageUnavailable()
	}
	if locked == nil {
		if s.mutant == MutConflictWaits {
			return s.waitForOwner(ctx, req, token)
		}
		if s.mutant == MutRetryInFlight {
			// MUTANT retry_in_flight: treat the in-flight key as a retry and
			// call the PSP ourselves instead of answering 409.
			return s.send(ctx, cur, token)
		}
		if again, err := s.store.Get(ctx, req.Key); err == nil && again != nil && isFinal(again.Status) {
			return replay(again) // finished while we looked
		}
		return inFlight(time.Second)
	}
	return s.recover(ctx, locked, token)
}

// waitForOwner is MUTANT conflict_waits: a request whose key another request
// is processing waits until that one has finished (its PSP call answered or
// timed out), then replays its answer or takes the key over, instead of
// answering 409 at once.
func (s *Server) waitForOwner(ctx context.Context, req *Record, token string) response {
	for deadline := time.Now().Add(s.lease); time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		cur, err := s.store.Get(ctx, req.Key)
		if err != nil || cur == nil {
			return storageUnavailable()
		}
		if isFinal(cur.Status) {
			return replay(cur)
		}
		locked, err := s.store.TryLock(ctx, req.Key, token, s.lease)
		if err != nil {
			return storageUnavailable()
		}
		if locked != nil {
			return s.recover(ctx, locked, token)
		}
	}
	return inFlight(time.Second)
}

// recover resolves a key whose outcome is unknown (PSP time-out/5xx, or an
// instance that died holding the key). We hold its lease.
func (s *Server) recover(ctx context.Context, rec *Record, token string) response {
	if s.mutant != MutResendUnknown {
		q := s.psp.Lookup(ctx, rec.Reference)
		switch q.kind {
		case pspExecuted:
			s.log.Info("PSP lookup: transfer exists, not re-sending", "key", rec.Key, "transfer", q.transferID)
			return s.finish(ctx, rec, token, s.outcome(rec, q))
		case pspNotFound:
			if rec.ResendWait > 0 {
				// The last attempt timed out only recently: the PSP may still
				// be working on it, so "not found" is not yet conclusive.
				if err := s.store.Release(ctx, rec.Key, token); err != nil {
					s.log.Error("release failed", "key", rec.Key, "err", err)
				}
				return inFlight(rec.ResendWait)
			}
			s.log.Info("PSP lookup: no such transfer, re-sending", "key", rec.Key)
		default:
			s.log.Warn("PSP lookup failed, outcome still unknown", "key", rec.Key, "detail", q.detail)
			out := s.outcome(rec, q)
			out.ResendAfter = rec.ResendWait // a failed lookup does not change the grace period
			return s.finish(ctx, rec, token, out)
		}
	}
	// MUTANT resend_unknown skips the lookup above and re-sends blindly.
	ok, err := s.store.Renew(ctx, rec.Key, token, s.lease)
	if err != nil {
		s.log.Error("renew failed", "key", rec.Key, "err", err)
		return storageUnavailable()
	}
	if !ok {
		return inFlight(time.Second)
	}
	return s.send(ctx, rec, token)
}

// send makes one money-moving PSP call and records its outcome.
func (s *Server) send(ctx context.Context, rec *Record, token string) response {
	res := s.psp.Transfer(ctx, rec.Payment, rec.Reference)
	s.log.Info("PSP transfer", "key", rec.Key, "result", res.kind.String(), "http", res.httpStatus, "detail", res.detail)
	return s.finish(ctx, rec, token, s.outcome(rec, res))
}

// outcome turns a PSP result into the stored state and answer.
func (s *Server) outcome(rec *Record, res pspResult) Outcome {
	base := map[string]any{
		"id": rec.PaymentID, "idempotency_key": rec.Key, "reference": rec.Reference,
		"amount": rec.Payment.Amount, "currency": rec.Payment.Currency,
		"debtor": rec.Payment.Debtor, "creditor": rec.Payment.Creditor,
	}
	switch res.kind {
	case pspExecuted:
		base["status"] = StatusSucceeded
		base["psp_transfer_id"] = res.transferID
		r := jsonResp(http.StatusCreated, base)
		return Outcome{Status: StatusSucceeded, ResponseCode: r.code, ResponseBody: r.body, TransferID: res.transferID}
	case pspRefused:
		base["status"] = StatusRefused
		base["error"] = res.reason
		base["message"] = "The payment service provider refused the payment; no money was moved."
		r := jsonResp(http.StatusPaymentRequired, base)
		return Outcome{Status: StatusRefused, ResponseCode: r.code, ResponseBody: r.body}
	default:
		code, errCode := http.StatusBadGateway, "psp_unavailable"
		grace := time.Duration(0) // the PSP answered (5xx): it is done with the request
		if res.httpStatus == 0 || res.timedOut {
			grace = s.grace // time-out / broken connection: it may still be working
		}
		if res.timedOut {
			code, errCode = http.StatusGatewayTimeout, "psp_timeout"
		}
		base["status"] = StatusUnknown
		base["error"] = errCode
		base["message"] = "The outcome at the payment service provider is unknown; the payment may or may not have been executed. Retry with the same Idempotency-Key to resolve it."
		r := jsonResp(code, base)
		return Outcome{Status: StatusUnknown, ResponseCode: r.code, ResponseBody: r.body, ResendAfter: grace}
	}
}

// finish stores the outcome and returns the answer to give.
func (s *Server) finish(ctx context.Context, rec *Record, token string, out Outcome) response {
	var ok bool
	var err error
	for i := 0; i < 3; i++ {
		if ok, err = s.store.Finish(ctx, rec.Key, token, out); err == nil {
			break
		}
		time.Sleep(time.Duration(i+1) * 100 * time.Millisecond)
	}
	answer := response{code: out.ResponseCode, body: out.ResponseBody, contentType: "application/json"}
	if err != nil {
		s.log.Error("could not record PSP outcome", "key", rec.Key, "status", out.Status, "err", err)
		if out.Status == StatusUnknown {
			return answer
		}
		// The key stays "started"; once its lease expires a retry asks the
		// PSP. Until then the outcome is unknown to the channel.
		return problem(http.StatusInternalServerError, "outcome_not_recorded", "Outcome not recorded",
			"The payment outcome could not be stored; retry with the same Idempotency-Key.")
	}
	if !ok {
		s.log.Warn("lease lost before the outcome was recorded", "key", rec.Key, "status", out.Status)
	}
	return answer
}

func (s *Server) processStoreAfterCall(ctx context.Context, rec *Record, token string) response {
	cur, err := s.store.Get(ctx, rec.Key)
	if err != nil {
		return storageUnavailable()
	}
	if cur != nil {
		return s.existing(ctx, rec, token)
	}
	// MUTANT store_after_call: money moves before the key is stored.
	res := s.psp.Transfer(ctx, rec.Payment, rec.Reference)
	out := s.outcome(rec, res)
	if _, err := s.store.Claim(ctx, rec, token, s.lease); err != nil {
		s.log.Error("claim failed", "key", rec.Key, "err", err)
	}
	return s.finish(ctx, rec, token, out)
}

func replay(rec *Record) response {
	return response{code: rec.ResponseCode, body: rec.ResponseBody, contentType: "application/json", replayed: true}
}

func inFlight(retry time.Duration) response {
	r := problem(http.StatusConflict, "idempotency_key_in_use", "A request is outstanding for this Idempotency-Key",
		"A request with the same Idempotency-Key is being processed or its outcome is still being determined; retry later with the same key.")
	r.retryAfter = retry
	return r
}

func storageUnavailable() response {
	r := problem(http.StatusServiceUnavailable, "storage_unavailable", "Storage unavailable",
		"The idempotency store could not be reached; retry with the same Idempotency-Key.")
	r.retryAfter = time.Second
	return r
}
