package runtime

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Curator's ServiceInstance JSON, as Jackson writes it: the fields in
// declaration order, null for a missing address, port, sslPort or
// uriSpec. Curator types the payload with a class property ("@class"
// inside an object payload, or a [class, value] pair around a scalar);
// reading, the class is ignored and the payload decoded as T; writing,
// the class is added when WithJavaClass names one, so that a Curator
// reader with a typed payload class accepts it. Without it such a
// reader leaves the instance out; one typed Map or Object reads it.
type curatorInstance struct {
	Name                string          `json:"name"`
	ID                  string          `json:"id"`
	Address             *string         `json:"address"`
	Port                *int            `json:"port"`
	SSLPort             *int            `json:"sslPort"`
	Payload             json.RawMessage `json:"payload"`
	RegistrationTimeUTC int64           `json:"registrationTimeUTC"`
	ServiceType         string          `json:"serviceType"`
	URISpec             *curatorURISpec `json:"uriSpec"`
	// Enabled is absent in what Curator before CURATOR-275 wrote, and in
	// its compatible serialization mode: absent is enabled.
	Enabled *bool `json:"enabled,omitempty"`
}

type curatorURISpec struct {
	Parts []URIPart `json:"parts"`
}

// serviceCodec encodes a ServiceInstance[T] as Curator does.
type serviceCodec[T any] struct {
	javaClass string // WithJavaClass; "" adds no class
}

func (c serviceCodec[T]) Encode(in ServiceInstance[T]) ([]byte, error) {
	payload, err := json.Marshal(in.Payload)
	if err != nil {
		return nil, err
	}
	enabled := !in.Disabled
	w := curatorInstance{Name: in.Name, ID: in.ID, Address: nonZero(in.Address), Port: nonZero(in.Port),
		SSLPort: nonZero(in.SSLPort), Payload: withJavaClass(payload, c.javaClass),
		RegistrationTimeUTC: in.Registered.UnixMilli(), ServiceType: string(in.Type), Enabled: &enabled}
	if w.ServiceType == "" {
		w.ServiceType = string(ServiceDynamic)
	}
	if in.URISpec != nil {
		w.URISpec = &curatorURISpec{Parts: in.URISpec}
	}
	return json.Marshal(w)
}

// ServiceCodec is the codec of Curator's ServiceInstance JSON with
// payload T, as Services writes and reads it, for tools that read
// registrations without a Services (zkgen inspect reads any payload with
// T json.RawMessage). Decode fails with ErrDecode.
func ServiceCodec[T any]() Codec[ServiceInstance[T]] { return serviceCodec[T]{} }

func (c serviceCodec[T]) Decode(data []byte) (ServiceInstance[T], error) {
	var w curatorInstance
	if err := json.Unmarshal(data, &w); err != nil {
		return ServiceInstance[T]{}, fmt.Errorf("%w: %w", ErrDecode, err)
	}
	in := ServiceInstance[T]{Name: w.Name, ID: w.ID, Type: ServiceType(w.ServiceType),
		Disabled: w.Enabled != nil && !*w.Enabled}
	if w.Address != nil {
		in.Address = *w.Address
	}
	if w.Port != nil {
		in.Port = *w.Port
	}
	if w.SSLPort != nil {
		in.SSLPort = *w.SSLPort
	}
	if w.RegistrationTimeUTC != 0 {
		in.Registered = time.UnixMilli(w.RegistrationTimeUTC).UTC()
	}
	if w.URISpec != nil {
		in.URISpec = w.URISpec.Parts
	}
	p, err := decodePayload[T](w.Payload)
	if err != nil {
		return in, fmt.Errorf("%w: payload: %w", ErrDecode, err)
	}
	in.Payload = p
	return in, nil
}

// decodePayload decodes a payload as T, unwrapping Jackson's [class,
// value] form of a typed scalar when T does not take the array itself.
func decodePayload[T any](raw json.RawMessage) (T, error) {
	var v T
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return v, nil
	}
	err := json.Unmarshal(raw, &v)
	if err == nil || raw[0] != '[' {
		return v, err
	}
	var pair []json.RawMessage
	var class string
	if json.Unmarshal(raw, &pair) != nil || len(pair) != 2 || json.Unmarshal(pair[0], &class) != nil {
		return v, err
	}
	var inner T
	if json.Unmarshal(pair[1], &inner) != nil {
		return v, err
	}
	return inner, nil
}

// withJavaClass puts "@class": class first in an object payload.
func withJavaClass(payload []byte, class string) []byte {
	if class == "" || len(payload) < 2 || payload[0] != '{' {
		return payload
	}
	name, _ := json.Marshal(class)
	out := append([]byte(`{"@class":`), name...)
	if rest := bytes.TrimSpace(payload[1:]); len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, payload[1:]...)
}

// nonZero is a pointer to v, or nil when v is its type's zero value.
func nonZero[V comparable](v V) *V {
	var zero V
	if v == zero {
		return nil
	}
	return &v
}
