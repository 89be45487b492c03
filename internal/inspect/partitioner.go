package inspect

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/spec"
)

func init() {
	register(spec.KindPartitioner, kindOps{read: readPartitioner, provision: provisionPath,
		watch: []watchRule{kids(runtime.PartitionerMembersDir), kids(runtime.PartitionerOwnersDir)}})
}

// PartitionerState lists a partitioner's members in join order and the
// partitions each owns; Unowned are the partitions nobody owns (mid-move,
// or no members).
type PartitionerState struct {
	Partitions int                `json:"partitions"`
	Members    []PartitionerOwner `json:"members"`
	Unowned    []int              `json:"unowned"`
}

// PartitionerOwner is one member and the partitions it owns.
type PartitionerOwner struct {
	Member Value `json:"member"`
	Owns   []int `json:"owns"`
}

func readPartitioner(ctx context.Context, sess *runtime.Session, r *spec.Resource, p runtime.Path, res *Resource) error {
	o, err := runtime.NewPartitioner(sess, p, r.Partitions, runtime.BytesCodec()).Owners(ctx)
	if err != nil {
		return err
	}
	st := &PartitionerState{Partitions: r.Partitions, Members: []PartitionerOwner{}, Unowned: []int{}}
	for _, m := range o.Members {
		st.Members = append(st.Members, PartitionerOwner{Member: valueOf(m), Owns: []int{}})
	}
	for i, k := range o.Owner {
		if k < 0 {
			st.Unowned = append(st.Unowned, i)
			continue
		}
		st.Members[k].Owns = append(st.Members[k].Owns, i)
	}
	res.Partitioner = st
	return nil
}

func (s *PartitionerState) summary() string {
	return fmt.Sprintf("%s, %d/%d partitions owned", plural(len(s.Members), "member"), s.Partitions-len(s.Unowned), s.Partitions)
}

func (s *PartitionerState) details() [][3]string {
	var out [][3]string
	for i, m := range s.Members {
		out = append(out, [3]string{fmt.Sprintf("member %d", i+1), show(&m.Member), "owns " + ranges(m.Owns)})
	}
	if len(s.Unowned) > 0 {
		out = append(out, [3]string{"unowned", ranges(s.Unowned), ""})
	}
	return out
}

func (s *PartitionerState) setAges(func(time.Time) float64) {}

// ranges writes ascending partitions compactly: 0-3,7,9-10.
func ranges(ps []int) string {
	if len(ps) == 0 {
		return "-"
	}
	var b strings.Builder
	for i := 0; i < len(ps); {
		j := i
		for j+1 < len(ps) && ps[j+1] == ps[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(ps[i]))
		if j > i {
			b.WriteString("-" + strconv.Itoa(ps[j]))
		}
		i = j + 1
	}
	return b.String()
}
