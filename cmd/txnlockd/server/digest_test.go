package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"vitess.io/vitess/go/vt/sqlparser"
)

// TestNormalize: literals become ?, whatever their kind; the rest of the
// text is kept as the client wrote it.
func TestNormalize(t *testing.T) {
	p, err := sqlparser.New(sqlparser.Options{})
	require.NoError(t, err)
	for in, want := range map[string]string{
		"UPDATE sbtest1 SET k=k+1 WHERE id=5012":             "UPDATE sbtest1 SET k=k+? WHERE id=?",
		"UPDATE sbtest1 SET k=k+1 WHERE id=?":                "UPDATE sbtest1 SET k=k+? WHERE id=?",
		"SELECT intcol1 FROM t1 WHERE id =  '5'":             "SELECT intcol1 FROM t1 WHERE id =  ?",
		"INSERT INTO t VALUES (NULL, -3, 'a''b', 1.5, 0x1F)": "INSERT INTO t VALUES (NULL, -?, ?, ?, ?)",
		"  COMMIT ": "COMMIT",
		"SELECT c FROM sbtest1 WHERE id BETWEEN 10 AND 20 FOR UPDATE": "SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ? FOR UPDATE",
	} {
		require.Equal(t, want, normalize(p, in), in)
	}
}

// TestDigests: prepared and text statements of one shape share a digest;
// a delay rule given as lockbench's text or as the digest id applies.
func TestDigests(t *testing.T) {
	srv, err := New(Options{Addr: "127.0.0.1:0", AllowEmptyRoot: true, DelayRules: []DelayRule{
		{Digest: "UPDATE sbtest1 SET k=k+1 WHERE id=?", Delay: time.Millisecond},
		{Digest: digestID("SELECT c FROM sbtest1 WHERE id=?"), Delay: 2 * time.Millisecond},
	}})
	require.NoError(t, err)
	go srv.Serve()
	defer srv.Close()
	dsn := func(db string) string { return "root@tcp(" + srv.Addr().String() + ")/" + db }
	db := loadSbtest(t, dsn, 10)
	text := open(t, dsn("sbtest")+"?interpolateParams=true")
	for _, d := range []execer{db, text} {
		exec(t, d, "UPDATE sbtest1 SET k=k+1 WHERE id=?", 3)
		exec(t, d, "SELECT c FROM sbtest1 WHERE id=?", 3)
	}
	rows := queryRows(t, db, "SELECT digest_text, count_star, sum_rows_affected, sum_errors, delay_ms FROM stats.stats_mysql_query_digest WHERE digest_text LIKE 'UPDATE%' OR digest_text LIKE 'SELECT c%' ORDER BY digest_text")
	require.Equal(t, [][]string{
		{"SELECT c FROM sbtest1 WHERE id=?", "2", "0", "0", "2"},
		{"UPDATE sbtest1 SET k=k+? WHERE id=?", "2", "2", "0", "1"},
	}, rows)
}
