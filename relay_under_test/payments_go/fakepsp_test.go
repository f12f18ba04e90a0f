package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// Behaviours of the fake PSP for one POST.
const (
	bOK         = "ok"          // execute, answer 201 (after delay)
	bRefuse     = "refuse"      // 422 insufficient_funds, nothing moves
	bFailBefore = "fail_before" // 500, nothing moves
	bFailAfter  = "fail_after"  // execute, then 500
	bHangAfter  = "hang_after"  // execute, then answer too late (client time-out)
	bHangBefore = "hang_before" // answer nothing for a while, then execute (late execution)
)

// fakePSP is a deliberately non-idempotent PSP: every accepted POST executes
// a new transfer, even with a reference it has seen before.
type fakePSP struct {
	t        *testing.T
	srv      *httptest.Server
	mu       sync.Mutex
	posts    map[string]int         // POST calls per reference
	gets     map[string]int         // GET calls per reference
	executed map[string][]string    // executed transfer ids per reference
	sent     map[string]pspTransfer // the first POST's transfer per reference, as the lookup reports it
	seq      int
	delay    time.Duration                  // before answering an ok POST
	hang     time.Duration                  // for hang_* behaviours
	behave   func(ref string, n int) string // n = index of this POST for ref
	getFail  bool                           // GET answers 503
}

func newFakePSP(t *testing.T) *fakePSP {
	f := &fakePSP{t: t, posts: map[string]int{}, gets: map[string]int{}, executed: map[string][]string{},
		sent: map[string]pspTransfer{}, hang: 1500 * time.Millisecond}
	f.behave = func(string, int) string { return bOK }
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/transfers", f.post)
	mux.HandleFunc("GET /v1/transfers", f.get)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakePSP) URL() string { return f.srv.URL }

func (f *fakePSP) setBehave(b func(ref string, n int) string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.behave = b
}

func (f *fakePSP) execute(ref string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	id := fmt.Sprintf("tr_%d", f.seq)
	f.executed[ref] = append(f.executed[ref], id)
	return id
}

func (f *fakePSP) post(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Amount          int64  `json:"amount"`
		Currency        string `json:"currency"`
		DebtorAccount   string `json:"debtor_account"`
		CreditorAccount string `json:"creditor_account"`
		Reference       string `json:"reference"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Reference == "" || in.Amount <= 0 ||
		in.DebtorAccount == "" || in.CreditorAccount == "" || in.Currency == "" {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":"bad_request"}`)
		return
	}
	f.mu.Lock()
	n := f.posts[in.Reference]
	f.posts[in.Reference]++
	if n == 0 {
		f.sent[in.Reference] = pspTransfer{Reference: in.Reference, Amount: &in.Amount, Currency: in.Currency,
			DebtorAccount: in.DebtorAccount, CreditorAccount: in.CreditorAccount}
	}
	behave, delay, hang := f.behave(in.Reference, n), f.delay, f.hang
	f.mu.Unlock()

	w.Header().Set("Content-Type", "application/json")
	switch behave {
	case bRefuse:
		w.WriteHeader(http.StatusUnprocessableEntity)
		fmt.Fprint(w, `{"error":"insufficient_funds"}`)
		return
	case bFailBefore:
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, `{"error":"internal"}`)
		return
	case bFailAfter:
		f.execute(in.Reference)
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, `{"error":"internal"}`)
		return
	case bHangAfter:
		id := f.execute(in.Reference)
		time.Sleep(hang)
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id":%q,"status":"executed","reference":%q}`, id, in.Reference)
		return
	case bHangBefore:
		time.Sleep(hang)
		id := f.execute(in.Reference)
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id":%q,"status":"executed","reference":%q}`, id, in.Reference)
		return
	}
	id := f.execute(in.Reference)
	time.Sleep(delay)
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, `{"id":%q,"status":"executed","reference":%q}`, id, in.Reference)
}

func (f *fakePSP) get(w http.ResponseWriter, r *http.Request) {
	ref := r.URL.Query().Get("reference")
	f.mu.Lock()
	f.gets[ref]++
	ids, fail, sent := f.executed[ref], f.getFail, f.sent[ref]
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if fail {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"error":"unavailable"}`)
		return
	}
	if len(ids) == 0 {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":"not_found"}`)
		return
	}
	// The executed transfer, as a real PSP's lookup returns it.
	sent.ID, sent.Status, sent.Reference = ids[0], "executed", ref
	json.NewEncoder(w).Encode(sent)
}

// alter changes the transfer the lookup reports for ref (as if the PSP held another under it).
func (f *fakePSP) alter(ref string, change func(*pspTransfer)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.sent[ref]
	change(&t)
	f.sent[ref] = t
}

func (f *fakePSP) counts(ref string) (posts, gets, executed int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.posts[ref], f.gets[ref], len(f.executed[ref])
}
