package fakeverbs

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/ferrylabs/ferry/rdma/verbs"
	"github.com/ferrylabs/ferry/rdma/verbs/verbstest"
)

func TestMain(m *testing.M) { os.Exit(verbstest.RunChecked(m, "fakeverbs", LiveHandles)) }

// end is one side of a connection: a device with a PD, a CQ on a
// channel, one QP and one registered buffer.
type end struct {
	t   testing.TB
	nic *NIC
	dev verbs.Device
	pd  verbs.PD
	ch  verbs.CompChannel
	cq  verbs.CQ
	qp  verbs.QP
	mem []byte
	mr  verbs.MR
}

type endOpts struct {
	depth, maxWR int
	memLen       int
	access       verbs.Access
}

func newEnd(t testing.TB, p *Provider, nic string, o endOpts) *end {
	t.Helper()
	if o.depth == 0 {
		o.depth = 1024
	}
	if o.maxWR == 0 {
		o.maxWR = 256
	}
	if o.memLen == 0 {
		o.memLen = 1 << 20
	}
	if o.access == 0 {
		o.access = verbs.AccessRemote
	}
	e := &end{t: t, nic: p.NIC(nic)}
	var err error
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	e.dev, err = p.Open(nic)
	must(err)
	e.pd, err = e.dev.AllocPD()
	must(err)
	e.ch, err = e.dev.CreateCompChannel()
	must(err)
	e.cq, err = e.dev.CreateCQ(o.depth, e.ch)
	must(err)
	e.qp, err = e.pd.CreateQP(verbs.QPTypeRC, verbs.QPCaps{MaxSendWR: uint32(o.maxWR), MaxRecvWR: uint32(o.maxWR), MaxSGE: 1}, e.cq, e.cq)
	must(err)
	e.mem = make([]byte, o.memLen)
	e.mr, err = e.pd.RegMR(e.mem, o.access)
	must(err)
	t.Cleanup(e.close)
	return e
}

func (e *end) close() {
	for _, c := range []interface{ Close() error }{e.mr, e.qp, e.cq, e.ch, e.pd, e.dev} {
		if err := c.Close(); err != nil {
			e.t.Errorf("close: %v", err)
		}
	}
}

// connect brings a and b to RTS against each other over GID index 3.
func connect(t testing.TB, a, b *end) {
	t.Helper()
	for _, p := range [][2]*end{{a, b}, {b, a}} {
		l, r := p[0], p[1]
		if err := l.qp.ToInit(verbs.InitAttr{Port: 1, Access: verbs.QPAccessDefault}); err != nil {
			t.Fatal(err)
		}
		g, err := r.dev.QueryGID(1, 3)
		if err != nil {
			t.Fatal(err)
		}
		rtr := verbs.DefaultRTRAttr()
		rtr.DestQPNum, rtr.DGID, rtr.SGIDIndex = r.qp.Num(), g.GID, 3
		if err := l.qp.ToRTR(rtr); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range []*end{a, b} {
		if err := e.qp.ToRTS(verbs.DefaultRTSAttr()); err != nil {
			t.Fatal(err)
		}
	}
}

// reconnect resets both QPs and connects them again.
func reconnect(t testing.TB, a, b *end) {
	t.Helper()
	for _, e := range []*end{a, b} {
		if err := e.qp.ToReset(); err != nil {
			t.Fatal(err)
		}
	}
	connect(t, a, b)
}

// pair builds a fabric with two hosts of one NIC each, connected.
func pair(t testing.TB, oa, ob endOpts) (*Fabric, *end, *end) {
	t.Helper()
	f, a, b := ends(t, oa, ob)
	connect(t, a, b)
	return f, a, b
}

// ends builds a fabric with two hosts of one NIC each and an end on
// each, not connected. All is closed when t ends.
func ends(t testing.TB, oa, ob endOpts) (*Fabric, *end, *end) {
	t.Helper()
	f := NewFabric()
	t.Cleanup(func() { f.Close() })
	pa, err := f.AddHost(NICConfig{})
	if err != nil {
		t.Fatal(err)
	}
	pb, err := f.AddHost(NICConfig{})
	if err != nil {
		t.Fatal(err)
	}
	a := newEnd(t, pa, "mlx5_0", oa)
	b := newEnd(t, pb, "mlx5_0", ob)
	return f, a, b
}

// wr builds a work request on a's MR towards b's MR.
func wr(a, b *end, id uint64, op verbs.Op, loff, roff uint64, n uint32) verbs.WorkRequest {
	return verbs.WorkRequest{WRID: id, Op: op, LocalAddr: a.mr.Addr() + loff, Length: n, LKey: a.mr.LKey(),
		RemoteAddr: b.mr.Addr() + roff, RKey: b.mr.RKey()}
}

// pollN polls cq until n completions arrived or 5 s passed.
func pollN(t testing.TB, cq verbs.CQ, n int) []verbs.Completion {
	t.Helper()
	out := make([]verbs.Completion, 0, n)
	buf := make([]verbs.Completion, 64)
	deadline := time.Now().Add(5 * time.Second)
	for len(out) < n {
		k, err := cq.Poll(buf)
		if err != nil {
			t.Fatalf("poll after %d of %d: %v", len(out), n, err)
		}
		out = append(out, buf[:k]...)
		if k == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("got %d of %d completions", len(out), n)
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
	return out
}

// expectNone checks that no completion shows up within d.
func expectNone(t testing.TB, cq verbs.CQ, d time.Duration) {
	t.Helper()
	buf := make([]verbs.Completion, 8)
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		n, err := cq.Poll(buf)
		if err != nil && !errors.Is(err, verbs.ErrCQOverrun) {
			t.Fatal(err)
		}
		if n > 0 {
			t.Fatalf("unexpected completion %+v", buf[0])
		}
		time.Sleep(time.Millisecond)
	}
}

func state(t testing.TB, q verbs.QP) verbs.QPState {
	t.Helper()
	s, err := q.State()
	if err != nil {
		t.Fatal(err)
	}
	return s
}
