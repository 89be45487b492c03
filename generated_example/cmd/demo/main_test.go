package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime/zktest"
)

// The demo runs end to end against a real ZooKeeper: one scheduler is
// elected, every job runs once, and all workers pass every epoch's barrier.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs ZooKeeper")
	}
	srv := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	cfg := config{servers: srv.Servers(), epochs: 2, jobs: 9, work: time.Millisecond}
	if err := run(ctx, cfg, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	text := out.String()
	if n := strings.Count(text, "elected scheduler"); n != 1 {
		t.Errorf("%d schedulers elected, want 1:\n%s", n, text)
	}
	if n := strings.Count(text, " ran "); n != 18 {
		t.Errorf("%d jobs ran, want 18:\n%s", n, text)
	}
	if n := strings.Count(text, "left the epoch"); n != 6 {
		t.Errorf("%d barrier exits, want 6 (3 workers x 2 epochs):\n%s", n, text)
	}
	if !strings.Contains(text, "done: 18 jobs in 2 epochs") {
		t.Errorf("no summary:\n%s", text)
	}
}
