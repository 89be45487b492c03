package runtime

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/go-zookeeper/zk"
)

// BenchmarkServiceLookup measures a provider's lookup of the service
// "svc" (10 instances) with m instances of the service "other" under the
// same base, without ZooKeeper: the cache is fed its reads directly.
// kept: lookups while nothing changes; other-changed: a change of the
// data of an instance of "other" applied, then one lookup (the first
// after the change).
func BenchmarkServiceLookup(b *testing.B) {
	for _, m := range []int{1000, 10_000} {
		d := NewServices[struct{}](At("/s"))
		var zxid int64
		put := func(name, id string) {
			zxid++
			data := fmt.Sprintf(`{"name":%q,"id":%q,"address":"10.0.0.1","port":8080,"payload":{}}`, name, id)
			st := &zk.Stat{Czxid: zxid, Mzxid: zxid}
			if err := d.cache.apply("/s/"+name+"/"+id, cacheRead{data: []byte(data), stat: st, found: true}); err != nil {
				b.Fatal(err)
			}
		}
		for i := range 10 {
			put("svc", strconv.Itoa(i))
		}
		for i := range m {
			put("other", strconv.Itoa(i))
		}
		p := d.Provider("svc", RoundRobin, 0)
		lookup := func() {
			if _, err := p.Instance(); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(fmt.Sprintf("m=%d/kept", m), func(b *testing.B) {
			for range b.N {
				lookup()
			}
		})
		b.Run(fmt.Sprintf("m=%d/other-changed", m), func(b *testing.B) {
			for i := range b.N {
				put("other", strconv.Itoa(i%m)) // a change of a held instance
				lookup()
			}
		})
	}
}
