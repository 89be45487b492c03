package zktest

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A member's log line with one of ZooKeeper's divergence reports is
// returned by diverged, with the member named; other lines are not.
func TestDivergedFindsZooKeepersReports(t *testing.T) {
	dir := t.TempDir()
	log := "12:00:00.000 [QuorumPeer] INFO Learner - Getting a snapshot from leader 0x100000000\n" +
		"12:00:01.000 [QuorumPeer] ERROR org.apache.zookeeper.server.DataTree - First digest mismatch on txn: 1,2,3,4,14\n" +
		"12:00:02.000 [CommitProcessor:1] WARN org.apache.zookeeper.server.DataTree - Unexpected extra paths under session [/a] which are not in txn 0x300000037\n"
	if err := os.WriteFile(filepath.Join(dir, "zookeeper.log"), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	m := &Server{dir: dir, addrs: []string{"127.0.0.1:1"}}
	e := &Ensemble{members: []*Server{m}}
	got := e.diverged()
	want := []string{
		"server 0 127.0.0.1:1: 12:00:01.000 [QuorumPeer] ERROR org.apache.zookeeper.server.DataTree - First digest mismatch on txn: 1,2,3,4,14",
		"server 0 127.0.0.1:1: 12:00:02.000 [CommitProcessor:1] WARN org.apache.zookeeper.server.DataTree - Unexpected extra paths under session [/a] which are not in txn 0x300000037",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("diverged() = %q\nwant %q", got, want)
	}
}
