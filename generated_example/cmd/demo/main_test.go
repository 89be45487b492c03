package main

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// The demo runs end to end against a real ZooKeeper while the server
// expires the session of a worker, then the session of the scheduler: each
// comes back on a new session (coord.Run), the scheduler fails over, and
// every job takes effect exactly once.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs ZooKeeper")
	}
	srv := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const jobs = 30
	var proxies []*zktest.Proxy
	cfg := config{jobs: jobs, work: 20 * time.Millisecond, timeout: 4 * time.Second}
	for range workers {
		p := zktest.NewProxy(t, srv.Addr())
		proxies = append(proxies, p)
		cfg.servers = append(cfg.servers, []string{p.Addr(), p.Addr()})
	}

	var mu sync.Mutex
	sessions := make([][]int64, workers) // each worker's session ids, in order
	leader := -1
	cfg.onSession = func(w int, ev runtime.SessionEvent) {
		mu.Lock()
		sessions[w] = append(sessions[w], ev.ID)
		mu.Unlock()
	}
	cfg.onElected = func(w int) {
		mu.Lock()
		leader = w
		mu.Unlock()
	}
	progress := make(chan int, jobs)
	cfg.onDone = func(n int) { progress <- n }

	// expire makes the server expire worker w's current session; its proxy
	// holds the worker's reconnection meanwhile.
	expire := func(w int) int64 {
		mu.Lock()
		id := sessions[w][len(sessions[w])-1]
		mu.Unlock()
		p := proxies[w]
		p.Pause(true)
		defer p.Pause(false)
		creds, ok := p.Session(id)
		if !ok {
			t.Errorf("proxy of worker %d did not see session 0x%x", w+1, id)
			return id
		}
		zktest.ExpireSession(t, srv.Servers(), creds.ID, creds.Passwd)
		return id
	}
	var out bytes.Buffer
	var outMu sync.Mutex
	res := make(chan error, 1)
	go func() { res <- run(ctx, cfg, &lockedWriter{w: &out, mu: &outMu}) }()

	var expired []int
	for n := range progress {
		if n == 5 || n == 15 {
			mu.Lock()
			w := leader // the scheduler, at the second expiry
			mu.Unlock()
			if n == 5 {
				w = (leader + 1) % workers // a worker that is not the scheduler
			}
			expire(w)
			expired = append(expired, w)
		}
		if n == jobs {
			break
		}
	}
	if err := <-res; err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	outMu.Lock()
	text := out.String()
	outMu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	for _, w := range expired {
		if len(sessions[w]) < 2 {
			t.Errorf("worker %d's session was expired but it never got a new one:\n%s", w+1, text)
		}
	}
	if n := strings.Count(text, "elected scheduler"); n < 2 {
		t.Errorf("%d scheduler elections, want a failover (2 or more):\n%s", n, text)
	}
	if !strings.Contains(text, "done: 30 jobs, each done once (30 done markers)") {
		t.Errorf("no summary, or not every job done once:\n%s", text)
	}
	if n := strings.Count(text, " ran "); n > jobs {
		t.Errorf("%d jobs ran, more than the %d there are:\n%s", n, jobs, text)
	}
}

// lockedWriter serialises writes from the demo and reads by the test.
type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
