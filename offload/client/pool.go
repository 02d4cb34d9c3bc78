package client

import (
	"fmt"

	"github.com/ferrylabs/ferry/offload/config"
)

// ownerPool caches one gRPC connection per owner endpoint.
type ownerPool struct {
	cfg config.Config
}

func newOwnerPool(cfg config.Config) *ownerPool { return &ownerPool{cfg: cfg} }

func (p *ownerPool) get(endpoint string) (Owner, error) {
	return nil, fmt.Errorf("%w: gRPC owner client not available", ErrOwner)
}

func (p *ownerPool) close() error { return nil }
