package sim

import (
	"fmt"
	"sort"
	"strings"
)

// fourLetter answers ZooKeeper's four-letter words, which a client sends
// instead of a ConnectRequest on a fresh connection: ruok, srvr, stat,
// mntr, cons and wchp, in the formats ZooKeeper 3.8 uses for the lines
// tools read. ok is false for anything else.
func (s *Server) fourLetter(m *member, word string) (answer []byte, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	switch word {
	case "ruok":
		b.WriteString("imok")
	case "srvr", "stat":
		s.srvr(&b, m, word == "stat")
	case "mntr":
		fmt.Fprintf(&b, "zk_version\t3.8.0-zkgen-sim\nzk_server_state\t%s\nzk_znode_count\t%d\n", m.mode(), len(m.view.nodes))
		fmt.Fprintf(&b, "zk_watch_count\t%d\nzk_ephemerals_count\t%d\nzk_num_alive_connections\t%d\n",
			m.watchCount(), s.ephemeralCount(), len(s.conns))
	case "cons":
		for _, id := range s.sessionIDs() {
			if ss := s.sessions[id]; ss.conn != nil {
				fmt.Fprintf(&b, " /%s[1](queued=0,recved=0,sent=0,sid=0x%x,to=%d)\n", ss.conn.ip, id, ss.timeout.Milliseconds())
			}
		}
		b.WriteString("\n")
	case "wchp":
		m.watchesByPath(&b)
	default:
		return nil, false
	}
	return []byte(b.String()), true
}

// srvr writes srvr's answer, and with clients stat's (under the server's
// lock).
func (s *Server) srvr(b *strings.Builder, m *member, clients bool) {
	fmt.Fprintf(b, "Zookeeper version: 3.8.0-zkgen-sim\n")
	if clients {
		b.WriteString("Clients:\n")
		for _, id := range s.sessionIDs() {
			if ss := s.sessions[id]; ss.conn != nil {
				fmt.Fprintf(b, " /%s[1](queued=0,recved=0,sent=0,sid=0x%x)\n", ss.conn.ip, id)
			}
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(b, "Latency min/avg/max: 0/0.0/0\nReceived: 0\nSent: 0\nConnections: %d\nOutstanding: 0\n", len(s.conns))
	fmt.Fprintf(b, "Zxid: 0x%x\nMode: %s\nNode count: %d\n", m.applied, m.mode(), len(m.view.nodes))
}

// watchesByPath writes wchp's answer: each watched path, in order, and
// under it the sessions watching it, in order, each once.
func (m *member) watchesByPath(b *strings.Builder) {
	byPath := map[string][]int64{}
	for _, table := range []map[string]map[*conn]struct{}{m.view.dataWatches, m.view.childWatches} {
		for p, ws := range table {
			for c := range ws {
				if c.sess != nil {
					byPath[p] = append(byPath[p], c.sess.id)
				}
			}
		}
	}
	paths := make([]string, 0, len(byPath))
	for p := range byPath {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		b.WriteString(p + "\n")
		ids := byPath[p]
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		for i, id := range ids {
			if i == 0 || ids[i-1] != id {
				fmt.Fprintf(b, "\t0x%x\n", id)
			}
		}
	}
}

func (s *Server) sessionIDs() []int64 {
	out := make([]int64, 0, len(s.sessions))
	for id := range s.sessions {
		out = append(out, id)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func (m *member) watchCount() int {
	n := 0
	for _, table := range []map[string]map[*conn]struct{}{m.view.dataWatches, m.view.childWatches} {
		for _, ws := range table {
			n += len(ws)
		}
	}
	return n
}

func (s *Server) ephemeralCount() int {
	n := 0
	for _, ss := range s.sessions {
		n += len(ss.ephemerals)
	}
	return n
}

// mode is the member's role as srvr and mntr report it.
func (m *member) mode() string {
	switch {
	case len(m.s.members) == 1:
		return "standalone"
	case m.id == 0:
		return "leader"
	default:
		return "follower"
	}
}
