package main

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"
)

// jobOn runs one batch job against the instance's database and PSP.
func jobOn(t *testing.T, in *instance, name string, olderThan time.Duration) {
	t.Helper()
	b := &batch{pool: in.srv.store.(*pgStore).pool, srv: in.srv, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if err := batchJobs[name](context.Background(), b, olderThan); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

func statusOf(t *testing.T, in *instance, key string) string {
	t.Helper()
	rec, err := in.srv.store.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	if rec == nil {
		return "(deleted)"
	}
	return rec.Status
}

// unknownKey leaves a key unknown after a PSP call that behaves as b.
func unknownKey(t *testing.T, psp *fakePSP, a *instance, b string) string {
	t.Helper()
	psp.setBehave(func(string, int) string { return b })
	key := newKey(t)
	if r := post(t, a.hs.URL, key, payBody); r.code != 504 && r.code != 502 {
		t.Fatalf("want 502/504, got %d %s", r.code, r.raw)
	}
	psp.setBehave(func(string, int) string { return bOK })
	if s := statusOf(t, a, key); s != StatusUnknown {
		t.Fatalf("want unknown, got %s", s)
	}
	return key
}

func TestReconcileSettlesAnUnknownKeyThePSPExecutedWithoutSending(t *testing.T) {
	psp := newFakePSP(t)
	a := newInstance(t, psp, opts{})
	key := unknownKey(t, psp, a, bHangAfter)
	jobOn(t, a, "reconcile", 0)
	if s := statusOf(t, a, key); s != StatusSucceeded {
		t.Fatalf("after reconcile: %s", s)
	}
	r := post(t, a.hs.URL, key, payBody)
	if r.code != 201 || r.header.Get("Idempotent-Replayed") != "true" || r.body["psp_transfer_id"] == "" {
		t.Fatalf("retry after reconcile: %d %s", r.code, r.raw)
	}
	if posts, _, executed := psp.counts(key); posts != 1 || executed != 1 {
		t.Fatalf("POSTs=%d executed=%d", posts, executed)
	}
}

func TestReconcileLeavesAKeyThePSPDoesNotHaveAndNeverSendsIt(t *testing.T) {
	psp := newFakePSP(t)
	a := newInstance(t, psp, opts{})
	key := unknownKey(t, psp, a, bFailBefore)
	jobOn(t, a, "reconcile", 0)
	if s := statusOf(t, a, key); s != StatusUnknown {
		t.Fatalf("after reconcile: %s", s)
	}
	if posts, gets, _ := psp.counts(key); posts != 1 || gets != 1 {
		t.Fatalf("POSTs=%d GETs=%d: reconcile asks and never sends", posts, gets)
	}
}

func TestReconcileLeavesAKeyWhenTheLookupFailsOrFindsAnotherTransfer(t *testing.T) {
	psp := newFakePSP(t)
	a := newInstance(t, psp, opts{})
	failed := unknownKey(t, psp, a, bHangAfter)
	psp.mu.Lock()
	psp.getFail = true
	psp.mu.Unlock()
	jobOn(t, a, "reconcile", 0)
	if s := statusOf(t, a, failed); s != StatusUnknown {
		t.Fatalf("lookup failed, after reconcile: %s", s)
	}
	psp.mu.Lock()
	psp.getFail = false
	psp.mu.Unlock()
	other := unknownKey(t, psp, a, bHangAfter)
	psp.alter(other, func(tr *pspTransfer) { amount := *tr.Amount + 1; tr.Amount = &amount })
	jobOn(t, a, "reconcile", 0)
	if s := statusOf(t, a, other); s != StatusUnknown {
		t.Fatalf("another transfer under the reference, after reconcile: %s", s)
	}
	if posts, _, _ := psp.counts(other); posts != 1 {
		t.Fatalf("POSTs=%d", posts)
	}
}

func TestReconcileAndExpireLeaveKeysYoungerThanTheirAge(t *testing.T) {
	psp := newFakePSP(t)
	a := newInstance(t, psp, opts{})
	open := unknownKey(t, psp, a, bHangAfter)
	done := newKey(t)
	if r := post(t, a.hs.URL, done, payBody); r.code != 201 {
		t.Fatalf("pay: %d %s", r.code, r.raw)
	}
	jobOn(t, a, "reconcile", time.Hour)
	jobOn(t, a, "expire", time.Hour)
	if s, d := statusOf(t, a, open), statusOf(t, a, done); s != StatusUnknown || d != StatusSucceeded {
		t.Fatalf("after jobs with --older-than 1h: %s, %s", s, d)
	}
}

func TestExpireDeletesSettledKeysAndNeverAnOpenOne(t *testing.T) {
	psp := newFakePSP(t)
	a := newInstance(t, psp, opts{})
	open := unknownKey(t, psp, a, bFailBefore)
	done := newKey(t)
	if r := post(t, a.hs.URL, done, payBody); r.code != 201 {
		t.Fatalf("pay: %d %s", r.code, r.raw)
	}
	jobOn(t, a, "expire", 0)
	if s, d := statusOf(t, a, open), statusOf(t, a, done); s != StatusUnknown || d != "(deleted)" {
		t.Fatalf("after expire: %s, %s", s, d)
	}
}

// orphan claims a key as an instance that then died would have, its lease
// live for an hour; sent says whether its PSP call got through first.
func orphan(t *testing.T, psp *fakePSP, a *instance, sent bool) (string, *Record) {
	t.Helper()
	key := newKey(t)
	p, fp, canon, _ := parsePayment([]byte(payBody))
	rec := &Record{Key: key, PaymentID: newID("pay_"), Fingerprint: fp, Reference: key, RequestBody: canon, Payment: p}
	if ok, err := a.srv.store.Claim(context.Background(), rec, "dead-instance", time.Hour); !ok || err != nil {
		t.Fatalf("claim: %v %v", ok, err)
	}
	if sent {
		if res := a.srv.psp.Transfer(context.Background(), p, key); res.kind != pspExecuted {
			t.Fatalf("PSP: %v", res.kind)
		}
	}
	return key, rec
}

func TestReconcileSettlesAStartedKeyUnderALiveLeaseOnlyFromThePSPsRecord(t *testing.T) {
	psp := newFakePSP(t)
	a := newInstance(t, psp, opts{})
	executed, rec := orphan(t, psp, a, true)
	never, _ := orphan(t, psp, a, false)
	jobOn(t, a, "reconcile", 0)
	if s := statusOf(t, a, executed); s != StatusSucceeded {
		t.Fatalf("executed orphan after reconcile: %s", s)
	}
	if r := post(t, a.hs.URL, executed, payBody); r.code != 201 || r.body["id"] != rec.PaymentID {
		t.Fatalf("retry: %d %s", r.code, r.raw)
	}
	if s := statusOf(t, a, never); s != StatusStarted {
		t.Fatalf("orphan the PSP does not have, after reconcile: %s", s)
	}
	// Its holder's lease is untouched: were it alive, it could still store its outcome.
	ok, err := a.srv.store.Finish(context.Background(), never, "dead-instance", Outcome{Status: StatusRefused, ResponseCode: 402})
	if err != nil || !ok {
		t.Fatalf("holder's finish after reconcile: %v %v", ok, err)
	}
	if posts, gets, _ := psp.counts(never); posts != 0 || gets != 1 {
		t.Fatalf("POSTs=%d GETs=%d: reconcile asks and never sends", posts, gets)
	}
}
