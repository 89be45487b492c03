package bench

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

var (
	shared    *zktest.Server
	sharedErr error
	seq       atomic.Int64
)

func TestMain(m *testing.M) {
	shared, sharedErr = zktest.StartProcess()
	code := m.Run()
	if shared != nil {
		shared.Close()
	}
	os.Exit(code)
}

// setup returns a proxy to the shared server (for counting) and a fresh path.
func setup(b *testing.B) (*zktest.Proxy, string) {
	b.Helper()
	srv := zktest.Shared(b, shared, sharedErr)
	return zktest.NewProxy(b, srv.Addr()), fmt.Sprintf("/bench/%s-%d", b.Name(), seq.Add(1))
}

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

// session opens a zkgen session through addr.
func session(b *testing.B, addr string) *runtime.Session {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := runtime.Connect(ctx, []string{addr}, runtime.WithSessionTimeout(10*time.Second))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// gozk opens a plain go-zookeeper connection through addr.
func gozk(b *testing.B, addr string) *zk.Conn {
	b.Helper()
	c, ev, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(nopLogger{}), zk.WithLogInfo(false))
	if err != nil {
		b.Fatal(err)
	}
	for e := range ev {
		if e.State == zk.StateHasSession {
			break
		}
	}
	b.Cleanup(c.Close)
	return c
}

// report adds the wire counts per operation.
func report(b *testing.B, p *zktest.Proxy, ops int) {
	c := p.Counts()
	b.ReportMetric(float64(c.Total())/float64(ops), "req/op")
	b.ReportMetric(float64(c.Notifications)/float64(ops), "notify/op")
}
