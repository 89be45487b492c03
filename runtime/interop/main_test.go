// Package interop_test checks that zkgen's locks and the real Apache Curator
// and Python kazoo recipes exclude each other on one lock path.
//
// Every test starts contenders in several languages on one path — Go
// handles of package runtime, Java threads using Curator (testdata/
// CuratorContender.java, compiled with javac once per test binary) and
// Python threads using kazoo (testdata/kazoo_contender.py, run with the
// system python) — and a referee (referee_test.go), a small TCP server on
// 127.0.0.1 that every contender tells when it enters and leaves its
// critical section. The referee records a violation whenever an exclusive
// holder would overlap anyone, or a reader a writer.
//
// Peers come from Debian's packages: libcurator-recipes-java (and a JDK for
// javac) and python3-kazoo. Without them the tests skip, or fail when the CI
// environment variable is true. ZooKeeper itself is started by zktest.
package interop_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// One ZooKeeper for the package; each test works under its own path.
var (
	shared    *zktest.Server
	sharedErr error
	// buildDir holds what is built once per test binary (compiled Java).
	buildDir string
)

func TestMain(m *testing.M) {
	var err error
	buildDir, err = os.MkdirTemp("", "zkgen-interop-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "interop:", err)
		os.Exit(2)
	}
	shared, sharedErr = zktest.StartProcess()
	code := m.Run()
	if shared != nil {
		shared.Close()
	}
	os.RemoveAll(buildDir)
	os.Exit(code)
}

// server returns the shared ZooKeeper, or skips/fails the test without one.
func server(t *testing.T) *zktest.Server {
	t.Helper()
	if testing.Short() {
		t.Skip("interoperability test: needs ZooKeeper and peer libraries")
	}
	return zktest.Shared(t, shared, sharedErr)
}

var rootSeq atomic.Int64

// testRoot returns a lock path no other test uses.
func testRoot(t *testing.T) string {
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	return fmt.Sprintf("/zkgen-interop/%s-%d-%d", name, os.Getpid(), rootSeq.Add(1))
}

// connect opens a session, closed at the end of the test.
func connect(t *testing.T, srv *zktest.Server) *runtime.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := runtime.Connect(ctx, srv.Servers(), runtime.WithSessionTimeout(10*time.Second))
	if err != nil {
		t.Fatalf("connect %v: %v", srv.Servers(), err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// testCtx bounds a test: a stalled contender fails the test with the
// referee's state instead of hanging the suite.
func testCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeoutCause(context.Background(), d,
		fmt.Errorf("%s did not finish within %v (stalled?)", t.Name(), d))
	t.Cleanup(cancel)
	return ctx
}

// children lists dir (ErrNoNode: none).
func children(t *testing.T, s *runtime.Session, dir string) []string {
	t.Helper()
	kids, _, err := s.Conn().Children(dir)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		t.Fatalf("children %s: %v", dir, err)
	}
	return kids
}

// assertEmpty fails unless dir has no children left.
func assertEmpty(t *testing.T, s *runtime.Session, dir string) {
	t.Helper()
	if kids := children(t, s, dir); len(kids) > 0 {
		t.Errorf("%d nodes left under %s: %v", len(kids), dir, kids)
	}
}

// waitChild blocks (child watches, no polling) until dir has a child for
// which match is true, and returns its name.
func waitChild(t *testing.T, ctx context.Context, s *runtime.Session, dir string, what string, match func(string) bool) string {
	t.Helper()
	for {
		kids, _, ch, err := s.Conn().ChildrenW(dir)
		if errors.Is(err, zk.ErrNoNode) {
			var ok bool
			ok, _, ch, err = s.Conn().ExistsW(dir)
			if err == nil && ok {
				continue // created in between: list it
			}
			kids = nil
		}
		if err != nil {
			t.Fatalf("watch %s: %v", dir, err)
		}
		for _, k := range kids {
			if match(k) {
				return k
			}
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("waiting for %s under %s (children %v): %v", what, dir, kids, context.Cause(ctx))
		}
	}
}
