package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

type member struct {
	Host string `json:"host"`
	Port int    `json:"port"`
}

func hosts(ms []member) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Host
	}
	return out
}

// waitMembers reads the group watch until it delivers exactly want (in
// join order).
func waitMembers(t *testing.T, ctx context.Context, w <-chan runtime.MemberList[member], want ...string) {
	t.Helper()
	var last []string
	for {
		select {
		case ms, ok := <-w:
			if !ok {
				t.Fatal("Watch closed")
			}
			if ms.Err != nil {
				t.Fatalf("watch: %v", ms.Err)
			}
			last = hosts(ms.Members)
			if slices.Equal(last, want) || (len(want) == 0 && len(last) == 0) {
				return
			}
		case <-ctx.Done():
			t.Fatalf("watch never delivered %v (last %v)", want, last)
		}
	}
}

// Members join, leave, and vanish with their session (closed, and expired
// by the server); Watch delivers the full list after each change, and
// Members agrees.
func TestGroupMembership(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	obs := runtime.NewGroup(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[member]())
	w := obs.Watch(ctx)
	w2 := obs.Watch(ctx) // a second watcher on the same session
	waitMembers(t, ctx, w)

	join := func(s *runtime.Session, host string) *runtime.Membership[member] {
		t.Helper()
		m, err := runtime.NewGroup(s, runtime.At(dir), runtime.JSONCodec[member]()).Join(ctx, member{host, 80})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	as := connect(t, srv.Servers())
	a := join(as, "a")
	waitMembers(t, ctx, w, "a")
	bs := connect(t, srv.Servers())
	b := join(bs, "b")
	waitMembers(t, ctx, w, "a", "b")
	p := zktest.NewProxy(t, srv.Addr())
	cs := connect(t, []string{p.Addr()})
	c := join(cs, "c")
	waitMembers(t, ctx, w, "a", "b", "c")
	if ms, err := obs.Members(ctx); err != nil || !slices.Equal(hosts(ms), []string{"a", "b", "c"}) {
		t.Fatalf("Members = %v, %v", ms, err)
	}

	// Leave.
	if err := a.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Leave(ctx); !errors.Is(err, runtime.ErrNotMember) {
		t.Fatalf("second Leave = %v", err)
	}
	waitMembers(t, ctx, w, "b", "c")
	// Session closed.
	bs.Close()
	waitMembers(t, ctx, w, "c")
	<-b.Lost()
	if err := b.Leave(ctx); !errors.Is(err, runtime.ErrMembershipLost) {
		t.Fatalf("Leave after the session closed = %v", err)
	}
	// Session expired by the server.
	creds, _ := p.Session(cs.ID())
	zktest.ExpireSession(t, srv.Servers(), creds.ID, creds.Passwd)
	waitMembers(t, ctx, w)
	<-c.Lost()
	if !errors.Is(context.Cause(c.Context()), runtime.ErrMembershipLost) {
		t.Fatalf("cause %v", context.Cause(c.Context()))
	}
	// The other watcher got to the same final state.
	waitMembers(t, ctx, w2)
	// A handle joins again after leaving; a member handle is not reentrant.
	g := runtime.NewGroup(as, runtime.At(dir), runtime.JSONCodec[member]())
	m, err := g.Join(ctx, member{"a2", 81})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Join(ctx, member{"a3", 82}); !errors.Is(err, runtime.ErrAlreadyHeld) {
		t.Fatalf("second Join = %v", err)
	}
	waitMembers(t, ctx, w, "a2")
	if err := m.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	waitMembers(t, ctx, w)
}

// Many members joining and leaving at once: the watch ends on the exact
// final list.
func TestGroupWatchConverges(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	obs := runtime.NewGroup(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[member]())
	w := obs.Watch(ctx)
	waitMembers(t, ctx, w)
	const n = 8
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		s := connect(t, srv.Servers())
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < 5; k++ {
				m, err := runtime.NewGroup(s, runtime.At(dir), runtime.JSONCodec[member]()).Join(ctx, member{fmt.Sprint(i, "-", k), k})
				if err != nil {
					t.Error(err)
					return
				}
				if k < 4 {
					if err := m.Leave(ctx); err != nil {
						t.Error(err)
					}
				}
			}
		}()
	}
	wg.Wait()
	ms, err := obs.Members(ctx)
	if err != nil || len(ms) != n {
		t.Fatalf("Members = %v, %v", ms, err)
	}
	waitMembers(t, ctx, w, hosts(ms)...)
}

// waitValue reads a config watch until a state satisfies ok; the watch's
// context bounds the wait (the channel closes when it ends).
func waitValue[T any](t *testing.T, w <-chan runtime.Versioned[T], ok func(runtime.Versioned[T]) bool) runtime.Versioned[T] {
	t.Helper()
	for v := range w {
		if ok(v) {
			return v
		}
	}
	t.Fatal("config watch closed before the expected state")
	panic("unreachable")
}

type counterValue struct {
	N    int    `json:"n"`
	Last string `json:"last"`
}

// 8 sessions compare-and-set one config node concurrently: exactly one
// write wins per version, no update is lost, and watchers on other sessions
// end on the final value.
func TestConfigCompareAndSet(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, 2*time.Minute)
	p := runtime.At(dir).Lit("flags")
	codec := runtime.JSONCodec[counterValue]()
	w1 := runtime.NewConfig(connect(t, srv.Servers()), p, codec).Watch(ctx)
	w2 := runtime.NewConfig(connect(t, srv.Servers()), p, codec).Watch(ctx)
	for _, w := range []<-chan runtime.Versioned[counterValue]{w1, w2} {
		if v := <-w; v.Exists || v.Version != runtime.NoVersion {
			t.Fatalf("first state of a missing node: %+v", v)
		}
	}
	first := runtime.NewConfig(connect(t, srv.Servers()), p, codec)
	if _, err := first.CompareAndSet(ctx, counterValue{}, runtime.NoVersion); err != nil {
		t.Fatal(err)
	}
	if _, err := first.CompareAndSet(ctx, counterValue{}, runtime.NoVersion); !errors.Is(err, runtime.ErrVersionConflict) {
		t.Fatalf("create over an existing node = %v", err)
	}

	const clients, wins = 8, 10
	var mu sync.Mutex
	byVersion := map[runtime.Version]int{}
	conflicts := 0
	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		cfg := runtime.NewConfig(connect(t, srv.Servers()), p, codec)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for won := 0; won < wins; {
				v, ver, err := cfg.Get(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				_, err = cfg.CompareAndSet(ctx, counterValue{v.N + 1, fmt.Sprint(i)}, ver)
				mu.Lock()
				switch {
				case err == nil:
					byVersion[ver]++
					won++
				case errors.Is(err, runtime.ErrVersionConflict):
					conflicts++
				default:
					t.Error(err)
					mu.Unlock()
					return
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for ver, n := range byVersion {
		if n != 1 {
			t.Fatalf("%d writers won at version %d", n, ver)
		}
	}
	final, ver, err := first.Get(ctx)
	if err != nil || final.N != clients*wins || ver != clients*wins {
		t.Fatalf("final %+v at version %d, %v; want n=%d (no lost update)", final, ver, err, clients*wins)
	}
	t.Logf("%d wins, %d conflicts", clients*wins, conflicts)
	for _, w := range []<-chan runtime.Versioned[counterValue]{w1, w2} {
		v := waitValue(t, w, func(v runtime.Versioned[counterValue]) bool { return v.Exists && v.Version == ver })
		if v.Value != final {
			t.Fatalf("watcher saw %+v at version %d, Get %+v", v.Value, ver, final)
		}
	}

	// Delete is delivered as a missing node, re-creation as a value again.
	if err := first.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if err := first.Delete(ctx); err != nil {
		t.Fatalf("deleting a missing node: %v", err)
	}
	waitValue(t, w1, func(v runtime.Versioned[counterValue]) bool { return !v.Exists && v.Version == runtime.NoVersion })
	if _, _, err := first.Get(ctx); !errors.Is(err, runtime.ErrNoValue) {
		t.Fatalf("Get after Delete = %v", err)
	}
	if _, err := first.CompareAndSet(ctx, counterValue{N: 1}, 3); !errors.Is(err, runtime.ErrVersionConflict) {
		t.Fatalf("CompareAndSet on a deleted node = %v", err)
	}
	if ver, err := first.Set(ctx, counterValue{N: 7}); err != nil || ver != 0 {
		t.Fatalf("Set on a missing node = %v, %v", ver, err)
	}
	waitValue(t, w1, func(v runtime.Versioned[counterValue]) bool { return v.Exists && v.Value.N == 7 })
}

// With a string parameter, a config is a name service: one node per name.
func TestConfigNameService(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	s := connect(t, srv.Servers())
	name := func(n string) *runtime.Config[string] {
		return runtime.NewConfig(s, runtime.At(dir).Lit("services").Str("name", n), runtime.StringCodec())
	}
	if _, err := name("db").Set(ctx, "10.0.0.1:5432"); err != nil {
		t.Fatal(err)
	}
	if _, err := name("cache").Set(ctx, "10.0.0.2:6379"); err != nil {
		t.Fatal(err)
	}
	if v, ver, err := name("db").Get(ctx); err != nil || v != "10.0.0.1:5432" || ver != 0 {
		t.Fatalf("Get = %q %d %v", v, ver, err)
	}
	if _, err := name("../x").Set(ctx, "x"); !errors.Is(err, runtime.ErrInvalidPath) {
		t.Fatalf("hostile name = %v", err)
	}
	if kids := childrenOf(t, s, dir+"/services"); len(kids) != 2 {
		t.Fatalf("names %v", kids)
	}
}

// 8 sessions add to one counter concurrently: no increment is lost.
func TestCounterAdd(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, 2*time.Minute)
	p := runtime.At(dir).Lit("requests")
	c0 := runtime.NewCounter(connect(t, srv.Servers()), p)
	if v, err := c0.Get(ctx); err != nil || v != 0 {
		t.Fatalf("missing counter = %d, %v", v, err)
	}
	const clients, adds = 8, 25
	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		c := runtime.NewCounter(connect(t, srv.Servers()), p)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < adds; k++ {
				if _, err := c.Add(ctx, 2); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if v, err := c0.Get(ctx); err != nil || v != 2*clients*adds {
		t.Fatalf("counter = %d, %v; want %d", v, err, 2*clients*adds)
	}
	if v, err := c0.Add(ctx, -2*clients*adds-5); err != nil || v != -5 {
		t.Fatalf("Add negative = %d, %v", v, err)
	}
	// The node holds 8 bytes big-endian (Curator's DistributedAtomicLong).
	raw, _, err := connect(t, srv.Servers()).Conn().Get(p.String())
	if err != nil || len(raw) != 8 || raw[0] != 0xff || raw[7] != 0xfb {
		t.Fatalf("stored %x, %v", raw, err)
	}
}
