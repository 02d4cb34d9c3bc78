package rdma

import (
	"testing"
)

func FuzzDecodeHandshake(f *testing.F) {
	f.Add([]byte(`{"local_gid":"00:00:00:00:00:00:00:00:00:00:ff:ff:0a:01:00:01","local_lid":1,"local_nic_path":"10.0.0.1:15000@mlx5_0","peer_nic_path":"10.0.0.2:15001@mlx5_1","qp_num":[257,258]}`))
	f.Add([]byte(`{"reply_msg":"no"}`))
	f.Add([]byte(`{"local_nic_path":"@","qp_num":[1]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		d, err := DecodeHandshake(body)
		if err != nil {
			return
		}
		back, err := DecodeHandshake(EncodeHandshake(&d))
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if back.LocalNICPath != d.LocalNICPath || back.PeerNICPath != d.PeerNICPath || len(back.QPNum) != len(d.QPNum) || back.ReadyAck != d.ReadyAck {
			t.Fatalf("round trip changed %+v to %+v", d, back)
		}
	})
}
