// Command payments is an idempotent payment service in front of a
// non-idempotent payment service provider (PSP). See README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Config is read from the environment.
type Config struct {
	DatabaseURL string
	PSPURL      string
	Port        string
	PSPTimeout  time.Duration
	Lease       time.Duration
	Grace       time.Duration
}

func configFromEnv() (Config, error) {
	c := Config{
		DatabaseURL: os.Getenv("DATABASE_URL"),
		PSPURL:      os.Getenv("PSP_URL"),
		Port:        os.Getenv("PORT"),
	}
	if c.DatabaseURL == "" {
		return c, errors.New("DATABASE_URL is not set")
	}
	if c.PSPURL == "" {
		return c, errors.New("PSP_URL is not set")
	}
	if c.Port == "" {
		c.Port = "8080"
	}
	ms, err := envMillis("PSP_TIMEOUT_MS", 2000)
	if err != nil {
		return c, err
	}
	c.PSPTimeout = ms
	if c.Lease, err = envMillis("LEASE_MS", int(2*c.PSPTimeout/time.Millisecond)+5000); err != nil {
		return c, err
	}
	if c.Grace, err = envMillis("RESEND_GRACE_MS", int(c.PSPTimeout/time.Millisecond)); err != nil {
		return c, err
	}
	if c.Lease <= c.PSPTimeout {
		return c, errors.New("LEASE_MS must be larger than PSP_TIMEOUT_MS")
	}
	return c, nil
}

func envMillis(name string, def int) (time.Duration, error) {
	v := os.Getenv(name)
	if v == "" {
		return time.Duration(def) * time.Millisecond, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || (n == 0 && name != "RESEND_GRACE_MS") {
		return 0, fmt.Errorf("%s must be a positive integer (milliseconds), got %q", name, v)
	}
	return time.Duration(n) * time.Millisecond, nil
}

// newServer connects to the database, creates the table and builds a Server.
func newServer(ctx context.Context, cfg Config, mutant string, logger *slog.Logger) (*Server, func(), error) {
	pcfg, err := pgxpool.ParseConfig(cfg.DatabaseURL)
	if err != nil {
		return nil, nil, fmt.Errorf("invalid DATABASE_URL: %v", err)
	}
	if !strings.Contains(cfg.DatabaseURL, "pool_max_conns") {
		// Two instances, the batch jobs and an operator's sessions stay well
		// under a 32-connection limit (PostgreSQL's CONNECTION LIMIT of a role).
		pcfg.MaxConns = 10
	}
	if pcfg.MinConns < 4 {
		pcfg.MinConns = 4 // keep warm connections: no connect latency on a burst
	}
	if pcfg.ConnConfig.ConnectTimeout == 0 {
		pcfg.ConnConfig.ConnectTimeout = 5 * time.Second
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, nil, fmt.Errorf("database: %v", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, nil, fmt.Errorf("database unreachable: %v", err)
	}
	if err := migrate(pctx, pool); err != nil {
		pool.Close()
		return nil, nil, fmt.Errorf("creating table: %v", err)
	}
	var store Store = &pgStore{pool: pool, checkThenInsert: mutant == MutCheckThenInsert}
	if mutant == MutInMemoryKeys {
		store = newMemStore() // MUTANT in_memory_keys
	}
	s := &Server{
		store:  store,
		psp:    NewPSPClient(cfg.PSPURL, cfg.PSPTimeout),
		ping:   pool.Ping,
		mutant: mutant,
		lease:  cfg.Lease,
		grace:  cfg.Grace,
		log:    logger,
	}
	return s, pool.Close, nil
}

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "payments: "+strings.ReplaceAll(err.Error(), "\n", " "))
		os.Exit(1)
	}
}

func run(args []string, stderr io.Writer) error {
	if len(args) > 0 && batchJobs[args[0]] != nil {
		return runBatch(args[0], args[1:], stderr)
	}
	if len(args) == 0 || args[0] != "serve" {
		return errors.New("usage: payments serve [--mutant NAME] | " + batchUsage)
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	mutant := fs.String("mutant", "", "switch on one deliberate bug (testing only)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *mutant != "" && !knownMutants[*mutant] {
		return fmt.Errorf("unknown mutant %q", *mutant)
	}
	cfg, err := configFromEnv()
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	if *mutant != "" {
		logger = logger.With("mutant", *mutant)
		logger.Warn("MUTANT ENABLED: this instance is deliberately incorrect")
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv, closeDB, err := newServer(ctx, cfg, *mutant, logger)
	if err != nil {
		return err
	}
	defer closeDB()

	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", cfg.Port))
	if err != nil {
		return err
	}
	hs := &http.Server{
		Handler:           srv.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      cfg.Lease + 3*cfg.PSPTimeout + 10*time.Second,
		IdleTimeout:       60 * time.Second,
	}
	logger.Info("listening", "addr", ln.Addr().String(), "psp", cfg.PSPURL,
		"psp_timeout", cfg.PSPTimeout, "lease", cfg.Lease, "resend_grace", cfg.Grace)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), cfg.Lease)
	defer cancel()
	return hs.Shutdown(sctx)
}
