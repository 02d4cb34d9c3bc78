package filestorage

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// ValidatePath applies Mooncake's init rules to the storage directory:
// non-empty, absolute, no ".." component, an existing directory that is
// not itself a symlink, and writable by this process.
func ValidatePath(path string) error {
	const v = "MOONCAKE_OFFLOAD_FILE_STORAGE_PATH"
	if path == "" {
		return fmt.Errorf("%w: %s is empty", ErrInvalidPath, v)
	}
	if !filepath.IsAbs(path) {
		return fmt.Errorf("%w: %s=%q is not an absolute path", ErrInvalidPath, v, path)
	}
	for _, part := range strings.Split(path, "/") {
		if part == ".." {
			return fmt.Errorf("%w: %s=%q contains a '..' component", ErrInvalidPath, v, path)
		}
	}
	li, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("%w: %s=%q: %w", ErrInvalidPath, v, path, err)
	}
	if li.Mode()&os.ModeSymlink != 0 {
		return fmt.Errorf("%w: %s=%q is a symlink; give the real directory", ErrInvalidPath, v, path)
	}
	if !li.IsDir() {
		return fmt.Errorf("%w: %s=%q is not a directory", ErrInvalidPath, v, path)
	}
	if err := unix.Access(path, unix.W_OK); err != nil {
		return fmt.Errorf("%w: %s=%q is not writable: %w", ErrInvalidPath, v, path, err)
	}
	return nil
}
