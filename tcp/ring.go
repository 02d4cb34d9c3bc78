package tcp

// ring is a FIFO of values backed by a power-of-two slice that grows when
// full and never shrinks, so that steady-state pushes allocate nothing. It
// is not safe for concurrent use.
type ring[T any] struct {
	buf        []T
	head, size int
}

func (r *ring[T]) len() int { return r.size }

func (r *ring[T]) push(v T) {
	if r.size == len(r.buf) {
		r.grow()
	}
	r.buf[(r.head+r.size)&(len(r.buf)-1)] = v
	r.size++
}

// pushFront puts v before every queued value.
func (r *ring[T]) pushFront(v T) {
	if r.size == len(r.buf) {
		r.grow()
	}
	r.head = (r.head - 1) & (len(r.buf) - 1)
	r.buf[r.head] = v
	r.size++
}

// peek returns a pointer to the oldest value; the ring must not be empty.
func (r *ring[T]) peek() *T { return &r.buf[r.head] }

// at returns a pointer to the i-th oldest value; i < len().
func (r *ring[T]) at(i int) *T { return &r.buf[(r.head+i)&(len(r.buf)-1)] }

func (r *ring[T]) pop() T {
	var zero T
	v := r.buf[r.head]
	r.buf[r.head] = zero
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.size--
	return v
}

func (r *ring[T]) grow() {
	n := max(2*len(r.buf), 16)
	nb := make([]T, n)
	for i := range r.size {
		nb[i] = r.buf[(r.head+i)&(len(r.buf)-1)]
	}
	r.buf, r.head = nb, 0
}
