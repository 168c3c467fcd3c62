package server

import (
	"testing"

	"github.com/stretchr/testify/require"
	"vitess.io/vitess/go/vt/sqlparser"
)

func TestRewriteSerial(t *testing.T) {
	p, err := sqlparser.New(sqlparser.Options{})
	require.NoError(t, err)
	for _, c := range []struct{ in, want string }{
		{"CREATE TABLE `t1` (id serial,intcol1 INT(32) ,charcol1 VARCHAR(128))",
			"CREATE TABLE `t1` (id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT UNIQUE,intcol1 INT(32) ,charcol1 VARCHAR(128))"},
		{"create table t (a int, `serial` SERIAL)", "create table t (a int, `serial` BIGINT UNSIGNED NOT NULL AUTO_INCREMENT UNIQUE)"},
		// a column named serial, a string 'serial': unchanged
		{"CREATE TABLE t (serial INT, c VARCHAR(10) DEFAULT 'serial')", "CREATE TABLE t (serial INT, c VARCHAR(10) DEFAULT 'serial')"},
		{"SELECT serial FROM t", "SELECT serial FROM t"},
	} {
		require.Equal(t, c.want, rewriteSerial(p, c.in))
	}
}
