package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

type pspKind int

const (
	pspExecuted pspKind = iota // 2xx "executed": money moved
	pspRefused                 // 422: refused, nothing moved
	pspNotFound                // GET only: 404, no transfer with this reference
	pspUnknown                 // 5xx, time-out, broken connection, anything unexpected
)

func (k pspKind) String() string {
	return [...]string{"executed", "refused", "not_found", "unknown"}[k]
}

type pspResult struct {
	kind       pspKind
	transferID string
	reason     string // refusal reason from the PSP (e.g. insufficient_funds)
	httpStatus int    // 0 when no HTTP answer was received
	timedOut   bool
	detail     string
	found      *pspTransfer // Lookup, executed: the transfer the PSP has under the reference
}

// PSPClient talks to the (non-idempotent) payment service provider.
type PSPClient struct {
	base    string
	timeout time.Duration
	hc      *http.Client
}

func NewPSPClient(base string, timeout time.Duration) *PSPClient {
	return &PSPClient{
		base:    strings.TrimRight(base, "/"),
		timeout: timeout,
		// Go's transport only re-sends a request on its own when nothing of it
		// was written; that can never duplicate a transfer.
		hc: &http.Client{Timeout: timeout},
	}
}

type pspTransfer struct {
	ID        string `json:"id"`
	Status    string `json:"status"`
	Reference string `json:"reference"`
	Error     string `json:"error"`
	// The transfer as the PSP executed it (its lookup answer carries them).
	Amount          *int64 `json:"amount"`
	Currency        string `json:"currency"`
	DebtorAccount   string `json:"debtor_account"`
	CreditorAccount string `json:"creditor_account"`
}

// Transfer sends POST /v1/transfers. Every accepted call moves money.
func (c *PSPClient) Transfer(ctx context.Context, p PaymentRequest, reference string) pspResult {
	payload, _ := json.Marshal(map[string]any{
		"amount":           p.Amount,
		"currency":         p.Currency,
		"debtor_account":   p.Debtor,
		"creditor_account": p.Creditor,
		"reference":        reference,
	})
	status, body, res := c.do(ctx, http.MethodPost, c.base+"/v1/transfers", payload)
	if res != nil {
		return *res
	}
	var t pspTransfer
	jsonErr := json.Unmarshal(body, &t)
	switch {
	case status == http.StatusCreated:
		// 201 is the PSP's definite "executed" answer, even if the body is odd.
		return pspResult{kind: pspExecuted, transferID: t.ID, httpStatus: status}
	case status >= 200 && status < 300 && jsonErr == nil && t.Status == "executed":
		return pspResult{kind: pspExecuted, transferID: t.ID, httpStatus: status}
	case status == http.StatusUnprocessableEntity:
		reason := t.Error
		if reason == "" {
			reason = "refused"
		}
		return pspResult{kind: pspRefused, reason: reason, httpStatus: status}
	default:
		// 5xx and anything not in the PSP's contract: we cannot know whether
		// money moved, so the outcome is unknown.
		return pspResult{kind: pspUnknown, httpStatus: status,
			detail: fmt.Sprintf("PSP answered HTTP %d", status)}
	}
}

// Lookup asks GET /v1/transfers?reference=... whether a transfer exists.
func (c *PSPClient) Lookup(ctx context.Context, reference string) pspResult {
	status, body, res := c.do(ctx, http.MethodGet,
		c.base+"/v1/transfers?reference="+url.QueryEscape(reference), nil)
	if res != nil {
		return *res
	}
	var t pspTransfer
	switch {
	case status == http.StatusOK && json.Unmarshal(body, &t) == nil && t.Status == "executed":
		return pspResult{kind: pspExecuted, transferID: t.ID, httpStatus: status, found: &t}
	case status == http.StatusNotFound:
		return pspResult{kind: pspNotFound, httpStatus: status}
	default:
		return pspResult{kind: pspUnknown, httpStatus: status,
			detail: fmt.Sprintf("PSP lookup answered HTTP %d", status)}
	}
}

// do performs one HTTP exchange. A non-nil *pspResult means "unknown".
func (c *PSPClient) do(ctx context.Context, method, u string, payload []byte) (int, []byte, *pspResult) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var rd io.Reader
	if payload != nil {
		rd = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, nil, &pspResult{kind: pspUnknown, detail: err.Error()}
	}
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, errResult(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		// The status line arrived but the body broke off: for a 201 we could
		// trust the status, but stay conservative only where it matters.
		if resp.StatusCode == http.StatusCreated || resp.StatusCode == http.StatusNotFound ||
			resp.StatusCode == http.StatusUnprocessableEntity {
			return resp.StatusCode, body, nil
		}
		r := errResult(err)
		r.httpStatus = resp.StatusCode
		return 0, nil, r
	}
	return resp.StatusCode, body, nil
}

func errResult(err error) *pspResult {
	var ne net.Error
	timedOut := errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
	return &pspResult{kind: pspUnknown, timedOut: timedOut, detail: err.Error()}
}
