package kubeapi

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Events records Kubernetes Events on the node's MachineConfigNode and Node.
//
// Recording never holds up an update: Event queues the Event and one
// goroutine writes the queue in order. An Event that repeats one already
// written (same object, type, reason and message) raises that Event's count
// and last timestamp instead of adding another, as client-go's recorder does.
// Unlike client-go's, it does not fold many similar Events (same reason,
// other messages) into one, nor rate-limit them: the daemon records one
// Event per phase, per failure and per drain-timeout period, never one per
// tick of a loop; keep it so.
// The recorder is ours because client-go's (tools/record) links strategic
// merge patch and its OpenAPI models: the daemon's updates record a handful
// of Events, which does not need them.
type Events struct {
	api       API
	log       *zap.Logger
	source    corev1.EventSource
	mcn, node corev1.ObjectReference

	mu     sync.Mutex
	closed bool
	queue  chan *corev1.Event
	done   chan struct{}
	cancel context.CancelFunc
}

// Limits of the Events writer.
const (
	// eventQueue Events wait at most; more are dropped (and logged) while
	// the API server does not take them.
	eventQueue = 64
	// eventAttempts is how often a write is tried, eventRetry apart.
	eventAttempts = 3
	eventRetry    = time.Second
	// eventTimeout bounds each request.
	eventTimeout = 10 * time.Second
	// repeatsKept is how many written Events are remembered for counting
	// repeats; past it the memory starts over.
	repeatsKept = 128
	// shutdownWait is how long Shutdown waits for queued Events.
	shutdownWait = 5 * time.Second
)

// NewEvents starts recording. mcnUID is the MachineConfigNode's UID, which
// `kubectl describe` matches on.
func NewEvents(api API, log *zap.Logger, nodeName string, mcnUID types.UID) *Events {
	ctx, cancel := context.WithCancel(context.Background())
	e := &Events{
		api:    api,
		log:    log,
		source: corev1.EventSource{Component: "nodeconfd", Host: nodeName},
		mcn: corev1.ObjectReference{APIVersion: "machineconfiguration.openshift.io/v1", Kind: "MachineConfigNode",
			Name: nodeName, UID: mcnUID},
		// kubectl describe node looks for events whose UID is the node's name.
		node:   corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: nodeName, UID: types.UID(nodeName)},
		queue:  make(chan *corev1.Event, eventQueue),
		done:   make(chan struct{}),
		cancel: cancel,
	}
	go e.run(ctx)
	return e
}

// Event records one event on the MachineConfigNode, and on the Node when
// onNode is set.
func (e *Events) Event(onNode, warning bool, reason, message string) {
	typ := corev1.EventTypeNormal
	if warning {
		typ = corev1.EventTypeWarning
	}
	e.enqueue(e.newEvent(e.mcn, typ, reason, message))
	if onNode {
		e.enqueue(e.newEvent(e.node, typ, reason, message))
	}
}

// EventOn records one event on another object (the controller's on its
// pools).
func (e *Events) EventOn(ref corev1.ObjectReference, warning bool, reason, message string) {
	typ := corev1.EventTypeNormal
	if warning {
		typ = corev1.EventTypeWarning
	}
	e.enqueue(e.newEvent(ref, typ, reason, message))
}

// Shutdown writes the queued Events (waiting at most shutdownWait) and
// stops; later Events are dropped.
func (e *Events) Shutdown() {
	e.mu.Lock()
	if !e.closed {
		e.closed = true
		close(e.queue)
	}
	e.mu.Unlock()
	select {
	case <-e.done:
	case <-time.After(shutdownWait):
		e.log.Warn("Events not written before shutdown", zap.Int("events", len(e.queue)))
	}
	e.cancel()
	<-e.done
}

func (e *Events) newEvent(ref corev1.ObjectReference, typ, reason, message string) *corev1.Event {
	now := metav1.Now()
	ns := ref.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	return &corev1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", ref.Name, now.UnixNano()), Namespace: ns},
		InvolvedObject:      ref,
		Reason:              reason,
		Message:             message,
		Source:              e.source,
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
		Type:                typ,
		ReportingController: e.source.Component,
		ReportingInstance:   e.source.Host,
	}
}

func (e *Events) enqueue(ev *corev1.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return
	}
	select {
	case e.queue <- ev:
	default:
		e.log.Warn("Event dropped: too many waiting to be written", zap.String("node", e.source.Host),
			zap.String("reason", ev.Reason), zap.String("object", ev.InvolvedObject.Kind))
	}
}

// run writes the queue until Shutdown closes it.
func (e *Events) run(ctx context.Context) {
	defer close(e.done)
	written := map[repeatKey]*corev1.Event{}
	for ev := range e.queue {
		if err := e.write(ctx, written, ev); err != nil {
			e.log.Warn("Event not written", zap.String("node", e.source.Host), zap.String("reason", ev.Reason),
				zap.String("object", ev.InvolvedObject.Kind), zap.Error(err))
		}
	}
}

// repeatKey is what makes two Events the same Event.
type repeatKey struct {
	kind, name, typ, reason, message string
}

// write creates ev, or counts it as a repeat of the same Event written
// before, retrying a failed request.
func (e *Events) write(ctx context.Context, written map[repeatKey]*corev1.Event, ev *corev1.Event) error {
	key := repeatKey{ev.InvolvedObject.Kind, ev.InvolvedObject.Name, ev.Type, ev.Reason, ev.Message}
	var err error
	for attempt := range eventAttempts {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(eventRetry):
			}
		}
		var out *corev1.Event
		if last := written[key]; last != nil {
			out, err = e.repeat(ctx, last, ev.LastTimestamp)
			if apierrors.IsNotFound(err) {
				delete(written, key) // gone (expired): write a new one at once
				out, err = e.create(ctx, ev)
			}
		} else {
			out, err = e.create(ctx, ev)
		}
		if err == nil {
			if len(written) >= repeatsKept {
				clear(written)
			}
			written[key] = out
			return nil
		}
		if apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
			return err // retrying cannot help
		}
	}
	return err
}

func (e *Events) create(ctx context.Context, ev *corev1.Event) (*corev1.Event, error) {
	ctx, cancel := context.WithTimeout(ctx, eventTimeout)
	defer cancel()
	events := e.api.Events(ev.Namespace)
	out, err := events.Create(ctx, ev, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return out, err
	}
	// A retry of a create whose answer was lost finds its own Event; else
	// the name (the time in ns) is taken: take another.
	if got, gerr := events.Get(ctx, ev.Name, metav1.GetOptions{}); gerr == nil && sameEvent(got, ev) {
		return got, nil
	}
	ev = ev.DeepCopy()
	ev.Name = fmt.Sprintf("%s.%x", ev.InvolvedObject.Name, time.Now().UnixNano())
	return events.Create(ctx, ev, metav1.CreateOptions{})
}

func sameEvent(a, b *corev1.Event) bool {
	return a.InvolvedObject.Kind == b.InvolvedObject.Kind && a.InvolvedObject.Name == b.InvolvedObject.Name &&
		a.InvolvedObject.UID == b.InvolvedObject.UID && a.Type == b.Type && a.Reason == b.Reason &&
		a.Message == b.Message && a.Source == b.Source
}

// repeat raises last's count and moves its last timestamp to at.
func (e *Events) repeat(ctx context.Context, last *corev1.Event, at metav1.Time) (*corev1.Event, error) {
	ctx, cancel := context.WithTimeout(ctx, eventTimeout)
	defer cancel()
	ts, err := at.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("encoding the time of event %s: %w", last.Name, err)
	}
	patch := fmt.Appendf(nil, `{"count":%d,"lastTimestamp":%s}`, last.Count+1, ts)
	return e.api.Events(last.Namespace).Patch(ctx, last.Name, types.MergePatchType, patch, metav1.PatchOptions{})
}
