package doctor

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/zkgen/zkgen/spec"
)

// srvrServer answers every connection with answer, as a ZooKeeper server
// answers srvr, and returns its address.
func srvrServer(t *testing.T, answer string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			var word [4]byte
			c.Read(word[:])
			c.Write([]byte(answer))
			c.Close()
		}
	}()
	return ln.Addr().String()
}

// The version line fails a server older than 3.5.3 (no containers, no TTL
// nodes) naming the upgrade, and reports addWatch from 3.6 on. Only 3.8
// is installed here, so the other versions are a server of the test's
// that answers srvr as ZooKeeper does.
func TestVersionLine(t *testing.T) {
	o := Options{Timeout: 10 * time.Second}
	for _, c := range []struct {
		srvr   string
		status Status
		want   string
	}{
		{"Zookeeper version: 3.4.14-4c25d480e66aadd371de8bd2fd8da255ac140bcf, built on 03/06/2019 16:18 GMT\nMode: standalone\n", Fail, "ZooKeeper 3.4.14: zkgen's recipes create containers and TTL nodes, which need 3.5.3 or later: upgrade the servers"},
		{"Zookeeper version: 3.5.2-alpha--1, built on 06/30/2016\n", Fail, "which need 3.5.3 or later"},
		{"Zookeeper version: 3.5.3-beta-8ce24f9e675cbefffb8f21a47e06b42864475a60, built on 04/03/2017\n", OK, "ZooKeeper 3.5.3 (zkgen needs 3.5.3 or later); no persistent recursive watches (addWatch, 3.6)"},
		{"Zookeeper version: 3.9.2-e454e8c7283100c7caec6dcae2bc82aaecb63023, built on 2024-02-12\n", OK, "ZooKeeper 3.9.2 (zkgen needs 3.5.3 or later); persistent recursive watches (addWatch, 3.6) available"},
		{"This ZooKeeper instance is not currently serving requests\n", Unknown, `srvr answered "This ZooKeeper instance is not currently serving requests", with no version`},
	} {
		l := o.versionLine(context.Background(), srvrServer(t, c.srvr))
		if l.Status != c.status || l.Check != CheckVersion || !strings.Contains(l.Text, c.want) {
			t.Errorf("srvr %q:\n got %v\nwant %s ... %s", c.srvr, l, c.status, c.want)
		}
	}
}

// A server that does not know containers answers a container create with
// ZooKeeper's error -6 (unimplemented), which go-zookeeper reports as
// "unknown error: -6": the containers line fails, naming the upgrade.
func TestContainersLine(t *testing.T) {
	err := &probeError{stepCreate, "/app/zkgen-doctor-h-1-1", fmt.Errorf("create /app/zkgen-doctor-h-1-1: %w", errors.New("unknown error: -6"))}
	if l := containersLine(err, "under /app"); l.Status != Fail || !strings.Contains(l.Text, "upgrade the servers to ZooKeeper 3.5.3 or later") {
		t.Errorf("unimplemented: %v", l)
	}
	if l := containersLine(nil, "under /app"); l.Status != OK || !strings.HasSuffix(l.Text, "under /app") {
		t.Errorf("created: %v", l)
	}
}

// The sizes doctor reckons are those of the frames the runtime makes: a
// partitioner's plan with one member, JSON-encoded as the runtime encodes
// it, and the listing of numbered nodes.
func TestSizes(t *testing.T) {
	s := parse(t, "  shards: {kind: partitioner, path: /parts/shards, partitions: 1000, member: J}\n")
	n, ok := largestRequest(s)
	member := "_c_" + strings.Repeat("x", 36) + "-member-0000000000"
	owner := make([]int, 1000)
	plan, _ := json.Marshal(struct {
		Members []string `json:"members"`
		Owner   []int    `json:"owner"`
	}{[]string{member}, owner})
	if want := createFields + len("/app/parts/shards/assignment") + len(plan); !ok || n.bytes != want {
		t.Errorf("plan request: %d bytes (ok %v), want %d", n.bytes, ok, want)
	}
	lst, _ := largestListing(s)
	want := replyFields
	for i := range 1000 {
		want += 4 + len(fmt.Sprintf("p-%d", i))
	}
	if lst.bytes != want || !strings.Contains(lst.what, "1000 owner nodes of partitioner shards") {
		t.Errorf("owner listing: %+v, want %d bytes", lst, want)
	}
	s = parse(t, "  shards: {kind: partitioner, path: /parts/shards, partitions: 1000, member: J}\n  q: {kind: queue, path: /q, item: J}\n  g: {kind: group, path: /g, member: J}\n")
	if lst, _ := largestListing(s); lst.bytes != bucketListing+replyFields || !strings.Contains(lst.what, "queue q") {
		t.Errorf("with a queue: %+v", lst)
	}
	s = parse(t, "  g: {kind: group, path: /g, member: J}\n  l: {kind: lock, path: /l}\n")
	if _, ok := largestRequest(s); ok {
		t.Error("a request size for a spec without a partitioner")
	}
	if _, ok := largestListing(s); ok {
		t.Error("a listing bound for a spec whose listings grow with use")
	}
}

func parse(t *testing.T, resources string) *spec.Spec {
	t.Helper()
	s, err := spec.Parse("zkgen.yaml", []byte("version: 1\npackage: p\nroot: /app\ntypes:\n  J: {fields: {a: int}}\nresources:\n"+resources))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The probe handshake is a ConnectRequest whose length field says n.
func TestHandshake(t *testing.T) {
	b := handshake(100)
	if len(b) != 104 || binary.BigEndian.Uint32(b) != 100 || binary.BigEndian.Uint64(b[20:]) != probeSession || binary.BigEndian.Uint32(b[28:]) != 16 {
		t.Errorf("handshake(100): % x", b[:40])
	}
}

// Servers that say the same share a line; the others get their own.
func TestEachServer(t *testing.T) {
	lines := eachServer([]string{"a:1", "b:1", "c:1"}, func(addr string) Line {
		if addr == "b:1" {
			return Line{Fail, CheckRequest, "refuses"}
		}
		return Line{OK, CheckRequest, "takes"}
	})
	want := []Line{{OK, CheckRequest, "a:1, c:1: takes"}, {Fail, CheckRequest, "b:1: refuses"}}
	if fmt.Sprint(lines) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", lines, want)
	}
}
