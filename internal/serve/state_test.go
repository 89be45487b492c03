package serve_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/zkgen/zkgen/generated_example/coord"
	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// /api/state is the document of zkgen inspect --json, with serve's own
// fields beside it: with every kind of the example in use and nothing
// changing, the two list the same resources with the same state (ages
// aside: each is measured when its document is made).
func TestStateIsInspectsDocument(t *testing.T) {
	srv := zktest.Start(t, zktest.WithTTLNodes(time.Second))
	provision(t, srv.Addr())
	base := startServe(t, srv.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sess, err := runtime.Connect(ctx, srv.Servers())
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	c := coord.New(sess)
	everyKind(ctx, t, c, sess)
	if _, err := c.Hits().Add(ctx, 42); err != nil {
		t.Fatal(err)
	}
	// the partitioner's member acquires its partitions after Join returns
	awaitState(t, base, func(st apiState) bool { return st.Up && st.counter("hits") == 42 && st.unowned("shards") == 0 })

	var served map[string]any
	resp, err := http.Get(base + "/api/state")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := json.Unmarshal(body, &served); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(zkgenBinary(t), "inspect", "--json", "-f", exampleSpec, "--servers", srv.Addr())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("zkgen inspect --json: %v", err)
	}
	var inspected map[string]any
	if err := json.Unmarshal(out, &inspected); err != nil {
		t.Fatal(err)
	}
	for k := range inspected {
		if _, ok := served[k]; !ok {
			t.Errorf("/api/state lacks inspect's field %q", k)
		}
	}
	for _, field := range []string{"zookeeper_up", "topology"} {
		if _, ok := served[field]; !ok {
			t.Errorf("/api/state lacks %q", field)
		}
	}
	a, b := withoutAges(served["resources"]), withoutAges(inspected["resources"])
	if !reflect.DeepEqual(a, b) {
		sa, _ := json.MarshalIndent(a, "", " ")
		sb, _ := json.MarshalIndent(b, "", " ")
		t.Errorf("resources differ:\n/api/state:\n%s\ninspect --json:\n%s", sa, sb)
	}
}

// withoutAges drops the fields measured at the document's making.
func withoutAges(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range v {
			if !strings.HasSuffix(k, "age_seconds") {
				out[k] = withoutAges(x)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = withoutAges(x)
		}
		return out
	}
	return v
}
