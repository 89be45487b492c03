package zktest

import (
	"errors"
	"fmt"
)

// errNoQuorumFaults is returned by the partition methods of an ensemble
// started without WithQuorumFaults.
var errNoQuorumFaults = errors.New("zktest: the ensemble was started without WithQuorumFaults; its servers talk to each other directly")

// openLinks replaces the ensemble's links with fresh relays from every
// member to every other one, forwarding to the given real ports.
//
// A member's own zoo.cfg line is what it binds, and on an election
// connection it advertises that address to the peer it dials; a peer with a
// higher server id then drops the connection and dials back to the
// advertised address. So each election relay i→j rewrites the advertised
// address to that of the relay j→i, and no connection between two members
// bypasses their links. (The leader's view of the configuration, sent to
// each follower as it syncs, is ignored while dynamic reconfiguration is
// disabled, as it is by default.)
func (e *Ensemble) openLinks(quorumPort, electionPort func(int) int) error {
	e.closeLinks()
	n := len(e.members)
	links := make([][]*link, n)
	var opened []*relay
	fail := func(err error) error {
		for _, r := range opened {
			r.close()
		}
		return err
	}
	for i := range links {
		links[i] = make([]*link, n)
		for j := range links[i] {
			if i == j {
				continue
			}
			q, err := listenRelay()
			if err != nil {
				return fail(err)
			}
			opened = append(opened, q)
			el, err := listenRelay()
			if err != nil {
				return fail(err)
			}
			opened = append(opened, el)
			links[i][j] = &link{quorum: q, election: el}
		}
	}
	for i := range links {
		for j, l := range links[i] {
			if l == nil {
				continue
			}
			l.quorum.start(hostPort(quorumPort(j)), nil)
			l.election.start(hostPort(electionPort(j)), advertiseAs(links[j][i].election.addr()))
		}
	}
	e.mu.Lock()
	e.links, e.group = links, nil
	e.mu.Unlock()
	return nil
}

// closeLinks stops every relay.
func (e *Ensemble) closeLinks() {
	e.mu.Lock()
	links := e.links
	e.links = nil
	e.mu.Unlock()
	for _, row := range links {
		for _, l := range row {
			if l != nil {
				l.quorum.close()
				l.election.close()
			}
		}
	}
}

// link returns member i's link to member j, or nil.
func (e *Ensemble) link(i, j int) *link {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.links == nil {
		return nil
	}
	return e.links[i][j]
}

// Partition splits the ensemble into groups of members (0-based indexes)
// whose servers cannot reach the servers of another group: every quorum and
// election connection between two groups is closed and new ones are
// refused, in both directions, as if by a firewall that rejects. Members
// named in no group form one more group together, so Partition([]int{0})
// cuts member 0 off from the rest. Clients keep their connections to their
// servers; only traffic between servers is cut.
//
// Each call replaces the previous partition, and Partition() with no groups
// heals it (see Heal). Servers notice a cut within a tick or so; then
// members of a group holding a majority elect a leader among themselves if
// they lost theirs, and members of the other groups stop serving. WaitQuorum
// waits for that.
//
// Partition needs WithQuorumFaults, and fails for an index out of range or
// named twice.
func (e *Ensemble) Partition(groups ...[]int) error {
	n := len(e.members)
	group := make([]int, n) // members named nowhere stay in group 0
	for g, members := range groups {
		for _, i := range members {
			if i < 0 || i >= n {
				return fmt.Errorf("zktest: partition names member %d of an ensemble of %d", i, n)
			}
			if group[i] != 0 {
				return fmt.Errorf("zktest: partition names member %d twice", i)
			}
			group[i] = g + 1
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.links == nil {
		return errNoQuorumFaults
	}
	if len(groups) == 0 {
		group = nil
	}
	e.group = group
	for i, row := range e.links {
		for j, l := range row {
			if l != nil {
				cut := group != nil && group[i] != group[j]
				l.quorum.setCut(cut)
				l.election.setCut(cut)
			}
		}
	}
	return nil
}

// Isolate cuts member i off from every other member: Partition([]int{i}).
func (e *Ensemble) Isolate(i int) error { return e.Partition([]int{i}) }

// Heal ends any partition: every member can reach every other again. The
// servers cut off rejoin on their own, within maxNotificationInterval (see
// WithQuorumFaults); WaitQuorum waits until every one serves.
func (e *Ensemble) Heal() error { return e.Partition() }

// partition returns each member's group, all zero when there is no
// partition.
func (e *Ensemble) partition() []int {
	e.mu.Lock()
	defer e.mu.Unlock()
	group := make([]int, len(e.members))
	copy(group, e.group)
	return group
}

// majorityGroup returns the group holding more than half of the members,
// or -1 if none does.
func majorityGroup(group []int) int {
	count := make(map[int]int)
	for _, g := range group {
		count[g]++
		if count[g] > len(group)/2 {
			return g
		}
	}
	return -1
}
