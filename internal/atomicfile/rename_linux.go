package atomicfile

import "golang.org/x/sys/unix"

// renameNoReplace renames src to dst unless dst exists (also an empty directory, which plain
// rename(2) would silently replace), in one system call.
func renameNoReplace(src, dst string) error {
	return unix.Renameat2(unix.AT_FDCWD, src, unix.AT_FDCWD, dst, unix.RENAME_NOREPLACE)
}
