package zktest_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// client is a go-zookeeper connection whose session events a test can wait
// for.
type client struct {
	*zk.Conn
	events chan zk.Event
}

// testLogger forwards go-zookeeper's log to the test until the test's
// cleanups have run, then drops it (t.Logf after a test ends panics).
type testLogger struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (l *testLogger) Printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.done {
		l.t.Logf("zk: "+format, args...)
	}
}

// connect opens a client to servers and waits until it has a session.
func connect(t testing.TB, servers []string, sessionTimeout time.Duration) *client {
	t.Helper()
	logger := &testLogger{t: t}
	t.Cleanup(func() {
		logger.mu.Lock()
		logger.done = true
		logger.mu.Unlock()
	})
	c := &client{events: make(chan zk.Event, 1024)}
	conn, _, err := zk.Connect(servers, sessionTimeout,
		zk.WithLogger(logger),
		zk.WithEventCallback(func(ev zk.Event) {
			if ev.Type != zk.EventSession {
				return
			}
			select {
			case c.events <- ev:
			default: // a test that stops listening loses nothing it waits for
			}
		}))
	if err != nil {
		t.Fatalf("zk.Connect(%v): %v", servers, err)
	}
	c.Conn = conn
	t.Cleanup(conn.Close)
	c.waitState(t, zk.StateHasSession, 15*time.Second)
	return c
}

// waitState consumes session events until one reports state, failing the
// test at the deadline.
func (c *client) waitState(t testing.TB, state zk.State, timeout time.Duration) {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var seen []string
	for {
		select {
		case ev := <-c.events:
			if ev.State == state {
				return
			}
			seen = append(seen, ev.State.String())
		case <-timer.C:
			t.Fatalf("no %v within %v (saw %s)", state, timeout, strings.Join(seen, ", "))
		}
	}
}

// eventually polls cond every 50ms until it holds, failing at the deadline.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var lastErr error
	for {
		ok, err := cond()
		if ok {
			return
		}
		lastErr = err
		if time.Now().After(deadline) {
			t.Fatalf("%s: not true within %v (last error: %v)", what, timeout, lastErr)
		}
		time.Sleep(50 * time.Millisecond) // polling remote state against a deadline
	}
}

// uniquePath returns a fresh znode path, so tests can share a server
// (including an external one).
func uniquePath(t testing.TB) string {
	return fmt.Sprintf("/zktest-%s-%d", strings.NewReplacer("/", "-", " ", "_").Replace(t.Name()), time.Now().UnixNano())
}

func create(t testing.TB, c *client, path string, data []byte, flags int32) {
	t.Helper()
	if _, err := c.Create(path, data, flags, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create %s: %v", path, err)
	}
}
