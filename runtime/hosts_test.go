package runtime_test

import (
	"context"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// movingName is a resolver the test controls: one host name, whose
// address the test changes.
type movingName struct {
	name string
	mu   sync.Mutex
	ip   string
}

func (m *movingName) moveTo(ip string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ip = ip
}

func (m *movingName) lookupHost(_ context.Context, host string) ([]string, error) {
	if host != m.name {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return []string{m.ip}, nil
}

// A session follows its server to a new address (issue 42). The name it
// was given resolves to proxy A; the session takes a lock and joins a
// group. Then the name resolves to proxy B, in front of the same server on
// another loopback address, and A stops answering: its connections cut,
// new ones refused. The session reconnects through B with no expiry: the
// same session, the lock held with the same token, the member still in
// the group, and a write guarded by each goes through.
func TestResolveServerMoves(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	a := zktest.NewProxy(t, srv.Addr())
	_, port, err := net.SplitHostPort(a.Addr())
	if err != nil {
		t.Fatal(err)
	}
	b, err := zktest.ListenProxyOn(net.JoinHostPort("127.0.0.2", port), srv.Addr())
	if err != nil {
		t.Skipf("the test moves the server to 127.0.0.2: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	dns := &movingName{name: "zk.test", ip: "127.0.0.1"}
	s := connect(t, []string{net.JoinHostPort("zk.test", port)}, runtime.WithResolver(dns.lookupHost))
	dir := testRoot(t)
	l := runtime.NewLock(s, runtime.At(dir+"/lock"))
	if err := l.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	g := runtime.NewGroup(s, runtime.At(dir+"/group"), runtime.StringCodec())
	m, err := g.Join(ctx, "me")
	if err != nil {
		t.Fatal(err)
	}
	id, token := s.ID(), l.Token()

	dns.moveTo("127.0.0.2")
	a.Reject(true)
	a.CutAll()

	members, err := g.Members(ctx) // retried until the session is back
	if err != nil || !slices.Equal(members, []string{"me"}) {
		t.Fatalf("members after the move: %v, %v (session: %v)", members, err, s.Err())
	}
	if _, ok := b.Session(id); !ok || s.Err() != nil || s.ID() != id {
		t.Fatalf("session 0x%x after the move: through B %v, err %v, id 0x%x", id, ok, s.Err(), s.ID())
	}
	keptThrough(t, "the move", l, token, m)
	if _, err := l.Guarded(ctx, &zk.CreateRequest{Path: dir + "/by-lock", Flags: zk.FlagEphemeral, Acl: zk.WorldACL(zk.PermAll)}); err != nil {
		t.Fatalf("write guarded by the lock after the move: %v", err)
	}
	if _, err := m.Guarded(ctx, &zk.CreateRequest{Path: dir + "/by-member", Flags: zk.FlagEphemeral, Acl: zk.WorldACL(zk.PermAll)}); err != nil {
		t.Fatalf("write guarded by the membership after the move: %v", err)
	}
}

// keptThrough fails t unless neither lock l nor membership m was told
// lost through a fault (what), and l is still held with token.
func keptThrough(t *testing.T, what string, l *runtime.Lock, token int64, m *runtime.Membership[string]) {
	t.Helper()
	select {
	case <-l.Lost():
		t.Fatalf("the lock was lost through %s", what)
	case <-m.Lost():
		t.Fatalf("the membership was lost through %s", what)
	default:
	}
	if !l.Held() || l.Token() != token {
		t.Fatalf("lock after %s: held %v, token %d (was %d)", what, l.Held(), l.Token(), token)
	}
}
