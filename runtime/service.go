package runtime

import (
	"errors"
	"time"

	"github.com/zkgen/zkgen/runtime/internal/client"
)

// Service discovery (docs/service.md), in curator-x-discovery's layout:
// each instance of a service is a node <base>/<name>/<id> whose data is
// Curator's ServiceInstance JSON (service_json.go). A Services value is
// not bound to a session: its registrations belong to the process and
// its Run holds them on each session it is given (service_register.go);
// its finding side reads one Cache of the base, or of one service
// (WithFindOnly), through an index by service name (service_find.go,
// service_index.go).

// Errors of service discovery.
var (
	// ErrServiceInvalid means an instance cannot be registered as given:
	// an empty name, a name or id that is not a valid path segment, or a
	// service type other than DYNAMIC.
	ErrServiceInvalid = errors.New("service: invalid instance")
	// ErrNotRegistered means Update or Unregister named an instance this
	// Services value has not registered.
	ErrNotRegistered = errors.New("service: not registered")
	// ErrAlreadyRegistered means Register named an instance (name and
	// id) this Services value has registered already: use Update.
	ErrAlreadyRegistered = errors.New("service: already registered")
	// ErrNoInstance means a provider has no instance to give: none is
	// registered, enabled and not reported down.
	ErrNoInstance = errors.New("service: no instance")
	// ErrServiceNotMirrored means a finding method named a service that
	// a Services value made WithFindOnly does not mirror.
	ErrServiceNotMirrored = errors.New("service: not mirrored")
	// ErrServicesRunning means Run was called while another Run of the
	// same Services value is under way: it runs on one session at a time.
	ErrServicesRunning = errors.New("service: already running")
)

// ServiceType is Curator's ServiceType. Register makes DYNAMIC
// (ephemeral) registrations only; the others are read as they are.
type ServiceType string

// Curator's service types.
const (
	ServiceDynamic           ServiceType = "DYNAMIC"
	ServiceStatic            ServiceType = "STATIC"
	ServicePermanent         ServiceType = "PERMANENT"
	ServiceDynamicSequential ServiceType = "DYNAMIC_SEQUENTIAL"
)

// URIPart is one part of Curator's UriSpec: a literal, or a variable
// ({scheme}, {address}, {port}, ...) that Curator's buildUriSpec fills in.
type URIPart struct {
	Value    string `json:"value"`
	Variable bool   `json:"variable"`
}

// ServiceInstance is one registration of a service, as Curator's
// ServiceInstance holds it; Payload is the typed payload of the spec.
type ServiceInstance[T any] struct {
	Name    string // the service's name: the node <base>/<name>
	ID      string // unique within the service: the node <base>/<name>/<id>
	Address string // host name or IP address; "" is written as null
	Port    int    // 0 is none (null)
	SSLPort int    // 0 is none (null)
	Payload T
	// Registered is registrationTimeUTC (milliseconds); Register sets it
	// to the current time when zero.
	Registered time.Time
	Type       ServiceType // "" is DYNAMIC
	URISpec    []URIPart   // nil is none (null)
	// Disabled is the negation of Curator's enabled: a disabled instance
	// stays registered but providers do not give it.
	Disabled bool
}

// ServiceKey is the key of an instance in a Services cache: its
// service's name and its id.
type ServiceKey struct{ Name, ID string }

// servicePause is the pause before a registration that failed while its
// session lives is tried again.
const servicePause = client.CleanupTimeout / 100
