package zktest

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// divergenceMarks are the words with which ZooKeeper 3.6+ reports, in its
// own log, that a server's state is not the leader's: the digest of its
// tree after a transaction differs from the digest the leader computed
// for it, or a session's ephemeral nodes on the server differ from those
// the leader's closeSession transaction lists. Either means that the
// server lost or misapplied a committed transaction, whatever its clients
// did: no client request can make two servers apply one transaction
// differently.
var divergenceMarks = []string{
	"digest mismatch",
	"Unexpected extra paths under session",
	"while removing ephemeral for dead session",
}

// diverged returns the lines in which a member of the ensemble reported,
// in its log, that its state diverged from the leader's (see
// divergenceMarks), each prefixed with the member's index and address. A
// failed ensemble test prints them: a test whose invariants fail on such
// a run ran on a ZooKeeper that broke its own guarantees (ZooKeeper 3.8.0
// did, killed and restarted under load, until learners synced from a
// snapshot; see spawn), so the failure is not taken for the client's.
func (e *Ensemble) diverged() []string {
	var out []string
	for i, m := range e.all() {
		for _, line := range grepFile(m.LogPath(), divergenceMarks) {
			out = append(out, fmt.Sprintf("server %d %s: %s", i, m.Addr(), line))
		}
	}
	return out
}

// grepFile returns the lines of the file at path that contain one of
// words, case-insensitively; nothing when the file cannot be read.
func grepFile(path string, words []string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.ToLower(sc.Text())
		for _, w := range words {
			if strings.Contains(line, strings.ToLower(w)) {
				out = append(out, sc.Text())
				break
			}
		}
	}
	return out
}
