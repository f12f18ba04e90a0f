package main

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// buildBinary builds the real command once per test run.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "payments")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
}

func TestProcessStartupErrors(t *testing.T) {
	bin := buildBinary(t)
	for name, env := range map[string][]string{
		"no DATABASE_URL": {"PSP_URL=http://127.0.0.1:9"},
		"no PSP_URL":      {"DATABASE_URL=postgresql://postgres@127.0.0.1:1/x?sslmode=disable"},
		"db unreachable":  {"PSP_URL=http://127.0.0.1:9", "DATABASE_URL=postgresql://postgres@127.0.0.1:1/x?sslmode=disable&connect_timeout=2"},
	} {
		cmd := exec.Command(bin, "serve")
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "PORT=" + freePort(t)}, env...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		msg := strings.TrimRight(stderr.String(), "\n")
		t.Logf("%s: exit=%v stderr=%q", name, err, msg)
		if err == nil || strings.Contains(msg, "\n") || msg == "" {
			t.Errorf("%s: want non-zero exit and one line, got %v %q", name, err, msg)
		}
	}
}

// Two real processes of the correct service on one database, 20 concurrent
// requests with one key: exactly one PSP call.
func TestProcessTwoInstancesOnePSPCall(t *testing.T) {
	db := testDB(t)
	bin := buildBinary(t)
	psp := newFakePSP(t)
	psp.delay = 300 * time.Millisecond
	var urls []string
	for i := 0; i < 2; i++ {
		port := freePort(t)
		cmd := exec.Command(bin, "serve")
		cmd.Env = append(os.Environ(), "DATABASE_URL="+db, "PSP_URL="+psp.URL(), "PORT="+port, "PSP_TIMEOUT_MS=1000")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Wait()
			if testing.Verbose() && os.Getenv("TEST_LOG") != "" {
				t.Logf("instance stderr:\n%s", stderr.String())
			}
		})
		u := "http://127.0.0.1:" + port
		deadline := time.Now().Add(15 * time.Second)
		for {
			resp, err := http.Get(u + "/healthz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("instance %d not healthy: %v\n%s", i, err, stderr.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
		urls = append(urls, u)
	}
	key := newKey(t)
	hist := concurrent(t, urls, key, 20)
	posts, _, executed := psp.counts(key)
	t.Logf("two processes: answers %s; PSP POSTs=%d executed=%d", histString(hist), posts, executed)
	if posts != 1 || executed != 1 || hist[201] < 1 || hist[201]+hist[409] != 20 {
		t.Fatalf("want one PSP call and only 201/409 answers")
	}
}
