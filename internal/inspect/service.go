package inspect

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/spec"
)

// A service's instance is its own node <base>/<name> (spec.Resource's
// FullPath): its children are the registrations. Their data is not
// watched one by one: in persistent mode the mirror's recursive watch
// reports a change of any of them; in one-shot mode a registration or a
// removal is seen, a rewrite of a registration's data (enabled turned
// off) at the next read.
func init() {
	register(spec.KindService, kindOps{read: readService, provision: provisionNothing,
		watch: []watchRule{kids("")}})
}

// ServiceState lists a service's registered instances, in id order,
// whoever registered them (zkgen's runtime or Curator's ServiceDiscovery).
type ServiceState struct {
	Instances []ServiceInstance `json:"instances"`
}

// ServiceInstance is one registration, read from Curator's
// ServiceInstance JSON. Error is set, and the other fields but ID may be
// empty, when its data does not decode.
type ServiceInstance struct {
	ID         string    `json:"id"`
	Address    string    `json:"address,omitempty"`
	Port       int       `json:"port,omitempty"`
	SSLPort    int       `json:"ssl_port,omitempty"`
	Enabled    bool      `json:"enabled"`
	Type       string    `json:"type,omitempty"`       // Curator's serviceType: DYNAMIC, STATIC, ...
	Registered time.Time `json:"registered,omitzero"`  // registrationTimeUTC
	AgeSeconds float64   `json:"age_seconds,omitzero"` // Taken - Registered
	Payload    *Value    `json:"payload,omitempty"`
	Error      string    `json:"error,omitempty"`
}

func readService(ctx context.Context, sess *runtime.Session, _ *spec.Resource, p runtime.Path, res *Resource) error {
	node := p.String()
	ids, err := sess.Children(ctx, node)
	if errors.Is(err, zk.ErrNoNode) {
		res.Service = &ServiceState{Instances: []ServiceInstance{}}
		return nil
	}
	if err != nil {
		return err
	}
	slices.Sort(ids)
	st := &ServiceState{Instances: make([]ServiceInstance, 0, len(ids))}
	codec := runtime.ServiceCodec[json.RawMessage]()
	for _, id := range ids {
		data, _, err := runtime.NewConfig(sess, p.Lit(id), runtime.BytesCodec()).Get(ctx)
		switch {
		case errors.Is(err, runtime.ErrNoValue):
			continue // unregistered since the listing
		case err != nil:
			return err
		}
		st.Instances = append(st.Instances, serviceInstance(id, data, codec))
	}
	res.Service = st
	return nil
}

// serviceInstance describes the registration id holding data.
func serviceInstance(id string, data []byte, codec runtime.Codec[runtime.ServiceInstance[json.RawMessage]]) ServiceInstance {
	in, err := codec.Decode(data)
	if err != nil {
		return ServiceInstance{ID: id, Error: err.Error()}
	}
	out := ServiceInstance{ID: id, Address: in.Address, Port: in.Port, SSLPort: in.SSLPort,
		Enabled: !in.Disabled, Type: string(in.Type), Registered: in.Registered}
	if len(in.Payload) > 0 && string(in.Payload) != "null" {
		v := valueOf(in.Payload)
		out.Payload = &v
	}
	return out
}

// Enabled counts the instances registered and enabled: those a provider
// gives.
func (s *ServiceState) Enabled() int {
	n := 0
	for _, in := range s.Instances {
		if in.Enabled && in.Error == "" {
			n++
		}
	}
	return n
}

func (s *ServiceState) summary() string {
	out := plural(len(s.Instances), "instance")
	if n := s.Enabled(); n != len(s.Instances) {
		out += fmt.Sprintf(" (%d enabled)", n)
	}
	return out
}

func (s *ServiceState) details() [][3]string {
	var out [][3]string
	for _, in := range s.Instances {
		out = append(out, [3]string{"instance " + safe(in.ID), in.where(), in.when()})
	}
	return out
}

// where is an instance's address and ports, its state and payload.
func (in ServiceInstance) where() string {
	if in.Error != "" {
		return "error: " + oneLine(in.Error)
	}
	addr := cmp.Or(safe(in.Address), "(no address)")
	if in.Port != 0 {
		addr += fmt.Sprintf(":%d", in.Port)
	}
	if in.SSLPort != 0 {
		addr += fmt.Sprintf(" ssl:%d", in.SSLPort)
	}
	parts := []string{addr}
	if !in.Enabled {
		parts = append(parts, "disabled")
	}
	if in.Type != "" && in.Type != string(runtime.ServiceDynamic) {
		parts = append(parts, strings.ToLower(in.Type))
	}
	if in.Payload != nil {
		parts = append(parts, show(in.Payload))
	}
	return strings.Join(parts, " ")
}

// when is how long ago an instance registered.
func (in ServiceInstance) when() string {
	if in.Registered.IsZero() {
		return ""
	}
	return "registered " + age(in.AgeSeconds) + " ago"
}

func (s *ServiceState) setAges(age func(time.Time) float64) {
	for i := range s.Instances {
		if !s.Instances[i].Registered.IsZero() {
			s.Instances[i].AgeSeconds = age(s.Instances[i].Registered)
		}
	}
}
