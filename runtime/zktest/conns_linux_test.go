//go:build linux

package zktest_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/zkgen/zkgen/runtime/zktest"
)

// directConns returns the established TCP connections that join two member
// processes of e directly, one line each, from /proc: a socket of one
// member's JVM whose peer socket belongs to another member's JVM. Traffic
// through this process (a relay or proxy) does not count. The servers use
// IPv4 sockets only (-Djava.net.preferIPv4Stack=true), so /proc/net/tcp
// lists them all.
func directConns(e *zktest.Ensemble) ([]string, error) {
	owner := make(map[string]int) // socket inode -> member index
	for i := 0; i < e.Size(); i++ {
		pid := e.Server(i).PID()
		if pid == 0 {
			continue
		}
		fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		if err != nil {
			return nil, err
		}
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join(fmt.Sprintf("/proc/%d/fd", pid), fd.Name()))
			if err != nil {
				continue // closed meanwhile
			}
			if inode, ok := strings.CutPrefix(link, "socket:["); ok {
				owner[strings.TrimSuffix(inode, "]")] = i
			}
		}
	}
	type sock struct{ local, remote, inode string }
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var established []sock
	byLocal := make(map[string]sock)
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode ...
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || fields[3] != "01" { // 01: ESTABLISHED
			continue
		}
		s := sock{local: fields[1], remote: fields[2], inode: fields[9]}
		established = append(established, s)
		byLocal[s.local] = s
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	var out []string
	seen := make(map[[2]string]bool)
	for _, s := range established {
		a, ok := owner[s.inode]
		if !ok {
			continue
		}
		peer, ok := byLocal[s.remote]
		if !ok {
			continue
		}
		if b, ok := owner[peer.inode]; ok && b != a && !seen[[2]string{peer.local, s.local}] {
			seen[[2]string{s.local, peer.local}] = true
			out = append(out, fmt.Sprintf("member %d (%s) <-> member %d (%s)", a, hexAddr(s.local), b, hexAddr(peer.local)))
		}
	}
	return out, nil
}

// hexAddr turns /proc/net/tcp's "0100007F:1F90" into "127.0.0.1:8080".
func hexAddr(s string) string {
	ip, port, ok := strings.Cut(s, ":")
	if !ok || len(ip) != 8 {
		return s
	}
	b, err1 := strconv.ParseUint(ip, 16, 32)
	p, err2 := strconv.ParseUint(port, 16, 16)
	if err1 != nil || err2 != nil {
		return s
	}
	return fmt.Sprintf("%d.%d.%d.%d:%d", b&0xff, b>>8&0xff, b>>16&0xff, b>>24, p)
}
