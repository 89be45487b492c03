package interop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// The churn both partitioners go through, one change at a time, each once
// the previous one settled: 5 members, 64 partitions.
var partitionChanges = []string{"join", "leave", "expire", "join", "leave", "join"}

const (
	churnPartitions = 64
	churnMembers    = 5
)

// churnStep is what one change cost: partitions released (their ownership
// interrupted), the time until every partition was owned again and
// balanced, and the members that ended in a terminal failure.
type churnStep struct {
	Change   string   `json:"change"`
	Settled  bool     `json:"settled"`
	Seconds  float64  `json:"settled_s"`
	Released int      `json:"released"`
	Failed   []string `json:"failed"`
}

// TestPartitionerChurnVsKazoo runs the same membership churn through
// kazoo's SetPartitioner (time_boundary 1 s, kazoo's default being 30 s;
// testdata/kazoo_partitioner.py) and through runtime.Partitioner, and logs
// what each change cost each (BENCHMARKS-LOG.md has the figures). It checks
// only what is ours: every change settles, and moves fewer partitions than
// there are.
func TestPartitionerChurnVsKazoo(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, 4*time.Minute)
	ours := ourChurn(t, ctx, srv)
	for _, s := range ours {
		if !s.Settled || s.Released >= churnPartitions {
			t.Errorf("zkgen: %+v", s)
		}
	}
	t.Logf("zkgen: %s", churnTable(ours))

	kz := kazoo(t)
	script, err := filepath.Abs(filepath.Join("testdata", "kazoo_partitioner.py"))
	if err != nil {
		t.Fatal(err)
	}
	p := startPeer(t, "kazoo-partitioner", kz.python, "-u", script,
		"zk="+strings.Join(srv.Servers(), ","), "path="+testRoot(t), fmt.Sprint("partitions=", churnPartitions),
		fmt.Sprint("members=", churnMembers), "time_boundary=1", "session_timeout=4", "settle_timeout=30",
		"changes="+strings.Join(partitionChanges, ","))
	if err := p.wait(ctx); err != nil {
		t.Fatal(err)
	}
	var theirs []churnStep
	out := p.out.String()
	if err := json.Unmarshal([]byte(out[strings.Index(out, "["):]), &theirs); err != nil {
		t.Fatalf("kazoo output: %v\n%s", err, out)
	}
	t.Logf("kazoo %s: %s", kz.version, churnTable(theirs))
}

func churnTable(steps []churnStep) string {
	var b strings.Builder
	for _, s := range steps {
		fmt.Fprintf(&b, "\n  %-6s settled=%v in %.3fs, %d partitions released, failed %v", s.Change, s.Settled, s.Seconds, s.Released, s.Failed)
	}
	return b.String()
}

// ourChurn runs partitionChanges through runtime.Partitioner.
func ourChurn(t *testing.T, ctx context.Context, srv *zktest.Server) []churnStep {
	dir := testRoot(t)
	var mu sync.Mutex
	owner := map[int]string{}
	released := 0
	changed := make(chan struct{}, 1)
	type member struct {
		who string
		p   *zktest.Proxy
		s   *runtime.Session
		a   *runtime.Assignment[string]
	}
	var members []*member
	join := func() {
		p := zktest.NewProxy(t, srv.Addr())
		s, err := runtime.Connect(ctx, []string{p.Addr(), p.Addr()}, runtime.WithSessionTimeout(4*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		who := fmt.Sprintf("%x", s.ID())
		note := func(i int, own bool) {
			mu.Lock()
			switch {
			case own:
				owner[i] = who
			case owner[i] == who:
				delete(owner, i)
				released++
			default:
				// An expired member told of its loss after a live member
				// took the partition over (the server ended its session
				// before its client knew: a loaded machine's order).
				released++
			}
			mu.Unlock()
			select {
			case changed <- struct{}{}:
			default:
			}
		}
		a, err := runtime.NewPartitioner(s, runtime.At(dir), churnPartitions, runtime.StringCodec()).Join(ctx, who,
			runtime.WithPartitionHooks(func(i int) { note(i, true) }, func(i int) { note(i, false) }))
		if err != nil {
			t.Fatal(err)
		}
		members = append(members, &member{who: who, p: p, s: s, a: a})
	}
	settled := func() bool {
		mu.Lock()
		defer mu.Unlock()
		count := map[string]int{}
		for _, o := range owner {
			count[o]++
		}
		if len(owner) != churnPartitions || len(count) != len(members) {
			return false
		}
		lo, hi := churnPartitions, 0
		for _, m := range members {
			lo, hi = min(lo, count[m.who]), max(hi, count[m.who])
		}
		return hi-lo <= 1
	}
	settle := func(change string, start time.Time) churnStep {
		for !settled() {
			select {
			case <-changed:
			case <-ctx.Done():
				t.Fatalf("%s: never settled", change)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		st := churnStep{Change: change, Settled: true, Seconds: time.Since(start).Seconds(), Released: released}
		released = 0
		return st
	}
	start := time.Now()
	for range churnMembers {
		join()
	}
	steps := []churnStep{settle("start", start)}
	for _, c := range partitionChanges {
		start := time.Now()
		switch c {
		case "join":
			join()
		case "leave":
			if err := members[0].a.Leave(ctx); err != nil {
				t.Fatal(err)
			}
			members = members[1:]
		case "expire":
			m := members[0]
			members = members[1:]
			m.p.Pause(true)
			creds, _ := m.p.Session(m.s.ID())
			zktest.ExpireSession(t, srv.Servers(), creds.ID, creds.Passwd)
			m.p.Pause(false)
		}
		steps = append(steps, settle(c, start))
	}
	for _, m := range members {
		_ = m.a.Leave(ctx)
	}
	return steps
}
