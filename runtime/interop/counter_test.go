package interop_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// counterRun adds 1, cycles times, from goN Go counters and from peer
// processes (one per entry of peers: its roles, one thread each), all at
// once on one counter; the final value must be the number of adds.
type counterRun struct {
	goN, cycles int
	opts        []runtime.HandleOption
	peers       []counterPeer
	width       int // bytes of the stored value
}

type counterPeer struct {
	start func(t *testing.T, a peerArgs) *peer
	name  string
	roles []string
}

func (r counterRun) run(t *testing.T, srv *zktest.Server) {
	t.Helper()
	ctx := testCtx(t, 3*time.Minute)
	path := testRoot(t)
	var starts []peerStart
	for _, p := range r.peers {
		starts = append(starts, peerStart{peerArgs{zk: srv.Servers(), name: p.name, roles: p.roles, cycles: r.cycles}, p.start})
	}
	var goes []goContender
	for i := range r.goN {
		k := runtime.NewCounter(connect(t, srv), runtime.At(path), r.opts...)
		goes = append(goes, goContender{who: fmt.Sprintf("go%d-c", i), lock: counterSection{k: k}, mode: "r", cycles: r.cycles})
	}
	st, _ := mixed(t, ctx, path, 0, goes, starts)
	s := connect(t, srv)
	got, err := runtime.NewCounter(s, runtime.At(path), r.opts...).Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got != int64(st.total) {
		t.Errorf("counter is %d after %d adds of 1 (%d lost)", got, st.total, int64(st.total)-got)
	}
	data, _, err := s.Conn().Get(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != r.width {
		t.Errorf("counter node holds %d bytes, want %d", len(data), r.width)
	}
	t.Logf("counter %d after %d concurrent adds from %d contenders", got, st.total, len(st.cycles))
}

// Go counters (8 bytes, the default) and Curator DistributedAtomicLong
// threads add concurrently to one counter: nothing is lost.
func TestCuratorCounter(t *testing.T) {
	srv := server(t)
	cur := curator(t)
	counterRun{goN: 3, cycles: 30, width: 8, peers: []counterPeer{{cur.start, "curator", []string{"a", "a", "a"}}}}.run(t, srv)
}

// Go counters with the kazoo layout (4 bytes), kazoo
// Counter(support_curator=True) threads and Curator SharedCount threads add
// concurrently to one counter: nothing is lost.
func TestKazooCounter(t *testing.T) {
	srv := server(t)
	counterRun{goN: 3, cycles: 20, width: 4, opts: []runtime.HandleOption{kazooLayout}, peers: []counterPeer{
		{kazoo(t).start, "kazoo", []string{"c", "c", "c"}},
		{curator(t).start, "curator", []string{"k", "k"}},
	}}.run(t, srv)
}
