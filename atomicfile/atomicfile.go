package atomicfile

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// File is a file being written under a temporary name next to its target.
// Commit makes it visible under the target name; Abort (safe to defer after
// Commit) throws it away.
type File struct {
	*os.File
	path string
	done bool
}

// Create starts writing path. The temporary file is created in path's
// directory (so the final rename cannot cross file systems) with mode 0644.
func Create(path string) (*File, error) { return CreateMode(path, 0o644) }

// CreateMode is Create with the file mode perm (0600 for a file only its
// owner may read, such as a training checkpoint). The mode is set before
// anything is written.
func CreateMode(path string, perm os.FileMode) (*File, error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	if err := f.Chmod(perm); err != nil { // CreateTemp makes it 0600
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	return &File{File: f, path: path}, nil
}

// Path is the target name the file will have after Commit.
func (f *File) Path() string { return f.path }

// Commit syncs and closes the temporary file, renames it over the target and
// syncs the directory so the rename itself is durable. After an error the
// temporary file is gone and the target is unchanged.
func (f *File) Commit() error {
	if f.done {
		return nil
	}
	f.done = true
	fail := func(err error) error {
		f.File.Close()
		os.Remove(f.Name())
		return fmt.Errorf("write %s: %w", f.path, err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.File.Close(); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("write %s: %w", f.path, err)
	}
	if err := os.Rename(f.Name(), f.path); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("write %s: %w", f.path, err)
	}
	syncDir(filepath.Dir(f.path))
	return nil
}

// Abort removes the temporary file unless Commit ran.
func (f *File) Abort() {
	if !f.done {
		f.done = true
		f.File.Close()
		os.Remove(f.Name())
	}
}

// syncDir makes a rename in dir durable. Not every file system can sync a
// directory, so a failure is not reported: the file's own data is synced.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// Write writes path atomically with the bytes that write produces. If write
// returns an error nothing is changed on disk.
func Write(path string, write func(io.Writer) error) error {
	return WriteMode(path, 0o644, write)
}

// WriteMode is Write with the file mode perm (see CreateMode).
func WriteMode(path string, perm os.FileMode, write func(io.Writer) error) error {
	f, err := CreateMode(path, perm)
	if err != nil {
		return err
	}
	defer f.Abort()
	if err := write(f); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Commit()
}

// WriteBytes writes data to path atomically.
func WriteBytes(path string, data []byte) error {
	return Write(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteJSON writes v to path atomically as indented JSON ending in a newline.
// A value that cannot be encoded is an error and leaves path unchanged.
func WriteJSON(path string, v any) error {
	return Write(path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	})
}
