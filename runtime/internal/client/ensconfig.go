package client

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// ZooKeeper 3.5+ publishes the ensemble's membership in the node
// /zookeeper/config, readable by anyone (its ACL is world:anyone:r), one
// line per server and the configuration's version:
//
//	server.1=10.0.0.1:2888:3888:participant;0.0.0.0:2181
//	server.2=[fd00::2]:2888:3888:observer;[fd00::2]:2181
//	server.3=zk-3.example:2888:3888;2181
//	version=100000003
//
// Left of ';' is how the servers reach each other (3.6+ may list several
// addresses, '|'-separated, and a role: participant or observer, both of
// which serve clients); right of it, where the server takes clients:
// "[host:]port", the host 0.0.0.0 when not given. A server configured the
// pre-3.5 way (clientPort apart) has no ';' part. A standalone server (3.5+
// with standaloneEnabled, the default) publishes an empty node; 3.4 has
// none.

// ensembleConfig is what a session takes from /zookeeper/config.
type ensembleConfig struct {
	version int64    // the "version=" line (hexadecimal); 0 when absent
	servers []string // client addresses "host:port", in line order, no repeats
}

// parseEnsembleConfig reads the data of /zookeeper/config. A server line
// without a client part is skipped: the session cannot tell where that
// server takes clients. A client host that is missing or a wildcard
// (0.0.0.0, ::) means the server listens on every interface: its first
// quorum address's host stands for it. Other keys (group.N, weight.N for
// hierarchical quorums) are ignored. A server line or version that cannot
// be read fails the whole configuration: a server the session could not
// read is one it would wrongly drop from its list.
func parseEnsembleConfig(data []byte) (ensembleConfig, error) {
	var cfg ensembleConfig
	seen := map[string]bool{}
	for line := range strings.Lines(string(data)) {
		key, value, ok := strings.Cut(strings.TrimSpace(line), "=")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		switch {
		case !ok:
			continue // a blank line
		case key == "version":
			v, err := strconv.ParseInt(value, 16, 64)
			if err != nil {
				return ensembleConfig{}, fmt.Errorf("ensemble configuration: version %q: %w", value, err)
			}
			cfg.version = v
		case strings.HasPrefix(key, "server."):
			addr, err := parseServerLine(key, value)
			if err != nil {
				return ensembleConfig{}, fmt.Errorf("ensemble configuration: %s: %w", key, err)
			}
			if addr != "" && !seen[addr] {
				seen[addr] = true
				cfg.servers = append(cfg.servers, addr)
			}
		}
	}
	return cfg, nil
}

// parseServerLine returns the client address of the server line
// key=value, or "" when it has none.
func parseServerLine(key, value string) (string, error) {
	if id, err := strconv.ParseUint(strings.TrimPrefix(key, "server."), 10, 63); err != nil || id == 0 {
		return "", errors.New("not a server id")
	}
	quorum, client, ok := strings.Cut(value, ";")
	if !ok || strings.TrimSpace(client) == "" {
		return "", nil
	}
	qhost, err := quorumHost(strings.TrimSpace(quorum))
	if err != nil {
		return "", err
	}
	host, port, err := clientAddr(strings.TrimSpace(client))
	if err != nil {
		return "", err
	}
	if ip, err := netip.ParseAddr(host); host == "" || err == nil && ip.IsUnspecified() {
		host = qhost
	}
	return net.JoinHostPort(host, port), nil
}

// quorumHost checks the quorum part of a server line,
// "host:port:port[:role]", the first of several when '|'-separated, and
// returns its host.
func quorumHost(q string) (string, error) {
	first, _, _ := strings.Cut(q, "|")
	host, rest, err := splitHost(first)
	if err != nil {
		return "", err
	}
	parts := strings.Split(rest, ":")
	if host == "" || len(parts) < 2 || len(parts) > 3 {
		return "", fmt.Errorf("quorum address %q is not host:port:port[:role]", first)
	}
	for _, p := range parts[:2] {
		if _, err := parsePort(p); err != nil {
			return "", fmt.Errorf("quorum address %q: %w", first, err)
		}
	}
	if len(parts) == 3 && parts[2] != "participant" && parts[2] != "observer" {
		return "", fmt.Errorf("unknown role %q", parts[2])
	}
	return host, nil
}

// clientAddr reads the client part of a server line, "[host:]port".
func clientAddr(c string) (host, port string, err error) {
	if !strings.Contains(c, ":") {
		_, err := parsePort(c)
		return "", c, err
	}
	host, rest, err := splitHost(c)
	if err == nil {
		_, err = parsePort(rest)
	}
	if err != nil {
		return "", "", fmt.Errorf("client address %q: %w", c, err)
	}
	return host, rest, nil
}

// splitHost splits "host:rest" or "[ipv6]:rest" at the colon after the
// host; rest may be empty.
func splitHost(s string) (host, rest string, err error) {
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", "", fmt.Errorf("address %q: no closing bracket", s)
		}
		host, rest = s[1:end], s[end+1:]
		if rest != "" && !strings.HasPrefix(rest, ":") {
			return "", "", fmt.Errorf("address %q: no colon after the bracket", s)
		}
		return host, strings.TrimPrefix(rest, ":"), nil
	}
	host, rest, _ = strings.Cut(s, ":")
	return host, rest, nil
}

// parsePort reads a TCP port, 1 to 65535.
func parsePort(p string) (int, error) {
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("port %q is not a number from 1 to 65535", p)
	}
	return n, nil
}
