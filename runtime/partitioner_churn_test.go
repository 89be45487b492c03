package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// partitionReferee follows who owns which partition from the members' own
// reports: a member reports an acquire after its owner node was created
// and a release before the node is deleted (or when it saw its session
// end), so two owners of one partition in the reports would be two owners
// in fact. A member the test kills or expires is declared dead first: its
// ownerships end there (nobody can take its partitions before its session
// is over on the server) and its later reports are void.
type partitionReferee struct {
	mu       sync.Mutex
	owner    []string // per partition: the owning session (hex), "" none
	dead     map[string]bool
	doubles  []string
	acquires int
	changed  chan struct{}
}

func newPartitionReferee(n int) *partitionReferee {
	return &partitionReferee{owner: make([]string, n), dead: map[string]bool{}, changed: make(chan struct{})}
}

func (r *partitionReferee) notify() {
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *partitionReferee) acquired(who string, i int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dead[who] {
		return
	}
	if r.owner[i] != "" {
		r.doubles = append(r.doubles, fmt.Sprintf("partition %d: %s acquired while %s owned it", i, who, r.owner[i]))
	}
	r.owner[i] = who
	r.acquires++
	r.notify()
}

func (r *partitionReferee) released(who string, i int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dead[who] {
		return
	}
	if r.owner[i] != who {
		r.doubles = append(r.doubles, fmt.Sprintf("partition %d: %s released it, owned by %q", i, who, r.owner[i]))
		return
	}
	r.owner[i] = ""
	r.notify()
}

// kill declares who dead before its session is ended.
func (r *partitionReferee) kill(who string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dead[who] = true
	for i, o := range r.owner {
		if o == who {
			r.owner[i] = ""
		}
	}
	r.notify()
}

// balanced reports whether every partition is owned by one of alive, each
// owning ⌊N/M⌋ or ⌈N/M⌉, and returns the channel of the next change.
func (r *partitionReferee) balanced(alive []string) (bool, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, m := len(r.owner), len(alive)
	count := map[string]int{}
	for _, o := range r.owner {
		if !slices.Contains(alive, o) {
			return false, r.changed
		}
		count[o]++
	}
	for _, a := range alive {
		if c := count[a]; c < n/m || c > (n+m-1)/m {
			return false, r.changed
		}
	}
	return true, r.changed
}

// churnMember is one member incarnation: its own connection (through a
// proxy, for faults) and session.
type churnMember struct {
	who string
	p   *zktest.Proxy
	s   *runtime.Session
	a   *runtime.Assignment[member]
}

// planLog records every assignment plan the leader publishes, read by a
// watch from a session of its own.
type planLog struct {
	mu    sync.Mutex
	plans [][]string // per plan: the owner node name of each partition, members first
}

func watchPlans(ctx context.Context, t *testing.T, s *runtime.Session, path string, log *planLog) {
	go func() {
		var last int32 = -1
		for ctx.Err() == nil {
			data, st, w, err := s.Conn().GetW(path)
			if err == zk.ErrNoNode {
				_, _, w, err = s.Conn().ExistsW(path)
			}
			if err != nil {
				return
			}
			if st != nil && st.Version != last && len(data) > 0 {
				last = st.Version
				var p struct {
					Members []string `json:"members"`
					Owner   []int    `json:"owner"`
				}
				if err := json.Unmarshal(data, &p); err != nil {
					t.Errorf("assignment: %v", err)
					return
				}
				row := make([]string, 0, len(p.Owner))
				for _, k := range p.Owner {
					o := ""
					if k >= 0 && k < len(p.Members) {
						o = p.Members[k]
					}
					row = append(row, o)
				}
				log.mu.Lock()
				log.plans = append(log.plans, row)
				log.mu.Unlock()
			}
			select {
			case <-w:
			case <-ctx.Done():
				return
			}
		}
	}()
}

// TestPartitionerChurnReferee: 64 partitions, 5 members joining, leaving,
// killed (process gone: its connection refused), isolated (its traffic
// black-holed: it must see its own session end and report its partitions
// released before the server expires it) and expired by the server, at
// random, for a few dozen changes. The referee sees no moment with two
// owners; each published plan moves at most ⌈N/M⌉+1 partitions per member
// joined or gone; after the churn every partition is owned, balanced,
// within one session timeout (the last kill comes at least a session
// timeout before the churn ends, so no dead session is still pending);
// after everyone leaves nothing is left but the directories.
func TestPartitionerChurnReferee(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, 4*time.Minute)
	root := testRoot(t)
	dir := root + "/shards"
	const n, slots, changes = 64, 5, 36
	timeout := 4 * time.Second
	codec := runtime.JSONCodec[member]()
	ref := newPartitionReferee(n)
	streams := newPartitionReferee(n) // the same, from the Owned streams
	tree := connect(t, srv.Servers())
	plans := &planLog{}
	watchPlans(ctx, t, tree, dir+"/assignment", plans)

	var alive []*churnMember
	seq := 0
	join := func() {
		p := zktest.NewProxy(t, srv.Addr())
		s := connect(t, viaProxy(p), runtime.WithSessionTimeout(timeout))
		who := fmt.Sprintf("%x", s.ID())
		seq++
		a, err := runtime.NewPartitioner(s, runtime.At(dir), n, codec).Join(ctx, member{Host: fmt.Sprint("m", seq)},
			runtime.WithPartitionHooks(func(i int) { ref.acquired(who, i) }, func(i int) { ref.released(who, i) }))
		if err != nil {
			t.Fatalf("Join: %v", err)
		}
		alive = append(alive, &churnMember{who: who, p: p, s: s, a: a})
		go followOwned(a, who, streams)
	}
	for range slots {
		join()
	}
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 7))
	t.Logf("seed %d, %d changes", seed, changes)
	counts := map[string]int{}
	var lastKill time.Time
	for c := 0; c < changes; c++ {
		// Pace the churn: changes come faster and slower than a rebalance.
		time.Sleep(time.Duration(200+rng.IntN(1300)) * time.Millisecond)
		tail := changes-c <= 8 // the last changes: no kill or isolation
		if len(alive) < slots-1 || (len(alive) < slots+1 && rng.IntN(3) == 0) {
			join()
			counts["join"]++
			continue
		}
		k := rng.IntN(len(alive))
		m := alive[k]
		alive = append(alive[:k:k], alive[k+1:]...)
		action := rng.IntN(4)
		if tail && action >= 2 {
			action = rng.IntN(2)
		}
		switch action {
		case 0: // leave
			if err := m.a.Leave(ctx); err != nil {
				t.Fatalf("Leave: %v", err)
			}
			m.s.Close()
			counts["leave"]++
		case 1: // expire
			ref.kill(m.who)
			streams.kill(m.who)
			f := faultyClient{p: m.p, s: m.s}
			f.expire(t, srv)
			counts["expire"]++
		case 2: // kill: its connection is refused from now on
			ref.kill(m.who)
			streams.kill(m.who)
			m.p.Reject(true)
			m.p.CutAll()
			lastKill = time.Now()
			counts["kill"]++
		case 3: // isolate: the member reports its own loss
			m.p.Blackhole(true)
			lastKill = time.Now()
			counts["isolate"]++
		}
	}
	stopped := time.Now()
	t.Logf("churn: %v; last kill or isolation %v before the end", counts, stopped.Sub(lastKill).Round(time.Millisecond))
	whos := func() []string {
		var out []string
		for _, m := range alive {
			out = append(out, m.who)
		}
		return out
	}()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		ok, changed := ref.balanced(whos)
		if ok {
			break
		}
		select {
		case <-changed:
		case <-deadline.C:
			ref.mu.Lock()
			t.Fatalf("not every partition owned and balanced among %v a session timeout after the churn: %v", whos, ref.owner)
		}
	}
	t.Logf("every partition owned, balanced, %v after the churn stopped", time.Since(stopped).Round(time.Millisecond))

	ref.mu.Lock()
	doubles, acquires := slices.Clone(ref.doubles), ref.acquires
	ref.mu.Unlock()
	streams.mu.Lock()
	doubles = append(doubles, streams.doubles...)
	streams.mu.Unlock()
	if len(doubles) > 0 {
		t.Fatalf("%d moments with two owners (or bad reports): %v", len(doubles), doubles)
	}
	checkPlanMoves(t, plans, n)
	t.Logf("%d acquires in all (%d initial): %.1f per change", acquires, n, float64(acquires-n)/changes)

	// The owner nodes agree with the referee.
	for i := 0; i < n; i++ {
		_, st, err := tree.Conn().Get(fmt.Sprintf("%s/owners/p-%d", dir, i))
		if err != nil {
			t.Fatalf("owner node %d: %v", i, err)
		}
		ref.mu.Lock()
		o := ref.owner[i]
		ref.mu.Unlock()
		if got := fmt.Sprintf("%x", st.EphemeralOwner); got != o {
			t.Fatalf("partition %d: owner node's session %s, referee %s", i, got, o)
		}
	}
	for _, m := range alive {
		if err := m.a.Leave(ctx); err != nil {
			t.Fatalf("Leave: %v", err)
		}
	}
	requireTree(t, tree, root, dir, dir+"/members", dir+"/owners")
}

// followOwned reports to ref what a's Owned stream says: the partitions
// each set adds and removes, and when the stream closes, the release of
// the last set's. Between two sets it is busy for up to 30 ms (the
// reader's work), so a member that deleted an owner node before its reader
// had received the set without it would be caught.
func followOwned(a *runtime.Assignment[member], who string, ref *partitionReferee) {
	var last []int
	busy := rand.New(rand.NewPCG(uint64(len(who)), uint64(time.Now().UnixNano())))
	for set := range a.Owned() {
		for _, i := range last {
			if !slices.Contains(set, i) {
				ref.released(who, i)
			}
		}
		for _, i := range set {
			if !slices.Contains(last, i) {
				ref.acquired(who, i)
			}
		}
		last = set
		time.Sleep(time.Duration(busy.IntN(30)) * time.Millisecond)
	}
	for _, i := range last {
		ref.released(who, i)
	}
}

// checkPlanMoves checks each published plan against the one before it:
// it moves at most ⌈N/M⌉+1 partitions per member that joined or went, M
// the smaller member count of the two.
func checkPlanMoves(t *testing.T, log *planLog, n int) {
	t.Helper()
	log.mu.Lock()
	defer log.mu.Unlock()
	var per []float64
	for k := 1; k < len(log.plans); k++ {
		a, b := log.plans[k-1], log.plans[k]
		ma, mb := distinct(a), distinct(b)
		d := len(symDiff(ma, mb))
		moves := 0
		for i := range b {
			if a[i] != "" && a[i] != b[i] {
				moves++
			}
		}
		m := min(len(ma), len(mb))
		if d == 0 || m == 0 {
			continue
		}
		bound := d * ((n+m-1)/m + 1)
		if moves > bound {
			t.Errorf("plan %d: %d moves for %d members in or out (%d -> %d members), bound %d", k, moves, d, len(ma), len(mb), bound)
		}
		per = append(per, float64(moves)/float64(d))
	}
	sort.Float64s(per)
	if len(per) > 0 {
		t.Logf("%d plans; moves per membership change: median %.1f, max %.1f", len(log.plans), per[len(per)/2], per[len(per)-1])
	}
}

func distinct(owners []string) []string {
	var out []string
	for _, o := range owners {
		if o != "" && !slices.Contains(out, o) {
			out = append(out, o)
		}
	}
	return out
}

func symDiff(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			out = append(out, x)
		}
	}
	return out
}
