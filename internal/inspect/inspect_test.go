package inspect

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
	"github.com/zkgen/zkgen/spec"
)

// fakeTree is a Lister over a fixed set of paths.
type fakeTree map[string][]string

func (f fakeTree) Children(_ context.Context, p string) ([]string, error) {
	kids, ok := f[p]
	if !ok {
		return nil, fmt.Errorf("children %s: %w", p, zk.ErrNoNode)
	}
	return kids, nil
}

func parse(t *testing.T, src string) *spec.Spec {
	t.Helper()
	s, err := spec.Parse("zkgen.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const testSpec = `version: 1
package: coord
root: /app
resources:
  order_lock: {kind: lock, path: "/locks/orders/{shard:int}"}
  tables:     {kind: rwlock, path: "/locks/tables/{db:string}/{table:string}"}
  flags:      {kind: config, path: /config/flags}
  start:      {kind: barrier, path: /barriers/start}
`

// TestMirrorInstances: the mirror finds a resource's instances in the
// tree, each parameter segment matched by the runtime's rule (an int in
// strconv.Itoa's form, a string of at most runtime.MaxParamLen bytes), in
// inspect's order (ints numerically, strings bytewise), with the literals
// after the last parameter appended; a resource without parameters has
// its path, whether its node exists or not.
func TestMirrorInstances(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs ZooKeeper")
	}
	srv := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sess, err := runtime.Connect(ctx, srv.Servers())
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	long := strings.Repeat("x", runtime.MaxParamLen+1)
	for _, p := range []string{"/app/locks/orders/10", "/app/locks/orders/9", "/app/locks/orders/x", "/app/locks/orders/-1",
		"/app/locks/orders/007", "/app/locks/tables/b", "/app/locks/tables/a/users", "/app/locks/tables/" + long + "/t",
		"/app/runs/r1", "/app/config"} {
		if _, err := sess.CreatePersistent(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	s := parse(t, testSpec+"  runs:       {kind: barrier, path: \"/runs/{id:string}/ready\"}\n")
	m, stop, err := Follow(ctx, sess, s)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range s.Resources {
		ins, err := m.Instances(r)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range ins {
			got = append(got, fmt.Sprint(in.Path, in.Params))
		}
	}
	want := []string{
		"/app/locks/orders/-1[{shard -1}]", "/app/locks/orders/9[{shard 9}]", "/app/locks/orders/10[{shard 10}]",
		"/app/locks/tables/a/users[{db a} {table users}]",
		"/app/config/flags[]", "/app/barriers/start[]", "/app/runs/r1/ready[{id r1}]",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// TestUnknownTakesTheRuntimesRule: a child the generated code could not
// have made (a control character, a name over runtime.MaxParamLen bytes,
// a code point ZooKeeper refuses) is no instance of a string parameter
// (a runtime.Template does not match it: the runtime's tests) and inspect
// reports it as unknown: the same rule as runtime.Path's and
// runtime.Template's (runtime.CheckParam).
func TestUnknownTakesTheRuntimesRule(t *testing.T) {
	s := parse(t, testSpec)
	long := strings.Repeat("x", runtime.MaxParamLen+1)
	bad := []string{"tab\there", "nl\n", "\u0085", long, "\x7f"}
	tree := fakeTree{
		"/app":                 {"locks"},
		"/app/locks":           {"tables"},
		"/app/locks/tables":    append([]string{"ok"}, bad...),
		"/app/locks/tables/ok": {"t"},
	}
	for _, b := range bad {
		tree["/app/locks/tables/"+b] = []string{"t"}
		if runtime.CheckParam(runtime.ParamString, b) == nil {
			t.Fatalf("runtime accepts %.20q", b)
		}
	}
	got, err := Unknown(context.Background(), tree, s)
	if err != nil || len(got) != len(bad) {
		t.Errorf("Unknown: %q, %v; want the %d refused names", got, err, len(bad))
	}
}

func TestParentsAndUnknown(t *testing.T) {
	s := parse(t, testSpec)
	want := []string{"/app", "/app/locks", "/app/locks/orders", "/app/locks/tables", "/app/config", "/app/barriers"}
	if got := Parents(s); !slices.Equal(got, want) {
		t.Errorf("Parents %v, want %v", got, want)
	}
	tree := fakeTree{
		"/app":                 {"locks", "config", "old"},
		"/app/locks":           {"orders", "tables", "misc"},
		"/app/locks/orders":    {"1", "one"},
		"/app/locks/tables":    {"db"},
		"/app/locks/tables/db": {"t", "u"},
		"/app/config":          {"flags", "other"},
	}
	got, err := Unknown(context.Background(), tree, s)
	want = []string{"/app/config/other", "/app/locks/misc", "/app/locks/orders/one", "/app/old"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("Unknown %v, %v; want %v", got, err, want)
	}
}

func TestValueOf(t *testing.T) {
	for _, c := range []struct {
		data []byte
		show string
	}{
		{nil, "(empty)"},
		{[]byte(`{ "a": 1 }`), `{"a":1}`},
		{[]byte("plain text"), `"plain text"`},
		{[]byte("esc\x1b[2J"), "base64:ZXNjG1sySg=="},
		{[]byte{0xff, 0x00}, "base64:/wA="},
		{[]byte(strings.Repeat("x", 200)), `"` + strings.Repeat("x", 76) + "..."},
	} {
		v := valueOf(c.data)
		if got := show(&v); got != c.show {
			t.Errorf("%q: %s, want %s", c.data, got, c.show)
		}
	}
}

func TestText(t *testing.T) {
	taken := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	due := taken.Add(time.Hour)
	snap := &Snapshot{Root: "/app", Taken: taken, Resources: []Resource{
		{Name: "order_lock", Kind: "lock", Path: "/app/locks/orders/7", Lock: &LockState{
			Holders: []Contender{{Node: "/app/locks/orders/7/n-1", Host: "web\t1", PID: 42, Purpose: "reindex", AgeSeconds: 75}},
			Waiters: []Contender{{Node: "/app/locks/orders/7/n-2", AgeSeconds: 3.25}},
		}},
		{Name: "tasks", Kind: "priority_queue", Path: "/app/q", Queue: &QueueState{Depth: 3, OldestAge: 12,
			Oldest: &taken, Priorities: []PriorityDepth{{"urgent", 1}, {"bulk", 2}}}},
		{Name: "reminders", Kind: "delay_queue", Path: "/app/d", Queue: &QueueState{Depth: 2, OldestAge: 5,
			Oldest: &taken, NextDue: &due}},
		{Name: "flags", Kind: "config", Path: "/app/config/flags", Config: &ConfigState{Version: -1}},
		{Name: "broken", Kind: "group", Path: "/app/g", Error: "get /app/g: zk: not authenticated"},
	}}
	var b bytes.Buffer
	if err := Text(&b, snap); err != nil {
		t.Fatal(err)
	}
	want := `NAME        KIND            PATH                    STATE
order_lock  lock            /app/locks/orders/7     held, 1 waiting
              holder        web?1 pid 42 "reindex"  held 1m15s  n-1
              waiter 1      (no owner metadata)     waiting 3.3s  n-2
tasks       priority_queue  /app/q                  3 items (urgent 1, bulk 2), oldest 12s
reminders   delay_queue     /app/d                  2 items, oldest 5s, next due 2026-01-02T04:04:05Z
flags       config          /app/config/flags       absent
broken      group           /app/g                  error: get /app/g: zk: not authenticated
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}
