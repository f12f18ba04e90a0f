// Command relay is a payment relay that follows the relaychaos relay
// contract (v1.1): serve, resolve, reprocess and purge on one SQLite ledger.
package main

import (
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"strconv"
	"time"
)

type config struct {
	host, port string
	accountURL string
	ledgerPath string
	timeout    time.Duration
}

func configFromEnv() (config, error) {
	c := config{
		host:       envOr("RELAY_HOST", "127.0.0.1"),
		port:       envOr("RELAY_PORT", "8080"),
		accountURL: os.Getenv("ACCOUNT_URL"),
		ledgerPath: os.Getenv("LEDGER_PATH"),
		timeout:    2 * time.Second,
	}
	if v := os.Getenv("ACCOUNT_TIMEOUT_MS"); v != "" {
		ms, err := strconv.ParseFloat(v, 64)
		if err != nil || ms <= 0 || math.IsInf(ms, 0) {
			return c, fmt.Errorf("ACCOUNT_TIMEOUT_MS must be a positive number, got %q", v)
		}
		c.timeout = time.Duration(ms * float64(time.Millisecond))
	}
	if c.ledgerPath == "" {
		return c, fmt.Errorf("LEDGER_PATH is not set")
	}
	return c, nil
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

const usage = `usage: relay serve
       relay resolve --min-age SECONDS
       relay reprocess --max-attempts N
       relay purge --retention SECONDS`

func main() {
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	cmd, args := os.Args[1], os.Args[2:]
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	minAge := fs.Float64("min-age", -1, "resolve: minimum age in seconds")
	maxAttempts := fs.Int64("max-attempts", -1, "reprocess: resend rows with attempts below this")
	retention := fs.Float64("retention", -1, "purge: delete DONE rows at least this old, in seconds")
	if err := fs.Parse(args); err != nil {
		os.Exit(2)
	}
	cfg, err := configFromEnv()
	if err != nil {
		log.Fatalf("relay %s: %v", cmd, err)
	}
	switch cmd {
	case "serve":
		err = runServe(cfg)
	case "resolve":
		err = need("--min-age", *minAge >= 0, func() error { return runResolve(cfg, *minAge) })
	case "reprocess":
		err = need("--max-attempts", *maxAttempts >= 0, func() error { return runReprocess(cfg, *maxAttempts) })
	case "purge":
		err = need("--retention", *retention >= 0, func() error { return runPurge(cfg, *retention) })
	default:
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	if err != nil {
		log.Fatalf("relay %s: %v", cmd, err)
	}
}

// need runs fn when its required flag was given a valid value.
func need(flagName string, given bool, fn func() error) error {
	if !given {
		return fmt.Errorf("%s is required and must not be negative\n%s", flagName, usage)
	}
	return fn()
}
