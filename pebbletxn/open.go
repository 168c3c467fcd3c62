package pebbletxn

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// ErrDamagedStore: Open found a directory that Pebble would open wrongly,
// such as one holding tables, WALs or manifests but no manifest marker
// (Pebble would start a fresh, empty store over the old files). The error
// names the directory and what is missing.
var ErrDamagedStore = errors.New("pebbletxn: damaged store")

// OpenOptions configure Open.
type OpenOptions struct {
	// Options are the DB's; Manager is required. Default: see Options.
	Options
	// Pebble are the options of the Pebble DB that Open opens; Open works
	// on a copy. Its Logger keeps receiving Infof and Errorf, but Open
	// replaces it by one whose Fatalf raises a *FatalError that
	// pebbletxn's calls recover (see FatalError). FS is the filesystem
	// (default: vfs.Default). Default: nil, Pebble's defaults.
	Pebble *pebble.Options
	// Quiet drops Pebble's informational messages ("Found 0 WALs", flushes,
	// compactions), which Pebble's default logger prints on stderr; its
	// errors are still logged. It applies to the Logger of Pebble (or to
	// Pebble's default logger). Default: false.
	Quiet bool
}

// QuietLogger is Pebble's default logger without its informational
// messages: errors go to stderr, and a fatal error stops the process as
// with Pebble's default. Set QuietLogger{} as pebble.Options.Logger for a
// Pebble DB given to New; Open takes OpenOptions.Quiet instead.
type QuietLogger struct{}

// Infof drops the message.
func (QuietLogger) Infof(string, ...any) {}

// Errorf logs as Pebble's default logger does.
func (QuietLogger) Errorf(format string, args ...any) { pebble.DefaultLogger.Errorf(format, args...) }

// Fatalf logs and exits as Pebble's default logger does.
func (QuietLogger) Fatalf(format string, args ...any) { pebble.DefaultLogger.Fatalf(format, args...) }

// quietLogger is a Logger whose Infof does nothing (OpenOptions.Quiet).
type quietLogger struct{ pebble.Logger }

func (quietLogger) Infof(string, ...any) {}

// Open opens (or creates) the Pebble store in dir and a DB over it, which
// owns it: Close closes the Pebble DB after rolling back the open
// transactions. The manager stays the caller's.
//
// Before Pebble starts, Open refuses with ErrDamagedStore a directory that
// holds Pebble data but no manifest marker: Pebble would open it as a new,
// empty store and hide the data. Open cannot see every damage. A WAL whose
// last records are torn or missing (a crash, a truncated or corrupt
// file) opens without them: Pebble replays the WAL up to the first bad
// record. Under SyncDurability those records can only be commits that
// never returned, or data the disk lost after an fsync; under
// NoSyncDurability they are acknowledged commits, the loss that mode
// accepts. Corrupt tables are found when read, as a *StorageError.
//
// It returns a *txnlock.OptionsError listing every problem with
// o.Options, and a *StorageError if Pebble fails.
func Open(dir string, o OpenOptions) (_ *DB, err error) {
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	var po pebble.Options
	if o.Pebble != nil {
		po = *o.Pebble
	}
	if po.FS == nil {
		po.FS = vfs.Default
	}
	if err := checkStoreDir(po.FS, dir); err != nil {
		return nil, err
	}
	inner := po.Logger
	if inner == nil {
		inner = pebble.DefaultLogger
	}
	if o.Quiet {
		inner = quietLogger{inner}
	}
	po.Logger = fatalLogger{Logger: inner}
	pdb, err := openPebble(dir, &po)
	if err != nil {
		return nil, err
	}
	db, err := New(pdb, o.Options)
	if err != nil {
		_ = pdb.Close()
		return nil, err
	}
	db.ownsPebble = true
	return db, nil
}

// openPebble opens Pebble, turning a fatal error while it replays the WAL
// or reads the manifest into a *StorageError.
func openPebble(dir string, po *pebble.Options) (_ *pebble.DB, err error) {
	defer func() {
		if r := recover(); r != nil {
			fe, ok := r.(*FatalError)
			if !ok {
				panic(r)
			}
			err = &StorageError{Op: "open", Err: fe}
		}
	}()
	pdb, err := pebble.Open(dir, po)
	if err != nil {
		return nil, &StorageError{Op: "open", Err: err}
	}
	return pdb, nil
}

// checkStoreDir refuses a directory with Pebble data files but no manifest
// marker. A missing or empty directory is a new store.
func checkStoreDir(fs vfs.FS, dir string) error {
	names, err := fs.List(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return &StorageError{Op: "open", Err: err}
	}
	var data []string
	for _, n := range names {
		switch {
		case strings.HasPrefix(n, "marker.manifest."):
			return nil
		case strings.HasSuffix(n, ".sst"), strings.HasSuffix(n, ".log"),
			strings.HasSuffix(n, ".blob"), strings.HasPrefix(n, "MANIFEST-"):
			data = append(data, n)
		}
	}
	if len(data) == 0 {
		return nil
	}
	const show = 3
	more := ""
	if len(data) > show {
		more = fmt.Sprintf(" and %d more", len(data)-show)
		data = data[:show]
	}
	return &txnError{op: fmt.Sprintf("open %q", dir), err: fmt.Errorf("%w: no manifest marker (marker.manifest.*) next to %s%s; restore the marker or the directory from a backup",
		ErrDamagedStore, strings.Join(data, ", "), more)}
}
