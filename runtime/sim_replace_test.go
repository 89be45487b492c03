package runtime_test

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest/sim"
)

// A rolling replacement, as on Kubernetes (issue 42): every server of a
// 3-server ensemble leaves in turn and joins again at a new address under
// its name, each away longer than the session timeout, so the session
// must move off every server it is on. A session that knows the servers
// by name (looked up again on each round through the list, with the
// resolver the simulation controls) keeps its session, lock and
// membership; one that knows them by address (looked up once) can reach
// none of them once the last original server has left, and its session
// expires — the fault has teeth.
//
// "by name, seed 25" replays an order of the servers in which "by name"
// failed: the session starts on server 1 and moves to server 2 when
// server 1 leaves. When server 2 leaves in turn, the session gives up on
// its own clock in under a second (35% of the timeout after its last ping
// reply) unless it reconnects first. It tries the rest of its round,
// server 0's address from before it moved (refused), looks the names up
// (server 2's resolves to nothing: its last address stays in the list)
// and tries server 2's address again first (refused). The host list used
// to count three addresses tried since the connection and pause a second
// before the next one, server 0's new address, never tried: the session
// gave up first. Now it pauses only once it has tried every address it
// knows (TestHostsNewAddressesBeforeThePause).
func TestSimRollingReplacement(t *testing.T) {
	t.Run("by name", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) { rollingReplacement(t, true, 0, nil) })
	})
	t.Run("by name, seed 25", func(t *testing.T) {
		on := []string{"127.0.0.2:2181", "127.0.0.2:2181", "127.0.0.3:2181"} // servers 1, 1, 2
		synctest.Test(t, func(t *testing.T) { rollingReplacement(t, true, 25, on) })
	})
	t.Run("by address", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) { rollingReplacement(t, false, 0, nil) })
	})
}

// rollingReplacement replaces the servers of an ensemble under a session
// that knows them by name or by address; seed, unless 0, is the session's
// (runtime.WithRandomSeed: the order it tries the servers in), and on,
// unless nil, the server the seed puts the session on before each leaves.
func rollingReplacement(t *testing.T, byName bool, seed uint64, on []string) {
	defer settleBubble()
	srv := sim.NewEnsemble(3)
	defer srv.Close()
	ctx := context.Background()
	servers := srv.Servers()
	opts := []runtime.Option{runtime.WithDialer(srv.DialContext), runtime.WithSessionTimeout(4 * time.Second),
		runtime.WithLogger(slog.New(slog.DiscardHandler))}
	if seed != 0 {
		opts = append(opts, runtime.WithRandomSeed(seed))
	}
	if byName {
		servers = srv.Hosts()
		opts = append(opts, runtime.WithResolver(srv.LookupHost))
	}
	s, err := runtime.Connect(ctx, servers, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l := runtime.NewLock(s, runtime.At("/l"))
	if err := l.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	g := runtime.NewGroup(s, runtime.At("/g"), runtime.StringCodec())
	m, err := g.Join(ctx, "me")
	if err != nil {
		t.Fatal(err)
	}
	id, token, original := s.ID(), l.Token(), srv.Servers()

	for i := range original {
		if on != nil && s.Conn().Server() != on[i] {
			t.Fatalf("seed %d: on %s before server %d leaves, want %s: the seed no longer gives the order this case replays",
				seed, s.Conn().Server(), i, on[i])
		}
		srv.LeaveServer(i)
		time.Sleep(6 * time.Second) // the pod is away longer than the session timeout (4 s)
		if err := srv.JoinServer(i); err != nil {
			t.Fatal(err)
		}
	}
	for _, a := range srv.Servers() {
		if slices.Contains(original, a) {
			t.Fatalf("servers at %v after the replacement, as before: %v", srv.Servers(), original)
		}
	}
	if !byName {
		select {
		case <-l.Lost():
		case <-time.After(time.Minute):
			t.Fatal("a session that knows its servers by address kept its lock through their replacement")
		}
		if slices.Contains(srv.Sessions(), id) || s.Err() == nil {
			t.Fatalf("session %x lives on (%v) with every address it knew gone", id, s.Err())
		}
		t.Logf("by address: %v", s.Err())
		return
	}
	checkKept(t, s, l, g, m, id, token, original)
}

// checkKept checks that session s (id) kept its lock (token) and its
// membership through the replacement, and is served at a new address.
func checkKept(t *testing.T, s *runtime.Session, l *runtime.Lock, g *runtime.Group[string],
	m *runtime.Membership[string], id int64, token int64, original []string) {
	t.Helper()
	ctx := context.Background()
	members, err := g.Members(ctx) // retried until the session is back
	if err != nil || !slices.Equal(members, []string{"me"}) {
		t.Fatalf("members after the replacement: %v, %v (session: %v)", members, err, s.Err())
	}
	if s.Err() != nil || s.ID() != id || slices.Contains(original, s.Conn().Server()) {
		t.Fatalf("session after the replacement: %x (was %x), err %v, served at %s", s.ID(), id, s.Err(), s.Conn().Server())
	}
	keptThrough(t, "the replacement", l, token, m)
	if _, err := l.Guarded(ctx, &zk.CreateRequest{Path: "/by-lock", Flags: zk.FlagEphemeral, Acl: zk.WorldACL(zk.PermAll)}); err != nil {
		t.Fatalf("write guarded by the lock after the replacement: %v", err)
	}
}
