package zktest_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime/zktest"
)

// An ensemble started WithReconfig takes a new server (Join) and lets an
// old one go (Leave), as /zookeeper/config then says; data written before
// is on the new server, and the old one's process is gone. A server taken
// out with Remove keeps serving its clients.
func TestEnsembleReconfig(t *testing.T) {
	start := time.Now()
	e := zktest.StartEnsemble(t, 3, zktest.WithReconfig())
	c := connect(t, e.Servers(), 15*time.Second)
	path := uniquePath(t)
	create(t, c, path, []byte("before"), 0)
	cfg := readConfig(t, c)
	t.Logf("configuration at start:\n%s", cfg)
	for i := range 3 {
		if !strings.Contains(cfg, ";"+e.Server(i).Addr()) {
			t.Fatalf("configuration does not list member %d's client address %s:\n%s", i, e.Server(i).Addr(), cfg)
		}
	}

	joined, err := e.Join()
	if err != nil {
		t.Fatal(err)
	}
	if joined != 3 || e.Size() != 4 || len(e.Servers()) != 4 {
		t.Fatalf("Join = %d; Size %d, Servers %v", joined, e.Size(), e.Servers())
	}
	if cfg := readConfig(t, c); !strings.Contains(cfg, "server.4=") || !strings.Contains(cfg, ";"+e.Server(3).Addr()) {
		t.Fatalf("configuration after Join:\n%s", cfg)
	}
	fresh := connect(t, []string{e.Server(3).Addr()}, 15*time.Second)
	if data, _, err := fresh.Get(path); err != nil || string(data) != "before" {
		t.Fatalf("get on the new member = %q, %v", data, err)
	}

	pid := e.Server(0).PID()
	if err := e.Leave(0); err != nil {
		t.Fatal(err)
	}
	assertGone(t, pid)
	if got := e.Servers(); slices.Contains(got, e.Server(0).Addr()) || len(got) != 3 {
		t.Fatalf("Servers after Leave(0): %v", got)
	}
	if cfg := readConfig(t, fresh); strings.Contains(cfg, "server.1=") {
		t.Fatalf("configuration after Leave(0) still lists it:\n%s", cfg)
	}
	if err := e.Leave(0); err == nil {
		t.Fatal("a second Leave(0) succeeded")
	}

	// A removed server keeps running and serving its clients until it is
	// stopped.
	on1 := connect(t, []string{e.Server(1).Addr()}, 15*time.Second)
	if err := e.Remove(1); err != nil {
		t.Fatal(err)
	}
	if !e.Server(1).Running() || slices.Contains(e.Servers(), e.Server(1).Addr()) {
		t.Fatalf("after Remove(1): running %v, Servers %v", e.Server(1).Running(), e.Servers())
	}
	if data, _, err := on1.Get(path); err != nil || string(data) != "before" {
		t.Fatalf("get on the removed server = %q, %v", data, err)
	}
	if _, err := e.WaitQuorum(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("join and leave took %v in all", time.Since(start))
}

// readConfig reads the dynamic configuration through c, after a sync.
func readConfig(t *testing.T, c *client) string {
	t.Helper()
	if _, err := c.Sync("/zookeeper/config"); err != nil {
		t.Fatalf("sync: %v", err)
	}
	data, _, err := c.Get("/zookeeper/config")
	if err != nil {
		t.Fatalf("get /zookeeper/config: %v", err)
	}
	return string(data)
}
