package main

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
)

// PaymentRequest is the validated part of a POST /payments body.
type PaymentRequest struct {
	Amount   int64
	Currency string
	Debtor   string
	Creditor string
}

var currencyRe = regexp.MustCompile(`^[A-Z]{3}$`)

const maxAccountLen = 140

// parsePayment validates a request body and computes its fingerprint.
//
// The fingerprint is the hex SHA-256 of a canonical re-encoding of the whole
// JSON object (object keys sorted, insignificant white space removed, numbers
// kept as written), so that unknown extra fields are part of the fingerprint
// while key order and formatting are not.
func parsePayment(body []byte) (p PaymentRequest, fingerprint string, canonical []byte, err error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var raw any
	if err = dec.Decode(&raw); err != nil {
		return p, "", nil, fmt.Errorf("body is not valid JSON: %v", err)
	}
	if _, terr := dec.Token(); !errors.Is(terr, io.EOF) {
		return p, "", nil, errors.New("body must contain exactly one JSON value")
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		return p, "", nil, errors.New("body must be a JSON object")
	}

	num, ok := obj["amount"].(json.Number)
	if !ok {
		return p, "", nil, errors.New("amount must be a positive integer (minor units)")
	}
	amount, perr := strconv.ParseInt(num.String(), 10, 64)
	if perr != nil || amount <= 0 {
		return p, "", nil, errors.New("amount must be a positive integer (minor units)")
	}
	p.Amount = amount

	if p.Currency, ok = obj["currency"].(string); !ok || !currencyRe.MatchString(p.Currency) {
		return p, "", nil, errors.New("currency must be a three-letter upper-case ISO 4217 code, e.g. \"EUR\"")
	}
	if p.Debtor, ok = obj["debtor"].(string); !ok || p.Debtor == "" || len(p.Debtor) > maxAccountLen {
		return p, "", nil, errors.New("debtor must be a non-empty account id string")
	}
	if p.Creditor, ok = obj["creditor"].(string); !ok || p.Creditor == "" || len(p.Creditor) > maxAccountLen {
		return p, "", nil, errors.New("creditor must be a non-empty account id string")
	}

	canonical, err = json.Marshal(raw) // encoding/json sorts map keys
	if err != nil {
		return p, "", nil, fmt.Errorf("body cannot be canonicalised: %v", err)
	}
	sum := sha256.Sum256(canonical)
	return p, hex.EncodeToString(sum[:]), canonical, nil
}

// newID returns prefix + 32 random hex characters.
func newID(prefix string) string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return prefix + hex.EncodeToString(b[:])
}
