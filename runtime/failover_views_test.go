package runtime_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// serverViews logs, for the diagnosis of a stalled ensemble test, what
// each server of ens holds under dir (dir's children and theirs, read
// after a sync through a connection to that server alone), the nodes on
// which the servers disagree, which server each session is on, and how
// fast each server's zxid moves (a consumer spinning on a node only its
// server shows writes failing requests, each of which takes a zxid).
// Servers that still disagree after a sync have diverged: ZooKeeper lost
// a committed transaction on one of them.
func serverViews(t *testing.T, ens *zktest.Ensemble, dir string, sessions []*runtime.Session) (diverged int) {
	t.Helper()
	for i, s := range sessions {
		t.Logf("  session %d (0x%x) is on %s", i, s.ID(), s.Conn().Server())
	}
	views := map[string]map[string]bool{}
	for _, addr := range ens.Servers() {
		view, err := serverView(addr, dir)
		if err != nil {
			t.Logf("  server %s: %v", addr, err)
			continue
		}
		views[addr] = view
		t.Logf("  server %s: %d nodes, zxid moving %s", addr, len(view), zxidRate(addr))
	}
	all := map[string]bool{}
	for _, v := range views {
		maps.Copy(all, v)
	}
	for _, p := range slices.Sorted(maps.Keys(all)) {
		var on []string
		for _, addr := range slices.Sorted(maps.Keys(views)) {
			if views[addr][p] {
				on = append(on, addr)
			}
		}
		if len(on) != len(views) {
			t.Logf("  DIVERGED: %s only on %v", p, on)
			diverged++
		}
	}
	return diverged
}

// serverView lists dir and its children's children on the server at addr
// alone, after a sync, as paths relative to dir (each with its owner when
// ephemeral).
func serverView(addr, dir string) (map[string]bool, error) {
	c, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if _, err := c.Sync(dir); err != nil {
		return nil, fmt.Errorf("sync: %w", err)
	}
	view := map[string]bool{}
	kids, _, err := c.Children(dir)
	if err != nil {
		return nil, err
	}
	for _, k := range kids {
		view[k] = true
		sub, _, err := c.Children(dir + "/" + k)
		if err != nil {
			return nil, err
		}
		for _, g := range sub {
			name := k + "/" + g
			if _, st, err := c.Exists(dir + "/" + name); err == nil && st != nil && st.EphemeralOwner != 0 {
				name += fmt.Sprintf(" (owner 0x%x)", st.EphemeralOwner)
			}
			view[name] = true
		}
	}
	return view, nil
}

// zxidRate reports how many zxids the server at addr took in one second,
// and how many requests it received meanwhile (from its srvr answer).
func zxidRate(addr string) string {
	srvr := func() (zxid, received int64, ok bool) {
		out, err := zktest.FourLetter(addr, "srvr", 5*time.Second)
		if err != nil {
			return 0, 0, false
		}
		var n int
		for _, line := range strings.Split(out, "\n") {
			k, v, _ := strings.Cut(line, ":")
			switch v = strings.TrimSpace(v); k {
			case "Zxid":
				if _, err := fmt.Sscanf(v, "0x%x", &zxid); err == nil {
					n++
				}
			case "Received":
				if _, err := fmt.Sscanf(v, "%d", &received); err == nil {
					n++
				}
			}
		}
		return zxid, received, n == 2
	}
	z0, r0, ok0 := srvr()
	time.Sleep(time.Second) // the span measured, not a synchronisation
	z1, r1, ok1 := srvr()
	if !ok0 || !ok1 {
		return "(unknown)"
	}
	return fmt.Sprintf("%d zxids and %d requests per second (zxid 0x%x)", z1-z0, r1-r0, z1)
}
