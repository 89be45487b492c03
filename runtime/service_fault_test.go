package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// TestServiceEnsembleFailover: on a 3-server ensemble, a registrant holds
// three instances and a reader finds them; the leader is killed. The
// sessions survive (moving to another server if theirs was the leader):
// the nodes keep their owners, no Run ends, the instances stay listed, a
// provider of the reader answers every time it is asked throughout, and
// an Update made right after the kill (while the ensemble elects a
// leader) and one made after the election are both returned by the
// reader's Instances.
func TestServiceEnsembleFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs ZooKeeper")
	}
	ens := zktest.StartEnsemble(t, 3)
	ctx := testCtx(t, 4*time.Minute)
	root := testRoot(t)
	// Sessions that outlive a slow leader election (see TestLockEnsembleFailover).
	long := runtime.WithSessionTimeout(60 * time.Second)
	reg := runtime.NewServices[svcPayload](runtime.At(root))
	regSessions, regRuns := runServices(t, ctx, reg, ens.Servers(), long)
	rs := <-regSessions
	reader := runtime.NewServices[svcPayload](runtime.At(root))
	readerSessions, readerRuns := runServices(t, ctx, reader, ens.Servers(), long)
	rd := <-readerSessions
	insts := map[string]runtime.ServiceInstance[svcPayload]{}
	for _, id := range []string{"a", "b", "c"} {
		in, err := reg.Register(ctx, runtime.ServiceInstance[svcPayload]{Name: "web", ID: id, Payload: svcPayload{Zone: "v1"}})
		if err != nil {
			t.Fatal(err)
		}
		insts[id] = in
	}
	checkZones(t, ctx, reader, "web", map[string]string{"a": "v1", "b": "v1", "c": "v1"})
	stopAsking := askProvider(reader.Provider("web", runtime.RoundRobin, time.Hour))

	leader := ens.Leader()
	if leader < 0 {
		t.Fatal("the ensemble has no leader")
	}
	t.Logf("killing the leader, server %d; registrant on %s, reader on %s", leader, rs.Conn().Server(), rd.Conn().Server())
	if err := ens.Server(leader).Stop(); err != nil {
		t.Fatal(err)
	}
	update := func(id, zone string) {
		in := insts[id]
		in.Payload.Zone = zone
		if err := reg.Update(ctx, in); err != nil {
			t.Fatalf("Update %s: %v", id, err)
		}
	}
	update("a", "v2") // during the election
	if _, err := ens.WaitQuorum(time.Minute); err != nil {
		t.Fatal(err)
	}
	update("b", "v2") // after it
	checkZones(t, ctx, reader, "web", map[string]string{"a": "v2", "b": "v2", "c": "v1"})
	answers, failures := stopAsking()
	t.Logf("after the failover: registrant on %s, reader on %s; the provider answered %d times", rs.Conn().Server(), rd.Conn().Server(), answers)
	if len(failures) != 0 || answers == 0 {
		t.Errorf("the provider failed %d of %d times during the failover: %v", len(failures), answers+len(failures), failures[:min(len(failures), 5)])
	}
	for what, s := range map[string]*runtime.Session{"registrant": rs, "reader": rd} {
		if err := s.Err(); err != nil {
			t.Errorf("the %s's session did not survive: %v", what, err)
		}
	}
	for what, runs := range map[string]<-chan error{"registrant": regRuns, "reader": readerRuns} {
		select {
		case err := <-runs:
			t.Errorf("the %s's Run ended: %v", what, err)
		default:
		}
	}
	snap, err := reader.Cache().Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range snap.Entries {
		if e.Stat.EphemeralOwner != rs.ID() {
			t.Errorf("%s: owner 0x%x, want the registrant's session 0x%x", e.Path, e.Stat.EphemeralOwner, rs.ID())
		}
	}
}

// checkZones checks that d's Instances of name are exactly want (id: zone).
func checkZones(t *testing.T, ctx context.Context, d *services, name string, want map[string]string) {
	t.Helper()
	got, err := d.Instances(ctx, name)
	if err != nil {
		t.Fatalf("Instances: %v", err)
	}
	zones := map[string]string{}
	for _, in := range got {
		zones[in.ID] = in.Payload.Zone
	}
	if fmt.Sprint(zones) != fmt.Sprint(want) {
		t.Fatalf("Instances: %v, want %v", zones, want)
	}
}

// askProvider asks p for an instance every millisecond (a client's
// cadence) until stop, which returns how many answers it gave and the
// errors it returned.
func askProvider(p *runtime.ServiceProvider[svcPayload]) (stop func() (int, []error)) {
	done, finished := make(chan struct{}), make(chan struct{})
	var answers int
	var failures []error
	go func() {
		defer close(finished)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			if _, err := p.Instance(); err != nil {
				failures = append(failures, err)
			} else {
				answers++
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() (int, []error) { close(done); <-finished; return answers, failures }
}

// TestServiceTenThousand: 10,000 instances of one service, registered
// through two Services values (two sessions) at once, are exactly what
// a reader's Instances and provider give; after half of them are
// unregistered the reader gives exactly the other half. A reader whose
// cache is bounded below the instances (WithMaxNodes) stops with
// ErrCacheFull rather than give a partial list.
func TestServiceTenThousand(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, 4*time.Minute)
	root := testRoot(t)
	const n, handles, workers = 10_000, 2, 16
	regs := make([]*services, handles)
	for i := range regs {
		regs[i] = runtime.NewServices[svcPayload](runtime.At(root))
		sessions, _ := runServices(t, ctx, regs[i], srv.Servers())
		<-sessions
	}
	reader := runtime.NewServices[svcPayload](runtime.At(root))
	readerSessions, _ := runServices(t, ctx, reader, srv.Servers())
	<-readerSessions
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("i%05d", i)
	}
	start := time.Now()
	inParallel(t, n, workers, func(i int) error {
		_, err := regs[i%handles].Register(ctx, runtime.ServiceInstance[svcPayload]{Name: "big", ID: ids[i], Port: 1000 + i%1000})
		return err
	})
	registered := time.Since(start)
	checkIDs(t, ctx, reader, "big", ids)

	start = time.Now()
	inParallel(t, n/2, workers, func(i int) error { return regs[(2*i)%handles].Unregister(ctx, "big", ids[2*i]) })
	unregistered := time.Since(start)
	var odd []string
	for i := 1; i < n; i += 2 {
		odd = append(odd, ids[i])
	}
	checkIDs(t, ctx, reader, "big", odd)
	t.Logf("%d registered in %v, %d unregistered in %v", n, registered.Round(time.Millisecond), n/2, unregistered.Round(time.Millisecond))

	small := runtime.NewServices[svcPayload](runtime.At(root), runtime.WithServiceCache(runtime.WithMaxNodes(n/4)))
	ran := make(chan error, 1)
	go func() { ran <- small.Run(ctx, connect(t, srv.Servers())) }()
	if got, err := small.Instances(ctx, "big"); !errors.Is(err, runtime.ErrCacheFull) {
		t.Errorf("Instances with WithMaxNodes(%d) over %d instances: %d, %v; want ErrCacheFull", n/4, len(odd), len(got), err)
	}
	if err := <-ran; !errors.Is(err, runtime.ErrCacheFull) {
		t.Errorf("Run with WithMaxNodes(%d): %v, want ErrCacheFull", n/4, err)
	}
}

// inParallel runs fn(0..n-1) on workers goroutines; the first error
// fails the test.
func inParallel(t *testing.T, n, workers int, fn func(i int) error) {
	t.Helper()
	next := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(i); err != nil {
					errs <- fmt.Errorf("%d: %w", i, err)
					return
				}
			}
		}()
	}
	for i := 0; i < n && len(errs) == 0; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}

// checkIDs checks that d's Instances of name and a provider's Available
// are exactly ids (sorted).
func checkIDs(t *testing.T, ctx context.Context, d *services, name string, ids []string) {
	t.Helper()
	got, err := d.Instances(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	avail, err := d.Provider(name, runtime.Random, 0).Available()
	if err != nil {
		t.Fatal(err)
	}
	for what, list := range map[string][]runtime.ServiceInstance[svcPayload]{"Instances": got, "Available": avail} {
		gotIDs := make([]string, len(list))
		for i, in := range list {
			gotIDs[i] = in.ID
		}
		if !slices.Equal(gotIDs, ids) {
			t.Errorf("%s: %d instances, want %d (first difference at %d)", what, len(gotIDs), len(ids), firstDiff(gotIDs, ids))
		}
	}
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestServiceRetriesAFailedWrite: a registration whose write fails while
// its session lives is written again once the write can succeed, with
// nothing else to wake its keeper. An operator deletes the registration
// after taking the create permission away from its service's node (a
// sibling keeps the node, a container, from going): the keeper's create
// fails (it logs so); the operator gives the permission back, and the
// registration comes back on the same session with its data.
func TestServiceRetriesAFailedWrite(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	root := testRoot(t)
	failed := &logged{substr: "service registration failed", seen: make(chan struct{})}
	d := runtime.NewServices[svcPayload](runtime.At(root))
	sessions, _ := runServices(t, ctx, d, srv.Servers(), runtime.WithLogger(slog.New(failed)))
	s := <-sessions
	in, err := d.Register(ctx, runtime.ServiceInstance[svcPayload]{Name: "payments", Payload: svcPayload{Zone: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	w := connect(t, srv.Servers())
	dir, path := root+"/payments", root+"/payments/"+in.ID
	if _, err := w.CreatePersistent(ctx, dir+"/sibling"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Conn().SetACL(dir, zk.WorldACL(zk.PermRead|zk.PermDelete|zk.PermAdmin), -1); err != nil {
		t.Fatal(err)
	}
	if err := runtime.OpsOf(w).Delete(ctx, path, -1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-failed.seen:
	case <-ctx.Done():
		t.Fatal("the registration's create never failed")
	}
	if _, err := w.Conn().SetACL(dir, zk.WorldACL(zk.PermAll), -1); err != nil {
		t.Fatal(err)
	}
	m := awaitNode(t, ctx, w, path, "written again", func(_ map[string]any, owner int64, exists bool) bool {
		return exists && owner == s.ID()
	})
	if zoneOf(m) != "a" {
		t.Fatalf("came back with %v", m["payload"])
	}
}
