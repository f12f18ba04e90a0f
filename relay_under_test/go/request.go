package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
)

// transfer is one channel request: the four fields of the contract.
// Amount keeps the JSON integer literal, so any size round-trips exactly.
type transfer struct {
	GUID   string      `json:"guid"`
	From   string      `json:"from"`
	To     string      `json:"to"`
	Amount json.Number `json:"amount"`
}

var (
	guidPattern   = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	amountPattern = regexp.MustCompile(`^[1-9][0-9]*$`) // a JSON integer > 0
)

// parseTransfer decodes and validates a channel body. On error it also returns
// the guid when the body carried one as a string (for the E400 answer).
// Fields beyond the four are ignored (contract v1.1 leaves this to the relay).
func parseTransfer(body []byte) (transfer, string, error) {
	var t transfer
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return t, "", fmt.Errorf("not JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return t, "", errors.New("trailing data after the JSON value")
	}
	obj, ok := v.(map[string]any)
	if !ok || obj == nil {
		return t, "", errors.New("not a JSON object")
	}
	guid, _ := obj["guid"].(string)
	str := func(name string) (string, error) {
		raw, present := obj[name]
		if !present {
			return "", fmt.Errorf("missing field %q", name)
		}
		s, ok := raw.(string)
		if !ok {
			return "", fmt.Errorf("field %q must be a string", name)
		}
		return s, nil
	}
	var err error
	if t.GUID, err = str("guid"); err != nil {
		return t, guid, err
	}
	if !guidPattern.MatchString(t.GUID) {
		return t, guid, errors.New("guid must be 1 to 64 characters of A-Z a-z 0-9 - _")
	}
	if t.From, err = str("from"); err != nil {
		return t, guid, err
	}
	if t.To, err = str("to"); err != nil {
		return t, guid, err
	}
	raw, present := obj["amount"]
	if !present {
		return t, guid, errors.New(`missing field "amount"`)
	}
	n, ok := raw.(json.Number)
	if !ok {
		return t, guid, errors.New(`field "amount" must be an integer`)
	}
	if !amountPattern.MatchString(n.String()) {
		return t, guid, errors.New(`field "amount" must be an integer > 0`)
	}
	t.Amount = n
	return t, guid, nil
}

// sameRequest tells whether two requests for one GUID ask for the same transfer.
func sameRequest(a, b transfer) bool {
	return a.From == b.From && a.To == b.To && a.Amount.String() == b.Amount.String()
}

// payload is the body sent to the account system: exactly the four fields.
func (t transfer) payload() []byte {
	b, err := json.Marshal(t)
	if err != nil {
		panic(err) // strings and a validated number always marshal
	}
	return b
}

// answer is the body of every reply the relay builds itself.
type answer struct {
	GUID    any    `json:"guid"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

func answerBody(guid any, code, message string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(answer{GUID: guid, Code: code, Message: message})
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}
