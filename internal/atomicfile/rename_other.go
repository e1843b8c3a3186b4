//go:build !linux

package atomicfile

import (
	"fmt"
	"io/fs"
	"os"
)

// renameNoReplace renames src to dst unless dst exists. Without renameat2, an exclusively
// created lock file next to dst makes the check and the rename one step among writers that
// use this package.
func renameNoReplace(src, dst string) error {
	lock := dst + ".lock"
	f, err := os.OpenFile(lock, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("%s: %w", dst, fs.ErrExist)
	}
	f.Close()
	defer os.Remove(lock)
	if _, err := os.Lstat(dst); err == nil {
		return fmt.Errorf("%s: %w", dst, fs.ErrExist)
	}
	return os.Rename(src, dst)
}
