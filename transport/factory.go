package transport

// Factory builds a transport for an engine. It is called once per engine,
// after the handshake daemon is up (so h.LocalName is final) and before
// any memory is registered. A factory returns an error wrapping
// ErrNotSupported when its transport cannot work on this machine; the
// engine then skips it in automatic mode.
type Factory func(h Host) (Transport, error)
