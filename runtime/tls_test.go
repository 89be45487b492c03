package runtime_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// One ZooKeeper with a TLS client port that requires client certificates,
// started by the first test that needs it.
var (
	tlsOnce   sync.Once
	tlsSrv    *zktest.Server
	tlsCerts  *zktest.TLSCerts
	tlsSrvErr error
	tlsDir    string
)

func makeTempDir() (string, error) { return os.MkdirTemp("", "zkgen-tls-") }

// closeTLSServer stops the TLS server and removes its certificates (from
// TestMain).
func closeTLSServer() {
	if tlsSrv != nil {
		tlsSrv.Close()
	}
	if tlsDir != "" {
		os.RemoveAll(tlsDir)
	}
}

// tlsServer returns the shared TLS server and its certificates.
func tlsServer(t *testing.T) (*zktest.Server, *zktest.TLSCerts) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs ZooKeeper")
	}
	tlsOnce.Do(func() {
		dir, err := makeTempDir()
		if err != nil {
			tlsSrvErr = err
			return
		}
		tlsDir = dir
		if tlsCerts, tlsSrvErr = zktest.NewTLSCerts(dir); tlsSrvErr != nil {
			return
		}
		tlsSrv, tlsSrvErr = zktest.StartProcess(zktest.WithTLS(tlsCerts, zktest.ClientAuthNeed))
		if tlsSrvErr == nil && tlsSrv.External() {
			tlsSrvErr = errors.New("TLS tests need a local ZooKeeper (" + zktest.EnvServers + " is set)")
		}
	})
	if tlsSrvErr != nil && strings.Contains(tlsSrvErr.Error(), zktest.EnvServers) {
		t.Skip(tlsSrvErr)
	}
	return zktest.Shared(t, tlsSrv, tlsSrvErr), tlsCerts
}

// tlsConnect opens a session over TLS with cfg, closed at the end of the
// test.
func tlsConnect(t *testing.T, servers []string, cfg *tls.Config, opts ...runtime.Option) *runtime.Session {
	t.Helper()
	return connect(t, servers, append([]runtime.Option{runtime.WithTLS(cfg)}, opts...)...)
}

// Every recipe family works on a session that speaks TLS (with a client
// certificate) to the TLS client port.
func TestTLSRecipeFamilies(t *testing.T) {
	srv, certs := tlsServer(t)
	s := tlsConnect(t, srv.TLSServers(), certs.ClientConfig())
	root := runtime.At(testRoot(t))
	families := []struct {
		name string
		run  func(ctx context.Context, p runtime.Path) error
	}{
		{"lock", func(ctx context.Context, p runtime.Path) error {
			l := runtime.NewLock(s, p)
			if err := l.Lock(ctx); err != nil {
				return err
			}
			return l.Unlock(ctx)
		}},
		{"rwlock", func(ctx context.Context, p runtime.Path) error {
			rw := runtime.NewRWLock(s, p)
			r, w := rw.Read(), rw.Write()
			if err := r.Lock(ctx); err != nil {
				return err
			}
			if err := r.Unlock(ctx); err != nil {
				return err
			}
			if err := w.Lock(ctx); err != nil {
				return err
			}
			return w.Unlock(ctx)
		}},
		{"semaphore", func(ctx context.Context, p runtime.Path) error {
			le, err := runtime.NewSemaphore(s, p, 2).Acquire(ctx)
			if err != nil {
				return err
			}
			return le.Release(ctx)
		}},
		{"queue", func(ctx context.Context, p runtime.Path) error {
			q := runtime.NewQueue(s, p, runtime.StringCodec())
			return putTake(ctx, q.Put, q.Take)
		}},
		{"ack queue", func(ctx context.Context, p runtime.Path) error {
			q := runtime.NewAckQueue(s, p, runtime.StringCodec())
			if err := q.Put(ctx, "x"); err != nil {
				return err
			}
			d, err := q.Take(ctx)
			if err != nil {
				return err
			}
			if d.Value != "x" {
				return errors.New("took " + d.Value)
			}
			return d.Ack(ctx)
		}},
		{"priority queue", func(ctx context.Context, p runtime.Path) error {
			q := runtime.NewPriorityQueue(s, p, runtime.StringCodec(), 2)
			return putTake(ctx, func(ctx context.Context, v string) error { return q.Put(ctx, 1, v) }, q.Take)
		}},
		{"barrier", func(ctx context.Context, p runtime.Path) error {
			b := runtime.NewBarrier(s, p)
			if err := b.Raise(ctx); err != nil {
				return err
			}
			waited := make(chan error, 1)
			go func() { waited <- b.Wait(ctx) }()
			if err := b.Lower(ctx); err != nil {
				return err
			}
			return <-waited
		}},
		{"double barrier", func(ctx context.Context, p runtime.Path) error {
			d := runtime.NewDoubleBarrier(s, p, 1)
			if err := d.Enter(ctx); err != nil {
				return err
			}
			return d.Leave(ctx)
		}},
		{"election", func(ctx context.Context, p runtime.Path) error {
			l, err := runtime.NewElection(s, p, runtime.StringCodec()).Campaign(ctx, "me")
			if err != nil {
				return err
			}
			return l.Resign(ctx)
		}},
		{"group", func(ctx context.Context, p runtime.Path) error {
			g := runtime.NewGroup(s, p, runtime.StringCodec())
			m, err := g.Join(ctx, "me")
			if err != nil {
				return err
			}
			if ms, err := g.Members(ctx); err != nil || len(ms) != 1 || ms[0] != "me" {
				return errors.Join(err, errors.New("members: "+strings.Join(ms, ",")))
			}
			return m.Leave(ctx)
		}},
		{"config", func(ctx context.Context, p runtime.Path) error {
			c := runtime.NewConfig(s, p, runtime.StringCodec())
			if _, err := c.Set(ctx, "v1"); err != nil {
				return err
			}
			if v, _, err := c.Get(ctx); err != nil || v != "v1" {
				return errors.Join(err, errors.New("got "+v))
			}
			return nil
		}},
		{"counter", func(ctx context.Context, p runtime.Path) error {
			k := runtime.NewCounter(s, p)
			if _, err := k.Add(ctx, 5); err != nil {
				return err
			}
			if v, err := k.Get(ctx); err != nil || v != 5 {
				return errors.Join(err, errors.New("counter not 5"))
			}
			return nil
		}},
		{"two-phase commit", func(ctx context.Context, p runtime.Path) error {
			tx := runtime.NewTwoPhaseCommit(s, p, runtime.StringCodec(), []runtime.Participant{"db"})
			if err := tx.Propose(ctx); err != nil {
				return err
			}
			if err := tx.Join(ctx, "db"); err != nil {
				return err
			}
			if err := tx.Vote(ctx, "db", runtime.Commit); err != nil {
				return err
			}
			if d, err := tx.Outcome(ctx); err != nil || d != runtime.Commit {
				return errors.Join(err, errors.New("not committed"))
			}
			return nil
		}},
	}
	for i, f := range families {
		t.Run(f.name, func(t *testing.T) {
			if err := f.run(testCtx(t, 30*time.Second), root.Int("family", i)); err != nil {
				t.Fatalf("%s over TLS: %v", f.name, err)
			}
		})
	}
}

func putTake(ctx context.Context, put func(context.Context, string) error, take func(context.Context) (string, error)) error {
	if err := put(ctx, "x"); err != nil {
		return err
	}
	v, err := take(ctx)
	if err == nil && v != "x" {
		err = errors.New("took " + v)
	}
	return err
}

// Clients that do not agree with the server on TLS fail at once with
// ErrTLSHandshake (a fatal error), long before their context ends.
func TestTLSMismatchFailsFast(t *testing.T) {
	srv, certs := tlsServer(t)
	wrongName := certs.ClientConfig()
	wrongName.ServerName = "zk.example"
	cases := []struct {
		name    string
		servers []string
		opts    []runtime.Option
		want    string // in the error
	}{
		{"plain client on the TLS port", srv.TLSServers(), nil, "speaks TLS"},
		{"TLS client on a plain Netty port", srv.Servers(), []runtime.Option{runtime.WithTLS(certs.ClientConfig())}, "does not speak TLS"},
		{"TLS client on a plain NIO port", server(t).Servers(), []runtime.Option{runtime.WithTLS(certs.ClientConfig())}, "does not speak TLS"},
		{"untrusted client certificate", srv.TLSServers(), []runtime.Option{runtime.WithTLS(certs.UntrustedClientConfig())}, "bad certificate"},
		{"no client certificate", srv.TLSServers(), []runtime.Option{runtime.WithTLS(certs.ClientConfigNoCert())}, "bad certificate"},
		{"server certificate not trusted", srv.TLSServers(), []runtime.Option{runtime.WithTLS(&tls.Config{RootCAs: x509.NewCertPool()})}, "certificate"},
		{"server certificate for another name", srv.TLSServers(), []runtime.Option{runtime.WithTLS(wrongName)}, "zk.example"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			start := time.Now()
			s, err := runtime.Connect(ctx, c.servers, c.opts...)
			if err == nil {
				s.Close()
				t.Fatal("Connect succeeded")
			}
			t.Logf("after %v: %v", time.Since(start).Round(time.Millisecond), err)
			if !errors.Is(err, runtime.ErrTLSHandshake) || ctx.Err() != nil {
				t.Fatalf("Connect = %v (ctx: %v); want ErrTLSHandshake before the context ends", err, ctx.Err())
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not say %q", err, c.want)
			}
			if cl := runtime.Classify(err); cl != runtime.Fatal {
				t.Errorf("Classify = %v, want fatal", cl)
			}
		})
	}
}

// The server name comes from the host given to Connect, not the address it
// resolved to: "localhost" is verified against the certificate's DNS name.
func TestTLSServerNameFromHost(t *testing.T) {
	srv, certs := tlsServer(t)
	_, port, err := net.SplitHostPort(srv.TLSAddr())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var mu sync.Mutex
	cfg := certs.ClientConfig()
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		mu.Lock()
		names = append(names, cs.ServerName)
		mu.Unlock()
		return nil
	}
	s := tlsConnect(t, []string{net.JoinHostPort("localhost", port)}, cfg)
	if _, _, err := s.Conn().Exists("/"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(names) == 0 || names[0] != "localhost" {
		t.Fatalf("server names verified: %q; want localhost", names)
	}
}

// With ssl.clientAuth=need and the x509 provider, a session's identity is
// its certificate's subject: a node whose ACL names it is open to that
// session and closed to one on the plain port.
func TestTLSx509ACL(t *testing.T) {
	srv, certs := tlsServer(t)
	ctx := testCtx(t, 30*time.Second)
	sec := tlsConnect(t, srv.TLSServers(), certs.ClientConfig())
	plain := connect(t, srv.Servers())
	root := testRoot(t)
	acl := []zk.ACL{{Perms: zk.PermAll, Scheme: "x509", ID: zktest.ClientSubject}}
	// The TLS server is shared by the TLS tests: root's parent exists only
	// if one of them ran before.
	if _, err := sec.Conn().Create(path.Dir(root), nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatal(err)
	}
	if _, err := sec.Conn().Create(root, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	node := root + "/private"
	if _, err := sec.Conn().Create(node, []byte("secret"), 0, acl); err != nil {
		t.Fatalf("create with x509 ACL: %v", err)
	}
	if d, _, err := sec.Conn().Get(node); err != nil || string(d) != "secret" {
		t.Fatalf("owner's read = %q, %v", d, err)
	}
	if _, _, err := plain.Conn().Get(node); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("plain session's read = %v, want no auth", err)
	}
	// A recipe whose nodes carry the ACL works for the owner.
	l := runtime.NewLock(sec, runtime.At(root).Lit("lock"), runtime.WithNodeACL(acl))
	if err := l.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := runtime.NewLock(plain, runtime.At(root).Lit("lock")).TryLock(ctx); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("plain session's TryLock = %v, want no auth", err)
	}
}

// WithDialer and WithTLS compose: TLS runs over the dialer's connections
// (here through a fault proxy), the session survives a cut connection and
// reconnects over TLS through the dialer.
func TestTLSOverDialerSurvivesCut(t *testing.T) {
	srv, certs := tlsServer(t)
	px := zktest.NewProxy(t, srv.TLSAddr())
	var dials atomic.Int64
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		var d net.Dialer
		return d.DialContext(ctx, network, px.Addr())
	}
	s := tlsConnect(t, srv.TLSServers(), certs.ClientConfig(), runtime.WithDialer(dial))
	ctx := testCtx(t, 30*time.Second)
	c := runtime.NewCounter(s, runtime.At(testRoot(t)))
	if _, err := c.Add(ctx, 1); err != nil {
		t.Fatal(err)
	}
	before := px.Accepted()
	px.CutAll()
	if v, err := c.Add(ctx, 1); err != nil && !errors.Is(err, runtime.ErrOutcomeUnknown) {
		t.Fatalf("Add after a cut: %v, %v", v, err)
	}
	if v, err := c.Get(ctx); err != nil || v < 2 {
		t.Fatalf("Get after the cut = %d, %v", v, err)
	}
	if s.Err() != nil {
		t.Fatalf("session ended: %v", s.Err())
	}
	if px.Accepted() <= before || dials.Load() < 2 {
		t.Fatalf("no reconnection through the dialer: proxy accepted %d (was %d), %d dials", px.Accepted(), before, dials.Load())
	}
}

// Supervise passes WithTLS to every Connect, and returns ErrTLSHandshake
// instead of retrying a client the server refuses.
func TestTLSSupervise(t *testing.T) {
	srv, certs := tlsServer(t)
	ctx := testCtx(t, time.Minute)
	var ran atomic.Bool
	err := runtime.Supervise(ctx, srv.TLSServers(), func(ctx context.Context, s *runtime.Session) error {
		_, err := runtime.NewCounter(s, runtime.At(testRoot(t))).Add(ctx, 1)
		ran.Store(err == nil)
		return err
	}, runtime.WithTLS(certs.ClientConfig()))
	if err != nil || !ran.Load() {
		t.Fatalf("Supervise over TLS = %v (work done: %v)", err, ran.Load())
	}
	err = runtime.Supervise(ctx, srv.TLSServers(), func(ctx context.Context, s *runtime.Session) error {
		t.Error("work ran on a refused client")
		return nil
	}, runtime.WithTLS(certs.UntrustedClientConfig()))
	if !errors.Is(err, runtime.ErrTLSHandshake) || ctx.Err() != nil {
		t.Fatalf("Supervise with an untrusted certificate = %v (ctx: %v); want ErrTLSHandshake", err, ctx.Err())
	}
}
