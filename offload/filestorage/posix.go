package filestorage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// maxPosixName caps an encoded key's file name below NAME_MAX.
const maxPosixName = 250

// posixParallel bounds the files read or written at once per batch.
const posixParallel = 8

// Posix stores one file per key in a directory. File names are the
// percent-encoded storage key, so any byte string is a valid key up to
// about 80 bytes of non-alphanumeric content (250 encoded bytes). Writes
// go to a temporary file that is synced and then renamed into place, so a
// reader never sees a partial object.
type Posix struct {
	dir string
}

// NewPosix returns a posix store rooted at dir, creating dir if missing.
func NewPosix(dir string) (*Posix, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: create %s: %w", ErrInvalidPath, dir, err)
	}
	return &Posix{dir: dir}, nil
}

// Dir is the directory holding the files.
func (p *Posix) Dir() string { return p.dir }

func isPlain(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '~'
}

// encodeName maps a key to a file name that never starts with '.'.
func encodeName(key []byte) (string, error) {
	var b strings.Builder
	const hexd = "0123456789ABCDEF"
	for _, c := range key {
		if isPlain(c) {
			b.WriteByte(c)
		} else {
			b.WriteByte('%')
			b.WriteByte(hexd[c>>4])
			b.WriteByte(hexd[c&15])
		}
	}
	if b.Len() == 0 {
		return "", fmt.Errorf("%w: empty key", ErrInvalidArgument)
	}
	if b.Len() > maxPosixName {
		return "", fmt.Errorf("%w: key of %d bytes encodes to a %d-byte file name, over the posix backend's %d", ErrInvalidArgument, len(key), b.Len(), maxPosixName)
	}
	return b.String(), nil
}

func decodeName(name string) ([]byte, bool) {
	out := make([]byte, 0, len(name))
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c != '%' {
			if !isPlain(c) {
				return nil, false
			}
			out = append(out, c)
			continue
		}
		if i+2 >= len(name) {
			return nil, false
		}
		v, err := hex.DecodeString(name[i+1 : i+3])
		if err != nil {
			return nil, false
		}
		out = append(out, v[0])
		i += 2
	}
	return out, true
}

// each runs fn(i) for i in [0,n) on up to posixParallel goroutines.
func each(ctx context.Context, n int, fn func(i int) error) []error {
	errs := make([]error, n)
	if n == 0 {
		return errs
	}
	var wg sync.WaitGroup
	next := make(chan int)
	workers := min(n, posixParallel)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := ctx.Err(); err != nil {
					errs[i] = fmt.Errorf("%w: %w", ErrBackend, err)
					continue
				}
				errs[i] = fn(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return errs
}

// GetBatch implements Store.
func (p *Posix) GetBatch(ctx context.Context, items []GetItem) []error {
	return each(ctx, len(items), func(i int) error { return p.get(items[i]) })
}

func (p *Posix) get(it GetItem) error {
	name, err := encodeName(it.Key)
	if err != nil {
		return err
	}
	f, err := os.Open(filepath.Join(p.dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: key %q", ErrNotFound, it.Key)
	}
	if err != nil {
		return fmt.Errorf("%w: open key %q: %w", ErrBackend, it.Key, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("%w: stat key %q: %w", ErrBackend, it.Key, err)
	}
	if st.Size() != int64(len(it.Buf)) {
		return fmt.Errorf("%w: key %q holds %d bytes, %d requested", ErrSizeMismatch, it.Key, st.Size(), len(it.Buf))
	}
	if _, err := io.ReadFull(f, it.Buf); err != nil {
		return fmt.Errorf("%w: read key %q: %w", ErrSizeMismatch, it.Key, err)
	}
	return nil
}

// PutBatch implements Store.
func (p *Posix) PutBatch(ctx context.Context, items []PutItem) []error {
	return each(ctx, len(items), func(i int) error { return p.put(items[i]) })
}

func (p *Posix) put(it PutItem) error {
	name, err := encodeName(it.Key)
	if err != nil {
		return err
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := filepath.Join(p.dir, ".tmp-"+hex.EncodeToString(rnd[:]))
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("%w: create key %q: %w", ErrBackend, it.Key, err)
	}
	for _, b := range it.Bufs {
		if _, err = f.Write(b); err != nil {
			break
		}
	}
	if err == nil {
		err = f.Sync() // the object is durable before it becomes visible
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(p.dir, name))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("%w: write key %q: %w", ErrBackend, it.Key, err)
	}
	return nil
}

// ListKeys implements Store. Files whose names are not encoded keys
// (temporary files, foreign files) are skipped.
func (p *Posix) ListKeys(ctx context.Context) ([]KeyInfo, error) {
	ents, err := os.ReadDir(p.dir)
	if err != nil {
		return nil, fmt.Errorf("%w: list %s: %w", ErrBackend, p.dir, err)
	}
	out := make([]KeyInfo, 0, len(ents))
	for _, e := range ents {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBackend, err)
		}
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		key, ok := decodeName(e.Name())
		if !ok {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		out = append(out, KeyInfo{Key: key, Size: info.Size()})
	}
	return out, nil
}

// CheckHealth implements Store: it writes, reads back and removes a probe.
func (p *Posix) CheckHealth(ctx context.Context) error {
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	key := []byte(".probe-" + hex.EncodeToString(rnd[:]))
	want := []byte("health_check")
	if err := p.put(PutItem{Key: key, Bufs: [][]byte{want}}); err != nil {
		return err
	}
	name, _ := encodeName(key)
	defer os.Remove(filepath.Join(p.dir, name))
	got := make([]byte, len(want))
	if err := p.get(GetItem{Key: key, Buf: got}); err != nil {
		return err
	}
	if string(got) != string(want) {
		return fmt.Errorf("%w: probe read back %q", ErrBackend, got)
	}
	return nil
}

// Close implements Store; a posix store holds no resources.
func (p *Posix) Close() error { return nil }
