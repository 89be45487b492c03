package inspect

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/zkgen/zkgen/internal/bind"
	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/spec"
)

func init() {
	register(spec.KindConfig, kindOps{read: readConfig, provision: provisionParent,
		watch: []watchRule{data("")}})
	register(spec.KindCounter, kindOps{read: readCounter, provision: provisionParent,
		watch: []watchRule{data("")}})
}

// ConfigState is a config node's value.
type ConfigState struct {
	Exists  bool   `json:"exists"`
	Version int32  `json:"version"` // -1 when absent
	Value   *Value `json:"value,omitempty"`
}

// CounterState is a counter's value (0 when the node is absent).
type CounterState struct {
	Value int64 `json:"value"`
}

func readConfig(ctx context.Context, sess *runtime.Session, _ *spec.Resource, p runtime.Path, res *Resource) error {
	data, ver, err := runtime.NewConfig(sess, p, runtime.BytesCodec()).Get(ctx)
	if errors.Is(err, runtime.ErrNoValue) {
		res.Config = &ConfigState{Version: int32(runtime.NoVersion)}
		return nil
	}
	if err != nil {
		return err
	}
	v := valueOf(data)
	res.Config = &ConfigState{Exists: true, Version: int32(ver), Value: &v}
	return nil
}

func readCounter(ctx context.Context, sess *runtime.Session, r *spec.Resource, p runtime.Path, res *Resource) error {
	n, err := runtime.NewCounter(sess, p, bind.HandleOptions(r)...).Get(ctx)
	if err != nil {
		return err
	}
	res.Counter = &CounterState{Value: n}
	return nil
}

func (c *ConfigState) summary() string {
	if !c.Exists {
		return "absent"
	}
	return fmt.Sprintf("version %d: %s", c.Version, show(c.Value))
}

func (c *ConfigState) details() [][3]string { return nil }

func (c *ConfigState) setAges(func(time.Time) float64) {}

func (c *CounterState) summary() string { return strconv.FormatInt(c.Value, 10) }

func (c *CounterState) details() [][3]string { return nil }

func (c *CounterState) setAges(func(time.Time) float64) {}
