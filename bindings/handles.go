package bindings

import (
	"fmt"
	"sync"
)

// registry maps int64 handles to live objects of one kind. Handles are never reused,
// so a handle used after Close gets a clear "closed" error rather than another object.
type registry[T any] struct {
	mu    sync.Mutex
	kind  string
	next  int64
	items map[int64]T
}

func newRegistry[T any](kind string) *registry[T] {
	return &registry[T]{kind: kind, next: 1, items: map[int64]T{}}
}

func (r *registry[T]) add(v T) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.next
	r.next++
	r.items[h] = v
	return h
}

func (r *registry[T]) get(h int64) (T, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if v, ok := r.items[h]; ok {
		return v, nil
	}
	var zero T
	return zero, r.missing(h)
}

// remove takes the object out of the registry and returns it.
func (r *registry[T]) remove(h int64) (T, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if v, ok := r.items[h]; ok {
		delete(r.items, h)
		return v, nil
	}
	var zero T
	return zero, r.missing(h)
}

func (r *registry[T]) missing(h int64) error {
	if h > 0 && h < r.next {
		return fmt.Errorf("%s handle %d is closed", r.kind, h)
	}
	return fmt.Errorf("unknown %s handle %d", r.kind, h)
}
