package runtime_test

import (
	"context"
	"sync"
	"testing"
	"time"
)

// go-zookeeper v1.0.4 races on a reconnection of a session with watches
// (recvLoop writes lastZxid while sendSetWatches reads it); the session
// hides reply zxids from it (zxidGuard), so the field is never written. This test reconnects a session many times
// while requests are in flight and watches are set: under -race (as CI runs
// it) the race detector fails it if the race comes back. Without the guard it
// failed 4 runs of 4.
func TestReconnectNoDataRace(t *testing.T) {
	srv := server(t)
	f := newFaulty(t, srv)
	c := f.s.Conn()
	for _, p := range []string{"/zkgen-test-missing-a", "/zkgen-test-missing-b"} {
		if _, _, _, err := c.ExistsW(p); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				_, _, _ = c.Get("/") // in flight across the cuts
			}
		}()
	}
	defer func() { cancel(); wg.Wait() }()
	deadline := time.Now().Add(time.Minute)
	for i := 0; i < 150; i++ {
		f.p.CutAll()
		// Wait for the reconnection: a request issued now is answered once
		// the session is back.
		for {
			_, _, err := c.Get("/")
			if err == nil {
				break
			}
			// The cut may fail it (connection closed, or reset while
			// writing); the session lives on.
			if f.s.Err() != nil || time.Now().After(deadline) {
				t.Fatalf("cut %d: %v (session: %v)", i, err, f.s.Err())
			}
		}
		if f.s.Err() != nil {
			t.Fatalf("cut %d: session ended: %v", i, f.s.Err())
		}
	}
}
