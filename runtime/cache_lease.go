package runtime

import (
	"encoding/json"
	"slices"
	"strconv"
	"time"
)

// A TTLLeaseCache mirrors the held slots of every instance of a lease
// resource (TTLLeases), as TTLLeases.Holders lists them: a Cache over the
// slot nodes one level below each lease directory, whose data (the
// holder) it reads when a slot appears and again at each renewal (a
// renewal writes the slot, which moves its mtime, the start of its TTL).
//
// Its methods are LockCache's (see there), with the instance's
// TTLLeaseState as the value: an instance is there while a slot of it is
// held; Events has one event per slot taken, renewed or freed.
type TTLLeaseCache[K comparable] struct {
	*childCache[K, leaseData, TTLLeaseState]
}

// TTLLeaseState is one lease instance as a TTLLeaseCache mirrors it.
type TTLLeaseState struct {
	Size int           // the slots (the resource's leases, as given to the cache)
	TTL  time.Duration // a lease's TTL (the resource's, as given to the cache)
	// Holders are the held slots in slot order, as TTLLeases.Holders
	// lists them: Renewed is the slot's mtime (server clock), Expires
	// Renewed plus TTL, the earliest the server removes the slot. A slot
	// whose data is not a holder's shows empty holder fields.
	Holders []LeaseHolder
}

// Free returns the slots no one holds.
func (s TTLLeaseState) Free() int { return max(s.Size-len(s.Holders), 0) }

type leaseCodec struct{}

func (leaseCodec) Encode(leaseData) ([]byte, error) { return nil, nil }
func (leaseCodec) Decode(data []byte) (leaseData, error) {
	var d leaseData
	_ = json.Unmarshal(data, &d) // as Holders: a foreign slot shows no holder
	return d, nil
}

// NewTTLLeaseCache returns a cache of the lease instances of tmpl (the
// lease directories, as NewTTLLeases' paths) of leases slots each,
// lasting ttl, keyed by key(parameters). opts are the Cache's
// (WithMaxNodes bounds the slots held). It holds nothing until Run; it
// fails only when tmpl is invalid.
func NewTTLLeaseCache[K comparable](tmpl Template, key func(Params) K, leases int, ttl time.Duration, opts ...CacheOption) (*TTLLeaseCache[K], error) {
	derive := func(es []*CacheEntry[childKey[K], leaseData]) (TTLLeaseState, []string) {
		return deriveLeases(es, leases, ttl)
	}
	c, err := newChildCache(tmpl, key, Codec[leaseData](leaseCodec{}), derive, opts)
	if err != nil {
		return nil, err
	}
	return &TTLLeaseCache[K]{c}, nil
}

// deriveLeases lists the held slots of one lease instance; children that
// are not its slots are left out. What the state shows is each slot and
// its mtime.
func deriveLeases[K comparable](es []*CacheEntry[childKey[K], leaseData], leases int, ttl time.Duration) (TTLLeaseState, []string) {
	type slot struct {
		i int
		e *CacheEntry[childKey[K], leaseData]
	}
	var slots []slot
	for _, e := range es {
		if i := slotIndex(e.Key.name, leases); i >= 0 {
			slots = append(slots, slot{i, e})
		}
	}
	slices.SortFunc(slots, func(a, b slot) int { return a.i - b.i })
	st := TTLLeaseState{Size: leases, TTL: ttl}
	var shown []string
	for _, s := range slots {
		renewed := time.UnixMilli(s.e.Stat.Mtime).UTC()
		d := s.e.Value
		st.Holders = append(st.Holders, LeaseHolder{Node: s.e.Path, Holder: d.Holder, Renewed: renewed, Expires: renewed.Add(ttl),
			Host: d.Host, PID: d.PID, Acquired: d.Acquired})
		shown = append(shown, s.e.Path+"@"+strconv.FormatInt(s.e.Stat.Mtime, 10))
	}
	return st, shown
}
