package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// outcome is what one account call came to (contract §3, "Classifying").
type outcome struct {
	Status string // DONE, UNKNOWN or FAILED
	Code   string // the account's code for DONE; E901 or E902 otherwise
	Body   []byte // for DONE: the account's answer, verbatim
	Detail string // why, for logs and messages
}

type accountClient struct {
	base    string
	timeout time.Duration
	http    *http.Client
}

func newAccountClient(base string, timeout time.Duration) *accountClient {
	transport := &http.Transport{
		Proxy:       nil, // never route the account call through an environment proxy
		DialContext: (&net.Dialer{}).DialContext,
		// A fresh connection per call: a request is never put on a pooled
		// connection that the other side may have closed, so "could not
		// connect" always means "nothing was sent".
		DisableKeepAlives:  true,
		DisableCompression: true,
	}
	return &accountClient{
		base:    strings.TrimRight(base, "/"),
		timeout: timeout,
		http:    &http.Client{Transport: transport},
	}
}

const maxBody = 1 << 20

// do sends one request and reports whether a connection was ever obtained
// for it (and so whether any byte of it may have left this process).
// The call gives up after the account timeout, or at deadline if that is
// sooner (a zero deadline means none).
func (c *accountClient) do(deadline time.Time, method, path string, body []byte) (status int, answer []byte, connected bool, err error) {
	limit := time.Now().Add(c.timeout)
	if !deadline.IsZero() && deadline.Before(limit) {
		limit = deadline
	}
	ctx, cancel := context.WithDeadline(context.Background(), limit)
	defer cancel()
	var gotConn atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(httptrace.GotConnInfo) { gotConn.Store(true) },
	})
	var reader io.Reader
	if body != nil {
		reader = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, reader)
	if err != nil {
		return 0, nil, false, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, gotConn.Load(), err
	}
	defer resp.Body.Close()
	answer, err = io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return resp.StatusCode, nil, true, err
	}
	return resp.StatusCode, answer, true, nil
}

// transfer makes one POST /transfer and classifies it:
//   - an HTTP answer carrying a code: definite, DONE, body kept verbatim;
//   - no connection could be made: nothing was sent, FAILED (E902);
//   - anything else (time-out, connection broken after it was made, an
//     answer we cannot read): UNKNOWN (E901). When in doubt, UNKNOWN.
func (c *accountClient) transfer(deadline time.Time, payload []byte) outcome {
	status, body, connected, err := c.do(deadline, http.MethodPost, "/transfer", payload)
	if err != nil {
		if !connected {
			return outcome{Status: statusFailed, Code: "E902", Detail: err.Error()}
		}
		return outcome{Status: statusUnknown, Code: "E901", Detail: err.Error()}
	}
	var parsed struct {
		Code *string `json:"code"`
	}
	if json.Unmarshal(body, &parsed) != nil || parsed.Code == nil || *parsed.Code == "" {
		return outcome{Status: statusUnknown, Code: "E901",
			Detail: "account system answered HTTP " + strconv.Itoa(status) + " without a readable code"}
	}
	return outcome{Status: statusDone, Code: *parsed.Code, Body: body}
}

// queryResult is the answer of GET /transfer/{guid}.
type queryResult int

const (
	queryFailed   queryResult = iota // no usable answer: leave the row alone
	queryFound                       // processed; code holds its outcome
	queryNotFound                    // never processed
)

func (c *accountClient) query(guid string) (queryResult, string) {
	status, body, _, err := c.do(time.Time{}, http.MethodGet, "/transfer/"+url.PathEscape(guid), nil)
	if err != nil {
		return queryFailed, ""
	}
	var parsed struct {
		Found *bool   `json:"found"`
		Code  *string `json:"code"`
	}
	if json.Unmarshal(body, &parsed) != nil || parsed.Found == nil {
		return queryFailed, ""
	}
	switch {
	case status == http.StatusOK && *parsed.Found && parsed.Code != nil && *parsed.Code != "":
		return queryFound, *parsed.Code
	case status == http.StatusNotFound && !*parsed.Found:
		return queryNotFound, ""
	}
	return queryFailed, ""
}
