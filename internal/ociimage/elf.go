package ociimage

import (
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// SharedLibraries runs ldd on the ELF file at bin and returns the host path of every shared
// library the dynamic loader resolves for it (the loader included, linux-vdso left out). A
// library ldd cannot find is an error naming it. libPath, unless empty, is searched first
// (LD_LIBRARY_PATH): the image's binary names its libraries by a runpath relative to itself,
// which holds in the image, not where it was built.
func SharedLibraries(ctx context.Context, bin, libPath string) ([]string, error) {
	cmd := exec.CommandContext(ctx, "ldd", bin)
	if libPath != "" {
		cmd.Env = append(os.Environ(), "LD_LIBRARY_PATH="+libPath)
	}
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = strings.TrimSpace(string(ee.Stderr))
		}
		return nil, fmt.Errorf("ldd %s: %w %s", bin, err, msg)
	}
	return parseLdd(bin, out)
}

// parseLdd reads lines such as "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" and
// "/lib64/ld-linux-x86-64.so.2 (0x...)".
func parseLdd(bin string, out []byte) ([]string, error) {
	var libs, missing []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "linux-vdso") || strings.HasPrefix(line, "statically linked") {
			continue
		}
		target := line
		if _, after, ok := strings.Cut(line, "=>"); ok {
			target = strings.TrimSpace(after)
		}
		if strings.HasPrefix(target, "not found") {
			missing = append(missing, strings.Fields(line)[0])
			continue
		}
		p := strings.Fields(target)[0]
		if !strings.HasPrefix(p, "/") {
			return nil, fmt.Errorf("ldd %s: unexpected line %q", bin, line)
		}
		libs = append(libs, p)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("ldd %s: libraries not found: %s", bin, strings.Join(missing, ", "))
	}
	return libs, sc.Err()
}

// Runpath returns the DT_RUNPATH (or DT_RPATH) string of the ELF file at path. The image's
// binary must find libtorch beside itself whatever the build machine's path, so scripts/image
// checks it rather than rewriting it: a rewrite padded to the linked string's length left that
// length, and so the checkout's path, in the binary.
func Runpath(path string) (string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if f.Class != elf.ELFCLASS64 {
		return "", fmt.Errorf("%s: not a 64-bit ELF file", path)
	}
	for _, tag := range []elf.DynTag{elf.DT_RUNPATH, elf.DT_RPATH} {
		v, err := f.DynString(tag)
		if err != nil {
			return "", fmt.Errorf("%s: %w", path, err)
		}
		if len(v) > 0 {
			return strings.Join(v, ":"), nil
		}
	}
	return "", fmt.Errorf("%s: no DT_RUNPATH or DT_RPATH entry", path)
}
