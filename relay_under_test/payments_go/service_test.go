package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The tests need a PostgreSQL: TEST_DATABASE_URL (or DATABASE_URL).
// scripts/test.sh starts a throw-away one.
func testDB(t *testing.T) string {
	t.Helper()
	u := os.Getenv("TEST_DATABASE_URL")
	if u == "" {
		u = os.Getenv("DATABASE_URL")
	}
	if u == "" {
		t.Skip("TEST_DATABASE_URL not set; run scripts/test.sh")
	}
	return u
}

type instance struct {
	srv *Server
	hs  *httptest.Server
}

type opts struct {
	mutant     string
	pspTimeout time.Duration
	grace      time.Duration
	lease      time.Duration
}

// newInstance starts one service instance (own pool, own HTTP server) on the
// shared test database.
func newInstance(t *testing.T, psp *fakePSP, o opts) *instance {
	t.Helper()
	if o.pspTimeout == 0 {
		o.pspTimeout = 500 * time.Millisecond
	}
	if o.lease == 0 {
		o.lease = 2*o.pspTimeout + 2*time.Second
	}
	cfg := Config{DatabaseURL: testDB(t), PSPURL: psp.URL(), PSPTimeout: o.pspTimeout, Lease: o.lease, Grace: o.grace}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("TEST_LOG") != "" {
		logger = slog.New(slog.NewTextHandler(os.Stderr, nil)).With("instance", t.Name(), "mutant", o.mutant)
	}
	s, closeDB, err := newServer(context.Background(), cfg, o.mutant, logger)
	if err != nil {
		t.Fatalf("newServer: %v", err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() { hs.Close(); closeDB() })
	return &instance{srv: s, hs: hs}
}

var keySeq = time.Now().UnixNano()
var keyMu sync.Mutex

func newKey(t *testing.T) string {
	keyMu.Lock()
	defer keyMu.Unlock()
	keySeq++
	return fmt.Sprintf("%s-%d", strings.ReplaceAll(t.Name(), "/", "_"), keySeq)
}

type result struct {
	code   int
	body   map[string]any
	raw    string
	header http.Header
}

func post(t *testing.T, base, key, body string) result {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/payments", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("POST: %v", err)
		return result{}
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	json.Unmarshal(raw, &m)
	return result{code: resp.StatusCode, body: m, raw: string(raw), header: resp.Header}
}

const payBody = `{"amount": 1250, "currency": "EUR", "debtor": "DE001", "creditor": "FR002"}`

// concurrent fires n requests with one key at once, alternating instances.
func concurrent(t *testing.T, urls []string, key string, n int) map[int]int {
	t.Helper()
	var wg sync.WaitGroup
	start := make(chan struct{})
	codes := make([]int, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			codes[i] = post(t, urls[i%len(urls)], key, payBody).code
		}(i)
	}
	close(start)
	wg.Wait()
	hist := map[int]int{}
	for _, c := range codes {
		hist[c]++
	}
	return hist
}

func histString(h map[int]int) string {
	var ks []int
	for k := range h {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	var parts []string
	for _, k := range ks {
		parts = append(parts, fmt.Sprintf("%d×%d", h[k], k))
	}
	return strings.Join(parts, " ")
}

// ------------------------------------------------------------ correct service

func TestConcurrentSameKeyTwoInstancesOnePSPCall(t *testing.T) {
	psp := newFakePSP(t)
	psp.delay = 300 * time.Millisecond
	a, b := newInstance(t, psp, opts{}), newInstance(t, psp, opts{})
	for round := 0; round < 3; round++ {
		key := newKey(t)
		hist := concurrent(t, []string{a.hs.URL, b.hs.URL}, key, 20)
		posts, _, executed := psp.counts(key)
		t.Logf("round %d: answers %s; PSP POSTs=%d executed=%d", round, histString(hist), posts, executed)
		if posts != 1 || executed != 1 {
			t.Fatalf("want exactly 1 PSP call, got %d POSTs, %d executed", posts, executed)
		}
		if hist[201] < 1 || hist[201]+hist[409] != 20 {
			t.Fatalf("want only 201 and 409 answers, got %s", histString(hist))
		}
		// After completion every retry, on either instance, replays the 201.
		r1, r2 := post(t, a.hs.URL, key, payBody), post(t, b.hs.URL, key, payBody)
		if r1.code != 201 || r2.code != 201 || r1.raw != r2.raw || r1.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay mismatch: %d %s / %d %s", r1.code, r1.raw, r2.code, r2.raw)
		}
		if posts, _, _ := psp.counts(key); posts != 1 {
			t.Fatalf("replay called the PSP")
		}
	}
}

func TestSuccessReplayAndPayloadMismatch(t *testing.T) {
	psp := newFakePSP(t)
	a := newInstance(t, psp, opts{})
	key := newKey(t)
	r := post(t, a.hs.URL, key, payBody)
	if r.code != 201 || r.body["id"] == nil || r.body["status"] != "succeeded" {
		t.Fatalf("first: %d %s", r.code, r.raw)
	}
	// Same payload, other key order and white space: same fingerprint.
	same := `{"creditor":"FR002","debtor":"DE001","currency":"EUR","amount":1250}`
	r2 := post(t, a.hs.URL, key, same)
	if r2.code != 201 || r2.raw != r.raw || r2.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %d %s", r2.code, r2.raw)
	}
	for _, other := range []string{
		`{"amount": 1251, "currency": "EUR", "debtor": "DE001", "creditor": "FR002"}`,
		`{"amount": 1250, "currency": "EUR", "debtor": "DE001", "creditor": "FR002", "note": "x"}`,
	} {
		r3 := post(t, a.hs.URL, key, other)
		if r3.code != 422 || r3.body["error"] != "idempotency_key_reused" {
			t.Fatalf("mismatch: want 422, got %d %s", r3.code, r3.raw)
		}
	}
	if posts, _, _ := psp.counts(key); posts != 1 {
		t.Fatalf("PSP POSTs = %d", posts)
	}
}

func TestValidation(t *testing.T) {
	psp := newFakePSP(t)
	a := newInstance(t, psp, opts{})
	if r := post(t, a.hs.URL, "", payBody); r.code != 400 || r.body["error"] != "idempotency_key_missing" {
		t.Fatalf("missing key: %d %s", r.code, r.raw)
	}
	key := newKey(t)
	for _, bad := range []string{
		``, `{`, `[]`, `{"amount": "12", "currency": "EUR", "debtor": "a", "creditor": "b"}`,
		`{"amount": 0, "currency": "EUR", "debtor": "a", "creditor": "b"}`,
		`{"amount": -5, "currency": "EUR", "debtor": "a", "creditor": "b"}`,
		`{"amount": 1.5, "currency": "EUR", "debtor": "a", "creditor": "b"}`,
		`{"amount": 10, "currency": "euro", "debtor": "a", "creditor": "b"}`,
		`{"amount": 10, "currency": "EUR", "creditor": "b"}`,
		`{"amount": 10, "currency": "EUR", "debtor": "a", "creditor": ""}`,
		`{"amount": 10, "currency": "EUR", "debtor": "a", "creditor": "b"} {}`,
	} {
		if r := post(t, a.hs.URL, key, bad); r.code != 400 {
			t.Errorf("body %q: want 400, got %d %s", bad, r.code, r.raw)
		}
	}
	// Rejected requests are not stored: the key is still free.
	if r := post(t, a.hs.URL, key, payBody); r.code != 201 {
		t.Fatalf("after 400s: %d %s", r.code, r.raw)
	}
	req, _ := http.NewRequest(http.MethodGet, a.hs.URL+"/healthz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", err, resp)
	}
	resp.Body.Close()
}

func TestRefusedIsReplayed(t *testing.T) {
	psp := newFakePSP(t)
	psp.setBehave(func(string, int) string { return bRefuse })
	a, b := newInstance(t, psp, opts{}), newInstance(t, psp, opts{})
	key := newKey(t)
	r := post(t, a.hs.URL, key, payBody)
	if r.code != 402 || r.body["error"] != "insufficient_funds" || r.body["status"] != "refused" {
		t.Fatalf("refused: %d %s", r.code, r.raw)
	}
	psp.setBehave(func(string, int) string { return bOK }) // funds arrived: still replay the refusal
	r2 := post(t, b.hs.URL, key, payBody)
	if r2.code != 402 || r2.raw != r.raw {
		t.Fatalf("replay: %d %s", r2.code, r2.raw)
	}
	if posts, gets, _ := psp.counts(key); posts != 1 || gets != 0 {
		t.Fatalf("POSTs=%d GETs=%d", posts, gets)
	}
}

func TestTimeoutAfterExecutionIsResolvedByLookup(t *testing.T) {
	psp := newFakePSP(t)
	psp.setBehave(func(string, int) string { return bHangAfter })
	a, b := newInstance(t, psp, opts{}), newInstance(t, psp, opts{})
	key := newKey(t)
	r := post(t, a.hs.URL, key, payBody)
	if r.code != 504 || r.body["status"] != "unknown" {
		t.Fatalf("first: want 504, got %d %s", r.code, r.raw)
	}
	r2 := post(t, b.hs.URL, key, payBody)
	if r2.code != 201 || r2.body["id"] != r.body["id"] {
		t.Fatalf("retry: want 201 with same id, got %d %s", r2.code, r2.raw)
	}
	posts, gets, executed := psp.counts(key)
	t.Logf("POSTs=%d GETs=%d executed=%d", posts, gets, executed)
	if posts != 1 || gets != 1 || executed != 1 {
		t.Fatalf("want 1 POST 1 GET, got POSTs=%d GETs=%d executed=%d", posts, gets, executed)
	}
	if r3 := post(t, a.hs.URL, key, payBody); r3.code != 201 || r3.raw != r2.raw {
		t.Fatalf("replay after resolution: %d %s", r3.code, r3.raw)
	}
}

func TestPSP5xxNotExecutedIsResent(t *testing.T) {
	psp := newFakePSP(t)
	psp.setBehave(func(_ string, n int) string {
		if n == 0 {
			return bFailBefore
		}
		return bOK
	})
	a := newInstance(t, psp, opts{})
	key := newKey(t)
	if r := post(t, a.hs.URL, key, payBody); r.code != 502 || r.body["status"] != "unknown" {
		t.Fatalf("first: want 502, got %d %s", r.code, r.raw)
	}
	if r := post(t, a.hs.URL, key, payBody); r.code != 201 {
		t.Fatalf("retry: want 201, got %d %s", r.code, r.raw)
	}
	posts, gets, executed := psp.counts(key)
	if posts != 2 || gets != 1 || executed != 1 {
		t.Fatalf("want POSTs=2 GETs=1 executed=1, got %d %d %d", posts, gets, executed)
	}
}

func TestPSP5xxAfterExecutionIsNotResent(t *testing.T) {
	psp := newFakePSP(t)
	psp.setBehave(func(string, int) string { return bFailAfter })
	a := newInstance(t, psp, opts{})
	key := newKey(t)
	if r := post(t, a.hs.URL, key, payBody); r.code != 502 {
		t.Fatalf("first: want 502, got %d %s", r.code, r.raw)
	}
	psp.mu.Lock()
	psp.getFail = true
	psp.mu.Unlock()
	if r := post(t, a.hs.URL, key, payBody); r.code != 502 || r.body["status"] != "unknown" {
		t.Fatalf("retry while lookup fails: want 502, got %d %s", r.code, r.raw)
	}
	psp.mu.Lock()
	psp.getFail = false
	psp.mu.Unlock()
	if r := post(t, a.hs.URL, key, payBody); r.code != 201 {
		t.Fatalf("retry: want 201, got %d %s", r.code, r.raw)
	}
	if posts, gets, executed := psp.counts(key); posts != 1 || gets != 2 || executed != 1 {
		t.Fatalf("want POSTs=1 GETs=2 executed=1, got %d %d %d", posts, gets, executed)
	}
}

// After a time-out the PSP may still execute the transfer late; a "not
// found" right after the time-out is not trusted until the grace period ends.
func TestLateExecutionAfterTimeoutWithinGrace(t *testing.T) {
	psp := newFakePSP(t)
	psp.hang = 1200 * time.Millisecond
	psp.setBehave(func(string, int) string { return bHangBefore })
	a := newInstance(t, psp, opts{pspTimeout: 400 * time.Millisecond, grace: 2 * time.Second})
	key := newKey(t)
	if r := post(t, a.hs.URL, key, payBody); r.code != 504 {
		t.Fatalf("first: want 504, got %d %s", r.code, r.raw)
	}
	r := post(t, a.hs.URL, key, payBody) // PSP has not executed yet: 404, inside grace
	if r.code != 409 || r.header.Get("Retry-After") == "" {
		t.Fatalf("within grace: want 409 with Retry-After, got %d %s", r.code, r.raw)
	}
	time.Sleep(2 * time.Second) // the late execution has happened by now
	if r := post(t, a.hs.URL, key, payBody); r.code != 201 {
		t.Fatalf("after grace: want 201, got %d %s", r.code, r.raw)
	}
	if posts, _, executed := psp.counts(key); posts != 1 || executed != 1 {
		t.Fatalf("want 1 POST, 1 executed; got %d %d", posts, executed)
	}
}

// An instance died after claiming the key: once its lease expires a retry
// asks the PSP and only then sends.
func TestCrashedOwnerIsRecovered(t *testing.T) {
	psp := newFakePSP(t)
	a := newInstance(t, psp, opts{lease: 1500 * time.Millisecond})
	key := newKey(t)
	p, fp, canon, _ := parsePayment([]byte(payBody))
	rec := &Record{Key: key, PaymentID: newID("pay_"), Fingerprint: fp, Reference: key, RequestBody: canon, Payment: p}
	if ok, err := a.srv.store.Claim(context.Background(), rec, "dead-instance", 1500*time.Millisecond); !ok || err != nil {
		t.Fatalf("claim: %v %v", ok, err)
	}
	if r := post(t, a.hs.URL, key, payBody); r.code != 409 {
		t.Fatalf("while leased: want 409, got %d %s", r.code, r.raw)
	}
	time.Sleep(1600 * time.Millisecond)
	if r := post(t, a.hs.URL, key, payBody); r.code != 201 || r.body["id"] != rec.PaymentID {
		t.Fatalf("after lease expiry: want 201, got %d %s", r.code, r.raw)
	}
	if posts, gets, executed := psp.counts(key); posts != 1 || gets != 1 || executed != 1 {
		t.Fatalf("want POSTs=1 GETs=1 executed=1, got %d %d %d", posts, gets, executed)
	}
	// The row in the database.
	conn, err := pgx.Connect(context.Background(), testDB(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var status string
	var code, attempts int
	if err := conn.QueryRow(context.Background(),
		`SELECT status, response_code, psp_attempts FROM payments_idempotency WHERE idempotency_key=$1`, key).
		Scan(&status, &code, &attempts); err != nil {
		t.Fatal(err)
	}
	if status != "succeeded" || code != 201 {
		t.Fatalf("row: %s %d %d", status, code, attempts)
	}
}

// ------------------------------------------------------------------ mutants

// concurrentScenario: 20 requests at once, one key, across two instances.
func concurrentScenario(t *testing.T, mutant string) (posts int) {
	psp := newFakePSP(t)
	psp.delay = 300 * time.Millisecond
	a, b := newInstance(t, psp, opts{mutant: mutant}), newInstance(t, psp, opts{mutant: mutant})
	for round := 0; round < 3; round++ {
		key := newKey(t)
		hist := concurrent(t, []string{a.hs.URL, b.hs.URL}, key, 20)
		p, _, executed := psp.counts(key)
		t.Logf("mutant %s round %d: answers %s; PSP POSTs=%d executed=%d", mutant, round, histString(hist), p, executed)
		posts += p
	}
	return posts
}

func TestMutantsMakeMoreThanOnePSPCall(t *testing.T) {
	for _, m := range []string{MutCheckThenInsert, MutStoreAfterCall, MutInMemoryKeys, MutRetryInFlight} {
		t.Run(m, func(t *testing.T) {
			if posts := concurrentScenario(t, m); posts <= 3 {
				t.Fatalf("mutant %s not exposed: %d PSP POSTs for 3 keys", m, posts)
			}
		})
	}
	t.Run(MutInMemoryKeys+"_sequential", func(t *testing.T) {
		psp := newFakePSP(t)
		a, b := newInstance(t, psp, opts{mutant: MutInMemoryKeys}), newInstance(t, psp, opts{mutant: MutInMemoryKeys})
		key := newKey(t)
		r1, r2 := post(t, a.hs.URL, key, payBody), post(t, b.hs.URL, key, payBody)
		posts, _, _ := psp.counts(key)
		t.Logf("instance A %d, instance B %d; PSP POSTs=%d", r1.code, r2.code, posts)
		if posts < 2 {
			t.Fatalf("not exposed")
		}
	})
	t.Run(MutResendUnknown, func(t *testing.T) {
		for _, m := range []string{"", MutResendUnknown} {
			psp := newFakePSP(t)
			psp.setBehave(func(string, int) string { return bHangAfter })
			a := newInstance(t, psp, opts{mutant: m})
			key := newKey(t)
			r1 := post(t, a.hs.URL, key, payBody)
			psp.setBehave(func(string, int) string { return bOK })
			r2 := post(t, a.hs.URL, key, payBody)
			posts, gets, executed := psp.counts(key)
			t.Logf("mutant=%q: answers %d then %d; PSP POSTs=%d GETs=%d executed=%d", m, r1.code, r2.code, posts, gets, executed)
			if m == "" && (posts != 1 || executed != 1) {
				t.Fatalf("correct service re-sent")
			}
			if m != "" && posts < 2 {
				t.Fatalf("mutant not exposed")
			}
		}
	})
}

func TestRequestBodyExtraFieldsAccepted(t *testing.T) {
	psp := newFakePSP(t)
	a := newInstance(t, psp, opts{})
	key := newKey(t)
	body := `{"amount": 5, "currency": "EUR", "debtor": "A", "creditor": "B", "channel": {"x": [1,2]}}`
	if r := post(t, a.hs.URL, key, body); r.code != 201 {
		t.Fatalf("%d %s", r.code, r.raw)
	}
	if r := post(t, a.hs.URL, key, body); r.code != 201 || r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("%d %s", r.code, r.raw)
	}
}
