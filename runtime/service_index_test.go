package runtime_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
)

// instanceIDs returns the ids of ins, in order.
func instanceIDs[T any](ins []runtime.ServiceInstance[T]) []string {
	var out []string
	for _, in := range ins {
		out = append(out, in.ID)
	}
	return out
}

// TestServiceListsByName: the list a provider reads is kept by service:
// a change of another service's instances under the base leaves it as it
// is (the same list, not one built again), a change of its own service's
// gives a new one with the change.
func TestServiceListsByName(t *testing.T) {
	_, ctx, _, d, _ := startServices(t)
	register := func(name, id string) {
		t.Helper()
		if _, err := d.Register(ctx, runtime.ServiceInstance[svcPayload]{Name: name, ID: id}); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Instances(ctx, name); err != nil { // synced
			t.Fatal(err)
		}
	}
	register("web", "a")
	register("web", "b")
	before := runtime.ServiceList(d, "web")
	for _, id := range []string{"x", "y"} {
		register("api", id)
		if err := d.Unregister(ctx, "api", id); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Instances(ctx, "api"); err != nil {
			t.Fatal(err)
		}
	}
	after := runtime.ServiceList(d, "web")
	if len(after) != 2 || &after[0] != &before[0] {
		t.Errorf("after changes of another service, web's list was built again (%v)", instanceIDs(after))
	}
	register("web", "c")
	if got := instanceIDs(runtime.ServiceList(d, "web")); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("after c registered, web's list is %v", got)
	}
	if got := instanceIDs(before); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("a list given out changed: %v", got)
	}
}

// TestServiceFindOnly: a Services made WithFindOnly("web"), run before
// any instance exists, finds web's instances and holds no other
// service's; the finding methods refuse other names; it registers any.
func TestServiceFindOnly(t *testing.T) {
	srv, ctx, root, all, _ := startServices(t)
	d := runtime.NewServices[svcPayload](runtime.At(root), runtime.WithFindOnly("web"))
	runServices(t, ctx, d, srv.Servers())
	if got, err := d.Instances(ctx, "web"); err != nil || len(got) != 0 {
		t.Fatalf("before any registration: %v, %v", got, err)
	}
	for _, in := range []runtime.ServiceInstance[svcPayload]{{Name: "web", ID: "a"}, {Name: "web", ID: "b"}, {Name: "api", ID: "x"}} {
		if _, err := all.Register(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.Register(ctx, runtime.ServiceInstance[svcPayload]{Name: "api", ID: "y"}); err != nil {
		t.Fatal(err)
	}
	got, err := d.Instances(ctx, "web")
	if err != nil || !slices.Equal(instanceIDs(got), []string{"a", "b"}) {
		t.Fatalf("web: %v, %v", instanceIDs(got), err)
	}
	if n := d.Cache().Len(); n != 2 {
		t.Errorf("the cache holds %d instances, want web's 2", n)
	}
	if names, err := d.Names(ctx); err != nil || !slices.Equal(names, []string{"web"}) {
		t.Errorf("Names: %v, %v", names, err)
	}
	if apis, err := all.Instances(ctx, "api"); err != nil || !slices.Equal(instanceIDs(apis), []string{"x", "y"}) {
		t.Errorf("api as the base's Services finds it: %v, %v", instanceIDs(apis), err)
	}
	if _, err := d.Instances(ctx, "api"); !errors.Is(err, runtime.ErrServiceNotMirrored) {
		t.Errorf("Instances(api): %v, want ErrServiceNotMirrored", err)
	}
	if _, err := d.Provider("api", runtime.RoundRobin, time.Hour).Instance(); !errors.Is(err, runtime.ErrServiceNotMirrored) {
		t.Errorf("a provider of api: %v, want ErrServiceNotMirrored", err)
	}
	if in, err := d.Provider("web", runtime.RoundRobin, time.Hour).Instance(); err != nil || in.ID != "a" {
		t.Errorf("a provider of web: %v, %v", in.ID, err)
	}
	if _, open := <-d.Changes(ctx, "api"); open {
		t.Error("Changes(api) sent an event")
	}
}
