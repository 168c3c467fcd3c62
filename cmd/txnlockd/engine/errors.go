package engine

import (
	"errors"
	"fmt"
)

// Error is a statement's failure as MySQL reports it: an error number, an
// SQLSTATE and a message. errors.As finds it in what the engine returns.
type Error struct {
	Num   int
	State string
	Msg   string
}

func (e *Error) Error() string { return fmt.Sprintf("ERROR %d (%s): %s", e.Num, e.State, e.Msg) }

func errorf(num int, state, format string, args ...any) error {
	return &Error{Num: num, State: state, Msg: fmt.Sprintf(format, args...)}
}

// The MySQL errors the engine returns.
func errDBExists(db string) error {
	return errorf(1007, "HY000", "Can't create database '%s'; database exists", db)
}
func errNoDB(db string) error { return errorf(1049, "42000", "Unknown database '%s'", db) }
func errDropNoDB(db string) error {
	return errorf(1008, "HY000", "Can't drop database '%s'; database doesn't exist", db)
}
func errTableExists(t string) error { return errorf(1050, "42S01", "Table '%s' already exists", t) }

// ErrNoTable is the error of a statement naming a missing table.
func ErrNoTable(db, t string) error {
	return errorf(1146, "42S02", "Table '%s.%s' doesn't exist", db, t)
}
func errDupKeyName(n string) error { return errorf(1061, "42000", "Duplicate key name '%s'", n) }
func errNoKey(n string) error {
	return errorf(1091, "42000", "Can't DROP '%s'; check that column/key exists", n)
}

// ErrDupEntry is a duplicate clustered key.
func ErrDupEntry(key int64) error {
	return errorf(1062, "23000", "Duplicate entry '%d' for key 'PRIMARY'", key)
}

// ErrUnsupported is a statement or clause the server does not run.
func ErrUnsupported(what string) error {
	return errorf(1235, "42000", "This version of txnlockd doesn't yet support '%s'", what)
}

// ErrDataTooLong is a string longer than its column.
func ErrDataTooLong(col string) error {
	return errorf(1406, "22001", "Data too long for column '%s' at row 1", col)
}

// ErrNotNull is a NULL stored into a NOT NULL column.
func ErrNotNull(col string) error { return errorf(1048, "23000", "Column '%s' cannot be null", col) }

// ErrBadField is an unknown column.
func ErrBadField(col, where string) error {
	return errorf(1054, "42S22", "Unknown column '%s' in '%s'", col, where)
}

// errStorage wraps a storage failure.
func errStorage(op string, err error) error {
	return errors.Join(errorf(1030, "HY000", "Got error from storage engine in %s: %v", op, err), err)
}
