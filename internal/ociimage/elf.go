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
// library ldd cannot find is an error naming it.
func SharedLibraries(ctx context.Context, bin string) ([]string, error) {
	out, err := exec.CommandContext(ctx, "ldd", bin).Output()
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

// SetRunpath rewrites, in place, the DT_RUNPATH (or DT_RPATH) string of the ELF file at path
// to runpath. The new string must not be longer than the old one: it is written over the old
// bytes and padded with NULs, so no section moves (what chrpath does). The build links
// libtorch by its absolute path on the build machine; the image finds it beside the binary.
func SetRunpath(path, runpath string) error {
	f, err := elf.Open(path)
	if err != nil {
		return err
	}
	off, old, err := runpathOffset(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if len(runpath) > len(old) {
		return fmt.Errorf("%s: runpath %q longer than the linked %q", path, runpath, old)
	}
	buf := make([]byte, len(old))
	copy(buf, runpath)
	w, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := w.WriteAt(buf, int64(off)); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// runpathOffset returns the file offset and value of the runpath string.
func runpathOffset(f *elf.File) (uint64, string, error) {
	if f.Class != elf.ELFCLASS64 {
		return 0, "", fmt.Errorf("not a 64-bit ELF file")
	}
	dyn, dynstr := f.Section(".dynamic"), f.Section(".dynstr")
	if dyn == nil || dynstr == nil {
		return 0, "", fmt.Errorf("no dynamic section (statically linked?)")
	}
	d, err := dyn.Data()
	if err != nil {
		return 0, "", err
	}
	strs, err := dynstr.Data()
	if err != nil {
		return 0, "", err
	}
	for i := 0; i+16 <= len(d); i += 16 {
		tag := elf.DynTag(f.ByteOrder.Uint64(d[i:]))
		if tag != elf.DT_RUNPATH && tag != elf.DT_RPATH {
			continue
		}
		val := f.ByteOrder.Uint64(d[i+8:])
		if val >= uint64(len(strs)) {
			return 0, "", fmt.Errorf("runpath string offset %d outside .dynstr", val)
		}
		end := bytes.IndexByte(strs[val:], 0)
		if end < 0 {
			return 0, "", fmt.Errorf("runpath string not terminated")
		}
		return dynstr.Offset + val, string(strs[val : val+uint64(end)]), nil
	}
	return 0, "", fmt.Errorf("no DT_RUNPATH or DT_RPATH entry")
}
