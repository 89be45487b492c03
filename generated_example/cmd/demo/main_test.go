package main

import (
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime/zktest"
)

// The demo runs end to end against a real ZooKeeper.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs ZooKeeper")
	}
	srv := zktest.Start(t)
	t.Setenv("ZK_SERVERS", srv.Addr())
	if err := run(3, 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
}
