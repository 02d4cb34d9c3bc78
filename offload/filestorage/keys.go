package filestorage

import (
	"bytes"
	"fmt"
)

// StorageKey returns tenant + NUL + key, the key a backend stores. The
// result is a new slice; tenant must not contain NUL.
func StorageKey(tenant string, key []byte) []byte {
	sk := make([]byte, 0, len(tenant)+1+len(key))
	sk = append(sk, tenant...)
	sk = append(sk, 0)
	return append(sk, key...)
}

// SplitStorageKey splits a storage key at its first NUL. The returned key
// aliases sk.
func SplitStorageKey(sk []byte) (tenant string, key []byte, err error) {
	i := bytes.IndexByte(sk, 0)
	if i < 0 {
		return "", nil, fmt.Errorf("%w: storage key %q has no tenant separator", ErrInvalidArgument, sk)
	}
	return string(sk[:i]), sk[i+1:], nil
}
