package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

type svcPayload struct {
	Zone   string `json:"zone"`
	Weight int    `json:"weight"`
}

type services = runtime.Services[svcPayload]

// runServices runs d under Supervise on servers until the test ends; each
// session it runs on is sent on the returned channel, and each Run's
// error on runs. Sessions time out after 10s unless opts say otherwise.
func runServices(t *testing.T, ctx context.Context, d *services, servers []string, opts ...runtime.Option) (sessions <-chan *runtime.Session, runs <-chan error) {
	t.Helper()
	ss, rs := make(chan *runtime.Session, 8), make(chan error, 8)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = runtime.Supervise(ctx, servers, func(ctx context.Context, s *runtime.Session) error {
			ss <- s
			err := d.Run(ctx, s)
			rs <- err
			return err
		}, append([]runtime.Option{runtime.WithSessionTimeout(10 * time.Second)}, opts...)...)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return ss, rs
}

// startServices runs a Services of a new root on the shared server, and
// returns once its first session runs.
func startServices(t *testing.T) (*zktest.Server, context.Context, string, *services, *runtime.Session) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	root := testRoot(t)
	d := runtime.NewServices[svcPayload](runtime.At(root))
	sessions, _ := runServices(t, ctx, d, srv.Servers())
	return srv, ctx, root, d, <-sessions
}

// nodeOf reads an instance's node: its decoded JSON and owner.
func nodeOf(t *testing.T, ctx context.Context, s *runtime.Session, path string) (map[string]any, int64, bool) {
	t.Helper()
	data, st, err := runtime.OpsOf(s).Get(ctx, path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, 0, false
	}
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v in %s", path, err, data)
	}
	return m, st.EphemeralOwner, true
}

// awaitNode waits (by watch) until path satisfies ok, and returns it.
func awaitNode(t *testing.T, ctx context.Context, s *runtime.Session, path string, what string, ok func(m map[string]any, owner int64, exists bool) bool) map[string]any {
	t.Helper()
	for {
		_, _, w, err := runtime.OpsOf(s).ExistsW(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		m, owner, exists := nodeOf(t, ctx, s, path)
		if ok(m, owner, exists) {
			return m
		}
		select {
		case <-w:
		case <-ctx.Done():
			t.Fatalf("%s: never %s (last %v, owner 0x%x)", path, what, m, owner)
		}
	}
}

func zoneOf(m map[string]any) string {
	p, _ := m["payload"].(map[string]any)
	z, _ := p["zone"].(string)
	return z
}

// Register, find, update and unregister, on one session: the node is
// <base>/<name>/<id> in Curator's JSON, Instances reads what was written
// before the call, Unregister deletes the node.
func TestServiceRegisterFindUpdate(t *testing.T) {
	srv, ctx, root, d, _ := startServices(t)
	in, err := d.Register(ctx, runtime.ServiceInstance[svcPayload]{Name: "payments", Address: "10.0.0.1", Port: 8080,
		Payload: svcPayload{Zone: "a", Weight: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if in.ID == "" || in.Registered.IsZero() || in.Type != runtime.ServiceDynamic {
		t.Fatalf("registered %+v: want an id, a time and DYNAMIC", in)
	}
	w := connect(t, srv.Servers())
	m, owner, ok := nodeOf(t, ctx, w, root+"/payments/"+in.ID)
	if !ok || owner == 0 || m["name"] != "payments" || m["id"] != in.ID || m["address"] != "10.0.0.1" ||
		m["port"] != 8080.0 || m["sslPort"] != nil || m["serviceType"] != "DYNAMIC" || m["enabled"] != true ||
		m["registrationTimeUTC"] != float64(in.Registered.UnixMilli()) || zoneOf(m) != "a" {
		t.Fatalf("node %v (ephemeral owner 0x%x), want Curator's JSON of %+v", m, owner, in)
	}
	got, err := d.Instances(ctx, "payments")
	if err != nil || len(got) != 1 || got[0].ID != in.ID || got[0].Payload != in.Payload || !got[0].Registered.Equal(in.Registered) {
		t.Fatalf("Instances: %+v, %v; want [%+v]", got, err, in)
	}
	in.Payload.Zone = "b"
	if err := d.Update(ctx, in); err != nil {
		t.Fatal(err)
	}
	if got, err := d.Instances(ctx, "payments"); err != nil || len(got) != 1 || got[0].Payload.Zone != "b" {
		t.Fatalf("after Update: %+v, %v", got, err)
	}
	if err := d.Unregister(ctx, "payments", in.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := nodeOf(t, ctx, w, root+"/payments/"+in.ID); ok {
		t.Fatal("node left after Unregister")
	}
	if got, err := d.Instances(ctx, "payments"); err != nil || len(got) != 0 {
		t.Fatalf("after Unregister: %+v, %v", got, err)
	}
	if err := d.Update(ctx, in); !errors.Is(err, runtime.ErrNotRegistered) {
		t.Fatalf("Update after Unregister: %v", err)
	}
}

// TestServiceExpiryRegistersCurrentData (CURATOR-146/181): after a
// session expiry the instance is registered again on the new session
// with its current data: that of the last Update, including an Update
// made while no session could reach the server.
func TestServiceExpiryRegistersCurrentData(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	root := testRoot(t)
	p := zktest.NewProxy(t, srv.Addr())
	d := runtime.NewServices[svcPayload](runtime.At(root))
	sessions, runs := runServices(t, ctx, d, viaProxy(p))
	first := <-sessions
	in, err := d.Register(ctx, runtime.ServiceInstance[svcPayload]{Name: "payments", Payload: svcPayload{Zone: "v1"}})
	if err != nil {
		t.Fatal(err)
	}
	in.Payload.Zone = "v2"
	if err := d.Update(ctx, in); err != nil {
		t.Fatal(err)
	}
	p.Pause(true)
	creds, ok := p.Session(first.ID())
	if !ok {
		t.Fatal("proxy did not see the session")
	}
	zktest.ExpireSession(t, srv.Servers(), creds.ID, creds.Passwd)
	if err := <-runs; !errors.Is(err, runtime.ErrSessionExpired) {
		t.Fatalf("Run on the expired session: %v", err)
	}
	in.Payload.Zone = "v3"
	updated := make(chan error, 1)
	go func() { updated <- d.Update(ctx, in) }() // no session can write it now
	w := connect(t, srv.Servers())
	path := root + "/payments/" + in.ID
	awaitNode(t, ctx, w, path, "gone with the session", func(_ map[string]any, _ int64, exists bool) bool { return !exists })
	p.Pause(false)
	second := <-sessions
	m := awaitNode(t, ctx, w, path, "registered on the new session", func(_ map[string]any, owner int64, exists bool) bool {
		return exists && owner == second.ID()
	})
	if zoneOf(m) != "v3" {
		t.Fatalf("registered again with %v, want the current payload v3", m["payload"])
	}
	if err := <-updated; err != nil {
		t.Fatalf("Update made with no session: %v", err)
	}
}

// TestServiceOperatorDeleteComesBack: an operator deletes a registration
// while its session lives; it is created again, with its data.
func TestServiceOperatorDeleteComesBack(t *testing.T) {
	srv, ctx, root, d, s := startServices(t)
	in, err := d.Register(ctx, runtime.ServiceInstance[svcPayload]{Name: "payments", Payload: svcPayload{Zone: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	w := connect(t, srv.Servers())
	path := root + "/payments/" + in.ID
	for i := range 3 {
		if err := runtime.OpsOf(w).Delete(ctx, path, -1); err != nil {
			t.Fatalf("delete %d: %v", i, err)
		}
		m := awaitNode(t, ctx, w, path, "back", func(_ map[string]any, owner int64, exists bool) bool {
			return exists && owner == s.ID()
		})
		if zoneOf(m) != "a" {
			t.Fatalf("came back with %v", m["payload"])
		}
	}
}

// TestServiceWaitsForAnotherSessionsNode: a node with the registration's
// id that another session holds (a frozen process's, not yet expired) is
// not overwritten nor deleted: the registration waits for it to go, so
// no one sees the other session's node with our data, then registers.
func TestServiceWaitsForAnotherSessionsNode(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	root := testRoot(t)
	old := connect(t, srv.Servers())
	path := root + "/payments/fixed-id"
	if _, err := old.CreatePersistent(ctx, root+"/payments"); err != nil {
		t.Fatal(err)
	}
	if _, err := runtime.OpsOf(old).Create(path, []byte(`{"name":"payments","id":"fixed-id","payload":{"zone":"old"}}`), zk.FlagEphemeral, nil); err != nil {
		t.Fatal(err)
	}
	d := runtime.NewServices[svcPayload](runtime.At(root))
	sessions, _ := runServices(t, ctx, d, srv.Servers())
	s := <-sessions
	registered := make(chan error, 1)
	go func() {
		_, err := d.Register(ctx, runtime.ServiceInstance[svcPayload]{Name: "payments", ID: "fixed-id", Payload: svcPayload{Zone: "new"}})
		registered <- err
	}()
	waitWatchers(t, srv, path, 1) // the registration read the node and watches it
	if got, err := d.Instances(ctx, "payments"); err != nil || len(got) != 1 || got[0].Payload.Zone != "old" {
		t.Fatalf("while the old node lives: %+v, %v", got, err)
	}
	select {
	case err := <-registered:
		t.Fatalf("Register returned %v while another session holds the id", err)
	default:
	}
	if m, owner, _ := nodeOf(t, ctx, old, path); owner != old.ID() || zoneOf(m) != "old" {
		t.Fatalf("the other session's node was changed: %v, owner 0x%x", m, owner)
	}
	old.Close() // its session ends: the node goes
	if err := <-registered; err != nil {
		t.Fatal(err)
	}
	if m, owner, _ := nodeOf(t, ctx, connect(t, srv.Servers()), path); owner != s.ID() || zoneOf(m) != "new" {
		t.Fatalf("after the old node went: %v, owner 0x%x", m, owner)
	}
}

// Providers: round-robin goes through the instances in id order, sticky
// keeps one until it is reported down, down instances and disabled ones
// are not given, and with none left ErrNoInstance.
func TestServiceProvider(t *testing.T) {
	_, ctx, _, d, _ := startServices(t)
	for _, id := range []string{"a", "b", "c"} {
		if _, err := d.Register(ctx, runtime.ServiceInstance[svcPayload]{Name: "web", ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.Register(ctx, runtime.ServiceInstance[svcPayload]{Name: "web", ID: "d", Disabled: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Instances(ctx, "web"); err != nil { // synced
		t.Fatal(err)
	}
	pick := func(p *runtime.ServiceProvider[svcPayload], n int) []string {
		var ids []string
		for range n {
			in, err := p.Instance()
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, in.ID)
		}
		return ids
	}
	rr := d.Provider("web", runtime.RoundRobin, time.Hour)
	if got := pick(rr, 6); !slices.Equal(got, []string{"a", "b", "c", "a", "b", "c"}) {
		t.Errorf("round-robin gave %v", got)
	}
	st := d.Provider("web", runtime.Sticky, time.Hour)
	first := pick(st, 3)
	if first[0] != first[1] || first[1] != first[2] {
		t.Errorf("sticky gave %v", first)
	}
	st.ReportDown(first[0])
	if next := pick(st, 2); next[0] == first[0] || next[0] != next[1] {
		t.Errorf("sticky after %s was reported down: %v", first[0], next)
	}
	rnd := d.Provider("web", runtime.Random, time.Hour)
	for _, id := range []string{"a", "b", "c"} {
		rnd.ReportDown(id)
	}
	if in, err := rnd.Instance(); !errors.Is(err, runtime.ErrNoInstance) {
		t.Errorf("all down: %+v, %v; want ErrNoInstance", in, err)
	}
}

// A provider's lookup reads the service's list as kept since the cache
// last changed: with nothing reported down it allocates nothing (it does
// not copy the cache), and the list still follows registrations and
// removals.
func TestServiceProviderKeepsItsList(t *testing.T) {
	_, ctx, _, d, _ := startServices(t)
	register := func(id string) {
		t.Helper()
		if _, err := d.Register(ctx, runtime.ServiceInstance[svcPayload]{Name: "web", ID: id}); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Instances(ctx, "web"); err != nil { // synced
			t.Fatal(err)
		}
	}
	register("a")
	register("b")
	p := d.Provider("web", runtime.RoundRobin, time.Hour)
	if _, err := p.Instance(); err != nil {
		t.Fatal(err)
	}
	if allocs := testing.AllocsPerRun(100, func() { _, _ = p.Instance() }); allocs != 0 {
		t.Errorf("a lookup allocates %v times, want 0", allocs)
	}
	ids := func() []string {
		t.Helper()
		all, err := p.Available()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, in := range all {
			out = append(out, in.ID)
		}
		return out
	}
	register("c")
	if got := ids(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("after c registered, the provider gives %v", got)
	}
	if err := d.Unregister(ctx, "web", "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Instances(ctx, "web"); err != nil {
		t.Fatal(err)
	}
	if got := ids(); !slices.Equal(got, []string{"b", "c"}) {
		t.Errorf("after a unregistered, the provider gives %v", got)
	}
}

// Changes streams a service's instances coming and going, not another
// service's.
func TestServiceChanges(t *testing.T) {
	_, ctx, _, d, _ := startServices(t)
	ch := d.Changes(ctx, "web")
	var got []string
	next := func(kind runtime.CacheEventKind) {
		for ev := range ch {
			switch ev.Kind {
			case runtime.CacheAdded, runtime.CacheRemoved, runtime.CacheChanged:
				got = append(got, ev.Kind.String()+" "+ev.Instance.Name+"/"+ev.Instance.ID)
			}
			if ev.Kind == kind {
				return
			}
		}
		t.Fatalf("stream closed after %q", got)
	}
	if _, err := d.Register(ctx, runtime.ServiceInstance[svcPayload]{Name: "other", ID: "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Register(ctx, runtime.ServiceInstance[svcPayload]{Name: "web", ID: "a"}); err != nil {
		t.Fatal(err)
	}
	next(runtime.CacheAdded)
	if err := d.Unregister(ctx, "web", "a"); err != nil {
		t.Fatal(err)
	}
	next(runtime.CacheRemoved)
	if want := []string{"added web/a", "removed web/a"}; !slices.Equal(got, want) {
		t.Errorf("changes %q, want %q", got, want)
	}
}

// An instance another library wrote in Curator's JSON (Jackson's form:
// the payload's class inside it, null ports, a uriSpec, enabled false)
// is read, typed.
func TestServiceReadsCuratorJSON(t *testing.T) {
	_, ctx, root, d, s := startServices(t)
	if _, err := s.CreatePersistent(ctx, root+"/payments"); err != nil {
		t.Fatal(err)
	}
	data := `{"name":"payments","id":"j1","address":"10.0.0.2","port":null,"sslPort":8443,` +
		`"payload":{"@class":"com.example.Payments","zone":"eu","weight":3},"registrationTimeUTC":1700000000000,` +
		`"serviceType":"DYNAMIC","uriSpec":{"parts":[{"value":"scheme","variable":true},{"value":"://","variable":false}]},"enabled":false}`
	if _, err := runtime.OpsOf(s).Create(root+"/payments/j1", []byte(data), 0, nil); err != nil {
		t.Fatal(err)
	}
	got, err := d.Instances(ctx, "payments")
	if err != nil || len(got) != 1 {
		t.Fatalf("Instances: %+v, %v", got, err)
	}
	in := got[0]
	want := []runtime.URIPart{{Value: "scheme", Variable: true}, {Value: "://"}}
	if in.ID != "j1" || in.Address != "10.0.0.2" || in.Port != 0 || in.SSLPort != 8443 || in.Payload != (svcPayload{"eu", 3}) ||
		in.Registered.UnixMilli() != 1700000000000 || in.Type != runtime.ServiceDynamic || !slices.Equal(in.URISpec, want) || !in.Disabled {
		t.Fatalf("read %+v", in)
	}
}

// When Run's ctx ends while its session lives, Run deletes the nodes of
// its registrations before it returns nil.
func TestServiceRunEndDeletes(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	root := testRoot(t)
	s := connect(t, srv.Servers())
	d := runtime.NewServices[svcPayload](runtime.At(root))
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- d.Run(runCtx, s) }()
	in, err := d.Register(ctx, runtime.ServiceInstance[svcPayload]{Name: "payments"})
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if err := <-ran; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if _, _, ok := nodeOf(t, ctx, s, root+"/payments/"+in.ID); ok {
		t.Fatal("the registration's node outlived Run on a live session")
	}
}
