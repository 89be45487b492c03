package spec

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func lit(s string) Segment { return Segment{Literal: s} }

func TestParseExample(t *testing.T) {
	got, err := ParseFile("testdata/example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	str := func(n string) TypeRef { return TypeRef{Name: n} }
	job := &Type{Pos: Pos{7, 3}, Name: "Job", GoName: "Job", Fields: []*Field{
		{Pos: Pos{7, 21}, Name: "name", GoName: "Name", Type: str("string")},
		{Pos: Pos{7, 35}, Name: "attempt", GoName: "Attempt", Type: str("int")},
	}}
	member := &Type{Pos: Pos{8, 3}, Name: "Member", GoName: "Member", Fields: []*Field{
		{Pos: Pos{8, 21}, Name: "host", GoName: "Host", Type: str("string")},
		{Pos: Pos{8, 35}, Name: "port", GoName: "Port", Type: str("int")},
	}}
	flags := &Type{Pos: Pos{9, 3}, Name: "Flags", GoName: "Flags", Fields: []*Field{
		{Pos: Pos{9, 21}, Name: "dark_mode", GoName: "DarkMode", Type: str("bool")},
		{Pos: Pos{9, 38}, Name: "max_batch", GoName: "MaxBatch", Type: str("int")},
	}}
	acl := &ACL{Pos: Pos{5, 6}, Policy: "world_all"}
	root := lit("zkgen-example")
	shard := &Param{Name: "shard", GoName: "shard", Type: "int"}
	table := &Param{Name: "table", GoName: "table", Type: "string"}
	run := &Param{Name: "run", GoName: "run", Type: "string"}
	n := &Param{Name: "n", GoName: "n", Type: "int"}
	id := &Param{Name: "id", GoName: "id", Type: "string"}
	want := &Spec{
		File:           "testdata/example.yaml",
		Version:        1,
		Package:        "coord",
		Output:         "coord/coord_zkgen.go",
		OutputPos:      Pos{3, 9},
		Root:           "/zkgen-example",
		ACL:            acl,
		EmitInterfaces: true,
		Durations:      DurationsString,
		Types:          []*Type{job, member, flags},
		Resources: []*Resource{
			{Pos: Pos{12, 3}, KindPos: Pos{12, 22}, Name: "order_lock", GoName: "OrderLock", Kind: KindLock,
				Path: "/locks/orders/{shard:int}", FullPath: "/zkgen-example/locks/orders/{shard:int}",
				Segments: []Segment{root, lit("locks"), lit("orders"), {Param: shard}}, Params: []*Param{shard},
				ACL: acl, Layout: "curator"},
			{Pos: Pos{13, 3}, KindPos: Pos{13, 22}, Name: "table_lock", GoName: "TableLock", Kind: KindRWLock,
				Path: "/locks/tables/{table:string}", FullPath: "/zkgen-example/locks/tables/{table:string}",
				Segments: []Segment{root, lit("locks"), lit("tables"), {Param: table}}, Params: []*Param{table},
				ACL: acl, Revocable: true, ForceAfter: 5 * time.Second, Layout: "curator"},
			{Pos: Pos{14, 3}, KindPos: Pos{14, 22}, Name: "slots", GoName: "Slots", Kind: KindSemaphore,
				Path: "/semaphores/slots", FullPath: "/zkgen-example/semaphores/slots",
				Segments: []Segment{root, lit("semaphores"), lit("slots")},
				ACL:      acl, Leases: 3, Layout: "curator"},
			{Pos: Pos{15, 3}, KindPos: Pos{15, 22}, Name: "jobs", GoName: "Jobs", Kind: KindQueue,
				Path: "/queues/jobs", FullPath: "/zkgen-example/queues/jobs",
				Segments: []Segment{root, lit("queues"), lit("jobs")},
				ACL:      acl, Item: &TypeRef{Name: "Job", Decl: job}, Delivery: "at_most_once"},
			{Pos: Pos{16, 3}, KindPos: Pos{16, 22}, Name: "tasks", GoName: "Tasks", Kind: KindPriorityQueue,
				Path: "/queues/tasks", FullPath: "/zkgen-example/queues/tasks",
				Segments: []Segment{root, lit("queues"), lit("tasks")},
				ACL:      acl, Item: &TypeRef{Name: "Job", Decl: job}, Delivery: "at_most_once",
				Priorities: []Name{{"urgent", "TasksUrgent"}, {"normal", "TasksNormal"}, {"bulk", "TasksBulk"}}},
			{Pos: Pos{17, 3}, KindPos: Pos{17, 22}, Name: "start", GoName: "Start", Kind: KindBarrier,
				Path: "/barriers/start/{run:string}", FullPath: "/zkgen-example/barriers/start/{run:string}",
				Segments: []Segment{root, lit("barriers"), lit("start"), {Param: run}}, Params: []*Param{run},
				ACL: acl},
			{Pos: Pos{18, 3}, KindPos: Pos{18, 22}, Name: "epoch", GoName: "Epoch", Kind: KindDoubleBarrier,
				Path: "/barriers/epoch/{n:int}", FullPath: "/zkgen-example/barriers/epoch/{n:int}",
				Segments: []Segment{root, lit("barriers"), lit("epoch"), {Param: n}}, Params: []*Param{n},
				ACL: acl, Size: 3},
			{Pos: Pos{19, 3}, KindPos: Pos{19, 22}, Name: "deploy", GoName: "Deploy", Kind: KindTwoPhaseCommit,
				Path: "/tx/deploy/{id:string}", FullPath: "/zkgen-example/tx/deploy/{id:string}",
				Segments: []Segment{root, lit("tx"), lit("deploy"), {Param: id}}, Params: []*Param{id},
				ACL:          acl,
				Participants: []Name{{"database", "DeployDatabase"}, {"cache", "DeployCache"}, {"search", "DeploySearch"}},
				Notify:       "all"},
			{Pos: Pos{20, 3}, KindPos: Pos{20, 22}, Name: "scheduler", GoName: "Scheduler", Kind: KindElection,
				Path: "/election/scheduler", FullPath: "/zkgen-example/election/scheduler",
				Segments: []Segment{root, lit("election"), lit("scheduler")},
				ACL:      acl, Payload: &TypeRef{Name: "Member", Decl: member}, Layout: "curator"},
			{Pos: Pos{21, 3}, KindPos: Pos{21, 22}, Name: "workers", GoName: "Workers", Kind: KindGroup,
				Path: "/groups/workers", FullPath: "/zkgen-example/groups/workers",
				Segments: []Segment{root, lit("groups"), lit("workers")},
				ACL:      acl, Member: &TypeRef{Name: "Member", Decl: member}, Layout: "curator"},
			{Pos: Pos{22, 3}, KindPos: Pos{22, 22}, Name: "flags", GoName: "Flags", Kind: KindConfig,
				Path: "/config/flags", FullPath: "/zkgen-example/config/flags",
				Segments: []Segment{root, lit("config"), lit("flags")},
				ACL:      acl, Value: &TypeRef{Name: "Flags", Decl: flags}},
		},
	}
	if len(got.Resources) != len(want.Resources) {
		t.Fatalf("got %d resources, want %d", len(got.Resources), len(want.Resources))
	}
	for i := range want.Resources {
		if g, w := got.Resources[i], want.Resources[i]; !reflect.DeepEqual(g, w) {
			t.Errorf("resource %d:\ngot  %+v\nwant %+v", i, *g, *w)
		}
	}
	for i := range want.Types {
		if g, w := got.Types[i], want.Types[i]; !reflect.DeepEqual(g, w) {
			t.Errorf("type %d:\ngot  %+v\nwant %+v", i, *g, *w)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("spec differs:\ngot  %+v\nwant %+v", *got, *want)
	}
	// Decl points at the declared type itself, not a copy.
	if got.Resources[3].Item.Decl != got.Types[0] {
		t.Errorf("jobs item Decl does not point to types[0]")
	}
}

// TestParseOptions checks the decoding of what the example does not show.
func TestParseOptions(t *testing.T) {
	in := `version: 1
package: app
root: /
acl: [{digest: "alice:PZkZ8rXnEc7X0ZqBz4Bqk6SYzJE=", perms: rwcda}, {digest: "bob:aGFzaA==", perms: r}]
types:
  Ext: {go_type: "gopkg.in/yaml.v3.Node"}
  Tree: {fields: {kids: "[]Tree", ext: Ext, ttl: duration, at: time, user_id: "[]int", raw: bytes}}
resources:
  user_lock: {kind: lock, path: "/u/{user_id:int}/{http_url:string}", revocable: true, layout: kazoo, acl: creator_all, doc: "Per-user lock."}
  q: {kind: queue, path: /q, item: bytes, delivery: at_least_once}
  tx: {kind: two_phase_commit, path: /tx, participants: [a], payload: Tree, notify: coordinator}
  c: {kind: counter, path: /n/1}
  c2: {kind: counter, path: /n/x, acl: world_read}
  c3: {kind: counter, path: "/m/{id:int}/z"}
  c4: {kind: counter, path: /m/abc}
  plain: {kind: rwlock, path: /rw, revocable: false}
  pay: {kind: service, path: /svc, instance: Tree}
  orders: {kind: service, path: /svc, instance: string, name: orders-v2}
  e: {kind: election, path: /e}
  g: {kind: group, path: /g}
  cfg: {kind: config, path: /cfg}
`
	s, err := Parse("x.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if s.Root != "" || s.Output != "app_zkgen.go" {
		t.Errorf("root %q output %q, want \"\" and app_zkgen.go", s.Root, s.Output)
	}
	wantACL := &ACL{Pos: Pos{4, 6}, Digest: []DigestUser{
		{Pos: Pos{4, 7}, ID: "alice:PZkZ8rXnEc7X0ZqBz4Bqk6SYzJE=", Perms: "rwcda"},
		{Pos: Pos{4, 69}, ID: "bob:aGFzaA==", Perms: "r"},
	}}
	if !reflect.DeepEqual(s.ACL, wantACL) {
		t.Errorf("acl = %+v, want %+v", s.ACL, wantACL)
	}
	ext, tree := s.Types[0], s.Types[1]
	if ext.GoType != "gopkg.in/yaml.v3.Node" || ext.Fields != nil {
		t.Errorf("Ext = %+v", ext)
	}
	wantFields := []string{"Kids []Tree", "Ext Ext", "TTL duration", "At time", "UserID []int", "Raw bytes"}
	for i, f := range tree.Fields {
		typ := f.Type.Name
		if f.Type.Slice {
			typ = "[]" + typ
		}
		if got := f.GoName + " " + typ; i >= len(wantFields) || got != wantFields[i] {
			t.Errorf("field %d = %s", i, got)
		}
	}
	if tree.Fields[0].Type.Decl != tree || tree.Fields[1].Type.Decl != ext || tree.Fields[2].Type.Decl != nil {
		t.Errorf("field type Decls wrong")
	}

	r := s.Resources[0]
	if r.FullPath != "/u/{user_id:int}/{http_url:string}" || r.Params[0].GoName != "userID" || r.Params[1].GoName != "httpURL" {
		t.Errorf("user_lock path = %q params %+v %+v", r.FullPath, *r.Params[0], *r.Params[1])
	}
	if !r.Revocable || r.ForceAfter != 0 || r.Layout != "kazoo" || r.ACL.Policy != "creator_all" || r.Doc != "Per-user lock." {
		t.Errorf("user_lock = %+v", *r)
	}
	if q := s.Resources[1]; q.Item.Name != "bytes" || q.Item.Decl != nil || q.Delivery != "at_least_once" {
		t.Errorf("q = %+v", *q)
	}
	if tx := s.Resources[2]; tx.Payload.Decl != tree || tx.Notify != "coordinator" || tx.Participants[0].GoName != "TxA" {
		t.Errorf("tx = %+v", *tx)
	}
	if c := s.Resources[3]; c.ACL != s.ACL || c.Layout != "curator" || c.Delivery != "" || c.Notify != "" {
		t.Errorf("counter = %+v; want the default ACL and layout and no queue/2pc defaults", *c)
	}
	if s.Resources[4].ACL.Policy != "world_read" {
		t.Errorf("c2 acl = %+v", s.Resources[4].ACL)
	}
	if p := s.Resources[7]; p.Revocable || p.Layout != "curator" {
		t.Errorf("plain = %+v", *p)
	}
	pay, orders := s.Resources[8], s.Resources[9]
	if pay.Instance.Decl != tree || pay.ServiceName != "pay" || pay.Base != "/svc" || pay.FullPath != "/svc/pay" || len(pay.Segments) != 2 {
		t.Errorf("pay = %+v", *pay)
	}
	if orders.Instance.Name != "string" || orders.ServiceName != "orders-v2" || orders.FullPath != "/svc/orders-v2" || orders.Path != "/svc" {
		t.Errorf("orders = %+v", *orders)
	}
	for _, r := range s.Resources[8:] {
		if r.Payload != nil || r.Member != nil || r.Value != nil {
			t.Errorf("%s: optional type set: %+v", r.Name, *r)
		}
	}
}

// TestParseAliases checks that anchors, aliases and merge keys work like
// writing the values out.
func TestParseAliases(t *testing.T) {
	in := `version: 1
package: p
acl: &open world_all
resources:
  a: &lock {kind: lock, path: /a, acl: *open, layout: kazoo}
  b: {<<: *lock, path: /b}
  c:
    <<: [*lock, {kind: rwlock}]
    path: /c
    layout: curator
`
	s, err := Parse("x.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	got := ""
	for _, r := range s.Resources {
		got += r.Name + ":" + string(r.Kind) + ":" + r.Path + ":" + string(r.Layout) + ":" + string(r.ACL.Policy) + " "
	}
	if want := "a:lock:/a:kazoo:world_all b:lock:/b:kazoo:world_all c:lock:/c:curator:world_all "; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// TestParseAliasBomb checks that exponential alias expansion is cut off
// with an error instead of running for ever.
func TestParseAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: 1\npackage: p\nresources:\n  l0: &l0 {kind: lock, path: /l0}\n")
	for i := 1; i < 12; i++ {
		prev := "*l" + string(rune('a'+i-1))
		if i == 1 {
			prev = "*l0"
		}
		name := "l" + string(rune('a'+i))
		b.WriteString("  " + name + ": &" + name + " {<<: [" + strings.Repeat(prev+", ", 9) + prev + "]}\n")
	}
	start := time.Now()
	_, err := Parse("bomb.yaml", []byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "bomb.yaml:1:1: spec too large: aliases expand to too many values") {
		t.Errorf("err = %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
}

func TestParseErrorsSorted(t *testing.T) {
	in := `package: Bad
version: 1
output: x.txt
resources:
  b: {kind: semaphore, path: /x, leases: 0}
  a: {kind: lok, path: /x}
  c: {kind: lock, path: "/x/{id:int}", size: 3}
types:
  T: {fields: {a: Nope}}
`
	_, err := Parse("zkgen.yaml", []byte(in))
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("err = %v (%T)", err, err)
	}
	want := `zkgen.yaml:1:10: package: must be a lower-case Go identifier ([a-z][a-z0-9_]*), got "Bad"
zkgen.yaml:2:1: version: must be the first key of the spec
zkgen.yaml:3:9: output: must end in .go, got "x.txt"
zkgen.yaml:5:42: resources.b.leases: must be >= 1, got 0
zkgen.yaml:6:13: resources.a.kind: unknown kind "lok"; known kinds are ` + kindList() + `; did you mean "lock"?
zkgen.yaml:6:24: resources.a.path: overlaps resources.b (/x)
zkgen.yaml:7:25: resources.c.path: overlaps resources.b (/x)
zkgen.yaml:7:40: resources.c: field "size" is not valid for kind lock (only for ` + kindsTaking("size") + `)
zkgen.yaml:9:19: types.T.fields.a: unknown type "Nope"; use bytes, string, int, bool, float, duration, time, a name under types:, or []T of those`
	if got := err.Error(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	for i := 1; i < len(errs); i++ {
		a, b := errs[i-1].Pos, errs[i].Pos
		if a.Line > b.Line || a.Line == b.Line && a.Col > b.Col {
			t.Errorf("errors %d and %d out of order: %v, %v", i-1, i, a, b)
		}
	}
}

func TestErrorFormat(t *testing.T) {
	e := &Error{File: "zkgen.yaml", Pos: Pos{14, 7}, Field: "resources.slots.leases", Msg: "must be >= 1, got 0"}
	if got, want := e.Error(), "zkgen.yaml:14:7: resources.slots.leases: must be >= 1, got 0"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	e.Field = ""
	if got, want := e.Error(), "zkgen.yaml:14:7: must be >= 1, got 0"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := (Errors{e, e}).Error(), "zkgen.yaml:14:7: must be >= 1, got 0\nzkgen.yaml:14:7: must be >= 1, got 0"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestParseFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(path, []byte("version: 1\npackage: p\nresources: {a: {kind: lock}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ParseFile(path)
	if want := path + `:3:13: resources.a: missing required field "path"`; err == nil || err.Error() != want {
		t.Errorf("err = %v, want %s", err, want)
	}
	if _, err := ParseFile(filepath.Join(dir, "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: err = %v, want os.ErrNotExist", err)
	}
}
