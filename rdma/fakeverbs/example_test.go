package fakeverbs_test

import (
	"fmt"
	"time"

	"github.com/ferrylabs/ferry/rdma/fakeverbs"
	"github.com/ferrylabs/ferry/rdma/verbs"
)

// Two hosts, one NIC each: connect a QP pair by QP number and GID, then
// WRITE 5 bytes from one host's MR into the other's.
func Example() {
	fabric := fakeverbs.NewFabric()
	defer fabric.Close()
	hostA, _ := fabric.AddHost(fakeverbs.NICConfig{Name: "mlx5_0"})
	hostB, _ := fabric.AddHost(fakeverbs.NICConfig{Name: "mlx5_0"})

	type side struct {
		dev verbs.Device
		pd  verbs.PD
		cq  verbs.CQ
		qp  verbs.QP
		mr  verbs.MR
		mem []byte
	}
	open := func(p verbs.Provider) *side {
		s := &side{mem: make([]byte, 64)}
		s.dev, _ = p.Open("mlx5_0")
		s.pd, _ = s.dev.AllocPD()
		s.cq, _ = s.dev.CreateCQ(16, nil)
		s.qp, _ = s.pd.CreateQP(verbs.QPTypeRC, verbs.QPCaps{MaxSendWR: 16, MaxSGE: 1}, s.cq, s.cq)
		s.mr, _ = s.pd.RegMR(s.mem, verbs.AccessRemote)
		return s
	}
	a, b := open(hostA), open(hostB)
	for _, pair := range [][2]*side{{a, b}, {b, a}} {
		local, peer := pair[0], pair[1]
		gid, _ := peer.dev.QueryGID(1, 3) // RoCEv2, IPv4-mapped
		rtr := verbs.DefaultRTRAttr()
		rtr.DestQPNum, rtr.DGID, rtr.SGIDIndex = peer.qp.Num(), gid.GID, 3
		_ = local.qp.ToInit(verbs.InitAttr{Port: 1, Access: verbs.QPAccessDefault})
		_ = local.qp.ToRTR(rtr)
		_ = local.qp.ToRTS(verbs.DefaultRTSAttr())
	}

	copy(a.mem, "hello")
	_, err := a.qp.PostRW([]verbs.WorkRequest{{WRID: 1, Op: verbs.OpWrite, LocalAddr: a.mr.Addr(),
		Length: 5, LKey: a.mr.LKey(), RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey()}})
	if err != nil {
		fmt.Println(err)
		return
	}
	wc := make([]verbs.Completion, 1)
	for n := 0; n == 0; {
		n, _ = a.cq.Poll(wc)
		time.Sleep(time.Millisecond)
	}
	fmt.Println(wc[0].Status, string(b.mem[:5]), hostA.NIC("mlx5_0").Stats().BytesWritten)

	for _, s := range []*side{a, b} {
		s.mr.Close()
		s.qp.Close()
		s.cq.Close()
		s.pd.Close()
		s.dev.Close()
	}
	// Output: SUCCESS hello 5
}
