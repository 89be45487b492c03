//go:build linux

package runtime_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
)

// A frozen registrant: a real process registers an instance (v1), updates
// it (v2) and is frozen (SIGSTOP) until the server expires its session;
// its registration goes with the session. While it is frozen it is told
// (on its stdin, read once it resumes) to update the instance to v3. When
// resumed (SIGCONT) it registers again on a new session with its current
// data. A watcher in this process records every state of the instance's
// id from a cache (Changes): the frozen session's registration is removed
// before the new session's appears, a session's node never holds data
// that session's process did not write while the session was its own,
// and data never goes back (no v1 after v2, no v2 after v3).
//
// The registrant is the test binary run again as TestServiceFreezeChild.
// It prints "session 0x<id>" for each session it runs on, "registered",
// "updated <zone>" after each Update from stdin, and "done" once its
// stdin closed and its Run ended (deleting its node).

const svcChildEnv = "ZKGEN_SERVICE_CHILD" // "1": run as the registrant

// svcZones are the successive data of the frozen registrant's instance.
var svcZones = map[string]int{"v1": 1, "v2": 2, "v3": 3}

// TestServiceFreezeChild is the registrant of TestServiceFrozenProcess; it
// skips unless run by it.
func TestServiceFreezeChild(t *testing.T) {
	if os.Getenv(svcChildEnv) != "1" {
		t.Skip("the registrant of TestServiceFrozenProcess: runs only as its child")
	}
	ctx, fail, timeout := childStart(t)
	d := runtime.NewServices[svcPayload](runtime.At(os.Getenv(pauseEnvRoot)))
	runCtx, stop := context.WithCancel(ctx)
	supervised := make(chan error, 1)
	go func() {
		supervised <- runtime.Supervise(runCtx, strings.Split(os.Getenv(pauseEnvServers), ","),
			func(ctx context.Context, s *runtime.Session) error {
				fmt.Printf("session 0x%x\n", s.ID())
				return d.Run(ctx, s)
			}, runtime.WithSessionTimeout(timeout))
	}()
	in, err := d.Register(ctx, runtime.ServiceInstance[svcPayload]{Name: "payments", ID: "frozen", Payload: svcPayload{Zone: "v1"}})
	if err != nil {
		fail("register: %v", err)
	}
	fmt.Println("registered")
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		zone, ok := strings.CutPrefix(sc.Text(), "update ")
		if !ok {
			fail("unknown command %q", sc.Text())
		}
		in.Payload.Zone = zone
		if err := d.Update(ctx, in); err != nil {
			fail("update %s: %v", zone, err)
		}
		fmt.Printf("updated %s\n", zone)
	}
	stop()
	<-supervised
	fmt.Println("done")
}

// svcState is one state of an instance as a watcher saw it.
type svcState struct {
	kind  runtime.CacheEventKind
	zone  string
	owner int64
	gap   bool // a gap came before it: changes may have been folded
}

func (s svcState) String() string {
	return fmt.Sprintf("%s %s@0x%x (after gap: %v)", s.kind, s.zone, s.owner, s.gap)
}

// watchInstance records every state of the instance id of service name
// that d's cache shows, until it sees the removal of owner's node
// (wait): it returns the states seen.
func watchInstance(t *testing.T, ctx context.Context, d *services, name, id string) (wait func(owner int64) []svcState) {
	var mu sync.Mutex
	var states []svcState
	removed := map[int64]chan struct{}{}
	removedOf := func(owner int64) chan struct{} {
		if removed[owner] == nil {
			removed[owner] = make(chan struct{})
		}
		return removed[owner]
	}
	ch := d.Cache().Events(ctx) // Changes, with the nodes' owners
	go func() {
		gap := false
		for ev := range ch {
			mu.Lock()
			switch {
			case ev.Kind == runtime.CacheGap:
				gap = true
			case ev.Kind == runtime.CacheSynced:
			case ev.Key == runtime.ServiceKey{Name: name, ID: id}:
				states = append(states, svcState{ev.Kind, ev.Value.Payload.Zone, ev.Stat.EphemeralOwner, gap})
				gap = false
				if ev.Kind == runtime.CacheRemoved {
					close(removedOf(ev.Stat.EphemeralOwner))
				}
			}
			mu.Unlock()
		}
	}()
	return func(owner int64) []svcState {
		t.Helper()
		mu.Lock()
		done := removedOf(owner)
		mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("the watcher never saw the node of 0x%x removed; saw %v", owner, states)
		}
		mu.Lock()
		defer mu.Unlock()
		return append([]svcState(nil), states...)
	}
}

// checkRegistrations checks the states a watcher saw of one id: the data
// never goes back (zones ranks), a node of a session changes owner only
// through its removal (two sessions never show the id at once), and each
// session's node holds only data its process wrote (wrote, by session).
func checkRegistrations(t *testing.T, states []svcState, wrote map[int64][]string) {
	t.Helper()
	rank, present, owner := 0, false, int64(0)
	for i, s := range states {
		if s.kind == runtime.CacheRemoved {
			present = false
			continue
		}
		if r := svcZones[s.zone]; r < rank {
			t.Errorf("state %d: %v, older data after newer (rank %d after %d); states %v", i, s, r, rank, states)
		} else {
			rank = r
		}
		if present && s.owner != owner && !s.gap {
			t.Errorf("state %d: %v while the node of 0x%x was not removed: two registrations of one id; states %v", i, s, owner, states)
		}
		if !slices.Contains(wrote[s.owner], s.zone) {
			t.Errorf("state %d: %v, data the process did not write on session 0x%x (it wrote %v); states %v", i, s, s.owner, wrote[s.owner], states)
		}
		present, owner = true, s.owner
	}
}

// TestServiceFrozenProcess: see the comment above TestServiceFreezeChild
// (past-expiry). within-timeout is the control: frozen for a quarter of
// its session timeout, the registrant keeps its session and its node;
// the update it makes once resumed rewrites that node, with no second
// session and no removal.
func TestServiceFrozenProcess(t *testing.T) {
	t.Run("past-expiry", func(t *testing.T) { serviceFreeze(t, pauseSessionTimeout, 0) })
	t.Run("within-timeout", func(t *testing.T) { serviceFreeze(t, svcFreezeTimeout, svcFreezeTimeout/4) })
}

// svcFreezeTimeout is the registrant's session timeout in within-timeout.
const svcFreezeTimeout = 8 * time.Second

// serviceFreeze freezes the registrant for freeze (0: until the server
// removed its node) with session timeout timeout.
func serviceFreeze(t *testing.T, timeout, freeze time.Duration) {
	srv := server(t)
	ctx := testCtx(t, 2*time.Minute)
	root := testRoot(t)
	w := connect(t, srv.Servers())
	watcher := runtime.NewServices[svcPayload](runtime.At(root))
	wsessions, _ := runServices(t, ctx, watcher, srv.Servers())
	<-wsessions
	if _, err := watcher.Instances(ctx, "payments"); err != nil { // the cache is loaded
		t.Fatal(err)
	}
	wait := watchInstance(t, ctx, watcher, "payments", "frozen")
	path := root + "/payments/frozen"

	c := startChild(t, "TestServiceFreezeChild", []string{"session ", "registered", "updated ", "done", "error "},
		svcChildEnv+"=1", pauseEnvServers+"="+strings.Join(srv.Servers(), ","), pauseEnvRoot+"="+root,
		pauseEnvTimeout+"="+timeout.String(), "ZK_SERVERS="+strings.Join(srv.Servers(), ","))
	first := parseSession(t, c.expect(ctx, "session "))
	c.expect(ctx, "registered")
	command(t, c, "update v2")
	c.expect(ctx, "updated v2")

	c.signal(syscall.SIGSTOP)
	stopped := time.Now()
	if freeze == 0 {
		awaitNode(t, ctx, w, path, "gone with the frozen process's session", func(_ map[string]any, _ int64, exists bool) bool { return !exists })
	} else {
		time.Sleep(freeze) // the fault itself: how long the process is frozen
		if m, owner, ok := nodeOf(t, ctx, w, path); !ok || owner != first || zoneOf(m) != "v2" {
			t.Fatalf("after %v frozen: node %v of 0x%x (exists %v), want v2 of the frozen session 0x%x", freeze, m, owner, ok, first)
		}
	}
	command(t, c, "update v3") // read once it resumes
	c.signal(syscall.SIGCONT)
	frozen := time.Since(stopped)
	second := first
	if freeze == 0 {
		second = parseSession(t, c.expect(ctx, "session "))
	}
	c.expect(ctx, "updated v3")
	// Update returned: v3 is written, on the registrant's current session.
	if m, owner, ok := nodeOf(t, ctx, w, path); !ok || owner != second || zoneOf(m) != "v3" {
		t.Errorf("after Update(v3) returned: node %v of 0x%x (exists %v), want v3 of session 0x%x", m, owner, ok, second)
	}
	if err := c.stdin.Close(); err != nil {
		t.Fatal(err)
	}
	c.expect(ctx, "done")
	if err := c.wait(ctx); err != nil {
		t.Fatalf("registrant: %v\n%s", err, c.output())
	}
	states := wait(second)
	t.Logf("frozen %v; sessions 0x%x, 0x%x; watcher saw %v", frozen.Round(time.Millisecond), first, second, states)
	wrote := map[int64][]string{first: {"v1", "v2"}, second: {"v2", "v3"}}
	if second == first {
		wrote[first] = []string{"v1", "v2", "v3"}
	}
	checkRegistrations(t, states, wrote)
	if n := len(states); n == 0 || states[n-1].kind != runtime.CacheRemoved || states[n-1].owner != second {
		t.Errorf("the watcher's last state is not the removal of the new session's node: %v", states)
	}
}

// parseSession reads a "session 0x<id>" line.
func parseSession(t *testing.T, line string) int64 {
	t.Helper()
	var id int64
	if _, err := fmt.Sscanf(line, "session 0x%x", &id); err != nil {
		t.Fatalf("bad session line %q: %v", line, err)
	}
	return id
}

// command writes a line to the child's stdin.
func command(t *testing.T, c *pauseChild, line string) {
	t.Helper()
	if _, err := fmt.Fprintln(c.stdin, line); err != nil {
		t.Fatalf("to the child: %v\n%s", err, c.output())
	}
}
