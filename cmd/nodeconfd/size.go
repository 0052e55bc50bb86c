package main

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
)

// byteSize is a flag value of a byte count, written as a Kubernetes
// quantity ("16Mi", "64Mi", "1048576").
type byteSize struct{ n *int64 }

func (s byteSize) String() string {
	if s.n == nil {
		return ""
	}
	return resource.NewQuantity(*s.n, resource.BinarySI).String()
}

func (s byteSize) Set(v string) error {
	q, err := resource.ParseQuantity(v)
	if err != nil {
		return fmt.Errorf("want a byte count such as 16Mi: %w", err)
	}
	n, ok := q.AsInt64()
	if !ok || n <= 0 {
		return fmt.Errorf("want a positive whole byte count such as 16Mi, got %s", v)
	}
	*s.n = n
	return nil
}
